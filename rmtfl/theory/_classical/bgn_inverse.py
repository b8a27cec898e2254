"""Inverse BGN map: the spike strength behind an observed outlier, its overlaps and its fluctuation
(docs/analyze.md §4).

Normalisation
-------------
As :func:`rmtfl.theory.bgn_outlier` (docs/theory/classical.md §2): ``W = W0 + theta u v^T`` with ``W0``
``N x d``, iid ``N(0, var/d)`` entries, ``psi = N/d``, unit ``u`` (left, N side) and ``v`` (right, d side).
With ``t = theta / sqrt(var)`` and ``y = s^2 / var`` the BGN location ``y = (1 + t^2)(psi + t^2) / t^2`` is a
quadratic in ``x = t^2``: ``x^2 + (1 + psi - y) x + psi = 0``, whose larger root

``x = ((y - 1 - psi) + sqrt((y - 1 - psi)^2 - 4 psi)) / 2``

is the inverse for ``s`` at or above the bulk edge ``sqrt(var)(1 + sqrt(psi))`` (it equals ``sqrt(psi)``, the
threshold, at the edge).  Derivative (exact): ``d theta / d s = s / (sqrt(var) t (1 - psi / t^4))``.

Fluctuation of the outlier (derived, docs/analyze.md §4.2): for Haar-random (or fixed) unit ``u, v`` and
Gaussian ``W0``, ``sqrt(d) (s - s(theta)) -> N(0, var sd^2)`` with

``sd^2 = (1 - psi / t^4) (1 + psi + 2 t^2) / (2 s_1^2)``,  ``s_1 = s / sqrt(var)``.

It follows from Paul's (2007) variance of a spiked sample-covariance eigenvalue, ``2 l^2 (1 - g/(l - 1)^2)/n``
(the rows of ``W`` are iid ``N(0, I/d + theta^2 vv^T / N)`` when ``u`` is Gaussian; ``l = 1 + t^2/psi``,
``g = 1/psi``, ``n = N``), minus the part due to the random length of a Gaussian ``u``
(``(d rho / d l)^2 (l - 1)^2 2/N``): ``Var(rho) = 2 (1 - g/a^2)(1 + 2a + g)/N`` with ``a = l - 1``.  With
``gaussian_u=True`` the spiked-covariance (Paul) variance itself is returned.

Examples
--------
>>> from rmtfl.theory import bgn_outlier
>>> s = bgn_outlier(2.0, 0.5).singular_value
>>> round(bgn_inverse(s, 0.5).theta, 12)
2.0
>>> round(bgn_outlier_sd(2.0, 1.0, d=1000), 6)
0.027386
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from rmtfl._results import Result
from rmtfl._validate import check_finite_array, check_int, check_positive

__all__ = ["BGNInverse", "bgn_inverse", "bgn_outlier_sd"]


@dataclass(frozen=True)
class BGNInverse(Result):
    """The spike strength behind an outlier ``s`` and its predicted overlaps (docs/analyze.md §4).

    ``theta``: the strength (``0`` at or below the bulk edge), in the units of ``W`` (as
    :func:`rmtfl.theory.bgn_outlier`); ``cos2_left`` / ``cos2_right``: the BGN squared overlaps of the left
    (N side) and right (d side) singular vectors with ``u`` and ``v`` at that strength; ``dtheta_ds``: the
    derivative of the inverse map (``inf`` at the edge, ``0`` below, where ``theta = 0``).  Floats for a scalar ``s``, arrays for
    an array.
    """

    theta: float
    cos2_left: float
    cos2_right: float
    dtheta_ds: float


def _s_array(s):
    arr = check_finite_array("s", s, dtype_kind="f").astype(np.float64)
    if np.any(arr < 0):
        raise ValueError(f"s must be >= 0 (a singular value), got {arr.tolist()}")
    return arr


def bgn_inverse(s, psi: float, *, var: float = 1.0) -> BGNInverse:
    """Invert the BGN map ``s(theta)``: the strength, both overlaps and ``d theta / d s`` (docs/analyze.md §4.1).

    ``s`` (observed singular value(s), ``>= 0``) and ``psi = N/d`` positional, ``var`` keyword-only; the
    normalisation of :func:`rmtfl.theory.bgn_outlier` (docs/theory/classical.md §2), of which this is the
    exact inverse above the edge ``sqrt(var)(1 + sqrt(psi))``: ``bgn_inverse(bgn_outlier(t, psi).singular_value,
    psi).theta == t`` to rounding for ``t > psi**0.25``.  A value at or below the edge gives ``theta = 0`` and
    zero overlaps.

    >>> r = bgn_inverse(2.5, 1.0)
    >>> round(r.theta, 12), round(r.cos2_left, 12), round(r.dtheta_ds, 12)
    (2.0, 0.75, 1.333333333333)
    """
    psi = check_positive("psi", psi)
    var = check_positive("var", var)
    arr = _s_array(s)
    sv = np.sqrt(var)
    s1 = np.minimum(arr / sv, 1e50)  # beyond 1e50 the inverse is theta = s to double precision
    y = s1 * s1
    b = y - 1.0 - psi
    edge2 = (1.0 + math.sqrt(psi)) ** 2
    above = y > edge2
    disc = np.where(above, b * b - 4.0 * psi, 0.0)
    x = np.where(above, 0.5 * (b + np.sqrt(np.clip(disc, 0.0, None))), math.sqrt(psi))
    x = np.maximum(x, math.sqrt(psi))
    t = np.sqrt(x)
    wl = np.where(above, 1.0 - psi * (1 + x) / (x * (x + psi)), 0.0)
    wr = np.where(above, 1.0 - (psi + x) / (x * (x + 1)), 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        der = np.where(above, s1 / (t * (1.0 - psi / (x * x))), np.where(y == edge2, np.inf, 0.0))
    theta = np.where(above, np.where(arr / sv > 1e50, arr / sv, t) * sv, 0.0)
    wl, wr = np.clip(wl, 0.0, 1.0), np.clip(wr, 0.0, 1.0)
    if arr.ndim == 0:
        return BGNInverse(float(theta), float(wl), float(wr), float(der))
    return BGNInverse(theta, wl, wr, der)


def bgn_outlier_sd(theta, psi: float, *, d: int, var: float = 1.0, gaussian_u: bool = False):
    """Asymptotic standard deviation of a BGN outlier singular value at finite ``d`` (docs/analyze.md §4.2).

    ``theta`` (strength, as :func:`rmtfl.theory.bgn_outlier`) and ``psi = N/d`` positional; ``d`` (the number
    of columns), ``var`` and ``gaussian_u`` keyword-only.  Returns
    ``sqrt(var) sqrt((1 - psi/t^4)(1 + psi + 2 t^2) / (2 d s_1^2))`` with ``t = theta/sqrt(var)`` and
    ``s_1 = s(t)`` (unit variance): Haar or fixed unit ``u, v``, Gaussian noise.  ``gaussian_u=True``: the
    spiked-covariance variance (rows of ``W`` iid Gaussian with a spiked covariance, Paul 2007), larger by the
    random length of ``u``.  ``0`` at and below the threshold ``psi**0.25`` (there the edge's Tracy-Widom
    scale ``O(d^{-2/3})`` takes over, docs/theory/classical.md §4).

    >>> round(bgn_outlier_sd(2.0, 1.0, d=1000, gaussian_u=True), 6)
    0.043301
    """
    psi = check_positive("psi", psi)
    var = check_positive("var", var)
    d = check_int("d", d, 1)
    th = check_finite_array("theta", theta, dtype_kind="f").astype(np.float64)
    if np.any(th < 0):
        raise ValueError(f"theta must be >= 0, got {th.tolist()}")
    t = np.minimum(th / math.sqrt(var), 1e100)  # the s.d. has converged long before (its limit is 1/sqrt(d))
    x = t * t
    above = x > math.sqrt(psi)
    xs = np.where(above, x, 2.0 * max(1.0, psi))
    s2 = (1 + xs) * (psi + xs) / xs
    k = 1.0 - psi / (xs * xs)
    if gaussian_u:
        ell = 1.0 + xs / psi
        var_rho = 2.0 * ell * ell * k / (psi * d)  # Paul: 2 l^2 (1 - g/a^2) / n, n = N = psi d
    else:
        var_rho = 2.0 * k * (1.0 + (2.0 * xs + 1.0) / psi) / (psi * d)
    # s^2 = psi rho  =>  Var(s) = psi^2 Var(rho) / (4 s^2)
    sd = np.where(above, np.sqrt(psi * psi * var_rho / (4.0 * s2)), 0.0) * math.sqrt(var)
    if th.ndim == 0:
        return float(sd)
    return sd
