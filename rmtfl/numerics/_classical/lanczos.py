"""Top singular triplets by Lanczos on the smaller Gram side, with full reorthogonalisation.

Normalisation: none — the singular values are those of the matrix passed in
(docs/conventions.md §1), descending.

Why not ARPACK: ``svds``/``eigsh`` converge *every* requested value to the
same tolerance, including the ``margin`` values inside the bulk, whose spacing
at the edge is ``~ N^{-2/3}``; at ``4000 x 4000`` that costs ~250 products with
``W^T W``.  The outliers themselves converge at the Krylov rate set by their gap
to the bulk (``~40`` products for a spike at ``1.08x`` the edge).  Here only what
is returned is converged to ``tol``; the first Ritz value below ``edge`` needs
only to be *certainly* below it (``theta + rho <= edge^2``, where ``rho`` is its
residual: an eigenvalue of ``W^T W`` lies within ``rho`` of ``theta``).

Method: single-vector Lanczos on ``M^T M`` (``M = W`` or ``W^T``, whichever has
the smaller Gram side ``m``), Gaussian start vector from ``rng``, classical
Gram–Schmidt applied twice against the whole basis (no loss of orthogonality),
Rayleigh–Ritz on the full basis after every step (every 5th beyond 100 steps)
with the exact projected matrix ``Q^T (M^T M Q)``.  Residuals ``||M^T M v - theta v||`` come from the
stored products, so no extra matrix product is spent on checks.  Left vectors
on the larger side are ``M v / s`` from the stored ``M Q`` (so that relation holds
exactly and the other one has residual ``rho / s``).  A single start vector cannot see an *exactly*
repeated singular value (a measure-zero event for random matrices; near-repeated
ones are resolved because their unresolved Ritz pair keeps a large residual);
:func:`rmtfl.numerics.top_singular_triplets` uses it (``method="iterative"``) for requests of
separated outliers above ``MIXED_MAX`` and otherwise the mixed-precision dense solver
(:mod:`rmtfl.numerics._classical.mixed`), which is not slowed by clustered bulk values.

Examples
--------
>>> import numpy as np
>>> W = np.random.default_rng(0).standard_normal((400, 300)) / np.sqrt(300)
>>> W[0, 0] += 4.0
>>> r = lanczos_triplets(W, 1, edge=2.3, rng=1)  # bulk edge 1 + sqrt(4/3) = 2.15
>>> r.certified, r.s.size, bool(np.allclose(W @ r.V, r.U * r.s))
(True, 1, True)
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rmtfl._results import Result
from rmtfl._validate import check_in_range, check_int

__all__ = ["LanczosResult", "lanczos_triplets"]


@dataclass(frozen=True)
class LanczosResult(Result):
    """``s`` (descending), ``U`` (N side), ``V`` (d side); ``certified``: a converged Ritz value lies
    certainly below ``edge`` after the returned ones; ``steps``: products with ``M^T M`` (beyond 100 the
    convergence test runs every 5th step, so longer runs stop at a multiple of 5);
    ``residuals``: ``||M^T M v_i - s_i^2 v_i|| / s_i`` of the returned triplets (the residual of
    the one triplet relation that is not exact by construction).  Order and sides: docs/conventions.md §1."""

    s: np.ndarray
    U: np.ndarray
    V: np.ndarray
    certified: bool
    steps: int
    residuals: np.ndarray


def lanczos_triplets(A, k: int, *, edge=None, tol: float = 0.0, maxiter: int | None = None,
                     rng=None) -> LanczosResult | None:
    """Top ``max(k, #{s > edge})`` singular triplets of the host array ``A``, or ``None`` if not converged.

    Normalisation: none (docs/conventions.md §1: descending, left = N side).  ``A`` and ``k``
    positional, everything else keyword-only.

    Parameters
    ----------
    A : ndarray (N, d), float32 or float64 (computed in its dtype; Ritz problem in float64).
    k : int, triplets always returned (converged to ``tol``).
    edge : float, optional. With it, every value above ``edge`` is returned and converged, and
        the iteration goes on until the next Ritz value is certainly below ``edge``.
    rng : seed or Generator for the start vector.
    tol : float. Residual ``||M^T u - s v|| <= tol * s_1`` for every returned triplet;
        ``0`` means ``max(1e-10, 100 eps)`` (values then agree with dense to ``~1e-13`` relative
        for separated outliers, ``<= tol`` for clustered ones).
    maxiter : int, optional. Most Lanczos steps (default ``min(m, max(300, 30 k))``);
        ``None`` is returned when they do not suffice.

    >>> import numpy as np
    >>> r = lanczos_triplets(np.diag(np.arange(1.0, 301.0)), 2, rng=0)
    >>> r.s.round(10).tolist()
    [300.0, 299.0]
    """
    A = np.asarray(A)
    if A.ndim != 2:
        raise ValueError(f"A must be a 2-d array, got shape {A.shape}")
    N, d = A.shape
    left = N <= d
    M = A.T if left else A  # (big x m): the basis lives in R^m, the smaller side
    m = M.shape[1]
    k = check_int("k", k, 1, m)
    tol = check_in_range("tol", tol, 0.0, 1.0)
    dt = A.dtype if A.dtype in (np.float32, np.float64) else np.dtype(np.float64)
    M = M.astype(dt, copy=False)
    eps = float(np.finfo(dt).eps)
    tol = tol if tol > 0 else max(1e-10, 100 * eps)
    tol = max(tol, 10 * eps)
    kmax = min(m, maxiter if maxiter is not None else max(300, 30 * k))
    kmax = check_int("maxiter", kmax, 1)
    e2 = None if edge is None else float(edge) ** 2
    g = np.random.default_rng(rng)

    Q = np.empty((m, kmax), dtype=dt)       # orthonormal basis
    Z = np.empty((m, kmax), dtype=dt)       # M^T M Q
    P = np.empty((M.shape[0], kmax), dtype=dt)  # M Q
    q = g.standard_normal(m).astype(dt, copy=False)
    q /= np.linalg.norm(q)
    H = np.zeros((kmax, kmax))
    top = 0.0  # largest Ritz value so far (scale of the invariant-subspace test)
    for j in range(kmax):
        Q[:, j] = q
        P[:, j] = M @ q
        z = M.T @ P[:, j]
        Z[:, j] = z
        c = Q[:, : j + 1].T @ z
        H[: j + 1, j] = c
        H[j, : j + 1] = c
        K = j + 1
        if K > 100 and K % 5 and K < kmax:  # long runs: Rayleigh-Ritz every 5th step
            z = _orthogonalise(z, Q[:, :K])
            q = _next_direction(z, Q[:, :K], max(top, H[j, j]), eps, g)
            if q is None:
                return None
            continue
        th, Y = np.linalg.eigh(H[:K, :K])
        th, Y = np.clip(th[::-1], 0.0, None), Y[:, ::-1]
        top = float(th[0])
        n_above = 0 if e2 is None else int(np.count_nonzero(th > e2))
        n_ret = max(k, n_above)
        if n_ret + (e2 is not None) <= K:
            nc = n_ret + (e2 is not None)
            Yc = Y[:, :nc].astype(dt)
            R = Z[:, :K] @ Yc - (Q[:, :K] @ Yc) * th[None, :nc].astype(dt)
            rho = np.linalg.norm(R.astype(np.float64), axis=0)
            s = np.sqrt(th[:nc])
            s1 = max(s[0], np.finfo(np.float64).tiny)
            res_s = rho[:n_ret] / np.where(s[:n_ret] > 0, s[:n_ret], 1.0)
            ok = bool(np.all(res_s <= tol * s1))
            cert = e2 is not None and th[n_ret] + rho[n_ret] <= e2
            if ok and (e2 is None or cert):
                Yr = Y[:, :n_ret].astype(dt)
                V = Q[:, :K] @ Yr
                U = (P[:, :K] @ Yr) / np.where(s[:n_ret] > 0, s[:n_ret], 1.0).astype(dt)[None, :]
                if left:
                    U, V = V, U
                return LanczosResult(s[:n_ret].astype(np.float64), U, V, bool(cert), K, res_s)
        if K == kmax:
            return None
        # next basis vector: the new direction of M^T M q, orthogonalised twice against the basis
        q = _next_direction(_orthogonalise(z, Q[:, :K]), Q[:, :K], top, eps, g)
        if q is None:
            return None
    return None


def _orthogonalise(z, Qb):
    """Classical Gram-Schmidt twice against the orthonormal columns of ``Qb``."""
    for _ in range(2):
        z = z - Qb @ (Qb.T @ z)
    return z


def _next_direction(z, Qb, scale, eps, g):
    """``z`` normalised, or a fresh random direction orthogonal to ``Qb`` when ``z`` vanished
    (an invariant subspace was found, e.g. a low-rank matrix); ``None`` if the space is full."""
    nz = float(np.linalg.norm(z))
    if nz <= 1e3 * eps * max(abs(float(scale)), 1e-300):
        z = _orthogonalise(g.standard_normal(Qb.shape[0]).astype(Qb.dtype, copy=False), Qb)
        nz = float(np.linalg.norm(z))
        if nz <= 1e3 * eps:
            return None
    return z / nz
