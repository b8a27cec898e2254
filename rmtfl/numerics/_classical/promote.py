"""The Gram route's second try for a float32 matrix: its Gram products in float64, by blocks.

A float32 matrix whose smallest singular values lie below what its float32 Gram eigenvalues resolve
(``lambda_min < 100 u_32 lambda_1``, any square matrix) has them solved again from its float64 Gram matrix before
the SVD is tried (:func:`rmtfl.numerics.singular_values`, :func:`rmtfl.numerics.gram_eigenvalues`,
:func:`rmtfl.numerics.dense_spectrum_and_top`).  A float32 matrix is exact in float64, so every value above the zero
threshold ``1e-12 lambda_1`` of :func:`~rmtfl.numerics._classical.topk.gram_route_ok` keeps float32's own accuracy,
the float32 SVD's ``|ds_i| <~ u_32 s_max``: here ``|ds_i| <~ u_64 s_max^2 / s_i <= 1e-10 s_max``.  It is usually
more accurate than the float32 SVD (a 2000 x 2000 Gaussian matrix: 1e-9 relative against 6e-8) and several times
faster (docs/reliability.md §5).

The products run over column blocks of the wide orientation ``M`` (``m x L``, ``m <= L``), each converted to float64
on its own, so the extra memory is the ``m x m`` Gram matrix and one block of at most ``BLOCK_BYTES``, never a
float64 copy of the matrix.

>>> import numpy as np
>>> from rmtfl.numerics import get_backend
>>> M, be = np.array([[1.0, 2.0, 3.0]], dtype=np.float32), get_backend("numpy")
>>> gram_float64(M, be).tolist(), wide_product(M, np.ones((1, 1)), be).ravel().tolist()
([[14.0]], [1.0, 2.0, 3.0])
"""
from __future__ import annotations

import numpy as np

from .blas import gram_upper

__all__ = ["BLOCK_BYTES", "SQUARE_MIN", "float64_first", "gram_tries", "gram_float64", "wide_product"]

#: Largest float64 block of the matrix converted at a time (128 MiB).
BLOCK_BYTES = 1 << 27
#: A square float32 matrix at least this large goes to its float64 Gram matrix at once (:func:`float64_first`).
SQUARE_MIN = 256


def float64_first(A) -> bool:
    """Whether the float32 try is skipped: ``A`` is float32, square and at least ``SQUARE_MIN`` on a side.

    A square matrix's smallest singular value is of order ``s_max / m`` (``s_max / (2m)`` for Gaussian entries), so
    ``lambda_min / lambda_1 ~ 1 / (4 m^2)`` lies below float32's ``100 u_32 = 6e-6`` from ``m ~ 200`` on and the float32
    try fails.  Skipping it saves that solve: on the host the float64 Gram route costs what the float32 one does
    (2000 x 2000: 0.74 s against 0.78 s)."""
    return A.dtype == np.float32 and A.shape[0] == A.shape[1] and A.shape[0] >= SQUARE_MIN


def gram_tries(A) -> tuple:
    """The Gram route's tries for ``A``, in order: ``False`` for the Gram matrix in ``A``'s own dtype, ``True`` for
    the float64 Gram matrix of a float32 ``A`` (:func:`gram_float64`); the SVD comes after the last."""
    if A.dtype != np.float32:
        return (False,)
    return (True,) if float64_first(A) else (False, True)


def _blocks(L: int, m: int):
    step = max(1, BLOCK_BYTES // (8 * max(m, 1)))
    return [slice(j, min(L, j + step)) for j in range(0, L, step)]


def gram_float64(M, be, *, upper_only: bool = False):
    """``M M^T`` in float64 for a float32 ``(m, L)`` array of the backend ``be``, summed over column blocks.

    ``upper_only`` (host only): just the upper triangle, as ``scipy.linalg.eigh(..., lower=False)`` reads it."""
    m, L = M.shape
    if be.name == "numpy":
        G = np.zeros((m, m), dtype=np.float64, order="F")
        for sl in _blocks(L, m):
            G += gram_upper(M[:, sl].astype(np.float64))
        return G if upper_only else G + np.triu(G, 1).T
    G = be.xp.zeros((m, m), dtype=be.xp.float64)
    for sl in _blocks(L, m):
        B = M[:, sl].astype(be.xp.float64)
        G += B @ B.T
    return G


def wide_product(M, X, be):
    """``M^T X`` in float64 for a float32 ``(m, L)`` array ``M`` and a float64 ``(m, k)`` array ``X``, by blocks."""
    m, L = M.shape
    out = be.xp.empty((L, X.shape[1]), dtype=be.xp.float64)
    for sl in _blocks(L, m):
        out[sl] = M[:, sl].T.astype(be.xp.float64) @ X
    return out
