"""The ``rmtfl verify`` driver: every part's comparisons, one table, one report.

Each part module (``rmtfl.compare.<part>``) exposes ``checks(ctx)`` returning a
list of :class:`Check`; running a check returns a list of
:class:`~rmtfl.compare.Comparison` rows and may write figures under
``ctx.out``.  Checks draw randomness only from ``ctx.rng(name)``, a child
generator derived from ``ctx.seed`` and the check's name, so every check is
reproducible on its own and independent of the order the checks run in.
"""
from __future__ import annotations

import hashlib
import importlib
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from ._core import Comparison, Report

__all__ = ["VerifyContext", "Check", "PARTS", "LEVELS", "run_verify"]

#: Part name -> module holding its ``checks(ctx)``.
PARTS = {
    "classical": "rmtfl.compare._classical",
    "two-step": "rmtfl.compare._two_step",
    "spiked-kernel": "rmtfl.compare._spiked_kernel",
    "gradient-flow": "rmtfl.compare._gradient_flow",
    "kernel-spectra": "rmtfl.compare._kernel_spectra",
}
LEVELS = ("quick", "default", "full")


@dataclass(frozen=True)
class VerifyContext:
    """Resolved settings of a verify run.

    ``level`` is ``"quick"`` (smoke, < 30 s), ``"default"`` (~2 min on 2 cores,
    honest tolerances) or ``"full"`` (larger N, more seeds).
    """

    level: str = "default"
    seed: int = 0
    backend: str = "numpy"
    out: Path | None = None

    def rng(self, name: str) -> np.random.Generator:
        """A generator for the check ``name``: ``SeedSequence(seed, spawn_key=hash(name))``."""
        key = int.from_bytes(hashlib.sha256(name.encode()).digest()[:4], "little")
        return np.random.default_rng(np.random.SeedSequence(self.seed, spawn_key=(key,)))

    def seeds(self, name: str, count: int) -> list[np.random.Generator]:
        """``count`` independent child generators for repeated trials of ``name``."""
        return self.rng(name).spawn(count)

    def pick(self, quick, default, full):
        """Choose a size by level."""
        return {"quick": quick, "default": default, "full": full}[self.level]

    def figure_path(self, name: str) -> Path | None:
        return None if self.out is None else Path(self.out) / "figures" / f"{name}.png"

    def save_figure(self, name: str, fig, params: dict) -> Path | None:
        """Save ``fig`` as ``figures/NAME.png`` (+ JSON sidecar) when ``out`` is set; always close it."""
        import matplotlib.pyplot as plt

        from ._figures import save_figure

        path = self.figure_path(name)
        if path is not None:
            save_figure(fig, path, params)
        plt.close(fig)
        return path


@dataclass(frozen=True)
class Check:
    """A named comparison job of one part."""

    part: str
    name: str
    run: Callable[[VerifyContext], list[Comparison]] = field(repr=False)


def collect_checks(ctx: VerifyContext, parts=None) -> list[Check]:
    names = list(PARTS) if parts is None else list(parts)
    out: list[Check] = []
    for p in names:
        if p not in PARTS:
            raise ValueError(f"part must be one of {list(PARTS)}, got {p!r}")
        out.extend(importlib.import_module(PARTS[p]).checks(ctx))
    return out


def run_verify(ctx: VerifyContext, parts=None, *, progress: bool | None = None) -> Report:
    """Run the checks of ``parts`` (default: all) and return the :class:`Report`."""
    from tqdm.auto import tqdm

    from ._figures import use_agg, versions

    use_agg()
    checks = collect_checks(ctx, parts)
    if progress is None:
        progress = sys.stderr.isatty()
    settings = {"level": ctx.level, "seed": ctx.seed, "backend": ctx.backend,
                "out": None if ctx.out is None else str(ctx.out), "versions": versions()}
    comparisons = []
    t0 = time.perf_counter()
    timings = {}
    bar = tqdm(checks, desc="rmtfl verify", unit="check", disable=not progress, leave=False)
    for chk in bar:
        bar.set_postfix_str(f"{chk.part}: {chk.name}")
        t = time.perf_counter()
        rows = chk.run(ctx)
        timings[f"{chk.part}/{chk.name}"] = round(time.perf_counter() - t, 3)
        comparisons.extend(rows)
    settings["seconds"] = round(time.perf_counter() - t0, 2)
    settings["check_seconds"] = timings
    return Report(tuple(comparisons), settings)
