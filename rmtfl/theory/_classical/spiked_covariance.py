"""Spiked covariance (Johnstone; BBP in the covariance form): outlier eigenvalues, their inverse and overlaps
(docs/analyze.md §5).

Normalisation
-------------
Data ``X`` ``n x d`` with iid rows ``N(0, var (I + sum_i (ell_i - 1) v_i v_i^T))`` (samples in rows,
docs/conventions.md §1), ``phi = n/d``, sample covariance ``S = X^T X / n``.  With ``g = 1/phi = d/n``
(paper: Baik, Ben Arous, Péché 2005; Baik & Silverstein 2006; Paul 2007):

* a population spike ``ell > 1 + sqrt(g)`` gives a sample eigenvalue ``lambda -> var ell (1 + g/(ell - 1))``;
  below, the top eigenvalue sticks to the edge ``var (1 + sqrt(g))^2``;
* the squared overlap of its eigenvector with ``v`` is ``(1 - g/(ell - 1)^2) / (1 + g/(ell - 1))``;
* its fluctuation (real Gaussian data, Paul 2007): ``sqrt(n) (lambda - E lambda) -> N(0, 2 var^2 ell^2 (1 - g/(ell - 1)^2))``.

The inverse of ``rho(ell) = ell (1 + g/(ell - 1))`` at ``rho = lambda/var`` above the edge is the larger root of
``ell^2 - (rho + 1 - g) ell + rho = 0``.  The rectangular model of :func:`rmtfl.theory.bgn_outlier` with a
Gaussian ``u`` is this one with ``ell = 1 + t^2 / psi`` (docs/analyze.md §5).

Examples
--------
>>> r = spiked_covariance_outlier(3.0, 2.0)
>>> round(r.eigenvalue, 12), round(r.cos2, 12)
(3.75, 0.7)
>>> round(spiked_covariance_inverse(3.75, 2.0).ell, 12)
3.0
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from rmtfl._results import Result
from rmtfl._validate import check_finite_array, check_int, check_positive

__all__ = ["SpikedCovarianceOutlier", "SpikedCovarianceInverse", "spiked_covariance_outlier",
           "spiked_covariance_inverse", "spiked_covariance_sd"]


@dataclass(frozen=True)
class SpikedCovarianceOutlier(Result):
    """Limit of the sample eigenvalue of a population spike and the squared overlap of its eigenvector
    (docs/analyze.md §5); floats for a scalar spike, arrays for an array."""

    eigenvalue: float
    cos2: float


@dataclass(frozen=True)
class SpikedCovarianceInverse(Result):
    """Population spike ``ell`` behind a sample eigenvalue (``1`` at or below the edge), the predicted squared
    overlap and ``d ell / d lambda`` (docs/analyze.md §5)."""

    ell: float
    cos2: float
    dell_dlambda: float


def _nonneg(name, x):
    arr = check_finite_array(name, x, dtype_kind="f").astype(np.float64)
    if np.any(arr < 0):
        raise ValueError(f"{name} must be >= 0, got {arr.tolist()}")
    return arr


def _out(cls, arr_ndim, *cols):
    if arr_ndim == 0:
        return cls(*(float(c) for c in cols))
    return cls(*cols)


def spiked_covariance_outlier(ell, phi: float, *, var: float = 1.0) -> SpikedCovarianceOutlier:
    """Sample eigenvalue and overlap of a population spike ``ell`` (docs/analyze.md §5).

    ``ell`` (population eigenvalue in units of ``var``, ``> 0``) and ``phi = n/d`` positional, ``var``
    keyword-only.  Threshold ``ell > 1 + phi**-0.5``; below it the edge ``var (1 + phi**-0.5)^2`` and overlap 0.

    >>> [round(x, 10) for x in spiked_covariance_outlier(1.2, 2.0).to_dict().values()]
    [2.9142135624, 0.0]
    """
    phi = check_positive("phi", phi)
    var = check_positive("var", var)
    el = _nonneg("ell", ell)
    g = 1.0 / phi
    above = el > 1.0 + math.sqrt(g)
    a = np.where(above, el - 1.0, 1.0)
    with np.errstate(over="ignore"):
        lam = np.where(above, el * (1.0 + g / a), (1.0 + math.sqrt(g)) ** 2) * var
    if not np.all(np.isfinite(lam)):
        raise ValueError("ell * var overflows float64: the sample eigenvalue is not representable")
    c2 = np.where(above, (1.0 - g / (a * a)) / (1.0 + g / a), 0.0)
    return _out(SpikedCovarianceOutlier, el.ndim, lam, c2)


def spiked_covariance_inverse(lam, phi: float, *, var: float = 1.0) -> SpikedCovarianceInverse:
    """Population spike behind a sample eigenvalue ``lam`` of ``S = X^T X / n`` (docs/analyze.md §5).

    ``lam`` (``>= 0``) and ``phi = n/d`` positional, ``var`` keyword-only; the exact inverse of
    :func:`spiked_covariance_outlier` above the edge ``var (1 + phi**-0.5)^2`` (``ell = 1``, overlap 0 at or
    below it).

    >>> r = spiked_covariance_inverse(3.75, 2.0)
    >>> round(r.ell, 12), round(r.cos2, 12), round(r.dell_dlambda, 12)
    (3.0, 0.7, 1.142857142857)
    """
    phi = check_positive("phi", phi)
    var = check_positive("var", var)
    lm = _nonneg("lam", lam)
    g = 1.0 / phi
    rho = np.minimum(lm / var, 1e150)  # beyond, ell = rho - g to double precision
    edge = (1.0 + math.sqrt(g)) ** 2
    above = rho > edge
    b = rho + 1.0 - g
    ell = np.where(above, 0.5 * (b + np.sqrt(np.clip(b * b - 4.0 * rho, 0.0, None))), 1.0)
    ell = np.where(above, np.maximum(np.where(lm / var > 1e150, lm / var, ell), 1.0 + math.sqrt(g)), 1.0)
    a = np.where(above, ell - 1.0, 1.0)
    c2 = np.where(above, np.clip((1.0 - g / (a * a)) / (1.0 + g / a), 0.0, 1.0), 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        der = np.where(above, 1.0 / (var * (1.0 - g / (a * a))), np.where(rho == edge, np.inf, 0.0))
    return _out(SpikedCovarianceInverse, lm.ndim, ell, c2, der)


def spiked_covariance_sd(ell, phi: float, *, n: int, var: float = 1.0):
    """Standard deviation of the sample eigenvalue of a spike ``ell`` with ``n`` samples (Paul 2007;
    docs/analyze.md §5): ``var ell sqrt(2 (1 - g/(ell - 1)^2) / n)``, ``g = 1/phi``; ``0`` at and below the threshold.

    ``ell`` and ``phi`` positional, ``n`` and ``var`` keyword-only.

    >>> round(spiked_covariance_sd(3.0, 2.0, n=2000), 7)
    0.0887412
    """
    phi = check_positive("phi", phi)
    var = check_positive("var", var)
    n = check_int("n", n, 1)
    el = _nonneg("ell", ell)
    g = 1.0 / phi
    above = el > 1.0 + math.sqrt(g)
    a = np.where(above, el - 1.0, 1.0)
    with np.errstate(over="ignore"):
        sd = np.where(above, var * el * np.sqrt(np.clip(2.0 * (1.0 - g / (a * a)) / n, 0.0, None)), 0.0)
    if not np.all(np.isfinite(sd)):
        raise ValueError("ell * var overflows float64: the standard deviation is not representable")
    return float(sd) if el.ndim == 0 else sd
