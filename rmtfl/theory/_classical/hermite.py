"""Hermite coefficients and Gaussian moments (docs/conventions.md §2).

Conventions
-----------
``He_k`` are the probabilists' Hermite polynomials, ``E[He_j He_k] = k! δ_jk``
for ``z ~ N(0, 1)``.  The Hermite coefficient is ``mu_k(f) = E[f(z) He_k(z)]``
and the normalised one ``c_k(f) = mu_k / sqrt(k!)``, so that
``f = sum_k mu_k/k! He_k`` and ``E f^2 = sum_k c_k^2``.  BES+22's "mu_2" is
:func:`nonlinear_norm`, not ``mu_2`` (see the pitfall table of docs/conventions.md §2.1).

Exact closed forms are used where they exist (polynomials, relu, relu^p, step,
erf, gelu); Gauss–Hermite quadrature otherwise.  Pass ``dps=`` for an mpmath
path at that many decimal digits (tanh-sinh quadrature split at 0).

Signatures: the activation (a name, callable or :class:`~rmtfl.theory.Activation`, resolved
once by :func:`~rmtfl.theory.get_activation` at the public boundary; the private helpers
take the object) and the index of the coefficient or moment (``k``, ``kmax``, ``j, m``) or
the argument ``t`` are positional; options (``dps``, ``order``, ``tol``, ``s``, ``s2``) are
keyword-only.

Examples
--------
>>> import numpy as np
>>> [round(float(m), 10) for m in hermite_coeffs("relu", 4)]
[0.3989422804, 0.5, 0.3989422804, 0.0, -0.3989422804]
>>> round(nonlinear_norm("relu"), 10)
0.3014051375
"""
from __future__ import annotations

import functools
import math

import mpmath as mp
import numpy as np
from numpy.polynomial import hermite_e as H
from scipy import special

from rmtfl._validate import check_int, check_memory, check_no_overflow, check_points, check_real, check_tol
from .activations import Activation, double_factorial, from_callable, get_activation

__all__ = [
    "hermite_he",
    "hermite_coeffs",
    "hermite_coeff",
    "hermite_coeff_normalised",
    "nonlinear_norm",
    "information_exponent",
    "gaussian_moment",
    "stein_moment",
    "dual_activation",
    "gauss_hermite_rule",
]

#: Default Gauss–Hermite order; exact for polynomials of degree < 2 * order.
GH_ORDER = 500


@functools.lru_cache(maxsize=16)
def gauss_hermite_rule(order: int = GH_ORDER):
    """Nodes and weights for ``E[f(z)]``, ``z ~ N(0, 1)`` (weights sum to one; docs/conventions.md §2)."""
    x, w = special.roots_hermitenorm(order)
    return x, w / math.sqrt(2 * math.pi)


def hermite_he(k: int, z):
    """Probabilists' Hermite polynomial ``He_k(z)`` (vectorised; mpmath scalars too; docs/conventions.md §2).

    >>> float(hermite_he(3, 2.0))   # 8 - 6
    2.0
    """
    k = check_int("k", k, lo=0, hi=KMAX_LIMIT)
    if isinstance(z, (mp.mpf, mp.mpc)):
        a, b = mp.mpf(1), z
        if k == 0:
            return a
        for j in range(1, k):
            a, b = b, z * b - j * a
        return b
    z = check_points("z", z)  # elementwise: NaN in, NaN out; inf refused
    with np.errstate(over="ignore", invalid="ignore"):
        out = special.eval_hermitenorm(k, z)
    return check_no_overflow("z", out, z)  # |z| ~ 1e300 ** (1/k) and beyond: refused, not inf


def _mp_expect(fun, dps):
    with mp.workdps(dps + 10):
        val = mp.quad(lambda z: fun(z) * mp.npdf(z), [-mp.inf, 0, mp.inf])
    return val


def hermite_coeffs(activation, kmax: int, *, dps: int | None = None, order: int = GH_ORDER) -> np.ndarray:
    """``mu_k = E[sigma(z) He_k(z)]`` for ``k = 0..kmax`` as a float array.

    Parameters
    ----------
    activation : str, callable or Activation
        See :func:`rmtfl.theory.get_activation`.
    kmax : int
        Largest degree, ``kmax >= 0``.
    dps : int, optional
        If given, compute by mpmath quadrature at ``dps`` digits (closed forms
        are still used where they exist) and return the values rounded to float.
    order : int
        Gauss–Hermite order for the float path.

    Notes
    -----
    Normalisation: unnormalised ``mu_k`` (docs/conventions.md §2), ``c_k = mu_k/sqrt(k!)``.
    """
    dps = None if dps is None else check_int("dps", dps, 5, 10000)
    kmax, order = _check_kmax_order(kmax, order)
    return _coeffs(get_activation(activation), kmax, dps, order)


#: Largest Hermite degree accepted: ``He_k`` and ``mu_k ~ sqrt(k!)`` overflow float64 well before this.
KMAX_LIMIT = 1000
#: Largest Gauss-Hermite order accepted (the rule costs O(order^2) to build).
ORDER_LIMIT = 20000


def _check_kmax_order(kmax, order, kname="kmax"):
    kmax = check_int(kname, kmax, lo=0, hi=KMAX_LIMIT)
    order = check_int("order", order, 1, ORDER_LIMIT)
    check_memory(f"{kname}, order", 8.0 * order * (kmax + 1), "the Hermite Vandermonde matrix")
    return kmax, order


def _coeffs(act: Activation, kmax: int, dps: int | None = None, order: int = GH_ORDER) -> np.ndarray:
    """:func:`hermite_coeffs` of a resolved :class:`Activation`."""
    if act.hermite_exact is not None:
        return np.array([act.hermite_exact(k) for k in range(kmax + 1)], dtype=float)
    if dps is not None:
        return np.array([float(v) for v in _coeffs_mp(act, kmax, dps)])
    if not act.smooth:
        raise ValueError(f"activation {act.name!r} is not smooth and has no closed form; pass dps=")
    x, w = gauss_hermite_rule(order)
    fx = np.asarray(act(x), dtype=float)
    with np.errstate(over="ignore", invalid="ignore"):
        he = H.hermevander(x, kmax)  # (order, kmax+1)
        mu = (w * fx) @ he
    if not np.all(np.isfinite(mu)):
        raise ValueError(f"kmax={kmax} too large for the Gauss-Hermite rule of order {order}: He_k overflows "
                         "float64 at the outer nodes (use dps= for high degrees, or a smaller kmax)")
    return mu


def hermite_coeffs_mp(activation, kmax: int, *, dps: int = 30) -> list:
    """The mpmath path of :func:`hermite_coeffs`: a list of ``mpf`` ``mu_k`` at ``dps`` digits.

    Normalisation: docs/conventions.md §2.

    ``dps`` keyword-only.

    >>> [float(v) for v in hermite_coeffs_mp("he2", 2, dps=20)]
    [0.0, 0.0, 2.0]
    """
    return _coeffs_mp(get_activation(activation), check_int("kmax", kmax, lo=0, hi=KMAX_LIMIT),
                      check_int("dps", dps, 5, 10000))


def _coeffs_mp(act: Activation, kmax: int, dps: int) -> list:
    if act.herme is not None:
        return [mp.mpf(math.factorial(k)) * mp.mpf(act.herme[k]) if k < len(act.herme) else mp.mpf(0)
                for k in range(kmax + 1)]
    if act.mp_fn is None:
        raise ValueError(f"activation {act.name!r} has no mpmath evaluation (mp_fn)")
    return [_mp_expect(lambda z, k=k: act.mp_fn(z) * hermite_he(k, z), dps) for k in range(kmax + 1)]


def hermite_coeff(activation, k: int, *, dps: int | None = None, order: int = GH_ORDER) -> float:
    """Single coefficient ``mu_k = E[sigma(z) He_k(z)]`` (docs/conventions.md §2).

    Options (keyword-only) as in :func:`hermite_coeffs`.

    >>> hermite_coeff("relu", 1)
    0.5
    """
    k, order = _check_kmax_order(k, order, "k")
    dps = None if dps is None else check_int("dps", dps, 5, 10000)
    return float(_coeffs(get_activation(activation), k, dps, order)[k])


def hermite_coeff_normalised(activation, k: int, *, dps: int | None = None, order: int = GH_ORDER) -> float:
    """``c_k = mu_k / sqrt(k!)`` (docs/conventions.md §2); options as in :func:`hermite_coeffs`.

    >>> round(hermite_coeff_normalised("relu", 2), 10)
    0.2820947918
    """
    return hermite_coeff(activation, k, dps=dps, order=order) / math.sqrt(math.factorial(k))


def _second_moment(act: Activation) -> float:
    if act.name == "relu":
        return 0.5
    if act.herme is not None:
        return float(sum(math.factorial(k) * a * a for k, a in enumerate(act.herme)))
    if act.homogeneity is not None and not act.smooth:  # relu^p, step: E relu^(2p) = E z^(2p)/2
        p = int(act.homogeneity)
        return double_factorial(2 * p - 1) / 2 if p else 0.5
    x, w = gauss_hermite_rule(GH_ORDER)
    return float(w @ np.asarray(act(x), dtype=float) ** 2)



def nonlinear_norm(activation) -> float:
    """``mu_{>1} = (E f^2 - mu_0^2 - mu_1^2)^{1/2}``: BES+22's "mu_2" (docs/conventions.md §2.1).

    >>> round(nonlinear_norm("he2"), 12)     # E He_2^2 = 2
    1.414213562373
    """
    act = get_activation(activation)
    mu = _coeffs(act, 1)
    val = _second_moment(act) - mu[0] ** 2 - mu[1] ** 2
    return math.sqrt(max(val, 0.0))


def information_exponent(activation, *, kmax: int = 12, tol: float = 1e-12) -> float:
    """Smallest ``k >= 1`` with ``mu_k != 0`` (``inf`` if none up to ``kmax``); ``mu_k`` of docs/conventions.md §2.

    ``kmax`` and ``tol`` (relative to ``sqrt(k!)`` times the largest ``|mu_k|``) are keyword-only.

    >>> information_exponent("he3")
    3
    """
    kmax = check_int("kmax", kmax, lo=1, hi=KMAX_LIMIT)
    tol = check_tol("tol", tol)
    mu = _coeffs(get_activation(activation), kmax)
    scale = max(1.0, float(np.max(np.abs(mu))))
    for k in range(1, kmax + 1):
        if abs(mu[k]) > tol * scale * math.exp(0.5 * math.lgamma(k + 1)):
            return k
    return math.inf


def gaussian_moment(activation, j: int, power: int, *, dps: int | None = None, order: int = GH_ORDER) -> float:
    """``E[sigma^(j)(z) sigma'(z)^power]`` for ``z ~ N(0, 1)`` (the Stein moments of docs/theory/two_step.md §5.3).

    ``j`` (derivative order) and ``power`` positional, ``dps`` and ``order`` keyword-only.
    With ``power = 0`` this is ``mu_j`` (docs/conventions.md §2) by Stein's identity (closed forms used).
    For non-smooth activations with ``power >= 1`` only ``j <= 1`` is defined.

    >>> round(gaussian_moment("hermite(0, 1, 0.5)", 2, 1), 12)   # sigma'' = 1, sigma' = 1 + z
    1.0
    """
    act = get_activation(activation)
    j, order = _check_kmax_order(j, order, "j")
    m = check_int("power", power, lo=0, hi=KMAX_LIMIT)
    dps = None if dps is None else check_int("dps", dps, 5, 10000)
    if m == 0:
        return float(_coeffs(act, j, dps, order)[j])
    if not act.smooth and j >= 2:
        raise ValueError(
            f"E[sigma^({j}) sigma'^{m}] involves a delta function times a jump for {act.name!r}; "
            "it is not defined (use a smooth activation)"
        )
    if dps is not None:
        if act.mp_fn is None:
            raise ValueError(f"activation {act.name!r} has no mpmath evaluation")
        with mp.workdps(dps + 10):
            f1 = lambda z: mp.diff(act.mp_fn, z, 1)  # noqa: E731
            fj = lambda z: mp.diff(act.mp_fn, z, j) if j else act.mp_fn(z)  # noqa: E731
            return float(_mp_expect(lambda z: fj(z) * f1(z) ** m, dps))
    if not act.smooth:  # relu^p family: pointwise derivatives are piecewise polynomial; split at 0
        # Gauss-Hermite converges slowly across a kink: integrate each half line adaptively.
        from scipy import integrate

        def integrand(z):
            return float(act.derivative(j, z) * act.derivative(1, z) ** m) * math.exp(-z * z / 2) / math.sqrt(2 * math.pi)

        val = integrate.quad(integrand, 0, np.inf, epsabs=1e-14, epsrel=1e-13)[0]
        val += integrate.quad(integrand, -np.inf, 0, epsabs=1e-14, epsrel=1e-13)[0]
        return val
    x, w = gauss_hermite_rule(order)
    return float(w @ (np.asarray(act.derivative(j, x), dtype=float) * np.asarray(act.derivative(1, x), dtype=float) ** m))


#: Alias matching docs/conventions.md's name ``stein_moment(f, k, m) = E[f^(k) f'^m]`` (here ``j``, ``power``).
stein_moment = gaussian_moment


def dual_activation(activation, t, *, s: float = 1.0, s2: float = 1.0, kmax: int = 60) -> np.ndarray:
    """``E[sigma(u) sigma(v)]`` for centred Gaussians with variances ``s, s2`` and correlation ``t``.

    Uses Mehler's formula ``sum_k c_k(sigma; s) c_k(sigma; s2) t^k`` truncated at ``kmax``
    (relu has a closed form used instead), with the normalised coefficients ``c_k`` of
    docs/conventions.md §2.  ``t`` may be an array in ``[-1, 1]``; ``s``, ``s2``, ``kmax`` keyword-only.

    >>> round(float(dual_activation("relu", 1.0)), 12)
    0.5
    """
    act = get_activation(activation)
    s = check_real("s", s)
    s2 = check_real("s2", s2)
    if s <= 0:
        raise ValueError(f"s must be > 0, got {s!r}")
    if s2 <= 0:
        raise ValueError(f"s2 must be > 0, got {s2!r}")
    kmax = check_int("kmax", kmax, lo=0, hi=KMAX_LIMIT)
    t = check_points("t", t, -1.0 - 1e-12, 1.0 + 1e-12)  # a correlation; NaN in, NaN out
    t = np.where(np.isnan(t), t, np.clip(t, -1.0, 1.0))
    if act.name == "relu":
        th = np.arccos(t)
        return math.sqrt(s * s2) * (np.sin(th) + (np.pi - th) * t) / (2 * np.pi)
    c1 = _scaled_normalised_coeffs(act, s, kmax)
    c2 = c1 if s2 == s else _scaled_normalised_coeffs(act, s2, kmax)
    return np.polynomial.polynomial.polyval(t, c1 * c2)


def _scaled_normalised_coeffs(act: Activation, s: float, kmax: int) -> np.ndarray:
    if s != 1 and act.homogeneity is not None and act.hermite_exact is not None:
        mu = _coeffs(act, kmax) * s ** (act.homogeneity / 2)
    elif not act.smooth:
        raise ValueError(f"{act.name!r} at variance {s} needs a closed form; not available")
    else:
        scaled = from_callable(lambda z: act(math.sqrt(s) * z), name=f"{act.name}(sqrt({s:g}) z)") if s != 1 else act
        mu = _coeffs(scaled, kmax)
    return mu / np.sqrt(special.factorial(np.arange(kmax + 1)))
