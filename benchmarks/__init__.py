"""rmtfl benchmarks: ``python -m benchmarks [--quick] [--json FILE] [FILTER ...]``.

Every module ``benchmarks/bench_<part>.py`` defines ``run(quick=False) -> list[dict]``
returning rows ``{"name", "seconds", "floor_seconds", "ratio", "floor", ...}``; the
floor is the bare BLAS/LAPACK (or numpy) work of the same computation, measured in the
same process, and ``ratio = seconds / floor_seconds``.  Optional keys: ``target_ratio``
(upper bound on ``ratio``), ``target_seconds`` (upper bound on ``seconds``), ``ok``.
Benchmarks are not part of the test suite.
"""
import time

__all__ = ["best_of"]


def best_of(fn, repeat: int):
    """``(best wall time over repeat calls, last result)`` of ``fn()``."""
    best, out = float("inf"), None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out
