"""Gaussian and spiked random matrices (the classical random-matrix samples).

Normalisation: ``W0`` is ``N x d`` with iid ``N(0, var/d)`` entries
(docs/conventions.md §4, ``var = 1``), so its singular values fill
``sqrt(var) [|1 - sqrt(psi)|, 1 + sqrt(psi)]`` with ``psi = N/d``.  The spiked
matrix is ``W = W0 + sum_i theta_i u_i v_i^T`` (docs/theory/two_step.md §2) with ``U``
(``N x r``) and ``V`` (``d x r``) random orthonormal frames, drawn
independently of ``W0`` and of each other (Haar, via QR of a Gaussian matrix
with sign-fixed ``R`` diagonal).

Signatures: the shape ``N, d`` (and the strengths ``theta``) are positional -- they define the
sample; everything else is keyword-only, ``rng`` and ``backend`` included (docs/api.md).

Randomness: ``rng`` is a seed or ``numpy.random.Generator``; numbers are drawn
on the host and moved to the backend with ``Backend.asarray`` (same seed =>
same matrix on every backend).  With ``device_rng=True`` the Gaussian noise is
drawn by the backend's own generator instead (cupy's ``default_rng`` on the
device, seeded by one integer drawn from ``rng``): reproducible for a given
seed and backend, but a *different stream* from the host one, so numpy and cupy
then see different matrices (faster on a GPU: no host draw, no transfer).
``spiked_matrix`` spawns three children (noise, U, V), so the noise does not
depend on the number of spikes.

Examples
--------
>>> W = gaussian_matrix(4, 8, rng=0)
>>> W.shape, W.dtype.name
((4, 8), 'float64')
>>> sp = spiked_matrix(50, 40, [3.0, 2.0], rng=1)
>>> sp.W.shape, sp.U.shape, sp.V.shape
((50, 40), (50, 2), (40, 2))
>>> bool(abs(sp.U.T @ sp.U - np.eye(2)).max() < 1e-12)
True
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from rmtfl._results import Result
from rmtfl._validate import check_array, check_int, check_memory, check_positive, check_rng
from .._backend import check_dtype, get_backend

__all__ = ["gaussian_matrix", "haar_frame", "spiked_matrix", "SpikedMatrix", "device_normal"]


def _shape(shape) -> tuple:
    """An int or a tuple/list of non-negative ints, as a tuple; else an error naming ``shape``."""
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
        shape = (shape,)
    if not isinstance(shape, (tuple, list)):
        raise TypeError(f"shape must be a non-negative int or a tuple of them, got {shape!r}")
    try:
        return tuple(check_int("shape", n, 0) for n in shape)
    except ValueError:
        raise ValueError(f"shape must be a non-negative int or a tuple of them, got {shape!r}") from None


def device_normal(shape, *, dtype="float64", rng=None, backend="numpy"):
    """Standard normals ``N(0, 1)`` of ``shape``/``dtype`` drawn by ``backend``'s own generator.

    Unscaled: the samplers scale them to the laws of docs/conventions.md §4.

    The generator (``Backend.device_rng``: cupy's ``default_rng`` on cupy, numpy's on
    numpy) is seeded with one integer drawn from the host ``rng``, so a seed gives the
    same numbers on a given backend; it is a different stream from the host draws.
    ``shape`` positional; ``dtype``, ``rng``, ``backend`` keyword-only (docs/api.md).

    >>> device_normal((2, 3), dtype="float32", rng=0).dtype.name
    'float32'
    """
    shape = _shape(shape)
    dt = check_dtype(dtype)
    g = check_rng(rng)
    be = get_backend(backend)
    check_memory("shape", float(np.prod(shape, dtype=float)) * dt.itemsize, f"a {shape} {dt.name} array")
    seed = int(g.integers(0, 2**63 - 1))
    return be.device_rng(seed).standard_normal(shape, dtype=dt)


def gaussian_matrix(N: int, d: int, *, var: float = 1.0, rng=None, dtype="float64", backend="numpy",
                    device_rng: bool = False):
    """``N x d`` matrix with iid ``N(0, var/d)`` entries, on ``backend`` in ``dtype``.

    Normalisation: docs/conventions.md §4 (``var = 1`` is the law of ``W0``); its singular values
    follow docs/theory/two_step.md §1.2.  ``N, d`` positional, the rest keyword-only.
    ``device_rng=True``: drawn by the backend's generator (a different stream, see the module notes).

    >>> float(abs(gaussian_matrix(200, 300, rng=0)).max()) < 1.0
    True
    """
    N = check_int("N", N, 1)
    d = check_int("d", d, 1)
    var = check_positive("var", var)
    dt = check_dtype(dtype)
    be = get_backend(backend)
    rng = check_rng(rng)
    # host draw, then the copy on the backend (cupy) -- nothing is allocated before this check
    check_memory("N x d", float(N) * d * dt.itemsize * (1 if be.name == "numpy" else 2),
                 f"a {N} x {d} {dt.name} matrix")
    if device_rng:
        Z = device_normal((N, d), dtype=dt, rng=rng, backend=be)
        Z *= dt.type(np.sqrt(var / d))
        return Z
    Z = rng.standard_normal((N, d), dtype=dt)
    Z *= dt.type(np.sqrt(var / d))
    return be.asarray(Z)


def haar_frame(n: int, r: int, *, rng=None) -> np.ndarray:
    """``n x r`` matrix with orthonormal columns, Haar distributed (host float64).

    The frames ``U``, ``V`` of docs/theory/two_step.md §2 (QR of a Gaussian matrix, sign-fixed);
    ``n, r`` positional, ``rng`` keyword-only.

    >>> Q = haar_frame(5, 2, rng=0)
    >>> bool(np.allclose(Q.T @ Q, np.eye(2)))
    True
    """
    n = check_int("n", n, 1)
    r = check_int("r", r, 1, n)
    rng = check_rng(rng)
    # the Gaussian draw, its QR factor and the sign-fixed copy
    check_memory("n", 3.0 * n * r * 8, f"a {n} x {r} float64 frame")
    Q, R = np.linalg.qr(rng.standard_normal((n, r)))
    return Q * np.sign(np.diag(R))[None, :]


@dataclass(frozen=True)
class SpikedMatrix(Result):
    """``W = W0 + U diag(theta) V^T``: ``W`` on the requested backend, ``U``/``V``/``theta`` on the host.

    The model of docs/theory/two_step.md §2 (``U`` on the N side, ``V`` on the d side).

    ``to_dict()`` leaves out the matrices (``W``, ``U``, ``V``) and keeps ``theta``.
    """

    W: object = field(repr=False)
    U: np.ndarray = field(repr=False)
    V: np.ndarray = field(repr=False)
    theta: np.ndarray

    @property
    def rank(self) -> int:
        """Number of spikes ``r``."""
        return int(self.theta.size)


def spiked_matrix(N: int, d: int, theta, *, var: float = 1.0, rng=None, dtype="float64",
                  backend="numpy", device_rng: bool = False) -> SpikedMatrix:
    """Spiked matrix ``W0 + sum_i theta_i u_i v_i^T`` (docs/theory/two_step.md §2; ``u_i`` on the N side).

    ``W0`` as in :func:`gaussian_matrix` (entries ``N(0, var/d)``, docs/conventions.md §4).
    ``N, d, theta`` positional, the rest keyword-only.
    ``theta`` is a scalar or a 1-d array of ``r <= min(N, d)`` non-negative strengths.
    ``device_rng=True``: the noise ``W0`` is drawn by the backend's generator (a different
    stream); the frames ``U``, ``V`` are always drawn on the host.

    >>> sp = spiked_matrix(30, 20, 2.0, rng=0)
    >>> sp.rank, sp.theta.tolist()
    (1, [2.0])
    """
    N = check_int("N", N, 1)
    d = check_int("d", d, 1)
    th = np.atleast_1d(check_array("theta", theta, ndim=(0, 1))).astype(np.float64)
    if th.size == 0:
        raise ValueError("theta must have at least one strength (for pure noise use gaussian_matrix), got []")
    if np.any(th < 0):
        raise ValueError(f"theta must be >= 0, got {theta!r}")
    if th.size > min(N, d):
        raise ValueError(f"theta: the number of spikes must be <= min(N, d) = {min(N, d)}, got {th.size}")
    var = check_positive("var", var)
    be = get_backend(backend)
    dt = check_dtype(dtype)
    g = check_rng(rng)
    # noise, the rank-r float64 product, their sum (host; plus the device copy on cupy); the frames
    check_memory("N x d", float(N) * d * (2 * dt.itemsize + 8 + (0 if be.name == "numpy" else dt.itemsize))
                 + 3.0 * (N + d) * th.size * 8, f"a {N} x {d} {dt.name} spiked matrix")
    r_noise, r_u, r_v = g.spawn(3)
    U = haar_frame(N, th.size, rng=r_u)
    V = haar_frame(d, th.size, rng=r_v)
    if device_rng:
        W = gaussian_matrix(N, d, var=var, rng=r_noise, dtype=dt, backend=be, device_rng=True)
        W += be.asarray(U * th[None, :], dtype=dt) @ be.asarray(V.T, dtype=dt)
        return SpikedMatrix(W, U, V, th)
    W0 = gaussian_matrix(N, d, var=var, rng=r_noise, dtype=dt, backend="numpy")
    W = W0 + ((U * th[None, :]) @ V.T).astype(dt)
    return SpikedMatrix(be.asarray(W), U, V, th)


@dataclass(frozen=True)
class SpikedMeasurement(Result):
    """Measured outliers of a :class:`SpikedMatrix` (the finite-N counterpart of :class:`rmtfl.theory.BGNOutlier`).

    ``singular_values``: the top ``r`` singular values (descending); ``cos2_left[i]`` /
    ``cos2_right[i]``: squared overlap (docs/conventions.md §1) of the ``i``-th top left (N side) /
    right (d side) singular vector with the planted ``u_i`` / ``v_i`` of the ``i``-th largest
    ``theta``; ``outlier_count``: values above ``edge``, the MP edge plus a Tracy–Widom margin
    (:func:`rmtfl.theory.edge_margin`); ``complete`` as in :class:`rmtfl.numerics.TopTriplets`.
    """

    singular_values: np.ndarray
    cos2_left: np.ndarray
    cos2_right: np.ndarray
    outlier_count: int
    edge: float
    complete: bool


def measure_spiked(sp: SpikedMatrix, *, var: float = 1.0, p: float = 0.99, method: str = "auto", rng=None,
                   backend="numpy") -> SpikedMeasurement:
    """Top singular triplets of ``sp.W`` matched to the planted spikes (sorted by decreasing ``theta``).

    Normalisation: docs/theory/two_step.md §2 (predictions: :func:`rmtfl.theory.bgn_outlier`); the
    edge is :func:`rmtfl.theory.edge_margin` ``(N, d, var=var, p=p)`` (docs/theory/classical.md §5).
    ``sp`` positional, the rest keyword-only; ``rng`` seeds the top-k solver's start vector and
    ``method`` is that of :func:`rmtfl.numerics.top_singular_triplets`.

    >>> m = measure_spiked(spiked_matrix(400, 200, [4.0], rng=0), rng=1)
    >>> m.outlier_count, bool(m.cos2_left[0] > 0.8)
    (1, True)
    """
    from rmtfl.theory import edge_margin
    from .spectra import squared_overlaps, top_singular_triplets

    if not isinstance(sp, SpikedMatrix):
        raise TypeError(f"sp must be a SpikedMatrix (from spiked_matrix), got {type(sp).__name__}")
    rng = check_rng(rng)
    N, d = sp.W.shape
    r = max(sp.rank, 1)
    edge = edge_margin(N, d, var=var, p=p)
    top = top_singular_triplets(sp.W, min(r, min(N, d)), rng=rng, edge=edge, backend=backend, method=method)
    order = np.argsort(-sp.theta, kind="stable")
    U, V = sp.U[:, order], sp.V[:, order]
    k = sp.rank
    cl = np.array([squared_overlaps(top.U[:, i], U[:, i])[0, 0] for i in range(k)])
    cr = np.array([squared_overlaps(top.V[:, i], V[:, i])[0, 0] for i in range(k)])
    return SpikedMeasurement(top.s[:k].copy(), cl, cr, int(top.n_above), float(edge), bool(top.complete))


__all__ += ["SpikedMeasurement", "measure_spiked"]
