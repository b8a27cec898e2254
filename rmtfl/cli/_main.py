"""The ``rmtfl`` command (also ``python -m rmtfl``).

Commands::

    rmtfl verify [--quick|--full] [--parts P,...] [--json] [--out DIR] [--seed S] [--backend numpy|cupy]
    rmtfl theory {mp,bgn,hermite,tw,one-step,two-step} ...
    rmtfl theory kernel {spectrum,zonal,linear,spike} ...
    rmtfl theory ck [--activation A] [--psi P] [--phi F] [--N N] [--json]
    rmtfl simulate {spiked,two-step} ...
    rmtfl simulate kernel {spectrum,alignment,spike,generalisation} ...
    rmtfl simulate ck [--activation A] --N N --d D --n N [--seed S] [--backend B] [--json] [--out DIR]
    rmtfl flow {kkt,simulate,saddle} (--example NAME | --data FILE.npz) ...
    rmtfl sweep {bbp,two-step,one-step,kernel} ...
    rmtfl phase-diagram [--N N] [--empirical ...] ...
    rmtfl figures [NAME|all] [--out DIR] [--quick]
    rmtfl analyze FILE [--key NAME] [--alpha A] [--kind rectangular|covariance] [--top-k K] [--json] [--out DIR]
    rmtfl explore [--port 5006] [--host 127.0.0.1] [--open]

Names are those of the Python API (docs/api.md): sizes ``--N --d --n --n2``, ratios ``--psi --phi
--phi2`` (``psi = N/d``, ``phi = n/d``), steps ``--eta --eta1 --eta2`` or ``--alpha1 --alpha2`` with
``--c1 --c2`` (``eta_t = c_t N^alpha_t``, docs/conventions.md §5).  Defaults come from
:mod:`rmtfl._defaults`: activation ``gelu``, target ``hermite(0, 1, 0.5)``, ``psi = 1``, ``phi = 2``,
seed 0, backend numpy.

Exit status: 0 success (every comparison passes), 1 a comparison failed or a runtime fault (one line on
stderr; a ``TypeError`` raised by the CLI's own code, such as a call that does not match a signature,
is a fault too), 2 bad arguments (argparse errors, and ``ValueError``/``TypeError`` from the library,
whose message names the parameter); 130 an interrupted sweep (finished tasks are kept).
Every integer flag has a range (``rmtfl.cli._common.INT_BOUNDS``, e.g. ``--kmax`` in [0, 100], ``--dps``
in [5, 1000]) and every float flag must be finite; sizes whose arrays would not fit in memory are refused
with the bytes needed and available (exit status 2, before anything is allocated or written).  A fault of
the sweep store (read-only, disk full, a damaged file) is one line naming the file (exit status 1).
Set ``RMTFL_DEBUG=1`` to get the traceback instead of the one-line message.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from ._analyze import register as _register_analyze
from ._classical import register as _register_classical
from ._common import apply_bounds, check_bounds, check_out, options
from ._explore import register as _register_explore
from ._figures import register as _register_figures
from ._gradient_flow import register as _register_gradient_flow
from ._kernel_spectra import register as _register_kernel_spectra
from ._spiked_kernel import register as _register_spiked_kernel
from ._sweep import register as _register_sweep
from ._two_step import register as _register_two_step

__all__ = ["main", "build_parser"]

#: What adds the subcommands of each part: ``register(groups, top)``.
REGISTER = (_register_classical, _register_two_step, _register_spiked_kernel, _register_gradient_flow,
            _register_sweep, _register_figures, _register_explore, _register_analyze, _register_kernel_spectra)


def _cmd_verify(args) -> int:
    from rmtfl.compare import VerifyContext, run_verify
    from rmtfl.numerics import get_backend

    get_backend(args.backend)  # fail cleanly before any work if cupy is unusable
    level = "quick" if args.quick else ("full" if args.full else "default")
    out = Path(args.out)
    parts = args.parts.split(",") if args.parts else None
    ctx = VerifyContext(level=level, seed=args.seed, backend=args.backend, out=out)
    report = run_verify(ctx, parts)
    path = report.write_json(out / "report.json")
    if args.json:
        from ._common import emit

        emit(report.to_dict(), args)
    else:
        print(report.table())
        print(f"report: {path}  figures: {out / 'figures'}  ({report.settings['seconds']} s)")
    if not report.comparisons:
        print("rmtfl: error: no comparisons ran", file=sys.stderr)
        return 1
    return 0 if report.passed else 1


def _leaves(parser: argparse.ArgumentParser):
    """Every subcommand parser without subcommands of its own (for ``_parser`` and the tests)."""
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield parser
        return
    for action in subs:
        for child in dict.fromkeys(action.choices.values()):
            yield from _leaves(child)


def build_parser() -> argparse.ArgumentParser:
    """The ``rmtfl`` argument parser (every subcommand; no heavy imports)."""
    from rmtfl._version import __version__

    p = argparse.ArgumentParser(
        prog="rmtfl", description="Random-matrix theory of feature learning: predictions beside measurements.",
        epilog="Exit status: 0 success, 1 a failed comparison or a runtime fault, 2 bad arguments.")
    p.add_argument("--version", action="version", version=f"rmtfl {__version__}")
    top = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    v = top.add_parser("verify", help="run every prediction-versus-measurement comparison",
                       parents=[options(json=True, out="report.json and figures/", out_default="rmtfl-out",
                                        seed="root seed of every comparison", backend="the simulations")])
    g = v.add_mutually_exclusive_group()
    g.add_argument("--quick", action="store_true", help="smoke run, under 30 s")
    g.add_argument("--full", action="store_true", help="larger N, several seeds")
    v.add_argument("--parts", default=None, help="comma-separated subset of classical, two-step, "
                                                  "spiked-kernel, gradient-flow (default all)")
    v.set_defaults(func=_cmd_verify)

    groups = {
        "theory": top.add_parser("theory", help="print predictions (deterministic)").add_subparsers(
            dest="what", required=True, metavar="WHAT"),
        "simulate": top.add_parser("simulate", help="sample and measure").add_subparsers(
            dest="what", required=True, metavar="WHAT"),
    }
    for register in REGISTER:
        register(groups, top)
    for leaf in _leaves(p):
        leaf.set_defaults(_parser=leaf)
        apply_bounds(leaf)
    return p


def _raised_here(exc: BaseException) -> bool:
    """Whether the innermost frame of ``exc`` is in the CLI itself (a fault of the CLI, not bad input)."""
    tb, last = exc.__traceback__, None
    while tb is not None:
        last, tb = tb, tb.tb_next
    return last is not None and Path(last.tb_frame.f_code.co_filename).resolve().parent == Path(__file__).parent


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text or type(exc).__name__


def _run(args) -> int:
    check_bounds(args)  # every numeric flag inside its range, before any work
    check_out(args)     # --out names a folder, before anything is written
    return int(args.func(args) or 0)


def main(argv=None) -> int:
    """Run ``rmtfl`` with ``argv`` (default ``sys.argv[1:]``); return the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if os.environ.get("RMTFL_DEBUG"):
        return _run(args)
    try:
        return _run(args)
    except (ValueError, TypeError) as exc:
        if isinstance(exc, TypeError) and _raised_here(exc):  # e.g. a call that does not match a signature
            print(f"rmtfl: internal error: TypeError: {_one_line(exc)}", file=sys.stderr)
            return 1
        print(f"rmtfl: error: {_one_line(exc)}", file=sys.stderr)  # bad arguments: the library names them
        return 2
    except KeyboardInterrupt:
        print("rmtfl: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # e.g. ``rmtfl ... | head``: the reader left; say nothing more
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return 1
    except Exception as exc:  # a runtime fault: one line, no traceback (RMTFL_DEBUG=1 shows it)
        store_error = getattr(sys.modules.get("rmtfl.sweep._store"), "StoreError", ())
        if store_error and isinstance(exc, store_error):  # the message names the file and the reason
            print(f"rmtfl: error: {_one_line(exc)}", file=sys.stderr)
        elif isinstance(exc, MemoryError):
            print(f"rmtfl: out of memory: {_one_line(exc)} (choose smaller sizes)", file=sys.stderr)
        else:
            print(f"rmtfl: {type(exc).__name__}: {_one_line(exc)}", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
