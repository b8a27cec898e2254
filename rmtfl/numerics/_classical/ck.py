"""Sampled conjugate kernels ``K = sigma(X W^T) sigma(X W^T)^T / N`` and their spectra.

Normalisation (docs/theory/kernel_spectra.md §1): ``X`` ``n x d`` with rows ``N(0, I_d)``, ``W`` ``N x d``
with rows ``N(0, I_d/d)``, ``F = sigma(X W^T)``, ``K = F F^T / N``.  Eigenvalues are returned sorted in
decreasing order (docs/conventions.md §1), as host numpy arrays.

Cost (docs/theory/kernel_spectra.md §5): one GEMM (``X W^T``), ``sigma`` in place where the activation
allows it, one SYRK (upper triangle of ``F F^T``, scipy's BLAS on the host) and one symmetric
eigenvalue solve (LAPACK ``?syevd``).  Top eigenvectors, when asked for (``k > 0``), cost one more
partial solve.

Examples
--------
>>> s = simulate_ck("relu", N=300, d=200, n=250, rng=0)
>>> s.eigenvalues.shape, bool(s.eigenvalues[0] > 30)
((250,), True)
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.linalg as sla

from rmtfl._results import Result
from rmtfl._validate import check_array, check_int, check_memory, check_nonnegative, check_rng
from rmtfl.theory import get_activation
from .blas import gram_upper, matmul
from .._backend import get_backend, to_numpy

__all__ = ["ck_gram", "simulate_ck", "CKSample", "ks_distance_ck"]

#: Largest size accepted for ``N``, ``d``, ``n`` (memory is checked separately).
SIZE_LIMIT = 10 ** 7


@dataclass(frozen=True)
class CKSample(Result):
    """One sampled conjugate kernel: its eigenvalues (decreasing) and, if asked for, top eigenpairs.

    ``eigenvalues``: all ``n`` eigenvalues of ``K`` (docs/theory/kernel_spectra.md §1); ``top_values`` and
    ``top_vectors`` (``n x k``, columns) the ``k`` largest with their eigenvectors; ``cos2_ones``: the
    squared overlap of each top eigenvector with ``1/sqrt(n)`` (the direction of the ``mu_0`` outlier,
    docs/theory/kernel_spectra.md §2).

    >>> CKSample("relu", 2, 2, 2, np.array([2.0, 1.0])).to_dict()["eigenvalues"]
    [2.0, 1.0]
    """

    activation: str
    N: int
    d: int
    n: int
    eigenvalues: np.ndarray
    top_values: np.ndarray = field(default_factory=lambda: np.zeros(0))
    cos2_ones: np.ndarray = field(default_factory=lambda: np.zeros(0))
    top_vectors: np.ndarray = field(default=None, repr=False)


def _sizes(N, d, n, be, k=0):
    N = check_int("N", N, 1, SIZE_LIMIT)
    d = check_int("d", d, 1, SIZE_LIMIT)
    n = check_int("n", n, 1, SIZE_LIMIT)
    # X, W, F (features, overwritten in place) and K, plus eigh's workspace (~ one more n x n)
    need = 8.0 * (n * d + N * d + n * N + 2.0 * n * n)
    check_memory("N, d, n", need, f"a conjugate kernel with N={N}, d={d}, n={n}")
    return N, d, n


def _features(act, N, d, n, rng, be):
    g = check_rng(rng)
    X = g.standard_normal((n, d))
    W = g.standard_normal((N, d))
    W *= 1.0 / np.sqrt(d)
    if be.name == "numpy":
        P = matmul(X, W.T)
        del X, W
        if act.name == "relu":
            np.maximum(P, 0.0, out=P)
            return P
        if act.name == "tanh":
            return np.tanh(P, out=P)
        return np.ascontiguousarray(np.asarray(act(P), dtype=np.float64))
    from rmtfl.numerics._spiked_kernel.kernels import activate  # noqa: PLC0415

    P = be.asarray(X) @ be.asarray(W).T
    return activate(act, P, backend=be)


def _check_features(F, be):
    bad = not bool(be.xp.all(be.xp.isfinite(F)))
    if bad:
        raise ValueError("activation: the features sigma(X W^T) are not all finite (NaN or inf); the Gram is undefined")


def ck_gram(activation, *, N: int, d: int, n: int, rng=None, backend="numpy"):
    """The conjugate kernel ``K = sigma(X W^T) sigma(X W^T)^T / N`` (``n x n``, symmetric, on ``backend``).

    Normalisation: docs/theory/kernel_spectra.md §1 (``X`` rows ``N(0, I_d)``, ``W`` rows ``N(0, I_d/d)``).
    Sizes, ``rng`` and ``backend`` keyword-only (docs/api.md).

    >>> K = ck_gram("tanh", N=50, d=40, n=30, rng=1)
    >>> K.shape, bool(np.allclose(K, K.T))
    ((30, 30), True)
    """
    act = get_activation(activation)
    be = get_backend(backend)
    N, d, n = _sizes(N, d, n, be)
    F = _features(act, N, d, n, rng, be)
    _check_features(F, be)
    if be.name == "numpy":
        G = gram_upper(F)
        G *= 1.0 / N
        iu = np.triu_indices(n, 1)
        G = np.array(G, order="C")
        G[(iu[1], iu[0])] = G[iu]
        return G
    return (F @ F.T) / N


def simulate_ck(activation, *, N: int, d: int, n: int, k: int = 0, rng=None, backend="numpy") -> CKSample:
    """Sample the conjugate kernel once and return its spectrum (docs/theory/kernel_spectra.md §5).

    Parameters
    ----------
    activation : str, callable or Activation
        ``sigma``.
    N, d, n : int, keyword-only
        Width, input dimension, number of samples.
    k : int, keyword-only
        Number of top eigenpairs to return as well (0: eigenvalues only, the fast path).
    rng, backend : keyword-only
        Seed or Generator; ``"numpy"`` or ``"cupy"``.

    Returns
    -------
    CKSample

    >>> s = simulate_ck("relu", N=200, d=200, n=200, k=1, rng=0)
    >>> bool(s.cos2_ones[0] > 0.98)
    True
    """
    act = get_activation(activation)
    be = get_backend(backend)
    N, d, n = _sizes(N, d, n, be)
    k = check_int("k", k, 0, n)
    F = _features(act, N, d, n, rng, be)
    _check_features(F, be)
    if be.name == "numpy":
        G = gram_upper(F)
        del F
        G *= 1.0 / N
        vecs = None
        if k:
            vals, vecs = sla.eigh(G, lower=False, subset_by_index=(n - k, n - 1), check_finite=False)
            top = vals[::-1]
            vecs = vecs[:, ::-1]
        ev = sla.eigh(G, lower=False, eigvals_only=True, overwrite_a=True, check_finite=False, driver="evd")
    else:
        G = (F @ F.T) / N
        del F
        xp = be.xp
        if k:
            vals, V = xp.linalg.eigh(G)
            ev = to_numpy(vals)
            vecs = to_numpy(V[:, ::-1][:, :k])
            top = ev[::-1][:k]
        else:
            ev = to_numpy(xp.linalg.eigvalsh(G))
    ev = np.ascontiguousarray(ev[::-1])
    if not k:
        return CKSample(act.name, N, d, n, ev)
    cos2 = (vecs.sum(axis=0) ** 2) / n
    return CKSample(act.name, N, d, n, ev, np.asarray(top, float), cos2, vecs)


def ks_distance_ck(eigs, law, *, zero_tol: float = 1e-9) -> float:
    """Kolmogorov–Smirnov distance between sampled eigenvalues and a predicted law (e.g. ``ck_spectrum``).

    ``law`` is any object with ``cdf(x)`` and ``atom`` (:class:`rmtfl.theory.CKSpectrum`,
    docs/theory/kernel_spectra.md §1.5); eigenvalues ``<= zero_tol * max|eigs|`` count as exact zeros (the
    atom).  Both one-sided limits of the empirical CDF are used.  Complex or NaN ``eigs`` raise
    ``ValueError`` naming ``eigs``.

    >>> from rmtfl.theory import ck_spectrum
    >>> s = simulate_ck("tanh", N=400, d=400, n=400, rng=0)
    >>> ks_distance_ck(s.eigenvalues, ck_spectrum("tanh", psi=1.0, phi=1.0)) < 0.05
    True
    """
    zero_tol = check_nonnegative("zero_tol", zero_tol)
    raw = np.asarray(to_numpy(eigs) if hasattr(eigs, "__cuda_array_interface__") else eigs)
    if np.iscomplexobj(raw):
        raise ValueError("eigs must be real eigenvalues of a symmetric Gram matrix, got complex values")
    x = np.sort(check_array("eigs", raw, ndim=1, min_size=1))
    if not (hasattr(law, "cdf") and hasattr(law, "atom")):
        raise ValueError("law must have cdf(x) and atom (e.g. rmtfl.theory.ck_spectrum(...))")
    scale = float(np.max(np.abs(x))) if x.size else 1.0
    x = np.where(np.abs(x) <= zero_tol * scale, 0.0, x)
    m = x.size
    F = np.asarray(law.cdf(x), dtype=float)
    F_left = np.where(x == 0.0, F - float(law.atom), F)
    i = np.arange(1, m + 1)
    last = np.r_[x[1:] != x[:-1], True]
    first = np.r_[True, x[1:] != x[:-1]]
    d_plus = np.max((i / m - F)[last])
    d_minus = np.max((F_left - (i - 1) / m)[first])
    return float(max(d_plus, d_minus, 0.0))
