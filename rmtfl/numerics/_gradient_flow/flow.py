"""Gradient flow of homogeneous networks from ``w(0) = delta w0`` and its measurements.

Integrators: adaptive DOP853 or LSODA (rtol ``1e-10`` (L > 2) or ``1e-11`` (L = 2),
atol ``1e-13 delta``, docs/theory/gradient_flow.md §12) and plain gradient descent (``method="gd"``,
step ``eta``; after ``k`` steps ``t = k eta``).  ``method="auto"`` uses DOP853 for
``L = 2`` and LSODA for ``L > 2``: on the first plateau of an ``L > 2`` net the flow
is stiff (the active unit relaxes at rate O(1) while the others move at O(delta)),
and an explicit method then needs ~O(t) steps (DOP853 takes ~5e5 gradient
evaluations to reach t = 8e4 at delta = 1e-4; LSODA ~4e3, same escape time to 1e-8).  Terminal/recorded
events: ``escape_loss`` (first time the loss drops through it) and ``stop_loss``
(stop when the loss drops through it).  Network maths (forward, analytic gradient,
packing of docs/conventions.md §9) comes from :mod:`rmtfl.theory._gradient_flow.networks` and :mod:`rmtfl.theory._gradient_flow.problem`.  ``w0`` is
normalised; ``w0=None`` draws a Gaussian direction from ``rng``.  Losses are
summed (``reduction="sum"``).

Examples
--------
>>> import numpy as np
>>> run = simulate_flow(np.eye(2), [3.0, 4.0], activation="identity", width=1, delta=1e-3,
...                     w0=[1.0, 0.6, 0.8], t_end=10.0, escape_loss=6.0)
>>> round(float(run.loss[-1]), 8), run.t_escape > 0
(0.0, True)
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
from scipy.integrate import solve_ivp

from rmtfl._validate import check_choice, check_finite_array, check_positive
from rmtfl.theory._gradient_flow.problem import FlowProblem, check_direction, make_problem

__all__ = ["simulate_flow", "flow_from_problem", "FlowRun", "active_count", "kth_to_max_ratio",
           "winner_share", "find_plateaus", "path_distance", "is_zero_preserving", "log_time_grid"]


@dataclass(frozen=True)
class FlowRun:
    """A simulated trajectory on the grid ``t``.

    ``w`` (T, P) packed parameters; ``loss`` (T,); ``unit_norms`` (T, units);
    ``conserved_drift`` = ``max_t |c(t) - c(0)|`` of the balance quantities
    ``|w_j|^2 - p a_j^2`` (docs/theory/gradient_flow.md §6); ``t_escape`` first crossing of ``escape_loss``
    (nan if none); ``t_stop`` time a ``stop_loss`` event ended the run (nan if none);
    ``nfev`` gradient evaluations; ``seconds`` wall time.
    """

    t: np.ndarray = field(repr=False)
    w: np.ndarray = field(repr=False)
    loss: np.ndarray = field(repr=False)
    unit_norms: np.ndarray = field(repr=False)
    conserved_drift: float
    t_escape: float
    t_stop: float
    nfev: int
    seconds: float
    delta: float
    w0: np.ndarray = field(repr=False)
    degree: int
    method: str

    def to_dict(self) -> dict:
        return {"t": self.t.tolist(), "loss": self.loss.tolist(), "unit_norms": self.unit_norms.tolist(),
                "conserved_drift": self.conserved_drift, "t_escape": self.t_escape, "t_stop": self.t_stop,
                "nfev": self.nfev, "seconds": self.seconds, "delta": self.delta, "degree": self.degree,
                "method": self.method, "w_final": self.w[-1].tolist()}


def log_time_grid(t_end: float, n: int = 400, t_min: float | None = None) -> np.ndarray:
    """``0`` followed by ``n - 1`` log-spaced times up to ``t_end``."""
    t_end = check_positive("t_end", t_end)
    t_min = t_end * 1e-6 if t_min is None else t_min
    return np.r_[0.0, np.geomspace(t_min, t_end, n - 1)]


def simulate_flow(X, y, *, activation, width, delta, w0=None, loss="square", t_end, depth=2, t_eval=None,
                  method="auto", rtol=None, atol=None, eta=None, escape_loss=None, stop_loss=None,
                  rng=None, reduction="sum", logistic_scale=1.0) -> FlowRun:
    """Integrate ``dw/dt = -grad L(w)`` from ``delta w0/|w0|`` up to ``t_end``.

    Parameters
    ----------
    t_eval : output times (default :func:`log_time_grid`); ``t_end`` is the horizon.
    method : ``"auto"`` (DOP853 for L = 2, LSODA for L > 2, GD with ``eta = 1e-3`` for plain
        ReLU, whose discontinuous gradient field stalls adaptive solvers), ``"dop853"``, ``"lsoda"``
        (both adaptive) or ``"gd"`` (plain GD with step ``eta``).
    escape_loss, stop_loss : loss levels for the escape event and a terminal event.
    """
    delta = check_positive("delta", delta)
    pb = make_problem(X, y, activation=activation, width=width, loss=loss, depth=depth,
                      reduction=reduction, logistic_scale=logistic_scale)
    if w0 is None:
        w0 = pb.arch.random_point(np.random.default_rng(rng))
    return flow_from_problem(pb, delta, w0, t_end=t_end, t_eval=t_eval, method=method, rtol=rtol, atol=atol,
                             eta=eta, escape_loss=escape_loss, stop_loss=stop_loss)


def _loss_event(pb: FlowProblem, level: float, terminal: bool):
    X, y, arch = pb.X, pb.y, pb.arch

    if pb.loss_name == "square":
        def ev(t, w):
            r = arch.forward(X, w) - y
            return pb.scale * 0.5 * float(np.sum(r * r)) - level
    else:
        def ev(t, w):
            return pb.loss(w) - level
    ev.terminal, ev.direction = terminal, -1
    return ev


def flow_from_problem(pb: FlowProblem, delta, w0, *, t_end, t_eval=None, method="auto", rtol=None,
                      atol=None, eta=None, escape_loss=None, stop_loss=None) -> FlowRun:
    """:func:`simulate_flow` on a built :class:`~rmtfl.theory.FlowProblem`."""
    delta = check_positive("delta", delta)
    check_choice("method", method, ("auto", "dop853", "lsoda", "gd"))
    if method == "auto":
        act = getattr(pb.arch, "act", None)
        if act is not None and act.name == "relu":
            method = "gd"  # discontinuous gradient field: adaptive solvers stall in sliding modes
        else:
            method = "dop853" if pb.degree == 2 else "lsoda"
    t_end = check_positive("t_end", t_end)
    w0 = check_direction(w0, pb.P)
    t_eval = log_time_grid(t_end) if t_eval is None else np.sort(check_finite_array("t_eval", t_eval, ndim=1))
    if t_eval[0] < 0 or t_eval[-1] > t_end * (1 + 1e-12):
        raise ValueError(f"t_eval must lie in [0, t_end={t_end}]")
    L = pb.degree
    start = time.perf_counter()
    t_esc = t_stop = float("nan")
    if method in ("dop853", "lsoda"):
        rtol = (1e-11 if L == 2 else 1e-10) if rtol is None else check_positive("rtol", rtol)
        atol = 1e-13 * delta if atol is None else check_positive("atol", atol)
        events = []
        if escape_loss is not None:
            events.append(_loss_event(pb, float(escape_loss), False))
        if stop_loss is not None:
            events.append(_loss_event(pb, float(stop_loss), True))
        sol = solve_ivp(pb.rhs(), (0.0, t_end), delta * w0, method=method.upper(), t_eval=t_eval, rtol=rtol,
                        atol=atol, events=events or None)
        if sol.status < 0:
            raise RuntimeError(f"gradient-flow integration failed: {sol.message}")
        ts, W, nfev = sol.t, sol.y.T, int(sol.nfev)
        k = 0
        if escape_loss is not None:
            t_esc = float(sol.t_events[0][0]) if sol.t_events[0].size else float("nan")
            k = 1
        if stop_loss is not None and sol.t_events[k].size:
            t_stop = float(sol.t_events[k][0])
            ts, W = np.r_[ts, t_stop], np.vstack([W, sol.y_events[k][0]])
    else:
        eta = check_positive("eta", eta if eta is not None else 1e-3)
        ts, W, t_esc, t_stop, nfev = _gd(pb, delta * w0, eta, t_end, t_eval, escape_loss, stop_loss)
    losses = np.array([pb.loss(w) for w in W])
    norms = np.array([pb.arch.unit_norms(w) for w in W])
    cons = np.array([pb.arch.conserved(w) for w in W])
    drift = float(np.max(np.abs(cons - cons[0]))) if cons.size else 0.0
    return FlowRun(ts, W, losses, norms, drift, t_esc, t_stop, nfev, time.perf_counter() - start, delta, w0,
                   L, method)


def _gd(pb, w, eta, t_end, t_eval, escape_loss, stop_loss):
    g = pb.rhs()
    n_steps = int(np.ceil(t_end / eta - 1e-9))
    marks = np.minimum(np.round(t_eval / eta).astype(int), n_steps)
    out, t_esc, t_stop = [], float("nan"), float("nan")
    j = 0
    prev = pb.loss(w)
    for k in range(n_steps + 1):
        while j < marks.size and marks[j] == k:
            out.append(w.copy())
            j += 1
        if escape_loss is not None or stop_loss is not None:
            lo = pb.loss(w)
            if escape_loss is not None and np.isnan(t_esc) and prev > escape_loss >= lo:
                t_esc = k * eta
            if stop_loss is not None and prev > stop_loss >= lo:
                t_stop = k * eta
                out.append(w.copy())
                break
            prev = lo
        if k < n_steps:
            w = w + eta * g(0.0, w)
    ts = np.r_[t_eval[: len(out)]] if np.isnan(t_stop) else np.r_[t_eval[: len(out) - 1], t_stop]
    return ts, np.array(out), t_esc, t_stop, k


# ------------------------------------------------------------- measurements
def active_count(norms, tau) -> np.ndarray:
    """Number of units with norm ``> tau`` (per row of ``norms``)."""
    norms = np.atleast_2d(norms)
    return np.sum(norms > tau, axis=-1)


def kth_to_max_ratio(norms, k: int = 2) -> np.ndarray:
    """``nu_(k) / nu_(1)`` (k-th largest over largest), per row."""
    s = -np.sort(-np.atleast_2d(norms), axis=-1)
    if not 1 <= k <= s.shape[-1]:
        raise ValueError(f"k must lie in [1, {s.shape[-1]}], got {k}")
    return s[:, k - 1] / s[:, 0]


def winner_share(norms) -> np.ndarray:
    """``nu_(1)^2 / sum_j nu_j^2`` per row."""
    n2 = np.atleast_2d(norms) ** 2
    return n2.max(axis=-1) / n2.sum(axis=-1)


def find_plateaus(t, loss, tol: float = 1e-3, min_ratio: float = 2.0):
    """Maximal runs of grid points whose loss stays within ``tol`` of the run's first
    value and last at least ``t_end/t_start >= min_ratio``: list of ``(t_start, t_end, level)``
    with ``level`` the median loss on the run."""
    t, loss = np.asarray(t, float), np.asarray(loss, float)
    out, i = [], 0
    while i < t.size:
        j = i
        while j + 1 < t.size and abs(loss[j + 1] - loss[i]) <= tol:
            j += 1
        if t[i] > 0 and t[j] / t[i] >= min_ratio:
            out.append((float(t[i]), float(t[j]), float(np.median(loss[i:j + 1]))))
        i = j + 1
    return out


def path_distance(run: FlowRun, path_points, start: int = 0) -> np.ndarray:
    """``|w(t_k) - p_k|`` for the rows ``k >= start`` (the caller aligns the grids)."""
    P = np.asarray(path_points, float)
    return np.linalg.norm(run.w[start:start + P.shape[0]] - P, axis=1)


def is_zero_preserving(pb: FlowProblem, indices, *, steps: int = 3000, eta: float = 1e-3, rng=None) -> bool:
    """Bit-exact Euler test (docs/theory/gradient_flow.md §12): start from a random point with ``w[indices] = 0``
    and check that the coordinates are exactly 0 after ``steps`` GD steps."""
    w = 0.5 * pb.arch.random_point(np.random.default_rng(rng)) * np.sqrt(pb.P)
    idx = np.asarray(indices, dtype=int)
    w[idx] = 0.0
    g = pb.rhs()
    for _ in range(steps):
        w = w + eta * g(0.0, w)
        if not np.all(np.isfinite(w)):
            raise RuntimeError("Euler run diverged; lower eta")
    return bool(np.all(w[idx] == 0.0))
