"""Spike and outlier counts of one and two large gradient steps (docs/theory/two_step.md §4, §6).

Step sizes are ``eta_t = c_t N^{alpha_t}`` with ``alpha_t in [0, 1/2)``
(docs/conventions.md §5).  The counts are exact integers computed with rational
arithmetic: a float input is converted from its shortest decimal string
(``0.3`` is ``3/10``), so values on a critical line are recognised as such
instead of being rounded to either side by floating-point division.

* :func:`one_step_spike_count` — ``ell(alpha) = ceil(1/(1 - 2 alpha)) - 1``,
  the number of spikes of the feature matrix after one step (MLHD24).
* :func:`outlier_count` — ``Lambda = min(L - 1, floor(alpha2 / (1/2 - alpha1)))``,
  the number of outliers of ``W_2`` beyond the first direction.
* :func:`phase_boundary` — the line ``k alpha1 + alpha2 = k/2``.
* :func:`step_size` — ``eta = c N^alpha`` (``step_size(c, N=..., alpha=...)``).

Examples
--------
>>> int(outlier_count(0.3, 0.45, degree=3))
2
>>> int(one_step_spike_count(0.35))
3
>>> r = outlier_count([0.25, 0.3], [0.25, 0.45])
>>> r.count.tolist(), r.critical.tolist()
([1, 2], [True, False])
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from numbers import Real

import numpy as np

from rmtfl._results import Result
from rmtfl._validate import check_alpha, check_array, check_int, check_no_overflow, check_positive

__all__ = ["CountResult", "one_step_spike_count", "outlier_count", "phase_boundary", "step_size",
           "exact_fraction"]


@dataclass(frozen=True, eq=False)
class CountResult(Result):
    """An exact count with its critical-line flag (scalars or arrays of equal shape).

    Attributes
    ----------
    count : int or ndarray of int
        The count (the floor value on a critical line).
    critical : bool or ndarray of bool
        ``True`` where the input sits on a critical line, where the next
        spike is ``Theta(1)`` and its presence is decided by a BBP/BGN
        comparison rather than by the count.
    ratio : float or ndarray
        The exact ratio behind the count, as a float (``r`` or ``1/(1-2 alpha)``).

    ``int(result)`` and ``result == 3`` work for scalar results;
    ``numpy.asarray(result)`` gives the counts.
    """

    count: object
    critical: object
    ratio: object

    def __int__(self) -> int:
        if np.ndim(self.count):
            raise TypeError("int() of an array count; use .count")
        return int(self.count)

    __index__ = __int__

    def __eq__(self, other):
        if isinstance(other, CountResult):
            return bool(np.array_equal(self.count, other.count) and np.array_equal(self.critical, other.critical))
        if isinstance(other, (int, np.integer)) and not np.ndim(self.count):
            return int(self.count) == int(other)
        return NotImplemented

    __hash__ = None

    def __array__(self, dtype=None, copy=None):
        return np.asarray(self.count, dtype=dtype)


def exact_fraction(x, name: str = "value") -> Fraction:
    """``x`` as an exact :class:`~fractions.Fraction`, reading floats from their decimal string.

    Errors (unreadable strings, NaN/inf, wrong types) name ``name``.

    >>> exact_fraction(0.45)
    Fraction(9, 20)
    >>> exact_fraction("1/3")
    Fraction(1, 3)
    """
    if isinstance(x, Fraction):
        return x
    if isinstance(x, (int, np.integer)) and not isinstance(x, bool):
        return Fraction(int(x))
    if isinstance(x, str):
        try:
            return Fraction(x.strip())
        except (ValueError, ZeroDivisionError):
            raise ValueError(f"{name}: cannot read {x!r} as an exact number") from None
    if isinstance(x, bool) or not isinstance(x, (Real, np.floating)):
        raise TypeError(f"{name} must be a real number or a string such as '1/3', got {x!r}")
    v = float(x)
    if not math.isfinite(v):
        raise ValueError(f"{name} must be finite, got {x!r}")
    return Fraction(repr(v))


def _alpha_fraction(name: str, x) -> Fraction:
    f = exact_fraction(x, name)
    check_alpha(name, float(f))
    if not (0 <= f < Fraction(1, 2)):
        raise ValueError(f"{name} must lie in [0, 0.5), got {x!r}")
    return f


def _vectorise(fun, *args):
    arrs = np.broadcast_arrays(*[np.asarray(a, dtype=object) for a in args])
    shape = arrs[0].shape
    flat = [fun(*vals) for vals in zip(*(a.ravel() for a in arrs))]
    count = np.array([c for c, _, _ in flat], dtype=int).reshape(shape)
    crit = np.array([k for _, k, _ in flat], dtype=bool).reshape(shape)
    ratio = np.array([r for _, _, r in flat], dtype=float).reshape(shape)
    if shape == ():
        return CountResult(int(count), bool(crit), float(ratio))
    return CountResult(count, crit, ratio)


def _ceil_minus_one(r: Fraction) -> int:
    return math.ceil(r) - 1


def one_step_spike_count(alpha) -> CountResult:
    """``ell(alpha) = ceil(1/(1 - 2 alpha)) - 1``: spikes of the one-step feature matrix (docs/theory/two_step.md §4).

    ``ell = l`` on the open interval ``((l-1)/(2l), l/(2l+2))``; at the endpoints
    (``1/(1-2 alpha)`` an integer, including ``alpha = 0``) the next spike is
    ``Theta(1)`` and ``critical`` is set.  Vectorised over ``alpha``.

    >>> [int(one_step_spike_count(a)) for a in (0.1, 0.3, 0.35, 0.39)]
    [1, 2, 3, 4]
    >>> one_step_spike_count(0.25).critical
    True
    """
    def one(a):
        f = _alpha_fraction("alpha", a)
        r = 1 / (1 - 2 * f)
        return _ceil_minus_one(r), r.denominator == 1, float(r)

    return _vectorise(one, alpha)


def outlier_count(alpha1, alpha2, *, degree=None) -> CountResult:
    """``Lambda(alpha1, alpha2; L) = min(L - 1, floor(alpha2 / (1/2 - alpha1)))`` (docs/theory/two_step.md §6).

    Parameters
    ----------
    alpha1, alpha2 : float, str or array_like
        Step-size exponents in ``[0, 1/2)`` (``eta_t = c_t N^{alpha_t}``);
        broadcast against each other.  Strings such as ``"1/3"`` are exact.
    degree : int or None
        Polynomial degree ``L`` of ``sigma`` (``None``: not a polynomial, no cap).

    Returns
    -------
    CountResult
        ``count`` = ``Lambda`` (the floor value on a critical line ``r in Z_{>0}``),
        ``critical`` set on such a line unless the cap ``L - 1 <= r - 1`` binds,
        ``ratio`` = ``r = alpha2 / (1/2 - alpha1)``.

    >>> int(outlier_count(0.45, 0.45, degree=5)), outlier_count(0.45, 0.45, degree=5).critical
    (4, False)
    >>> int(outlier_count(0.4, 0.35))
    3
    """
    cap = None
    if degree is not None:
        L = check_int("degree", degree, lo=1)
        cap = L - 1

    def one(a1, a2):
        f1 = _alpha_fraction("alpha1", a1)
        f2 = _alpha_fraction("alpha2", a2)
        r = f2 / (Fraction(1, 2) - f1)
        lam = math.floor(r)
        crit = r.denominator == 1 and r > 0
        if cap is not None:
            if cap <= lam - 1:
                crit = False
            lam = min(cap, lam)
        return lam, crit, float(r)

    return _vectorise(one, alpha1, alpha2)


def phase_boundary(k: int, alpha1):
    """The ``k``-th phase boundary ``alpha2 = k (1/2 - alpha1)`` (spike ``k`` exists above it; docs/theory/two_step.md §6).

    >>> float(phase_boundary(2, 0.3))
    0.4
    """
    k = check_int("k", k, lo=1, hi=10**6)
    a1 = check_array("alpha1", alpha1)
    if np.any((a1 < 0) | (a1 >= 0.5)):
        raise ValueError(f"alpha1 must lie in [0, 0.5), got {alpha1!r}")
    return k * (0.5 - a1)


def step_size(c, *, N, alpha):
    """``eta = c N^alpha`` (docs/conventions.md §5): converts between the two views of a step size.

    Parameters
    ----------
    c : float > 0
        Prefactor.
    N : int > 0
        Network width (an integral float such as ``1e4`` is accepted).
    alpha : float in [0, 1/2)
        Exponent.

    Returns
    -------
    float

    Examples
    --------
    >>> step_size(2.0, N=100, alpha=0.25)
    6.324555320336759
    """
    c = check_positive("c", c)
    N = check_positive("N", N)
    if N != math.floor(N):
        raise ValueError(f"N must be a positive integer (a width), got {N!r}")
    alpha = check_alpha("alpha", alpha)
    return check_no_overflow("c", c * N**alpha)
