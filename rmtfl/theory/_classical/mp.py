"""Marchenko–Pastur law (docs/theory/two_step.md §1, docs/theory/classical.md §1).

Normalisation
-------------
``W`` is ``N x d`` with iid ``N(0, var/d)`` entries and ``psi = N/d``.
The *eigenvalue* functions describe the law of the ``N`` eigenvalues of
``W W^T`` (``N x N``), atom included:

``rho(dl) = sqrt((l+ - l)(l - l-)) / (2 pi psi var l) dl + (1 - 1/psi)_+ delta_0``,
``l± = var (1 ± sqrt(psi))^2``.

The continuous part has mass ``min(1, 1/psi)``; :func:`mp_density` returns only
the continuous part, :func:`mp_cdf` and :func:`mp_stieltjes` include the atom.
The *singular-value* functions (``mp_sv_*``) describe the ``N`` singular values
of ``W`` (``side="N"``, atom ``(1 - 1/psi)_+``) or its ``d`` singular values
(``side="d"``, continuous part ``psi`` times larger, atom ``(1 - psi)_+``).

Signatures: the law's own argument (``lam``, ``s``, ``p``, ``w``, ``k``) and ``psi`` are positional,
every other parameter (``var``, ``side``, ``exact``) is keyword-only.  The edges come back as an
:class:`MPEdges` (``lo, hi = mp_edges(psi)`` unpacks it).

The CDF has the closed form (derived here; ``l = m - h cos T``,
``m = var (1 + psi)``, ``h = 2 var sqrt(psi)``):
``F(l) = atom + [h sin T + m T - 2 var |1 - psi| arctan2((1 + sqrt psi)^2 sqrt((l+ - l)(l - l-)), |1 - psi| (l+ - l))] / (2 pi psi var)``.

Examples
--------
>>> [round(x, 10) for x in mp_sv_edges(0.5)]
[0.2928932188, 1.7071067812]
>>> mp_edges(2.0, var=0.5).upper == 0.5 * (1 + 2.0 ** 0.5) ** 2
True
>>> float(mp_moments(3, 2.0)[2])
3.0
>>> round(float(mp_cdf(10.0, 2.0)), 12), round(float(mp_cdf(0.0, 2.0)), 12)
(1.0, 0.5)
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from rmtfl._results import Result
from rmtfl._validate import check_choice, check_finite_array, check_in_range, check_int, check_positive

__all__ = [
    "MPEdges",
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


@dataclass(frozen=True)
class MPEdges(Result):
    """Edges ``(lower, upper)`` of the continuous part of a Marchenko–Pastur law.

    Returned by :func:`mp_edges` (eigenvalues of ``W W^T``, docs/theory/two_step.md §1.1) and
    :func:`mp_sv_edges` (singular values of ``W``, docs/theory/two_step.md §1.2); it unpacks as a
    pair, ``lo, hi = mp_edges(psi)``.

    >>> lo, hi = MPEdges(0.5, 2.0)
    >>> (lo, hi), MPEdges(0.5, 2.0).to_dict()
    ((0.5, 2.0), {'lower': 0.5, 'upper': 2.0})
    """

    lower: float
    upper: float

    def __iter__(self):
        return iter((self.lower, self.upper))


#: Accepted range of ``psi`` and ``var``: wide enough for any physical ratio, narrow enough that the
#: closed forms cannot overflow float64.
PARAM_RANGE = (1e-100, 1e100)
#: Largest moment order (the moments overflow float64 long before; the sums cost O(k)).
KMAX_LIMIT = 10_000


def _bounded(name, value):
    """``> 0`` (the usual message) and inside :data:`PARAM_RANGE`."""
    check_positive(name, value)
    return check_in_range(name, value, *PARAM_RANGE)


def _params(psi, var):
    return _bounded("psi", psi), _bounded("var", var)


def _array(name, x):
    arr = check_finite_array(name, x, dtype_kind="f")
    return arr.astype(np.float64, copy=False)


def _out(arr):
    return float(arr) if np.ndim(arr) == 0 else arr


def mp_edges(psi: float, *, var: float = 1.0) -> MPEdges:
    """Edges ``(l-, l+) = var (1 ∓ sqrt(psi))^2`` of the continuous part of the eigenvalue law of ``W W^T``.

    Normalisation: docs/theory/two_step.md §1.1 (``W`` ``N x d``, entries ``N(0, var/d)``, ``psi = N/d``).

    Parameters
    ----------
    psi : float
        ``N/d > 0``.
    var : float, keyword-only
        Entry variance times ``d`` (``> 0``, default 1).

    >>> mp_edges(1.0)
    MPEdges(lower=0.0, upper=4.0)
    >>> lo, hi = mp_edges(0.25); (lo, hi)
    (0.25, 2.25)
    """
    psi, var = _params(psi, var)
    r = math.sqrt(psi)
    return MPEdges(var * (1.0 - r) ** 2, var * (1.0 + r) ** 2)


def mp_atom(psi: float) -> float:
    """Mass ``(1 - 1/psi)_+`` of the atom at 0 of the ``N x N`` eigenvalue law (docs/theory/two_step.md §1.1).

    >>> mp_atom(4.0), mp_atom(0.5)
    (0.75, 0.0)
    """
    psi = _bounded("psi", psi)
    return max(0.0, 1.0 - 1.0 / psi)


def mp_density(lam, psi: float, *, var: float = 1.0):
    """Density of the continuous part of the eigenvalue law of ``W W^T`` (mass ``min(1, 1/psi)``).

    Normalisation: docs/theory/two_step.md §1.1.  Zero outside ``[l-, l+]``; the atom at 0
    (``psi > 1``) is not included.  ``lam`` scalar (float out) or array; ``var`` keyword-only.

    >>> round(mp_density(1.0, 1.0), 10)  # sqrt(3) / (2 pi)
    0.2756644477
    """
    psi, var = _params(psi, var)
    x = _array("lam", lam)
    lo, hi = mp_edges(psi, var=var)
    inside = np.asarray((x > lo) & (x < hi))  # hence x > 0; far outside, the product below would overflow
    val = np.zeros(inside.shape)
    np.multiply(hi - x, x - lo, out=val, where=inside)
    np.sqrt(val, out=val, where=inside)
    out = np.zeros_like(val)
    np.divide(val, (2.0 * np.pi * psi * var) * np.where(inside, x, 1.0), out=out, where=inside)
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


def mp_cdf(lam, psi: float, *, var: float = 1.0):
    """Distribution function of the eigenvalues of ``W W^T``, atom included (right-continuous).

    Normalisation: docs/theory/two_step.md §1.1; closed form in the module docstring
    (docs/theory/classical.md §1.1); ``mp_cdf(0, psi) = (1 - 1/psi)_+``.  ``var`` keyword-only.

    >>> round(mp_cdf(1.0, 1.0), 10)  # 1/3 + sqrt(3)/(2 pi) at psi = 1
    0.6089977810
    """
    psi, var = _params(psi, var)
    x = _array("lam", lam)
    lo, hi = mp_edges(psi, var=var)
    m = var * (1.0 + psi)
    h = 2.0 * var * math.sqrt(psi)
    cont_mass = min(1.0, 1.0 / psi)
    T = np.arccos(np.clip((m - np.clip(x, lo, hi)) / h, -1.0, 1.0))
    cont = np.clip(_cont_cdf_T(T, psi, var), 0.0, cont_mass)
    cont = np.where(x >= hi, cont_mass, np.where(x <= lo, 0.0, cont))
    atom = mp_atom(psi)
    return _out(np.where(x >= 0.0, atom + cont, 0.0))


def mp_quantile(p, psi: float, *, var: float = 1.0):
    """Generalised inverse ``inf{l : F(l) >= p}`` of :func:`mp_cdf` (0 for ``p <= atom``).

    Normalisation: docs/theory/two_step.md §1.1.  Vectorised bisection in the angle ``T``
    (``F`` is increasing in ``T``), ~1e-15 accuracy.  ``p`` in ``[0, 1]``; ``var`` keyword-only.

    >>> round(mp_quantile(0.5, 1.0), 10)
    0.6527759416
    >>> mp_quantile(0.3, 4.0)
    0.0
    """
    psi, var = _params(psi, var)
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


def mp_moment(k: int, psi, *, var=1.0, exact: bool = False):
    """``E[l^k]`` under the eigenvalue law of ``W W^T`` (atom contributes nothing for ``k >= 1``; ``k = 0`` gives 1).

    Normalisation: docs/theory/two_step.md §1.1.
    ``var^k sum_{r=0}^{k-1} psi^r/(r+1) C(k, r) C(k-1, r)`` (Narayana polynomial).
    With ``exact=True`` (keyword-only, like ``var``) a :class:`fractions.Fraction` (inputs taken as
    exact rationals).

    >>> mp_moment(3, 0.5)
    2.75
    >>> mp_moment(2, Fraction(1, 3), exact=True)
    Fraction(4, 3)
    """
    k = check_int("k", k, 0, KMAX_LIMIT)
    if exact:
        _params(psi, var)  # range checks
        psi, v = Fraction(psi), Fraction(var)  # floats convert exactly (binary value)
    else:
        psi, v = _params(psi, var)
    if k == 0:
        return Fraction(1) if exact else 1.0
    if exact:
        tot = sum(psi**r * Fraction(math.comb(k, r) * math.comb(k - 1, r), r + 1) for r in range(k))
        return tot * v**k
    try:
        tot = sum(psi**r * math.comb(k, r) * math.comb(k - 1, r) / (r + 1) for r in range(k))
        out = tot * v**k
    except OverflowError:
        out = math.inf
    if not math.isfinite(out):
        raise ValueError(f"k={k} too large: the moment E[l^k] overflows float64 (use exact=True)")
    return out


def mp_moments(kmax: int, psi: float, *, var: float = 1.0) -> np.ndarray:
    """Array ``[E l^0, ..., E l^kmax]`` of the eigenvalue law of ``W W^T`` (``E l^0 = 1``, atom included).

    Normalisation: docs/theory/two_step.md §1.1; ``var`` keyword-only.

    >>> mp_moments(3, 1.0).tolist()
    [1.0, 1.0, 2.0, 5.0]
    """
    kmax = check_int("kmax", kmax, 0, KMAX_LIMIT)
    psi, var = _params(psi, var)
    out = []
    for k in range(kmax + 1):
        try:
            out.append(mp_moment(k, psi, var=var))
        except ValueError:
            raise ValueError(f"kmax={kmax} too large: the moment E[l^{k}] overflows float64") from None
    return np.array(out, dtype=float)


def mp_stieltjes(w, psi: float, *, var: float = 1.0):
    """Stieltjes transform ``g(w) = int rho(dl) / (w - l)`` (atom included), complex.

    Normalisation: docs/theory/two_step.md §1.1.
    ``g(w) = (w - var (1 - psi) - sqrt(w - l-) sqrt(w - l+)) / (2 psi var w)`` with
    principal square roots (docs/theory/two_step.md §1.1 branch rule), valid off the support;
    ``g(w) ~ 1/w`` at infinity.  Returns complex values; ``var`` keyword-only.

    >>> complex(mp_stieltjes(5.0, 1.0)).real.__round__(10)  # (5 - sqrt(5)) / 10
    0.2763932023
    """
    psi, var = _params(psi, var)
    z = check_finite_array("w", w, dtype_kind="fc").astype(complex)
    lo, hi = mp_edges(psi, var=var)
    with np.errstate(divide="ignore", invalid="ignore"):
        g = (z - var * (1.0 - psi) - np.sqrt(z - lo) * np.sqrt(z - hi)) / (2.0 * psi * var * z)
    return complex(g) if g.ndim == 0 else g


def mp_sv_edges(psi: float, *, var: float = 1.0) -> MPEdges:
    """Edges ``sqrt(var) (|1 - sqrt(psi)|, 1 + sqrt(psi))`` of the nonzero singular values of ``W``.

    Normalisation: docs/theory/two_step.md §1.2; ``var`` keyword-only.  Unpacks as a pair.

    >>> [round(x, 10) for x in mp_sv_edges(2.0)]
    [0.4142135624, 2.4142135624]
    """
    psi, var = _params(psi, var)
    r = math.sqrt(psi)
    return MPEdges(math.sqrt(var) * abs(1.0 - r), math.sqrt(var) * (1.0 + r))


def mp_sv_atom(psi: float, *, side: str = "N") -> float:
    """Atom at 0 of the singular-value law: ``(1 - 1/psi)_+`` (``side="N"``) or ``(1 - psi)_+`` (``"d"``).

    Normalisation: docs/theory/two_step.md §1.2; ``side`` keyword-only.

    >>> mp_sv_atom(2.0, side="N"), mp_sv_atom(0.25, side="d")
    (0.5, 0.75)
    """
    psi = _bounded("psi", psi)
    check_choice("side", side, ("N", "d"))
    return max(0.0, 1.0 - 1.0 / psi) if side == "N" else max(0.0, 1.0 - psi)


def _square(x):
    """``x^2``, the largest float where it overflows (``|x| > 1.3e154``: far beyond any edge, density 0, CDF 1)."""
    with np.errstate(over="ignore"):
        return np.minimum(x * x, np.finfo(float).max)


def mp_sv_density(s, psi: float, *, var: float = 1.0, side: str = "N"):
    """Density of the continuous part of the singular-value law of ``W``: ``2 s rho(s^2)``.

    Normalisation: docs/theory/two_step.md §1.2.
    ``side="N"``: law of the ``N`` singular values (mass ``min(1, 1/psi)``);
    ``side="d"``: law of the ``d`` singular values (``psi`` times the N-side density,
    mass ``min(1, psi)``).  For the law of the ``min(N, d)`` nonzero values multiply
    the N-side density by ``max(1, psi)``.  ``var`` and ``side`` keyword-only.

    >>> round(mp_sv_density(1.0, 1.0), 10)  # 2 * sqrt(3) / (2 pi)
    0.5513288954
    """
    check_choice("side", side, ("N", "d"))
    psi, var = _params(psi, var)
    x = _array("s", s)
    dens = 2.0 * x * np.asarray(mp_density(_square(x), psi, var=var))
    dens = np.where(x > 0, dens, 0.0)
    return _out(dens * (psi if side == "d" else 1.0))


def mp_sv_cdf(s, psi: float, *, var: float = 1.0, side: str = "N"):
    """Distribution function of the singular-value law (atom included), ``side`` as in :func:`mp_sv_density`.

    Normalisation: docs/theory/two_step.md §1.2; ``var`` and ``side`` keyword-only.

    >>> round(mp_sv_cdf(0.0, 0.25, side="d"), 12)
    0.75
    """
    check_choice("side", side, ("N", "d"))
    psi, var = _params(psi, var)
    x = _array("s", s)
    FN = np.asarray(mp_cdf(np.where(x >= 0, _square(x), -1.0), psi, var=var))
    if side == "N":
        return _out(FN)
    cont = FN - mp_atom(psi) * (x >= 0)
    return _out(np.where(x >= 0, mp_sv_atom(psi, side="d") + psi * cont, 0.0))
