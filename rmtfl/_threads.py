"""Pinning the BLAS thread count of the running process (via ``threadpoolctl``).

OpenBLAS splits a matrix product differently with 1 and with 2 threads, so the
last bits of ``A @ B`` or of an SVD depend on the thread count.  The sweep engine
runs every task inside ``blas_threads(1)`` by default, so that a serial run in a
multi-threaded driver and a run on 1-thread Dask workers give *identical* numbers;
small factorisations and ARPACK (matrix-vector bound) also run single-threaded to
avoid thread wake-up stalls.

This is a thin layer over :func:`threadpoolctl.threadpool_limits` (a runtime
dependency): ``blas_threads(n)`` is ``threadpool_limits(limits=n, user_api="blas")``
with the library scan cached (a ``threadpoolctl.ThreadpoolController`` rebuilt
whenever new modules have been imported since the last scan, so a BLAS loaded
later, e.g. scipy's own OpenBLAS, is still found; entering the context costs
~15 µs instead of ~0.3 ms).  Nothing here touches numbers; no normalisation applies.

Examples
--------
>>> import numpy as np
>>> with blas_threads(1):
...     float(np.ones((2, 2)) @ np.ones(2) @ np.ones(2))
4.0
>>> blas_thread_control()
True
"""
from __future__ import annotations

import contextlib
import sys

from threadpoolctl import ThreadpoolController

from rmtfl._validate import check_int

__all__ = ["blas_threads", "blas_thread_control", "blas_thread_info"]

_CACHE: dict = {}


def _controller() -> ThreadpoolController:
    import numpy  # noqa: F401  (make sure numpy's BLAS is loaded before the scan)

    key = len(sys.modules)
    ctl = _CACHE.get(key)
    if ctl is None:
        _CACHE.clear()
        ctl = _CACHE[key] = ThreadpoolController()
    return ctl


def blas_thread_control() -> bool:
    """Whether the BLAS thread count of this process can be set (a BLAS library is known to threadpoolctl).

    >>> isinstance(blas_thread_control(), bool)
    True
    """
    return bool(_controller().select(user_api="blas").lib_controllers)


def blas_thread_info() -> list[dict]:
    """threadpoolctl's description of the BLAS libraries loaded in this process (path, version, threads).

    >>> all("num_threads" in row for row in blas_thread_info())
    True
    """
    return _controller().select(user_api="blas").info()


@contextlib.contextmanager
def blas_threads(n: int | None):
    """Run the ``with`` body with at most ``n`` BLAS threads (``None``: leave unchanged).

    ``n`` must be an integer ``>= 1`` or ``None``; the previous limits are restored on exit.

    >>> with blas_threads(1):
    ...     blas_thread_info()[0]["num_threads"] if blas_thread_info() else 1
    1
    """
    if n is None:
        yield
        return
    n = check_int("n", n, lo=1)
    with _controller().limit(limits=n, user_api="blas"):
        yield
