"""The limiting path ``p(t)`` and the first saddle ``lim p(t)`` (docs/theory/gradient_flow.md §8–§9).

Convention (rmtfl's, docs/theory/gradient_flow.md §8): ``p(t) = lim_{eps->0} w(t + tau_eps; eps u*)`` with
``tau_eps = ln(1/eps)/(2N*)`` (L = 2) or ``1/(L(L-2) N* eps^(L-2))`` (L > 2)
(``convention="blowup"``); ``convention="unit_norm"`` shifts by the time the NCF
flow from ``eps u*`` needs to reach norm 1, i.e. ``p_unit(t) = p(t - 1/(L(L-2)N*))``
(the two coincide for L = 2).  The path is built from ``eps = 1e-4`` for ``L <= 3``
(:func:`default_eps` for larger ``L``) (DOP853, rtol
``1e-12``, atol ``1e-13 eps`` (L > 2) / ``1e-16 eps`` (L = 2)); for
``t + tau_eps < 0`` the small-norm NCF asymptote along ``u*`` is used.  Paths from
different ``eps`` differ by ``O(eps^2)``; ``accuracy`` is the measured
``sup|p_eps - p_2eps| / 3`` (the ``eps``-path error if it is ``C eps^2``).

To compare with a flow from ``delta w0``: ``w(t + T_delta(w0); delta w0) ~ p(t)`` with
``T_delta = ln(1/(delta gamma))/(2N*)`` (L = 2) or ``T*(w0)/delta^(L-2)`` (L > 2)
(:func:`rmtfl.theory.escape_time` ``.time``), for ``u*`` the KKT point selected by ``w0``.

Examples
--------
>>> import numpy as np
>>> s = first_saddle(np.eye(3), [1.0, -0.5, -0.3], activation="square", N=2)
>>> round(s.loss, 10), round(float(s.point[0]), 6), round(float(s.point[2]), 6)
(0.17, 0.793701, 1.122462)
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy.integrate import solve_ivp

from rmtfl._results import Result
from rmtfl._validate import check_choice, check_finite_array, check_in_range, check_int
from .escape import blowup_time, growth_amplitude
from .kkt import kkt_from_problem, newton_polish
from .problem import RESTARTS_MAX, FlowProblem, check_direction, make_problem

__all__ = ["default_eps", "limiting_path", "path_from_problem", "LimitingPath", "first_saddle",
           "saddle_from_problem", "FirstSaddle", "SaddleSearchError", "path_shift", "selected_kkt_direction",
           "KKTDirection"]


class SaddleSearchError(RuntimeError):
    """The limiting path did not become stationary within the horizon."""


@dataclass(frozen=True)
class LimitingPath(Result):
    """``p(t)`` on a time grid (docs/theory/gradient_flow.md §8; see the module docstring for the convention).

    ``points`` has shape ``(len(t), P)`` (packed parameters, docs/conventions.md §9); ``loss`` and
    ``unit_norms`` are evaluated along it; ``u_star`` = the KKT direction it leaves along,
    ``ncf_value`` = ``N(u*)``; ``shift`` = ``tau_eps`` used; ``accuracy`` = estimated sup error
    (nan if not estimated).  ``to_dict()`` leaves out the arrays.
    """

    t: np.ndarray = field(repr=False)
    points: np.ndarray = field(repr=False)
    loss: np.ndarray = field(repr=False)
    unit_norms: np.ndarray = field(repr=False)
    u_star: np.ndarray = field(repr=False)
    ncf_value: float
    degree: int
    eps: float
    shift: float
    convention: str
    accuracy: float


@dataclass(frozen=True)
class FirstSaddle(Result):
    """``p* = lim p(t)`` (docs/theory/gradient_flow.md §9): ``loss``, ``point`` (packed,
    docs/conventions.md §9), ``residual`` = ``|grad L(p*)|``.

    ``at_infinity``: ``|p(t)|`` diverges while the loss levels off (logistic: detected as
    ``|grad L| -> 0`` with the norm still growing between doubling windows); then
    ``point`` is the last point computed, ``loss`` the limiting value and ``time`` the
    (path-convention) time it was reached.  ``active_units`` counts units above 1e-8
    (relative); ``ncf_value`` = ``N*`` of the KKT direction used; ``measured_loss`` = the loss at ``point``.
    """

    loss: float
    point: np.ndarray
    residual: float
    at_infinity: bool
    time: float
    active_units: int
    ncf_value: float
    degree: int
    measured_loss: float
    note: str = ""


@dataclass(frozen=True)
class KKTDirection(Result):
    """The KKT direction a path starts along: ``u`` (unit, packed) and ``ncf_value`` = ``N(u)``
    (docs/theory/gradient_flow.md §3)."""

    u: np.ndarray
    ncf_value: float

    def __iter__(self):  # ``u, Nst = selected_kkt_direction(...)``
        return iter((self.u, self.ncf_value))


def _clean(pb: FlowProblem, u):
    """Set inactive units (norm < 1e-8 of the largest) exactly to zero; renormalise."""
    u = np.array(u, dtype=float)
    nu = pb.arch.unit_norms(u)
    for j, sl in enumerate(pb.arch.unit_slices()):
        if nu[j] < 1e-8 * nu.max():
            u[sl] = 0.0
    u[np.abs(u) < 1e-15] = 0.0
    return u / np.linalg.norm(u)


def selected_kkt_direction(pb: FlowProblem, w0=None, *, restarts=20) -> KKTDirection:
    """The KKT point selected by ``w0`` (docs/theory/gradient_flow.md §4, stable sets), or the
    maximal one of :func:`~rmtfl.theory.ncf_kkt` when ``w0`` is None (deterministic either way).

    Inactive units (norm below ``1e-8`` of the largest) are set exactly to zero.
    """
    if w0 is None:
        k = kkt_from_problem(pb, restarts=check_int("restarts", restarts, 1, RESTARTS_MAX))
        if not k.value > 0:
            raise ValueError("the maximal NCF value is not positive: the flow collapses to 0, no escape")
        u = k.point
    else:
        w0 = check_direction(w0, pb.P)
        u = growth_amplitude(pb, w0).direction if pb.degree == 2 else blowup_time(pb, w0).direction
        u = newton_polish(pb, _clean(pb, u))
    u = _clean(pb, u)
    return KKTDirection(u, pb.ncf(u))


def path_shift(L: int, ncf_value: float, eps: float) -> float:
    """``tau_eps``: ``ln(1/eps)/(2N*)`` (L = 2) or ``1/(L(L-2) N* eps^(L-2))`` (L > 2); docs/theory/gradient_flow.md §8.

    >>> round(path_shift(3, 0.5, 1e-2), 9)
    66.666666667
    """
    if L == 2:
        return math.log(1.0 / eps) / (2 * ncf_value)
    return 1.0 / (L * (L - 2) * ncf_value * eps ** (L - 2))


def _asymptote(L, Nst, u, t):
    if L == 2:
        return np.exp(2 * Nst * t)[:, None] * u[None, :]
    return ((L * (L - 2) * Nst * (-t)) ** (-1.0 / (L - 2)))[:, None] * u[None, :]


def _path_points(pb, u, Nst, eps, t, rtol, atol):
    L = pb.degree
    tau = path_shift(L, Nst, eps)
    pts = np.empty((t.size, pb.P))
    inside = t + tau >= 0
    if np.any(~inside):
        pts[~inside] = _asymptote(L, Nst, u, t[~inside])
    if np.any(inside):
        idx = np.flatnonzero(inside)
        # the times in any order, repeats included (times closer than tau's spacing coincide once shifted by it);
        # the solver wants them strictly increasing
        te, back = np.unique(t[idx] + tau, return_inverse=True)
        if te[-1] > 0.0:
            sol = solve_ivp(pb.rhs(), (0.0, float(te[-1])), eps * u, method="DOP853", t_eval=te,
                            rtol=rtol, atol=atol)
            if not sol.success:
                raise SaddleSearchError(f"integration of the limiting path failed: {sol.message}")
            pts[idx] = sol.y.T[back.ravel()]
        else:                                               # every time at the start itself
            pts[idx] = eps * u
    return pts, tau


#: The largest time of a limiting path, in units of ``1 / (L N*)`` (the default path ends at 6): its cost grows linearly
#: with the time (t = 1e4, that is 5e4 / (L N*), took 13 s for the three-parameter example below).
T_MAX = 1e3


def limiting_path(X, y, *, activation, N, loss="square", t=None, depth=2, eps=None,
                  convention="blowup", w0=None, restarts=20, estimate_error=True, reduction="sum",
                  logistic_scale=1.0) -> LimitingPath:
    """``p(t)`` built from ``eps u*`` with the explicit shift ``tau_eps`` (docs/theory/gradient_flow.md §8;
    module docstring).

    Deterministic: ``u*`` is the KKT point selected by ``w0`` (the NCF flow from ``w0``), or,
    when ``w0`` is None, the maximal KKT point of :func:`~rmtfl.theory.ncf_kkt` (closed form or
    the search from its fixed starts).  Losses summed; parameters packed as in docs/conventions.md §9.

    Parameters
    ----------
    X, y : data (one row per sample) and targets.
    activation, N, depth, loss, reduction, logistic_scale : the network and loss, as in
        :func:`~rmtfl.theory.make_problem`.
    t : array of times (path convention; in any order, at least one, at most ``1000 / (L N*)``); default
        ``linspace(-3, 6, 91)/(L N*)``.
    eps : start scale (default :func:`default_eps`).
    convention : ``"blowup"`` (default) or ``"unit_norm"`` (L > 2 only differs).
    w0 : if given, ``u*`` is the KKT point selected by ``w0`` (else the maximal one).
    restarts : search starts for the maximal KKT point (used only when ``w0`` is None).
    estimate_error : also build the path from ``2 eps`` and report ``accuracy``.

    Returns
    -------
    LimitingPath

    Examples
    --------
    >>> import numpy as np
    >>> p = limiting_path(np.eye(2), [3.0, 4.0], activation="identity", N=1, t=[0.0])
    >>> round(float(np.linalg.norm(p.points[0])), 6)   # p(0) ~ u* when exp(2N*t) << 1 is not yet true
    1.0
    """
    check_choice("convention", convention, ("blowup", "unit_norm"))
    pb = make_problem(X, y, activation=activation, N=N, loss=loss, depth=depth,
                      reduction=reduction, logistic_scale=logistic_scale)
    return path_from_problem(pb, t=t, eps=eps, convention=convention, w0=w0, restarts=restarts,
                             estimate_error=estimate_error)


def default_eps(L: int, ncf_value: float) -> float:
    """``1e-4`` for ``L <= 3``; for ``L > 3`` the ``eps`` with ``tau_eps = 1e6`` (docs/theory/gradient_flow.md §8).

    A relative error ``eta`` made at norm ``r`` shifts the blow-up by ``~eta tau``, so the
    horizon ``tau_eps`` must stay moderate (rtol 1e-12 -> time error ~1e-6), while the path
    error is ``O(eps^2)`` for every ``L``; e.g. ``L = 7``, ``N* = 0.0745`` gives ``eps = 0.052``.

    >>> round(default_eps(7, 0.0745), 3)
    0.052
    """
    if L <= 3:
        return 1e-4
    return float((1.0 / (L * (L - 2) * ncf_value * 1e6)) ** (1.0 / (L - 2)))


def _start(pb: FlowProblem, w0, restarts, u_star, eps):
    """``(L, u*, N*, eps)``: the KKT direction selected by ``w0`` (or ``u_star``) and the path's ``eps``."""
    _require_lipschitz(pb)
    L = pb.degree
    if u_star is None:
        u, Nst = selected_kkt_direction(pb, w0, restarts=restarts)
    else:
        u = _clean(pb, u_star)
        Nst = pb.ncf(u)
    eps = default_eps(L, Nst) if eps is None else check_in_range("eps", eps, 0.0, 0.5, lo_open=True)
    return L, u, Nst, eps


def path_from_problem(pb: FlowProblem, *, t=None, eps=None, convention="blowup", w0=None, restarts=20,
                      estimate_error=True, u_star=None) -> LimitingPath:
    """:func:`limiting_path` on a built :class:`~rmtfl.theory.FlowProblem` (``u_star`` overrides the KKT point;
    docs/theory/gradient_flow.md §8)."""
    check_choice("convention", convention, ("blowup", "unit_norm"))
    if t is not None:
        t = check_finite_array("t", t, ndim=1)
        if t.size == 0:
            raise ValueError("t must hold at least one time, got an empty array")
    L, u, Nst, eps = _start(pb, w0, restarts, u_star, eps)
    if t is None:
        t = np.linspace(-3.0, 6.0, 91) / (L * Nst)
    elif float(t.max()) * L * Nst > T_MAX:
        raise ValueError(f"t must be at most {T_MAX:g} / (L N*) = {T_MAX / (L * Nst):.6g} here (the path is integrated "
                         f"up to its largest time, in steps of the flow's own scale), got {float(t.max()):.6g}")
    offset = 1.0 / (L * (L - 2) * Nst) if (convention == "unit_norm" and L > 2) else 0.0
    tt = t - offset
    rtol, atol = 1e-12, (1e-16 if L == 2 else 1e-13) * eps
    pts, tau = _path_points(pb, u, Nst, eps, tt, rtol, atol)
    acc = float("nan")
    if estimate_error:
        pts2, _ = _path_points(pb, u, Nst, 2 * eps, tt, rtol, 2 * atol)
        acc = float(np.max(np.linalg.norm(pts - pts2, axis=1))) / 3.0
    losses = np.array([pb.loss(w) for w in pts])
    norms = np.array([pb.arch.unit_norms(w) for w in pts])
    return LimitingPath(t, pts, losses, norms, u, Nst, L, eps, tau + offset, convention, acc)


def first_saddle(X, y, *, activation, N, loss="square", depth=2, w0=None, restarts=20, eps=None,
                 gtol=1e-10, reduction="sum", logistic_scale=1.0) -> FirstSaddle:
    """``p* = lim_{t->inf} p(t)``, the first stationary point after the origin (docs/theory/gradient_flow.md §9).

    The path from ``eps u*`` is integrated in doubling windows until
    ``|grad L| < gtol * max(1, |grad N(u*)|)`` and then polished by Newton steps on
    ``grad L = 0`` within the support of ``p``.  For the logistic loss a path whose
    gradient vanishes while its norm keeps growing is reported ``at_infinity`` with
    ``loss = sum_{i: H_i = 0} l(0, y_i)`` (the other samples fitted with growing margin).
    Losses summed, parameters packed as in docs/conventions.md §9.  Deterministic: ``u*`` is
    the KKT point selected by ``w0``, or the maximal one (:func:`~rmtfl.theory.ncf_kkt`) when
    ``w0`` is None.

    Parameters
    ----------
    X, y : data (one row per sample) and targets.
    activation, N, depth, loss, reduction, logistic_scale : the network and loss, as in
        :func:`~rmtfl.theory.make_problem`.
    w0 : initial direction selecting the KKT point (default: the maximal KKT point).
    restarts : search starts for the maximal KKT point (used only when ``w0`` is None).
    eps : start scale of the path (default :func:`default_eps`).
    gtol : stationarity tolerance, relative to ``max(1, |grad N(u*)|)``.

    Returns
    -------
    FirstSaddle

    Raises
    ------
    SaddleSearchError
        If the path is neither stationary nor diverging within ``2^20`` time units.

    Examples
    --------
    >>> s = first_saddle([[1.0, 0.0], [0.0, 1.0]], [3.0, 4.0], activation="identity", N=1)
    >>> round(s.loss, 10), s.at_infinity            # the least-squares fit: zero loss
    (0.0, False)
    """
    gtol = check_in_range("gtol", gtol, GTOL_MIN, 1.0)
    pb = make_problem(X, y, activation=activation, N=N, loss=loss, depth=depth,
                      reduction=reduction, logistic_scale=logistic_scale)
    return saddle_from_problem(pb, w0=w0, restarts=restarts, eps=eps, gtol=gtol)


#: Smallest gradient tolerance accepted: the Newton polish reaches ~1e-14 relative; a zero,
#: negative or NaN ``gtol`` would never be met and the search would run on.
GTOL_MIN = 1e-15


def saddle_from_problem(pb: FlowProblem, *, w0=None, restarts=20, eps=None, gtol=1e-10, u_star=None) -> FirstSaddle:
    """:func:`first_saddle` on a built :class:`~rmtfl.theory.FlowProblem` (docs/theory/gradient_flow.md §9)."""
    gtol = check_in_range("gtol", gtol, GTOL_MIN, 1.0)
    L, u, Nst, eps = _start(pb, w0, restarts, u_star, eps)
    tau = path_shift(L, Nst, eps)
    f = pb.rhs()
    scale = max(1.0, float(np.linalg.norm(pb.ncf_grad(u))))
    rtol, atol = 1e-12, (1e-16 if L == 2 else 1e-13) * eps
    sol = solve_ivp(f, (0.0, tau), eps * u, method="DOP853", rtol=rtol, atol=atol)
    w, t = sol.y[:, -1], tau
    window = 10.0 / (L * Nst)
    prev_loss, prev_norm = pb.loss(w), float(np.linalg.norm(w))
    while window < 2.0 ** 20:
        sol = solve_ivp(f, (t, t + window), w, method="DOP853", rtol=rtol, atol=atol * 1e3)
        w, t = sol.y[:, -1], sol.t[-1]
        g = float(np.linalg.norm(pb.grad(w)))
        lo, nrm = pb.loss(w), float(np.linalg.norm(w))
        settled = g < 1e-6 * scale and abs(prev_loss - lo) < 1e-9 * max(1.0, lo)
        if settled and pb.loss_name == "logistic" and nrm > prev_norm * (1 + 1e-4):
            out = pb.arch.forward(pb.X, w)
            zero = np.abs(out) <= 1e-12 * max(1.0, np.abs(out).max())
            fitted = (out * pb.y > 0) & ~zero
            lim = float(pb.scale * pb.s_log * math.log(2.0) * np.sum(zero)) if np.all(zero | fitted) else lo
            return FirstSaddle(lim, w, g, True, t - tau, _active(pb, w), Nst, L, lo,
                               "saddle at infinity: |p(t)| keeps growing while grad L -> 0; loss = "
                               "sum of l(0, y_i) over the samples whose output is exactly 0"
                               if np.all(zero | fitted) else "saddle at infinity: loss = last value")
        if settled:
            w = _polish_stationary(pb, w)
            res = float(np.linalg.norm(pb.grad(w)))
            if res < gtol * scale:
                return FirstSaddle(pb.loss(w), w, res, False, t - tau, _active(pb, w), Nst, L, pb.loss(w),
                                   "finite stationary point (Newton-polished)")
        prev_loss, prev_norm = lo, nrm
        window *= 2
    raise SaddleSearchError(f"the limiting path is not stationary after t = {t:.3g} (|grad L| = {g:.3g})")


def _require_lipschitz(pb):
    act = getattr(pb.arch, "act", None)
    if act is not None and act.name == "relu":
        raise ValueError("activation 'relu' is outside the theory (gradient not locally Lipschitz): p(t) and "
                         "the first saddle are not defined here; simulate with rmtfl.numerics.simulate_flow "
                         "(plain GD) instead, or use relu^p with p >= 2")


def _active(pb, w):
    nu = pb.arch.unit_norms(w)
    return int(np.sum(nu > 1e-8 * max(1.0, nu.max())))


def _polish_stationary(pb: FlowProblem, w, iters=8):
    """Newton on ``grad L = 0`` restricted to the non-zero coordinates (FD Hessian, lstsq)."""
    S = np.flatnonzero(w != 0.0)
    for _ in range(iters):
        g = pb.grad(w)
        if np.linalg.norm(g) < 1e-15:
            break
        eps = 1e-6
        Hm = np.empty((S.size, S.size))
        for c, k in enumerate(S):
            e = np.zeros(pb.P)
            e[k] = eps
            Hm[:, c] = (pb.grad(w + e)[S] - pb.grad(w - e)[S]) / (2 * eps)
        step = np.linalg.lstsq(0.5 * (Hm + Hm.T), -g[S], rcond=1e-8)[0]  # drop flat (symmetry) directions
        wn = w.copy()
        wn[S] += step
        if np.linalg.norm(pb.grad(wn)) >= np.linalg.norm(g):
            break
        w = wn
    return w
