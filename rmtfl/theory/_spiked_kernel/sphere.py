"""Spherical-harmonic spectra of random-features kernels (docs/theory/spiked_kernel.md §4–§5.1).

Normalisation: eigenvalues are taken w.r.t. the **uniform probability measure**
on the unit sphere ``S^{d-1}`` (docs/conventions.md §8), for the kernel
``k_I(x, x') = E_{w ~ N(0, I_d)}[sigma(<w,x>) sigma(<w,x'>)]``, which on the unit
sphere is the dot-product kernel ``kappa_sigma(<x, x'>)`` (the dual activation).
Degree-``k`` harmonics form an eigenspace of dimension ``N(d, k)``
(:func:`harmonic_multiplicity`) with eigenvalue ``mu_k`` (Funk–Hecke).

Gaussian inputs ``x ~ N(0, I_d)``: for ``p``-homogeneous ``sigma`` each sphere
eigenpair ``(mu, Y)`` gives the Gaussian eigenpair ``(m_{2p} mu, |x|^p Y(x/|x|))``
with ``m_{2p} = 2^p Gamma(d/2 + p)/Gamma(d/2)`` (``= d`` for relu, ``1`` for step);
since ``k_0 = k_{I/d} = d^{-p} k_I``, the Gaussian eigenvalues of ``k_0`` are
``m_{2p} d^{-p} mu_k`` (for relu exactly ``mu_k``).

Examples
--------
>>> sp = sphere_eigenvalues("relu", d=3, kmax=4)
>>> [round(float(m), 10) for m in sp.mu]
[0.1875, 0.0833333333, 0.01171875, 0.0, 0.0003255208]
>>> harmonic_multiplicity(10, 2)
54
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

import numpy as np
from scipy import special

from rmtfl._results import Result
from rmtfl._validate import check_array, check_choice, check_int, check_nonnegative
from .._classical.activations import Activation, get_activation
from .._classical.hermite import KMAX_LIMIT, gauss_hermite_rule, hermite_coeffs
from .rf_kernel import kernel_from_scalars
from .sphere_closed_forms import gaussian_moment_factor, monomial_sphere_eigen, relu_legendre, step_legendre

#: Largest degree of :func:`gegenbauer_P`, :func:`zonal_harmonic` and :func:`funk_hecke` (docs/reliability.md §1).
DEGREE_LIMIT = 10_000
#: Largest Gauss–Jacobi quadrature order (:func:`jacobi_rule`; about 4 s at the limit).
ORDER_LIMIT = 10_000

__all__ = ["DEGREE_LIMIT", "ORDER_LIMIT", "SphereSpectrum", "LinearSector", "QuadratureRule", "harmonic_multiplicity", "gegenbauer_P",
           "zonal_harmonic", "jacobi_rule", "funk_hecke", "monomial_sphere_eigen", "relu_legendre", "step_legendre",
           "sphere_eigenvalues", "gaussian_moment_factor", "linear_sector"]


def harmonic_multiplicity(d: int, k: int) -> int:
    """``N(d, k)``: dimension of degree-``k`` spherical harmonics on ``S^{d-1}`` (exact integer).

    ``N(d, k) = C(k+d-1, k) - C(k+d-3, k-2)``; ``N(d, 1) = d``, ``N(d, 2) = (d+2)(d-1)/2``
    (docs/theory/spiked_kernel.md §4.1).

    Examples
    --------
    >>> harmonic_multiplicity(100, 2), harmonic_multiplicity(2, 7)
    (5049, 2)
    """
    d = check_int("d", d, lo=2)
    k = check_int("k", k, lo=0)
    if k == 0:
        return 1
    return math.comb(k + d - 1, k) - (math.comb(k + d - 3, k - 2) if k >= 2 else 0)


def gegenbauer_P(k: int, d: int, t):
    """Normalised Gegenbauer polynomial ``P_k^{(d)}(t)`` with ``P(1) = 1`` (three-term recurrence).

    ``P_k = [(2k + d - 4) t P_{k-1} - (k - 1) P_{k-2}] / (k + d - 3)``; Legendre for ``d = 3``,
    Chebyshev ``T_k`` for ``d = 2`` (docs/theory/spiked_kernel.md §4.1).

    Examples
    --------
    >>> float(gegenbauer_P(2, 3, 0.5))   # (3 t^2 - 1)/2
    -0.125

    ``0 <= k <= DEGREE_LIMIT`` (10,000); ``t`` finite real; a value that overflows a double is
    refused (docs/reliability.md §2).
    """
    d = check_int("d", d, lo=2)
    k = check_int("k", k, lo=0, hi=DEGREE_LIMIT)
    t = check_array("t", t)
    return _gegenbauer(k, d, t, "t")


def _gegenbauer(k, d, t, tname):
    p0, p1 = np.ones_like(t), t.copy()
    if k == 0:
        return p0
    with np.errstate(over="ignore", invalid="ignore"):
        for j in range(2, k + 1):
            p0, p1 = p1, ((2 * j + d - 4) * t * p1 - (j - 1) * p0) / (j + d - 3)
    if not np.all(np.isfinite(p1)):
        raise ValueError(f"{tname} is too large: P_k(t) overflows a double (|t| <= 1 on the sphere)")
    return p1


def zonal_harmonic(ell: int, d: int, u):
    """``Y_ell(u) = sqrt(N(d, ell)) P_ell^{(d)}(u)``, unit norm in ``L^2`` of the sphere's probability measure.

    Normalisation: docs/conventions.md §8 (uniform probability measure on ``S^{d-1}``), ``u = <v, x>``.

    Examples
    --------
    >>> round(float(zonal_harmonic(2, 10, 0.0)), 10)   # (d u^2 - 1)/sqrt(2(d-1)/(d+2)) at u = 0
    -0.8164965809

    ``0 <= ell <= DEGREE_LIMIT`` (10,000); ``u`` finite real.
    """
    d = check_int("d", d, lo=2)
    ell = check_int("ell", ell, lo=0, hi=DEGREE_LIMIT)
    u = check_array("u", u)
    try:
        norm = math.sqrt(harmonic_multiplicity(d, ell))
    except OverflowError:
        raise ValueError(f"d and ell are too large: N(d, ell) overflows a double (d={d}, ell={ell})") from None
    out = norm * _gegenbauer(ell, d, u, "u")
    if not np.all(np.isfinite(out)):
        raise ValueError("u is too large: Y_ell(u) overflows a double (|u| <= 1 on the sphere)")
    return out


@dataclass(frozen=True)
class QuadratureRule(Result):
    """Quadrature ``nodes`` and ``weights`` (summing to 1, a probability measure: docs/conventions.md §8);
    unpacks as ``t, w = rule``."""

    nodes: np.ndarray
    weights: np.ndarray

    def __iter__(self):
        return iter((self.nodes, self.weights))


@functools.lru_cache(maxsize=64)
def jacobi_rule(order: int, alpha: float) -> QuadratureRule:
    """Gauss–Jacobi nodes/weights for the weight ``(1 - t^2)^alpha`` on ``[-1, 1]``, weights summing to 1.

    With ``alpha = (d-3)/2`` this is the law of one coordinate ``u = <v, x>`` of ``x`` uniform on the
    unit sphere ``S^{d-1}`` (probability measure, docs/conventions.md §8).

    Examples
    --------
    >>> t, w = jacobi_rule(4, 0.0)        # Gauss-Legendre, weights normalised
    >>> round(float(w.sum()), 12), round(float(w @ t**2), 12)   # E u^2 = 1/3 for d = 3
    (1.0, 0.333333333333)
    """
    order = check_int("order", order, lo=1, hi=ORDER_LIMIT)
    t, w = special.roots_jacobi(order, float(alpha), float(alpha))
    w = w / w.sum()
    if not (np.all(np.isfinite(t)) and np.all(np.isfinite(w))):
        raise ValueError(f"the Gauss-Jacobi rule of order {order} with alpha={alpha} is not finite "
                         "(d too large)")
    t.setflags(write=False)
    w.setflags(write=False)
    return QuadratureRule(t, w)


def funk_hecke(kappa, k: int, d: int, *, order: int = 400):
    """Funk–Hecke eigenvalue ``mu_k[kappa]`` of the dot-product kernel ``kappa(<x, x'>)`` on ``S^{d-1}``.

    Gauss–Jacobi quadrature of ``kappa(t) P_k(t)`` against the normalised weight
    ``(1 - t^2)^{(d-3)/2}`` (absolute error ~ machine epsilon times ``max |kappa|``
    for analytic ``kappa``).  Eigenvalues w.r.t. the uniform probability measure on ``S^{d-1}``
    (docs/conventions.md §8; docs/theory/spiked_kernel.md §4.1).

    Examples
    --------
    >>> round(funk_hecke(lambda t: t, 1, 10), 12)   # mu_1[t] = 1/d
    0.1

    ``kappa`` is a callable ``[-1, 1] -> R`` (vectorised); ``0 <= k <= DEGREE_LIMIT`` (10,000),
    ``1 <= order <= ORDER_LIMIT`` (10,000).
    """
    if not callable(kappa):
        raise TypeError(f"kappa must be a callable t -> kappa(t), got {kappa!r}")
    k = check_int("k", k, lo=0, hi=DEGREE_LIMIT)
    d = check_int("d", d, lo=2)
    order = check_int("order", order, lo=1, hi=ORDER_LIMIT)
    try:
        t, w = jacobi_rule(order, (d - 3) / 2)
    except ValueError as exc:
        raise ValueError(f"d is too large for the quadrature: {exc}") from None
    vals = check_array("kappa(t)", kappa(t))
    if vals.shape != t.shape:
        raise ValueError(f"kappa must return one value per node: got shape {vals.shape} for {t.shape}")
    with np.errstate(over="ignore", invalid="ignore"):
        out = float(w @ (vals * _gegenbauer(k, d, t, "t")))
    if not math.isfinite(out):
        raise ValueError(f"kappa is too large: the Funk-Hecke integral overflows (d={d}, k={k})")
    return out


@dataclass(frozen=True)
class SphereSpectrum(Result):
    """Funk–Hecke spectrum of ``k_I`` on ``S^{d-1}`` (uniform probability measure, docs/conventions.md §8).

    Attributes
    ----------
    mu : ndarray
        ``mu_k``, ``k = 0..kmax`` (unit sphere, probability measure).
    multiplicity : tuple of int
        ``N(d, k)``.
    legendre : ndarray or None
        ``lambda_k`` for homogeneous sigma (``mu_k = m_{2p} lambda_k^2``).
    gaussian_factor : float or None
        ``m_{2p}``: Gaussian-input eigenvalue of ``k_I`` = ``m_{2p} mu_k`` (``d`` for relu).
    gaussian : ndarray or None
        ``m_{2p} mu_k``, Gaussian-input eigenvalues of ``k_I``.
    gaussian_k0 : ndarray or None
        ``m_{2p} d^{-p} mu_k``, Gaussian-input eigenvalues of ``k_0 = k_{I/d}`` (relu: ``= mu_k``).
    high_d : ndarray
        ``k! c_k^2 / d^k``, the ``d -> inf`` approximation of ``mu_k`` (docs/theory/spiked_kernel.md §4.6).
    method : str
        ``"closed form"``, ``"hermite series"`` (polynomials) or ``"quadrature"``.
    error : float
        Absolute accuracy estimate (difference of two quadrature orders; 0 for exact forms).
    """

    activation: str
    d: int
    mu: np.ndarray = field(repr=False)
    multiplicity: tuple = field(repr=False)
    legendre: np.ndarray | None = field(repr=False)
    gaussian_factor: float | None
    gaussian: np.ndarray | None = field(repr=False)
    gaussian_k0: np.ndarray | None = field(repr=False)
    high_d: np.ndarray = field(repr=False)
    method: str = ""
    error: float = 0.0

    @property
    def k(self) -> np.ndarray:
        return np.arange(len(self.mu))

    def trace(self) -> float:
        """``sum_k N(d, k) mu_k`` (tends to ``kappa(1)`` from below as ``kmax`` grows)."""
        return float(sum(n * m for n, m in zip(self.multiplicity, self.mu)))


def sphere_eigenvalues(activation, *, d: int, kmax: int, order: int | None = None) -> SphereSpectrum:
    """Eigenvalues ``mu_0..mu_kmax`` of ``k_I`` on ``S^{d-1}`` under the uniform probability measure.

    Normalisation: ``k_I`` with no prefactor (docs/conventions.md §7), eigenvalues w.r.t. the
    uniform probability measure on the unit sphere (docs/conventions.md §8); Gaussian-input
    eigenvalues are in ``.gaussian`` / ``.gaussian_k0`` (docs/theory/spiked_kernel.md §4.7).
    Closed forms (log-gamma) for relu and step (docs/theory/spiked_kernel.md §4.4); the finite
    Hermite series ``sum_j c_j^2 mu_k[t^j]`` (all terms positive) for polynomial ``sigma``;
    otherwise Gauss–Jacobi quadrature of the dual activation against ``P_k^{(d)}`` (two orders,
    the difference reported as ``error``).

    Parameters
    ----------
    activation : str, callable or Activation
        The activation ``sigma``.
    d : int
        Input dimension, ``>= 2``.
    kmax : int
        Largest degree, ``0 <= kmax <= 1000``.
    order : int, optional
        Quadrature order for the general path (default ``max(300, 4 kmax + 200)``;
        at most ``ORDER_LIMIT / 1.5``).

    Returns
    -------
    SphereSpectrum

    Examples
    --------
    >>> sp = sphere_eigenvalues("relu", d=10, kmax=2)
    >>> round(float(sp.mu[0]), 10), float(sp.mu[1]), sp.multiplicity
    (0.1673012117, 0.025, (1, 10, 54))
    >>> float(sphere_eigenvalues("step", d=3, kmax=3).mu[3]) == 1 / 256
    True
    """
    act = get_activation(activation)
    d, kmax = check_int("d", d, lo=2), check_int("kmax", kmax, lo=0, hi=KMAX_LIMIT)
    if order is not None:
        order = check_int("order", order, lo=1, hi=int(ORDER_LIMIT / 1.5))
    ks = range(kmax + 1)
    mult = tuple(harmonic_multiplicity(d, k) for k in ks)
    mu_h = hermite_coeffs(act, kmax) if (act.hermite_exact is not None or act.smooth) else None
    if mu_h is not None:
        high = np.array([m * m / float(d) ** k for k, m in enumerate(mu_h)])  # k! c_k^2 / d^k = mu_k^2 / d^k
    else:
        high = np.full(kmax + 1, np.nan)
    p = act.homogeneity
    legendre, err = None, 0.0
    if act.name == "relu":
        legendre = np.array([relu_legendre(k, d) for k in ks])
        mu, method = d * legendre**2, "closed form"
    elif act.name == "step":
        legendre = np.array([step_legendre(k, d) for k in ks])
        mu, method = legendre**2, "closed form"
    elif act.herme is not None:
        c2 = [mu_h_j**2 / math.factorial(j) for j, mu_h_j in
              enumerate(hermite_coeffs(act, len(act.herme) - 1))]
        mu = np.array([sum(c2[j] * monomial_sphere_eigen(j, k, d) for j in range(len(c2))) for k in ks])
        method = "hermite series"
    else:
        q = order or max(300, 4 * kmax + 200)

        def kappa(t):
            return kernel_from_scalars(act, 1.0, 1.0, t, kmax=80)

        mu = np.array([funk_hecke(kappa, k, d, order=q) for k in ks])
        mu2 = np.array([funk_hecke(kappa, k, d, order=int(1.5 * q)) for k in ks])
        err = float(np.abs(mu - mu2).max())
        method = "quadrature"
        if act.parity:  # odd sigma: only odd degrees; even sigma: only even degrees (exact zeros)
            mu[np.arange(kmax + 1) % 2 == (0 if act.parity == -1 else 1)] = 0.0
    gf = gaussian_moment_factor(d, p) if p is not None else None
    gauss = gf * mu if gf is not None else None
    gauss0 = gauss * d ** (-p) if gf is not None else None
    return SphereSpectrum(act.name, d, mu, mult, legendre, gf, gauss, gauss0, high, method, err)


# --------------------------------------------------------------- linear sector
@dataclass(frozen=True)
class LinearSector(Result):
    """Eigenvalues of the linear functions under ``k_Gamma``, ``Gamma = A I + B v v^T``.

    Eigenvalues w.r.t. the input probability measure ``measure`` (docs/conventions.md §8).

    ``target`` is the eigenvalue of ``<v, x>``, ``orthogonal`` that of ``<u, x>`` with
    ``u ⊥ v``, ``boost = target/orthogonal``.  ``exact`` is True when the linear
    functions are exact eigenfunctions (relu, identity); otherwise the values
    are the Rayleigh quotients (compression of the operator to linear functions).
    """

    target: float
    orthogonal: float
    boost: float
    exact: bool
    measure: str


def linear_sector(activation, *, A: float, B: float, d: int, measure: str = "gaussian") -> LinearSector:
    """Linear-sector eigenvalues of ``k_Gamma``, ``Gamma = A I + B v v^T`` (docs/theory/spiked_kernel.md §5.1, §5.7).

    Normalisation: eigenvalues w.r.t. the input probability measure (docs/conventions.md §8),
    ``x ~ N(0, I_d)`` for ``measure="gaussian"`` or uniform on the unit sphere for ``"sphere"``.

    relu (exact, all orders in ``B``): ``(A + B)/4`` along ``v`` and ``A/4`` orthogonal for
    Gaussian inputs; divide by ``d`` on the unit sphere.  General ``sigma`` (derived
    here): the compression ``M = E_w[m_1(|w|)^2 w w^T]`` with ``m_1(r) = E_g[sigma'(r g)]``
    (Gaussian inputs), and ``d E_w[h(|w|)^2 ŵ ŵ^T]`` with ``h(r) = E_t[sigma(r t) t]``,
    ``t = <e_1, x>`` for ``x`` uniform on the sphere.  For ``sigma`` p-homogeneous,
    ``m_1(r) = mu_1 r^{p-1}``; ``p = 1`` gives back ``Gamma/4`` for relu.

    Parameters
    ----------
    activation : str, callable or Activation
        The activation ``sigma``.
    A, B : float
        Bulk and spike of ``Gamma`` (``0 <= A, B <= 1e100``).
    d : int
        Input dimension, ``>= 2``.
    measure : {"gaussian", "sphere"}
        Input measure.

    Returns
    -------
    LinearSector

    Examples
    --------
    >>> ls = linear_sector("relu", A=0.1, B=0.5, d=10)
    >>> round(ls.target, 12), round(ls.orthogonal, 12), ls.exact
    (0.15, 0.025, True)
    """
    act = get_activation(activation)
    A = check_nonnegative("A", A)
    B = check_nonnegative("B", B)
    for name, val in (("A", A), ("B", B)):
        if val > 1e100:
            raise ValueError(f"{name} must be <= 1e100 (Gamma = A I + B v v^T), got {val!r}")
    d = check_int("d", d, lo=2)
    check_choice("measure", measure, ("gaussian", "sphere"))
    if act.name == "relu" or act.name in ("identity", "linear"):
        f = 0.25 if act.name == "relu" else 1.0
        tgt, orth = f * (A + B), f * A
        if measure == "sphere":
            tgt, orth = tgt / d, orth / d
        return LinearSector(tgt, orth, _boost(tgt, orth, A, B), True, measure)
    # quadrature over g1 ~ N(0,1) (spike coordinate) and R ~ chi^2_{d-1} (orthogonal norm^2)
    g, wg = gauss_hermite_rule(80)
    a_lag = (d - 1) / 2 - 1
    xr, wr = special.roots_genlaguerre(80, a_lag)
    wr = wr / wr.sum()
    R = 2 * xr
    G1, RR = np.meshgrid(g, R, indexing="ij")
    W = np.outer(wg, wr)
    r2 = A * RR + (A + B) * G1**2
    r = np.sqrt(r2)
    if measure == "gaussian":
        m = _m1(act, r)
        tgt = (A + B) * float(np.sum(W * m**2 * G1**2))
        orth = A * float(np.sum(W * m**2 * RR / (d - 1)))
    else:
        h = _h_sphere(act, r, d)
        with np.errstate(invalid="ignore", divide="ignore"):
            q = np.where(r2 > 0, h**2 / r2, 0.0)
        tgt = d * (A + B) * float(np.sum(W * q * G1**2))
        orth = d * A * float(np.sum(W * q * RR / (d - 1)))
    exact = act.homogeneity == 1.0 and act.parity != 1
    if not (math.isfinite(tgt) and math.isfinite(orth)):
        raise ValueError(f"A and B are too large for {act.name}: the linear-sector eigenvalues overflow "
                         f"(A={A!r}, B={B!r})")
    return LinearSector(tgt, orth, _boost(tgt, orth, A, B), bool(exact), measure)


def _boost(tgt, orth, A, B):
    """``target/orthogonal`` (``inf`` when ``orthogonal = 0``); a finite ratio that overflows is refused."""
    if orth <= 0:
        return math.inf
    with np.errstate(over="ignore"):
        r = tgt / orth
    if not math.isfinite(r):
        raise ValueError(f"A and B give a boost B/A beyond the float range (A={A!r}, B={B!r})")
    return r


def _m1(act: Activation, r):
    """``E_g[sigma'(r g)] = E[sigma(r g) g]/r``."""
    if act.homogeneity is not None and act.hermite_exact is not None:
        return float(hermite_coeffs(act, 1)[1]) * r ** (act.homogeneity - 1)
    x, w = gauss_hermite_rule(200)
    vals = np.asarray(act(np.multiply.outer(r, x)), dtype=float) @ (w * x)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(r > 0, vals / r, float(w @ np.asarray(act.derivative(1, 0 * x), dtype=float)))


def _h_sphere(act: Activation, r, d: int):
    """``h(r) = E_t[sigma(r t) t]`` with ``t`` a coordinate of a uniform point on ``S^{d-1}``."""
    t, w = jacobi_rule(400, (d - 3) / 2)
    return np.asarray(act(np.multiply.outer(r, t)), dtype=float) @ (w * t)
