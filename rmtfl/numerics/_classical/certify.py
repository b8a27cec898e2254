"""Checks of a computed top-k answer, independent of the solver that produced it.

Normalisation: none -- residuals in the units of the matrix passed in (docs/conventions.md §1).

* :func:`triplet_residuals` / :func:`eigpair_residuals`: the true residuals of the returned
  triplets (eigenpairs), measured in float64 on the returned arrays, so a solver's own
  estimate never reaches the user.
* :func:`deflated_check` / :func:`deflated_check_op`: nothing above ``edge`` outside the span of
  the returned vectors (band Lanczos with those vectors projected out), which catches an exactly
  repeated value that ARPACK returns one copy of.

>>> import numpy as np
>>> from rmtfl.numerics import get_backend
>>> A = np.diag([3.0, 2.0, 1.0])
>>> triplet_residuals(A, np.array([3.0]), np.eye(3)[:, :1], np.eye(3)[:, :1], get_backend()).tolist()
[0.0]
"""
from __future__ import annotations

import numpy as np

from .._backend import to_numpy

__all__ = ["triplet_residuals", "eigpair_residuals", "deflated_check", "deflated_check_op"]


#: Rows of a float32 matrix converted to float64 at a time for the residuals (bounds the extra memory).
_BLOCK_BYTES = 2**27


def _row_blocks(A):
    """Row slices of ``A`` whose float64 copies take at most ``_BLOCK_BYTES`` (one slice for float64 ``A``)."""
    n = A.shape[0]
    if A.dtype == np.float64:
        return [slice(0, n)]
    step = max(1, _BLOCK_BYTES // (8 * max(1, A.shape[1])))
    return [slice(i, min(i + step, n)) for i in range(0, n, step)]


def triplet_residuals(A, s, U, V, be, scale=1.0):
    """``max(||A v_i - s_i u_i||, ||A^T u_i - s_i v_i||)`` for the host triplets ``(s, U, V)`` of the
    (rescaled) ``A``, computed in float64 where ``A`` lives (a float32 ``A`` converted by row
    blocks), multiplied back by ``scale``."""
    if s.size == 0:
        return np.zeros(0)
    xp = be.xp
    Ud, Vd, sd = be.asarray(U, np.float64), be.asarray(V, np.float64), be.asarray(s, np.float64)
    r1sq = xp.zeros(s.size)
    AtU = xp.zeros_like(Vd)
    for b in _row_blocks(A):
        Ab = A[b].astype(np.float64, copy=False)
        r1sq += xp.sum((Ab @ Vd - Ud[b] * sd[None, :]) ** 2, axis=0)
        AtU += Ab.T @ Ud[b]
    r2 = xp.linalg.norm(AtU - Vd * sd[None, :], axis=0)
    return to_numpy(xp.maximum(xp.sqrt(r1sq), r2)).astype(np.float64) * scale


def eigpair_residuals(S, ev, X, be, scale=1.0):
    """``||S x_i - lambda_i x_i||`` in float64 for host pairs of the (rescaled) ``S``, times ``scale``
    (a float32 ``S`` converted by row blocks)."""
    xp = be.xp
    Xd, ed = be.asarray(X, np.float64), be.asarray(ev, np.float64)
    sq = xp.zeros(Xd.shape[1])
    for b in _row_blocks(S):
        sq += xp.sum((S[b].astype(np.float64, copy=False) @ Xd - Xd[b] * ed[None, :]) ** 2, axis=0)
    return to_numpy(xp.sqrt(sq)).astype(np.float64) * scale


def deflated_check(A, X, edge, rng) -> bool:
    """Nothing above ``edge`` outside the span of ``X`` (the returned Gram-side vectors): band
    Lanczos (block 2) on the Gram operator with ``X`` projected out must certify its top value below
    ``edge`` (:func:`rmtfl.numerics._classical.lanczos.band_lanczos` with ``k = 0``)."""
    from .lanczos import band_lanczos

    N, d = A.shape
    M = A.T if N <= d else A
    m = M.shape[1]
    X = np.asarray(X, dtype=M.dtype)
    if X.shape[1] >= m:
        return True
    Xq, _ = np.linalg.qr(X)
    out = band_lanczos(lambda q: (M.T @ (M @ q), None), m, M.dtype, 0, float(edge) ** 2, 0.0,
                       max(300, 2 * X.shape[1]), np.random.default_rng(rng), 2, deflate=Xq)
    return out is not None and out[4] and out[0].size == 0


def deflated_check_op(S, X, edge, rng) -> bool:
    """:func:`deflated_check` for a symmetric PSD operator ``S`` (edge on the eigenvalue scale)."""
    from .lanczos import band_lanczos

    n_ = S.shape[0]
    X = np.asarray(X, dtype=np.float64)
    if X.shape[1] >= n_:
        return True
    Xq, _ = np.linalg.qr(X)
    out = band_lanczos(lambda q: (np.asarray(S @ q, dtype=np.float64).ravel(), None), n_, np.dtype(np.float64), 0,
                       float(edge), 0.0, max(300, 2 * X.shape[1]), np.random.default_rng(rng), 2, deflate=Xq)
    return out is not None and out[4] and out[0].size == 0
