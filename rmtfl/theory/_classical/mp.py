"""Marchenko–Pastur law (docs/theory/two_step.md §1).

Normalisation
-------------
``W`` is ``N x d`` with iid ``N(0, var/d)`` entries and ``ratio = psi = N/d``.
The *eigenvalue* functions describe the law of the ``N`` eigenvalues of
``W W^T`` (``N x N``), atom included:

``rho(dl) = sqrt((l+ - l)(l - l-)) / (2 pi psi var l) dl + (1 - 1/psi)_+ delta_0``,
``l± = var (1 ± sqrt(psi))^2``.

The continuous part has mass ``min(1, 1/psi)``; :func:`mp_density` returns only
the continuous part, :func:`mp_cdf` and :func:`mp_stieltjes` include the atom.
The *singular-value* functions (``mp_sv_*``) describe the ``N`` singular values
of ``W`` (``side="N"``, atom ``(1 - 1/psi)_+``) or its ``d`` singular values
(``side="d"``, continuous part ``psi`` times larger, atom ``(1 - psi)_+``).

The CDF has the closed form (derived here; ``l = m - h cos T``,
``m = var (1 + psi)``, ``h = 2 var sqrt(psi)``):
``F(l) = atom + [h sin T + m T - 2 var |1 - psi| arctan2((1 + sqrt psi)^2 sqrt((l+ - l)(l - l-)), |1 - psi| (l+ - l))] / (2 pi psi var)``.

Examples
--------
>>> [round(x, 10) for x in mp_sv_edges(0.5)]
[0.2928932188, 1.7071067812]
>>> float(mp_moments(3, 2.0)[2])
3.0
>>> round(float(mp_cdf(10.0, 2.0)), 12), round(float(mp_cdf(0.0, 2.0)), 12)
(1.0, 0.5)
"""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from rmtfl._validate import check_choice, check_finite_array, check_int, check_positive

__all__ = [
    "mp_edges",
    "mp_atom",
    "mp_density",
    "mp_cdf",
    "mp_quantile",
    "mp_moment",
    "mp_moments",
    "mp_stieltjes",
    "mp_sv_edges",
    "mp_sv_atom",
    "mp_sv_density",
    "mp_sv_cdf",
]


def _params(ratio, var):
    return check_positive("ratio", ratio), check_positive("var", var)


def _array(name, x):
    arr = check_finite_array(name, x, dtype_kind="f")
    return arr.astype(np.float64, copy=False)


def _out(arr):
    return float(arr) if np.ndim(arr) == 0 else arr


def mp_edges(ratio: float, var: float = 1.0) -> tuple[float, float]:
    """Edges ``(l-, l+) = var (1 ∓ sqrt(ratio))^2`` of the continuous part (eigenvalues of ``W W^T``).

    >>> mp_edges(1.0)
    (0.0, 4.0)
    """
    psi, var = _params(ratio, var)
    r = math.sqrt(psi)
    return var * (1.0 - r) ** 2, var * (1.0 + r) ** 2


def mp_atom(ratio: float) -> float:
    """Mass ``(1 - 1/ratio)_+`` of the atom at 0 of the ``N x N`` eigenvalue law.

    >>> mp_atom(4.0), mp_atom(0.5)
    (0.75, 0.0)
    """
    psi = check_positive("ratio", ratio)
    return max(0.0, 1.0 - 1.0 / psi)


def mp_density(lam, ratio: float, var: float = 1.0):
    """Density of the continuous part of the eigenvalue law of ``W W^T`` (mass ``min(1, 1/ratio)``).

    Zero outside ``[l-, l+]``; the atom at 0 (``ratio > 1``) is not included.

    >>> round(mp_density(1.0, 1.0), 10)  # sqrt(3) / (2 pi)
    0.2756644477
    """
    psi, var = _params(ratio, var)
    x = _array("lam", lam)
    lo, hi = mp_edges(psi, var)
    val = np.asarray((hi - x) * (x - lo))
    inside = val > 0.0  # implies lo < x < hi, hence x > 0
    np.sqrt(val, out=val, where=inside)
    out = np.zeros_like(val)
    np.divide(val, (2.0 * np.pi * psi * var) * x, out=out, where=inside)
    return _out(out)


def _cont_cdf_T(T, psi, var):
    """Continuous mass below ``l(T) = m - h cos T``, ``T`` in ``[0, pi]``."""
    m = var * (1.0 + psi)
    h = 2.0 * var * math.sqrt(psi)
    a = var * abs(1.0 - psi)
    sq = h * np.sin(T)  # = sqrt((l+ - l)(l - l-))
    bminus = h * (1.0 + np.cos(T))  # = l+ - l
    ang = np.arctan2((1.0 + math.sqrt(psi)) ** 2 * var * sq, a * bminus)
    return (h * np.sin(T) + m * T - 2.0 * a * ang) / (2.0 * np.pi * psi * var)


def mp_cdf(lam, ratio: float, var: float = 1.0):
    """Distribution function of the eigenvalues of ``W W^T``, atom included (right-continuous).

    Closed form (module docstring); ``mp_cdf(0) = (1 - 1/ratio)_+``.

    >>> round(mp_cdf(1.0, 1.0), 10)  # 1/3 + sqrt(3)/(2 pi) at psi = 1
    0.6089977810
    """
    psi, var = _params(ratio, var)
    x = _array("lam", lam)
    lo, hi = mp_edges(psi, var)
    m = var * (1.0 + psi)
    h = 2.0 * var * math.sqrt(psi)
    cont_mass = min(1.0, 1.0 / psi)
    T = np.arccos(np.clip((m - np.clip(x, lo, hi)) / h, -1.0, 1.0))
    cont = np.clip(_cont_cdf_T(T, psi, var), 0.0, cont_mass)
    cont = np.where(x >= hi, cont_mass, np.where(x <= lo, 0.0, cont))
    atom = mp_atom(psi)
    return _out(np.where(x >= 0.0, atom + cont, 0.0))


def mp_quantile(p, ratio: float, var: float = 1.0):
    """Generalised inverse ``inf{l : F(l) >= p}`` of :func:`mp_cdf` (0 for ``p <= atom``).

    Vectorised bisection in the angle ``T`` (``F`` is increasing in ``T``), ~1e-15 accuracy.

    >>> round(mp_quantile(0.5, 1.0), 10)
    0.6527759416
    >>> mp_quantile(0.3, 4.0)
    0.0
    """
    psi, var = _params(ratio, var)
    q = _array("p", p)
    if np.any((q < 0) | (q > 1)):
        raise ValueError(f"p must lie in [0, 1], got {p!r}")
    atom = mp_atom(psi)
    target = q - atom
    lo_T = np.zeros_like(q)
    hi_T = np.full_like(q, np.pi)
    for _ in range(60):
        mid = 0.5 * (lo_T + hi_T)
        below = _cont_cdf_T(mid, psi, var) < target
        lo_T = np.where(below, mid, lo_T)
        hi_T = np.where(below, hi_T, mid)
    m = var * (1.0 + psi)
    h = 2.0 * var * math.sqrt(psi)
    lam = m - h * np.cos(hi_T)
    return _out(np.where(target <= 0.0, 0.0, lam))


def mp_moment(k: int, ratio, var=1.0, *, exact: bool = False):
    """``E[l^k]`` under the eigenvalue law (atom contributes nothing for ``k >= 1``; ``k = 0`` gives 1).

    ``var^k sum_{r=0}^{k-1} psi^r/(r+1) C(k, r) C(k-1, r)`` (Narayana polynomial).
    With ``exact=True`` a :class:`fractions.Fraction` (inputs taken as exact rationals).

    >>> mp_moment(3, 0.5)
    2.75
    >>> mp_moment(2, Fraction(1, 3), exact=True)
    Fraction(4, 3)
    """
    k = check_int("k", k, 0)
    if exact:
        _params(ratio, var)  # range checks
        psi, v = Fraction(ratio), Fraction(var)  # floats convert exactly (binary value)
    else:
        psi, v = _params(ratio, var)
    if k == 0:
        return Fraction(1) if exact else 1.0
    tot = sum(psi**r * Fraction(math.comb(k, r) * math.comb(k - 1, r), r + 1) for r in range(k)) if exact else \
        sum(psi**r * math.comb(k, r) * math.comb(k - 1, r) / (r + 1) for r in range(k))
    return tot * v**k


def mp_moments(kmax: int, ratio: float, var: float = 1.0) -> np.ndarray:
    """Array ``[E l^0, ..., E l^kmax]`` of the eigenvalue law of ``W W^T`` (``E l^0 = 1``, atom included).

    >>> mp_moments(3, 1.0).tolist()
    [1.0, 1.0, 2.0, 5.0]
    """
    kmax = check_int("kmax", kmax, 0)
    psi, var = _params(ratio, var)
    return np.array([mp_moment(k, psi, var) for k in range(kmax + 1)], dtype=float)


def mp_stieltjes(w, ratio: float, var: float = 1.0):
    """Stieltjes transform ``g(w) = int rho(dl) / (w - l)`` (atom included), complex.

    ``g(w) = (w - var (1 - psi) - sqrt(w - l-) sqrt(w - l+)) / (2 psi var w)`` with
    principal square roots (docs/theory/two_step.md §1.1 branch rule), valid off the support;
    ``g(w) ~ 1/w`` at infinity.  Returns complex values.

    >>> complex(mp_stieltjes(5.0, 1.0)).real.__round__(10)  # (5 - sqrt(5)) / 10
    0.2763932023
    """
    psi, var = _params(ratio, var)
    z = np.asarray(w, dtype=complex)
    if not np.all(np.isfinite(z)):
        raise ValueError("w must contain only finite values")
    lo, hi = mp_edges(psi, var)
    with np.errstate(divide="ignore", invalid="ignore"):
        g = (z - var * (1.0 - psi) - np.sqrt(z - lo) * np.sqrt(z - hi)) / (2.0 * psi * var * z)
    return complex(g) if g.ndim == 0 else g


def mp_sv_edges(ratio: float, var: float = 1.0) -> tuple[float, float]:
    """Edges ``sqrt(var) (|1 - sqrt(ratio)|, 1 + sqrt(ratio))`` of the nonzero singular values of ``W``.

    >>> [round(x, 10) for x in mp_sv_edges(2.0)]
    [0.4142135624, 2.4142135624]
    """
    psi, var = _params(ratio, var)
    r = math.sqrt(psi)
    return math.sqrt(var) * abs(1.0 - r), math.sqrt(var) * (1.0 + r)


def mp_sv_atom(ratio: float, side: str = "N") -> float:
    """Atom at 0 of the singular-value law: ``(1 - 1/ratio)_+`` (``side="N"``) or ``(1 - ratio)_+`` (``"d"``).

    >>> mp_sv_atom(2.0, "N"), mp_sv_atom(0.25, "d")
    (0.5, 0.75)
    """
    psi = check_positive("ratio", ratio)
    check_choice("side", side, ("N", "d"))
    return max(0.0, 1.0 - 1.0 / psi) if side == "N" else max(0.0, 1.0 - psi)


def mp_sv_density(s, ratio: float, var: float = 1.0, side: str = "N"):
    """Density of the continuous part of the singular-value law of ``W``: ``2 s rho(s^2)``.

    ``side="N"``: law of the ``N`` singular values (mass ``min(1, 1/psi)``);
    ``side="d"``: law of the ``d`` singular values (``psi`` times the N-side density,
    mass ``min(1, psi)``).  For the law of the ``min(N, d)`` nonzero values multiply
    the N-side density by ``max(1, psi)``.

    >>> round(mp_sv_density(1.0, 1.0), 10)  # 2 * sqrt(3) / (2 pi)
    0.5513288954
    """
    check_choice("side", side, ("N", "d"))
    psi, var = _params(ratio, var)
    x = _array("s", s)
    dens = 2.0 * x * np.asarray(mp_density(x * x, psi, var))
    dens = np.where(x > 0, dens, 0.0)
    return _out(dens * (psi if side == "d" else 1.0))


def mp_sv_cdf(s, ratio: float, var: float = 1.0, side: str = "N"):
    """Distribution function of the singular-value law (atom included), ``side`` as in :func:`mp_sv_density`.

    >>> round(mp_sv_cdf(0.0, 0.25, side="d"), 12)
    0.75
    """
    check_choice("side", side, ("N", "d"))
    psi, var = _params(ratio, var)
    x = _array("s", s)
    FN = np.asarray(mp_cdf(np.where(x >= 0, x * x, -1.0), psi, var))
    if side == "N":
        return _out(FN)
    cont = FN - mp_atom(psi) * (x >= 0)
    return _out(np.where(x >= 0, mp_sv_atom(psi, "d") + psi * cont, 0.0))

