"""Tracy–Widom laws and the finite-N margin above a Marchenko–Pastur edge (docs/theory/classical.md §4–§5).

Signatures: the law's own argument (``s`` or ``p``) is positional and ``beta`` keyword-only; the
finite-size functions take the matrix shape ``N, d`` positionally (it is the object they describe)
and everything else (``var``, ``beta``, ``p``) keyword-only.

Normalisation
-------------
``F_beta`` is the limiting law of ``(lambda_max - 2 sqrt(n)) n^{1/6}`` for the
GOE (``beta = 1``) / GUE (``beta = 2``) with off-diagonal variance ``1/2``
(GUE) resp. ``1`` (GOE) — the usual Tracy–Widom normalisation.  Both are
computed as Fredholm determinants (Bornemann 2010, *On the numerical
evaluation of distributions in random matrix theory*, Math. Comp. 79):

* ``F2(s) = det(I - K_Ai)`` on ``L^2(s, inf)``, Airy kernel
  ``K_Ai(x, y) = (Ai(x) Ai'(y) - Ai'(x) Ai(y)) / (x - y)``;
* ``F1(s) = det(I - A_s)`` on ``L^2(s, inf)`` with ``A_s(x, y) = Ai((x+y)/2) / 2``
  (Ferrari–Spohn / Sasamoto form; after ``x -> s + x`` it is Bornemann's
  ``det(I - A_s)`` on ``L^2(0, inf)`` with ``A_s(x, y) = Ai((x+y)/2 + s)/2``).

The determinant is discretised by Gauss–Legendre quadrature (Nyström method) on
the half-line mapped to ``(0, 1)`` by ``x = s + 10 tan(pi t / 2)``; the Airy
kernel decays super-exponentially, so ``m = 64`` nodes give ~1e-14 absolute
accuracy for ``s`` in ``[-8, 6]``.

Edge margin
-----------
For ``W`` ``N x d`` with iid ``N(0, var/d)`` entries, ``W W^T = (var/d) X X^T``
with ``X`` standard Gaussian.  Johnstone (2001, Ann. Stat. 29, Thm 1) gives for
the largest eigenvalue ``l_1`` of ``X^T X`` (``n = max(N, d)`` samples,
``p = min(N, d)``) ``(l_1 - mu) / sigma -> TW_1`` with
``mu = (sqrt(n - 1) + sqrt(p))^2`` and
``sigma = (sqrt(n - 1) + sqrt(p)) (1/sqrt(n - 1) + 1/sqrt(p))^{1/3}``;
for ``beta = 2`` (complex Wishart, Johansson 2000) ``n - 1`` becomes ``n``.
:func:`largest_sv_scaling` converts this to the largest *singular value* of
``W``: ``s_1 ≈ center + scale * TW`` with ``center = sqrt(var mu / d)`` and
``scale = var sigma / (2 d center)`` (delta method), of order ``N^{-2/3}``
(``0.0063`` at ``N = d = 1000``).
:func:`edge_margin` returns the exact transform ``sqrt(var (mu + q_p sigma) / d)``
with ``q_p`` the TW quantile at probability ``p``: a bulk singular value exceeds
it with probability about ``1 - p``.

Examples
--------
>>> round(tracy_widom_cdf(-2.0, beta=2), 8)
0.41322414
>>> round(tracy_widom_quantile(0.5, beta=1), 6)
-1.268575
>>> 2.0 < edge_margin(1000, 1000) < 2.05
True
"""
from __future__ import annotations

import functools
import math
import warnings
from dataclasses import dataclass

import numpy as np
from scipy import optimize, special

from rmtfl._results import Result
from rmtfl._validate import check_array, check_in_range, check_int

__all__ = [
    "EdgeScaling",
    "tracy_widom_cdf",
    "tracy_widom_pdf",
    "tracy_widom_quantile",
    "tracy_widom_mean",
    "largest_sv_scaling",
    "edge_margin",
    "TW_MEAN",
    "TW_STD",
]

#: Reference means (Bornemann 2010, Table 1) and standard deviations (square roots of the
#: variances 1.6077810345810 and 0.8131947928329 of the same table); both re-derived by
#: quadrature in tests/theory/classical/test_tracy_widom.py.
TW_MEAN = {1: -1.2065335745820, 2: -1.7710868074116}
TW_STD = {1: 1.2679830576550, 2: 0.9017731382116}
#: The 0.99 quantiles (the level of the outlier count rule, docs/theory/two_step.md §9.2): this module's Fredholm
#: solver at 64 nodes, tabulated so that a first count costs no root search; re-solved in
#: tests/theory/classical/test_tracy_widom.py.
TW_Q99 = {1: 2.023449281380193, 2: 0.4776360473908313}

_NODES = 64


def _check_beta(beta) -> int:
    if isinstance(beta, bool) or beta not in (1, 2):
        raise ValueError(f"beta must be 1 or 2, got {beta!r}")
    return int(beta)


@functools.lru_cache(maxsize=8)
def _gl01(m: int):
    t, w = special.roots_legendre(m)
    return 0.5 * (t + 1.0), 0.5 * w


def _half_line_rule(s: float, m: int):
    """Nodes/weights on ``(s, inf)``: ``x = s + 10 tan(pi t / 2)``."""
    t, w = _gl01(m)
    x = s + 10.0 * np.tan(0.5 * np.pi * t)
    wx = w * 10.0 * 0.5 * np.pi / np.cos(0.5 * np.pi * t) ** 2
    return x, wx


def _det_f2(s: float, m: int) -> float:
    x, w = _half_line_rule(s, m)
    ai, aip, _, _ = special.airy(x)
    X, Y = np.meshgrid(x, x, indexing="ij")
    num = np.outer(ai, aip) - np.outer(aip, ai)
    diff = X - Y
    with np.errstate(divide="ignore", invalid="ignore"):
        K = num / diff
    K[np.diag_indices(m)] = aip**2 - x * ai**2
    sw = np.sqrt(w)
    M = np.eye(m) - sw[:, None] * K * sw[None, :]
    return float(np.linalg.det(M))


def _det_f1(s: float, m: int) -> float:
    x, w = _half_line_rule(s, m)
    K = 0.5 * special.airy(0.5 * (x[:, None] + x[None, :]))[0]
    sw = np.sqrt(w)
    M = np.eye(m) - sw[:, None] * K * sw[None, :]
    return float(np.linalg.det(M))


def _cdf_scalar(s: float, beta: int, m: int) -> float:
    if s > 40.0:
        return 1.0
    if s < -40.0:
        return 0.0
    val = _det_f1(s, m) if beta == 1 else _det_f2(s, m)
    return min(1.0, max(0.0, val))


def tracy_widom_cdf(s, *, beta: int = 1, nodes: int = _NODES):
    """Tracy–Widom distribution function ``F_beta(s)`` (``beta`` in {1, 2}, keyword-only).

    Normalisation: docs/theory/classical.md §4 (GOE ``beta = 1``, GUE ``beta = 2``).  Fredholm
    determinant by Gauss–Legendre/Nyström quadrature (module docstring).
    Array input gives an array of the same shape; absolute accuracy ~1e-14 for
    ``s >= -8`` with the default ``nodes=64`` (for ``s < -8`` raise ``nodes``).

    >>> round(tracy_widom_cdf(0.0, beta=1), 6)
    0.83190...
    """
    beta = _check_beta(beta)
    nodes = check_int("nodes", nodes, 8, 2000)
    arr = check_array("s", s)
    out = np.vectorize(lambda v: _cdf_scalar(float(v), beta, nodes), otypes=[float])(arr)
    return float(out) if out.ndim == 0 else out


def tracy_widom_pdf(s, *, beta: int = 1, h: float = 1e-3):
    """Density ``F_beta'(s)`` by a fourth-order central difference of the CDF (error ~1e-10).

    Normalisation: docs/theory/classical.md §4; ``beta`` and the step ``h`` keyword-only.

    >>> round(tracy_widom_pdf(-1.5, beta=2), 4)
    0.4...
    """
    beta = _check_beta(beta)
    h = check_in_range("h", h, 0.0, 0.1, lo_open=True)
    arr = check_array("s", s)
    f = lambda v: tracy_widom_cdf(v, beta=beta)  # noqa: E731
    out = (-f(arr + 2 * h) + 8 * f(arr + h) - 8 * f(arr - h) + f(arr - 2 * h)) / (12 * h)
    return float(out) if np.ndim(out) == 0 else out


def tracy_widom_quantile(p, *, beta: int = 1):
    """Inverse of :func:`tracy_widom_cdf`: the ``s`` with ``F_beta(s) = p``, ``p`` in (0, 1).

    Normalisation: docs/theory/classical.md §4; ``beta`` keyword-only.  Brent's method on
    ``[-12, 12]`` (``F`` is strictly increasing); accuracy ~1e-12.

    >>> round(tracy_widom_quantile(0.99, beta=1), 4)
    2.0234
    """
    beta = _check_beta(beta)
    arr = check_array("p", p)
    if np.any((arr <= 0) | (arr >= 1)):
        raise ValueError(f"p must lie in (0, 1), got {p!r}")
    if not np.all((arr >= 1e-4) & (arr <= 1.0 - 1e-7)):     # well inside (F(-12), F(12)): no check needed
        lo, hi = _quantile_range(beta)
        if np.any(arr <= lo) or np.any(arr >= hi):
            raise ValueError("p must lie in (F(-12), F(12)) (the resolvable range of the quadrature)")
    out = np.vectorize(lambda q: _quantile_scalar(float(q), beta), otypes=[float])(arr)
    return float(out) if out.ndim == 0 else out


@functools.lru_cache(maxsize=4)
def _quantile_range(beta: int) -> tuple[float, float]:
    return _cdf_scalar(-12.0, beta, 128), _cdf_scalar(12.0, beta, _NODES)


@functools.lru_cache(maxsize=256)
def _quantile_scalar(q: float, beta: int) -> float:
    if q == 0.99 and beta in TW_Q99:        # the count rule's level: tabulated, checked against the solver in the tests
        return TW_Q99[beta]
    return _solve_quantile(q, beta)


def _solve_quantile(q: float, beta: int) -> float:
    nodes = 128 if q < 1e-6 else _NODES
    # a coarse root (24 nodes: within 1e-5 of the exact quantile for p in [1e-6, 1 - 1e-9]) starts the exact solve,
    # so the full-accuracy solve needs a few determinants of the large rule instead of about twenty
    lo, hi = -12.0, 12.0
    if 1e-4 <= q <= 1.0 - 1e-7:          # where F is steep enough for secant steps to 1e-14
        v0 = optimize.brentq(lambda v: _cdf_scalar(v, beta, 24) - q, lo, hi, xtol=1e-9)
        # secant steps from there; accepted only if they settle inside the coarse root's error bracket
        with warnings.catch_warnings():              # a stalled secant falls back to Brent below
            warnings.simplefilter("ignore", RuntimeWarning)
            v, r = optimize.newton(lambda v: _cdf_scalar(v, beta, nodes) - q, v0, x1=v0 + 1e-6, tol=1e-14,
                                   maxiter=8, full_output=True, disp=False)
        if r.converged and abs(v - v0) < 1e-4:
            return float(v)
    return optimize.brentq(lambda v: _cdf_scalar(v, beta, nodes) - q, lo, hi, xtol=1e-13, rtol=1e-14)


def tracy_widom_mean(*, beta: int = 1) -> float:
    """Mean of TW_beta by quadrature of ``E X = int_0^inf (1 - F) - int_-inf^0 F``.

    Normalisation: docs/theory/classical.md §4; ``beta`` keyword-only.

    Used to cross-check :data:`TW_MEAN` (agreement ~1e-10).  About 2 s per ``beta`` (320 Fredholm
    determinants); cached.

    >>> abs(tracy_widom_mean(beta=2) - TW_MEAN[2]) < 1e-9
    True
    """
    return _mean_scalar(_check_beta(beta))


@functools.lru_cache(maxsize=4)
def _mean_scalar(beta: int) -> float:
    x, w = special.roots_legendre(160)
    # (-14, 0) and (0, 16) suffice: F(-14) < 1e-40 and 1 - F(16) ~ exp(-(2 beta/3) 16^1.5) < 1e-18.
    neg = 7.0 * (x + 1.0) - 14.0
    pos = 8.0 * (x + 1.0)
    Fn = np.array([_cdf_scalar(v, beta, 128) for v in neg])
    Fp = np.array([_cdf_scalar(v, beta, _NODES) for v in pos])
    return float(8.0 * np.dot(w, 1.0 - Fp) - 7.0 * np.dot(w, Fn))


@dataclass(frozen=True)
class EdgeScaling(Result):
    """``s_1(W) ≈ center + scale * TW_beta``: the finite-size centring and scale of the top singular value.

    Returned by :func:`largest_sv_scaling` (docs/theory/classical.md §4); unpacks as a pair,
    ``center, scale = largest_sv_scaling(N, d)``.
    """

    center: float
    scale: float

    def __iter__(self):
        return iter((self.center, self.scale))


def _johnstone(N: int, d: int, beta: int) -> tuple[float, float]:
    """Johnstone's ``(mu, sigma)`` of the largest white-Wishart eigenvalue (docs/theory/classical.md §4)."""
    n, p = max(N, d), min(N, d)
    nn = (n - 1) if (beta == 1 and n > 1) else n
    a, b = math.sqrt(nn), math.sqrt(p)
    return (a + b) ** 2, (a + b) * (1.0 / a + 1.0 / b) ** (1.0 / 3.0)


def largest_sv_scaling(N: int, d: int, *, var: float = 1.0, beta: int = 1) -> EdgeScaling:
    """Centring and scale with ``s_1(W) ≈ center + scale * TW_beta`` for ``W`` ``N x d``, entries ``N(0, var/d)``.

    Normalisation: docs/theory/classical.md §4.  The shape ``N, d`` is positional (it is the
    matrix described); ``var`` and ``beta`` are keyword-only.
    Johnstone (2001) centring/scaling of the largest white-Wishart eigenvalue
    (``n - 1`` for ``beta = 1``, ``n`` for ``beta = 2``; ``n = max(N, d)``,
    ``p = min(N, d)``), mapped to singular values by the delta method.
    ``center -> sqrt(var) (1 + sqrt(N/d))`` and ``scale = O(N^{-2/3})``.

    >>> c, sc = largest_sv_scaling(1000, 1000)
    >>> round(c, 4), round(sc, 5)
    (1.9995, 0.0063)
    """
    N = check_int("N", N, 1)
    d = check_int("d", d, 1)
    var = check_in_range("var", var, 1e-100, 1e100)
    beta = _check_beta(beta)
    mu, sigma = _johnstone(N, d, beta)
    center = math.sqrt(var * mu / d)
    scale = var * sigma / (2.0 * d * center)
    return EdgeScaling(center, scale)


def edge_margin(N: int, d: int, *, var: float = 1.0, beta: int = 1, p: float = 0.99) -> float:
    """Singular-value threshold above which a value of ``W`` (``N x d``, entries ``N(0, var/d)``) is an outlier.

    Normalisation: docs/theory/classical.md §5.  The shape ``N, d`` is positional (it is the
    matrix described); ``var``, ``beta`` and ``p`` are keyword-only.
    ``sqrt(var (mu + q_p sigma) / d)`` with Johnstone's ``mu, sigma``
    (:func:`largest_sv_scaling`) and ``q_p`` the ``TW_beta`` quantile at ``p``:
    the largest bulk singular value exceeds it with probability ≈ ``1 - p``.
    ``beta = 1`` is the real (Gaussian) case.

    >>> round(edge_margin(1000, 1000, p=0.99), 4)
    2.0122
    """
    N = check_int("N", N, 1)
    d = check_int("d", d, 1)
    var = check_in_range("var", var, 1e-100, 1e100)
    beta = _check_beta(beta)
    p = check_in_range("p", p, 0.0, 1.0, lo_open=True, hi_open=True)
    q = tracy_widom_quantile(p, beta=beta)
    mu, sigma = _johnstone(N, d, beta)
    return math.sqrt(max(var * (mu + q * sigma) / d, 0.0))
