"""Input checks shared by every layer.

Each helper raises :class:`ValueError` whose message names the parameter and
its legal range, so that a bad call fails loudly at the boundary instead of
producing a silent NaN deep inside a formula.
"""
from __future__ import annotations

import math
from numbers import Real

import numpy as np

__all__ = [
    "check_real",
    "check_positive",
    "check_nonnegative",
    "check_in_range",
    "check_alpha",
    "check_int",
    "check_finite_array",
    "check_choice",
]


def check_real(name: str, value) -> float:
    """Return ``value`` as a finite float or raise ``ValueError`` naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, (Real, np.floating, np.integer)):
        raise ValueError(f"{name} must be a finite real number, got {value!r}")
    v = float(value)
    if not math.isfinite(v):
        raise ValueError(f"{name} must be finite, got {value!r}")
    return v


def check_positive(name: str, value) -> float:
    """Finite and strictly positive: ``name > 0``."""
    v = check_real(name, value)
    if v <= 0:
        raise ValueError(f"{name} must be > 0, got {value!r}")
    return v


def check_nonnegative(name: str, value) -> float:
    """Finite and ``name >= 0``."""
    v = check_real(name, value)
    if v < 0:
        raise ValueError(f"{name} must be >= 0, got {value!r}")
    return v


def check_in_range(name: str, value, lo=None, hi=None, *, lo_open=False, hi_open=False) -> float:
    """Finite and inside the interval given by ``lo``/``hi`` (``None`` = unbounded)."""
    v = check_real(name, value)
    bad = (lo is not None and (v < lo or (lo_open and v == lo))) or (
        hi is not None and (v > hi or (hi_open and v == hi))
    )
    if bad:
        left = "(" if lo_open or lo is None else "["
        right = ")" if hi_open or hi is None else "]"
        lo_s = "-inf" if lo is None else repr(lo)
        hi_s = "inf" if hi is None else repr(hi)
        raise ValueError(f"{name} must lie in {left}{lo_s}, {hi_s}{right}, got {value!r}")
    return v


def check_alpha(name: str, value) -> float:
    """A step-size exponent: ``alpha in [0, 1/2)`` (docs/conventions.md §5)."""
    return check_in_range(name, value, 0.0, 0.5, hi_open=True)


def check_int(name: str, value, lo: int | None = None, hi: int | None = None) -> int:
    """An integer (not bool) with optional inclusive bounds."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    v = int(value)
    if (lo is not None and v < lo) or (hi is not None and v > hi):
        lo_s = "-inf" if lo is None else lo
        hi_s = "inf" if hi is None else hi
        raise ValueError(f"{name} must be an integer in [{lo_s}, {hi_s}], got {value!r}")
    return v


def check_finite_array(name: str, value, ndim: int | None = None, dtype_kind: str = "fc"):
    """Return ``np.asarray(value)`` after checking finiteness, rank and dtype kind.

    ``dtype_kind`` lists the accepted numpy dtype kinds (default: float or complex;
    integers are converted to float64).
    """
    arr = np.asarray(value)
    if arr.dtype.kind in "iub":
        arr = arr.astype(np.float64)
    if arr.dtype.kind not in dtype_kind:
        raise ValueError(f"{name} must have a numeric dtype of kind {dtype_kind!r}, got {arr.dtype}")
    if ndim is not None and arr.ndim != ndim:
        raise ValueError(f"{name} must be a {ndim}-d array, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must contain only finite values")
    return arr


def check_choice(name: str, value, choices) -> str:
    """``value`` must be one of ``choices``."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {sorted(choices)!r}, got {value!r}")
    return value
