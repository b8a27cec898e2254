"""What every ``rmtfl`` subcommand shares: the common flags, the output, and flag-combination checks.

* :func:`options` builds the parent parser (``argparse`` ``parents=[...]``) with the shared flags a
  subcommand honours — ``--json``, ``--out DIR``, ``--seed S`` and ``--backend numpy|cupy`` — so that
  they are spelled, documented and defaulted the same way everywhere (defaults from
  :mod:`rmtfl._defaults`: ``SEED``, ``BACKEND``).  A subcommand that cannot honour a flag does not
  take it: argparse then refuses it (exit status 2).
* :func:`emit` prints a result as text, or as JSON with ``--json`` (:func:`rmtfl._results.jsonify`:
  numpy values converted, non-finite floats as the strings ``"nan"``, ``"inf"``, ``"-inf"``).
* :func:`only_with` refuses a flag given in a combination where it would change nothing.
* :func:`apply_bounds` gives every numeric flag its range: each ``int`` flag the bound of
  :data:`INT_BOUNDS` (by flag name, the same everywhere), each ``float`` flag finiteness;
  :func:`check_bounds` refuses a value outside it after parsing (one line, exit status 2), so
  that a huge ``--kmax`` or ``--N`` is refused before anything is computed or allocated.
* :func:`check_arrays` refuses sizes whose arrays would not fit in memory (bytes needed and
  available, :func:`rmtfl._validate.check_memory`).

Exit status of every command (``rmtfl --help``): 0 success, 1 a failed comparison or a runtime fault
(one line on stderr), 2 bad arguments (argparse errors, and ``ValueError``/``TypeError`` from the
library, whose message names the parameter).
"""
from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

from rmtfl import _defaults

__all__ = ["options", "emit", "write_json", "only_with", "usage_error", "given", "default_note", "ACTIVATION_HELP",
           "TARGET_HELP", "floats", "ints", "pyplot", "Int", "Real", "INT_BOUNDS", "MAX_SIZE", "apply_bounds",
           "check_bounds", "check_arrays", "check_sizes", "check_out"]

#: Help text of ``--activation`` (docs/conventions.md §2 for the Hermite convention).
ACTIVATION_HELP = (f"activation sigma: relu, tanh, erf, gelu, he3, 'hermite(a0, a1, ...)', ... "
                   f"(default {_defaults.ACTIVATION}; Hermite convention docs/conventions.md §2)")
#: Help text of ``--target`` (docs/conventions.md §3 for the target law).
TARGET_HELP = (f"target link g: linear, tanh, he2, he3n, 'hermite(a0, a1, ...)', ... (default "
               f"'{_defaults.TARGET}'; y = g(<beta*, x>) + noise, docs/conventions.md §3)")


def default_note(value) -> str:
    """``" (default X)"`` for a help string."""
    return f" (default {value})"


def options(*, json: bool = False, out: str | None = None, out_default: str | None = None,
            seed: str | None = None, seed_default=_defaults.SEED, backend: str | None = None,
            ) -> argparse.ArgumentParser:
    """A parent parser holding the shared flags that a subcommand honours.

    Parameters
    ----------
    json : bool
        Add ``--json`` (print the result as JSON instead of the text summary).
    out : str or None
        Add ``--out DIR``; the string says what is written there.
    out_default : str or None
        Default of ``--out`` (``None``: nothing is written unless ``--out`` is given).
    seed : str or None
        Add ``--seed S`` (an integer); the string says what the seed draws.
    seed_default : int or None
        Default of ``--seed`` (:data:`rmtfl._defaults.SEED`).
    backend : str or None
        Add ``--backend numpy|cupy`` (default :data:`rmtfl._defaults.BACKEND`); the string says what runs there.

    A fresh parser is built on every call, so a subcommand may change a default without touching
    another's.
    """
    p = argparse.ArgumentParser(add_help=False)
    if json:
        p.add_argument("--json", action="store_true", help="print the result as JSON instead of text")
    if out is not None:
        note = default_note(out_default) if out_default is not None else ""
        p.add_argument("--out", metavar="DIR", default=out_default, help=f"folder for {out}{note}")
    if seed is not None:
        note = default_note(seed_default) if seed_default is not None else ""
        p.add_argument("--seed", metavar="S", type=int, default=seed_default, help=f"{seed}{note}")
    if backend is not None:
        p.add_argument("--backend", default=_defaults.BACKEND, choices=["numpy", "cupy"],
                       help=f"array backend of {backend}{default_note(_defaults.BACKEND)}")
    return p


def emit(result, args, text: str | None = None) -> None:
    """Print ``result`` as JSON when ``--json`` was given (or no ``text``), otherwise ``text``."""
    if getattr(args, "json", False) or text is None:
        from rmtfl._results import jsonify

        print(json.dumps(jsonify(result), indent=2))
    else:
        print(text)


def write_json(out, name: str, payload) -> Path:
    """Write ``payload`` (anything :func:`rmtfl._results.jsonify` takes) to ``out/name``; return the path."""
    from rmtfl._results import jsonify

    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(json.dumps(jsonify(payload), indent=2))
    return path


def _dest(flag: str) -> str:
    return flag.lstrip("-").replace("-", "_")


def given(args, flag: str) -> bool:
    """Whether ``flag`` (e.g. ``"--c1"``) was given: its value is not ``None`` (nor ``False``)."""
    v = getattr(args, _dest(flag), None)
    return v is not None and v is not False


def only_with(args, condition: bool, flags, why: str) -> None:
    """Refuse (argparse error, exit status 2) each flag of ``flags`` that was given unless ``condition``.

    Flags that may be refused are declared with ``default=None`` (their default is applied later).
    """
    bad = [f for f in flags if given(args, f)]
    if bad and not condition:
        parser = getattr(args, "_parser", None)
        msg = f"{'/'.join(bad)} {'applies' if len(bad) == 1 else 'apply'} only {why}"
        if parser is None:
            raise ValueError(msg)
        parser.error(msg)


def usage_error(args, msg: str) -> None:
    """An argparse error of the running subcommand (usage line, ``msg``, exit status 2)."""
    parser = getattr(args, "_parser", None)
    if parser is None:
        raise ValueError(msg)
    parser.error(msg)


def floats(name: str, text: str) -> list[float]:
    """A comma-separated list of numbers (``"0,4,16"``)."""
    try:
        vals = [float(x) for x in str(text).split(",") if x.strip()]
    except ValueError:
        raise ValueError(f"{name} must be a comma-separated list of numbers, got {text!r}") from None
    if not vals:
        raise ValueError(f"{name} must not be empty")
    return vals


def ints(name: str, text: str) -> list[int]:
    """A comma-separated list of integers (``"128,512"``)."""
    try:
        vals = [int(x) for x in str(text).split(",") if x.strip()]
    except ValueError:
        raise ValueError(f"{name} must be a comma-separated list of integers, got {text!r}") from None
    if not vals:
        raise ValueError(f"{name} must not be empty")
    return vals


#: Largest size (``--N --d --n --n2 --n-test --k``) the CLI reads; the memory check refuses far less.
MAX_SIZE = 10**12
#: The range of every integer flag, by name (inclusive); a new ``int`` flag needs an entry here.
INT_BOUNDS = {
    "--seed": (0, 2**63 - 1),
    "--N": (1, MAX_SIZE), "--d": (1, MAX_SIZE), "--n": (1, MAX_SIZE), "--n2": (1, MAX_SIZE),
    "--n-test": (1, MAX_SIZE), "--k": (1, MAX_SIZE),
    "--kmax": (0, 100),          # moments, Hermite and Gegenbauer degrees: beyond, float64 overflows
    "--dps": (5, 1000),          # mpmath digits
    "--degree": (1, 12),         # polynomial degree L of sigma in Lambda
    "--seeds": (1, 10_000),
    "--workers": (0, 1024),
    "--retries": (0, 100),
    "--restarts": (1, 10_000),
    "--depth": (2, 64),
    "--points": (2, 10**6),
    "--port": (1, 65535),       # rmtfl explore
}


class Int:
    """``argparse`` type of a bounded integer flag: reads an ``int``; :meth:`check` refuses it outside ``[lo, hi]``."""

    __name__ = "int"  # argparse: "invalid int value: 'x'"

    def __init__(self, lo: int | None, hi: int | None):
        self.lo, self.hi = lo, hi

    def __call__(self, text):
        return int(text)

    def check(self, flag: str, value) -> None:
        if (self.lo is not None and value < self.lo) or (self.hi is not None and value > self.hi):
            lo = "-inf" if self.lo is None else self.lo
            hi = "inf" if self.hi is None else self.hi
            raise ValueError(f"{flag} must be an integer in [{lo}, {hi}], got {value}")

    def __repr__(self):
        return f"Int({self.lo}, {self.hi})"


class Real:
    """``argparse`` type of a float flag: reads a ``float``; :meth:`check` refuses NaN and infinities."""

    __name__ = "float"

    def __call__(self, text):
        return float(text)

    def check(self, flag: str, value) -> None:
        if not math.isfinite(value):
            raise ValueError(f"{flag} must be a finite number, got {value}")

    def __repr__(self):
        return "Real()"


def _flag(action) -> str:
    long = [o for o in action.option_strings if o.startswith("--")]
    return (long or action.option_strings)[0]


def apply_bounds(parser: argparse.ArgumentParser) -> None:
    """Give the ``int`` and ``float`` flags of ``parser`` their :class:`Int` (from :data:`INT_BOUNDS`) and :class:`Real` types."""
    for action in parser._actions:
        if not action.option_strings or action.choices is not None:  # choices bound a flag already
            continue
        if action.type is int:
            flag = _flag(action)
            if flag not in INT_BOUNDS:
                raise KeyError(f"integer flag {flag} of {parser.prog!r} has no range in rmtfl.cli._common.INT_BOUNDS")
            action.type = Int(*INT_BOUNDS[flag])
        elif action.type is float:
            action.type = Real()


def check_bounds(args) -> None:
    """Refuse (``ValueError`` naming the flag, exit status 2) a parsed numeric value outside its range."""
    parser = getattr(args, "_parser", None)
    if parser is None:
        return
    for action in parser._actions:
        check = getattr(action.type, "check", None)
        if check is None or not action.option_strings:
            continue
        value = getattr(args, action.dest, None)
        if value is None or value is argparse.SUPPRESS:
            continue
        for v in (value if isinstance(value, (list, tuple)) else [value]):
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                check(_flag(action), v)


def check_arrays(flag: str, *shapes, itemsize: int = 8, copies: float = 2.0, what: str = "") -> None:
    """Refuse ``flag`` when the arrays of ``shapes`` (``copies`` times, workspace included) exceed the memory.

    Each shape is a tuple of sizes; ``None`` entries are skipped.
    """
    from rmtfl._validate import check_memory

    total = 0.0
    for shape in shapes:
        if shape is None or any(s is None for s in shape):
            continue
        n = 1.0
        for s in shape:
            n *= float(s)
        total += n
    check_memory(flag, total * itemsize * copies, what)


def check_sizes(args, *, copies: float = 2.0) -> None:
    """Refuse sizes of a simulation whose arrays would not fit in memory (before anything is drawn).

    The estimate takes every product of two of the sizes given (``N d n n2 n_test``; ``N`` may be a
    comma list, its largest counts) and ``n x n`` (a Gram matrix), as float64 (float32 with
    ``--dtype float32``), ``copies`` times for the workspace.  The largest size is named.
    """
    sizes = {}
    for flag in ("N", "d", "n", "n2", "n_test"):
        v = getattr(args, flag, None)
        if isinstance(v, str):
            v = max(ints("--N", v))
        if isinstance(v, int) and not isinstance(v, bool):
            sizes["--" + flag.replace("_", "-")] = v
    if not sizes:
        return
    vals = list(sizes.values())
    shapes = [(a, b) for i, a in enumerate(vals) for b in vals[i + 1:]] + [(v, v) for k, v in sizes.items() if k == "--n"]
    biggest = max(sizes, key=sizes.get)
    item = 4 if getattr(args, "dtype", None) == "float32" else 8
    check_arrays(biggest, *shapes, itemsize=item, copies=copies,
                 what="the arrays of " + ", ".join(f"{k[2:]}={v}" for k, v in sizes.items()))


def check_out(args) -> None:
    """``--out DIR`` must be a folder (or not exist yet): refuse an existing file (exit status 2, nothing written)."""
    out = getattr(args, "out", None)
    if not out:
        return
    path = Path(out)
    for p in (path, *path.parents):  # the nearest existing one must be a folder
        if p.exists():
            if not p.is_dir():
                what = "is an existing file" if p == path else f"is inside the file {str(p)!r}"
                raise ValueError(f"--out {str(out)!r} {what}, expected a folder (nothing was written)")
            break


def pyplot():
    """``matplotlib.pyplot`` on the non-interactive Agg backend (imported only by commands that draw)."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt
