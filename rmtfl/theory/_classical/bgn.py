"""Outliers of low-rank perturbations: Benaych-Georges–Nadakuditi (docs/theory/two_step.md §2).

Normalisation
-------------
``W = W0 + sum_i theta_i u_i v_i^T`` with ``W0`` ``N x d`` (iid ``N(0, var/d)``
entries for the closed form), ``psi = c = N/d``, ``u_i`` unit vectors on the
**N side (left)**, ``v_i`` on the **d side (right)**.  Results are the limits of
``(s_i(W), cos^2(u_hat_i, u_i), cos^2(v_hat_i, v_i))``, returned as a :class:`BGNOutlier`
(fields ``singular_value``, ``cos2_left``, ``cos2_right``; it unpacks as a triple).

Signatures: the spike strength ``theta`` and ``psi`` are positional (they define the law);
``var``, ``dps`` and the bulk arguments are keyword-only.

Closed form (docs/theory/two_step.md §2.1; MP bulk, ``var = 1``; general ``var`` by ``theta -> theta/sqrt(var)``
and ``s -> sqrt(var) s``):
``s = sqrt((1 + t^2)(psi + t^2)) / t``,
``cos2_left = 1 - psi (1 + t^2) / (t^2 (t^2 + psi))``,
``cos2_right = 1 - (psi + t^2) / (t^2 (t^2 + 1))`` for ``t > psi^{1/4}``;
below the threshold ``s = 1 + sqrt(psi)`` and both overlaps are 0.

General bulk (:func:`bgn_dtransform`, docs/theory/two_step.md §2.2): with ``mu`` the law of the N singular
values of the noise (atom at 0 included), ``phi(z) = int z/(z^2 - t^2) mu(dt)``,
``phi~ = c phi + (1 - c)/z``, ``D = phi phi~``; the outlier solves
``D(s) = theta^-2`` (Brent's method on a bracket above the edge) and
``cos2_left = -2 phi(s) / (theta^2 D'(s))``, ``cos2_right = -2 phi~(s) / (theta^2 D'(s))``.

Examples
--------
>>> r = bgn_outlier(2.0, 0.5)
>>> [round(x, 10) for x in r]
[2.3717082451, 0.8611111111, 0.775]
>>> round(bgn_threshold(2.0), 10)
1.189207115
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import mpmath as mp
import numpy as np
from scipy import integrate, optimize

from rmtfl._results import Result
from rmtfl._validate import (check_finite_array, check_int, check_no_overflow, check_nonnegative, check_positive,
                             check_real)
from .mp import mp_atom, mp_density, mp_edges

__all__ = ["BGNOutlier", "bgn_threshold", "bgn_outlier", "bgn_dtransform", "dtransform_threshold",
           "DTransformBulk"]


@dataclass(frozen=True)
class BGNOutlier(Result):
    """Limit of the top singular value and its two squared overlaps (docs/theory/two_step.md §2.1).

    ``singular_value``: the outlier (the bulk edge below the threshold); ``cos2_left``: squared
    overlap of the top left singular vector (N side) with ``u``; ``cos2_right``: of the right one
    (d side) with ``v`` (docs/conventions.md §1).  Floats for a scalar ``theta``, arrays for an
    array.  Unpacks as a triple: ``s, cos2_left, cos2_right = bgn_outlier(theta, psi)``.

    >>> s, wl, wr = BGNOutlier(2.0, 0.5, 0.25)
    >>> s, BGNOutlier(2.0, 0.5, 0.25).to_dict()
    (2.0, {'singular_value': 2.0, 'cos2_left': 0.5, 'cos2_right': 0.25})
    """

    singular_value: float
    cos2_left: float
    cos2_right: float

    def __iter__(self):
        return iter((self.singular_value, self.cos2_left, self.cos2_right))


#: Largest spike strength of :func:`bgn_dtransform` (``theta^-2`` underflows far beyond it).
THETA_MAX = 1e100


def bgn_threshold(psi: float, *, var: float = 1.0) -> float:
    """BBP/BGN threshold ``sqrt(var) psi^{1/4}`` for the MP bulk.

    Normalisation: docs/theory/two_step.md §2.1 (``psi = N/d``); ``var`` keyword-only.

    >>> round(bgn_threshold(0.5), 10)
    0.8408964153
    """
    psi = check_positive("psi", psi)
    var = check_positive("var", var)
    return math.sqrt(var) * psi**0.25


def _theta_array(theta):
    th = check_finite_array("theta", theta, dtype_kind="f").astype(np.float64)
    if np.any(th < 0):
        raise ValueError(f"theta must be >= 0, got {th.tolist()}")
    return th


def bgn_outlier(theta, psi: float, *, var: float = 1.0, dps: int | None = None) -> BGNOutlier:
    """Closed-form BGN limits for the MP bulk (docs/theory/two_step.md §2.1).

    ``theta`` (spike strength ``>= 0``) and ``psi = N/d`` positional, ``var`` and ``dps``
    keyword-only.  ``theta`` scalar (floats out) or array (arrays out, rank-r with distinct
    strengths: each ``theta_i`` acts independently).  With ``dps`` the
    computation runs in mpmath at ``dps`` digits and returns ``mpf`` values
    (scalar ``theta`` only).

    >>> s, wl, wr = bgn_outlier(1.5, 1.0)
    >>> round(s, 10), round(wl, 10), round(wr, 10)
    (2.1666666667, 0.5555555556, 0.5555555556)
    >>> bgn_outlier(0.7, 0.5).singular_value == 1 + 0.5 ** 0.5
    True
    """
    if dps is not None:
        dps = check_int("dps", dps, 5, 10000)
        if np.ndim(theta) != 0:
            raise ValueError("theta must be a scalar when dps is given")
        with mp.workdps(dps):
            # strings / mpf are taken exactly (e.g. psi="0.1"); floats by their binary value
            P, V, T = (mp.mpf(x) if isinstance(x, (str, mp.mpf)) else mp.mpf(check_real(n, x))
                       for n, x in (("psi", psi), ("var", var), ("theta", theta)))
            for n, x, ok in (("psi", P, P > 0), ("var", V, V > 0), ("theta", T, T >= 0)):
                if not (ok and mp.isfinite(x)):
                    raise ValueError(f"{n} must be finite and {'>= 0' if n == 'theta' else '> 0'}, got {x}")
            t = T / mp.sqrt(V)
            if t <= P ** mp.mpf(0.25):
                return BGNOutlier(mp.sqrt(V) * (1 + mp.sqrt(P)), mp.mpf(0), mp.mpf(0))
            t2 = t * t
            s = mp.sqrt((1 + t2) * (P + t2)) / t
            wl = 1 - P * (1 + t2) / (t2 * (t2 + P))
            wr = 1 - (P + t2) / (t2 * (t2 + 1))
            return BGNOutlier(+mp.sqrt(V) * s, +wl, +wr)
    psi = check_positive("psi", psi)
    var = check_positive("var", var)
    th = _theta_array(theta)
    with np.errstate(over="ignore"):
        t = th / math.sqrt(var)
    above = t > psi**0.25
    ts = np.where(above, t, 2.0 * max(1.0, psi))  # safe value off the threshold
    with np.errstate(over="ignore"):  # t2 = inf for a huge spike: the limits below stay finite
        t2 = ts * ts
        r = 1.0 / t2
        s = np.where(above, ts * np.sqrt((1 + r) * (1 + psi * r)), 1.0 + math.sqrt(psi)) * math.sqrt(var)
        wl = np.where(above, 1.0 - psi * (1 + r) / (t2 + psi), 0.0)
        wr = np.where(above, 1.0 - (psi * r + 1) / (t2 + 1), 0.0)
    check_no_overflow("theta", s)
    if th.ndim == 0:
        return BGNOutlier(float(s), float(wl), float(wr))
    return BGNOutlier(s, wl, wr)


class DTransformBulk:
    """A bulk law for the D-transform: eigenvalues ``l = t^2`` of ``W0 W0^T`` (``N x N``).

    Give exactly one of

    * ``eigenvalues``: a sample (e.g. all N eigenvalues of an observed ``W0 W0^T``,
      zeros included) — the empirical law; its ``D`` has a pole at the top value,
      so every ``theta > 0`` gives a solution above it (finite-N prediction);
    * ``density`` (callable, continuous part in ``l``) with ``support=(lo, hi)``
      and ``atom`` (mass at 0; the total mass must be 1).

    ``edge`` (singular-value units) overrides the right edge ``sqrt(hi)``.  ``psi = N/d`` is
    positional, the rest keyword-only (docs/theory/two_step.md §2.2).

    >>> b = DTransformBulk(2.0, density=lambda l: mp_density(l, 2.0), support=mp_edges(2.0), atom=0.5)
    >>> round(b.edge, 10)
    2.4142135624
    """

    def __init__(self, psi, *, eigenvalues=None, density=None, support=None, atom: float = 0.0, edge=None):
        self.psi = check_positive("psi", psi)
        if (eigenvalues is None) == (density is None):
            raise ValueError("give exactly one of eigenvalues= or density=")
        self.atom = check_nonnegative("atom", atom)
        if eigenvalues is not None:
            ev = check_finite_array("eigenvalues", eigenvalues, ndim=1, dtype_kind="f").astype(np.float64)
            if ev.size == 0 or np.any(ev < -1e-12 * max(1.0, float(np.max(np.abs(ev))))):
                raise ValueError("eigenvalues must be a non-empty sample of values >= 0")
            self.ev = np.clip(ev, 0.0, None)
            self.kind = "sample"
            top = float(np.sqrt(self.ev.max()))
        else:
            support = None if support is None else tuple(support)  # a pair or an MPEdges
            if support is None or len(support) != 2:
                raise ValueError("support=(lo, hi) with 0 <= lo < hi is required with density=")
            lo, hi = (check_nonnegative("support[0]", support[0]), check_positive("support[1]", support[1]))
            if lo >= hi:
                raise ValueError(f"support must satisfy 0 <= lo < hi, got {support!r}")
            self.density, self.lo, self.hi = density, lo, hi
            self.kind = "density"
            mass = self._integrate(lambda lam: np.ones_like(lam)) + self.atom
            if abs(mass - 1.0) > 1e-6:
                raise ValueError(f"density mass plus atom must be 1, got {mass:.8g}")
            top = math.sqrt(hi)
        self.edge = top if edge is None else max(top, check_positive("edge", edge))

    def _integrate(self, f) -> float:
        m, h = 0.5 * (self.lo + self.hi), 0.5 * (self.hi - self.lo)

        def g(t):
            lam = m - h * math.cos(t)
            return float(self.density(lam)) * f(np.float64(lam)) * h * math.sin(t)

        with warnings.catch_warnings():
            # near the edge quad reports round-off at this tight tolerance; the
            # result is still ~1e-13 accurate (tested against the closed form)
            warnings.simplefilter("ignore", integrate.IntegrationWarning)
            val, _ = integrate.quad(g, 0.0, math.pi, epsabs=1e-15, epsrel=1e-13, limit=500)
        return val

    def phi(self, z: float, deriv: bool = True) -> tuple[float, float]:
        """``(phi(z), phi'(z))`` for ``z`` above the edge (``phi'`` is NaN when ``deriv=False``)."""
        z2 = z * z
        if self.kind == "sample":
            inv = 1.0 / (z2 - self.ev)
            dp = float(-np.mean((z2 + self.ev) * inv * inv)) if deriv else math.nan
            return float(z * inv.mean()), dp
        p = z * self._integrate(lambda lam: 1.0 / (z2 - lam)) + self.atom / z
        dp = self._integrate(lambda lam: -(z2 + lam) / (z2 - lam) ** 2) - self.atom / z2 if deriv else math.nan
        return p, dp

    def D(self, z: float, deriv: bool = True) -> tuple[float, float, float, float]:
        """``(D, D', phi, phi~)`` at ``z`` (``D'`` NaN when ``deriv=False``)."""
        p, dp = self.phi(z, deriv)
        c = self.psi
        pt = c * p + (1.0 - c) / z
        dpt = c * dp - (1.0 - c) / (z * z)
        return p * pt, dp * pt + p * dpt, p, pt


def dtransform_threshold(bulk: DTransformBulk) -> float:
    """``theta_c = D(s_+)^{-1/2}`` (0 for an empirical sample, whose ``D`` diverges at the top value).

    Normalisation: docs/theory/two_step.md §2.2 (for the MP bulk it equals :func:`bgn_threshold`).

    >>> b = DTransformBulk(0.5, density=lambda l: mp_density(l, 0.5), support=mp_edges(0.5))
    >>> round(dtransform_threshold(b), 8)
    0.84089642
    """
    if not isinstance(bulk, DTransformBulk):
        raise TypeError(f"bulk must be a DTransformBulk, got {type(bulk).__name__}")
    if bulk.kind == "sample" and bulk.edge <= math.sqrt(bulk.ev.max()):
        return 0.0
    Dv = bulk.D(bulk.edge, False)[0]
    return 1.0 / math.sqrt(Dv) if Dv > 0 else math.inf


def _solve_one(theta: float, bulk: DTransformBulk) -> BGNOutlier:
    edge = bulk.edge
    if theta == 0.0:
        return BGNOutlier(edge, 0.0, 0.0)
    target = theta**-2
    lo = edge
    if bulk.kind == "sample" and edge <= math.sqrt(bulk.ev.max()):
        lo = edge * (1.0 + 1e-15) + 1e-300
        while bulk.D(lo, False)[0] < target:  # approach the pole until D exceeds the target
            lo = edge + 0.5 * (lo - edge)
            if lo - edge < 1e-14 * edge:
                return BGNOutlier(edge, 0.0, 0.0)
    elif bulk.D(edge, False)[0] <= target:
        return BGNOutlier(edge, 0.0, 0.0)
    hi = max(2.0 * edge, edge + theta + 1.0)
    while bulk.D(hi, False)[0] > target:
        hi *= 2.0
    s = optimize.brentq(lambda z: bulk.D(z, False)[0] - target, lo, hi, xtol=1e-15, rtol=4 * np.finfo(float).eps,
                        maxiter=500)
    _, dD, p, pt = bulk.D(s)
    return BGNOutlier(float(s), float(-2.0 * p / (theta**2 * dD)), float(-2.0 * pt / (theta**2 * dD)))


def bgn_dtransform(theta, psi: float | None = None, *, bulk: DTransformBulk | None = None, eigenvalues=None,
                   density=None, support=None, atom: float = 0.0, edge=None) -> BGNOutlier:
    """BGN limits for a general bulk via the D-transform (docs/theory/two_step.md §2.2).

    Pass a prepared :class:`DTransformBulk` as ``bulk``, or ``psi = N/d`` plus the
    arguments of :class:`DTransformBulk` (``eigenvalues=`` or ``density=``,
    ``support=``, ``atom=``).  With neither, the MP law with ``var = 1`` is used
    (atom included when ``psi > 1``).  ``theta`` scalar or array as in
    :func:`bgn_outlier`; ``theta`` and ``psi`` positional, the rest keyword-only.

    >>> [round(x, 10) for x in bgn_dtransform(2.0, 2.0)]
    [2.7386127875, 0.5833333333, 0.7]
    """
    th = _theta_array(theta)
    if th.size and float(th.max()) > THETA_MAX:
        raise ValueError(f"theta must be <= {THETA_MAX:g} (the D-transform root search), got {float(th.max())!r}")
    atom = check_nonnegative("atom", atom)
    if edge is not None:
        edge = check_positive("edge", edge)
    if bulk is not None and not isinstance(bulk, DTransformBulk):
        raise TypeError(f"bulk must be a DTransformBulk, got {type(bulk).__name__}")
    if bulk is None:
        if psi is None:
            raise ValueError("psi (N/d > 0) is required unless bulk= is given")
        if eigenvalues is None and density is None:
            psi = check_positive("psi", psi)
            bulk = DTransformBulk(psi, density=lambda lam: mp_density(lam, psi), support=mp_edges(psi),
                                  atom=mp_atom(psi), edge=edge)
        else:
            bulk = DTransformBulk(psi, eigenvalues=eigenvalues, density=density, support=support, atom=atom,
                                  edge=edge)
    res = [_solve_one(float(t), bulk) for t in np.atleast_1d(th)]
    if th.ndim == 0:
        return res[0]
    return BGNOutlier(*(np.array(col) for col in zip(*res)))
