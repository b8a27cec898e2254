"""Top eigenpairs by a dense float32 solve refined in float64 (mixed precision).

Normalisation: none — eigenvalues of the symmetric matrix ``G`` passed in (or of the smaller
Gram side ``M M^T`` of a rectangular ``A``), descending; nothing is rescaled.

Why: a request for the top ``k`` values of a sampled matrix usually includes *bulk* values
near the soft edge, packed at relative spacing ``~ m^{-2/3}``.  Krylov methods (Lanczos,
ARPACK, LOBPCG) need ``~150`` products with ``G`` to converge those at ``m = 1500``,
whereas a dense float32 tridiagonal solve of the top ``k + pad`` eigenpairs costs about half
a float64 one and is blind to clustering.  Its eigenvectors are accurate to
``~ u_32 ||G|| / gap`` (``u_32 = 2^-24``), so one float64 Rayleigh–Ritz step on their span
brings the eigenvalues to float64 accuracy: the error of a Ritz value with residual
``rho`` is at most ``rho^2 / gap`` (Kato–Temple), i.e. ``~1e-13`` relative at the
bulk edge, against a dense float64 ``eigh``.

Completeness (nothing above ``edge2`` is skipped): the dense float32 solve sees the whole
spectrum, so the ``(p+1)``-th float32 eigenvalue bounds the rest up to ``slack``, an a
priori bound on ``|lambda_i(G_32) - lambda_i(G)|``:

* the float32 Gram product: ``2 u ||M||_2 ||M||_F`` (rounding ``M``) plus
  ``4 sqrt(d) u ||M||_F^2`` (accumulation; the probabilistic bound of Higham & Mary,
  SIAM J. Sci. Comput. 41 (2019), with ``sqrt(d)`` for the worst-case ``d`` and ``lambda = 4``),
  or ``u ||G||_F`` for a symmetric matrix rounded to float32;
* the tridiagonal solver's backward error, ``m u ||G_32||_2``.

``certified`` means the next float32 eigenvalue plus ``slack`` is at most ``edge2``.

Where float32 cannot deliver, the pairs come from a float64 dense solve instead
(``solve_dtype = "float64"``, about twice the cost): when a returned value's Kato–Temple bound
exceeds ``rtol`` (1e-8) relative to the value -- float32 resolves eigenvalues only to
``~u_32 ||G||``, so a dynamic range ``lambda_1 / lambda_k`` beyond ~1e4 (a spike of strength
100 over a unit bulk) or a near-degenerate pair -- and when ``slack`` exceeds a tenth of
``edge2`` (the float32 spectrum cannot tell what lies above the edge).

Examples
--------
>>> import numpy as np
>>> A = np.random.default_rng(0).standard_normal((300, 400)) / 20.0
>>> A[0, 0] += 3.0
>>> r = mixed_top_triplets(A, 3, edge=2.2)
>>> s_ref = np.linalg.svd(A, compute_uv=False)[:3]
>>> bool(np.allclose(r.s, s_ref, rtol=1e-12)), r.certified
(True, True)
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg as sla

from rmtfl._results import Result
from rmtfl._validate import check_in_range, check_int
from .blas import gram_upper, matmul
from .._backend import get_backend, scaled_matrix

__all__ = ["MixedResult", "mixed_top_eigh", "mixed_top_triplets"]

_U32 = float(np.finfo(np.float32).eps) / 2  # unit roundoff 2^-24
_U64 = float(np.finfo(np.float64).eps) / 2


@dataclass(frozen=True)
class MixedResult(Result):
    """Top pairs from :func:`mixed_top_eigh` / :func:`mixed_top_triplets` (docs/conventions.md §1 order and sides).

    ``values``: eigenvalues of ``G`` (descending, float64); ``s``: their square roots (singular
    values for triplets); ``vectors``: orthonormal eigenvectors (columns); ``U``, ``V``: left (N
    side) and right (d side) singular vectors for triplets (``None`` for :func:`mixed_top_eigh`);
    ``residuals``: ``||G x_i - theta_i x_i||``; ``error_bounds``: Kato–Temple bounds
    ``rho_i^2 / gap_i`` on ``|theta_i - lambda_i|`` (``inf`` where the gap is not resolved);
    ``certified``: every eigenvalue above ``edge2`` is returned; ``slack``: the a priori float32
    error bound used for it; ``n_computed``: eigenpairs computed by the dense solve;
    ``solve_dtype``: ``"float32"`` (refined) or ``"float64"`` (the fallback, module notes).
    """

    values: np.ndarray
    vectors: np.ndarray
    residuals: np.ndarray
    error_bounds: np.ndarray
    certified: bool
    slack: float
    n_computed: int
    solve_dtype: str = "float32"
    U: np.ndarray | None = None
    V: np.ndarray | None = None

    @property
    def s(self) -> np.ndarray:
        return np.sqrt(np.clip(self.values, 0.0, None))


def _dense32(G32, p: int, floor: float | None = None):
    """Eigenpairs of float32 ``G32`` (upper triangle), descending, and the value after them.

    Without ``floor``: the top ``p`` and the ``(p+1)``-th value (``-inf`` if none is left).
    With it: every pair above ``floor`` and ``floor`` itself as the bound on the rest."""
    m = G32.shape[0]
    if floor is not None:
        ev, vec = sla.eigh(G32, lower=False, subset_by_value=[floor, np.inf], driver="evr", check_finite=False)
        return ev[::-1], vec[:, ::-1], (float(floor) if ev.size < m else -np.inf)
    want = min(p + 1, m)
    ev, vec = sla.eigh(G32, lower=False, subset_by_index=[m - want, m - 1], driver="evr", check_finite=False)
    ev, vec = ev[::-1], vec[:, ::-1]
    if p >= m:
        return ev, vec, -np.inf
    return ev[:-1], vec[:, :-1], float(ev[-1])


def _refine(V32, apply):
    """One float64 Rayleigh–Ritz step on the span of ``V32``; ``apply(Q) -> (G Q, aux)``."""
    Q, _ = sla.qr(V32.astype(np.float64), mode="economic", check_finite=False)
    GQ, aux = apply(Q)
    GQ = np.asarray(GQ, dtype=np.float64)
    H = Q.T @ GQ
    th, S = np.linalg.eigh(0.5 * (H + H.T))
    th, S = th[::-1], S[:, ::-1]
    X = Q @ S
    rho = np.linalg.norm(GQ @ S - X * th[None, :], axis=0)
    aux = None if aux is None else np.asarray(aux, dtype=np.float64) @ S
    return th, X, rho, aux


def _kato_temple(th, rho, below: float):
    """``rho_i^2 / gap_i``, the gap measured to the neighbouring eigenvalues: those next to a Ritz
    value lie within their own residual of it, and the one after the last lies at most at
    ``below`` (the next float32 value plus slack)."""
    up = np.concatenate([[np.inf], th[:-1] - rho[:-1]])
    lo = np.concatenate([th[1:] + rho[1:], [below]])
    gap = np.minimum(up - th, th - lo)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(gap > 0, rho**2 / gap, np.inf)


def mixed_top_eigh(S, k: int, *, edge2=None, pad: int = 10, rtol: float = 1e-8) -> MixedResult:
    """Top ``k`` (and every one above ``edge2``) eigenpairs of a symmetric host matrix ``S``.

    Normalisation: none (docs/conventions.md §1: descending).  ``S`` and ``k`` positional, the
    rest keyword-only.

    Parameters
    ----------
    S : ndarray (m, m), symmetric, float64 or float32 (the refinement runs in ``S``'s dtype
        for the products, float64 for the Rayleigh–Ritz problem).
    k : int, pairs always returned.
    edge2 : float, optional. Every eigenvalue above it is returned; ``certified`` tells
        whether that is guaranteed (see the module notes).
    pad : int, extra float32 pairs in the Rayleigh–Ritz basis (they make the returned
        ones' residuals smaller; ``k + pad`` pairs are refined).
    rtol : float, the relative Kato–Temple bound every returned value must meet after the
        refinement; otherwise the pairs come from a float64 dense solve (``solve_dtype``).

    >>> S = np.diag(np.arange(1.0, 201.0))
    >>> mixed_top_eigh(S, 2).values.tolist()
    [200.0, 199.0]
    """
    S, sc = scaled_matrix("S", S, get_backend("numpy"))  # exact power-of-two rescaling (extreme scales)
    if S.shape[0] != S.shape[1]:
        raise ValueError(f"S must be a square 2-d array, got shape {S.shape}")
    m = S.shape[0]
    k = check_int("k", k, 1, m)
    pad = check_int("pad", pad, 0)
    rtol = check_in_range("rtol", rtol, 0.0, 1.0, lo_open=True)
    if edge2 is not None:
        edge2 = check_in_range("edge2", edge2, None, None) / sc
    G32 = np.asfortranarray(S, dtype=np.float32)
    fro = float(np.linalg.norm(S))  # ||S||_F >= ||S||_2 (S need not be PSD)
    # slack: rounding S to float32 (u ||S||_F) plus the solver's backward error (m u ||S||_2)
    fields, _ = _solve(G32, lambda: np.asfortranarray(S, dtype=np.float64),
                       lambda Q: (matmul(S, Q.astype(S.dtype, copy=False)), None), m, k, edge2, pad,
                       lambda top: _U32 * (1 + m) * fro, rtol)
    return MixedResult(**_rescaled(fields, sc))


def mixed_top_triplets(A, k: int, *, edge=None, pad: int = 10, rtol: float = 1e-8) -> MixedResult:
    """Top ``k`` (and every one above ``edge``) singular triplets of a host matrix ``A`` (N x d).

    Normalisation: none (docs/conventions.md §1: descending, left = N side).  ``A`` and ``k``
    positional, the rest keyword-only.

    The eigenpairs of the smaller Gram side ``G = M M^T`` (``M = A`` if ``N <= d``, else
    ``A^T``) come from :func:`mixed_top_eigh`'s scheme with ``G_32 = M_32 M_32^T``; products
    with ``G`` in the refinement are ``M (M^T Q)`` (never forming ``G`` in float64).  The other
    side's vectors are ``M^T x / s`` from the same products, so ``A v = s u`` holds to rounding.
    ``pad``, ``rtol`` as in :func:`mixed_top_eigh`; ``edge`` on the singular-value scale.

    >>> A = np.diag([3.0, 2.0, 1.0])
    >>> r = mixed_top_triplets(A, 1)
    >>> r.s.tolist(), r.U.shape, r.V.shape
    ([3.0], (3, 1), (3, 1))
    """
    A, sc = scaled_matrix("A", A, get_backend("numpy"))  # exact power-of-two rescaling (extreme scales)
    N, d = A.shape
    left = N <= d
    M = A if left else A.T  # G = M M^T, m x m with m = min(N, d)
    m, inner = M.shape
    k = check_int("k", k, 1, m)
    pad = check_int("pad", pad, 0)
    rtol = check_in_range("rtol", rtol, 0.0, 1.0, lo_open=True)
    if edge is not None:
        edge = check_in_range("edge", edge, 0.0, None) / sc
    G32 = gram_upper(M.astype(np.float32))
    fro2 = float(np.trace(G32, dtype=np.float64))  # ||M||_F^2

    def slack(top):  # top ~ ||G||_2 = ||M||_2^2; see the module notes
        return _U32 * (2.0 * np.sqrt(top * fro2) + 4.0 * np.sqrt(inner) * fro2 + m * top)

    def apply(Q):
        Y = matmul(M.T, Q.astype(M.dtype, copy=False))
        return matmul(M, Y), Y

    fields, Y = _solve(G32, lambda: gram_upper(M.astype(np.float64)), apply, m, k,
                       None if edge is None else edge * edge, pad, slack, rtol)
    s = np.sqrt(np.clip(fields["values"], 0.0, None))
    other = Y / np.where(s > 0, s, 1.0)[None, :]  # M^T x / s
    U, V = (fields["vectors"], other) if left else (other, fields["vectors"])
    return MixedResult(**_rescaled(fields, sc * sc), U=np.ascontiguousarray(U), V=np.ascontiguousarray(V))


def _rescaled(fields, c: float):
    """The eigenvalue-scale fields multiplied back by ``c`` (the square of the matrix scale for triplets)."""
    if c == 1.0:
        return fields
    out = dict(fields)
    for key in ("values", "residuals", "error_bounds"):
        out[key] = fields[key] * c
    out["slack"] = fields["slack"] * c
    return out


def _solve(G32, G64_of, apply, m, k, edge2, pad, slack_of, rtol):
    """Dense float32 solve and float64 refinement, or a float64 dense solve where float32 cannot
    deliver (see the module notes); returns the fields of :class:`MixedResult` and ``aux``.

    ``slack_of(top)`` is the a priori float32 error bound given ``top``, the largest float32
    eigenvalue (``||G||_2`` for a PSD ``G``, to float32 accuracy); ``G64_of()`` builds the float64
    upper triangle for the fallback."""
    p = min(k + pad, m)
    ev, V, nxt = _dense32(G32, p, None)
    top = max(float(ev[0]), 0.0)
    slack = float(slack_of(top))
    if edge2 is None or nxt <= edge2 - slack or slack <= 0.1 * abs(edge2):
        if edge2 is not None and nxt > edge2 - slack:  # more values near or above the edge: take them by value
            ev, V, nxt = _dense32(G32, p, edge2 - slack)
        out = _finish(ev, V, nxt, slack, apply, k, edge2, rtol, "float32")
        if out is not None:
            return out
    # float32 cannot resolve these values (a large dynamic range or a near-degenerate pair): float64
    G64 = G64_of()
    slack = 4.0 * m * _U64 * top
    ev, V, nxt = _dense32(G64, p, None)
    if edge2 is not None and nxt > edge2 - slack:
        ev, V, nxt = _dense32(G64, p, edge2 - slack)
    return _finish(ev, V, nxt, slack, apply, k, edge2, None, "float64")


def _finish(ev, V, nxt, slack, apply, k, edge2, rtol, solve):
    """Refine, select and bound; ``None`` when a returned value misses ``rtol`` (relative bound)."""
    th, X, rho, aux = _refine(V, apply)
    n_above = 0 if edge2 is None else int(np.count_nonzero(th > edge2))
    n = min(max(k, n_above), th.size)
    bounds = _kato_temple(th, rho, nxt + slack)[:n]
    if rtol is not None and not np.all(bounds <= rtol * np.maximum(np.abs(th[:n]), np.finfo(float).tiny)):
        return None
    fields = dict(values=th[:n].copy(), vectors=np.ascontiguousarray(X[:, :n]), residuals=rho[:n],
                  error_bounds=bounds, certified=bool(edge2 is not None and nxt + slack <= edge2),
                  slack=float(slack), n_computed=int(ev.size), solve_dtype=solve)
    return fields, (None if aux is None else aux[:, :n])
