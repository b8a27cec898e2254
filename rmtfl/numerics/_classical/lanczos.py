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

Method: band Lanczos on ``M^T M`` (``M = W`` or ``W^T``, whichever has
the smaller Gram side ``m``), Gaussian start vector from ``rng``, classical
Gram–Schmidt applied twice against the whole basis (no loss of orthogonality),
Rayleigh–Ritz on the full basis after every step (every 5th beyond 100 steps)
with the exact projected matrix ``Q^T (M^T M Q)``.  Residuals ``||M^T M v - theta v||`` come from the
stored products, so no extra matrix product is spent on checks.  Left vectors
on the larger side are ``M v / s`` from the stored ``M Q`` (so that relation holds
exactly and the other one has residual ``rho / s``).  A Krylov space from ``b`` start vectors holds at most ``b``
copies of an *exactly* repeated singular value (a measure-zero event for random matrices, but
not for structured input such as ``diag(5, 5, 5, 1, ...)``): the start block is ``b = 2``
(band Lanczos: column ``j >= b`` is ``M^T M q_{j-b}``, Rayleigh–Ritz on complete blocks), and
when a returned value has ``>= b`` converged copies, none of them left out of the list, the run is
repeated with a block one larger than that count, so no copy is ever silently missing;
near-repeated ones are resolved because their unresolved Ritz pair keeps a large residual.
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
from rmtfl._validate import check_in_range, check_int, check_rng
from .._backend import get_backend, scaled_matrix

__all__ = ["LanczosResult", "lanczos_triplets", "band_lanczos", "MAX_BLOCK"]


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
                     rng=None, block: int = 2) -> LanczosResult | None:
    """Top ``max(k, #{s > edge})`` singular triplets of the host array ``A``, or ``None`` if not converged.

    Normalisation: none (docs/conventions.md §1: descending, left = N side).  ``A`` and ``k``
    positional, everything else keyword-only.

    Parameters
    ----------
    A : ndarray (N, d), float32 or float64 (computed in its dtype; Ritz problem in float64); real,
        finite and non-empty.  A matrix whose largest entry lies outside ``[2^-256, 2^256]`` is
        divided exactly by a power of two first and ``s``, ``residuals`` multiplied back.
    k : int, triplets always returned (converged to ``tol``).
    edge : float, optional. With it, every value above ``edge`` is returned and converged, and
        the iteration goes on until the next Ritz value is certainly below ``edge``.
    rng : seed or Generator for the start vectors.
    tol : float. Residual ``||M^T u - s v|| <= tol * s_1`` for every returned triplet;
        ``0`` means ``max(1e-10, 100 eps)`` (values then agree with dense to ``~1e-13`` relative
        for separated outliers, ``<= tol`` for clustered ones).
    maxiter : int, optional. Most Lanczos steps (default ``min(m, max(300, 30 k))``);
        ``None`` is returned when they do not suffice.
    block : int, the start block size ``b >= 1`` (band Lanczos).  A Krylov space of block ``b``
        holds at most ``b`` copies of an exactly repeated value, so when a returned value has ``b``
        or more converged copies (and no further copy is left out of the list) the run is
        repeated with a block one larger than that count (up to ``MAX_BLOCK``; then ``None``):
        an exact multiplicity never hides a value (module notes).

    >>> import numpy as np
    >>> r = lanczos_triplets(np.diag(np.arange(1.0, 301.0)), 2, rng=0)
    >>> r.s.round(10).tolist()
    [300.0, 299.0]
    """
    # checked (2-d, non-empty, real, finite) and divided exactly by a power of two at extreme scales
    A, scale = scaled_matrix("A", A, get_backend("numpy"))
    N, d = A.shape
    left = N <= d
    M = A.T if left else A  # (big x m): the basis lives in R^m, the smaller side
    m = M.shape[1]
    k = check_int("k", k, 1, m)
    tol = check_in_range("tol", tol, 0.0, 1.0)
    block = check_int("block", block, 1)
    if maxiter is not None:
        maxiter = check_int("maxiter", maxiter, 1)
    if edge is not None:
        edge = check_in_range("edge", edge, 0.0, None) / scale
    g = check_rng(rng)
    dt = A.dtype if A.dtype in (np.float32, np.float64) else np.dtype(np.float64)
    M = M.astype(dt, copy=False)
    kmax = min(m, maxiter if maxiter is not None else max(300, 30 * k))
    kmax = check_int("maxiter", kmax, 1)
    e2 = None if edge is None else float(edge) ** 2

    def apply(q):
        p = M @ q
        return M.T @ p, p

    b = min(block, m)
    while True:
        out = band_lanczos(apply, m, dt, k, e2, tol, kmax, g, b, aux_rows=M.shape[0])
        if out is None:
            return None
        th, X, P, rho, cert, K, mult = out
        if mult < b or b >= m:
            break
        if mult + 1 > MAX_BLOCK:
            return None
        b = min(mult + 1, m)  # a value with >= b copies may have more: a block one larger than the count
    s = np.sqrt(th)
    safe = np.where(s > 0, s, 1.0)
    res_s = rho / safe
    U = P / safe.astype(dt)[None, :]
    V = X
    if left:
        U, V = V, U
    return LanczosResult(s.astype(np.float64) * scale, U, V, bool(cert), K, res_s * scale)


#: largest start block :func:`lanczos_triplets` grows to for an exactly repeated value (then ``None``).
MAX_BLOCK = 32


def band_lanczos(apply, m: int, dt, k: int, e2, tol: float, kmax: int, g, block: int, *, deflate=None,
                 aux_rows: int | None = None):
    """Band (block) Lanczos with full reorthogonalisation on a symmetric PSD operator of size ``m``.

    ``apply(q) -> (G q, aux)`` (``aux``: a vector stored per step, e.g. ``M q``, or ``None``);
    start block of ``block`` Gaussian vectors from ``g``; column ``j >= block`` of the basis is
    ``G q_{j - block}`` orthogonalised twice against the basis (and against ``deflate``'s columns,
    whose span is then projected out of the operator).  Returns ``None`` when ``kmax`` steps do
    not suffice, else ``(theta, X, aux X, rho, certified, steps, mult)`` for the top
    ``n = max(k, #{theta > e2})`` Ritz pairs: ``rho = ||G x - theta x||``; ``certified``: the next
    Ritz value plus its residual is at most ``e2``; ``mult``: the largest number of converged Ritz
    values equal (to ``1e-6 theta_1`` plus residuals) to a returned one whose copies all lie in
    the returned list (0 if none) -- ``mult >= block`` means an exact multiplicity may hide a
    copy.  ``k = 0`` with ``e2`` only certifies that nothing lies above ``e2``.
    """
    eps = float(np.finfo(dt).eps)
    tol = tol if tol > 0 else max(1e-10, 100 * eps)
    tol = max(tol, 10 * eps)
    kmax = min(kmax, m - (0 if deflate is None else deflate.shape[1]))
    if kmax < 1:
        return None
    Dq = None if deflate is None else np.asarray(deflate, dtype=dt)
    Q = np.empty((m, kmax), dtype=dt)       # orthonormal basis
    Z = np.empty((m, kmax), dtype=dt)       # G Q
    P = None if aux_rows is None else np.empty((aux_rows, kmax), dtype=dt)
    H = np.zeros((kmax, kmax))
    top = 0.0  # largest Ritz value so far (scale of the invariant-subspace test)
    for j in range(kmax):
        if j < block:
            z = g.standard_normal(m).astype(dt, copy=False)
            q = _next_direction(_orthogonalise(_deflate(z, Dq), Q[:, :j]), Q[:, :j], None, eps, g, Dq)
        else:
            q = _next_direction(_orthogonalise(_deflate(Z[:, j - block].copy(), Dq), Q[:, :j]), Q[:, :j],
                                max(top, abs(H[j - block, j - block])), eps, g, Dq)
        if q is None:
            return None
        Q[:, j] = q
        z, p = apply(q)
        z = _deflate(np.asarray(z, dtype=dt), Dq)
        if P is not None:
            P[:, j] = p
        Z[:, j] = z
        c = Q[:, : j + 1].T @ z
        H[: j + 1, j] = c
        H[j, : j + 1] = c
        K = j + 1
        # Rayleigh-Ritz on complete blocks only (a block Krylov space holds min(b, multiplicity)
        # copies of a repeated value only when its last block is complete); every 5th block beyond 100
        if K < kmax and (K % block or (K > 100 and (K // block) % 5)):
            top = max(top, float(H[j, j]))
            continue
        th, Y = np.linalg.eigh(H[:K, :K])
        th, Y = np.clip(th[::-1], 0.0, None), Y[:, ::-1]
        top = float(th[0])
        n_above = 0 if e2 is None else int(np.count_nonzero(th > e2))
        n_ret = max(k, n_above)
        nc = n_ret + (e2 is not None)
        if nc <= K or (K == kmax and n_ret <= K):
            nc = min(nc, K)
            Yc = Y[:, :nc].astype(dt)
            R = Z[:, :K] @ Yc - (Q[:, :K] @ Yc) * th[None, :nc].astype(dt)
            rho = np.linalg.norm(R.astype(np.float64), axis=0)
            s = np.sqrt(th[:nc])
            s1 = max(float(s[0]), np.finfo(np.float64).tiny)
            # converged: residual tol * s_1 * s_i, or at rounding level (a value at zero has no better)
            ok = bool(np.all(rho[:n_ret] <= np.maximum(tol * s1 * s[:n_ret], 100 * eps * float(th[0]))))
            # the whole space is spanned (K = m): every eigenvalue is a Ritz value, nothing is hidden
            full = K == m - (0 if Dq is None else Dq.shape[1])
            cert = e2 is not None and (full or (nc > n_ret and th[n_ret] + rho[n_ret] <= e2))
            if ok and (e2 is None or cert):
                Yr = Y[:, :n_ret].astype(dt)
                X = Q[:, :K] @ Yr
                PX = None if P is None else P[:, :K] @ Yr
                mult = 0 if full else _multiplicity(th[:K], rho, n_ret, nc, tol * s1 * s1)
                return th[:n_ret].astype(np.float64), X, PX, rho[:n_ret], bool(cert), K, mult
        if K == kmax:
            return None
    return None


def _multiplicity(th, rho, n_ret, nc, conv):
    """Largest count of converged Ritz values equal to a returned one, over returned values all of
    whose copies are in the returned list (see :func:`band_lanczos`)."""
    if n_ret == 0:
        return 0
    scale = float(th[0])
    best = 0
    for i in range(n_ret):
        # copies: Ritz values within 1e-6 theta_1 (a converged copy lies within its residual)
        near = np.abs(th - th[i]) <= 1e-6 * scale + rho[i] + conv
        c = int(np.count_nonzero(near))
        r = int(np.count_nonzero(near[:n_ret]))
        if c == r:
            best = max(best, c)
    return best


def _deflate(z, Dq):
    """``z`` with the span of the orthonormal columns of ``Dq`` removed (twice; ``Dq`` may be None)."""
    if Dq is None or Dq.shape[1] == 0:
        return z
    for _ in range(2):
        z = z - Dq @ (Dq.T @ z)
    return z


def _orthogonalise(z, Qb):
    """Classical Gram-Schmidt twice against the orthonormal columns of ``Qb``."""
    for _ in range(2):
        z = z - Qb @ (Qb.T @ z)
    return z


def _next_direction(z, Qb, scale, eps, g, Dq=None):
    """``z`` normalised, or a fresh random direction orthogonal to ``Qb`` (and ``Dq``) when ``z``
    vanished (an invariant subspace was found, e.g. a low-rank matrix; ``scale=None``: a start
    vector, vanishing only if the space is full); ``None`` if the space is full."""
    nz = float(np.linalg.norm(z))
    ref = 1.0 if scale is None else max(abs(float(scale)), 1e-300)
    if scale is None or nz <= 1e3 * eps * ref:
        if scale is not None or nz <= 1e3 * eps:
            z = _orthogonalise(_deflate(g.standard_normal(Qb.shape[0]).astype(Qb.dtype, copy=False), Dq), Qb)
            nz = float(np.linalg.norm(z))
            if nz <= 1e3 * eps:
                return None
    return z / nz
