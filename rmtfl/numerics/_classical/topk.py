"""Top-``k`` spectra of sampled matrices: singular triplets and eigenpairs, with a completeness check.

Normalisation: nothing is rescaled — singular values of the matrix passed in (eigenvalues of
the symmetric one), descending (docs/conventions.md §1).  All results are host numpy arrays.

Solvers (``method=``), all validated against the dense float64 solve in ``tests/numerics``:

* ``"mixed"`` (:mod:`rmtfl.numerics._classical.mixed`): dense float32 eigen-solve of the smaller Gram side,
  refined by one float64 Rayleigh–Ritz step.  Values to float64 accuracy (Kato–Temple bound
  ``rho^2/gap``, ~1e-13 relative against dense), vectors with residual ``~ u_32 ||A||^2``.  The
  dense solve sees the whole spectrum, so nothing near the bulk edge is skipped.  Where float32
  cannot resolve a value to 1e-8 (a dynamic range beyond ~1e4) it solves in float64 instead
  (``method`` then reads ``"dense"``).  A request
  for ``k`` values usually includes *bulk* values at the soft edge, spaced ``~ m^{-2/3}``; no
  Krylov method converges those cheaply (~150 products at ``m = 1500``), so this is the
  default for ``200 <= min(N, d) <= MIXED_MAX``.
* ``"iterative"``: Lanczos on the smaller Gram side (:mod:`rmtfl.numerics._classical.lanczos`), start vector
  from ``rng``; only the returned triplets are converged to ``tol``; with ``edge`` it goes on until
  the next Ritz value is certainly below it (value plus residual).  Cheap when every requested value
  is a separated outlier (~40 products at ``4000 x 4000`` with three spikes).  ARPACK on failure.
* ``"arpack"``: ``svds``/``eigsh`` with an explicit start vector, asking ``k + margin`` values;
  with ``edge`` the smallest computed one must lie at or below it, else the request doubles.
* ``"dense"``: float64 ``eigh`` of the Gram side (``subset_by_index``), every value above ``edge``.

Reliability (every method, numpy and cupy):

* *Extreme scales*: a matrix whose largest entry lies outside ``[2^-256, 2^256]`` (float32:
  ``[2^-30, 2^30]``) is divided by a power of two first (exact) and the results multiplied back
  (:func:`rmtfl.numerics._backend.scaled_matrix`), so ``1e200 * A`` gives ``1e200 *`` the values of ``A`` (to ``1e-12``).
* *A value dwarfing the rest, exact zeros*: the Gram-based solvers give a value ``s_i`` to
  relative accuracy ``~u (s_max / s_i)^2`` only.  When a returned value lies below
  ``GRAM_TAU * s_max = 1e-3 s_max`` (or ``A = 0``), every triplet comes instead from LAPACK's SVD of
  ``A`` itself (``method = "svd"``; the values are ``numpy.linalg.svd``'s, the vectors orthonormal,
  a zero value ``<~ u s_max``).  Guarantee: every returned value above ``1e-3 s_max`` agrees with
  ``numpy.linalg.svd`` to ``1e-10`` relative (measured ``<= 5e-12``), every smaller one to
  ``~u s_max`` absolute, and ``U``, ``V`` are orthonormal with ``||A v - s u|| <~ 1e-10 s_max``.
* *Exact degeneracy*: the dense and mixed solvers see the whole spectrum.  Lanczos runs with a
  start block of 2 and repeats with a block one larger than any returned value's count of copies
  that reaches the block (:mod:`rmtfl.numerics._classical.lanczos`); ARPACK's certificate is
  confirmed by a band-Lanczos run with the returned vectors projected out.  So an exactly repeated
  value (axis-aligned or rotated, straddling ``k`` or not) is never reported ``complete`` with a
  copy missing.
* *Residuals*: ``.residuals`` is measured on the returned arrays after every solve
  (:mod:`rmtfl.numerics._classical.certify`), ``max(||A v - s u||, ||A^T u - s v||)``, never a
  solver's own estimate.

``"auto"``: dense below ``min(N, d) = 200``, for large requests (``k + margin >
DENSE_FRACTION * min(N, d)``) and on cupy; ``"mixed"`` up to ``MIXED_MAX``; Lanczos above it,
and whenever ``tol > 0`` (a residual tolerance asked for).  Measured crossover for a top-10
request at the two-step bulk edge (seconds, mixed / Lanczos): 0.15 / 0.24 at ``m = 1500``,
0.76 / 0.90 at 3000, 1.6 / 2.0 at 4000, 5.1 / 6.3 at 6000 (float32), ~30 / 11 at 8000
(float32: the dense reduction of a 256 MB matrix is memory bound); and for separated outliers
only Lanczos needs just ~40 products (0.3 s at 4000), so above 2000 it is the better bet.

Examples
--------
>>> import numpy as np
>>> A = np.diag([3.0, 2.0, 1.0])
>>> top = top_singular_triplets(A, 1, rng=0)
>>> float(top.s[0]), top.U.shape, top.V.shape
(3.0, (3, 1), (3, 1))
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg as sla
from scipy.sparse import linalg as spla

from rmtfl._results import Result
from rmtfl._validate import check_choice, check_in_range, check_int, check_rng
from .blas import gram_upper
from .certify import deflated_check, deflated_check_op, eigpair_residuals, triplet_residuals
from .promote import gram_float64, gram_tries, wide_product
from .._backend import get_backend, scaled_matrix, to_numpy

__all__ = ["TopTriplets", "TopEigenpairs", "top_singular_triplets", "top_eigenpairs", "dense_spectrum_and_top",
           "DenseSpectrum", "DENSE_FRACTION", "MIXED_MAX", "GRAM_TAU", "gram_route_ok",
           "svd_triplets"]

#: ``"auto"`` uses the dense path when ``k + margin`` exceeds this fraction of ``min(N, d)``
#: or when ``min(N, d)`` is below ``_DENSE_MIN``.
DENSE_FRACTION = 0.15
_DENSE_MIN = 200
#: ``"auto"`` uses the mixed-precision dense solver up to this ``min(N, d)`` (Lanczos above).
MIXED_MAX = 2000

#: relative accuracy floor of the Gram route: a value ``s_i >= GRAM_TAU * s_max`` taken from the
#: eigenvalues of the Gram matrix has relative error ``<~ u (s_max / s_i)^2 <= 1e-10`` (measured
#: ``<= 5e-12`` on Gaussian matrices up to ``1500 x 1500``); anything smaller takes the SVD of ``A``.
GRAM_TAU = 1e-3


def gram_route_ok(ev, dtype=np.float64, *, promoted_from_float32: bool = False) -> bool:
    """Whether the Gram eigenvalues ``ev`` (descending) give every singular value well: none is
    indistinguishable from zero (``lambda_i < max(1e-12, 100 u) lambda_1``, where the Gram route
    returns ``~sqrt(u) s_max`` instead of ``~u s_max``) and at most 1 % of them lie below
    ``GRAM_TAU^2 lambda_1`` (one value dwarfing the bulk).  ``False`` sends to the SVD of ``A``.

    ``promoted_from_float32``: ``ev`` are the float64 Gram eigenvalues of a float32 matrix
    (:mod:`rmtfl.numerics._classical.promote`), held to float32's own accuracy, the float32 SVD's
    ``|ds_i| <~ u_32 s_max``.  Above the zero threshold every value meets it
    (``|ds_i| <~ u_64 s_max^2 / s_i <= 1e-10 s_max``), so the 1 % rule is not applied."""
    ev = np.asarray(ev, dtype=np.float64)
    lam0 = float(ev[0]) if ev.size else 0.0
    if not lam0 > 0.0:
        return False
    u = float(np.finfo(dtype).eps) / 2
    if float(ev[-1]) < max(1e-12, 100.0 * u) * lam0:
        return False
    return promoted_from_float32 or int(np.count_nonzero(ev < GRAM_TAU**2 * lam0)) <= 0.01 * ev.size


def svd_triplets(A, be):
    """``(s, U, V)``, all triplets from LAPACK's SVD of ``A`` itself (``full_matrices=False``; on the
    host ``numpy.linalg.svd``, so the values are exactly numpy's), host arrays, ``s`` float64."""
    U, s, Vt = be.xp.linalg.svd(A, full_matrices=False)
    return to_numpy(s).astype(np.float64), to_numpy(U), to_numpy(Vt).T


def _needs_svd(s, n: int) -> bool:
    """The Gram-based top ``n`` values ``s`` are not all above ``GRAM_TAU * s_max`` (or ``A = 0``)."""
    s = np.asarray(s, dtype=np.float64)
    return not (s.size and s[0] > 0 and s[min(n, s.size) - 1] >= GRAM_TAU * s[0])


@dataclass(frozen=True)
class TopTriplets(Result):
    """Top singular triplets: ``A ≈ U diag(s) V^T`` on the returned part (docs/conventions.md §1 order and sides).

    ``s`` descending (length ``n``), ``U`` ``N x n`` (left, N side), ``V`` ``d x n``
    (right, d side).  ``complete`` is True when it is certified that every
    singular value above ``edge`` is among ``s`` (always True on the dense path);
    ``n_above`` counts the returned values above ``edge`` (None without edge);
    ``n_computed`` is how many values were computed in the last solve; ``residuals`` (every
    method): the true triplet residual ``max(||A v_i - s_i u_i||, ||A^T u_i - s_i v_i||)``,
    measured in float64 on the returned arrays after the solve (absolute, in the units of ``A``;
    ``relative_residuals`` divides by ``s_1 = ||A||_2``).  One of the two relations holds to
    rounding by construction (the other side's vectors are computed from it); the other carries
    the solver's error: ``~1e-15 s_1`` for the float64 solvers, ``~u_32 s_1^2 / s_i`` for
    ``"mixed"`` (its float32 eigenvectors after one float64 Rayleigh-Ritz step).
    """

    s: np.ndarray
    U: np.ndarray
    V: np.ndarray
    complete: bool
    edge: float | None
    n_above: int | None
    n_computed: int
    method: str
    residuals: np.ndarray | None = None

    @property
    def relative_residuals(self) -> np.ndarray:
        """``residuals / s_1`` (``s_1 = ||A||_2``; zeros when ``A = 0``): the backward error of each triplet."""
        return _relative(self.residuals, self.s)


def _relative(res, vals):
    top = float(np.max(np.abs(vals))) if np.size(vals) else 0.0
    return np.asarray(res, dtype=np.float64) / (top if top > 0 else 1.0)


@dataclass(frozen=True)
class TopEigenpairs(Result):
    """Top eigenpairs of a symmetric PSD matrix: ``values`` descending, ``vectors`` columns (docs/conventions.md §1).

    ``complete``, ``edge``, ``n_above``, ``n_computed``, ``method`` as in :class:`TopTriplets`;
    ``residuals`` (every method, ``None`` for a ``LinearOperator``): the true residual
    ``||S x_i - lambda_i x_i||`` measured in float64 on the returned arrays (absolute;
    ``relative_residuals`` divides by ``|lambda_1|``).
    """

    values: np.ndarray
    vectors: np.ndarray
    complete: bool
    edge: float | None
    n_above: int | None
    n_computed: int
    method: str
    residuals: np.ndarray | None = None

    @property
    def relative_residuals(self) -> np.ndarray | None:
        """``residuals / |lambda_1|`` (zeros when ``S = 0``; ``None`` without residuals)."""
        return None if self.residuals is None else _relative(self.residuals, self.values)


def _check_request(k, margin, method, methods, tol, edge, maxiter, rng):
    """The argument checks shared by :func:`top_singular_triplets` and :func:`top_eigenpairs`:
    ``(k, margin, tol, edge, maxiter, rng)`` validated (errors name the parameter)."""
    k = check_int("k", k, 1)
    margin = check_int("margin", margin, 0, 10**6)
    check_choice("method", method, methods)
    tol = check_in_range("tol", tol, 0.0, 1.0)
    if edge is not None:
        edge = check_in_range("edge", edge, 0.0, None)
    if maxiter is not None:
        maxiter = check_int("maxiter", maxiter, 1, 10**7)
    return k, margin, tol, edge, maxiter, check_rng(rng)


def _dense_eigh(G, kk: int, edge2, be):
    """Top eigenpairs of symmetric ``G``: the top ``kk`` and, with ``edge2``, every one above it."""
    m = G.shape[0]
    if be.name == "numpy":  # G may hold only its upper triangle (gram_upper)
        ev, vec = sla.eigh(G, lower=False, subset_by_index=[m - kk, m - 1], driver="evr")
        if edge2 is not None and ev[0] > edge2:
            ev, vec = sla.eigh(G, lower=False, subset_by_value=[edge2, np.inf], driver="evr")
    else:
        ev, vec = be.xp.linalg.eigh(G)
        take = kk if edge2 is None else max(kk, int((ev > edge2).sum()))
        ev, vec = ev[m - take:], vec[:, m - take:]
    return ev[::-1], vec[:, ::-1]


def _dense_triplets(A, kk: int, edge, be):
    """Top triplets from the eigendecomposition of the smaller Gram side."""
    N, d = A.shape
    left = N <= d
    if be.name == "numpy" and A.dtype in (np.float32, np.float64):
        G = gram_upper(A if left else A.T)  # scipy's BLAS, the pool of the eigh that follows
    else:
        G = A @ A.T if left else A.T @ A
    ev, vec = _dense_eigh(G, kk, None if edge is None else edge * edge, be)
    s = be.xp.sqrt(be.xp.clip(ev, 0.0, None))
    safe = be.xp.where(s > 0, s, 1.0)
    other = (A.T @ vec if left else A @ vec) / safe[None, :]
    U, V = (vec, other) if left else (other, vec)
    return to_numpy(s).astype(np.float64), to_numpy(U), to_numpy(V)


@dataclass(frozen=True)
class DenseSpectrum(Result):
    """All singular values and the top triplets of one dense solve (:func:`dense_spectrum_and_top`).

    Order and sides as in docs/conventions.md §1.

    ``singular_values``: all ``min(N, d)`` values, descending (host float64); ``s``, ``U`` (N side),
    ``V`` (d side): the top ``k`` triplets as in :class:`TopTriplets`.  Unpacks as
    ``s_all, s, U, V = dense_spectrum_and_top(A, k)``.
    """

    singular_values: np.ndarray
    s: np.ndarray
    U: np.ndarray
    V: np.ndarray

    def __iter__(self):
        return iter((self.singular_values, self.s, self.U, self.V))


def dense_spectrum_and_top(A, k: int, *, backend="numpy") -> DenseSpectrum:
    """All singular values (host float64, descending) and the top ``k`` triplets from ONE dense
    ``eigh`` of the smaller Gram side (the device path of a full-spectrum measurement: one Gram
    product and one eigendecomposition instead of ``eigvalsh`` plus ``eigh``).

    Normalisation: none (docs/conventions.md §1: descending, left = N side).  ``A`` and ``k``
    positional, ``backend`` keyword-only.  Returns a :class:`DenseSpectrum` (host arrays).

    >>> s_all, s, U, V = dense_spectrum_and_top(np.diag([3.0, 2.0, 1.0]), 1)
    >>> s_all.tolist(), s.tolist(), U.shape
    ([3.0, 2.0, 1.0], [3.0], (3, 1))
    """
    be = get_backend(backend)
    A, scale = scaled_matrix("A", A, be)
    N, d = A.shape
    kk = check_int("k", k, 1, min(N, d))
    left = N <= d
    M = A if left else A.T                                   # the wide side, m x L
    for wide64 in gram_tries(A):                             # float32, then its float64 Gram (promote)
        G = gram_float64(M, be) if wide64 else M @ M.T
        ev, vec = be.xp.linalg.eigh(G)
        del G
        ev_h = to_numpy(ev).astype(np.float64)[::-1]
        if (gram_route_ok(ev_h, np.float64 if wide64 else A.dtype, promoted_from_float32=wide64)
                and not _needs_svd(np.sqrt(np.clip(ev_h, 0.0, None)), kk)):
            break
        ev = vec = None
    if vec is None:
        # a value dwarfs the bulk, or a zero value: the Gram route loses them; LAPACK's SVD of A
        s_all, U, V = svd_triplets(A, be)
        s_all = s_all * scale
        return DenseSpectrum(s_all, s_all[:kk].copy(), np.ascontiguousarray(U[:, :kk]),
                             np.ascontiguousarray(V[:, :kk]))
    s_dev = be.xp.sqrt(be.xp.clip(ev[::-1], 0.0, None))
    top = vec[:, ::-1][:, :kk]
    del vec
    s = s_dev[:kk]
    other = (wide_product(M, top, be) if wide64 else M.T @ top) / be.xp.where(s > 0, s, 1.0)[None, :]
    U, V = (top, other) if left else (other, top)
    s_all = to_numpy(s_dev).astype(np.float64) * scale
    return DenseSpectrum(s_all, s_all[:kk].copy(), to_numpy(U), to_numpy(V))


def _finish(s, edge, k):
    if edge is None:
        return min(k, s.size), None
    n_above = int(np.count_nonzero(s > edge))
    return min(max(k, n_above), s.size), n_above


def _auto_method(method, be, m, kk, tol, host_float):
    """The solver ``"auto"`` picks (see the module notes); explicit methods pass through."""
    if be.name != "numpy" or kk >= m - 1:
        return "dense"
    if method != "auto":
        return method
    if m < _DENSE_MIN or kk > DENSE_FRACTION * m or not host_float:
        return "dense"
    if tol > 0 or m > MIXED_MAX:
        return "iterative"
    return "mixed"


def top_singular_triplets(A, k: int, *, rng=None, edge=None, margin: int = 5, backend="numpy",
                          method: str = "auto", tol: float = 0.0, maxiter: int | None = None) -> TopTriplets:
    """Largest singular triplets of ``A`` (``N x d``), with an optional completeness guarantee.

    Normalisation: none (docs/conventions.md §1: descending, left = N side).  ``A`` and ``k``
    positional, everything else keyword-only.

    Parameters
    ----------
    A : array (numpy, or cupy with ``backend="cupy"``)
    k : int, number of triplets wanted (at least ``k`` are returned when ``k <= min(N, d)``).
    rng : seed or Generator for the Lanczos/ARPACK start vector (same seed => same output).
    edge : float, optional. If given, every singular value above ``edge`` is returned
        (``n = max(k, n_above)`` triplets) and ``complete`` certifies that none was
        skipped (per solver: see the module notes).  Pass e.g. the bulk edge plus a
        Tracy–Widom margin (:func:`rmtfl.theory.edge_margin`).
    margin : int, extra values computed beyond the request by ARPACK (docs/theory/two_step.md §9: ``>= 5``);
        it also sets the dense switch.  Lanczos and the mixed solver need none: they certify
        the value after the last one above ``edge`` directly.
    backend : ``"numpy"`` or ``"cupy"`` (dense on device).
    method : ``"auto"``, ``"mixed"``, ``"iterative"`` (Lanczos; ARPACK if it does not converge
        within ``maxiter`` steps), ``"arpack"`` (``svds``) or ``"dense"``; see the module notes.
        ``.method`` tells which ran; ``"svd"`` when a requested value lies below ``1e-3 s_max``
        (then LAPACK's SVD of ``A`` gives every triplet: module notes, "Reliability").
    tol : float, residual tolerance ``||A^T u - s v|| <= tol * s_1`` (Lanczos; ``0``: ``1e-10``)
        or ARPACK's ``tol`` (``0``: machine precision).  Not used by ``"mixed"``, whose residuals
        are reported in ``.residuals``.
    maxiter : int, optional, most Lanczos steps / ARPACK iterations.

    >>> import numpy as np
    >>> W = np.random.default_rng(1).standard_normal((300, 200)) / np.sqrt(200)
    >>> W += 3.0 * np.outer(np.eye(300)[0], np.eye(200)[0])
    >>> t = top_singular_triplets(W, 1, rng=2, edge=2.3)
    >>> t.n_above, t.complete, round(float(t.s[0]), 1), t.method
    (1, True, 3.4, 'mixed')
    """
    k, margin, tol, edge, maxiter, rng = _check_request(
        k, margin, method, ("auto", "mixed", "iterative", "arpack", "dense"), tol, edge, maxiter, rng)
    be = get_backend(backend)
    A, scale = scaled_matrix("A", A, be)
    N, d = A.shape
    m = min(N, d)
    if k > m:
        raise ValueError(f"k must be in [1, min(N, d)] = [1, {m}], got {k}")
    edge_in = None if edge is None else float(edge)
    if edge is not None:
        edge = edge / scale
    kk = min(k + margin, m)
    host_float = be.name == "numpy" and A.dtype in (np.float32, np.float64)
    method = _auto_method(method, be, m, kk, tol, host_float)
    out = None
    if method == "iterative":
        from .lanczos import lanczos_triplets

        lz = lanczos_triplets(A, k, edge=edge, rng=rng, tol=tol, maxiter=maxiter)
        if lz is not None:
            n_above = None if edge is None else int(np.count_nonzero(lz.s > edge))
            out = (lz.s.copy(), lz.U, lz.V, bool(edge is not None and lz.certified), n_above,
                   int(lz.s.size + (edge is not None)), "lanczos")
        else:
            method = "arpack"
    elif method == "mixed":
        from .mixed import mixed_top_triplets

        r = mixed_top_triplets(A, k, edge=edge, pad=max(margin, 10))
        n_above = None if edge is None else int(np.count_nonzero(r.s > edge))
        out = (r.s, r.U, r.V, bool(edge is not None and r.certified), n_above, r.n_computed,
               "mixed" if r.solve_dtype == "float32" else "dense")
    while out is None:
        dense = method == "dense"
        if dense:
            # with an edge the dense path returns every value above it, so it is always complete
            s, U, V = _dense_triplets(A, kk, edge, be)
        else:
            v0 = rng.standard_normal(m)
            U, s, Vt = spla.svds(A, k=kk, v0=v0, tol=tol, maxiter=maxiter, solver="arpack")
            order = np.argsort(s)[::-1]
            s, U, V = s[order], U[:, order], Vt[order].T
        computed = s.size
        certified = dense or edge is None or s[-1] <= edge
        if certified and not dense and edge is not None:
            # ARPACK sees one copy of an exactly repeated value: a deflated band-Lanczos check
            certified = deflated_check(A, U if N <= d else V, edge, rng)
        if certified:
            complete = bool(dense or edge is not None)
            n, n_above = _finish(s, edge, k)
            out = (s[:n].copy(), U[:, :n], V[:, :n], complete, n_above, int(computed),
                   "dense" if dense else "svds")
            break
        kk = min(2 * kk, m)
        if kk >= m - 1 or computed >= kk:
            method = "dense"
    s, U, V, complete, n_above, computed, meth = out
    if _needs_svd(s, s.size):
        # a requested value below GRAM_TAU s_max (a dwarfed bulk or a zero): the Gram-based solvers
        # lose it, so every triplet comes from LAPACK's SVD of A (complete: it sees the whole spectrum)
        s_all, U_all, V_all = svd_triplets(A, be)
        n, n_above = _finish(s_all, edge, k)
        s, U, V, complete, computed, meth = (s_all[:n].copy(), U_all[:, :n], V_all[:, :n], True,
                                             s_all.size, "svd")
    res = triplet_residuals(A, s, U, V, be, scale)  # measured, whatever the solver believes
    return TopTriplets(s * scale, np.ascontiguousarray(U), np.ascontiguousarray(V), bool(complete), edge_in,
                       n_above, int(computed), meth, res)


def top_eigenpairs(S, k: int, *, rng=None, edge=None, margin: int = 5, backend="numpy",
                   method: str = "auto", tol: float = 0.0, maxiter: int | None = None) -> TopEigenpairs:
    """Largest eigenpairs of a symmetric PSD matrix ``S`` (e.g. a kernel Gram matrix).

    Normalisation: none (docs/conventions.md §1: descending).  ``S`` and ``k`` positional,
    everything else keyword-only.

    Same contract as :func:`top_singular_triplets` (``edge`` on the eigenvalue scale here):
    ``method`` is ``"auto"``, ``"mixed"`` (:func:`rmtfl.numerics._classical.mixed.mixed_top_eigh`),
    ``"iterative"`` (ARPACK ``eigsh(which="LA")`` with a start vector from ``rng``) or
    ``"dense"``; ``"auto"`` as in the module notes, with ARPACK above ``MIXED_MAX``.  ``S`` may
    also be a ``scipy.sparse.linalg.LinearOperator`` (then always ARPACK, numpy only).

    >>> import numpy as np
    >>> r = top_eigenpairs(np.diag([5.0, 1.0, 0.5]), 1, rng=0)
    >>> r.values.tolist(), r.vectors.shape
    ([5.0], (3, 1))
    """
    k, margin, tol, edge, maxiter, rng = _check_request(
        k, margin, method, ("auto", "mixed", "iterative", "dense"), tol, edge, maxiter, rng)
    be = get_backend(backend)
    is_op = isinstance(S, spla.LinearOperator)
    scale = 1.0
    if not is_op:
        S, scale = scaled_matrix("S", S, be)
    if len(S.shape) != 2 or S.shape[0] != S.shape[1]:
        raise ValueError(f"S must be a square 2-d array, got shape {tuple(S.shape)}")
    edge_in = None if edge is None else float(edge)
    if edge is not None:
        edge = edge / scale
    n_ = S.shape[0]
    if k > n_:
        raise ValueError(f"k must be in [1, {n_}], got {k}")
    kk = min(k + margin, n_)
    host_float = not is_op and be.name == "numpy" and S.dtype in (np.float32, np.float64)
    method = "iterative" if is_op else _auto_method(method, be, n_, kk, tol, host_float)
    if method == "mixed":
        from .mixed import mixed_top_eigh

        r = mixed_top_eigh(S, k, edge2=edge, pad=max(margin, 10))
        n_above = None if edge is None else int(np.count_nonzero(r.values > edge))
        return TopEigenpairs(r.values * scale, r.vectors, bool(edge is not None and r.certified), edge_in,
                             n_above, r.n_computed, "mixed" if r.solve_dtype == "float32" else "dense",
                             eigpair_residuals(S, r.values, r.vectors, be, scale))
    while True:
        dense = method == "dense"
        if dense:
            ev, vec = _dense_eigh(S, kk, edge, be)
            ev, vec = to_numpy(ev).astype(np.float64), to_numpy(vec)
        else:
            v0 = rng.standard_normal(n_)
            ev, vec = spla.eigsh(S, k=min(kk, n_ - 1), which="LA", v0=v0, tol=tol, maxiter=maxiter)
            order = np.argsort(ev)[::-1]
            ev, vec = ev[order], vec[:, order]
        computed = ev.size
        certified = dense or edge is None or ev[-1] <= edge
        if certified and not dense and edge is not None:
            certified = deflated_check_op(S, vec, edge, rng)  # ARPACK misses exact copies: check
        if certified:
            break
        if kk >= n_ - 1:
            if is_op:
                break
            method = "dense"
            continue
        kk = min(2 * kk, n_)
    complete = bool(dense or (edge is not None and certified))
    n, n_above = _finish(ev, edge, k)
    res = None if is_op else eigpair_residuals(S, ev[:n], vec[:, :n], be, scale)
    return TopEigenpairs(ev[:n] * scale, np.ascontiguousarray(vec[:, :n]), complete, edge_in, n_above,
                         int(computed), "dense" if dense else "eigsh", res)
