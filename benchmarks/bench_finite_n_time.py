"""How long a finite-N two-step prediction takes (README, "Performance"; docs/theory/two_step.md §8.2).

``rmtfl.theory.two_step(..., N=1000)`` at the 272 points of the acceptance page at ``N = 1000``
(docs/benchmarks/two_step_finite_n.md: four σ, two targets, the 25 points of α ∈ {0, …, 0.4}² with a reused batch
and the 9 of α ∈ {0, 0.2, 0.4}² with a fresh second batch), each the fastest of ``--repeat``
calls after a first call per target and batch (the first calls in a process tabulate the law of ``M`` and load
``scipy.stats`` for the count's lattice: up to 0.5 s longer), and a 21 × 21 finite-N phase map (:func:`rmtfl.theory.finite_n_outlier_map`, gelu,
He1 + He3/√6, ``N = 1000``, α ∈ [0, 0.45]²).  Targets: at most 0.2 s a prediction and 90 s a map (2 cores).  Single
calls vary with the machine's load: run it alone::

    OPENBLAS_NUM_THREADS=1 python -m benchmarks.bench_finite_n_time [--repeat 2] [--no-map]

``python -m benchmarks finite_n_time`` gives the same rows in the benchmarks' table (``--quick``: one call a point, no
map).
"""
from __future__ import annotations

import argparse
import os
import platform
import sys
import time

import numpy as np

ACTIVATIONS = ["tanh", "erf", "gelu", "hermite(0, 1, 0.5)"]
TARGETS = ["hermite(0, 1, 0.5)", "hermite(0, 1, 0, 0.4082482904638631)"]   # He1 + He2/2, He1 + He3/sqrt(6)
REUSED_GRID = [0.0, 0.1, 0.2, 0.3, 0.4]
FRESH_GRID = [0.0, 0.2, 0.4]
N = 1000


def cpu_name() -> str:
    """The CPU's model name (``/proc/cpuinfo``) and its number of cores."""
    name = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    name = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{name}, {os.cpu_count()} cores"


def points() -> list[tuple]:
    """``(activation, target, batch, alpha1, alpha2)`` of the page's 272 predictions at ``N = 1000``."""
    out = []
    for act in ACTIVATIONS:
        for tgt in TARGETS:
            out += [(act, tgt, "reused", a1, a2) for a1 in REUSED_GRID for a2 in REUSED_GRID]
            out += [(act, tgt, "fresh", a1, a2) for a1 in FRESH_GRID for a2 in FRESH_GRID]
    return out


def predict(act, tgt, batch, a1, a2):
    from rmtfl.theory import two_step

    return two_step(act, tgt, psi=1.0, phi=2.0, eta1=N**a1, eta2=N**a2, N=N, batch=batch,
                    phi2=2.0 if batch == "fresh" else None)


def time_points(repeat: int, progress: bool = True) -> list[tuple[float, tuple]]:
    """``[(seconds, point), ...]``: the fastest of ``repeat`` calls at each point (after one call per target and
    batch)."""
    from tqdm import tqdm

    for tgt in TARGETS:             # what a process loads once: the law of M, scipy.stats for the count's lattice
        predict(ACTIVATIONS[-1], tgt, "reused", 0.4, 0.4)
        predict(ACTIVATIONS[-1], tgt, "fresh", 0.4, 0.4)
    out = []
    for p in tqdm(points(), desc="predictions", disable=not progress, leave=False):
        best = np.inf
        for _ in range(repeat):
            t0 = time.perf_counter()
            predict(*p)
            best = min(best, time.perf_counter() - t0)
        out.append((best, p))
    return out


def time_map() -> float:
    """Seconds of the 21 × 21 finite-N map (module docstring), after one prediction for its target."""
    from rmtfl.theory import finite_n_outlier_map

    grid = np.linspace(0.0, 0.45, 21)
    predict("gelu", TARGETS[1], "reused", 0.1, 0.1)
    t0 = time.perf_counter()
    finite_n_outlier_map(grid, grid, activation="gelu", target=TARGETS[1], psi=1.0, phi=2.0, N=N)
    return time.perf_counter() - t0


def run(quick: bool = False) -> list[dict]:
    """Rows for ``python -m benchmarks``: the predictions' median and largest time, and the map's."""
    got = time_points(1 if quick else 2, progress=False)
    t = np.array([s for s, _ in got])
    rows = [{"name": f"finite-N prediction, max of {t.size} (med {np.median(t):.3f}s)",     # fits the table's 52
             "seconds": float(t.max()), "floor_seconds": None, "ratio": None, "floor": "", "target_seconds": 0.2,
             "median_seconds": float(np.median(t)), "above_target": int(np.sum(t > 0.2)), "cpu": cpu_name(),
             "ok": bool(t.max() <= 0.2)}]
    if not quick:
        m = time_map()
        rows.append({"name": "finite-N phase map 21x21, gelu, He1 + He3/sqrt(6)", "seconds": m, "floor_seconds": None,
                     "ratio": None, "floor": "", "target_seconds": 90.0, "cpu": cpu_name(), "ok": m <= 90.0})
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.bench_finite_n_time", description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=2, help="calls per point, the fastest kept (default 2)")
    ap.add_argument("--no-map", action="store_true", help="leave out the 21 x 21 map")
    ap.add_argument("--slowest", type=int, default=5, help="how many of the slowest points to list (default 5)")
    a = ap.parse_args(argv)
    if a.repeat < 1:
        ap.error(f"--repeat must be at least 1 (got {a.repeat})")
    got = time_points(a.repeat)
    t = np.array([s for s, _ in got])
    print(f"{cpu_name()}; load average {os.getloadavg()[0]:.2f}; the fastest of {a.repeat} call(s) a point")
    for batch in ("reused", "fresh"):
        tb = np.array([s for s, p in got if p[2] == batch])
        print(f"{batch}: {tb.size} predictions, median {np.median(tb):.3f} s, largest {tb.max():.3f} s, "
              f"{int(np.sum(tb > 0.2))} above 0.2 s")
    print(f"all: median {np.median(t):.3f} s, largest {t.max():.3f} s; the slowest:")
    for s, p in sorted(got, reverse=True)[:a.slowest]:
        print(f"  {s:.3f} s  {p[0]}, {p[1]}, {p[2]}, ({p[3]}, {p[4]})")
    if not a.no_map:
        print(f"21 x 21 map (gelu, He1 + He3/sqrt(6), N = 1000): {time_map():.1f} s")
    return 0 if t.max() <= 0.2 else 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
