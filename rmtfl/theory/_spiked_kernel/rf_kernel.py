"""Random-features kernels ``k_Gamma(x, x2) = E_{w ~ N(0, Gamma)}[sigma(<w,x>) sigma(<w,x2>)]``.

Normalisation (docs/conventions.md §7): no prefactor; ``k_0 = k_{I/d}``.  Every kernel
is a function of the three scalars ``s = x^T Gamma x``, ``s2 = x2^T Gamma x2``
and ``c = x^T Gamma x2`` (docs/theory/spiked_kernel.md §2):

* relu (Cho & Saul): ``(1/2pi) [sqrt(s s' - c^2) + (pi - theta) c]``, ``cos theta = c/sqrt(s s')``;
* step ``1{z > 0}``: ``(pi - theta)/(2 pi)``;  ``relu^2``: arc-cosine ``J_2``;
* erf (Williams): ``(2/pi) arcsin(2c / sqrt((1 + 2s)(1 + 2s')))``;
* any other sigma: Mehler's series ``sum_k c_k(sigma; s) c_k(sigma; s') t^k``
  (``t = c/sqrt(s s')``), truncated at ``kmax`` with the Cauchy–Schwarz bound
  ``|tail| <= sqrt(R(s) R(s2))``, ``R(s) = E[sigma(sqrt(s) z)^2] - sum_{k<=kmax} c_k(sigma; s)^2``
  (:func:`kernel_truncation_error`, :func:`rf_kernel_error`).

Modules: ``Gamma`` in :mod:`.gamma`, the closed forms in :mod:`.closed_forms`, Mehler's series
and its bound in :mod:`.mehler`, ``dk/dB`` in :mod:`.spike_derivative`; this module evaluates
``k_Gamma`` from the scalars, on inputs and on Gram blocks.

``Gamma`` is a ``(d, d)`` PSD matrix, a scalar ``A`` (``Gamma = A I``), a tuple
``(A, B, v)`` (``Gamma = A I + B v v^T`` with ``v`` normalised to unit length;
``d x d`` is never formed) or a :class:`SpikedGamma`.  Gram blocks come from
one GEMM ``(X Gamma) X2^T`` plus elementwise work on row blocks.

Examples
--------
>>> import numpy as np
>>> x, x2 = np.array([1.0, 0, 0]), np.array([1.0, np.sqrt(3), 0])   # theta = pi/3, |x2| = 2
>>> round(float(rf_kernel("relu", x, x2, gamma=np.eye(3))), 10)
0.608997781
>>> round(float(rf_kernel("step", x, x2, gamma=1.0)), 12)
0.333333333333
"""
from __future__ import annotations

import math

import numpy as np

from rmtfl._validate import check_array, check_finite_array, check_int
from .._classical.activations import Activation, get_activation
from .closed_forms import arccos_kernel, arccos_xp, check_kernel_scalars, CLOSED_FORMS, erf_kernel
from .gamma import apply_gamma, as_gamma
from .mehler import check_kmax, check_variances, mehler_coefficients, mehler_series

__all__ = ["kernel_from_scalars", "rf_kernel", "rf_kernel_error", "gram_block"]

_BLOCK = 2048  # rows per GEMM block (efficient GEMM, bounded memory)
_SUB = 32  # rows per elementwise chunk (32 x n doubles stay in L2 for n <~ 8000)


def kernel_from_scalars(activation, s, s2, c, *, kmax: int = 40):
    """``k_Gamma`` from the scalars ``s = x^T Gamma x``, ``s2 = x2^T Gamma x2``, ``c = x^T Gamma x2``.

    Normalisation: no prefactor (docs/conventions.md §7).  Broadcasts like numpy.  Closed forms
    for relu, step, relu^2, erf and the identity (docs/theory/spiked_kernel.md §2.1–§2.2); the
    Mehler series truncated at ``kmax`` otherwise (its bound: :func:`kernel_truncation_error`).

    Parameters
    ----------
    activation : str, callable or Activation
        The activation ``sigma``.
    s, s2 : array_like
        Variances ``x^T Gamma x``, ``x2^T Gamma x2`` (``>= 0``).
    c : array_like
        Covariance ``x^T Gamma x2``.
    kmax : int
        Mehler truncation degree, ``0 <= kmax <= 170`` (ignored for closed forms).

    Returns
    -------
    ndarray
        The broadcast shape of ``s, s2, c``.  Non-finite ``s, s2, c`` are refused
        (docs/reliability.md §2).

    Examples
    --------
    >>> round(float(kernel_from_scalars("relu", 1.0, 4.0, 1.0)), 10)
    0.608997781
    >>> from rmtfl.theory import kernel_truncation_error
    >>> k = kernel_from_scalars("tanh", 1.0, 1.0, 0.3, kmax=30)
    >>> bool(kernel_truncation_error("tanh", 1.0, 1.0, kmax=30) < 1e-6)
    True
    """
    act = get_activation(activation)
    kmax = check_kmax(kmax)
    s, s2, c = check_kernel_scalars(s, s2, c)
    with np.errstate(over="ignore", invalid="ignore"):
        out = _from_scalars(act, s, s2, c, kmax)
    if not np.all(np.isfinite(out)):
        raise ValueError("s, s2 and c are too large: the kernel overflows")
    return out


def _from_scalars(act: Activation, s, s2, c, kmax):
    s, s2, c = np.broadcast_arrays(*(np.asarray(a, dtype=float) for a in (s, s2, c)))
    check_variances(s, s2)
    name = act.name
    if name == "relu":
        return arccos_kernel(1, s, s2, c)
    if name == "step":
        return arccos_kernel(0, s, s2, c)
    if name == "relu^2":
        return arccos_kernel(2, s, s2, c)
    if name == "erf":
        return erf_kernel(s, s2, c)
    if name in ("identity", "linear"):
        return c.copy()
    kmax = check_int("kmax", kmax, lo=0)
    return mehler_series(act, s, s2, c, kmax)


# ------------------------------------------------------------------- Gram blocks
def _diagonal_scalars(act, x, x2, gamma):
    """Validated 2-d inputs, ``X Gamma`` and the diagonal scalars ``s``, ``s2`` (host arrays)."""
    X = check_finite_array("x", x, dtype_kind="f")
    X2 = X if x2 is None else check_finite_array("x2", x2, dtype_kind="f")
    if X.ndim not in (1, 2) or X2.ndim not in (1, 2):
        raise ValueError(f"x and x2 must be vectors or (n, d) matrices, got shapes {X.shape}, {X2.shape}")
    Xa, X2a = np.atleast_2d(X).astype(float), np.atleast_2d(X2).astype(float)
    d = Xa.shape[1]
    if X2a.shape[1] != d:
        raise ValueError(f"x and x2 must have the same dimension d, got {d} and {X2a.shape[1]}")
    if d < 2:
        raise ValueError(f"x: the input dimension d must be >= 2 (rows of length d), got shape {X.shape}")
    if Xa.shape[0] == 0 or X2a.shape[0] == 0:
        raise ValueError(f"x and x2 must have at least one row, got shapes {X.shape}, {X2.shape}")
    g = as_gamma(gamma, d=d)
    with np.errstate(over="ignore", invalid="ignore"):
        XG = apply_gamma(g, Xa)
        s = np.einsum("ij,ij->i", XG, Xa)
        same = x2 is None or X2a is Xa or (X2a.shape == Xa.shape and np.array_equal(X2a, Xa))
        s2 = s if same else np.einsum("ij,ij->i", apply_gamma(g, X2a), X2a)
    if not (np.all(np.isfinite(XG)) and np.all(np.isfinite(s))):
        raise ValueError("x is too large: x^T Gamma x overflows (rescale x or gamma)")
    if not np.all(np.isfinite(s2)):
        raise ValueError("x2 is too large: x2^T Gamma x2 overflows (rescale x2 or gamma)")
    return X, X2, XG, X2a, s, s2


def rf_kernel(activation, x, x2=None, *, gamma, kmax: int = 40):
    """The random-features kernel ``k_Gamma(x, x2)`` (docs/conventions.md §7), vectorised.

    Normalisation: no prefactor, ``k_Gamma(x, x2) = E_{w ~ N(0, Gamma)}[sigma(<w,x>) sigma(<w,x2>)]``;
    eigenvalues of Gram matrices ``K/n`` estimate the operator w.r.t. the input probability
    measure (docs/conventions.md §8).

    Parameters
    ----------
    activation : str, callable or Activation
        Closed forms for relu, step, relu^2, erf, identity; Mehler series (``kmax`` terms; its
        truncation bound is :func:`rf_kernel_error`) otherwise.
    x, x2 : array of shape (d,) or (n, d) / (n2, d)
        Inputs (rows); ``x2=None`` means ``x2 = x``.  A vector gives a scalar / a row of the Gram block.
    gamma : (d, d) array, scalar ``A``, tuple ``(A, B, v)`` or :class:`SpikedGamma`
        Weight covariance (PSD).  ``(A, B, v)`` means ``A I + B v v^T`` with
        ``v`` normalised; the dense matrix is never formed.
    kmax : int
        Mehler truncation degree (ignored for closed forms).

    Returns
    -------
    ndarray of shape (n, n2) (or broadcast-reduced for vector inputs)

    Notes
    -----
    Cost: one GEMM ``(X Gamma) X2^T`` plus an elementwise pass per row block.

    Examples
    --------
    >>> X = np.array([[1.0, 0.0, 0.5], [0.2, -1.0, 0.0], [0.3, 0.4, 1.2], [-0.7, 0.1, 0.9]])
    >>> K = rf_kernel("relu", X, gamma=(1.0, 2.0, np.array([1.0, 0, 0])))
    >>> bool(np.allclose(K, K.T)), K.shape
    (True, (4, 4))
    """
    act = get_activation(activation)
    kmax = check_kmax(kmax)
    X, X2, XG, X2a, s, s2 = _diagonal_scalars(act, x, x2, gamma)
    with np.errstate(over="ignore", invalid="ignore"):
        K = _gram(act, XG, X2a, s, s2, kmax)
    if not np.all(np.isfinite(K)):
        raise ValueError("x and x2 are too large: the kernel overflows (rescale x, x2 or gamma)")
    vx, vx2 = X.ndim == 1, X2.ndim == 1
    if vx and vx2:
        return K[0, 0]
    if vx:
        return K[0]
    if vx2:
        return K[:, 0]
    return K


def rf_kernel_error(activation, x, x2=None, *, gamma, kmax: int = 40) -> float:
    """Bound on the Mehler truncation error of :func:`rf_kernel` for the same arguments (0 for closed forms).

    ``sqrt(max_i R(s_i) max_j R(s2_j))`` with ``s_i = x_i^T Gamma x_i`` (docs/theory/spiked_kernel.md §2.4;
    :func:`kernel_truncation_error` on the diagonal scalars).

    Parameters
    ----------
    activation, x, x2, gamma, kmax
        As in :func:`rf_kernel`.

    Returns
    -------
    float

    Examples
    --------
    >>> X = np.array([[1.0, 0.0], [0.6, 0.8]])
    >>> rf_kernel_error("relu", X, gamma=1.0)
    0.0
    >>> bool(rf_kernel_error("tanh", X, gamma=1.0, kmax=30) < 1e-6)
    True
    """
    act = get_activation(activation)
    kmax = check_kmax(kmax)
    _, _, _, _, s, s2 = _diagonal_scalars(act, x, x2, gamma)
    with np.errstate(over="ignore", invalid="ignore"):
        out = _outer_tail_bound(act, s, s2, kmax)
    if not math.isfinite(out):
        raise ValueError("x and x2 are too large: the Mehler tail bound overflows")
    return out


def _outer_tail_bound(act: Activation, s, s2, kmax) -> float:
    """``max_{i,j} sqrt(R(s_i) R(s2_j)) = sqrt(max R(s) max R(s2))`` on host arrays."""
    if act.name in CLOSED_FORMS or not (np.size(s) and np.size(s2)):
        return 0.0
    R1 = mehler_coefficients(act, _host(s), kmax=kmax).tail
    R2 = R1 if s2 is s else mehler_coefficients(act, _host(s2), kmax=kmax).tail
    return float(math.sqrt(R1.max() * R2.max()))


def _host(a):
    """Host numpy copy of a numpy or cupy array (theory never imports the numerics backend)."""
    return a.get() if hasattr(a, "get") and not isinstance(a, np.ndarray) else np.asarray(a)


def _namespace(backend):
    """The array namespace of ``backend``: numpy for ``None``/``"numpy"``, a module, or ``backend.xp``."""
    if backend is None or (isinstance(backend, str) and backend == "numpy"):
        return np
    if isinstance(backend, str):
        raise ValueError(f"backend must be 'numpy', an array namespace (module) or an object with an 'xp' "
                         f"attribute such as rmtfl.numerics.get_backend({backend!r}); got {backend!r} "
                         "(rmtfl.theory never imports a device library itself)")
    xp = getattr(backend, "xp", backend)
    if not all(hasattr(xp, f) for f in ("sqrt", "arcsin", "clip", "empty", "where")):
        raise TypeError(f"backend must be 'numpy', an array namespace (module) or an object with an 'xp' "
                        f"attribute, got {backend!r}")
    return xp


def gram_block(activation, XG, X2, s, s2, *, kmax: int = 40, backend="numpy"):
    """Gram block ``[k_Gamma(x_i, x2_j)]`` from ``X Gamma``, ``X2`` and the diagonal scalars, on any array namespace.

    The elementwise work of :func:`rf_kernel` without its validation; normalisation as
    :func:`rf_kernel` (no prefactor, docs/conventions.md §7).  ``XG = X Gamma`` (``n x d``),
    ``X2`` (``n2 x d``), ``s = diag(X Gamma X^T)`` and ``s2 = diag(X2 Gamma X2^T)`` are arrays of
    the namespace of ``backend``.  Closed forms (relu, step, erf, relu^2, identity) run entirely in
    that namespace: one GEMM plus elementwise maps.  For the Mehler series the per-row coefficients
    ``c_k(sigma; s_i)`` are computed on the host (quadrature) and moved over; the Horner sum runs
    in the namespace.  The truncation bound of the series is :func:`kernel_truncation_error`
    (on ``s[:, None], s2[None, :]``).

    Parameters
    ----------
    activation : str, callable or Activation
        The activation ``sigma``.
    XG, X2, s, s2 : arrays
        As above, all in the namespace of ``backend``.
    kmax : int
        Mehler truncation degree, ``0 <= kmax <= 170``.
    backend : ``"numpy"`` (default, or ``None``), an array-namespace module, or an object with an ``xp``
        attribute (:func:`rmtfl.numerics.get_backend`'s ``Backend``).  rmtfl.theory never imports cupy:
        for the device pass ``get_backend("cupy")`` (or the ``cupy`` module) from the caller.

    Returns
    -------
    array of shape (n, n2) in the namespace of ``backend``

    Examples
    --------
    >>> X = np.array([[1.0, 0.0], [0.6, 0.8]])
    >>> K = gram_block("relu", X, X, np.ones(2), np.ones(2))
    >>> bool(np.allclose(K, rf_kernel("relu", X, gamma=1.0)))
    True
    """
    act = get_activation(activation)
    kmax = check_kmax(kmax)
    xp = _namespace(backend)
    if xp is np:
        XG = check_array("XG", XG, ndim=2, min_size=1)
        X2 = check_array("X2", X2, ndim=2, min_size=1)
        if X2.shape[1] != XG.shape[1]:
            raise ValueError(f"XG and X2 must have the same number of columns d, got shapes {XG.shape}, "
                             f"{X2.shape}")
        s = check_array("s", s, shape=(XG.shape[0],))
        s2 = check_array("s2", s2, shape=(X2.shape[0],))
        if np.any(s < 0):
            raise ValueError("s (diag of X Gamma X^T) must be >= 0")
        if np.any(s2 < 0):
            raise ValueError("s2 (diag of X2 Gamma X2^T) must be >= 0")
        with np.errstate(over="ignore", invalid="ignore"):
            K = _gram(act, XG, X2, s, s2, kmax, xp)
        if not np.all(np.isfinite(K)):
            raise ValueError("XG, X2, s and s2 are too large: the Gram block overflows")
        return K
    for name, a, nd in (("XG", XG, 2), ("X2", X2, 2), ("s", s, 1), ("s2", s2, 1)):
        if getattr(a, "ndim", None) != nd:
            raise ValueError(f"{name} must be a {nd}-d array of the backend's namespace, got {type(a).__name__}")
    return _gram(act, XG, X2, s, s2, kmax, xp)


def _gram(act: Activation, XG, X2, s, s2, kmax, xp=np):
    """Gram block from ``X Gamma`` (n x d), ``X2`` (n2 x d) and the diagonal scalars (namespace ``xp``).

    On numpy the elementwise work runs in place on cache-sized row chunks; on another
    namespace (cupy) on whole GEMM row blocks (fewer kernel launches).
    """
    name = act.name
    n = XG.shape[0]
    on_host = xp is np
    if name in ("relu", "step", "erf"):
        # normalise rows so that the GEMM returns the cosine directly
        if name == "erf":
            r, r2 = xp.sqrt(1 + 2 * s), xp.sqrt(1 + 2 * s2)
            fac = 2.0
        else:
            r, r2 = xp.sqrt(s), xp.sqrt(s2)
            fac = 1.0
        with np.errstate(divide="ignore", invalid="ignore"):
            ir = xp.where(r > 0, fac / r, 0.0)
            ir2 = xp.where(r2 > 0, 1.0 / r2, 0.0)
        A = XG * ir[:, None]
        Bt = (X2 * ir2[:, None]).T.copy()
        n2 = Bt.shape[1]
        K = xp.empty((n, n2))
        rc = r / (2 * np.pi)
        sub = _SUB if on_host else _BLOCK
        S = xp.empty((sub, n2)) if name == "relu" else None
        for i0 in range(0, n, _BLOCK):  # one large GEMM per row block ...
            blk = K[i0:i0 + _BLOCK]
            if on_host:
                np.matmul(A[i0:i0 + _BLOCK], Bt, out=blk)
            else:
                blk[...] = A[i0:i0 + _BLOCK] @ Bt
            for j0 in range(0, blk.shape[0], sub):  # ... elementwise work on cache-sized chunks
                T = blk[j0:j0 + sub]
                xp.clip(T, -1.0, 1.0, out=T)
                if name == "step":  # (pi - arccos t)/(2 pi) = 1/4 + arcsin(t)/(2 pi)
                    xp.arcsin(T, out=T)
                    T *= 1 / (2 * np.pi)
                    T += 0.25
                elif name == "erf":
                    xp.arcsin(T, out=T)
                    T *= 2 / np.pi
                else:  # relu: r r2 [sqrt(1-t^2) + t (pi/2 + arcsin t)] / (2 pi)
                    U = S[:T.shape[0]]
                    xp.arcsin(T, out=U)
                    U += np.pi / 2
                    U *= T
                    xp.multiply(T, T, out=T)
                    xp.subtract(1.0, T, out=T)
                    xp.sqrt(T, out=T)
                    T += U
                    T *= rc[i0 + j0:i0 + j0 + T.shape[0], None]
                    T *= r2[None, :]
        return K
    C = XG @ X2.T
    if name in CLOSED_FORMS:
        if on_host:
            return _from_scalars(act, s[:, None], s2[None, :], C, kmax)
        if name in ("identity", "linear"):
            return C
        return arccos_xp(2, s[:, None], s2[None, :], C, xp)  # relu^2
    # Mehler series with per-row coefficients: K = sum_k c_k(s_i) c_k(s2_j) t_ij^k (Horner, in place)
    r, r2 = xp.sqrt(s), xp.sqrt(s2)
    with np.errstate(divide="ignore", invalid="ignore"):
        ir = xp.where(r > 0, 1 / r, 0.0)
        ir2 = xp.where(r2 > 0, 1 / r2, 0.0)
    T = C
    T *= ir[:, None]
    T *= ir2[None, :]
    xp.clip(T, -1.0, 1.0, out=T)
    Cx = mehler_coefficients(act, _host(s), kmax=kmax).coefficients
    Cy = Cx if s2 is s else mehler_coefficients(act, _host(s2), kmax=kmax).coefficients
    if not on_host:
        Cx, Cy = xp.asarray(Cx), xp.asarray(Cy)
    K = xp.zeros_like(T)
    for k in range(kmax, -1, -1):
        K *= T
        K += xp.outer(Cx[:, k], Cy[:, k])
    return K

