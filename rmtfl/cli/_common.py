"""What every ``rmtfl`` subcommand shares: the common flags, the output, and flag-combination checks.

* :func:`options` builds the parent parser (``argparse`` ``parents=[...]``) with the shared flags a
  subcommand honours — ``--json``, ``--out DIR``, ``--seed S`` and ``--backend numpy|cupy`` — so that
  they are spelled, documented and defaulted the same way everywhere (defaults from
  :mod:`rmtfl._defaults`: ``SEED``, ``BACKEND``).  A subcommand that cannot honour a flag does not
  take it: argparse then refuses it (exit status 2).
* :func:`emit` prints a result as text, or as JSON with ``--json`` (:func:`rmtfl._results.jsonify`:
  numpy values converted, non-finite floats as the strings ``"nan"``, ``"inf"``, ``"-inf"``).
* :func:`only_with` refuses a flag given in a combination where it would change nothing.

Exit status of every command (``rmtfl --help``): 0 success, 1 a failed comparison or a runtime fault
(one line on stderr), 2 bad arguments (argparse errors, and ``ValueError``/``TypeError`` from the
library, whose message names the parameter).
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from rmtfl import _defaults

__all__ = ["options", "emit", "write_json", "only_with", "usage_error", "given", "default_note", "ACTIVATION_HELP",
           "TARGET_HELP", "floats", "ints", "pyplot"]

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


def pyplot():
    """``matplotlib.pyplot`` on the non-interactive Agg backend (imported only by commands that draw)."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt
