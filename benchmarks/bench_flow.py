"""Benchmark of the gradient-flow part: time to the end of the first plateau.

Rows (``run() -> list[dict]``; ``python -m benchmarks flow``):

* ``square net d=3 n=5 h=4 delta=1e-4 to first-plateau end``: :func:`rmtfl.numerics.simulate_flow`
  (auto = LSODA for L = 3, rtol 1e-10, atol 1e-13 delta) on the docs/theory/gradient_flow.md §14 common data with the
  square activation, from the fixed ``w0`` of Check 2, until the loss drops 1e-3 below the
  first-saddle loss (terminal event; t ~ 7e4).  Target < 10 s (issue 5).  Also reported:
  steps (gradient evaluations) per second and the time to reach the first saddle.
  Floor: the same number of bare analytic-gradient evaluations (numpy forward + backward)
  in a Python loop, i.e. the work any integrator must do.
* ``... to first saddle``: the same run stopped when the loss is within 1e-6 of the
  first-saddle loss (wall time and flow time ``t_first_saddle``).
* ``... DOP853`` (full run only): the explicit integrator on the same problem, to show the
  stiffness of the plateau (ratio against the same floor of its own evaluation count).

``--quick`` uses ``delta = 1e-3``.
"""
from __future__ import annotations

import time

__all__ = ["run"]


def run(quick: bool = False) -> list[dict]:
    """Time the flow to the end of the first plateau against bare gradient evaluations."""
    import numpy as np

    from rmtfl.numerics import simulate_flow
    from rmtfl.theory import first_saddle, flow_example, make_problem

    ex = flow_example("square5")
    X, y, w0 = ex.X, ex.y, ex.w0
    kw = dict(activation="square", N=4)
    delta = 1e-3 if quick else 1e-4
    sad = first_saddle(X, y, w0=w0, **kw)
    pb = make_problem(X, y, **kw)
    f = pb.rhs()
    rows = []
    methods = ["auto"] if quick else ["auto", "dop853"]
    for m in methods:
        t0 = time.perf_counter()
        run_ = simulate_flow(X, y, delta=delta, w0=w0, t_end=50.0 / delta, t_eval=[0.0], method=m,
                             escape_loss=0.5 * (pb.loss_at_zero() + sad.loss), stop_loss=sad.loss - 1e-3, **kw)
        sec = time.perf_counter() - t0
        w = delta * w0
        t1 = time.perf_counter()
        for _ in range(run_.nfev):
            f(0.0, w)
        floor = time.perf_counter() - t1
        rows.append({"name": f"square net d=3 n=5 h=4 delta={delta:g} to plateau end ({run_.method})",
                     "seconds": sec, "floor_seconds": floor, "ratio": sec / floor,
                     "floor": f"{run_.nfev} bare numpy gradient evaluations",
                     "target_seconds": 10.0, "t_plateau_end": run_.t_stop, "t_escape": run_.t_escape,
                     "steps_per_second": run_.nfev / sec, "first_saddle_loss": sad.loss,
                     "ok": bool(np.isfinite(run_.t_stop)) and (sec < 10.0 or m != "auto")})
    # time to reach the first saddle (loss within 1e-6 of it)
    t0 = time.perf_counter()
    r2 = simulate_flow(X, y, delta=delta, w0=w0, t_end=50.0 / delta, t_eval=[0.0], stop_loss=sad.loss + 1e-6, **kw)
    sec = time.perf_counter() - t0
    t1 = time.perf_counter()
    for _ in range(r2.nfev):
        f(0.0, delta * w0)
    floor = time.perf_counter() - t1
    rows.append({"name": f"square net delta={delta:g} to first saddle (loss within 1e-6)", "seconds": sec,
                 "floor_seconds": floor, "ratio": sec / floor, "floor": f"{r2.nfev} bare gradient evaluations",
                 "target_seconds": 10.0, "t_first_saddle": r2.t_stop, "steps_per_second": r2.nfev / sec,
                 "ok": bool(np.isfinite(r2.t_stop)) and sec < 10.0})
    return rows


if __name__ == "__main__":
    for r in run():
        print(r)
