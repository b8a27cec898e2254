"""The deterministic equivalent of a Gram matrix with a separable variance profile, and its right edge
(docs/theory/two_step.md §5.4–§5.5).

A random ``N x d`` matrix with independent centred entries of variance ``S_jl / d`` has, for ``N, d`` large, the
spectrum of ``H H^T`` given by the Hachem–Loubaton–Najim (2007) system at ``x > 0`` outside the support,

    t_j = -1 / (x (1 + sum_l S_jl tt_l)),   tt_l = -1 / (x (1 + sum_j S_jl t_j)),

with ``m(x) = (1/N) sum_j t_j`` its Stieltjes transform.  For a separable profile
``S_jl = sum_k f_k(row j) h_k(col l)`` (``f_0 = h_0 = 1``) it reduces to the ``2K`` unknowns
``A_k = psi <f_k t>`` and ``B_k = <h_k tt>`` (:class:`SeparableProfile`).  The bulks of ``W_2`` in
:mod:`~rmtfl.theory._two_step.bulk_edge` and :mod:`~rmtfl.theory._two_step.widened_bulk` are such profiles.

The right edge of the spectrum is the fold of the real branch of the reduced system: followed from large ``x``
(where ``t = tt = -1/x``) by continuation in ``log|m|``, ``x(m)`` falls to its minimum at the edge and turns back
(:func:`fold_edge`).

Examples
--------
A constant profile is the Marchenko–Pastur law, edge ``(1 + sqrt(psi))^2``:

>>> import numpy as np
>>> red = SeparableProfile(np.ones((200, 1)), np.ones((400, 1)), psi=0.5)
>>> round(fold_edge(red, 100.0), 6), round((1 + 0.5 ** 0.5) ** 2, 6)
(2.914214, 2.914214)
"""
from __future__ import annotations

import math

import numpy as np
from scipy import optimize

__all__ = ["SeparableProfile", "fold_edge", "newton", "solve_near", "FOLD_MAX_STEP", "FOLD_MAX_SOLVES",
           "NEWTON_MAX_ITER"]

#: Newton iterations of :func:`newton` before it hands over to the hybrid method.
NEWTON_MAX_ITER = 16


def _amax(a) -> float:
    """``max |a_i|`` of a short vector, as ``float(np.abs(a).max())`` (NaN or inf where that gives them) in a third of
    its time: the reductions of :func:`newton` cost as much as its residuals on the profiles' few unknowns."""
    values = a.tolist()
    if math.isfinite(sum(values)):      # no NaN nor inf: the Python maximum is exact
        return max(map(abs, values))
    return float(np.abs(a).max())


def newton(fun, jac, guess, *, xtol: float):
    """Newton's method from a nearby ``guess`` (a continuation step): the root, or ``None`` when the residual
    stops falling or ``NEWTON_MAX_ITER`` steps do not bring the step below ``xtol`` relative to the root.

    The Jacobian ``jac(v)`` is inverted at the guess and again only where a step does not cut the residual
    ``fun(v)`` twentyfold (near the root each step then costs one residual and no Jacobian).  From the guesses of
    the finite-``N`` continuations it finds the roots ``scipy.optimize.root(method="hybr")`` finds (the two-step
    predictions agree to 3e-11 at 582 points of the acceptance grids).
    """
    v = np.array(guess, dtype=float)
    r = fun(v)
    res = _amax(r)
    Jinv = None
    for _ in range(NEWTON_MAX_ITER):
        if not math.isfinite(res):
            return None
        if Jinv is None:
            try:
                Jinv = np.linalg.inv(jac(v))
            except np.linalg.LinAlgError:
                return None
        dv = Jinv @ r                   # the step is -dv
        v = v - dv
        small = _amax(dv) <= xtol * (1.0 + _amax(v))
        r = fun(v)
        res_new = _amax(r)
        if small:
            return v if math.isfinite(res_new) else None
        if not res_new < max(res, 1e-300) * 1.5:      # diverging: the fallback takes over
            return None
        if res_new > 0.05 * res:
            Jinv = None
        res = res_new
    return None


def solve_near(fun, jac, guess, *, xtol: float, accept):
    """The root of ``fun`` near ``guess``: :func:`newton`, and where it fails or its root is not ``accept``-ed,
    ``scipy.optimize.root(method="hybr")`` (its trust region reaches roots Newton's method misses from a far guess
    or near a fold); ``None`` where neither gives an accepted root."""
    v = newton(fun, jac, guess, xtol=xtol)
    if v is not None and accept(v):
        return v
    v = optimize.root(fun, guess, jac=jac, method="hybr", options={"xtol": xtol}).x
    return v if accept(v) else None


class SeparableProfile:
    """Reduced Hachem–Loubaton–Najim system of a separable variance profile (module docstring).

    ``S_jl = sum_k f_k(row j) h_k(col l) / d`` with ``f_0 = h_0 = 1``: ``rowf`` is ``(N, K)``
    (``f_k`` at the row nodes), ``colh`` is ``(d, K)``.  Unknowns ``A_k = psi <f_k t>``,
    ``B_k = <h_k tt>`` and ``x``; ``A_0 = psi m`` is the continuation parameter.  Optional
    ``row_weights``/``col_weights`` replace the uniform means (nodes of a quadrature); kept as attributes.
    """

    def __init__(self, rowf, colh, psi, row_weights=None, col_weights=None):
        self.psi = psi
        self.K = rowf.shape[1]
        self.rowf, self.colh = rowf, colh
        wa = np.full(len(rowf), 1.0 / len(rowf)) if row_weights is None else np.asarray(row_weights, float)
        wl = np.full(len(colh), 1.0 / len(colh)) if col_weights is None else np.asarray(col_weights, float)
        self.row_weights, self.col_weights = wa, wl
        self.Pa = rowf * wa[:, None]
        self.Pl = colh * wl[:, None]
        # the system in the stacked unknowns v = (A, B): the row then the column denominators are D = 1 + F v, and
        # the equations v + P / (x D) (:meth:`stacked_equations`).  The arrays are small (quantile nodes), so a
        # solve's cost is its count of numpy calls: one product each way instead of one per half
        n, K = len(rowf), self.K
        self._F = np.zeros((n + len(colh), 2 * K))
        self._F[:n, K:], self._F[n:, :K] = rowf, colh
        self._P = np.zeros((2 * K, n + len(colh)))
        self._P[:K, :n], self._P[K:, n:] = psi * self.Pa.T, self.Pl.T
        self._eye = np.eye(2 * K)

    def at_nodes(self, rows: int, cols: int):
        """``(F, H)``: the row and column functions with each node repeated by its weight times ``rows`` or
        ``cols`` (rounded), the profile of a matrix of that size whose rows and columns sit at the nodes."""
        return (np.repeat(self.rowf, np.round(self.row_weights * rows).astype(int), axis=0),
                np.repeat(self.colh, np.round(self.col_weights * cols).astype(int), axis=0))

    def parts(self, A, B, x):
        Dt = 1.0 + self.rowf @ B
        Dtt = 1.0 + self.colh @ A
        return Dt, Dtt, -1.0 / (x * Dt), -1.0 / (x * Dtt)

    def equations(self, A, B, x):
        """The reduced equations ``(A - psi Pa^T t, B - Pl^T tt)`` at ``(A, B, x)`` (the arithmetic of
        :meth:`parts`); the solvers take :meth:`stacked_equations`, the same equations in half the numpy calls (the
        kernels of :class:`~rmtfl.theory._two_step.widened_bulk.WidenedBulk` are their roots to ``xtol = 1e-12``)."""
        K = self.K
        out = np.empty(2 * K)
        out[:K] = A - self.psi * (self.Pa.T @ (-1.0 / (x * (1.0 + self.rowf @ B))))
        out[K:] = B - self.Pl.T @ (-1.0 / (x * (1.0 + self.colh @ A)))
        return out

    def stacked_equations(self, v, x):
        """:meth:`equations` at the stacked unknowns ``v = (A, B)``, in half the numpy calls (equal to rounding:
        ``-t = 1 / (x D)``, so ``A - psi Pa^T t`` is ``A + psi Pa^T (1 / (x D))``)."""
        return v + self._P @ (1.0 / (x * (1.0 + self._F @ v)))

    def derivatives(self, A, B, x):
        """Derivatives of :meth:`equations` in ``(A, B)`` (a ``2K x 2K`` matrix) and in ``x``:
        ``dt_j/dB_k = x t_j^2 f_jk``, ``dtt_l/dA_k = x tt_l^2 h_lk``, ``dt/dx = -t/x``, ``dtt/dx = -tt/x``."""
        K = self.K
        _, _, t, tt = self.parts(A, B, x)
        J = np.eye(2 * K)
        J[:K, K:] = -self.psi * (self.Pa.T @ ((x * t * t)[:, None] * self.rowf))
        J[K:, :K] = -(self.Pl.T @ ((x * tt * tt)[:, None] * self.colh))
        return J, np.concatenate([self.psi * (self.Pa.T @ t), self.Pl.T @ tt]) / x

    def stacked_derivatives(self, v, x, slope: bool = True):
        """:meth:`derivatives` at the stacked unknowns ``v = (A, B)`` (equal to rounding: with ``s = -t`` the
        off-diagonal blocks are those of ``P diag(x s^2) F``, whose diagonal blocks are exact zeros); the matrix
        alone where ``slope`` is false."""
        s = 1.0 / (x * (1.0 + self._F @ v))
        J = self._eye - self._P @ ((x * s * s)[:, None] * self._F)
        return (J, -(self._P @ s) / x) if slope else J

    def residual(self, v, A0):
        return self.stacked_equations(np.concatenate([[A0], v[:-1]]), v[-1])

    def _jacobians(self, v, A0):
        """Derivatives of :meth:`residual` in ``v = (A_1.., B_0.., x)`` and in ``A_0``."""
        J, dx = self.stacked_derivatives(np.concatenate([[A0], v[:-1]]), v[-1])
        Jv = np.empty_like(J)
        Jv[:, :-1], Jv[:, -1] = J[:, 1:], dx
        return Jv, J[:, 0]

    def jacobian(self, v, A0):
        """Derivative of :meth:`residual` in ``v = (A_1.., B_0.., x)``."""
        return self._jacobians(v, A0)[0]

    def tangent(self, v, A0):
        """``dv/dA_0`` along the branch at a root ``v`` (the implicit function theorem); ``None`` where the
        Jacobian is singular."""
        Jv, dA0 = self._jacobians(v, A0)
        try:
            return -np.linalg.solve(Jv, dA0)
        except np.linalg.LinAlgError:
            return None

    def solve(self, m, guess):
        """Solve at ``m = <t>`` for ``(A_1.., B_0.., x)``; ``None`` if off the physical branch.

        Newton's method from ``guess``, and where it fails or lands off the physical branch, the hybrid method
        (near the fold, or from the far start, Newton's method can miss a root that exists)."""
        A0 = self.psi * m
        return solve_near(lambda u: self.residual(u, A0), lambda u: self.jacobian(u, A0), guess, xtol=1e-13,
                          accept=lambda u: self._physical(u, A0))

    def _physical(self, v, A0):
        """Whether ``v`` solves the system at ``A0`` with positive denominators and ``x`` (the physical branch)."""
        if not np.all(np.isfinite(v)):
            return False
        w, x = np.concatenate([[A0], v[:-1]]), v[-1]
        D = 1.0 + self._F @ w           # the row then the column denominators
        if np.abs(w + self._P @ (1.0 / (x * D))).max() > 1e-10 * (1 + abs(x)):
            return False
        return bool(D.min() > 0 and x > 0)

    def start(self, x_start):
        """The large-``x`` guess ``t = tt = -1/x``."""
        return np.concatenate([-self.psi * self.Pa.sum(0)[1:] / x_start, -self.Pl.sum(0) / x_start, [x_start]])


#: Solves of :func:`fold_edge` before it gives up (a typical profile needs about 20).
FOLD_MAX_SOLVES = 400

#: The largest continuation step of :func:`fold_edge` in ``log|m|``.  Longer steps (up to 1) save a third of the
#: solves but can cross the end of the branch and land on another one: on 1212 profiles of the acceptance grid and of
#: phase maps, steps up to 1 put the fold up to 12 % too high at 4 of them (the fold of another branch).
FOLD_MAX_STEP = 0.2


def _start_point(red: SeparableProfile, x_start: float):
    """``(lm, v, dv/dlog|m|)`` of :func:`_branch_point` at ``x = x_start`` (from the large-``x`` guess), or ``None``."""
    lm = -math.log(x_start)
    A0 = -red.psi * math.exp(lm)
    v = red.solve(A0 / red.psi, red.start(x_start))
    tangent = None if v is None else red.tangent(v, A0)
    return None if tangent is None else (lm, v, tangent * A0)


def _branch_point(red: SeparableProfile, lm: float, start):
    """``(lm, v, dv/dlog|m|)`` on the real branch at ``m = -exp(lm)``, continued from the branch point ``start`` of
    the same form by Newton's method from the tangent predictor; ``None`` where Newton's method fails, the root is
    off the physical branch, or its correction exceeds the predictor's step (a jump to another branch)."""
    A0 = -red.psi * math.exp(lm)
    step = start[1] + (lm - start[0]) * start[2]
    v = newton(lambda u: red.residual(u, A0), lambda u: red.jacobian(u, A0), step, xtol=1e-13)
    if v is None or not red._physical(v, A0):
        return None
    if np.abs(v - step).max() > abs(lm - start[0]) * np.abs(start[2]).max() + 1e-12 * np.abs(v).max():
        return None
    tangent = red.tangent(v, A0)
    return None if tangent is None else (lm, v, tangent * A0)


def fold_edge(red: SeparableProfile, x_start: float, path: list | None = None) -> float:
    """Smallest ``x`` on the real branch continued from ``x_start`` (the right edge of the spectrum of ``H H^T``).

    The branch is followed in ``log|m|`` (``m = A_0 / psi``) with the tangent from the implicit function theorem as
    predictor, in steps that grow to :data:`FOLD_MAX_STEP` while Newton's method holds the branch; where
    ``dx/dlog|m|`` changes sign, the fold is the root of that derivative, by regula falsi (Illinois) between the
    last points on either side.  Where the branch ends before ``x`` turns (a thin tail of extreme quantile nodes),
    its last point is the edge.

    ``path``: a list that receives ``(x, (A, B))`` at each point solved on the physical branch (above the fold), in
    the order solved: the resolvent kernels there, for :class:`~rmtfl.theory._two_step.widened_bulk.WidenedBulk`.
    """
    lo, hi = _start_point(red, x_start), None
    if lo is None:
        raise RuntimeError("finite-N bulk: no real solution of the profile's equations at the starting point")
    h, solves = 0.1, 1

    def keep(p):
        if path is not None:
            path.append((float(p[1][-1]), np.concatenate([[-red.psi * math.exp(p[0])], p[1][:-1]])))
    keep(lo)
    while hi is None:
        if solves >= FOLD_MAX_SOLVES:
            raise RuntimeError(f"finite-N bulk: no fold of the profile within {FOLD_MAX_SOLVES} solves")
        if h < 1e-9:                          # the branch ends with x still falling
            return float(lo[1][-1])
        p = _branch_point(red, lo[0] + h, lo)
        solves += 1
        if p is None:
            h /= 4
        elif p[2][-1] >= 0:                   # past the fold
            hi = p
        else:
            lo, h = p, min(1.5 * h, FOLD_MAX_STEP)
            keep(lo)
    best = min(lo[1][-1], hi[1][-1])
    gl, gh, kept = lo[2][-1], hi[2][-1], 0
    while hi[0] - lo[0] > 1e-9 and solves < FOLD_MAX_SOLVES:
        w = hi[0] - lo[0]
        lm = lo[0] + w * min(max(-gl / (gh - gl), 0.02), 0.98)
        p = (_branch_point(red, lm, lo if lm - lo[0] < hi[0] - lm else hi) or _branch_point(red, lm, lo)
             or _branch_point(red, lo[0] + (lm - lo[0]) / 4, lo))
        solves += 1
        if p is None:
            break
        best = min(best, p[1][-1])
        g = p[2][-1]
        if abs(g) * w < 1e-13 * p[1][-1]:     # x(m) is flat there to 1e-13 over the whole bracket
            break
        if g < 0:                             # Illinois: halve the value of an end kept twice
            lo, gl, gh, kept = p, g, gh / 2 if kept < 0 else gh, -1
            keep(lo)
        else:
            hi, gh, gl, kept = p, g, gl / 2 if kept > 0 else gl, 1
    return float(best)


