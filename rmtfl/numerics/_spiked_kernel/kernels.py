"""Sampled kernel Gram matrices on a backend: ``k_0``, ``k_1``, the empirical RF kernel and ``sigma`` itself.

Normalisation (docs/conventions.md §7–§8): ``k_Gamma`` has no prefactor, ``k_0 = k_{I/d}``;
Gram matrices carry no ``1/n`` (divide by ``n`` for the operator w.r.t. the input
*probability* measure).

Backends: ``backend="numpy"`` (default) or ``"cupy"`` (:func:`rmtfl.numerics.get_backend`).
Random numbers are always drawn on the host from the ``rng`` Generator and moved with
``backend.asarray``, so both backends see the same inputs.  On cupy the Gram GEMM and
its closed-form elementwise map (relu, step, erf, relu^2, identity; Mehler series with
host-computed coefficients otherwise) run on the device, and so do the GEMMs and ``sigma``
of :func:`empirical_rf_kernel` (:func:`activate`).  cupy is imported only when requested.

Examples
--------
>>> import numpy as np
>>> from rmtfl.numerics import sample_sphere
>>> X = sample_sphere(300, 5, rng=0)
>>> K = kernel_gram("relu", X, gamma=1.0)
>>> K.shape, bool(np.allclose(np.diag(K), 0.5))
((300, 300), True)
"""
from __future__ import annotations

import numpy as np

from rmtfl._validate import check_array, check_int
from rmtfl.theory import Activation, SpikedGamma, as_gamma, get_activation, gram_block, rf_kernel
from .._backend import get_backend, to_numpy


def _on_device(v) -> bool:
    return type(v).__module__.startswith("cupy")


def _host_matrix(name, value, ndim=2):
    """A real finite non-empty host array of rank ``ndim`` (a cupy array is moved to the host)."""
    if _on_device(value):
        value = to_numpy(value)
    return check_array(name, value, ndim=ndim, min_size=1)

__all__ = ["kernel_gram", "activate", "empirical_rf_kernel"]


def kernel_gram(activation, X, X2=None, *, gamma, kmax: int = 40, backend="numpy"):
    """Gram matrix ``[k_Gamma(x_i, x2_j)]`` (no ``1/n``; docs/conventions.md §7), on a backend.

    The sampled counterpart of :func:`rmtfl.theory.rf_kernel` (same arguments, plus ``backend``).
    ``k_0``: ``gamma = 1/d``; ``k_1``: ``gamma = (A, B, v)``.  With ``backend="numpy"`` the
    result is a host array (exactly :func:`~rmtfl.theory.rf_kernel`); with
    ``"cupy"`` the inputs are moved to the device, ``X Gamma``, the GEMM and the
    elementwise map (:func:`~rmtfl.theory.gram_block`) run there and a device
    array is returned (``gamma`` is validated on the host; ``d x d`` is never formed for
    ``(A, B, v)``).

    Parameters
    ----------
    activation : str, callable or Activation
        The activation ``sigma``.
    X, X2 : arrays of shape (n, d), (n2, d)
        Inputs (rows); ``X2=None`` means ``X``.
    gamma : (d, d) array, scalar, ``(A, B, v)`` or SpikedGamma
        Weight covariance, as in :func:`rmtfl.theory.rf_kernel`.
    kmax : int
        Mehler truncation degree (non-closed-form activations).
    backend : str or Backend
        ``"numpy"`` (default) or ``"cupy"``.

    Returns
    -------
    array of shape (n, n2) (host for numpy, device for cupy)

    Examples
    --------
    >>> from rmtfl.numerics import sample_sphere
    >>> X = sample_sphere(50, 4, rng=1)
    >>> K = kernel_gram("step", X, gamma=(1.0, 2.0, np.eye(4)[0]))
    >>> bool(np.allclose(np.diag(K), 0.5)), bool(np.allclose(K, K.T))
    (True, True)
    """
    act = get_activation(activation)
    be = get_backend(backend)
    kmax = check_int("kmax", kmax, lo=0, hi=170)
    if be.name == "numpy":
        X = _host_matrix("X", X)
        X2 = None if X2 is None else _host_matrix("X2", X2)
        if X.shape[1] < 2:
            raise ValueError(f"X must have d >= 2 columns, got shape {X.shape}")
        if X2 is not None and X2.shape[1] != X.shape[1]:
            raise ValueError(f"X (n, d) and X2 (n2, d) must have the same d, got {X.shape}, {X2.shape}")
        try:
            return rf_kernel(act, X, X2, gamma=gamma, kmax=kmax)
        except ValueError as exc:
            if "too large" in str(exc):
                raise ValueError(f"X, X2 or gamma is too large: the kernel overflows ({exc})") from None
            raise
    xp = be.xp
    Xd = be.asarray(X, dtype=np.float64)
    X2d = Xd if X2 is None else be.asarray(X2, dtype=np.float64)
    if Xd.ndim != 2 or X2d.ndim != 2 or Xd.shape[1] != X2d.shape[1]:
        raise ValueError(f"X (n, d) and X2 (n2, d) must be matrices with the same d, got {Xd.shape}, {X2d.shape}")
    if not (bool(xp.isfinite(Xd).all()) and bool(xp.isfinite(X2d).all())):
        raise ValueError("X and X2 must be finite")
    g = as_gamma(gamma, d=Xd.shape[1])

    def apply(Z):
        if isinstance(g, SpikedGamma):
            vd = be.asarray(g.v)
            return g.A * Z + g.B * xp.outer(Z @ vd, vd)
        return Z @ be.asarray(g)

    XG = apply(Xd)
    s = xp.einsum("ij,ij->i", XG, Xd)
    s2 = s if X2 is None else xp.einsum("ij,ij->i", apply(X2d), X2d)
    return gram_block(act, XG, X2d, s, s2, kmax=kmax, backend=be)


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


def activate(activation, Z, *, backend="numpy"):
    """``sigma(Z)`` elementwise on the array namespace of ``backend``.

    numpy: ``np.asarray(sigma(Z))`` (the activation's own function).  On another backend
    (cupy) relu, step, relu^p, tanh, erf (``cupyx.scipy.special.erf``, imported only
    then), sigmoid, softplus and polynomials (Hermite recurrence, docs/conventions.md §2) are
    evaluated on the device; any other activation is evaluated on the host and moved back.

    Examples
    --------
    >>> activate("relu", np.array([-1.0, 2.0])).tolist()
    [0.0, 2.0]
    """
    act, be = get_activation(activation), get_backend(backend)
    if not _on_device(Z):
        Z = check_array("Z", Z, finite=False)  # elementwise: NaN in, NaN out (docs/reliability.md §2)
    return _activate(act, Z, be)


def _activate(act: Activation, Z, be):
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


def empirical_rf_kernel(activation, W, X, X2=None, *, backend="numpy"):
    """``sigma(X W^T) sigma(X2 W^T)^T / N`` for a sampled first layer ``W`` (``N x d``).

    Converges entrywise to ``k_Gamma`` when the rows of ``W`` are i.i.d. ``N(0, Gamma)``
    (docs/conventions.md §7; docs/theory/spiked_kernel.md §6).  Host array for ``backend="numpy"``;
    on ``"cupy"`` the two GEMMs and ``sigma`` (:func:`activate`) run on the device and a device
    array is returned.

    Parameters
    ----------
    activation : str, callable or Activation
        The activation ``sigma``.
    W : array of shape (N, d)
        First-layer weights (rows).
    X, X2 : arrays of shape (n, d), (n2, d)
        Inputs; ``X2=None`` means ``X``.
    backend : str or Backend
        ``"numpy"`` (default) or ``"cupy"``.

    Returns
    -------
    array of shape (n, n2)

    Examples
    --------
    >>> W = np.array([[1.0, 0.0], [0.0, 1.0]]); X = np.array([[1.0, 2.0], [-1.0, 1.0]])
    >>> empirical_rf_kernel("relu", W, X).tolist()     # (relu(XW^T) relu(XW^T)^T)/2
    [[2.5, 1.0], [1.0, 0.5]]
    """
    act = get_activation(activation)
    be = get_backend(backend)
    if be.name == "numpy":
        W, X = _host_matrix("W", W), _host_matrix("X", X)
        X2 = None if X2 is None else _host_matrix("X2", X2)
        if X2 is not None and X2.shape[1] != X.shape[1]:
            raise ValueError(f"X (n, d) and X2 (n2, d) must have the same d, got {X.shape}, {X2.shape}")
    else:
        W, X = be.asarray(W, dtype=np.float64), be.asarray(X, dtype=np.float64)
    if W.ndim != 2 or X.ndim != 2 or W.shape[1] != X.shape[1]:
        raise ValueError(f"W (N, d) and X (n, d) must share d, got {W.shape} and {X.shape}")
    if be.name == "numpy":
        with np.errstate(over="ignore", invalid="ignore"):
            F = np.asarray(act(X @ W.T), dtype=float)
            F2 = F if X2 is None else np.asarray(act(X2 @ W.T), dtype=float)
            K = F @ F2.T / W.shape[0]
        if not np.all(np.isfinite(K)):
            raise ValueError("W and X (or X2) are too large: the kernel overflows (rescale them)")
        return K
    F = _activate(act, X @ W.T, be)
    F2 = F if X2 is None else _activate(act, be.asarray(X2, dtype=np.float64) @ W.T, be)
    return F @ F2.T / W.shape[0]

