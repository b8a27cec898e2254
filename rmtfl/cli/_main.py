"""The ``rmtfl`` command.

Subcommands::

    rmtfl verify [--quick|--full] [--out DIR] [--json] [--seed S] [--backend numpy|cupy]
    rmtfl theory {mp,bgn,hermite,tw,one-step,two-step,phase-diagram,kernel} ... [--json]
    rmtfl simulate {spiked,two-step,kernel} ... [--json] [--out DIR]
    rmtfl figures [NAME|all] [--out DIR]
    rmtfl flow {kkt,simulate,saddle} ...
    rmtfl sweep two-step ...
    rmtfl phase-diagram [--empirical] ...

Exit status: 0 success (all comparisons pass), 1 a comparison failed,
2 bad arguments (argparse errors and ``ValueError`` from the library).
"""
from __future__ import annotations

import argparse
import importlib
import json
import sys
from pathlib import Path

__all__ = ["main", "build_parser", "emit"]

#: Modules that add their subcommands through ``register(groups, top)``.
COMMAND_MODULES = (
    "rmtfl.cli._classical",
    "rmtfl.cli._two_step",
    "rmtfl.cli._spiked_kernel",
    "rmtfl.cli._gradient_flow",
    "rmtfl.cli._sweep",
    "rmtfl.cli._figures",
)


def emit(result, args, text: str | None = None) -> None:
    """Print ``result`` as JSON when ``--json`` was given, otherwise ``text`` (or pretty JSON)."""
    from rmtfl.compare import to_jsonable

    if getattr(args, "json", False) or text is None:
        print(json.dumps(result, indent=2, default=to_jsonable))
    else:
        print(text)


def _cmd_verify(args) -> int:
    from rmtfl.compare._verify import PARTS, VerifyContext, run_verify
    from rmtfl.numerics import get_backend

    get_backend(args.backend)  # fail cleanly before any work if cupy is unusable
    level = "quick" if args.quick else ("full" if args.full else "default")
    out = Path(args.out)
    parts = args.parts.split(",") if args.parts else list(PARTS)
    ctx = VerifyContext(level=level, seed=args.seed, backend=args.backend, out=out)
    report = run_verify(ctx, parts)
    path = report.write_json(out / "report.json")
    if args.json:
        print(json.dumps(report.to_dict(), indent=2))
    else:
        print(report.table())
        print(f"report: {path}  figures: {out / 'figures'}  ({report.settings['seconds']} s)")
    if not report.comparisons:
        print("error: no comparisons ran", file=sys.stderr)
        return 1
    return 0 if report.passed else 1


def build_parser() -> argparse.ArgumentParser:
    from rmtfl._version import __version__

    p = argparse.ArgumentParser(prog="rmtfl", description="Random-matrix theory of feature learning: "
                                "predictions beside measurements.")
    p.add_argument("--version", action="version", version=f"rmtfl {__version__}")
    top = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    v = top.add_parser("verify", help="run every prediction-versus-measurement comparison")
    g = v.add_mutually_exclusive_group()
    g.add_argument("--quick", action="store_true", help="smoke run, under 30 s")
    g.add_argument("--full", action="store_true", help="larger N, several seeds")
    v.add_argument("--out", default="rmtfl-out", help="output folder (default ./rmtfl-out)")
    v.add_argument("--json", action="store_true", help="print the JSON report instead of the table")
    v.add_argument("--seed", type=int, default=0, help="root seed (default 0)")
    v.add_argument("--backend", default="numpy", choices=["numpy", "cupy"])
    v.add_argument("--parts", default=None, help="comma-separated subset of parts")
    v.set_defaults(func=_cmd_verify)

    groups = {
        "theory": top.add_parser("theory", help="print predictions").add_subparsers(
            dest="what", required=True, metavar="WHAT"),
        "simulate": top.add_parser("simulate", help="sample and measure").add_subparsers(
            dest="what", required=True, metavar="WHAT"),
    }
    for mod in COMMAND_MODULES:
        importlib.import_module(mod).register(groups, top)
    return p


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except ValueError as exc:
        print(f"rmtfl: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
