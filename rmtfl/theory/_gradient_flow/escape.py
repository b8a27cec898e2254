"""Escape from the origin: NCF flow, blow-up time, growth amplitude (docs/theory/gradient_flow.md §7).

The NCF flow ``du/dt = grad N(u)`` governs the flow near the origin.

- ``L = 2``: ``|u(t; w0)| ~ gamma(w0) exp(2 N* t)``; for a quadratic-form NCF (linear
  nets, the quadratic model) ``gamma(w0) = |P_top w0|`` (projection of ``w0`` on the
  top eigenspace of ``grad^2 N``; ``= <u*, w0>`` when ``u*`` is isolated).  Escape time
  ``ln(1/(delta gamma)) / (2 N*)`` (up to an O(1) offset); slope ``1/(2N*)`` in ``ln(1/delta)``.
- ``L > 2``: finite-time blow-up ``T*(w0)``: integrate (DOP853, rtol 1e-13, atol 1e-16)
  until ``|u| = R = 1e6`` and add the analytic tail ``1/(L(L-2) N(u_hat) R^(L-2))``.
  The integration runs in the regularised time ``s`` with ``dt/ds = |u|^-(L-2)``
  (``t`` carried as a state), in which ``|u|`` grows only exponentially; in plain ``t``
  the step size underflows near blow-up for ``L >= 5`` (e.g. ``L = 7`` stalls at ``|u| ~ 260``);
  escape time ``T*(w0) / delta^(L-2)``.

``w0`` is normalised (``w(0) = delta w0/|w0|``); its packing is that of
docs/conventions.md §9.

Examples
--------
>>> import numpy as np
>>> X = np.eye(3); y = [1.0, -0.5, -0.3]
>>> u = np.zeros(16); u[0] = 3 ** -0.5; u[4] = (2 / 3) ** 0.5
>>> T = blowup_time(make_problem(X, y, activation="square", N=4), u)
>>> round(T.time * 3 * (2 / (3 * 3 ** 0.5)), 8)   # T*(u*) = 1/(L(L-2)N*)
1.0
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.integrate import solve_ivp

from rmtfl._results import Result
from rmtfl._validate import check_positive
from .problem import FlowProblem, check_direction, make_problem
from .networks import QuadraticModel

__all__ = ["escape_time", "escape_from_problem", "EscapePrediction", "BlowUp", "blowup_time",
           "growth_amplitude", "GrowthAmplitude", "ncf_is_quadratic"]


@dataclass(frozen=True)
class BlowUp(Result):
    """``T*(w0)`` of the NCF flow and the direction ``u_hat`` it blows up along
    (docs/theory/gradient_flow.md §7.2): ``time`` = ``T*``, ``direction`` = ``u_hat`` (packed),
    ``ncf_value`` = ``N(u_hat)``, ``t_R`` = time to reach ``|u| = R``."""

    time: float
    direction: np.ndarray
    ncf_value: float
    t_R: float
    R: float


@dataclass(frozen=True)
class GrowthAmplitude(Result):
    """``gamma(w0)``, the growth rate ``2 N*`` and the limiting direction (L = 2;
    docs/theory/gradient_flow.md §7.1)."""

    amplitude: float
    rate: float
    direction: np.ndarray


@dataclass(frozen=True)
class EscapePrediction(Result):
    """Predicted escape time of ``w(t; delta w0)`` (docs/theory/gradient_flow.md §7).

    ``time`` = ``ln(1/(delta gamma))/(2N*)`` (L = 2) or ``T*(w0)/delta^(L-2)`` (L > 2);
    ``ncf_value`` = ``N*`` of the KKT point selected by ``w0``; ``amplitude`` =
    ``gamma(w0)`` (L = 2, else nan); ``blowup_time`` = ``T*(w0)`` (L > 2, else nan);
    ``slope`` = ``d t_esc / d ln(1/delta)`` = ``1/(2N*)`` (L = 2, else nan);
    ``direction`` = that KKT point (packed, docs/conventions.md §9).
    """

    time: float
    delta: float
    degree: int
    ncf_value: float
    amplitude: float
    blowup_time: float
    slope: float
    direction: np.ndarray
    convention: str = ""


def ncf_is_quadratic(pb: FlowProblem) -> bool:
    """True when ``N`` is a quadratic form (``L = 2`` and smooth: linear nets, quadratic model;
    docs/theory/gradient_flow.md §7.1)."""
    if pb.degree != 2:
        return False
    if isinstance(pb.arch, QuadraticModel):
        return True
    return pb.arch.act.name in ("identity", "linear")


def growth_amplitude(pb: FlowProblem, w0) -> GrowthAmplitude:
    """``gamma(w0) = lim exp(-2N* t)|u(t; w0)|`` for ``L = 2`` (docs/theory/gradient_flow.md §7.1).

    Quadratic-form NCF: exact, by the eigen-decomposition of the constant
    ``grad^2 N``.  Otherwise (plain ReLU, outside the theory, approximate) the NCF
    flow is run with renormalised Euler steps ``h = 1e-3`` until
    ``exp(-rate t)|u|`` is stationary to ``1e-6`` (relative) or ``t = 20/N(u)``.

    >>> from rmtfl.theory import make_problem
    >>> pb = make_problem(np.eye(2), [3.0, 4.0], activation="identity", N=1)
    >>> g = growth_amplitude(pb, [1.0, 0.6, 0.8])
    >>> round(g.amplitude, 12), round(g.rate, 12)     # <u*, w0>, 2 N*
    (1.0, 5.0)
    """
    if pb.degree != 2:
        raise ValueError(f"growth_amplitude needs degree L = 2, got L = {pb.degree}")
    w0 = check_direction(w0, pb.P)
    if ncf_is_quadratic(pb):
        A = pb.ncf_hessian(np.zeros(pb.P))
        lam, V = np.linalg.eigh(A)
        top = lam[-1]
        if not top > 0:
            raise ValueError("the NCF has no positive direction (lambda_max <= 0): the flow collapses, no escape")
        Vt = V[:, lam >= top - 1e-9 * max(1.0, abs(top))]
        proj = Vt @ (Vt.T @ w0)
        g = float(np.linalg.norm(proj))
        if g < 1e-12:
            raise ValueError("w0 is orthogonal to the top eigenspace of the NCF: it is in no positive stable set")
        return GrowthAmplitude(g, float(top), proj / g)
    # plain ReLU (outside the theory): the NCF field is discontinuous and adaptive solvers
    # stall in sliding modes, so use renormalised explicit Euler steps (h = 1e-3, relu'(0) = 0)
    h = 1e-3
    u, logn, t, prev = w0.copy(), 0.0, 0.0, None
    for block in range(400):
        for _ in range(1000):
            u = u + h * pb.ncf_grad(u)
        t += 1000 * h
        nrm = float(np.linalg.norm(u))
        logn += math.log(nrm)
        u = u / nrm
        rate = math.log1p(h * 2 * pb.ncf(u)) / h  # Euler growth rate along a fixed direction
        if not rate > 0:
            break
        g = math.exp(logn - rate * t)
        if (prev is not None and abs(g - prev) <= 1e-6 * g) or t * rate >= 40.0:
            # sliding along a kink makes gamma drift slowly: stop at t = 20/N (approximate)
            return GrowthAmplitude(float(g), float(2 * pb.ncf(u)), u)
        prev = g
    raise ValueError("the NCF flow from w0 does not settle on a positive KKT direction (no escape)")


def blowup_time(pb: FlowProblem, w0, *, R: float = 1e6, rtol: float = 1e-13, atol: float = 1e-16) -> BlowUp:
    """``T*(w0)`` for ``L > 2`` with the analytic tail (docs/theory/gradient_flow.md §7.2); ``w0`` is normalised first.

    Integration in the regularised time of the module docstring up to ``|u| = R``, then the
    tail ``1/(L(L-2) N(u_hat) R^(L-2))``.  Raises ``ValueError`` if the flow from ``w0`` collapses.
    """
    L = pb.degree
    if not L > 2:
        raise ValueError(f"blowup_time needs degree L > 2, got L = {L}")
    w0 = check_direction(w0, pb.P)
    P = pb.P

    # regularised time s with dt/ds = |u|^-(L-2): |u| grows exponentially in s, t converges to T*
    def f(s, z):
        u = z[:P]
        k = float(u @ u) ** (-(L - 2) / 2)
        return np.r_[k * pb.ncf_grad(u), k]

    def hit(s, z):
        return float(z[:P] @ z[:P]) - R * R

    def dead(s, z):  # collapse towards 0: no blow-up
        return float(z[:P] @ z[:P]) - 1e-8

    hit.terminal, hit.direction = True, 1
    dead.terminal, dead.direction = True, -1
    g0 = max(float(np.linalg.norm(pb.ncf_grad(w0))), 1e-300)
    sol = solve_ivp(f, (0.0, 1e4 / g0 + 1e4), np.r_[w0, 0.0], method="DOP853", rtol=rtol, atol=atol,
                    events=[hit, dead])
    if sol.status != 1 or not sol.t_events[0].size:
        raise ValueError("the NCF flow from w0 does not blow up (it collapses or w0 is in no positive "
                         "KKT point's stable set); no escape time")
    z = sol.y_events[0][0]
    tR = float(z[P])
    uh = z[:P] / np.linalg.norm(z[:P])
    Nu = pb.ncf(uh)
    return BlowUp(tR + 1.0 / (L * (L - 2) * Nu * R ** (L - 2)), uh, Nu, tR, R)


def escape_time(X, y, *, activation, N, delta, w0, loss="square", depth=2, reduction="sum",
                logistic_scale=1.0) -> EscapePrediction:
    """Predicted escape time from ``w(0) = delta w0/|w0|`` (docs/theory/gradient_flow.md §7).

    ``L = 2``: ``ln(1/(delta gamma(w0)))/(2N*)`` (an O(1) offset is not predicted; the
    slope ``1/(2N*)`` in ``ln(1/delta)`` is).  ``L > 2``: ``T*(w0)/delta^(L-2)``.
    Losses are summed and ``w0`` is packed as in docs/conventions.md §9.

    Parameters
    ----------
    X : array (n, d)
        Data, one row per sample.
    y : array (n,)
        Targets.
    activation : str or Activation
        Homogeneous activation, or ``"quadratic"``.
    N : int
        Hidden width; ``depth`` = number of weight layers.
    delta : float
        Initial scale ``delta > 0``.
    w0 : array (P,)
        Initial direction (normalised here); it selects the KKT point the flow escapes along.
    loss, reduction, logistic_scale : as in :func:`~rmtfl.theory.make_problem`.

    Returns
    -------
    EscapePrediction

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[1.0, 0.0], [0.0, 1.0]])
    >>> e = escape_time(X, [3.0, 4.0], activation="identity", N=1, delta=1e-3, w0=[1.0, 0.6, 0.8])
    >>> round(e.slope, 12), round(e.amplitude, 12)
    (0.2, 1.0)
    """
    delta = check_positive("delta", delta)
    pb = make_problem(X, y, activation=activation, N=N, loss=loss, depth=depth,
                      reduction=reduction, logistic_scale=logistic_scale)
    return escape_from_problem(pb, delta=delta, w0=w0)


def escape_from_problem(pb: FlowProblem, *, delta: float, w0) -> EscapePrediction:
    """:func:`escape_time` on a built :class:`~rmtfl.theory.FlowProblem` (docs/theory/gradient_flow.md §7)."""
    delta = check_positive("delta", delta)
    w0 = check_direction(w0, pb.P)
    L = pb.degree
    if L == 2:
        g = growth_amplitude(pb, w0)
        Nst = g.rate / 2
        return EscapePrediction(math.log(1.0 / (delta * g.amplitude)) / g.rate, delta, 2, Nst, g.amplitude,
                                float("nan"), 1.0 / g.rate, g.direction,
                                "t_esc = ln(1/(delta*gamma))/(2N*) + O(1); w(0) = delta*w0/|w0|")
    b = blowup_time(pb, w0)
    return EscapePrediction(b.time / delta ** (L - 2), delta, L, b.ncf_value, float("nan"), b.time,
                            float("nan"), b.direction,
                            "t_esc = T*(w0)/delta^(L-2); T* with analytic tail at R=1e6")
