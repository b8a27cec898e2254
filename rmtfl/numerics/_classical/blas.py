"""Host matrix products through scipy's BLAS, the library behind ``scipy.linalg``'s LAPACK.

numpy and scipy wheels each bundle their own OpenBLAS, each with its own thread pool.
After a numpy product the numpy pool's threads keep spinning for a while (~0.05–0.1 s), so a
``scipy.linalg`` factorisation started right after it competes with them for the cores: on a
2-core machine a float32 ``eigh(subset_by_index=...)`` of a ``1500 x 1500`` Gram matrix then
takes 0.10–0.15 s instead of 0.065 s.  A pipeline whose expensive tail is scipy LAPACK (the
mixed-precision top-``k`` solver, :mod:`rmtfl.numerics._classical.mixed`) therefore runs its products here,
on the same pool.  Nothing is rescaled; results equal ``A @ B`` to rounding.

Examples
--------
>>> import numpy as np
>>> A = np.arange(6.0).reshape(2, 3); B = np.arange(12.0).reshape(3, 4)
>>> bool(np.array_equal(matmul(A, B), A @ B)), bool(np.array_equal(matmul(A, B.T[:, :3].T), A @ B))
(True, True)
>>> G = gram_upper(A); float(G[0, 1]), float(G[1, 0])
(14.0, 0.0)
"""
from __future__ import annotations

import numpy as np
from scipy.linalg import blas

__all__ = ["matmul", "gram_upper"]

_GEMM = {np.dtype(np.float64): blas.dgemm, np.dtype(np.float32): blas.sgemm}
_SYRK = {np.dtype(np.float64): blas.dsyrk, np.dtype(np.float32): blas.ssyrk}


def _fortran_operand(M):
    """``(F-contiguous array, trans)`` with ``op(array) = M^T`` (no copy when ``M`` is C- or F-contiguous)."""
    if M.flags.c_contiguous:
        return M.T, 0
    if M.flags.f_contiguous:
        return M, 1
    return np.ascontiguousarray(M).T, 0


def matmul(A, B):
    """``A @ B`` for 2-d host float32/float64 arrays of one dtype via scipy's ``?gemm``
    (``@`` otherwise, e.g. for cupy arrays).  Returns a C-contiguous array; nothing is rescaled
    (docs/theory/classical.md §7).

    >>> A = np.ones((2, 3), dtype=np.float32)
    >>> matmul(A, A.T).tolist()
    [[3.0, 3.0], [3.0, 3.0]]
    """
    if not (type(A) is np.ndarray and type(B) is np.ndarray and A.ndim == 2 and B.ndim == 2
            and A.dtype == B.dtype and A.dtype in _GEMM and A.shape[1] == B.shape[0] and A.size and B.size):
        return A @ B
    # C = A B is computed as its transpose C^T = B^T A^T in Fortran order, which is C in C order
    b, tb = _fortran_operand(B)
    a, ta = _fortran_operand(A)
    return _GEMM[A.dtype](1.0, b, a, trans_a=tb, trans_b=ta).T


def gram_upper(M):
    """``M M^T`` for a 2-d host float32/float64 array via ``?syrk``: only the UPPER triangle is
    filled (Fortran order), as ``scipy.linalg.eigh(..., lower=False)`` reads it.  Nothing is
    rescaled (docs/theory/classical.md §7).

    >>> gram_upper(np.eye(2, dtype=np.float32) * 2).tolist()
    [[4.0, 0.0], [0.0, 4.0]]
    """
    M = np.asarray(M)
    if M.ndim != 2 or M.dtype not in _SYRK:
        raise ValueError(f"M must be a 2-d float32 or float64 array, got shape {M.shape}, dtype {M.dtype}")
    m, tr = _fortran_operand(M)  # op(m) = M^T, so M M^T = op(m)^T op(m)
    return _SYRK[M.dtype](1.0, m, trans=1 - tr, lower=0)
