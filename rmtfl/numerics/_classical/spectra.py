"""Spectra of sampled matrices: singular values, top triplets, outlier counts, overlaps, ESDs.

Normalisation: nothing is rescaled here — singular values are those of the
matrix passed in, sorted in decreasing order (docs/conventions.md §1); eigenvalues
of ``W W^T`` are the squared singular values padded with zeros to length ``N``.
All results are host numpy arrays, whatever the backend of the input.

Signatures: the array (``A``, ``W``, ``s``, ``eigs``) is positional, and so is ``psi`` where a
function compares with the Marchenko–Pastur law (as in :func:`rmtfl.theory.mp_cdf`); every other
parameter -- sizes ``N, d``, ``var``, ``side``, ``method``, ``backend`` -- is keyword-only.

Dense path: the eigenvalues of the smaller Gram side (``A A^T`` or ``A^T A``,
``eigvalsh``) are 2.5-5x faster than ``svd(compute_uv=False)`` on this machine
(2000x2000: 0.47 s vs 1.21 s) and agree to ~1e-13 absolute in float64; the
smallest singular values lose relative accuracy (absolute error
``~ eps ||A||^2 / s``), which is irrelevant for spectral densities and outliers.
``method="svd"`` gives the LAPACK SVD instead, and ``"auto"`` switches to it by itself when the
Gram eigenvalues show a value indistinguishable from zero or a bulk dwarfed by one value (see
:func:`singular_values` for the accuracy guarantee).  Extreme scales are rescaled exactly by a
power of two (:func:`rmtfl.numerics._backend.scaled_matrix`).

Top-``k`` spectra (``top_singular_triplets``, ``top_eigenpairs``, with a completeness check at
the bulk edge) live in :mod:`rmtfl.numerics._classical.topk` and are re-exported here.

Examples
--------
>>> import numpy as np
>>> A = np.diag([3.0, 2.0, 1.0])
>>> singular_values(A).tolist()
[3.0, 2.0, 1.0]
>>> top = top_singular_triplets(A, 1, rng=0)
>>> float(top.s[0]), top.U.shape, top.V.shape
(3.0, (3, 1), (3, 1))
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg as sla

from rmtfl._results import Result
from rmtfl._validate import (check_array, check_choice, check_int, check_memory, check_nonnegative,
                             check_positive)
from .blas import gram_upper
from .._backend import get_backend, scaled_matrix, to_numpy
from .promote import gram_float64, gram_tries
from .topk import (DenseSpectrum, TopEigenpairs, TopTriplets, dense_spectrum_and_top, gram_route_ok,
                   top_eigenpairs, top_singular_triplets)

__all__ = [
    "singular_values",
    "gram_eigenvalues",
    "TopTriplets",
    "TopEigenpairs",
    "top_singular_triplets",
    "top_eigenpairs",
    "count_outliers",
    "squared_overlaps",
    "ESD",
    "empirical_spectral_density",
    "ks_distance_mp",
    "dense_spectrum_and_top",
    "DenseSpectrum",
]


def singular_values(A, *, method: str = "auto", backend="numpy") -> np.ndarray:
    """All ``min(N, d)`` singular values of ``A``, descending, as a host float64 array.

    Normalisation: none (docs/conventions.md §1: descending order); ``A`` positional, the rest
    keyword-only.

    ``method="svd"``: LAPACK's ``svd(compute_uv=False)`` of ``A`` itself (on the host this is
    ``numpy.linalg.svd``, value for value).  ``"gram"``: square roots of the eigenvalues of the
    smaller Gram side (2.5-5x faster, see the module notes).  ``"auto"`` (default): the Gram route,
    checked on its own eigenvalues and replaced by the SVD route when it cannot be trusted -- a
    value indistinguishable from zero (``lambda_i < 1e-12 lambda_1``), or more than 1 % of the
    values below ``GRAM_TAU * s_max = 1e-3 s_max`` (one value dwarfing the bulk).
    ``backend`` is ``"numpy"`` or ``"cupy"`` (the array is moved there first).  A matrix whose
    largest entry lies outside ``[2^-256, 2^256]`` is divided by a power of two first (exactly) and
    the values multiplied back, so ``1e200 * A`` gives ``1e200 *`` the values of ``A``.

    Accuracy (float64, ``u = 2^-53``): on the SVD route every value has absolute error
    ``<~ p(m) u s_max`` (so an exact zero comes out ``<~ u s_max``), the values being exactly
    numpy's; on the Gram route a value ``s_i`` has relative error ``<~ u (s_max/s_i)^2`` -- at most
    ``1e-10`` for ``s_i >= 1e-3 s_max`` (measured ``<= 5e-12``), and the few (``<= 1 %``) values
    below that have absolute error ``<~ u s_max^2 / s_i``.  So with ``"auto"`` every value above
    ``1e-3 s_max`` agrees with ``numpy.linalg.svd`` to ``1e-10`` relative, and when one value
    dwarfs the rest (a spike ``1e8`` over a unit bulk) the whole bulk does too.  A float32 ``A`` whose smallest
    values float32's Gram eigenvalues cannot resolve (a square matrix's, typically) is taken on the Gram route in
    float64 before the SVD is tried: every value then meets float32's own accuracy, the float32 SVD's
    ``|ds_i| <~ u_32 s_max``, and the solve is several times faster (:mod:`rmtfl.numerics._classical.promote`).

    >>> singular_values([[3.0, 0.0], [0.0, 4.0], [0.0, 0.0]]).tolist()
    [4.0, 3.0]
    """
    check_choice("method", method, ("auto", "gram", "svd"))
    be = get_backend(backend)
    return _singular_values("A", A, method, be)


def _singular_values(name, A, method, be) -> np.ndarray:
    """:func:`singular_values` of ``A`` on the backend ``be``, input errors naming ``name``."""
    A, scale = scaled_matrix(name, A, be)
    if method == "svd":
        return to_numpy(be.svdvals(A)).astype(np.float64, copy=False) * scale
    ev = _gram_eigvals(A, be) if method == "gram" else _trusted_gram_eigvals(A, be)
    if ev is None:
        return to_numpy(be.svdvals(A)).astype(np.float64, copy=False) * scale
    return np.sqrt(np.clip(ev, 0.0, None)) * scale


def _trusted_gram_eigvals(A, be):
    """Gram eigenvalues of ``A`` the Gram route can trust (:func:`gram_route_ok`), in ``A``'s dtype or, for a float32
    ``A`` whose smallest values float32 cannot resolve, from its float64 Gram matrix
    (:mod:`rmtfl.numerics._classical.promote`; a square float32 ``A`` goes there at once); ``None`` sends to the
    SVD."""
    for wide64 in gram_tries(A):
        if not wide64:
            ev = _gram_eigvals(A, be)
        else:
            M = A if A.shape[0] <= A.shape[1] else A.T
            if be.name == "numpy":
                ev = sla.eigh(gram_float64(M, be, upper_only=True), lower=False, eigvals_only=True, driver="evr",
                             check_finite=False)
            else:
                ev = to_numpy(be.eigvalsh(gram_float64(M, be)))
            ev = ev.astype(np.float64, copy=False)[::-1].copy()
        if gram_route_ok(ev, np.float64 if wide64 else A.dtype, promoted_from_float32=wide64):
            return ev
    return None


def _gram_eigvals(A, be) -> np.ndarray:
    """Eigenvalues of the smaller Gram side of the checked float array ``A``, descending, host float64."""
    left = A.shape[0] <= A.shape[1]
    if be.name == "numpy":
        # scipy's BLAS and LAPACK: one thread pool for the product and the solve (see rmtfl.numerics._classical.blas)
        ev = sla.eigh(gram_upper(A if left else A.T), lower=False, eigvals_only=True, driver="evr",
                      check_finite=False).astype(np.float64, copy=False)
    else:
        G = A @ A.T if left else A.T @ A
        ev = to_numpy(be.eigvalsh(G)).astype(np.float64, copy=False)
    return ev[::-1].copy()


def gram_eigenvalues(A, *, backend="numpy") -> np.ndarray:
    """Eigenvalues of the smaller Gram side of ``A`` (``min(N, d)`` values), descending, host float64.

    Normalisation: none (``A A^T`` or ``A^T A`` as given, docs/conventions.md §1); ``backend`` keyword-only.
    The squares of :func:`singular_values` (``method="auto"``: the Gram eigenvalues themselves when
    they are trustworthy, else the squared SVD values; never negative).  ``ValueError`` when they
    overflow float64 (``max |A|`` beyond ``~1e154``).

    >>> gram_eigenvalues([[1.0, 1.0]]).tolist()
    [2.0]
    """
    be = get_backend(backend)
    A, scale = scaled_matrix("A", A, be)
    ev = _trusted_gram_eigvals(A, be)
    if ev is None:
        ev = to_numpy(be.svdvals(A)).astype(np.float64) ** 2
    ev = np.clip(ev, 0.0, None)
    with np.errstate(over="ignore"):
        ev = ev * (scale * scale)
    if not np.all(np.isfinite(ev)):
        raise ValueError("A is too large: its Gram eigenvalues overflow float64 (max |A| beyond ~1e154)")
    return ev


def _host(a):
    """A cupy array copied to the host; anything else unchanged (checked by the caller)."""
    return to_numpy(a) if type(a).__module__.startswith("cupy") else a


def count_outliers(s, *, N: int, d: int, var: float = 1.0, beta: int = 1, p: float = 0.99) -> int:
    """Number of singular values in ``s`` above the MP edge plus a Tracy–Widom margin.

    The threshold is :func:`rmtfl.theory.edge_margin` ``(N, d, var=var, beta=beta, p=p)``
    (docs/theory/classical.md §5): a pure-noise ``N x d`` matrix with entries ``N(0, var/d)`` has
    its top singular value above it with probability ``≈ 1 - p``.  The measured values ``s`` are
    positional; the shape ``N, d`` of the matrix they come from and the options are keyword-only.

    >>> count_outliers([3.0, 2.05, 1.99], N=1000, d=1000)
    2
    """
    from rmtfl.theory import edge_margin

    s = check_array("s", _host(s), ndim=1, min_size=1)
    thr = edge_margin(N, d, var=var, beta=beta, p=p)
    return int(np.count_nonzero(s > thr))


def squared_overlaps(vectors, directions) -> np.ndarray:
    """Matrix of ``cos^2`` between the columns of ``vectors`` (``n x a``) and ``directions`` (``n x b``).

    Entry ``[i, j] = <v_i, e_j>^2 / (|v_i|^2 |e_j|^2)`` (docs/conventions.md §1; sign-free).
    Both arrays positional (they are the data): real, finite, non-empty, of the same rank --
    both 2-d (one column per vector), or both 1-d (two single vectors, a ``1 x 1`` result).
    Each column is scaled by its largest entry first, so extreme scales neither overflow nor
    underflow.

    >>> squared_overlaps([[1.0], [1.0]], [[1.0, 0.0], [0.0, 1.0]]).round(3).tolist()
    [[0.5, 0.5]]
    >>> squared_overlaps([1.0, 1.0], [0.0, 2.0]).round(3).tolist()
    [[0.5]]
    """
    V = check_array("vectors", _host(vectors), ndim=(1, 2), min_size=1).astype(np.float64, copy=False)
    E = check_array("directions", _host(directions), ndim=(1, 2), min_size=1).astype(np.float64, copy=False)
    if V.ndim != E.ndim or V.shape[0] != E.shape[0]:
        raise ValueError(f"vectors and directions must have the same rank and the same number of rows "
                         f"(both n x a and n x b, or both of length n), got shapes {V.shape} and {E.shape}")
    V = V[:, None] if V.ndim == 1 else V
    E = E[:, None] if E.ndim == 1 else E
    cols = {}
    for name, X in (("vectors", V), ("directions", E)):
        big = np.max(np.abs(X), axis=0)
        if np.any(big == 0):
            raise ValueError(f"{name} must have nonzero columns")
        cols[name] = X / big[None, :]
    V, E = cols["vectors"], cols["directions"]
    nv = np.linalg.norm(V, axis=0)
    ne = np.linalg.norm(E, axis=0)
    return (V.T @ E) ** 2 / np.outer(nv**2, ne**2)


@dataclass(frozen=True)
class ESD(Result):
    """Histogram of eigenvalues: ``density[i]`` on ``[edges[i], edges[i+1])`` (docs/theory/two_step.md §1.1).

    ``density`` is normalised by the *total* number of eigenvalues (zeros
    included), so it is directly comparable with the continuous part of
    :func:`rmtfl.theory.mp_density`; ``n_zero`` eigenvalues (``<= zero_tol``)
    were left out of the histogram and make up the atom ``atom = n_zero / n``.
    """

    edges: np.ndarray
    density: np.ndarray
    n: int
    n_zero: int

    @property
    def centers(self) -> np.ndarray:
        """Bin centres."""
        return 0.5 * (self.edges[1:] + self.edges[:-1])

    @property
    def atom(self) -> float:
        """Fraction ``n_zero / n`` of eigenvalues at 0 (compare :func:`rmtfl.theory.mp_atom`)."""
        return self.n_zero / self.n


def empirical_spectral_density(eigs, *, bins=60, range=None, zero_tol: float = 1e-10) -> ESD:  # noqa: A002
    """Histogram ESD of eigenvalues (e.g. of ``W W^T``; see :func:`eigenvalues_of_gram`).

    Normalisation: the density of docs/theory/two_step.md §1.1 (continuous part, total count in the
    denominator); ``eigs`` positional, ``bins``, ``range``, ``zero_tol`` keyword-only.

    Eigenvalues ``<= zero_tol * max(eigs)`` count as the atom at 0 and are left
    out of the histogram but not of the normalisation.  ``eigs``: a non-empty, finite, real
    1-d array; ``bins``: a positive int or a strictly increasing 1-d array of edges;
    ``range``: ``(lo, hi)`` with ``lo < hi``; ``zero_tol >= 0``.

    >>> e = empirical_spectral_density([0.0, 1.0, 1.5, 2.0], bins=2, range=(0.5, 2.5))
    >>> e.density.tolist(), e.atom
    ([0.25, 0.5], 0.25)
    """
    eigs = check_array("eigs", _host(eigs), ndim=1, min_size=1)
    zero_tol = check_nonnegative("zero_tol", zero_tol)
    if isinstance(bins, (int, np.integer)) and not isinstance(bins, bool):
        bins = check_int("bins", bins, 1)
        check_memory("bins", 4.0 * (bins + 1) * 8, f"{bins} histogram bins")
    else:
        bins = check_array("bins", bins, ndim=1, min_size=2)
        if np.any(np.diff(bins) <= 0):
            raise ValueError("bins must be a positive int or a strictly increasing 1-d array of edges")
    if range is not None:
        lo_hi = check_array("range", range, shape=(2,))
        if not lo_hi[0] < lo_hi[1]:
            raise ValueError(f"range must be (lo, hi) with lo < hi, got {range!r}")
        range = (float(lo_hi[0]), float(lo_hi[1]))  # noqa: A001
    scale = float(np.max(np.abs(eigs)))
    with np.errstate(over="ignore"):
        nz = eigs > zero_tol * scale
    counts, edges = np.histogram(eigs[nz], bins=bins, range=range)
    density = counts / (eigs.size * np.diff(edges))
    return ESD(edges, density, int(eigs.size), int(eigs.size - np.count_nonzero(nz)))


def eigenvalues_of_gram(W, *, side: str = "N", backend="numpy") -> np.ndarray:
    """Eigenvalues of ``W W^T`` (``side="N"``, length N) or ``W^T W`` (``side="d"``), descending, zeros padded.

    The ``N`` eigenvalues of docs/theory/two_step.md §1.1 (``side="N"``); ``side`` and ``backend``
    keyword-only.

    >>> eigenvalues_of_gram([[1.0, 0.0], [0.0, 2.0], [0.0, 0.0]]).tolist()
    [4.0, 1.0, 0.0]
    """
    check_choice("side", side, ("N", "d"))
    be = get_backend(backend)
    s = _singular_values("W", W, "auto", be)
    shape = be.asarray(W).shape
    n = shape[0] if side == "N" else shape[1]
    out = np.zeros(n)
    with np.errstate(over="ignore"):
        out[: s.size] = s**2
    if not np.all(np.isfinite(out)):
        raise ValueError("W is too large: the eigenvalues of its Gram matrix overflow float64 (max |W| beyond ~1e154)")
    return out


__all__.append("eigenvalues_of_gram")


def ks_distance_mp(eigs, psi: float, *, var: float = 1.0, zero_tol: float = 1e-10) -> float:
    """Kolmogorov–Smirnov distance between the empirical law of ``eigs`` and MP(``psi``, ``var``).

    Normalisation: docs/theory/two_step.md §1.1.  ``eigs`` and ``psi`` positional (as in
    :func:`rmtfl.theory.mp_cdf`), ``var`` and ``zero_tol`` keyword-only.
    ``eigs`` are all ``N`` eigenvalues of ``W W^T`` (zeros included when
    ``psi = N/d > 1``); values ``<= zero_tol * var * (1 + sqrt(psi))^2`` are
    treated as exact zeros, i.e. as part of the atom ``(1 - 1/psi)_+`` of
    :func:`rmtfl.theory.mp_cdf`.  The supremum uses both one-sided limits of
    the empirical CDF, with the theoretical left limit at 0 equal to 0.

    Finite-N scale: the eigenvalues are not iid; their KS distance to MP is
    ``O(log N / N)`` (rigidity), much smaller than the iid ``N^{-1/2}``.

    >>> import numpy as np
    >>> W = np.random.default_rng(0).standard_normal((400, 800)) / np.sqrt(800)
    >>> ks_distance_mp(eigenvalues_of_gram(W), 0.5) < 0.02
    True
    """
    from rmtfl.theory import mp_cdf

    psi = check_positive("psi", psi)
    var = check_positive("var", var)
    zero_tol = check_nonnegative("zero_tol", zero_tol)
    x = np.sort(check_array("eigs", _host(eigs), ndim=1, min_size=1))
    n = x.size
    x = np.where(x <= zero_tol * var * (1.0 + np.sqrt(psi)) ** 2, 0.0, x)
    F = mp_cdf(x, psi, var=var)
    atom = max(0.0, 1.0 - 1.0 / psi)
    F_left = np.where(x == 0.0, F - atom, F)
    i = np.arange(1, n + 1)
    # right limits of the ECDF at the last index of a tie block, left limits at the first
    last = np.r_[x[1:] != x[:-1], True]
    first = np.r_[True, x[1:] != x[:-1]]
    d_plus = np.max((i / n - F)[last])
    d_minus = np.max((F_left - (i - 1) / n)[first])
    return float(max(d_plus, d_minus, 0.0))
