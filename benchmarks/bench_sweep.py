"""Benchmark of the sweep engine: a 6 x 6 (alpha1, alpha2) grid x 4 seeds of two-step at N = 800.

Rows (``run() -> list[dict]``, see ``python -m benchmarks``):

* ``serial``: ``workers=0``, every task pinned to 1 BLAS thread (the default, which makes the
  numbers executor-independent).  Floor: the sum of the tasks' own compute times
  (measured inside each task), so ``ratio - 1`` is the engine's overhead (store, bookkeeping).
* ``serial (all BLAS threads)`` (full run only, measured last): ``workers=0`` with the BLAS
  thread count left alone (``blas_threads_per_task=None``: OpenBLAS uses every core inside each
  task).  Same floor.
* ``local-cluster-W``: an embedded ``LocalCluster`` of ``W`` worker processes x 1 thread;
  Dask's nanny sets ``OMP_NUM_THREADS=OPENBLAS_NUM_THREADS=MKL_NUM_THREADS=1`` in each worker
  (``distributed.nanny.pre-spawn-environ``) and each task also runs inside
  ``blas_threads(1)``, so the cluster uses exactly ``W`` cores.  The cluster start-up is
  included in ``seconds``.  Floor: the serial floor divided by ``W`` (perfect scaling);
  ``speedup_vs_serial`` = serial seconds / these seconds (target >= 1.6 for W = 2);
  ``max_rel_diff_vs_serial`` = largest relative difference of the per-point means from the
  serial run (0.0 when bit-identical, as the engine intends).

Every run writes a fresh store in a temporary folder, so nothing is reused.

``python benchmarks/bench_sweep.py [--quick]`` prints the rows.
"""
from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

__all__ = ["run"]


def _sweep(grid, seeds, store, workers, threads):
    from rmtfl.sweep import ResultStore, get_experiment, run_sweep

    exp = get_experiment("two-step")
    t0 = time.perf_counter()
    res = run_sweep(exp, grid, seeds, store=store, workers=workers, blas_threads_per_task=threads,
                    progress=False)
    wall = time.perf_counter() - t0
    with ResultStore(store) as st:
        task_seconds = float(sum(r["seconds"] for r in st.rows("two-step")))
    assert res.failed == 0 and res.computed == res.tasks, res.summary()
    return wall, task_seconds, res


def _max_rel_diff(a, b) -> float:
    """Largest relative difference between two ``SweepResult.results`` lists (0.0 = bit-identical)."""
    worst = 0.0
    for ra, rb in zip(a, b):
        for m, va in ra.mean.items():
            vb = rb.mean.get(m)
            if va != vb:
                worst = max(worst, abs(va - vb) / max(abs(va), abs(vb), 1e-300))
    return worst


def run(quick: bool = False, all_threads_row: bool = True) -> list[dict]:
    """Time the sweep serially and on 2 local workers; returns benchmark rows.

    ``all_threads_row=False`` skips the (slow under load) serial run with unpinned BLAS threads.
    """
    from rmtfl.sweep import get_experiment, product_grid

    exp = get_experiment("two-step")
    if quick:
        N, axis, seeds = 300, "0:0.45:3", 2
    else:
        N, axis, seeds = 800, "0:0.45:6", 4
    grid = product_grid({"alpha1": axis, "alpha2": axis}, fixed=exp.params({"N": N}))
    label = f"two-step {len(grid)} points x {seeds} seeds, N={N}"
    rows = []
    with tempfile.TemporaryDirectory(prefix="rmtfl-bench-sweep-") as tmp:
        tmp = Path(tmp)
        serial_wall, floor, serial = _sweep(grid, seeds, tmp / "serial.sqlite", 0, 1)
        rows.append({"name": f"sweep serial (1 BLAS thread): {label}", "seconds": serial_wall,
                     "floor_seconds": floor, "ratio": serial_wall / floor,
                     "floor": "sum of task compute times (inside each task)"})
        workers = 2
        wall, _, res = _sweep(grid, seeds, tmp / "cluster.sqlite", workers, 1)
        rows.append({"name": f"sweep LocalCluster {workers} workers x 1 thread: {label}", "seconds": wall,
                     "floor_seconds": floor / workers, "ratio": wall / (floor / workers),
                     "floor": f"serial task compute time / {workers} (perfect scaling)",
                     "speedup_vs_serial": serial_wall / wall,
                     "max_rel_diff_vs_serial": _max_rel_diff(serial.results, res.results),
                     "load_average": os.getloadavg()[0], "cpus": os.cpu_count()})
        if not quick and all_threads_row:
            wall, _, _ = _sweep(grid, seeds, tmp / "serial_mt.sqlite", 0, None)
            rows.append({"name": f"sweep serial (all BLAS threads): {label}", "seconds": wall,
                         "floor_seconds": floor, "ratio": wall / floor,
                         "floor": "sum of task compute times of the 1-thread serial run",
                         "speedup_vs_serial": serial_wall / wall, "load_average": os.getloadavg()[0]})
    return rows


if __name__ == "__main__":
    for row in run(quick="--quick" in sys.argv[1:]):
        print({k: (round(v, 3) if isinstance(v, float) else v) for k, v in row.items()})
