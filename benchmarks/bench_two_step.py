"""Benchmark of the two-step part: simulate_two_step against a plain numpy script.

Rows (``run() -> list[dict]``; ``python -m benchmarks two_step``):

* ``simulate_two_step full spectrum``: :func:`rmtfl.numerics.simulate_two_step` (tanh,
  linear target, reused batch, ``k=None``: all singular values plus the top singular
  vectors and alignments) at ``N = d = n = 1500`` versus the floor: a plain numpy script
  doing the same work — sample ``W0, a, X, y``, two gradient steps by GEMM
  (``(1 - tanh(W X^T)^2) * y`` then ``@ X``), then ``svd(compute_uv=False)``.
  Target ``ratio <= 1.25``.
* ``simulate_two_step k=10``: the same with the top 10 singular values only (mixed-precision
  solver, :mod:`rmtfl.numerics._classical.mixed`: float32 dense Gram solve + float64 Rayleigh–Ritz,
  completeness certified at the Tracy–Widom edge).  Target ``ratio <= 0.5`` of the script.
* ``simulate_one_step`` full spectrum / ``k=10`` (``eta = 3``) against the same script with one
  step; the targets of the two-step rows (1.25x, 0.5x) applied.
* ``two reused-batch steps``: :func:`rmtfl.numerics.gd_steps` alone (three GEMMs and a SYRK
  through ``K = X X^T``) against the script's four GEMMs — the part of the floor no spectrum
  solver can touch.
* ``peak memory N=d=n=4000`` (``k=10`` and full spectrum ``k=None``): run in a fresh
  subprocess, so nothing else is counted.  Reported: the peak resident set size during
  ``simulate_two_step`` above the RSS just before it (``VmHWM`` after a reset through
  ``/proc/self/clear_refs``; ``ru_maxrss`` where that is unavailable) and the ``tracemalloc``
  peak of the same call, each divided by the bytes of the inputs ``X`` and ``W``
  (``2 N d`` float64).  Target ``<= 4`` for both (no ``n x N x d`` temporaries).

``--quick`` uses ``1000`` and ``2000``.
"""
from __future__ import annotations

import numpy as np

from . import best_of

__all__ = ["run"]




def _inputs(n, seed):
    """``W0, a, X, y`` at ``N = d = n``, drawn exactly as the plain script and ``simulate_two_step``'s
    law (``W0 ~ N(0, 1/d)``, ``a ~ N(0, 1/N)``, ``x ~ N(0, I)``, linear target)."""
    rng = np.random.default_rng(seed)
    W = rng.standard_normal((n, n)) / np.sqrt(n)
    a = rng.standard_normal(n) / np.sqrt(n)
    X = rng.standard_normal((n, n))
    return W, a, X, X[:, 0].copy()


def _plain_steps(n, seed, eta1=1.5, eta2=1.5):
    """The floor's gradient part: sampling and two reused-batch steps (one if ``eta2`` is None),
    written directly in numpy."""
    W, a, X, y = _inputs(n, seed)
    for eta in (eta1, eta2)[: 1 if eta2 is None else 2]:
        S = 1.0 - np.tanh(W @ X.T) ** 2
        S *= y[None, :]
        W = W + (eta / n) * a[:, None] * (S @ X)
    return W


def _plain_script(n, eta1, eta2, seed):
    """The floor: the bare work of two reused-batch steps and a full SVD, written directly in numpy."""
    return np.linalg.svd(_plain_steps(n, seed, eta1, eta2), compute_uv=False)


def _rmtfl_steps(n, seed):
    """The same sampling and steps through :func:`rmtfl.numerics.gd_steps`."""
    from rmtfl.numerics import gd_steps

    W, a, X, y = _inputs(n, seed)
    return gd_steps("tanh", W, a, (X, y), etas=[1.5, 1.5])


def run(quick: bool = False) -> list[dict]:
    """Time simulate_two_step against the plain script; measure its peak memory."""

    from rmtfl.numerics import simulate_one_step, simulate_two_step

    n1 = 1000 if quick else 1500
    nm = 2000 if quick else 4000
    repeat = 2
    kw = dict(activation="tanh", target="linear", eta1=1.5, eta2=1.5)
    rows = []

    t_floor, s_ref = best_of(lambda: _plain_script(n1, 1.5, 1.5, 0), repeat)
    t_full, r = best_of(lambda: simulate_two_step(**kw, N=n1, d=n1, n=n1, rng=0), repeat)
    rows.append({"name": f"simulate_two_step full spectrum N=d=n={n1}", "seconds": t_full,
                 "floor_seconds": t_floor, "ratio": t_full / t_floor,
                 "floor": "plain numpy: 2 GEMM steps + svd(compute_uv=False)", "target_ratio": 1.25,
                 "outliers": r.outlier_count, "ok": t_full / t_floor <= 1.25})
    t_k, rk = best_of(lambda: simulate_two_step(**kw, N=n1, d=n1, n=n1, rng=0, k=10), repeat)
    rows.append({"name": f"simulate_two_step k=10 N=d=n={n1}", "seconds": t_k, "floor_seconds": t_floor,
                 "ratio": t_k / t_floor, "floor": "plain numpy: 2 GEMM steps + svd(compute_uv=False)",
                 "target_ratio": 0.5, "complete": rk.complete, "ok": rk.complete and t_k / t_floor <= 0.5})

    t_one_floor, _ = best_of(lambda: np.linalg.svd(_plain_steps(n1, 0, 3.0, None), compute_uv=False), repeat)
    kw1 = dict(activation="tanh", target="linear", eta=3.0, N=n1, d=n1, n=n1, rng=0)
    for k1, target in ((None, 1.25), (10, 0.5)):
        t_one, r1 = best_of(lambda k1=k1: simulate_one_step(**kw1, k=k1), repeat)
        rows.append({"name": f"simulate_one_step {'full spectrum' if k1 is None else f'k={k1}'} N=d=n={n1}",
                     "seconds": t_one, "floor_seconds": t_one_floor, "ratio": t_one / t_one_floor,
                     "floor": "plain numpy: 1 GEMM step + svd(compute_uv=False)", "target_ratio": target,
                     "complete": r1.complete, "ok": r1.complete and t_one / t_one_floor <= target})

    t_steps_floor, _ = best_of(lambda: _plain_steps(n1, 0), repeat)
    t_steps, _ = best_of(lambda: _rmtfl_steps(n1, 0), repeat)
    rows.append({"name": f"two reused-batch steps N=d=n={n1}", "seconds": t_steps, "floor_seconds": t_steps_floor,
                 "ratio": t_steps / t_steps_floor, "floor": "plain numpy: sample + 4 GEMMs", "target_ratio": None,
                 "ok": True})

    for k in (10, None):
        m = memory_probe(nm, k)
        worst = max(m["rss_ratio"], m["tracemalloc_ratio"])
        rows.append({"name": f"peak memory simulate_two_step k={k} N=d=n={nm} (RSS)", "seconds": m["seconds"],
                     "floor_seconds": None, "ratio": worst, "floor": "bytes of X and W (float64)", **m,
                     "target_ratio": 4.0, "ok": worst <= 4.0})
    del s_ref
    return rows


_PROBE = r"""
import json, resource, sys, time, tracemalloc
import numpy as np
from rmtfl.numerics import simulate_two_step

def rss(field):
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None

n, k = int(sys.argv[1]), (None if sys.argv[2] == "None" else int(sys.argv[2]))
kw = dict(activation="tanh", target="linear", eta1=1.5, eta2=1.5)
simulate_two_step(**kw, N=64, d=64, n=64, rng=0, k=None)  # imports and first-call allocations
base = rss("VmRSS")
reset = False
try:
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")  # resets VmHWM to the current RSS
    reset = True
except OSError:
    pass
t = time.perf_counter()
tracemalloc.start()
simulate_two_step(**kw, N=n, d=n, n=n, rng=0, k=k)
_, tm_peak = tracemalloc.get_traced_memory()
tracemalloc.stop()
secs = time.perf_counter() - t
hwm = rss("VmHWM") if reset else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"seconds": secs, "rss_baseline": base, "rss_peak": hwm, "tracemalloc_peak": tm_peak,
                  "hwm_reset": reset}))
"""


def memory_probe(n: int, k) -> dict:
    """Peak memory of ``simulate_two_step(N=d=n, k)`` measured in a fresh Python process.

    Returns ``seconds``, ``rss_peak_over_baseline`` and ``tracemalloc_peak`` (bytes) and their
    ratios ``rss_ratio`` / ``tracemalloc_ratio`` to the inputs ``X`` and ``W`` (``2 n^2`` float64).
    """
    import json
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", _PROBE, str(n), str(k)], capture_output=True, text=True,
                         check=True, timeout=3600)
    m = json.loads(out.stdout.strip().splitlines()[-1])
    inputs = 2 * n * n * 8  # X (n x d) and W (N x d), float64
    over = m["rss_peak"] - m["rss_baseline"]
    return {"seconds": m["seconds"], "inputs_bytes": inputs, "rss_peak_over_baseline": int(over),
            "tracemalloc_peak": int(m["tracemalloc_peak"]), "rss_ratio": over / inputs,
            "tracemalloc_ratio": m["tracemalloc_peak"] / inputs, "hwm_reset": m["hwm_reset"]}


if __name__ == "__main__":  # pragma: no cover
    import json

    print(json.dumps(run(quick=True), indent=2, default=float))
