"""Named activations and link functions, with their derivatives.

One :class:`Activation` object carries everything the theory and the numerics
need of a scalar non-linearity ``f``: a vectorised numpy evaluation, its
``k``-th derivative, an mpmath evaluation for high-precision quadrature, and
structural facts (polynomial degree, positive homogeneity, parity).  The same
objects serve as activations ``sigma`` and as target links ``g``.

Names (case-insensitive) understood by :func:`get_activation`:

``identity``/``linear``, ``square`` (``z**2``), ``relu``, ``step``
(Heaviside, ``step(0) = 0``), ``relu^p`` / ``relu<p>`` (``max(z,0)**p``,
integer ``p >= 1``), ``tanh``, ``erf``, ``sigmoid``, ``softplus``, ``gelu``
(``z * Phi(z)``), ``he<k>`` (the raw probabilists' Hermite polynomial
``He_k``), ``he<k>n`` (the normalised ``He_k / sqrt(k!)``), and
``hermite(a0, a1, ...)`` for the polynomial ``sum_k a_k He_k``.

Convention note: coefficients passed to :func:`hermite_polynomial` (and the
``hermite(...)`` name) are the expansion coefficients ``a_k`` of
``f = sum_k a_k He_k``; the Hermite coefficients of docs/conventions.md §2 are then
``mu_k(f) = k! a_k``.  Non-smooth functions (relu, step, relu^p) have their
derivatives taken pointwise (the distributional delta parts are dropped); the
theory uses closed forms for them instead.

Examples
--------
>>> act = get_activation("tanh")
>>> float(act(0.5)), act.parity
(0.46211715726000974, -1)
>>> get_activation("hermite(0, 1, 0.5)").degree
2
"""
from __future__ import annotations

import math
import re
from typing import Callable

import mpmath as mp
import numpy as np
from numpy.polynomial import hermite_e as H
from numpy.polynomial import polynomial as Pn
from scipy import special

from rmtfl._validate import check_array
from .activation_type import Activation, in_pieces

__all__ = ["Activation", "get_activation", "hermite_polynomial", "known_activations", "from_callable", "in_pieces",
           "double_factorial"]

_SQRT2PI = math.sqrt(2.0 * math.pi)

# ----------------------------------------------------------------- polynomials
def _he_value_at_zero(m: int) -> float:
    """He_m(0): 0 for odd m, (-1)^(m/2) (m-1)!! for even m."""
    if m < 0:
        raise ValueError("m must be >= 0")
    if m % 2:
        return 0.0
    return (-1) ** (m // 2) * float(double_factorial(m - 1))


def double_factorial(n: int) -> int:
    """``n!! = n (n-2) (n-4) ...`` (``1`` for ``n <= 0``, so ``(-1)!! = 1``); ``E z^(2p) = (2p-1)!!``.

    Normalisation: the Gaussian moments of docs/conventions.md §2 (``z ~ N(0, 1)``).

    >>> double_factorial(5), double_factorial(6), double_factorial(-1)
    (15, 48, 1)
    """
    return math.prod(range(n, 0, -2)) if n > 0 else 1


def hermite_polynomial(coeffs, *, name: str | None = None) -> Activation:
    """The polynomial ``f = sum_k coeffs[k] * He_k`` as an :class:`Activation`.

    Normalisation: docs/conventions.md §2 (probabilists' ``He_k``).

    Parameters
    ----------
    coeffs : sequence of float
        Expansion coefficients ``a_k`` in the probabilists' Hermite basis.
        The docs/conventions.md Hermite coefficients are ``mu_k = k! * a_k``.
    name : str, optional, keyword-only
        Name of the activation (default ``"hermite(a0, a1, ...)"``).

    Examples
    --------
    >>> f = hermite_polynomial([0, 1, 0.5])   # z + He_2/2
    >>> float(f(2.0))                          # 2 + (4 - 1)/2
    3.5
    """
    c = check_array("coeffs", coeffs, ndim=1, min_size=1)
    if c.size > 1001:
        raise ValueError(f"coeffs: at most 1001 Hermite coefficients (degree 1000), got {c.size}")
    c = np.trim_zeros(c.astype(float), "b")
    if c.size == 0:
        c = np.zeros(1)
    deg = c.size - 1
    odd = np.all(c[0::2] == 0)
    even = np.all(c[1::2] == 0)
    parity = 1 if even else (-1 if odd else 0)
    power = H.herme2poly(c)

    def fn(z):
        return H.hermeval(z, c)

    ders = [c]                      # the derivatives' series, each differentiated once, when first asked for

    def deriv(k, z):
        if k > deg:
            return np.zeros_like(np.asarray(z, dtype=float))
        while len(ders) <= k:
            ders.append(H.hermeder(ders[-1]))
        return H.hermeval(z, ders[k])

    def mp_fn(z):
        return mp.fsum(mp.mpf(float(p)) * z**i for i, p in enumerate(power))

    def exact(k):
        return float(math.factorial(k) * c[k]) if k <= deg else 0.0

    homog = None
    nz = np.nonzero(power)[0]
    if nz.size == 1:
        homog = float(nz[0])
    return Activation(
        name=name or "hermite(" + ", ".join(f"{x:g}" for x in c) + ")",
        fn=fn, deriv=deriv, mp_fn=mp_fn, degree=deg, homogeneity=homog,
        parity=parity, smooth=True, hermite_exact=exact, herme=tuple(float(x) for x in c),
    )


# --------------------------------------------------------------- relu family
def _relu_power(p: int) -> Activation:
    """``max(z, 0)**p``; ``p = 0`` is the step function."""

    def fn(z):
        return np.maximum(z, 0.0) ** p if p else (z > 0) * 1.0

    def deriv(k, z):
        if k > p:
            return np.zeros_like(np.asarray(z, dtype=float))
        return math.perm(p, k) * _relu_power(p - k).fn(z)

    def mp_fn(z):
        return z**p if z > 0 else mp.mpf(0)

    def exact(k):
        # Stein: mu_k = E[f^(k)]; for k <= p it is p!/(p-k)! E[relu^(p-k)],
        # for k > p the (k-p)-th derivative of the step is delta^(k-p-1).
        if k <= p:
            q = p - k
            m_q = 0.5 if q == 0 else 2 ** (q / 2) * math.gamma((q + 1) / 2) / (2 * math.sqrt(math.pi))
            return math.perm(p, k) * m_q
        return math.factorial(p) * _he_value_at_zero(k - p - 1) / _SQRT2PI

    name = {0: "step", 1: "relu"}.get(p, f"relu^{p}")
    return Activation(name=name, fn=fn, deriv=deriv, mp_fn=mp_fn, degree=None,
                      homogeneity=float(p), parity=0, smooth=False, hermite_exact=exact)


# -------------------------------------------------------------- smooth ones
def _poly_chain(p0, chain):
    """Derivative polynomials P_k(t) of f = P_0(t(z)) with t' = chain(t)."""
    polys = [np.asarray(p0, dtype=float)]

    def get(k):
        while len(polys) <= k:
            polys.append(Pn.polymul(Pn.polyder(polys[-1]), chain))
        return polys[k]

    return get


def _polyval(x, c):
    """``Pn.polyval(x, c)`` (Horner, ``c`` ascending): the same products and sums in the same order, in place on one
    array (the derivatives of tanh and sigmoid on the theory's grids: a temporary per step cost as much as ``tanh``)."""
    if not isinstance(x, np.ndarray) or x.ndim == 0 or x.dtype != np.float64:
        return Pn.polyval(x, c)
    out = x * 0
    out += c[-1]
    for a in c[-2::-1]:
        out *= x
        out += a
    return out


def _tanh() -> Activation:
    get = _poly_chain([0.0, 1.0], [1.0, 0.0, -1.0])  # t' = 1 - t^2
    def derivs(ks, z):   # one tanh for every order
        t = np.tanh(z)
        return [_polyval(t, get(k)) for k in ks]

    return Activation("tanh", np.tanh, lambda k, z: _polyval(np.tanh(z), get(k)),
                      mp.tanh, parity=-1, derivs=derivs)


def _sigmoid() -> Activation:
    get = _poly_chain([0.0, 1.0], [0.0, 1.0, -1.0])  # s' = s - s^2
    return Activation("sigmoid", special.expit, lambda k, z: _polyval(special.expit(z), get(k)),
                      lambda z: 1 / (1 + mp.exp(-z)), parity=0)


def _softplus() -> Activation:
    sig = _sigmoid()
    return Activation("softplus", lambda z: np.logaddexp(0.0, z),
                      lambda k, z: sig.derivative(k - 1, z),
                      lambda z: mp.log1p(mp.exp(z)), parity=0)


def _erf() -> Activation:
    def derivs(ks, z):
        # erf^(k)(z) = 2/sqrt(pi) (-1)^(k-1) H_{k-1}(z) exp(-z^2)  (physicists' H): one exponential for every
        # order, H by recurrence H_{m+1} = 2 z H_m - 2 m H_{m-1}; the exponential's steps in place
        z = np.asarray(z, dtype=float)
        e = np.square(z)
        if z.ndim:
            np.negative(e, out=e)
            np.exp(e, out=e)
        else:
            e = np.exp(-e)
        e *= 2 / math.sqrt(math.pi)
        top = max(ks) - 1
        H = [None] * (top + 1)
        if top >= 1:
            H[1] = 2 * z
        if top >= 2:
            H[0] = np.ones_like(z)
            for m in range(1, top):
                H[m + 1] = 2 * z * H[m] - 2 * m * H[m - 1]
        return [e if k == 1 else (-1) ** (k - 1) * H[k - 1] * e for k in ks]

    def deriv(k, z):
        return derivs((k,), z)[0]

    def exact(k):
        # E[exp(-z^2) H_{2j}(z)] = (2j)!/j! (-1/3)^j / sqrt(3)
        if k % 2 == 0:
            return 0.0
        j = (k - 1) // 2
        return 2 / math.sqrt(3 * math.pi) * math.factorial(2 * j) / math.factorial(j) * (-1 / 3) ** j

    def smoothed(ks, a, b):
        # x = a + b xi: E exp(-x^2) = exp(-a^2 / v) / sqrt(v), v = 1 + 2 b^2, and E[x exp(-x^2)] = (a / v) times it
        a = np.asarray(a, dtype=float)
        v = 1.0 + 2.0 * np.square(b)
        e = 2 / math.sqrt(math.pi) * np.exp(-np.square(a) / v) / np.sqrt(v)        # E erf'(x)
        return [e if k == 1 else -2.0 * (a / v) * e for k in ks]                    # erf'' = -2 x erf'

    return Activation("erf", special.erf, deriv, mp.erf, parity=-1, hermite_exact=exact, derivs=derivs,
                      smoothed=smoothed)


def _gelu() -> Activation:
    def derivs(ks, z):
        # (z Phi)' = Phi + z phi; for k >= 2, (z Phi)^(k) = z phi^(k-1) + k phi^(k-2) = (-1)^k phi (He_{k-2} - He_k):
        # one exponential for every order, He by recurrence
        z = np.asarray(z, dtype=float)
        if z.ndim == 0 or max(ks) > 2:
            ph = np.exp(-np.square(z) / 2) / _SQRT2PI
            he = [np.ones_like(z), z]
            for m in range(2, max(ks) + 1):
                he.append(z * he[-1] - (m - 1) * he[-2])
            return [special.ndtr(z) + z * ph if k == 1 else (-1) ** k * ph * (he[k - 2] - he[k]) for k in ks]
        # orders 1 and 2 (the theory's): the same operations in place, 1 - He_2 = 1 - (z z - 1) without He_0
        ph = np.square(z)
        np.negative(ph, out=ph)
        ph /= 2
        np.exp(ph, out=ph)
        ph /= _SQRT2PI
        out = []
        for k in ks:
            if k == 1:
                v = special.ndtr(z)
                v += z * ph if len(ks) > 1 else np.multiply(ph, z, out=ph)     # ph not needed again: its buffer
            else:
                v = z * z
                v -= 1
                np.subtract(1.0, v, out=v)
                np.multiply(ph, v, out=v)
            out.append(v)
        return out

    def deriv(k, z):
        return derivs((k,), z)[0]

    def exact(k):
        # mu_k(z Phi) = E[Phi He_{k+1}] + k E[Phi He_{k-1}]  (z He_k = He_{k+1} + k He_{k-1}),
        # and E[Phi He_m] = E[phi^(m-1)] = He_{m-1}(0) / (2^(m/2) sqrt(2 pi)) by Stein.
        def e_phi_he(m):
            if m == 0:
                return 0.5
            return _he_value_at_zero(m - 1) / (math.sqrt(2) ** m * _SQRT2PI)

        val = e_phi_he(k + 1) + (k * e_phi_he(k - 1) if k >= 1 else 0.0)
        return float(val)

    def smoothed(ks, a, b):
        # x = a + b xi, s^2 = 1 + b^2: E Phi(x) = Phi(a / s); phi(x) times the law of x is E phi(x) = phi(a / s) / s
        # times a Gaussian of mean a / s^2 and variance b^2 / s^2, which gives E[x phi(x)] and E[x^2 phi(x)]
        a = np.asarray(a, dtype=float)
        s2 = 1.0 + np.square(b)
        s = np.sqrt(s2)
        r = a / s
        ph = np.exp(-np.square(r) / 2) / (_SQRT2PI * s)                            # E phi(x)
        m = a / s2
        # gelu' = Phi + x phi; gelu'' = (2 - x^2) phi, and 2 - b^2 / s^2 = 1 + 1 / s^2
        return [special.ndtr(r) + m * ph if k == 1 else ph * (1.0 + 1.0 / s2 - np.square(m)) for k in ks]

    return Activation("gelu", lambda z: z * special.ndtr(z), deriv,
                      lambda z: z * mp.ncdf(z), parity=0, hermite_exact=exact, derivs=derivs, smoothed=smoothed)


def _identity(name="identity") -> Activation:
    return hermite_polynomial([0.0, 1.0], name=name)


def _square() -> Activation:
    return hermite_polynomial([1.0, 0.0, 1.0], name="square")


_FIXED = {
    "identity": _identity,
    "linear": lambda: _identity("linear"),
    "square": _square,
    "relu": lambda: _relu_power(1),
    "step": lambda: _relu_power(0),
    "tanh": _tanh,
    "erf": _erf,
    "sigmoid": _sigmoid,
    "softplus": _softplus,
    "gelu": _gelu,
}


def known_activations() -> list[str]:
    """Names and name patterns accepted by :func:`get_activation` (``he<k>`` as in docs/conventions.md §2).

    >>> "relu" in known_activations()
    True
    """
    return sorted(_FIXED) + ["relu^<p>", "he<k>", "he<k>n", "hermite(a0, a1, ...)"]


def from_callable(f: Callable, *, name: str | None = None, derivatives=None, mp_fn=None) -> Activation:
    """Wrap a user callable ``f`` of one standard-normal argument (docs/conventions.md §2) as an :class:`Activation`.

    ``name``, ``derivatives`` (an optional list ``[f', f'', ...]``) and ``mp_fn`` are keyword-only.

    >>> act = from_callable(np.sin, derivatives=[np.cos])
    >>> act.name, float(act.derivative(1, 0.0))
    ('sin', 1.0)
    """
    if not callable(f):
        raise ValueError(f"activation must be a name or a callable, got {f!r}")
    ders = list(derivatives or [])

    def deriv(k, z):
        if k - 1 < len(ders):
            return ders[k - 1](z)
        raise ValueError(f"derivative of order {k} of {name or f!r} not supplied")

    return Activation(name=name or getattr(f, "__name__", "callable"), fn=f,
                      deriv=deriv if ders else None, mp_fn=mp_fn)


def get_activation(spec) -> Activation:
    """Resolve a name, callable or :class:`Activation` to an :class:`Activation` (an object is returned as is).

    The one place where names are resolved: public functions call it once at their boundary and
    pass the object inward.  Hermite conventions of the names: docs/conventions.md §2.

    >>> act = get_activation("relu")
    >>> get_activation(act) is act, act.homogeneity
    (True, 1.0)

    Raises
    ------
    ValueError
        For an unknown name; the message lists the known ones.
    """
    if isinstance(spec, Activation):
        return spec
    if callable(spec):
        return from_callable(spec)
    if not isinstance(spec, str):
        raise ValueError(f"activation must be a name, a callable or an Activation, got {spec!r}")
    key = spec.strip().lower().replace(" ", "")
    if key in _FIXED:
        return _FIXED[key]()
    m = re.fullmatch(r"relu\^?(\d+)", key)
    if m:
        return _relu_power(int(m.group(1)))
    m = re.fullmatch(r"he(\d+)(n?)", key)
    if m:
        k = int(m.group(1))
        c = np.zeros(k + 1)
        c[k] = 1.0 / math.sqrt(math.factorial(k)) if m.group(2) else 1.0
        return hermite_polynomial(c, name=key)
    m = re.fullmatch(r"hermite\(([^)]*)\)", key)
    if m:
        try:
            coeffs = [float(x) for x in m.group(1).split(",") if x]
        except ValueError:
            raise ValueError(f"cannot parse Hermite coefficients in {spec!r}") from None
        return hermite_polynomial(coeffs)
    raise ValueError(f"unknown activation {spec!r}; known: {', '.join(known_activations())}")
