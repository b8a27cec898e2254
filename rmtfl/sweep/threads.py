"""Re-export of :mod:`rmtfl._threads` (BLAS thread pinning via ``threadpoolctl``), kept for old imports.

>>> from rmtfl.sweep.threads import blas_threads
>>> with blas_threads(1):
...     pass
"""
from __future__ import annotations

from .._threads import blas_thread_control, blas_thread_info, blas_threads

__all__ = ["blas_threads", "blas_thread_control", "blas_thread_info"]
