"""Input checks shared by every layer.

Each helper raises :class:`ValueError` whose message names the parameter and
its legal range, so that a bad call fails loudly at the boundary instead of
producing a silent NaN deep inside a formula.
"""
from __future__ import annotations

import math
import os
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
    "available_memory",
    "check_memory",
    "check_array",
    "check_size",
    "check_tol",
    "check_rng",
    "check_points",
    "check_no_overflow",
    "check_magnitude",
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


def check_finite_array(name: str, value, ndim: int | None = None, dtype_kind: str = "f"):
    """Return ``np.asarray(value)`` after checking finiteness, rank and dtype kind.

    ``dtype_kind`` lists the accepted numpy dtype kinds (default: real floats only; pass
    ``"fc"`` where complex input is supported; integers and bools are converted to float64).
    Strings, objects, ragged nestings and (by default) complex values raise ``TypeError``.
    """
    arr = _as_numeric(name, value, dtype_kind)
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


def _cgroup_limit():
    """The memory limit of this process's cgroup (v2 ``memory.max`` or v1), or ``None``."""
    for f in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            with open(f) as fh:
                text = fh.read().strip()
        except OSError:
            continue
        if text.isdigit() and int(text) < 2**60:
            return int(text)
    return None


def available_memory():
    """Bytes this process may allocate, or ``None`` if unknown.

    The physical memory (``os.sysconf('SC_PHYS_PAGES')``), lowered by a cgroup memory limit and by
    the address-space limit ``RLIMIT_AS`` (``ulimit -v``, less what the process already maps).
    """
    limits = []
    try:
        limits.append(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        pass
    cg = _cgroup_limit()
    if cg is not None:
        limits.append(cg)
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_AS)[0]
        if soft != resource.RLIM_INFINITY:
            used = 0
            try:
                with open("/proc/self/statm") as fh:
                    used = int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
            except (OSError, ValueError, IndexError):
                pass
            limits.append(max(soft - used, 0))
    except (ImportError, ValueError, OSError):
        pass
    return min(limits) if limits else None


def _gib(nbytes) -> str:
    return f"{nbytes / 2**30:,.1f} GiB" if nbytes >= 2**30 else f"{nbytes / 2**20:,.1f} MiB"


def check_memory(name: str, nbytes, what: str = "") -> None:
    """Refuse (``ValueError`` naming ``name``) a size whose arrays would need more than the available memory.

    ``nbytes`` is the estimate of what the call allocates (``what`` says for what, e.g. ``"an N x d
    float64 matrix"``); call this before allocating.  Nothing is refused when the available memory
    is unknown (:func:`available_memory`).
    """
    avail = available_memory()
    need = float(nbytes)
    if avail is not None and need > avail:
        for_ = f" for {what}" if what else ""
        raise ValueError(f"{name} is too large: it needs about {_gib(need)} of memory{for_}, more than the "
                         f"{_gib(avail)} available")


def _as_numeric(name, value, dtype_kind="f"):
    """``np.asarray(value)`` of a numeric dtype kind in ``dtype_kind`` (ints/bools -> float64), else ``TypeError``."""
    if isinstance(value, (str, bytes)):
        raise TypeError(f"{name} must be a numeric array, got {value!r}")
    try:
        arr = np.asarray(value)
    except (ValueError, TypeError) as exc:  # ragged nesting, unconvertible objects
        raise TypeError(f"{name} must be a numeric array: {exc}") from None
    if arr.dtype.kind in "iub":
        arr = arr.astype(np.float64)
    if arr.dtype.kind == "c" and "c" not in dtype_kind:
        raise TypeError(f"{name} must be real: complex values are not supported here, got dtype {arr.dtype}")
    if arr.dtype.kind not in dtype_kind:
        raise TypeError(f"{name} must have a numeric dtype of kind {dtype_kind!r}, got {arr.dtype}")
    return arr


def check_array(name: str, value, *, ndim=None, dtype_kind: str = "f", finite: bool = True,
                min_size: int = 0, shape=None):
    """A numeric array with checks on dtype, rank, shape, size and (by default) finiteness.

    ``ndim`` is an int or a tuple of accepted ranks; ``shape`` a tuple whose ``None`` entries
    are free; ``min_size`` the least number of entries (1 refuses empty arrays); ``finite=False``
    lets NaN/inf through (elementwise laws: NaN in, NaN out, docs/reliability.md).
    Wrong dtype (strings, objects, complex unless ``"c" in dtype_kind``) raises ``TypeError``,
    the rest ``ValueError``; every message names ``name``.
    """
    arr = _as_numeric(name, value, dtype_kind)
    if ndim is not None:
        ranks = (ndim,) if isinstance(ndim, int) else tuple(ndim)
        if arr.ndim not in ranks:
            want = " or ".join(f"{r}-d" for r in ranks)
            raise ValueError(f"{name} must be a {want} array, got shape {arr.shape}")
    if shape is not None and (len(shape) != arr.ndim or any(
            s is not None and s != a for s, a in zip(shape, arr.shape))):
        want = "(" + ", ".join("*" if s is None else str(s) for s in shape) + ")"
        raise ValueError(f"{name} must have shape {want}, got {arr.shape}")
    if arr.size < min_size:
        raise ValueError(f"{name} must have at least {min_size} entries, got shape {arr.shape}")
    if finite and not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must contain only finite values")
    return arr


def check_size(name: str, value, lo: int = 1, hi: int | None = None) -> int:
    """A size or iteration count: an integer ``>= lo`` (default 1), ``<= hi`` when given."""
    return check_int(name, value, lo, hi)


def check_tol(name: str, value, *, lo: float = 0.0, hi: float = 1.0, lo_open: bool = True) -> float:
    """A tolerance: finite, ``> lo`` (``>= lo`` with ``lo_open=False``) and ``<= hi``.

    Zero, negative, NaN and infinite tolerances make iterative searches run forever; refused here.
    """
    return check_in_range(name, value, lo, hi, lo_open=lo_open)


def check_rng(rng, name: str = "rng"):
    """``numpy.random.default_rng(rng)``, refusing what it cannot take with an error naming ``name``.

    Accepted: ``None``, a non-negative int (or array of them), a ``SeedSequence``, a
    ``BitGenerator`` or a ``Generator``.
    """
    if isinstance(rng, np.random.Generator):
        return rng
    if isinstance(rng, (bool, str, bytes, float, complex)):
        raise TypeError(f"{name} must be None, a non-negative int seed, a SeedSequence or a Generator, "
                        f"got {rng!r}")
    try:
        return np.random.default_rng(rng)
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"{name} must be None, a non-negative int seed, a SeedSequence or a Generator, "
                        f"got {rng!r} ({exc})") from None


def check_points(name: str, value, lo=None, hi=None, *, dtype_kind: str = "f"):
    """Evaluation points of an elementwise law: a numeric array of any shape whose NaN entries pass
    through (NaN in, NaN out: docs/reliability.md §2); ``±inf`` and values outside ``[lo, hi]``
    (``None`` = unbounded) raise ``ValueError`` naming ``name``; strings, objects and (by default)
    complex values raise ``TypeError``."""
    arr = check_array(name, value, dtype_kind=dtype_kind, finite=False)
    vals = arr[~np.isnan(arr)] if arr.dtype.kind in "fc" else arr
    if vals.size and not np.all(np.isfinite(vals)):
        raise ValueError(f"{name} must be finite (NaN passes through as NaN), got an infinite value")
    if vals.size and ((lo is not None and float(np.min(vals.real)) < lo)
                      or (hi is not None and float(np.max(vals.real)) > hi)):
        lo_s = "-inf" if lo is None else repr(lo)
        hi_s = "inf" if hi is None else repr(hi)
        raise ValueError(f"{name} must lie in [{lo_s}, {hi_s}], got values in "
                         f"[{float(np.min(vals.real))!r}, {float(np.max(vals.real))!r}]")
    return arr


def check_no_overflow(name: str, out, points=None):
    """``out`` unchanged when it is finite wherever the input ``points`` is (everywhere without
    ``points``); else ``ValueError`` naming ``name``: the result overflows a double there, so a
    finite input never gives inf or NaN out (docs/reliability.md §2)."""
    o = np.asarray(out)
    bad = ~np.isfinite(o)
    if points is not None:
        p = np.asarray(points)
        if p.shape == o.shape and p.dtype.kind in "fc":
            bad &= ~np.isnan(p)
    if np.any(bad):
        raise ValueError(f"{name} is too large in magnitude: the result overflows a double")
    return out


def check_magnitude(name: str, value, lo: float = 1e-100, hi: float = 1e100):
    """A finite real array whose largest magnitude lies in ``[lo, hi]`` (or is exactly 0): the
    scale every computation downstream can square and invert without overflow or underflow.
    Returns the array (float64); errors name ``name``."""
    arr = check_array(name, value)
    top = float(np.max(np.abs(arr))) if arr.size else 0.0
    if top > hi or 0.0 < top < lo:
        raise ValueError(f"{name} has entries of magnitude {top:.3g}: the largest must lie in [{lo:g}, {hi:g}] "
                         f"(rescale the data)")
    return arr
