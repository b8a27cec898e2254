"""Top eigenpairs of a Gram matrix: block subspace iteration on the host, dense ``eigh`` on the device.

:func:`top_gram_eigenpairs` (numpy): block subspace iteration validated by its residuals, with
the ARPACK solver :func:`rmtfl.numerics.top_eigenpairs` as fallback; never a full ``eigh`` of a
large Gram matrix on the CPU.  On cupy the top eigenpairs come from the dense
``cupy.linalg.eigh`` (cuSOLVER ``syevd``, the reference solver; cupy's iterative solvers are
not used) with only the top ``k`` pairs copied to the host.  Eigenvalues are those of the
matrix as passed: ``K/n`` for the operator w.r.t. the input probability measure (docs/conventions.md §8).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from rmtfl._results import Result
from rmtfl._validate import check_array, check_in_range, check_int, check_rng
from .._backend import get_backend, host_array, to_numpy
from .._classical.spectra import top_eigenpairs

__all__ = ["GramEigenpairs", "top_gram_eigenpairs", "backend_of"]


def _is_device(a) -> bool:
    return type(a).__module__.startswith("cupy")


def backend_of(a, backend=None):
    """``backend`` if given, else cupy for a cupy array and numpy otherwise (a :class:`~rmtfl.numerics.Backend`).

    Examples
    --------
    >>> backend_of(np.zeros(2)).name
    'numpy'
    """
    if backend is not None:
        return get_backend(backend)
    return get_backend("cupy") if _is_device(a) else get_backend("numpy")


def _orthonormalise(Z):
    """Cholesky-QR twice (two GEMMs; Householder QR if the Gram of ``Z`` is numerically singular)."""
    from rmtfl._threads import blas_threads

    for _ in range(2):
        G = Z.T @ Z
        with blas_threads(1):  # small factorisation: avoid OpenBLAS thread wake-up stalls
            try:
                L = np.linalg.cholesky(G)
            except np.linalg.LinAlgError:
                return np.linalg.qr(Z)[0]
            Linv = np.linalg.inv(L)
        Z = Z @ Linv.T
    return Z


@dataclass(frozen=True)
class GramEigenpairs(Result):
    """Top eigenpairs of a Gram matrix: ``values`` (descending), ``vectors`` (``n x k`` unit columns, host arrays)
    and the solver ``method`` (``"subspace"``, an ARPACK/dense fallback, or ``"dense-eigh-<backend>"``).

    Eigenvalues of the matrix as passed (``K/n`` for the operator, docs/conventions.md §8).
    """

    values: np.ndarray
    vectors: np.ndarray = field(repr=False)
    method: str


def _is_symmetric(K: np.ndarray, rtol: float = 1e-10, tile: int = 256) -> bool:
    """``max|K - K^T| <= rtol max|K|``, tile by tile (no n x n temporary; cache-friendly)."""
    scale = float(np.max(np.abs(K))) if K.size else 0.0
    n = K.shape[0]
    for i in range(0, n, tile):
        for j in range(i, n, tile):
            if float(np.max(np.abs(K[i:i + tile, j:j + tile] - K[j:j + tile, i:i + tile].T))) > rtol * scale:
                return False
    return True


def top_gram_eigenpairs(K, *, k: int, rng=None, oversample: int = 15, tol: float = 1e-9, max_iter: int = 60,
                        backend=None) -> GramEigenpairs:
    """Top-``k`` eigenpairs of a PSD Gram matrix by block subspace iteration with Rayleigh–Ritz.

    Normalisation: the eigenpairs of ``K`` as given (pass ``K/n`` for operator eigenvalues w.r.t. the
    input probability measure, docs/conventions.md §8); vectors have unit Euclidean norm.

    Kernel spectra decay fast, so a block of ``k + oversample`` vectors converges
    in a few GEMMs.  Validation: every returned pair has residual
    ``|K v - lambda v| <= tol * lambda_1``; if that is not reached within
    ``max_iter`` iterations the ARPACK solver :func:`rmtfl.numerics.top_eigenpairs`
    is used instead.

    Parameters
    ----------
    K : array of shape (n, n)
        Symmetric PSD matrix (numpy or cupy).
    k : int
        Number of pairs, ``1 <= k <= n``.
    rng : None, int, SeedSequence or Generator
        Start block of the subspace iteration (numpy only).
    oversample, tol, max_iter
        Block padding (``>= 1``), residual tolerance (relative to ``lambda_1``) and iteration cap.
    backend : None, str or Backend
        ``None`` (default) follows ``K``: a cupy array selects cupy, anything else numpy.  On cupy
        the pairs come from the dense ``cupy.linalg.eigh`` of ``K`` on the device (the reference
        solver, so there is no iteration to validate; ``O(n^3)`` but fast on a GPU for ``n`` in the
        tens of thousands), method ``"dense-eigh-cupy"``; only the top ``k`` pairs are copied to
        the host and ``rng`` is not used.

    Returns
    -------
    GramEigenpairs
        Host arrays.

    Examples
    --------
    >>> top = top_gram_eigenpairs(np.diag([4.0, 2.0, 1.0, 0.5, 0.1] + [0.0] * 20), k=2, rng=0)
    >>> top.values.round(12).tolist(), top.method
    ([4.0, 2.0], 'subspace')
    """
    be = backend_of(K, backend)
    if be.name != "numpy":
        Kd = be.asarray(K)
        n = Kd.shape[0]
        k = check_int("k", k, lo=1, hi=n)
        ev, V = be.xp.linalg.eigh(Kd)
        top = be.xp.ascontiguousarray(V[:, n - k:][:, ::-1])  # k columns only leave the device
        return GramEigenpairs(to_numpy(ev[n - k:][::-1]).copy(), to_numpy(top), f"dense-eigh-{be.name}")
    K = check_array("K", host_array(K), ndim=2, min_size=1)
    n = K.shape[0]
    if K.shape != (n, n):
        raise ValueError(f"K must be a square (n, n) Gram matrix, got shape {K.shape}")
    if not _is_symmetric(K):
        raise ValueError("K must be symmetric (|K - K^T| <= 1e-10 max|K|)")
    k = check_int("k", k, lo=1, hi=n)
    oversample = check_int("oversample", oversample, 1, 10**6)
    max_iter = check_int("max_iter", max_iter, 1, 10**5)
    tol = check_in_range("tol", tol, 0.0, 1.0)
    from rmtfl._threads import blas_threads

    g = check_rng(rng)
    p = min(k + oversample, n)
    Q = _orthonormalise(K @ g.standard_normal((n, p)))
    for _ in range(max_iter):
        Z = K @ Q
        T = Q.T @ Z
        with blas_threads(1):
            ev, U = np.linalg.eigh(0.5 * (T + T.T))
        ev, U = ev[::-1][:k], U[:, ::-1][:, :k]
        V = Q @ U
        R = Z @ U - V * ev
        if np.all(np.linalg.norm(R, axis=0) <= tol * max(ev[0], 1e-300)):
            return GramEigenpairs(ev, V, "subspace")
        Q = _orthonormalise(Z)
    top = top_eigenpairs(K, k, rng=g, tol=tol)  # a residual tolerance: ARPACK (dense when small)
    return GramEigenpairs(top.values, top.vectors, top.method)
