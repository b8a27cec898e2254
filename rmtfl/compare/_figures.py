"""Saving figures with a JSON sidecar of their resolved parameters and versions."""
from __future__ import annotations

import json
import platform
from pathlib import Path

from .._results import to_jsonable

__all__ = ["save_figure", "versions", "use_agg", "figure_args", "to_jsonable"]


def versions() -> dict:
    """Versions of rmtfl and the libraries a result depends on."""
    import matplotlib
    import mpmath
    import numpy
    import scipy

    from rmtfl._version import __version__

    return {"rmtfl": __version__, "numpy": numpy.__version__, "scipy": scipy.__version__,
            "mpmath": mpmath.__version__, "matplotlib": matplotlib.__version__,
            "python": platform.python_version()}


def use_agg() -> None:
    """Select the non-interactive Agg backend (CLI and tests; never ``plt.show``)."""
    import matplotlib

    matplotlib.use("Agg", force=True)


def figure_args(doc: str, argv=None):
    """Parse the arguments every ``figures/NAME.py`` script takes and select the Agg backend.

    ``--out DIR`` (default ``figures/gallery``), ``--quick`` (small sizes) and ``--seed S``
    (root seed, default 0).  The description is the first line of ``doc``.
    """
    import argparse

    p = argparse.ArgumentParser(description=(doc or "").strip().splitlines()[0] if doc else None)
    p.add_argument("--out", default="figures/gallery", help="output folder (default figures/gallery)")
    p.add_argument("--quick", action="store_true", help="small sizes, for smoke use")
    p.add_argument("--seed", type=int, default=0, help="root seed (default 0)")
    args = p.parse_args(argv)
    use_agg()
    return args


def save_figure(fig, path, params: dict, *, dpi: int = 110) -> Path:
    """Write ``fig`` to ``path`` (PNG) and ``path.json`` with ``params`` and :func:`versions`.

    Returns the PNG path.  ``params`` must be JSON-serialisable (numpy scalars are converted).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=dpi, bbox_inches="tight")
    sidecar = path.with_suffix(path.suffix + ".json")
    sidecar.write_text(json.dumps({"figure": path.name, "params": params, "versions": versions()},
                                  indent=2, default=to_jsonable))
    return path
