"""Gram experiments against the theory: spectra by harmonic degree, top-eigenvector alignment, linear sector.

Normalisation (docs/conventions.md §7–§8): ``k_Gamma`` has no prefactor, ``k_0 = k_{I/d}``;
Gram eigenvalues are those of ``K/n`` so that they estimate the kernel operator
w.r.t. the input *probability* measure.  Overlaps are reported **squared**
(docs/conventions.md §1): ``cos^2(phi, Y) = <phi, Y>^2`` for unit vectors,
independent of the eigenvector's sign.  Eigenvectors are compared with the unit harmonic
sample vectors of :func:`~rmtfl.numerics.harmonic_vectors` (docs/theory/spiked_kernel.md §4.7).

Backends: every experiment takes ``backend``; the inputs are drawn on the host (same sample for
numpy and cupy), the Gram matrix (:func:`~rmtfl.numerics.kernel_gram`) and its top eigenpairs
(:func:`~rmtfl.numerics.top_gram_eigenpairs`) are formed on that backend.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rmtfl._results import Result
from rmtfl._validate import check_array, check_choice, check_int, check_nonnegative, check_positive, check_rng
from rmtfl.theory import get_activation, sphere_eigenvalues
from .._backend import get_backend, host_array, to_numpy
from .gram_eigenpairs import backend_of, top_gram_eigenpairs
from .kernels import kernel_gram
from .sampling import check_degrees, harmonic_vectors, random_direction, sample_measure

__all__ = ["DegreeBlocks", "gram_degree_eigenvalues", "GramAlignment", "gram_alignment", "EigvecAlignment",
           "eigvec_alignment", "LinearSectorEstimate", "linear_sector_gram"]


@dataclass(frozen=True)
class DegreeBlocks(Result):
    """Gram eigenvalues grouped by harmonic degree (eigenvalues of ``K/n``, docs/conventions.md §8).

    ``degrees[i]`` has predicted eigenvalue ``predicted[i]`` with multiplicity
    ``multiplicity[i]``; ``mean[i]``/``std[i]`` summarise the corresponding block
    of sorted Gram eigenvalues of ``K/n``; ``values`` are all of them (descending).
    """

    activation: str
    d: int
    n: int
    measure: str
    degrees: tuple
    predicted: np.ndarray
    multiplicity: tuple
    mean: np.ndarray
    std: np.ndarray
    values: np.ndarray
    method: str


def gram_degree_eigenvalues(activation, *, d: int, n: int, degrees=(0, 1, 2), measure: str = "sphere", X=None,
                            rng=None, backend="numpy") -> DegreeBlocks:
    """Top Gram eigenvalues of ``k_I`` (sphere) or ``k_0`` (Gaussian inputs) grouped by degree.

    Normalisation: eigenvalues of ``K/n``, which estimate the operator w.r.t. the input probability
    measure (docs/conventions.md §8).  The predicted values are
    :func:`~rmtfl.theory.sphere_eigenvalues` (sphere) or its ``gaussian_k0`` (Gaussian inputs).
    Blocks are assigned by sorting the predicted eigenvalues of ``degrees`` in decreasing order;
    all other degrees must have smaller eigenvalues (checked).

    Parameters
    ----------
    activation : str, callable or Activation
        Homogeneous for Gaussian inputs (relu, step, ...).
    d, n : int
        Dimension and number of samples.
    degrees : sequence of int
        Harmonic degrees of the top blocks.
    measure : {"sphere", "gaussian"}
        Input measure.
    X : array of shape (n, d), optional
        Inputs to use instead of a fresh draw from ``measure``.
    rng : None, int, SeedSequence or Generator
        Randomness (inputs, then the eigensolver's start block).
    backend : str or Backend
        ``"cupy"`` builds ``K`` and its top eigenpairs on the device (inputs drawn on the host, same
        sample as numpy).

    Returns
    -------
    DegreeBlocks

    Examples
    --------
    >>> bl = gram_degree_eigenvalues("relu", d=5, n=400, rng=0)
    >>> bl.multiplicity, bool(np.all(np.abs(bl.mean / bl.predicted - 1) < 0.1))
    ((1, 5, 14), True)
    """
    act = get_activation(activation)
    d, n = check_int("d", d, lo=2), check_int("n", n, lo=2)
    check_choice("measure", measure, ("gaussian", "sphere"))
    g = check_rng(rng)
    degrees = check_degrees(degrees, hi=998)  # sphere_eigenvalues(kmax = max(degrees) + 2 <= 1000)
    kmax = max(degrees) + 2
    sp = sphere_eigenvalues(act, d=d, kmax=kmax)
    pred_all = sp.mu if measure == "sphere" else sp.gaussian_k0
    if pred_all is None:
        raise ValueError(f"activation {act.name!r} is not homogeneous: no exact Gaussian-input spectrum")
    pred = np.array([pred_all[k] for k in degrees])
    order = np.argsort(pred)[::-1]
    others = [pred_all[k] for k in range(kmax + 1) if k not in degrees]
    if others and max(others) >= pred.min():
        raise ValueError("degrees must be the top eigenvalue blocks of the kernel")
    mult = [sp.multiplicity[degrees[i]] for i in order]
    total = int(sum(mult))
    if total >= n:
        raise ValueError(f"n={n} too small for the {total} eigenvalues of degrees {degrees} at d={d}: n must "
                         f"exceed N(d, k) summed over degrees")
    if X is None:
        X = sample_measure(n, d, measure=measure, rng=g)
    gamma = 1.0 if measure == "sphere" else 1.0 / d
    K = kernel_gram(act, X, gamma=gamma, backend=backend)
    K /= n
    top = top_gram_eigenpairs(K, k=total, rng=g, backend=backend)
    vals = top.values
    means, stds = np.empty(len(degrees)), np.empty(len(degrees))
    pos = 0
    for i, m in zip(order, mult):
        blk = vals[pos:pos + m]
        means[i], stds[i] = blk.mean(), blk.std()
        pos += m
    return DegreeBlocks(act.name, d, n, measure, degrees, pred, tuple(sp.multiplicity[k] for k in degrees),
                        means, stds, vals, top.method)


@dataclass(frozen=True)
class GramAlignment(Result):
    """Top Gram eigenpair of ``k_{A(I + b v v^T)}`` versus the zonal harmonics (docs/theory/spiked_kernel.md §7.1).

    ``eigenvalue`` is the top eigenvalue of ``K/n`` (docs/conventions.md §8); ``cos2_y0``/``cos2_y2``/``cos2_psi``
    are the **squared** overlaps (docs/conventions.md §1) ``<phi, Y>^2`` of the unit top
    eigenvector ``phi`` with the unit sample vectors of ``Y_0``, ``Y_2^v`` and
    ``psi* = <v, x>``.  They estimate ``overlaps[0]``, ``overlaps[2]`` of
    :func:`rmtfl.theory.zonal_top_eigenfunction` (and 0 for ``psi*``).
    """

    activation: str
    d: int
    n: int
    b: float
    A: float
    measure: str
    eigenvalue: float
    cos2_y0: float
    cos2_y2: float
    cos2_psi: float


def gram_alignment(activation, *, d: int, n: int, b: float, A: float = 1.0, measure: str = "sphere", v=None,
                   rng=None, backend="numpy") -> GramAlignment:
    """One draw of the Gram-alignment experiment (docs/theory/spiked_kernel.md §7.1) for ``Gamma = A (I + b v v^T)``.

    Normalisation: top eigenpair of ``K/n`` (docs/conventions.md §8); overlaps squared
    (docs/conventions.md §1).  The sampled counterpart of :func:`rmtfl.theory.zonal_top_eigenfunction`.

    Parameters
    ----------
    activation : str, callable or Activation
        The activation ``sigma``.
    d, n : int
        Dimension and number of samples.
    b : float
        Spike ratio ``B/A >= 0``.
    A : float
        Scale of ``Gamma``.
    measure : {"sphere", "gaussian"}
        Input measure.
    v : array of shape (d,), optional
        Spike direction; default a uniformly random unit vector drawn from ``rng``.
    rng : None, int, SeedSequence or Generator
        Randomness (``v``, the inputs, the eigensolver's start block, in that order).
    backend : str or Backend
        ``"cupy"``: Gram matrix and top eigenpair on the device (same host-drawn inputs as numpy).

    Returns
    -------
    GramAlignment

    Examples
    --------
    >>> r = gram_alignment("relu", d=6, n=300, b=0.0, rng=0)
    >>> bool(r.cos2_y0 > 0.98), bool(r.cos2_y2 < 0.05)
    (True, True)
    """
    act = get_activation(activation)
    d, n = check_int("d", d, lo=2), check_int("n", n, lo=2)
    b = check_nonnegative("b", b)
    A = check_positive("A", A)
    check_choice("measure", measure, ("gaussian", "sphere"))
    g = check_rng(rng)
    v = random_direction(d, rng=g) if v is None else np.asarray(v, dtype=float) / np.linalg.norm(v)
    X = sample_measure(n, d, measure=measure, rng=g)
    K = kernel_gram(act, X, gamma=(A, A * b, v), backend=backend)
    K /= n
    top = top_gram_eigenpairs(K, k=1, rng=g, backend=backend)
    phi = top.vectors[:, 0]
    Y = harmonic_vectors(X, v, degrees=(0, 1, 2), measure=measure)
    ov = phi @ Y
    c2 = ov * ov
    return GramAlignment(act.name, d, n, b, A, measure, float(top.values[0]), float(c2[0]), float(c2[2]),
                         float(c2[1]))


@dataclass(frozen=True)
class EigvecAlignment(Result):
    """Top-``k`` Gram eigenvalues of ``K/n`` and the **squared** overlaps (docs/conventions.md §1) of the
    eigenvectors with ``Y_0``, ``psi* = <v, x>`` and ``Y_2^v`` (host arrays of length ``k``)."""

    values: np.ndarray
    cos2_y0: np.ndarray
    cos2_psi: np.ndarray
    cos2_y2: np.ndarray


def eigvec_alignment(K, X, v, *, k: int = 1, measure: str = "gaussian", rng=None, backend=None) -> EigvecAlignment:
    """Top-``k`` eigenpairs of any Gram matrix (``k_0``, ``k_1`` or :func:`empirical_rf_kernel`) and
    the **squared** overlaps (docs/conventions.md §1) of its eigenvectors with the unit sample vectors of
    ``Y_0``, ``psi* = <v, x>`` and ``Y_2^v`` (:func:`harmonic_vectors`).

    Normalisation: ``K`` is divided by ``n`` first (eigenvalues w.r.t. the input probability measure,
    docs/conventions.md §8).

    Parameters
    ----------
    K : array of shape (n, n)
        Gram matrix (no ``1/n``), numpy or cupy.
    X : array of shape (n, d)
        The inputs of ``K``.
    v : array of shape (d,)
        Target direction.
    k : int
        Number of eigenpairs.
    measure : {"gaussian", "sphere"}
        Input measure (radial factor of the harmonic vectors).
    rng : None, int, SeedSequence or Generator
        Start block of the eigensolver.
    backend : None, str or Backend
        ``None`` follows ``K`` (a cupy ``K`` is diagonalised on the device, see :func:`top_gram_eigenpairs`).

    Returns
    -------
    EigvecAlignment

    Examples
    --------
    >>> from rmtfl.numerics import sample_sphere
    >>> X = sample_sphere(300, 5, rng=0); v = np.eye(5)[0]
    >>> out = eigvec_alignment(kernel_gram("relu", X, gamma=(1.0, 0.0, v)), X, v, measure="sphere", rng=1)
    >>> bool(out.cos2_y0[0] > 0.98)
    True
    """
    be = backend_of(K, backend)
    K = check_array("K", host_array(K), ndim=2, min_size=1) if be.name == "numpy" \
        else be.asarray(K, dtype=np.float64)
    X = check_array("X", host_array(X), ndim=2, min_size=1)
    n = K.shape[0]
    if K.shape != (n, n) or X.shape[0] != n:
        raise ValueError(f"K must be (n, n) with n = len(X) = {X.shape[0]}, got {K.shape}")
    top = top_gram_eigenpairs(K / n, k=k, rng=rng, backend=be)
    ov = top.vectors.T @ harmonic_vectors(X, v, degrees=(0, 1, 2), measure=measure)
    c2 = ov * ov
    return EigvecAlignment(top.values, c2[:, 0], c2[:, 1], c2[:, 2])


@dataclass(frozen=True)
class LinearSectorEstimate(Result):
    """Gram estimates of the linear-sector eigenvalues (Gaussian inputs unless stated; docs/conventions.md §8).

    ``target``: ``<psi, K psi>`` ratio for ``psi = <v, x>``; ``orthogonal``: mean over
    ``n_orth`` directions ``e ⊥ v``.  Diagonal terms are excluded, so the error is ``O(1/n)``
    for exact eigenfunctions.  Estimates :func:`rmtfl.theory.linear_sector`.
    """

    target: float
    orthogonal: float
    n: int
    measure: str


def linear_sector_gram(activation, *, A: float, B: float, d: int, n: int, measure: str = "gaussian",
                       n_orth: int = 8, rng=None, backend="numpy") -> LinearSectorEstimate:
    """Estimate the eigenvalues of ``<v, x>`` and ``<e, x>`` (``e ⊥ v``) under ``k_{A I + B v v^T}``.

    The sampled counterpart of :func:`rmtfl.theory.linear_sector` (same ``A, B, d, measure``;
    eigenvalues w.r.t. the input probability measure, docs/conventions.md §8;
    docs/theory/spiked_kernel.md §5.1).
    ``lambda_hat = U / (2 D - E psi^2)`` with ``U = sum_{i != j} psi_i K_ij psi_j / (n (n-1))`` and
    ``D = mean_i psi_i^2``: for an exact eigenfunction the Hájek projection of ``U`` is
    ``lambda (2 D - E psi^2)``, so the first-order fluctuation cancels (the naive
    Rayleigh quotient ``U/D`` has relative error ``~ sqrt(2/n)``); ``E psi^2`` is known
    exactly (1 for Gaussian inputs, ``1/d`` on the sphere).  Remaining error ``O(1/n)``.

    Parameters
    ----------
    activation : str, callable or Activation
        The activation ``sigma``.
    A, B : float
        Bulk and spike of ``Gamma`` (``>= 0``).
    d, n : int
        Dimension and number of samples.
    measure : {"gaussian", "sphere"}
        Input measure.
    n_orth : int
        Number of orthogonal directions averaged.
    rng : None, int, SeedSequence or Generator
        Randomness (``v``, inputs, orthogonal directions).
    backend : str or Backend
        ``"cupy"``: ``K`` and the quadratic forms on the device (all random numbers drawn on the host
        in the same order as numpy).

    Returns
    -------
    LinearSectorEstimate

    Examples
    --------
    >>> est = linear_sector_gram("relu", A=0.1, B=0.5, d=6, n=400, rng=0)
    >>> bool(est.target > est.orthogonal)
    True
    """
    act = get_activation(activation)
    A, B = check_nonnegative("A", A), check_nonnegative("B", B)
    for name, val in (("A", A), ("B", B)):
        if val > 1e100:
            raise ValueError(f"{name} must be <= 1e100 (Gamma = A I + B v v^T), got {val!r}")
    d, n = check_int("d", d, lo=2), check_int("n", n, lo=2)
    check_choice("measure", measure, ("gaussian", "sphere"))
    n_orth = check_int("n_orth", n_orth, lo=1)
    g = check_rng(rng)
    v = random_direction(d, rng=g)
    X = sample_measure(n, d, measure=measure, rng=g)
    be = get_backend(backend)
    K = kernel_gram(act, X, gamma=(A, B, v), backend=be)
    be.xp.fill_diagonal(K, 0.0)
    E = g.standard_normal((d, min(n_orth, d - 1)))
    E -= np.outer(v, v @ E)
    E, _ = np.linalg.qr(E)
    P = X @ np.column_stack([v, E])
    if be.name == "numpy":
        U = np.einsum("ik,ik->k", P, K @ P) / (n * (n - 1))
    else:
        Pd = be.asarray(P)
        U = to_numpy(be.xp.einsum("ik,ik->k", Pd, K @ Pd)) / (n * (n - 1))
    D = np.einsum("ik,ik->k", P, P) / n
    norm = 1.0 if measure == "gaussian" else 1.0 / d  # E <e, x>^2 for a unit vector e
    lam = U / (2 * D - norm)
    out = LinearSectorEstimate(float(lam[0]), float(lam[1:].mean()), n, measure)
    if not (np.isfinite(out.target) and np.isfinite(out.orthogonal)):
        raise ValueError(f"A and B are too large: the Gram eigenvalues overflow (A={A!r}, B={B!r})")
    return out
