"""``rmtfl figures [NAME|all] [--out DIR] [--quick]``: regenerate the papers' figures.

Each figure is a script ``figures/NAME.py`` of the source checkout with a
``main(argv)`` taking ``--out DIR`` (and ``--quick``); this command runs them
in-process.  The default output folder is ``figures/gallery``, the gallery
shown in the README.
"""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

__all__ = ["register", "figures_dir", "available_figures", "run_figure"]


def figures_dir() -> Path:
    """The ``figures/`` folder of the checkout rmtfl was installed from (editable install)."""
    return Path(__file__).resolve().parents[2] / "figures"


def available_figures() -> list[str]:
    d = figures_dir()
    if not d.is_dir():
        return []
    return sorted(p.stem for p in d.glob("*.py") if not p.stem.startswith("_"))


def run_figure(name: str, out: Path, *, quick: bool = False) -> int:
    """Import ``figures/NAME.py`` and call its ``main``."""
    names = available_figures()
    if name not in names:
        raise ValueError(f"figure must be one of {names + ['all']}, got {name!r}")
    path = figures_dir() / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"rmtfl_figure_{name}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    argv = ["--out", str(out)] + (["--quick"] if quick else [])
    return int(mod.main(argv) or 0)


def _cmd(args) -> int:
    from ._common import pyplot

    pyplot()  # the Agg backend: figures are written, never shown
    if not figures_dir().is_dir():
        raise ValueError(f"no figures/ folder next to the package ({figures_dir()}); "
                         "install from a source checkout with pip install -e .")
    names = available_figures() if args.name == "all" else [args.name]
    out = Path(args.out) if args.out else figures_dir() / "gallery"
    rc = 0
    for name in names:
        print(f"[rmtfl figures] {name} -> {out}", file=sys.stderr)
        rc = max(rc, run_figure(name, out, quick=args.quick))
    return rc


def register(groups, top) -> None:
    """Add ``rmtfl figures``."""
    from ._common import options

    p = top.add_parser("figures", help="regenerate the papers' figures (figures/NAME.py)",
                       parents=[options(out="the PNGs and their JSON sidecars (default figures/gallery)")])
    p.add_argument("name", nargs="?", default="all", help="figure name or 'all' (default)")
    p.add_argument("--quick", action="store_true", help="small sizes, for smoke use")
    p.set_defaults(func=_cmd)
