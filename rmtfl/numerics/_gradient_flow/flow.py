"""Gradient flow of homogeneous networks from ``w(0) = delta w0`` and its measurements.

Integrators: adaptive DOP853 or LSODA (rtol ``1e-10`` (L > 2) or ``1e-11`` (L = 2),
atol ``1e-13 delta``, docs/theory/gradient_flow.md §12) and plain gradient descent (``method="gd"``,
step ``eta``; after ``k`` steps ``t = k eta``).  ``method="auto"`` uses DOP853 for
``L = 2`` (up to ``t_end = 1e3``) and LSODA for ``L > 2``: on the first plateau of an ``L > 2`` net the flow
is stiff (the active unit relaxes at rate O(1) while the others move at O(delta)),
and an explicit method then needs ~O(t) steps (DOP853 takes ~5e5 gradient
evaluations to reach t = 8e4 at delta = 1e-4; LSODA ~4e3, same escape time to 1e-8).  Terminal/recorded
events: ``escape_loss`` (first time the loss drops through it) and ``stop_loss``
(stop when the loss drops through it).  Network maths (forward, analytic gradient,
packing of docs/conventions.md §9) comes from :mod:`rmtfl.theory._gradient_flow.networks` and
:mod:`rmtfl.theory._gradient_flow.problem`.  ``w0`` is normalised; ``w0=None`` draws a Gaussian
direction from ``rng`` (:func:`random_direction`).  Losses are summed (``reduction="sum"``).

Examples
--------
>>> import numpy as np
>>> run = simulate_flow(np.eye(2), [3.0, 4.0], activation="identity", N=1, delta=1e-3,
...                     w0=[1.0, 0.6, 0.8], t_end=10.0, escape_loss=6.0)
>>> round(float(run.loss[-1]), 8), run.t_escape > 0
(0.0, True)
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
from scipy.integrate import solve_ivp

from rmtfl._results import Result, jsonify
from rmtfl._validate import (check_array, check_choice, check_finite_array, check_in_range, check_int,
                             check_memory, check_no_overflow, check_nonnegative, check_positive, check_real, check_rng)
from rmtfl.theory._gradient_flow.problem import FlowProblem, check_direction, make_problem

__all__ = ["simulate_flow", "flow_from_problem", "FlowRun", "active_count", "kth_to_max_ratio",
           "winner_share", "find_plateaus", "Plateau", "path_distance", "is_zero_preserving", "log_time_grid",
           "random_direction"]


@dataclass(frozen=True)
class FlowRun(Result):
    """A simulated trajectory on the grid ``t`` (docs/theory/gradient_flow.md §12).

    ``w`` (T, P) packed parameters (docs/conventions.md §9); ``loss`` (T,), summed; ``unit_norms`` (T, units);
    ``conserved_drift`` = ``max_t |c(t) - c(0)|`` of the balance quantities
    ``|w_j|^2 - p a_j^2`` (docs/theory/gradient_flow.md §6); ``t_escape`` first crossing of ``escape_loss``
    (nan if none); ``t_stop`` time a ``stop_loss`` event ended the run (nan if none);
    ``nfev`` gradient evaluations; ``seconds`` wall time.  ``to_dict()`` also lists the
    trajectory (``t``, ``loss``, ``unit_norms``) and the final point ``w_final``, not ``w`` itself.
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
        """The scalar fields plus ``t``, ``loss``, ``unit_norms`` and ``w_final`` (JSON-ready)."""
        return {**super().to_dict(), **jsonify({"t": self.t, "loss": self.loss, "unit_norms": self.unit_norms,
                                                "w_final": self.w[-1]})}


def log_time_grid(t_end: float, *, n: int = 400, t_min: float | None = None) -> np.ndarray:
    """``0`` followed by ``n - 1`` log-spaced times from ``t_min`` (default ``1e-6 t_end``) up to ``t_end``.

    >>> log_time_grid(100.0, n=3, t_min=1.0).tolist()
    [0.0, 1.0, 100.0]
    """
    t_end = check_positive("t_end", t_end)
    n = check_int("n", n, 2)
    check_memory("n", 8.0 * n, "the time grid")
    t_min = t_end * 1e-6 if t_min is None else check_positive("t_min", t_min)
    return np.r_[0.0, np.geomspace(t_min, t_end, n - 1)]


def random_direction(P: int, *, rng=None) -> np.ndarray:
    """A Gaussian direction of unit norm in ``R^P`` (packed parameters, docs/conventions.md §9).

    >>> v = random_direction(5, rng=0)
    >>> v.shape, round(float(v @ v), 12)
    ((5,), 1.0)
    """
    P = check_int("P", P, 1)
    v = check_rng(rng).standard_normal(P)
    return v / np.linalg.norm(v)


def simulate_flow(X, y, *, activation, N, delta, t_end, w0=None, loss="square", depth=2, t_eval=None,
                  method="auto", rtol=None, atol=None, eta=None, escape_loss=None, stop_loss=None,
                  reduction="sum", logistic_scale=1.0, rng=None) -> FlowRun:
    """Integrate ``dw/dt = -grad L(w)`` from ``delta w0/|w0|`` up to ``t_end`` (docs/theory/gradient_flow.md §12).

    Losses are summed and parameters packed as in docs/conventions.md §9.

    Parameters
    ----------
    X : array (n, d)
        Data, one row per sample.
    y : array (n,)
        Targets.
    activation : str or Activation
        Homogeneous activation (identity, square, relu, relu^p, ...) or ``"quadratic"``.
    N : int
        Hidden width; ``depth`` = number of weight layers (2 = two-layer).
    delta : float
        Initial scale ``delta > 0``: ``w(0) = delta w0/|w0|``.
    t_end : float
        Horizon.
    w0 : array (P,), optional
        Initial direction; ``None`` draws a Gaussian one from ``rng``.
    loss, reduction, logistic_scale : as in :func:`~rmtfl.theory.make_problem`.
    t_eval : output times (default :func:`log_time_grid`).
    method : ``"auto"`` (DOP853 for L = 2 up to ``t_end = 1e3``, else LSODA; GD with ``eta = 1e-3`` for plain
        ReLU, whose discontinuous gradient field stalls adaptive solvers), ``"dop853"``, ``"lsoda"``
        (both adaptive) or ``"gd"`` (plain GD with step ``eta``).
    rtol, atol : tolerances of the adaptive integrators (defaults in the module docstring).
    escape_loss, stop_loss : loss levels for the escape event and a terminal event.
    rng : seed or Generator for ``w0=None``.

    Returns
    -------
    FlowRun

    Examples
    --------
    >>> run = simulate_flow(np.eye(2), [3.0, 4.0], activation="identity", N=1, delta=1e-3, t_end=10.0, rng=0)
    >>> run.method, run.degree, bool(run.loss[-1] < 1e-8)
    ('dop853', 2, True)
    """
    delta = check_positive("delta", delta)
    rng = check_rng(rng)
    pb = make_problem(X, y, activation=activation, N=N, loss=loss, depth=depth,
                      reduction=reduction, logistic_scale=logistic_scale)
    if w0 is None:
        w0 = random_direction(pb.P, rng=rng)
    return flow_from_problem(pb, delta=delta, w0=w0, t_end=t_end, t_eval=t_eval, method=method, rtol=rtol,
                             atol=atol, eta=eta, escape_loss=escape_loss, stop_loss=stop_loss)


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


#: Bounds that keep a flow run finite in time and in float range (the flows of
#: docs/theory/gradient_flow.md escape at ``t ~ log(1/delta)``).
DELTA_MAX = 1e3
T_END_MAX = 1e8

#: ``method="auto"`` integrates an ``L = 2`` flow with DOP853 up to this ``t_end``, and with LSODA beyond: once the flow
#: rests at a minimum an explicit method still needs O(t) steps (``t_end = 1e5`` took 50 s for a three-parameter net;
#: LSODA 0.05 s, the escape time the same to 1e-11; docs/theory/gradient_flow.md §12).
DOP853_T_END = 1e3
GD_STEPS_MAX = 10**8


def flow_from_problem(pb: FlowProblem, *, delta, w0, t_end, t_eval=None, method="auto", rtol=None,
                      atol=None, eta=None, escape_loss=None, stop_loss=None) -> FlowRun:
    """:func:`simulate_flow` on a built :class:`~rmtfl.theory.FlowProblem` (docs/theory/gradient_flow.md §12)."""
    delta = check_in_range("delta", delta, 0.0, DELTA_MAX, lo_open=True)
    check_choice("method", method, ("auto", "dop853", "lsoda", "gd"))
    t_end = check_in_range("t_end", t_end, 0.0, T_END_MAX, lo_open=True)
    if method == "auto":
        act = getattr(pb.arch, "act", None)
        if act is not None and act.name == "relu":
            method = "gd"  # discontinuous gradient field: adaptive solvers stall in sliding modes
        else:
            method = "dop853" if pb.degree == 2 and t_end <= DOP853_T_END else "lsoda"
    escape_loss = None if escape_loss is None else check_real("escape_loss", escape_loss)
    stop_loss = None if stop_loss is None else check_real("stop_loss", stop_loss)
    w0 = check_direction(w0, pb.P)
    t_eval = log_time_grid(t_end) if t_eval is None else np.sort(check_finite_array("t_eval", t_eval, ndim=1))
    if t_eval[0] < 0 or t_eval[-1] > t_end * (1 + 1e-12):
        raise ValueError(f"t_eval must lie in [0, t_end={t_end}]")
    L = pb.degree
    start = time.perf_counter()
    t_esc = t_stop = float("nan")
    if method in ("dop853", "lsoda"):
        rtol = (1e-11 if L == 2 else 1e-10) if rtol is None else check_in_range("rtol", rtol, 1e-14, 0.1)
        atol = 1e-13 * delta if atol is None else check_in_range("atol", atol, 1e-300, 1.0)
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
        eta = check_in_range("eta", eta if eta is not None else 1e-3, 0.0, 1.0, lo_open=True)
        if t_end / eta > GD_STEPS_MAX:
            raise ValueError(f"t_end/eta = {t_end / eta:.3g} GD steps is more than {GD_STEPS_MAX:.0e}; "
                             "lower t_end or raise eta")
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
    """Number of units with norm ``> tau`` (per row of ``norms``; docs/theory/gradient_flow.md §11).

    >>> active_count([[3.0, 1.0, 0.5]], 0.75).tolist()
    [2]
    """
    norms = _norms(norms)
    tau = check_nonnegative("tau", tau)
    return np.sum(norms > tau, axis=-1)


def _norms(norms):
    """``norms`` as a finite non-negative ``(T, N)`` array (one row per time)."""
    a = np.atleast_2d(check_array("norms", norms, ndim=(1, 2), min_size=1))
    if np.any(a < 0):
        raise ValueError("norms must be >= 0")
    return a


def kth_to_max_ratio(norms, k: int = 2) -> np.ndarray:
    """``nu_(k) / nu_(1)`` (k-th largest over largest), per row (docs/theory/gradient_flow.md §11).

    >>> kth_to_max_ratio([[4.0, 1.0, 2.0]], 2).tolist()
    [0.5]
    """
    s = -np.sort(-_norms(norms), axis=-1)
    k = check_int("k", k, 1, s.shape[-1])
    if np.any(s[:, 0] == 0):
        raise ValueError("norms: every row needs a nonzero largest norm")
    return s[:, k - 1] / s[:, 0]


def winner_share(norms) -> np.ndarray:
    """``nu_(1)^2 / sum_j nu_j^2`` per row (docs/theory/gradient_flow.md §11).

    >>> winner_share([[3.0, 4.0]]).tolist()
    [0.64]
    """
    n2 = _norms(norms) ** 2
    tot = n2.sum(axis=-1)
    if np.any(tot == 0) or not np.all(np.isfinite(tot)):
        raise ValueError("norms: every row needs a nonzero finite sum of squares")
    return n2.max(axis=-1) / tot


@dataclass(frozen=True)
class Plateau(Result):
    """A loss plateau: flow times ``t_start`` .. ``t_end`` and the median loss ``level`` on it.

    Unpacks as ``t_start, t_end, level = plateau``.
    """

    t_start: float
    t_end: float
    level: float

    def __iter__(self):
        return iter((self.t_start, self.t_end, self.level))


def find_plateaus(t, loss, *, tol: float = 1e-3, min_ratio: float = 2.0) -> list[Plateau]:
    """Loss plateaus of a trajectory (docs/theory/gradient_flow.md §11).

    Maximal runs of grid points whose loss stays within ``tol`` of the run's first
    value and last at least ``t_end/t_start >= min_ratio``, in time order, each a
    :class:`Plateau` with ``level`` the median loss on the run.

    >>> find_plateaus([1, 2, 4, 8, 16], [1.0, 0.5, 0.5, 0.5, 0.1])
    [Plateau(t_start=2.0, t_end=8.0, level=0.5)]
    """
    tol = check_positive("tol", tol)
    min_ratio = check_positive("min_ratio", min_ratio)
    t = check_array("t", t, ndim=1)
    loss = check_array("loss", loss, ndim=1)
    if loss.size != t.size:
        raise ValueError(f"t and loss must have the same length (one loss per time), got {t.size} and {loss.size}")
    out, i = [], 0
    while i < t.size:
        j = i
        while j + 1 < t.size and abs(loss[j + 1] - loss[i]) <= tol:
            j += 1
        if t[i] > 0 and t[j] / t[i] >= min_ratio:
            out.append(Plateau(float(t[i]), float(t[j]), float(np.median(loss[i:j + 1]))))
        i = j + 1
    return out


def path_distance(run: FlowRun, path_points, *, start: int = 0) -> np.ndarray:
    """``|w(t_k) - p_k|`` for the rows ``k >= start`` (the caller aligns the grids; docs/theory/gradient_flow.md §8)."""
    if not isinstance(run, FlowRun):
        raise TypeError(f"run must be a FlowRun (from simulate_flow), got {type(run).__name__}")
    start = check_int("start", start, 0, run.w.shape[0] - 1)
    P = check_array("path_points", path_points, ndim=2, min_size=1)
    if P.shape[1] != run.w.shape[1] or start + P.shape[0] > run.w.shape[0]:
        raise ValueError(f"path_points must have shape (k, {run.w.shape[1]}) with start + k <= "
                         f"{run.w.shape[0]}, got {P.shape} and start={start}")
    with np.errstate(over="ignore", invalid="ignore"):
        D = run.w[start:start + P.shape[0]] - P
        m = np.max(np.abs(D), axis=1)  # scaled norm: |D| up to the largest double without overflow
        out = m * np.linalg.norm(D / np.where(m > 0, m, 1.0)[:, None], axis=1)
    return check_no_overflow("path_points", out)


def is_zero_preserving(pb: FlowProblem, indices, *, steps: int = 3000, eta: float = 1e-3, rng=None) -> bool:
    """Bit-exact Euler test (docs/theory/gradient_flow.md §10): start from a random point with ``w[indices] = 0``
    and check that the coordinates are exactly 0 after ``steps`` GD steps.

    The start is ``0.5 sqrt(P)`` times a Gaussian unit direction drawn from ``rng``.

    >>> from rmtfl.theory import make_problem, zero_preserving
    >>> pb = make_problem(np.eye(2), [1.0, -1.0], activation="square", N=2)
    >>> all(is_zero_preserving(pb, s.indices, steps=50, rng=0) for s in zero_preserving(pb.arch))
    True
    """
    if not isinstance(pb, FlowProblem):
        raise TypeError(f"pb must be a FlowProblem (from rmtfl.theory.make_problem), got {type(pb).__name__}")
    steps = check_int("steps", steps, 1, 10**7)
    eta = check_in_range("eta", eta, 0.0, 1.0, lo_open=True)
    idx = check_array("indices", indices, ndim=1, min_size=1)
    if np.any(idx != np.round(idx)) or np.any(idx < 0) or np.any(idx >= pb.P):
        raise ValueError(f"indices must be integers in [0, {pb.P - 1}], got {indices!r}")
    idx = idx.astype(int)
    w = 0.5 * random_direction(pb.P, rng=rng) * np.sqrt(pb.P)
    w[idx] = 0.0
    g = pb.rhs()
    for _ in range(steps):
        w = w + eta * g(0.0, w)
        if not np.all(np.isfinite(w)):
            raise ValueError(f"eta={eta} too large: the Euler run diverged; lower eta")
    return bool(np.all(w[idx] == 0.0))
