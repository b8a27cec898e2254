"""Closed-form Funk–Hecke ingredients on the sphere: monomials, relu and step, and the Gaussian radial factor.

Sphere probability measure (docs/conventions.md §8); log-gamma evaluation (docs/theory/spiked_kernel.md §4.4).
"""
from __future__ import annotations

import math

from scipy import special

from rmtfl._validate import check_int

__all__ = ["monomial_sphere_eigen", "relu_legendre", "step_legendre", "gaussian_moment_factor"]


def monomial_sphere_eigen(j: int, k: int, d: int) -> float:
    """``mu_k[t^j] = Gamma(d/2) j! / (2^j ((j-k)/2)! Gamma((j+k+d)/2))`` (0 unless ``j >= k``, ``j = k mod 2``).

    Evaluated with log-gamma (docs/theory/spiked_kernel.md §4.2); sphere probability measure
    (docs/conventions.md §8).

    Examples
    --------
    >>> monomial_sphere_eigen(2, 0, 10), monomial_sphere_eigen(1, 1, 10)
    (0.1, 0.1)
    """
    d = check_int("d", d, lo=2)
    j = check_int("j", j, lo=0)
    k = check_int("k", k, lo=0)
    if j < k or (j - k) % 2:
        return 0.0
    lg = (special.gammaln(d / 2) + special.gammaln(j + 1) - j * math.log(2)
          - special.gammaln((j - k) / 2 + 1) - special.gammaln((j + k + d) / 2))
    return float(math.exp(lg))


def relu_legendre(k: int, d: int) -> float:
    """Legendre coefficient ``lambda_k`` of relu on ``S^{d-1}`` (closed form, log-gamma; docs/theory/spiked_kernel.md §4.4).

    ``lambda_k = E_t[relu(t) P_k^{(d)}(t)]`` for ``t`` a coordinate of a uniform point on the unit sphere
    (probability measure, docs/conventions.md §8); the sphere eigenvalue of ``k_I`` is ``mu_k = d lambda_k^2``.

    Examples
    --------
    >>> relu_legendre(1, 10), relu_legendre(3, 10)
    (0.05, 0.0)
    """
    d, k = check_int("d", d, lo=2), check_int("k", k, lo=0)
    if k == 0:
        return float(math.exp(special.gammaln(d / 2) - special.gammaln((d + 1) / 2)) / (2 * math.sqrt(math.pi)))
    if k == 1:
        return 1.0 / (2 * d)
    if k % 2:
        return 0.0
    lg = (special.gammaln(d / 2) + special.gammaln(k - 1) - 0.5 * math.log(math.pi) - k * math.log(2)
          - special.gammaln(k / 2) - special.gammaln((k + d + 1) / 2))
    return float((-1) ** (k // 2 - 1) * math.exp(lg))


def step_legendre(k: int, d: int) -> float:
    """Legendre coefficient ``lambda_k`` of the step ``1{t > 0}`` on ``S^{d-1}`` (closed form; docs/theory/spiked_kernel.md §4.4).

    Normalisation as :func:`relu_legendre` (docs/conventions.md §8); ``mu_k = lambda_k^2``.

    Examples
    --------
    >>> step_legendre(0, 3), step_legendre(1, 3), step_legendre(2, 3)
    (0.5, 0.25, 0.0)
    """
    d, k = check_int("d", d, lo=2), check_int("k", k, lo=0)
    if k == 0:
        return 0.5
    if k % 2 == 0:
        return 0.0
    lg = (special.gammaln(d / 2) + special.gammaln(k) - 0.5 * math.log(math.pi) - k * math.log(2)
          - special.gammaln((k + 1) / 2) - special.gammaln((k + d) / 2))
    return float((-1) ** ((k - 1) // 2) * math.exp(lg))


def gaussian_moment_factor(d: int, p: float) -> float:
    """``m_{2p} = E|x|^{2p} = 2^p Gamma(d/2 + p)/Gamma(d/2)``, ``x ~ N(0, I_d)``.

    Equals ``1, d, d(d+2)`` for ``p = 0, 1, 2``: the Gaussian-input / unit-sphere eigenvalue factor
    of a ``p``-homogeneous kernel (docs/conventions.md §8).

    Examples
    --------
    >>> round(gaussian_moment_factor(10, 1), 10), round(gaussian_moment_factor(10, 2), 10)
    (10.0, 120.0)
    """
    d = check_int("d", d, lo=2)
    return float(math.exp(p * math.log(2) + special.gammaln(d / 2 + p) - special.gammaln(d / 2)))
