"""Sampled kernel Gram matrices and their spectra: ``k_0``, ``k_1`` and the empirical RF kernel.

Normalisation (docs/conventions.md §7–§8): ``k_Gamma`` has no prefactor, ``k_0 = k_{I/d}``;
Gram eigenvalues are those of ``K/n`` so that they estimate the kernel operator
w.r.t. the input *probability* measure.  Inputs are Gaussian ``N(0, I_d)``
(``measure="gaussian"``) or uniform on the unit sphere (``"sphere"``).  Harmonic
sample vectors: on the sphere ``Y_ell(<v, x>)``; for Gaussian inputs the radial
factor ``|x|/sqrt(d)`` multiplies them (docs/theory/spiked_kernel.md §4.7).  All sample
vectors are returned normalised to unit Euclidean norm.  Overlaps are reported
**squared** (docs/conventions.md §1): ``cos^2(phi, Y) = <phi, Y>^2`` for unit vectors,
independent of the eigenvector's sign.

Top eigenpairs (numpy) come from :func:`top_gram_eigenpairs`: block subspace iteration
validated by its residuals, with the ARPACK solver
:func:`rmtfl.numerics.top_eigenpairs` as fallback; never a full ``eigh`` of a
large Gram matrix on the CPU.

Backends: ``backend="numpy"`` (default) or ``"cupy"`` (:func:`rmtfl.numerics.get_backend`).
Random numbers are always drawn on the host from the ``rng`` Generator and moved with
``backend.asarray``, so both backends see the same inputs.  On cupy the Gram GEMM and
its closed-form elementwise map (relu, step, erf, relu^2, identity; Mehler series with
host-computed coefficients otherwise) run on the device, and the top eigenpairs come
from the dense ``cupy.linalg.eigh`` (cuSOLVER ``syevd``, the reference solver; cupy's
iterative solvers are not used) with only the top ``k`` pairs copied to the host.
cupy is imported only when requested.

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

from rmtfl._validate import check_choice, check_finite_array, check_int, check_nonnegative, check_positive
from rmtfl.theory import get_activation
from rmtfl.theory._spiked_kernel.rf_kernel import SpikedGamma, as_gamma, gram_block, rf_kernel
from rmtfl.theory import sphere_eigenvalues, zonal_harmonic
from .._backend import get_backend, to_numpy
from .._classical.spectra import top_eigenpairs

__all__ = ["sample_sphere", "sample_measure", "random_direction", "kernel_gram", "empirical_rf_kernel",
           "harmonic_vectors", "top_gram_eigenpairs", "activate", "DegreeBlocks", "gram_degree_eigenvalues",
           "GramAlignment", "gram_alignment", "eigvec_alignment", "LinearSectorEstimate", "linear_sector_gram"]



def sample_sphere(n: int, d: int, rng=None) -> np.ndarray:
    """``n`` points uniform on the unit sphere ``S^{d-1}`` (rows), drawn on the host."""
    n, d = check_int("n", n, lo=1), check_int("d", d, lo=2)
    X = np.random.default_rng(rng).standard_normal((n, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    return X


def sample_measure(n: int, d: int, measure: str = "gaussian", rng=None) -> np.ndarray:
    """Inputs from ``N(0, I_d)`` (``"gaussian"``) or the unit sphere (``"sphere"``)."""
    check_choice("measure", measure, ("gaussian", "sphere"))
    if measure == "sphere":
        return sample_sphere(n, d, rng)
    n, d = check_int("n", n, lo=1), check_int("d", d, lo=2)
    return np.random.default_rng(rng).standard_normal((n, d))


def random_direction(d: int, rng=None) -> np.ndarray:
    """A unit vector uniform on ``S^{d-1}``."""
    return sample_sphere(1, d, rng)[0]


def _is_device(a) -> bool:
    return type(a).__module__.startswith("cupy")


def _backend_of(a, backend=None):
    """``backend`` if given, else cupy for a cupy array and numpy otherwise."""
    if backend is not None:
        return get_backend(backend)
    return get_backend("cupy") if _is_device(a) else get_backend("numpy")


def kernel_gram(activation, X, Xp=None, *, gamma, backend="numpy", kmax: int = 40):
    """``[k_Gamma(x_i, x'_j)]`` (no ``1/n``); ``gamma`` as in :func:`rmtfl.theory.rf_kernel`.

    ``k_0``: ``gamma = 1/d``; ``k_1``: ``gamma = (A, B, v)``.  With ``backend="numpy"`` the
    result is a host array (exactly :func:`~rmtfl.theory.rf_kernel`); with
    ``"cupy"`` the inputs are moved to the device, ``X Gamma``, the GEMM and the
    elementwise map (:func:`~rmtfl.theory.gram_block`) run there and a device
    array is returned (``gamma`` is validated on the host; ``d x d`` is never formed for
    ``(A, B, v)``).

    >>> X = sample_sphere(50, 4, rng=1)
    >>> K = kernel_gram("step", X, gamma=(1.0, 2.0, np.eye(4)[0]))
    >>> bool(np.allclose(np.diag(K), 0.5)), bool(np.allclose(K, K.T))
    (True, True)
    """
    be = get_backend(backend)
    if be.name == "numpy":
        X = to_numpy(X)
        return rf_kernel(activation, X, X if Xp is None else to_numpy(Xp), gamma, kmax=kmax)
    act = get_activation(activation)
    xp = be.xp
    Xd = be.asarray(X, dtype=np.float64)
    Xpd = Xd if Xp is None else be.asarray(Xp, dtype=np.float64)
    if Xd.ndim != 2 or Xpd.ndim != 2 or Xd.shape[1] != Xpd.shape[1]:
        raise ValueError(f"X (n, d) and Xp (n', d) must be matrices with the same d, got {Xd.shape}, {Xpd.shape}")
    if not (bool(xp.isfinite(Xd).all()) and bool(xp.isfinite(Xpd).all())):
        raise ValueError("X and Xp must be finite")
    g = as_gamma(gamma, Xd.shape[1])

    def apply(Z):
        if isinstance(g, SpikedGamma):
            vd = be.asarray(g.v)
            return g.A * Z + g.B * xp.outer(Z @ vd, vd)
        return Z @ be.asarray(g)

    XG = apply(Xd)
    s = xp.einsum("ij,ij->i", XG, Xd)
    s2 = s if Xp is None else xp.einsum("ij,ij->i", apply(Xpd), Xpd)
    K, _ = gram_block(act, XG, Xpd, s, s2, kmax=kmax, xp=xp)
    return K


def _hermite_eval(coeffs, Z, xp):
    """``sum_k a_k He_k(Z)`` by the three-term recurrence (any namespace)."""
    out = xp.zeros_like(Z) + coeffs[0]
    if len(coeffs) == 1:
        return out
    h0, h1 = xp.ones_like(Z), Z
    out += coeffs[1] * h1
    for k in range(1, len(coeffs) - 1):
        h0, h1 = h1, Z * h1 - k * h0
        out += coeffs[k + 1] * h1
    return out


def activate(activation, Z, backend="numpy"):
    """``sigma(Z)`` elementwise on the array namespace of ``backend``.

    numpy: ``np.asarray(sigma(Z))`` (the activation's own function).  On another backend
    (cupy) relu, step, relu^p, tanh, erf (``cupyx.scipy.special.erf``, imported only
    then), sigmoid, softplus and polynomials (Hermite recurrence) are evaluated on the
    device; any other activation is evaluated on the host and moved back.

    >>> activate("relu", np.array([-1.0, 2.0])).tolist()
    [0.0, 2.0]
    """
    act = get_activation(activation)
    be = get_backend(backend)
    if be.name == "numpy":
        return np.asarray(act(Z))
    xp = be.xp
    name = act.name
    if name == "relu":
        return xp.maximum(Z, 0.0)
    if name == "step":
        return (Z > 0).astype(Z.dtype)
    if name.startswith("relu^") and act.homogeneity is not None:
        return xp.maximum(Z, 0.0) ** int(act.homogeneity)
    if name == "tanh":
        return xp.tanh(Z)
    if name == "sigmoid":
        return 1.0 / (1.0 + xp.exp(-Z))
    if name == "softplus":
        return xp.logaddexp(0.0, Z)
    if name == "erf":
        if getattr(xp, "__name__", "") == "cupy":
            from cupyx.scipy.special import erf  # noqa: PLC0415  (cupy path only)
        else:
            from scipy.special import erf
        return erf(Z)
    if act.herme is not None:
        return _hermite_eval([float(c) for c in act.herme], Z, xp)
    return be.asarray(np.asarray(act(to_numpy(Z)), dtype=float), dtype=Z.dtype)


def empirical_rf_kernel(W, X, Xp=None, activation="relu", *, backend="numpy"):
    """``sigma(X W^T) sigma(X' W^T)^T / m`` for a sampled first layer ``W`` (``m x d``).

    Converges entrywise to ``k_Gamma`` when the rows of ``W`` are i.i.d. ``N(0, Gamma)`` (docs/theory/spiked_kernel.md §6).
    Host array for ``backend="numpy"``; on ``"cupy"`` the two GEMMs and ``sigma``
    (:func:`activate`) run on the device and a device array is returned.
    """
    act = get_activation(activation)
    be = get_backend(backend)
    if be.name == "numpy":
        W, X = to_numpy(W), to_numpy(X)
    else:
        W, X = be.asarray(W, dtype=np.float64), be.asarray(X, dtype=np.float64)
    if W.ndim != 2 or X.ndim != 2 or W.shape[1] != X.shape[1]:
        raise ValueError(f"W (m, d) and X (n, d) must share d, got {W.shape} and {X.shape}")
    if be.name == "numpy":
        F = np.asarray(act(X @ W.T), dtype=float)
        Fp = F if Xp is None else np.asarray(act(to_numpy(Xp) @ W.T), dtype=float)
        return F @ Fp.T / W.shape[0]
    F = activate(act, X @ W.T, be)
    Fp = F if Xp is None else activate(act, be.asarray(Xp, dtype=np.float64) @ W.T, be)
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


def top_gram_eigenpairs(K, k: int, *, rng=None, oversample: int = 15, tol: float = 1e-9, max_iter: int = 60,
                        backend=None):
    """Top-``k`` eigenpairs of a PSD Gram matrix by block subspace iteration with Rayleigh–Ritz.

    Backend: ``backend=None`` follows ``K`` (a cupy array selects cupy).  On cupy the
    pairs come from the dense ``cupy.linalg.eigh`` of ``K`` on the device (the reference
    solver, so there is no iteration to validate; ``O(n^3)`` but fast on a GPU for ``n``
    in the tens of thousands), method ``"dense-eigh-cupy"``; only the top ``k`` pairs are
    copied to the host and ``rng`` is not used.  Returned arrays are host arrays.

    Kernel spectra decay fast, so a block of ``k + oversample`` vectors converges
    in a few GEMMs.  Validation: every returned pair has residual
    ``|K v - lambda v| <= tol * lambda_1``; if that is not reached within
    ``max_iter`` iterations the ARPACK solver :func:`rmtfl.numerics.top_eigenpairs`
    is used instead.  Returns ``(values (desc), vectors (n x k), method)``.

    >>> import numpy as np
    >>> vals, vecs, how = top_gram_eigenpairs(np.diag([4.0, 2.0, 1.0, 0.5, 0.1] + [0.0] * 20), 2, rng=0)
    >>> vals.round(12).tolist(), how
    ([4.0, 2.0], 'subspace')
    """
    be = _backend_of(K, backend)
    if be.name != "numpy":
        Kd = be.asarray(K)
        n = Kd.shape[0]
        k = check_int("k", k, lo=1, hi=n)
        ev, V = be.xp.linalg.eigh(Kd)
        top = be.xp.ascontiguousarray(V[:, n - k:][:, ::-1])  # k columns only leave the device
        return to_numpy(ev[n - k:][::-1]).copy(), to_numpy(top), f"dense-eigh-{be.name}"
    K = np.asarray(to_numpy(K))
    n = K.shape[0]
    k = check_int("k", k, lo=1, hi=n)
    from rmtfl._threads import blas_threads

    g = np.random.default_rng(rng)
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
    top = top_eigenpairs(K, k, rng=g, tol=tol)  # a residual tolerance: ARPACK (dense when small)
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
                            rng=None, X=None, backend="numpy") -> DegreeBlocks:
    """Top Gram eigenvalues of ``k_I`` (sphere) or ``k_0`` (Gaussian inputs) grouped by degree.

    The predicted values are :func:`~rmtfl.theory.sphere_eigenvalues`
    (sphere) or ``gaussian_k0`` (Gaussian inputs).  Blocks are assigned by sorting
    the predicted eigenvalues of ``degrees`` in decreasing order; all other
    degrees must have smaller eigenvalues (checked).  ``backend="cupy"`` builds ``K`` and
    its top eigenpairs on the device (inputs drawn on the host, same sample as numpy).
    """
    d, n = check_int("d", d, lo=2), check_int("n", n, lo=2)
    check_choice("measure", measure, ("gaussian", "sphere"))
    g = np.random.default_rng(rng)
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
    K = kernel_gram(activation, X, gamma=gamma, backend=backend)
    K /= n
    vals, _, method = top_gram_eigenpairs(K, total, rng=g, backend=backend)
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
    """Top Gram eigenpair of ``k_{A(I + b v v^T)}`` versus the zonal harmonics (docs/theory/spiked_kernel.md §7.1).

    ``eigenvalue`` is the top eigenvalue of ``K/n``; ``cos2_y0``/``cos2_y2``/``cos2_psi``
    are the **squared** overlaps (docs/conventions.md §1) ``<phi, Y>^2`` of the unit top
    eigenvector ``phi`` with the unit sample vectors of ``Y_0``, ``Y_2^v`` and
    ``psi* = <v, x>``.  They estimate ``overlaps[0]``, ``overlaps[2]`` of
    :func:`rmtfl.theory.zonal_top_eigenfunction` (and 0 for ``psi*``).
    ``y0``/``y2``/``psi`` are read-only aliases of the same squared overlaps.
    """

    d: int
    n: int
    b: float
    measure: str
    eigenvalue: float
    cos2_y0: float
    cos2_y2: float
    cos2_psi: float

    @property
    def y0(self) -> float:
        """Alias of ``cos2_y0`` (a squared overlap), kept for existing callers."""
        return self.cos2_y0

    @property
    def y2(self) -> float:
        """Alias of ``cos2_y2`` (a squared overlap), kept for existing callers."""
        return self.cos2_y2

    @property
    def psi(self) -> float:
        """Alias of ``cos2_psi`` (a squared overlap), kept for existing callers."""
        return self.cos2_psi


def gram_alignment(d: int, n: int, b: float, *, activation="relu", A: float = 1.0, measure: str = "sphere",
                   rng=None, v=None, backend="numpy") -> GramAlignment:
    """One draw of the Gram-alignment experiment (docs/theory/spiked_kernel.md §7.1) for ``Gamma = A (I + b v v^T)``.

    ``v`` defaults to a uniformly random unit vector drawn from ``rng``.  Overlaps are
    squared (docs/conventions.md §1).  ``backend="cupy"``: Gram matrix and top eigenpair on the
    device (same host-drawn inputs as numpy).

    >>> r = gram_alignment(6, 300, 0.0, rng=0)
    >>> bool(r.cos2_y0 > 0.98), bool(r.cos2_y2 < 0.05)
    (True, True)
    """
    d, n = check_int("d", d, lo=2), check_int("n", n, lo=2)
    b = check_nonnegative("b", b)
    A = check_positive("A", A)
    g = np.random.default_rng(rng)
    v = random_direction(d, g) if v is None else np.asarray(v, dtype=float) / np.linalg.norm(v)
    X = sample_measure(n, d, measure, g)
    K = kernel_gram(activation, X, gamma=(A, A * b, v), backend=backend)
    K /= n
    vals, vecs, _ = top_gram_eigenpairs(K, 1, rng=g, backend=backend)
    phi = vecs[:, 0]
    Y = harmonic_vectors(X, v, (0, 1, 2), measure)
    ov = phi @ Y
    c2 = ov * ov
    return GramAlignment(d, n, b, measure, float(vals[0]), float(c2[0]), float(c2[2]), float(c2[1]))


def eigvec_alignment(K, X, v, *, k: int = 1, measure: str = "gaussian", rng=None, backend=None) -> dict:
    """Top-``k`` eigenpairs of any Gram matrix (``k_0``, ``k_1`` or :func:`empirical_rf_kernel`) and
    the **squared** overlaps (docs/conventions.md §1) of its eigenvectors with the unit sample vectors of
    ``Y_0``, ``psi* = <v, x>`` and ``Y_2^v`` (:func:`harmonic_vectors`).  ``K`` is divided by ``n`` first.

    Returns ``{"values": (k,), "cos2_y0": (k,), "cos2_psi": (k,), "cos2_y2": (k,)}`` (host arrays).
    ``backend=None`` follows ``K`` (a cupy ``K`` is diagonalised on the device, see
    :func:`top_gram_eigenpairs`).

    >>> X = sample_sphere(300, 5, rng=0); v = np.eye(5)[0]
    >>> out = eigvec_alignment(kernel_gram("relu", X, gamma=(1.0, 0.0, v)), X, v, measure="sphere", rng=1)
    >>> bool(out["cos2_y0"][0] > 0.98)
    True
    """
    be = _backend_of(K, backend)
    K = np.asarray(to_numpy(K), dtype=float) if be.name == "numpy" else be.asarray(K, dtype=np.float64)
    X = to_numpy(X)
    n = K.shape[0]
    if K.shape != (n, n) or X.shape[0] != n:
        raise ValueError(f"K must be (n, n) with n = len(X) = {X.shape[0]}, got {K.shape}")
    vals, vecs, _ = top_gram_eigenpairs(K / n, k, rng=rng, backend=be)
    ov = vecs.T @ harmonic_vectors(X, v, (0, 1, 2), measure)
    c2 = ov * ov
    return {"values": vals, "cos2_y0": c2[:, 0], "cos2_psi": c2[:, 1], "cos2_y2": c2[:, 2]}


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
                       n_orth: int = 8, rng=None, backend="numpy") -> LinearSectorEstimate:
    """Estimate the eigenvalues of ``<v, x>`` and ``<e, x>`` (``e ⊥ v``) under ``k_{A I + B v v^T}``.

    ``lambda_hat = U / (2 D - E psi^2)`` with ``U = sum_{i != j} psi_i K_ij psi_j / (n (n-1))`` and
    ``D = mean_i psi_i^2``: for an exact eigenfunction the Hájek projection of ``U`` is
    ``lambda (2 D - E psi^2)``, so the first-order fluctuation cancels (the naive
    Rayleigh quotient ``U/D`` has relative error ``~ sqrt(2/n)``); ``E psi^2`` is known
    exactly (1 for Gaussian inputs, ``1/d`` on the sphere).  Remaining error ``O(1/n)``.
    ``backend="cupy"``: ``K`` and the quadratic forms on the device (all random numbers
    drawn on the host in the same order as numpy).
    """
    A, B = check_nonnegative("A", A), check_nonnegative("B", B)
    d, n = check_int("d", d, lo=2), check_int("n", n, lo=2)
    g = np.random.default_rng(rng)
    v = random_direction(d, g)
    X = sample_measure(n, d, measure, g)
    be = get_backend(backend)
    K = kernel_gram(activation, X, gamma=(A, B, v), backend=be)
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
    return LinearSectorEstimate(float(lam[0]), float(lam[1:].mean()), n, measure)
