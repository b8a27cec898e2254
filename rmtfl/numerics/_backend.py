"""Array backends: numpy (default) or cupy (on request only).

Importing :mod:`rmtfl` never imports cupy.  ``get_backend("cupy")`` imports it
on first use and raises :class:`BackendUnavailable` (a ``ValueError``) with a
plain message when cupy is missing or no CUDA device is visible.

Random numbers: samplers draw on the host with ``numpy.random.Generator`` and
move the arrays with :meth:`Backend.asarray`, so the same ``rng`` gives the same
numbers on every backend (bit-for-bit inputs).  ``Backend.device_rng`` gives
cupy's own generator instead, a *different* stream, for speed.

Examples
--------
>>> be = get_backend("numpy")
>>> be.name, be.xp.__name__
('numpy', 'numpy')
>>> float(be.to_numpy(be.asarray([1.0, 2.0])).sum())
3.0
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from types import ModuleType

import numpy as np

__all__ = ["Backend", "BackendUnavailable", "get_backend", "to_numpy", "host_array", "BACKENDS", "resolve_dtype",
           "check_dtype", "scaled_matrix"]

BACKENDS = ("numpy", "cupy")


class BackendUnavailable(ValueError):
    """The requested array backend cannot be used on this machine."""


@dataclass(frozen=True)
class Backend:
    """An array namespace plus the few linear-algebra entry points rmtfl needs (a model object, not a result).

    Results come back as host numpy arrays; nothing is rescaled (docs/theory/classical.md §7).
    """

    name: str
    xp: ModuleType

    def asarray(self, a, dtype=None):
        """Move ``a`` (host or device) onto this backend."""
        if self.name == "numpy":  # np.asarray of a cupy array raises; .get() it first
            return np.asarray(host_array(a), dtype=dtype)
        return self.xp.asarray(a, dtype=dtype)

    def to_numpy(self, a) -> np.ndarray:
        """Copy ``a`` to a host numpy array."""
        return host_array(a)

    def svdvals(self, a):
        """All singular values, descending (``svd(compute_uv=False)``)."""
        return self.xp.linalg.svd(a, compute_uv=False)

    def eigvalsh(self, a):
        """Eigenvalues of a symmetric matrix, ascending."""
        return self.xp.linalg.eigvalsh(a)

    def synchronize(self) -> None:
        """Block until queued device work is done (no-op on numpy)."""
        if self.name == "cupy":
            self.xp.cuda.Stream.null.synchronize()

    def device_rng(self, seed=None):
        """cupy's device generator (a different stream from the host ``rng``)."""
        if self.name != "cupy":
            return np.random.default_rng(seed)
        return self.xp.random.default_rng(seed)


def host_array(a) -> np.ndarray:
    """``a`` on the host: ``.get()`` of a cupy array, ``np.asarray`` of anything else (unchecked;
    the callers validate what comes back, naming their own parameter)."""
    if type(a).__module__.startswith("cupy"):
        return a.get()
    return np.asarray(a)


def to_numpy(a) -> np.ndarray:
    """Host copy of a numeric numpy or cupy array (or nested sequence); values unchanged (docs/theory/classical.md §7).

    Any shape and any numeric dtype (bool, int, float, complex) passes; strings, ``None`` and
    object arrays raise ``TypeError`` naming ``a``.

    >>> to_numpy([1, 2]).tolist()
    [1, 2]
    """
    if a is None or isinstance(a, (str, bytes)):
        raise TypeError(f"a must be a numeric array (numpy, cupy or a nested sequence), got {a!r}")
    try:
        out = host_array(a)
    except (ValueError, TypeError) as exc:  # ragged nestings
        raise TypeError(f"a must be a numeric array: {exc}") from None
    if out.dtype.kind not in "biufc":
        raise TypeError(f"a must be a numeric array, got dtype {out.dtype}")
    return out


@functools.lru_cache(maxsize=None)
def _cupy_backend() -> Backend:
    try:
        import cupy  # noqa: PLC0415  (imported only on request)
    except Exception as exc:  # ImportError or a broken CUDA install
        raise BackendUnavailable(
            f"backend 'cupy' requested but cupy cannot be imported ({exc.__class__.__name__}: {exc}); "
            "install it with pip install -e '.[gpu]' on a machine with a CUDA GPU"
        ) from None
    try:
        n = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:
        raise BackendUnavailable(f"backend 'cupy' requested but no CUDA device is usable: {exc}") from None
    if n < 1:
        raise BackendUnavailable("backend 'cupy' requested but no CUDA device is visible")
    return Backend("cupy", cupy)


def get_backend(name: str | Backend = "numpy") -> Backend:
    """Return the backend called ``name`` (``"numpy"`` or ``"cupy"``; a :class:`Backend` is returned as is).

    The ``backend=`` keyword of every numerics function goes through here (docs/theory/classical.md §7); asking
    for ``"cupy"`` without cupy or a device raises :class:`BackendUnavailable`.

    >>> be = get_backend()
    >>> be.name, get_backend(be) is be
    ('numpy', True)
    """
    if isinstance(name, Backend):
        return name
    if name == "numpy":
        return Backend("numpy", np)
    if name == "cupy":
        return _cupy_backend()
    raise ValueError(f"backend must be one of {BACKENDS}, got name={name!r}")


def require_finite(name: str, a, *, backend: Backend | None = None):
    """``a`` unchanged if it is real and every entry is finite (checked where ``a`` lives), else
    ``ValueError`` naming ``name``: LAPACK and the Krylov solvers fail obscurely on NaN/inf, and
    the spectra here use ``A A^T`` (real Gram matrices), which would be silently wrong for complex input.
    ``backend`` (keyword-only) is where ``a`` lives.

    >>> require_finite("A", np.ones(2)).tolist()
    [1.0, 1.0]
    """
    if np.dtype(a.dtype).kind not in "fiub":
        raise ValueError(f"{name} must be a real array (float32/float64; integers and booleans are "
                         f"converted), got dtype {a.dtype}")
    xp = backend.xp if backend is not None else np
    if not bool(xp.isfinite(a).all()):
        raise ValueError(f"{name} must contain only finite values (found NaN or inf)")
    return a


def resolve_dtype(dtype) -> np.dtype:
    """``"float64"`` (default for comparisons) or ``"float32"``; anything else is refused.

    Values are never rescaled by a backend or a dtype (docs/theory/classical.md §7).

    >>> resolve_dtype("float32").name
    'float32'
    """
    dt = np.dtype(dtype)
    if dt not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise ValueError(f"dtype must be 'float32' or 'float64', got {dtype!r}")
    return dt


def check_dtype(dtype, name: str = "dtype") -> np.dtype:
    """``"float64"`` or ``"float32"`` (a string or numpy dtype); anything else raises an error naming ``name``."""
    if dtype is None or isinstance(dtype, bool) or not isinstance(dtype, (str, type, np.dtype)):
        raise TypeError(f"{name} must be 'float32' or 'float64', got {dtype!r}")
    try:
        return resolve_dtype(dtype)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be 'float32' or 'float64', got {dtype!r}") from None


def scaled_matrix(name, A, be):
    """``(A / 2^e, 2^e)``: ``A`` on the :class:`Backend` ``be``, checked (2-d, non-empty, real,
    finite -- errors name ``name``; integers and booleans become float64) and divided by a power of two when its largest entry lies outside ``[2^-L, 2^L]``
    (``L = 256`` in float64, ``30`` in float32), so the Gram matrix neither overflows nor underflows.
    The division is exact, so results scaled back by ``2^e`` equal those of the unscaled matrix (docs/theory/classical.md §7).

    >>> B, c = scaled_matrix("A", np.eye(2) * 1e300, get_backend())
    >>> float(B.max()) * c == 1e300, c > 1e299
    (True, True)
    """
    A = be.asarray(A)
    if A.ndim != 2:
        raise ValueError(f"{name} must be a 2-d array, got shape {tuple(A.shape)}")
    require_finite(name, A, backend=be)
    if A.dtype not in (np.float32, np.float64):
        A = A.astype(np.float64)
    if A.size == 0:
        raise ValueError(f"{name} must be non-empty, got shape {tuple(A.shape)}")
    amax = float(be.xp.abs(A).max())
    lim = 30 if A.dtype == np.float32 else 256
    if amax == 0.0 or 2.0 ** -lim <= amax <= 2.0 ** lim:
        return A, 1.0
    e = int(np.frexp(amax)[1])
    return A * float(np.ldexp(1.0, -e)), float(np.ldexp(1.0, e))
