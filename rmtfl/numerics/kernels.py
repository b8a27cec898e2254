"""Sampled kernel Gram matrices and their spectra: ``k_0``, ``k_1`` and the empirical RF kernel.

Normalisation (conventions.md §7–§8): ``k_Gamma`` has no prefactor, ``k_0 = k_{I/d}``;
Gram eigenvalues are those of ``K/n`` so that they estimate the kernel operator
w.r.t. the input *probability* measure.  Inputs are Gaussian ``N(0, I_d)``
(``measure="gaussian"``) or uniform on the unit sphere (``"sphere"``).  Harmonic
sample vectors: on the sphere ``Y_ell(<v, x>)``; for Gaussian inputs the radial
factor ``|x|/sqrt(d)`` multiplies them (spiked_kernel.md §4.7).  All sample
vectors are returned normalised to unit Euclidean norm.

Top eigenpairs use :func:`rmtfl.numerics.spectra.top_eigenpairs` (ARPACK with a
start vector from ``rng``), never a full ``eigh`` of a large Gram matrix.

Examples
--------
>>> import numpy as np
>>> X = sample_sphere(300, 5, rng=0)
>>> np.allclose(np.linalg.norm(X, axis=1), 1.0)
True
>>> K = kernel_gram("relu", X, gamma=1.0)
>>> K.shape, bool(np.allclose(np.diag(K), 0.5))
((300, 300), True)
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .._validate import check_choice, check_finite_array, check_int, check_nonnegative, check_positive
from ..theory.activations import get_activation
from ..theory.rf_kernel import rf_kernel
from ..theory.sphere import sphere_eigenvalues, zonal_harmonic
from .backend import to_numpy
from .spectra import top_eigenpairs

__all__ = ["sample_sphere", "sample_measure", "random_direction", "kernel_gram", "empirical_rf_kernel",
           "harmonic_vectors", "top_gram_eigenpairs", "DegreeBlocks", "gram_degree_eigenvalues", "GramAlignment",
           "gram_alignment", "eigvec_alignment", "LinearSectorEstimate", "linear_sector_gram"]


def _rng(rng):
    return rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)


def sample_sphere(n: int, d: int, rng=None) -> np.ndarray:
    """``n`` points uniform on the unit sphere ``S^{d-1}`` (rows), drawn on the host."""
    n, d = check_int("n", n, lo=1), check_int("d", d, lo=2)
    X = _rng(rng).standard_normal((n, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    return X


def sample_measure(n: int, d: int, measure: str = "gaussian", rng=None) -> np.ndarray:
    """Inputs from ``N(0, I_d)`` (``"gaussian"``) or the unit sphere (``"sphere"``)."""
    check_choice("measure", measure, ("gaussian", "sphere"))
    if measure == "sphere":
        return sample_sphere(n, d, rng)
    n, d = check_int("n", n, lo=1), check_int("d", d, lo=2)
    return _rng(rng).standard_normal((n, d))


def random_direction(d: int, rng=None) -> np.ndarray:
    """A unit vector uniform on ``S^{d-1}``."""
    return sample_sphere(1, d, rng)[0]


def kernel_gram(activation, X, Xp=None, *, gamma) -> np.ndarray:
    """``[k_Gamma(x_i, x'_j)]`` (no ``1/n``); ``gamma`` as in :func:`rmtfl.theory.rf_kernel.rf_kernel`.

    ``k_0``: ``gamma = 1/d``; ``k_1``: ``gamma = (A, B, v)``.
    """
    X = to_numpy(X)
    return rf_kernel(activation, X, X if Xp is None else to_numpy(Xp), gamma)


def empirical_rf_kernel(W, X, Xp=None, activation="relu") -> np.ndarray:
    """``sigma(X W^T) sigma(X' W^T)^T / m`` for a sampled first layer ``W`` (``m x d``), host array.

    Converges entrywise to ``k_Gamma`` when the rows of ``W`` are i.i.d. ``N(0, Gamma)`` (§6).
    """
    act = get_activation(activation)
    W, X = to_numpy(W), to_numpy(X)
    if W.ndim != 2 or X.ndim != 2 or W.shape[1] != X.shape[1]:
        raise ValueError(f"W (m, d) and X (n, d) must share d, got {W.shape} and {X.shape}")
    F = np.asarray(act(X @ W.T), dtype=float)
    Fp = F if Xp is None else np.asarray(act(to_numpy(Xp) @ W.T), dtype=float)
    return F @ Fp.T / W.shape[0]


def harmonic_vectors(X, v, degrees=(0, 1, 2), measure: str = "sphere") -> np.ndarray:
    """Unit-norm sample vectors of the zonal harmonics ``Y_ell(<v, x̂>)`` (columns, one per degree).

    For ``measure="gaussian"`` each entry is multiplied by ``|x|/sqrt(d)`` (the
    exact eigenfunctions of homogeneous kernels under Gaussian inputs).  Degree 1
    is the target's linear function ``psi* = <v, x>``.
    """
    X = check_finite_array("X", to_numpy(X), ndim=2)
    v = check_finite_array("v", v, ndim=1)
    check_choice("measure", measure, ("gaussian", "sphere"))
    d = X.shape[1]
    if v.shape[0] != d:
        raise ValueError(f"v must have length d={d}, got {v.shape[0]}")
    r = np.linalg.norm(X, axis=1)
    u = (X @ v) / (r * np.linalg.norm(v))
    cols = [zonal_harmonic(ell, d, u) for ell in degrees]
    Y = np.stack(cols, axis=1)
    if measure == "gaussian":
        Y *= (r / math.sqrt(d))[:, None]
    return Y / np.linalg.norm(Y, axis=0, keepdims=True)


def _orthonormalise(Z):
    """Cholesky-QR twice (two GEMMs; Householder QR if the Gram of ``Z`` is numerically singular)."""
    from ..sweep.threads import blas_threads

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


def top_gram_eigenpairs(K, k: int, *, rng=None, oversample: int = 15, tol: float = 1e-9, max_iter: int = 60):
    """Top-``k`` eigenpairs of a PSD Gram matrix by block subspace iteration with Rayleigh–Ritz.

    Kernel spectra decay fast, so a block of ``k + oversample`` vectors converges
    in a few GEMMs.  Validation: every returned pair has residual
    ``|K v - lambda v| <= tol * lambda_1``; if that is not reached within
    ``max_iter`` iterations the ARPACK solver :func:`rmtfl.numerics.spectra.top_eigenpairs`
    is used instead.  Returns ``(values (desc), vectors (n x k), method)``.

    >>> import numpy as np
    >>> vals, vecs, how = top_gram_eigenpairs(np.diag([4.0, 2.0, 1.0, 0.5, 0.1] + [0.0] * 20), 2, rng=0)
    >>> vals.round(12).tolist(), how
    ([4.0, 2.0], 'subspace')
    """
    K = np.asarray(K)
    n = K.shape[0]
    k = check_int("k", k, lo=1, hi=n)
    from ..sweep.threads import blas_threads

    g = _rng(rng)
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
            return ev, V, "subspace"
        Q = _orthonormalise(Z)
    top = top_eigenpairs(K, k, rng=g)
    return top.values, top.vectors, top.method


@dataclass(frozen=True)
class DegreeBlocks:
    """Gram eigenvalues grouped by harmonic degree.

    ``degrees[i]`` has predicted eigenvalue ``predicted[i]`` with multiplicity
    ``multiplicity[i]``; ``mean[i]``/``std[i]`` summarise the corresponding block
    of sorted Gram eigenvalues of ``K/n``.
    """

    degrees: tuple
    predicted: np.ndarray
    multiplicity: tuple
    mean: np.ndarray
    std: np.ndarray
    values: np.ndarray
    method: str


def gram_degree_eigenvalues(activation, d: int, n: int, *, degrees=(0, 1, 2), measure: str = "sphere",
                            rng=None, X=None) -> DegreeBlocks:
    """Top Gram eigenvalues of ``k_I`` (sphere) or ``k_0`` (Gaussian inputs) grouped by degree.

    The predicted values are :func:`~rmtfl.theory.sphere.sphere_eigenvalues`
    (sphere) or ``gaussian_k0`` (Gaussian inputs).  Blocks are assigned by sorting
    the predicted eigenvalues of ``degrees`` in decreasing order; all other
    degrees must have smaller eigenvalues (checked).
    """
    d, n = check_int("d", d, lo=2), check_int("n", n, lo=2)
    check_choice("measure", measure, ("gaussian", "sphere"))
    g = _rng(rng)
    degrees = tuple(int(k) for k in degrees)
    kmax = max(degrees) + 2
    sp = sphere_eigenvalues(activation, d, kmax)
    pred_all = sp.mu if measure == "sphere" else sp.gaussian_k0
    if pred_all is None:
        raise ValueError(f"activation {activation!r} is not homogeneous: no exact Gaussian-input spectrum")
    pred = np.array([pred_all[k] for k in degrees])
    order = np.argsort(pred)[::-1]
    others = [pred_all[k] for k in range(kmax + 1) if k not in degrees]
    if others and max(others) >= pred.min():
        raise ValueError("degrees must be the top eigenvalue blocks of the kernel")
    mult = [sp.multiplicity[degrees[i]] for i in order]
    total = int(sum(mult))
    if total >= n:
        raise ValueError(f"n={n} too small for {total} eigenvalues")
    if X is None:
        X = sample_measure(n, d, measure, g)
    gamma = 1.0 if measure == "sphere" else 1.0 / d
    K = kernel_gram(activation, X, gamma=gamma)
    K /= n
    vals, _, method = top_gram_eigenpairs(K, total, rng=g)
    means, stds = np.empty(len(degrees)), np.empty(len(degrees))
    pos = 0
    for i, m in zip(order, mult):
        blk = vals[pos:pos + m]
        means[i], stds[i] = blk.mean(), blk.std()
        pos += m
    return DegreeBlocks(degrees, pred, tuple(sp.multiplicity[k] for k in degrees), means, stds, vals,
                        method)


@dataclass(frozen=True)
class GramAlignment:
    """Top Gram eigenpair of ``k_{A(I + b v v^T)}`` versus the zonal harmonics (spiked_kernel.md §7.1).

    ``eigenvalue`` is the top eigenvalue of ``K/n``; ``y0``/``y2``/``psi`` are the
    absolute overlaps of the unit top eigenvector with the unit sample vectors of
    ``Y_0``, ``Y_2^v`` and ``psi* = <v, x>``.
    """

    d: int
    n: int
    b: float
    measure: str
    eigenvalue: float
    y0: float
    y2: float
    psi: float


def gram_alignment(d: int, n: int, b: float, *, activation="relu", A: float = 1.0, measure: str = "sphere",
                   rng=None, v=None) -> GramAlignment:
    """One draw of the Gram-alignment experiment (§7.1) for ``Gamma = A (I + b v v^T)``.

    ``v`` defaults to a uniformly random unit vector drawn from ``rng``.
    """
    d, n = check_int("d", d, lo=2), check_int("n", n, lo=2)
    b = check_nonnegative("b", b)
    A = check_positive("A", A)
    g = _rng(rng)
    v = random_direction(d, g) if v is None else np.asarray(v, dtype=float) / np.linalg.norm(v)
    X = sample_measure(n, d, measure, g)
    K = kernel_gram(activation, X, gamma=(A, A * b, v))
    K /= n
    vals, vecs, _ = top_gram_eigenpairs(K, 1, rng=g)
    phi = vecs[:, 0]
    Y = harmonic_vectors(X, v, (0, 1, 2), measure)
    ov = np.abs(phi @ Y)
    return GramAlignment(d, n, b, measure, float(vals[0]), float(ov[0]), float(ov[2]), float(ov[1]))


def eigvec_alignment(K, X, v, *, k: int = 1, measure: str = "gaussian", rng=None) -> dict:
    """Top-``k`` eigenpairs of any Gram matrix (``k_0``, ``k_1`` or :func:`empirical_rf_kernel`) and
    the absolute overlaps of its eigenvectors with the unit sample vectors of ``Y_0``, ``psi* = <v, x>``
    and ``Y_2^v`` (:func:`harmonic_vectors`).  ``K`` is divided by ``n`` first.

    Returns ``{"values": (k,), "y0": (k,), "psi": (k,), "y2": (k,)}``.

    >>> X = sample_sphere(300, 5, rng=0); v = np.eye(5)[0]
    >>> out = eigvec_alignment(kernel_gram("relu", X, gamma=(1.0, 0.0, v)), X, v, measure="sphere", rng=1)
    >>> bool(out["y0"][0] > 0.99)
    True
    """
    K = np.asarray(to_numpy(K), dtype=float)
    X = to_numpy(X)
    n = K.shape[0]
    if K.shape != (n, n) or X.shape[0] != n:
        raise ValueError(f"K must be (n, n) with n = len(X) = {X.shape[0]}, got {K.shape}")
    vals, vecs, _ = top_gram_eigenpairs(K / n, k, rng=rng)
    ov = np.abs(vecs.T @ harmonic_vectors(X, v, (0, 1, 2), measure))
    return {"values": vals, "y0": ov[:, 0], "psi": ov[:, 1], "y2": ov[:, 2]}


@dataclass(frozen=True)
class LinearSectorEstimate:
    """Gram estimates of the linear-sector eigenvalues (Gaussian inputs unless stated).

    ``target``: ``<psi, K psi>`` ratio for ``psi = <v, x>``; ``orthogonal``: mean over
    ``k`` directions ``e ⊥ v``.  Diagonal terms are excluded, so the error is ``O(1/n)``
    for exact eigenfunctions.
    """

    target: float
    orthogonal: float
    n: int
    measure: str


def linear_sector_gram(activation, A: float, B: float, d: int, n: int, *, measure: str = "gaussian",
                       n_orth: int = 8, rng=None) -> LinearSectorEstimate:
    """Estimate the eigenvalues of ``<v, x>`` and ``<e, x>`` (``e ⊥ v``) under ``k_{A I + B v v^T}``.

    ``lambda_hat = U / (2 D - E psi^2)`` with ``U = sum_{i != j} psi_i K_ij psi_j / (n (n-1))`` and
    ``D = mean_i psi_i^2``: for an exact eigenfunction the Hájek projection of ``U`` is
    ``lambda (2 D - E psi^2)``, so the first-order fluctuation cancels (the naive
    Rayleigh quotient ``U/D`` has relative error ``~ sqrt(2/n)``); ``E psi^2`` is known
    exactly (1 for Gaussian inputs, ``1/d`` on the sphere).  Remaining error ``O(1/n)``.
    """
    A, B = check_nonnegative("A", A), check_nonnegative("B", B)
    d, n = check_int("d", d, lo=2), check_int("n", n, lo=2)
    g = _rng(rng)
    v = random_direction(d, g)
    X = sample_measure(n, d, measure, g)
    K = kernel_gram(activation, X, gamma=(A, B, v))
    np.fill_diagonal(K, 0.0)
    E = g.standard_normal((d, min(n_orth, d - 1)))
    E -= np.outer(v, v @ E)
    E, _ = np.linalg.qr(E)
    P = X @ np.column_stack([v, E])
    U = np.einsum("ik,ik->k", P, K @ P) / (n * (n - 1))
    D = np.einsum("ik,ik->k", P, P) / n
    norm = 1.0 if measure == "gaussian" else 1.0 / d  # E <e, x>^2 for a unit vector e
    lam = U / (2 * D - norm)
    return LinearSectorEstimate(float(lam[0]), float(lam[1:].mean()), n, measure)
