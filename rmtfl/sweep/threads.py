"""Pinning the BLAS thread count of the running process (OpenBLAS, via ctypes).

OpenBLAS splits a matrix product differently with 1 and with 2 threads, so
the last bits of ``A @ B`` or of an SVD depend on the thread count.  The sweep
engine runs every task inside ``blas_threads(1)`` by default, so that a serial
run in a 2-thread driver and a run on 1-thread Dask workers give *identical*
numbers.  ``threadpoolctl`` is used when installed; otherwise the OpenBLAS
libraries already loaded in the process (numpy's and scipy's bundled ones) are
found through ``/proc/self/maps`` and their ``*_set_num_threads*`` entry points
are called.  On platforms where neither works, :func:`blas_threads` is a no-op
and :func:`blas_thread_control` reports ``False``.

Examples
--------
>>> import numpy as np
>>> with blas_threads(1):
...     float(np.ones((2, 2)) @ np.ones(2) @ np.ones(2))
4.0
"""
from __future__ import annotations

import contextlib
import ctypes
import functools

__all__ = ["blas_threads", "blas_thread_control"]

_SETTERS = ("scipy_openblas_set_num_threads64_", "scipy_openblas_set_num_threads",
            "openblas_set_num_threads64_", "openblas_set_num_threads")
_GETTERS = ("scipy_openblas_get_num_threads64_", "scipy_openblas_get_num_threads",
            "openblas_get_num_threads64_", "openblas_get_num_threads")


def _loaded_openblas() -> list[tuple]:
    import numpy  # noqa: F401  (make sure numpy's BLAS is loaded)

    paths = []
    try:
        with open("/proc/self/maps") as fh:
            for line in fh:
                p = line.split()[-1] if line.strip() else ""
                if "openblas" in p.lower() and ".so" in p and p not in paths:
                    paths.append(p)
    except OSError:
        return []
    out = []
    for p in paths:
        try:
            lib = ctypes.CDLL(p)
        except OSError:
            continue
        setter = next((getattr(lib, s) for s in _SETTERS if hasattr(lib, s)), None)
        getter = next((getattr(lib, g) for g in _GETTERS if hasattr(lib, g)), None)
        if setter is not None and getter is not None:
            getter.restype = ctypes.c_int
            out.append((p, setter, getter))
    return out


@functools.lru_cache(maxsize=None)
def _libs_cached(key) -> tuple:
    return tuple(_loaded_openblas())


def _libs() -> tuple:
    # scipy may load its own OpenBLAS later: re-scan when the set of mapped files may have grown.
    import sys

    return _libs_cached(("scipy" in sys.modules,))


def blas_thread_control() -> bool:
    """Whether the BLAS thread count of this process can be set."""
    try:
        import threadpoolctl  # noqa: F401

        return True
    except ImportError:
        return bool(_libs())


@contextlib.contextmanager
def blas_threads(n: int | None):
    """Run the ``with`` body with at most ``n`` BLAS threads (``None``: leave unchanged)."""
    if n is None:
        yield
        return
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        threadpool_limits = None
    if threadpool_limits is not None:
        with threadpool_limits(limits=int(n), user_api="blas"):
            yield
        return
    libs = _libs()
    old = [getter() for _, _, getter in libs]
    for _, setter, _ in libs:
        setter(int(n))
    try:
        yield
    finally:
        for (_, setter, _), k in zip(libs, old):
            setter(int(k))
