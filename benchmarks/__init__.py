"""rmtfl benchmarks: ``python -m benchmarks [--quick] [--json FILE] [FILTER ...]``.

Every module ``benchmarks/bench_<part>.py`` defines ``run(quick=False) -> list[dict]``
returning rows ``{"name", "seconds", "floor_seconds", "ratio", "floor", ...}``; the
floor is the bare BLAS/LAPACK (or numpy) work of the same computation, measured in the
same process, and ``ratio = seconds / floor_seconds``.  Optional keys: ``target_ratio``
(upper bound on ``ratio``), ``target_seconds`` (upper bound on ``seconds``), ``ok``.
Benchmarks are not part of the test suite.
"""
