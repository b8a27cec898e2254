"""Benchmark of the two-step part: simulate_two_step against a plain numpy script.

Rows (``run() -> list[dict]``; ``python -m benchmarks two_step``):

* ``simulate_two_step full spectrum``: :func:`rmtfl.numerics.simulate_two_step` (tanh,
  linear target, reused batch, ``k=None``: all singular values plus the top singular
  vectors and alignments) at ``N = d = n = 1500`` versus the floor: a plain numpy script
  doing the same work — sample ``W0, a, X, y``, two gradient steps by GEMM
  (``(1 - tanh(W X^T)^2) * y`` then ``@ X``), then ``svd(compute_uv=False)``.
  Target ``ratio <= 1.25``.
* ``simulate_two_step k=10``: the same with the top 10 singular values only (ARPACK,
  completeness certified at the Tracy–Widom edge).  Target ``ratio <= 0.5`` of the script.
* ``peak memory N=d=n=4000``: ``tracemalloc`` peak of ``simulate_two_step(k=10)``
  divided by the bytes of the inputs ``X`` and ``W``.  Target ``<= 4`` (no ``n x N x d``
  temporaries).

``--quick`` uses ``1000`` and ``2000``.
"""
from __future__ import annotations

import time

__all__ = ["run"]


def _best(fn, repeat):
    best, out = float("inf"), None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def _plain_script(N, d, n, eta1, eta2, seed):
    """The floor: the bare work of two reused-batch steps and a full SVD, written directly in numpy."""
    import numpy as np

    rng = np.random.default_rng(seed)
    W = rng.standard_normal((N, d)) / np.sqrt(d)
    a = rng.standard_normal(N) / np.sqrt(N)
    X = rng.standard_normal((n, d))
    y = X[:, 0].copy()
    for eta in (eta1, eta2):
        S = 1.0 - np.tanh(W @ X.T) ** 2
        S *= y[None, :]
        W = W + (eta / n) * a[:, None] * (S @ X)
    return np.linalg.svd(W, compute_uv=False)


def run(quick: bool = False) -> list[dict]:
    """Time simulate_two_step against the plain script; measure its peak memory."""
    import tracemalloc

    import numpy as np

    from rmtfl.numerics.two_step import simulate_two_step

    n1 = 1000 if quick else 1500
    nm = 2000 if quick else 4000
    repeat = 2
    kw = dict(activation="tanh", target="linear", eta1=1.5, eta2=1.5)
    rows = []

    t_floor, s_ref = _best(lambda: _plain_script(n1, n1, n1, 1.5, 1.5, 0), repeat)
    t_full, r = _best(lambda: simulate_two_step(**kw, N=n1, d=n1, n=n1, rng=0), repeat)
    rows.append({"name": f"simulate_two_step full spectrum N=d=n={n1}", "seconds": t_full,
                 "floor_seconds": t_floor, "ratio": t_full / t_floor,
                 "floor": "plain numpy: 2 GEMM steps + svd(compute_uv=False)", "target_ratio": 1.25,
                 "outliers": r.outlier_count, "ok": t_full / t_floor <= 1.25})
    t_k, rk = _best(lambda: simulate_two_step(**kw, N=n1, d=n1, n=n1, rng=0, k=10), repeat)
    rows.append({"name": f"simulate_two_step k=10 N=d=n={n1}", "seconds": t_k, "floor_seconds": t_floor,
                 "ratio": t_k / t_floor, "floor": "plain numpy: 2 GEMM steps + svd(compute_uv=False)",
                 "target_ratio": 0.5, "complete": rk.complete, "ok": rk.complete and t_k / t_floor <= 0.5})

    inputs = 2 * nm * nm * 8  # X (n x d) and W (N x d), float64
    tracemalloc.start()
    t = time.perf_counter()
    simulate_two_step(**kw, N=nm, d=nm, n=nm, rng=0, k=10)
    secs = time.perf_counter() - t
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rows.append({"name": f"peak memory simulate_two_step k=10 N=d=n={nm}", "seconds": secs,
                 "floor_seconds": None, "ratio": peak / inputs, "floor": "bytes of X and W (float64)",
                 "peak_bytes": int(peak), "target_ratio": 4.0, "ok": peak / inputs <= 4.0})
    del s_ref
    return rows


if __name__ == "__main__":  # pragma: no cover
    import json

    print(json.dumps(run(quick=True), indent=2, default=float))
