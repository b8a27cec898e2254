"""Random-features kernels ``k_Gamma(x, x') = E_{w ~ N(0, Gamma)}[sigma(<w,x>) sigma(<w,x'>)]``.

Normalisation (docs/conventions.md §7): no prefactor; ``k_0 = k_{I/d}``.  Every kernel
is a function of the three scalars ``s = x^T Gamma x``, ``s' = x'^T Gamma x'``
and ``c = x^T Gamma x'`` (docs/theory/spiked_kernel.md §2):

* relu (Cho & Saul): ``(1/2pi) [sqrt(s s' - c^2) + (pi - theta) c]``, ``cos theta = c/sqrt(s s')``;
* step ``1{z > 0}``: ``(pi - theta)/(2 pi)``;  ``relu^2``: arc-cosine ``J_2``;
* erf (Williams): ``(2/pi) arcsin(2c / sqrt((1 + 2s)(1 + 2s')))``;
* any other sigma: Mehler's series ``sum_k c_k(sigma; s) c_k(sigma; s') t^k``
  (``t = c/sqrt(s s')``), truncated at ``kmax`` with the Cauchy–Schwarz bound
  ``|tail| <= sqrt(R(s) R(s'))``, ``R(s) = E[sigma(sqrt(s) z)^2] - sum_{k<=kmax} c_k(sigma; s)^2``.

``Gamma`` is a ``(d, d)`` PSD matrix, a scalar ``A`` (``Gamma = A I``), a tuple
``(A, B, v)`` (``Gamma = A I + B v v^T`` with ``v`` normalised to unit length;
``d x d`` is never formed) or a :class:`SpikedGamma`.  Gram blocks come from
one GEMM ``(X Gamma) X'^T`` plus elementwise work on row blocks.

Examples
--------
>>> import numpy as np
>>> x, xp = np.array([1.0, 0, 0]), np.array([1.0, np.sqrt(3), 0])   # theta = pi/3, |x'| = 2
>>> round(float(rf_kernel("relu", x, xp, np.eye(3))), 10)
0.608997781
>>> round(float(rf_kernel("step", x, xp, 1.0)), 12)
0.333333333333
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy import special

from rmtfl._validate import check_finite_array, check_int, check_nonnegative, check_positive
from .._classical.activations import Activation, get_activation
from .._classical.hermite import gauss_hermite_rule, hermite_coeffs

__all__ = ["SpikedGamma", "as_gamma", "rf_kernel", "kernel_from_scalars", "arccos_kernel",
           "mehler_coefficients", "dk_dB", "dk_dB_relu", "CLOSED_FORMS", "gram_block"]

#: Activations with a closed-form kernel.
CLOSED_FORMS = ("relu", "step", "relu^2", "erf", "identity", "linear")
_BLOCK = 2048  # rows per GEMM block (efficient GEMM, bounded memory)
_SUB = 32  # rows per elementwise chunk (32 x n doubles stay in L2 for n <~ 8000)


@dataclass(frozen=True)
class SpikedGamma:
    """``Gamma = A I_d + B v v^T`` stored as ``(A, B, v)`` with ``|v| = 1`` (never a dense ``d x d``).

    >>> G = SpikedGamma(0.5, 2.0, np.array([3.0, 4.0]))
    >>> G.apply(np.eye(2)).round(3).tolist()
    [[1.22, 0.96], [0.96, 1.78]]
    """

    A: float
    B: float
    v: np.ndarray = field(repr=False)

    def __post_init__(self):
        A = check_nonnegative("A", self.A)
        B = check_nonnegative("B", self.B)
        v = check_finite_array("v (spike direction)", self.v, ndim=1).astype(float)
        nv = float(np.linalg.norm(v))
        if nv == 0:
            raise ValueError("v (spike direction) must be non-zero")
        v = v / nv
        v.setflags(write=False)
        object.__setattr__(self, "A", A)
        object.__setattr__(self, "B", B)
        object.__setattr__(self, "v", v)

    @property
    def d(self) -> int:
        return int(self.v.shape[0])

    @property
    def b(self) -> float:
        """Spike-to-bulk ratio ``B/A`` (``inf`` when ``A = 0``)."""
        return self.B / self.A if self.A > 0 else math.inf

    def apply(self, X):
        """``X Gamma`` for ``X`` of shape ``(n, d)`` (or ``(d,)``)."""
        X = np.asarray(X, dtype=float)
        return self.A * X + self.B * np.multiply.outer(X @ self.v, self.v)

    def dense(self) -> np.ndarray:
        """The dense matrix (for tests and small ``d`` only)."""
        return self.A * np.eye(self.d) + self.B * np.outer(self.v, self.v)


def as_gamma(gamma, d: int):
    """Validate ``gamma`` for inputs of dimension ``d``; return a :class:`SpikedGamma` or a dense array.

    Raises ``ValueError`` for a non-PSD or non-symmetric matrix, a wrong shape,
    negative ``A``/``B`` or a spike direction of the wrong length.
    """
    if isinstance(gamma, SpikedGamma):
        g = gamma
    elif isinstance(gamma, tuple):
        if len(gamma) != 3:
            raise ValueError(f"gamma as a tuple must be (A, B, v), got {len(gamma)} entries")
        g = SpikedGamma(*gamma)
    elif np.ndim(gamma) == 0:
        return SpikedGamma(check_nonnegative("gamma (scalar A)", gamma), 0.0, np.eye(d)[0])
    else:
        G = check_finite_array("gamma", gamma, ndim=2, dtype_kind="f")
        if G.shape != (d, d):
            raise ValueError(f"gamma must have shape ({d}, {d}) to match the inputs, got {G.shape}")
        if not np.allclose(G, G.T, rtol=1e-10, atol=1e-12 * max(1.0, float(np.abs(G).max()))):
            raise ValueError("gamma must be symmetric")
        lo = float(np.linalg.eigvalsh(G)[0])
        if lo < -1e-10 * max(1.0, float(np.abs(G).max())):
            raise ValueError(f"gamma must be positive semi-definite; its smallest eigenvalue is {lo:.3g}")
        return G
    if g.d != d:
        raise ValueError(f"spike direction v has length {g.d}, but the inputs have dimension d={d}")
    return g


def _apply(gamma, X):
    return gamma.apply(X) if isinstance(gamma, SpikedGamma) else X @ gamma


# ----------------------------------------------------------------- closed forms
def arccos_kernel(p: int, s, s2, c):
    """Arc-cosine kernel ``E[relu(u)^p relu(v)^p] = (1/2pi) (s s')^{p/2} J_p(theta)`` for ``p = 0, 1, 2``.

    ``(u, v)`` centred Gaussian with variances ``s, s2`` and covariance ``c``.
    ``theta = atan2(sqrt(s s2 - c^2), c)`` (accurate near ``t = ±1``).

    >>> round(float(arccos_kernel(1, 1.0, 1.0, 1.0)), 12)   # E relu(z)^2
    0.5
    >>> round(float(arccos_kernel(2, 1.0, 1.0, 1.0)), 12)   # E relu(z)^4 = 3/2
    1.5
    """
    p = check_int("p", p, 0, 2)
    s, s2, c = (np.asarray(a, dtype=float) for a in (s, s2, c))
    return _arccos_xp(p, s, s2, c, np)


def _arccos_xp(p: int, s, s2, c, xp):
    """:func:`arccos_kernel` on arrays of the namespace ``xp`` (numpy or cupy), no validation."""
    ss = s * s2
    sin_part = xp.sqrt(xp.maximum(ss - c * c, 0.0))
    th = xp.arctan2(sin_part, c)
    if p == 0:
        return (np.pi - th) / (2 * np.pi)
    if p == 1:
        return (sin_part + (np.pi - th) * c) / (2 * np.pi)
    # J_2 = 3 sin cos + (pi - th)(1 + 2 cos^2), times s s'
    return (3 * sin_part * c + (np.pi - th) * (ss + 2 * c * c)) / (2 * np.pi)


def _erf_kernel(s, s2, c):
    return (2 / np.pi) * np.arcsin(np.clip(2 * c / np.sqrt((1 + 2 * s) * (1 + 2 * s2)), -1.0, 1.0))


def _variance_coeffs(act: Activation, s, kmax: int):
    """``c_k(sigma; s)`` for each variance in ``s`` (shape ``(len(s), kmax+1)``) and ``E sigma(sqrt(s) z)^2``."""
    s = np.atleast_1d(np.asarray(s, dtype=float))
    if act.homogeneity is not None and act.hermite_exact is not None:
        p = act.homogeneity
        mu = hermite_coeffs(act, kmax)
        ck = mu / np.sqrt(special.factorial(np.arange(kmax + 1)))
        if act.name.startswith("relu") or act.name == "step":
            pp = int(p)
            m2 = (math.prod(range(2 * pp - 1, 0, -2)) if pp else 1) / 2  # E relu(z)^{2p}
        else:
            x, w = gauss_hermite_rule(200)
            m2 = float(w @ np.asarray(act(x), dtype=float) ** 2)
        return np.outer(s ** (p / 2), ck), s ** p * m2
    x, w = gauss_hermite_rule(max(200, 2 * kmax + 40))
    Z = np.sqrt(s)[:, None] * x[None, :]
    F = np.asarray(act(Z), dtype=float) * w[None, :]  # (n, q)
    He = np.polynomial.hermite_e.hermevander(x, kmax)  # (q, kmax+1)
    ck = (F @ He) / np.sqrt(special.factorial(np.arange(kmax + 1)))
    m2 = (F * np.asarray(act(Z), dtype=float)).sum(axis=1)
    return ck, m2


def mehler_coefficients(activation, s, kmax: int = 40):
    """Variance-scaled normalised Hermite coefficients ``c_k(sigma; s)`` and the tail ``R(s)``.

    Returns ``(C, R)`` with ``C[i, k] = c_k(sigma; s_i)`` and
    ``R[i] = E[sigma(sqrt(s_i) z)^2] - sum_{k<=kmax} C[i, k]^2 >= 0`` (the Mehler tail mass).

    >>> C, R = mehler_coefficients("tanh", [1.0], 30)
    >>> bool(R[0] < 1e-6)
    True
    """
    act = get_activation(activation)
    kmax = check_int("kmax", kmax, lo=0)
    if act.smooth is False and act.homogeneity is None:
        raise ValueError(f"activation {act.name!r} is neither smooth nor homogeneous; no Mehler series")
    C, m2 = _variance_coeffs(act, s, kmax)
    R = np.maximum(m2 - (C * C).sum(axis=1), 0.0)
    return C, R


def kernel_from_scalars(activation, s, s2, c, *, kmax: int = 40, return_error: bool = False):
    """``k_Gamma`` from the scalars ``s = x^T Gamma x``, ``s2 = x'^T Gamma x'``, ``c = x^T Gamma x'``.

    Broadcasts like numpy.  Closed forms for relu, step, relu^2, erf and the
    identity; Mehler series otherwise.  With ``return_error=True`` also returns
    the truncation bound (0 for closed forms).

    >>> round(float(kernel_from_scalars("relu", 1.0, 4.0, 1.0)), 10)
    0.608997781
    >>> k, err = kernel_from_scalars("tanh", 1.0, 1.0, 0.3, kmax=30, return_error=True)
    >>> bool(err < 1e-6)
    True
    """
    act = get_activation(activation)
    s, s2, c = np.broadcast_arrays(*(np.asarray(a, dtype=float) for a in (s, s2, c)))
    if np.any(s < 0) or np.any(s2 < 0):
        raise ValueError("s and s2 (x^T Gamma x) must be >= 0")
    name = act.name
    out = None
    if name == "relu":
        out = arccos_kernel(1, s, s2, c)
    elif name == "step":
        out = arccos_kernel(0, s, s2, c)
    elif name == "relu^2":
        out = arccos_kernel(2, s, s2, c)
    elif name == "erf":
        out = _erf_kernel(s, s2, c)
    elif name in ("identity", "linear"):
        out = c.copy()
    if out is not None:
        return (out, 0.0) if return_error else out
    kmax = check_int("kmax", kmax, lo=0)
    flat_s, inv = np.unique(np.concatenate([s.ravel(), s2.ravel()]), return_inverse=True)
    C, R = mehler_coefficients(act, flat_s, kmax)
    i1, i2 = inv[: s.size].reshape(s.shape), inv[s.size:].reshape(s.shape)
    with np.errstate(invalid="ignore", divide="ignore"):
        t = np.where(s * s2 > 0, c / np.sqrt(s * s2), 0.0)
    t = np.clip(t, -1.0, 1.0)
    out = np.zeros(s.shape)
    for k in range(kmax, -1, -1):
        out = out * t + C[i1, k] * C[i2, k]
    err = float(np.sqrt(R[i1] * R[i2]).max()) if s.size else 0.0
    return (out, err) if return_error else out


# ------------------------------------------------------------------- Gram blocks
def rf_kernel(activation, x, xp, gamma, *, kmax: int = 40, return_error: bool = False):
    """The random-features kernel ``k_Gamma(x, x')`` (docs/conventions.md §7), vectorised.

    Parameters
    ----------
    activation : str, callable or Activation
        Closed forms for relu, step, relu^2, erf, identity; Mehler series (``kmax``
        terms, tail bound returned with ``return_error=True``) otherwise.
    x, xp : array of shape (d,) or (n, d) / (n', d)
        Inputs (rows).  A vector gives a scalar / a row of the Gram block.
    gamma : (d, d) array, scalar ``A``, tuple ``(A, B, v)`` or :class:`SpikedGamma`
        Weight covariance (PSD).  ``(A, B, v)`` means ``A I + B v v^T`` with
        ``v`` normalised; the dense matrix is never formed.

    Returns
    -------
    K : ndarray of shape (n, n') (or broadcast-reduced for vector inputs);
    with ``return_error=True`` the tuple ``(K, truncation_bound)``.

    Notes
    -----
    Cost: one GEMM ``(X Gamma) X'^T`` plus an elementwise pass per row block.
    No prefactor; eigenvalues of Gram matrices ``K/n`` estimate the operator
    w.r.t. the input probability measure (docs/conventions.md §8).

    >>> rng = np.random.default_rng(0); X = rng.standard_normal((4, 3))
    >>> K = rf_kernel("relu", X, X, (1.0, 2.0, np.array([1.0, 0, 0])))
    >>> bool(np.allclose(K, K.T)), K.shape
    (True, (4, 4))
    """
    act = get_activation(activation)
    X = check_finite_array("x", x, dtype_kind="f")
    Xp = check_finite_array("xp", xp, dtype_kind="f")
    if X.ndim not in (1, 2) or Xp.ndim not in (1, 2):
        raise ValueError(f"x and xp must be vectors or (n, d) matrices, got shapes {X.shape}, {Xp.shape}")
    vx, vxp = X.ndim == 1, Xp.ndim == 1
    X2, Xp2 = np.atleast_2d(X).astype(float), np.atleast_2d(Xp).astype(float)
    d = X2.shape[1]
    if Xp2.shape[1] != d:
        raise ValueError(f"x and xp must have the same dimension d, got {d} and {Xp2.shape[1]}")
    if d < 2:
        raise ValueError(f"the input dimension d must be >= 2, got d={d}")
    g = as_gamma(gamma, d)
    XG = _apply(g, X2)
    s = np.einsum("ij,ij->i", XG, X2)
    s2 = s if Xp2 is X2 or (Xp2.shape == X2.shape and np.array_equal(Xp2, X2)) else \
        np.einsum("ij,ij->i", _apply(g, Xp2), Xp2)
    K, err = _gram(act, XG, Xp2, s, s2, kmax)
    if vx and vxp:
        K = K[0, 0]
    elif vx:
        K = K[0]
    elif vxp:
        K = K[:, 0]
    return (K, err) if return_error else K


def _host(a):
    """Host numpy copy of a numpy or cupy array (theory never imports the numerics backend)."""
    return a.get() if hasattr(a, "get") and not isinstance(a, np.ndarray) else np.asarray(a)


def gram_block(activation, XG, Xp, s, s2, *, kmax: int = 40, xp=None):
    """Gram block ``[k_Gamma(x_i, x'_j)]`` from ``X Gamma``, ``X'`` and the diagonal scalars, on any array namespace.

    The elementwise work of :func:`rf_kernel` without its validation: ``XG = X Gamma``
    (``n x d``), ``Xp = X'`` (``n' x d``), ``s = diag(X Gamma X^T)`` and
    ``s2 = diag(X' Gamma X'^T)`` are arrays of the namespace ``xp`` (numpy by default, or
    ``cupy`` when the caller has moved them to a GPU; this module never imports cupy).
    Closed forms (relu, step, erf, relu^2, identity) run entirely in ``xp``: one GEMM plus
    elementwise maps (``xp.arcsin``, ``xp.sqrt``, ``xp.clip``).  For the Mehler series the
    per-row coefficients ``c_k(sigma; s_i)`` are computed on the host (quadrature) and moved
    to ``xp``; the Horner sum runs in ``xp``.  Normalisation as :func:`rf_kernel` (no prefactor).
    Returns ``(K, truncation_bound)`` with ``K`` in ``xp``.

    >>> X = np.array([[1.0, 0.0], [0.6, 0.8]])
    >>> K, err = gram_block("relu", X, X, np.ones(2), np.ones(2))
    >>> bool(np.allclose(K, rf_kernel("relu", X, X, 1.0))), err
    (True, 0.0)
    """
    act = get_activation(activation)
    return _gram(act, XG, Xp, s, s2, kmax, np if xp is None else xp)


def _gram(act: Activation, XG, Xp, s, s2, kmax, xp=np):
    """Gram block from ``X Gamma`` (n x d), ``X'`` (n' x d) and the diagonal scalars (namespace ``xp``).

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
        Bt = (Xp * ir2[:, None]).T.copy()
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
                else:  # relu: r r' [sqrt(1-t^2) + t (pi/2 + arcsin t)] / (2 pi)
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
        return K, 0.0
    C = XG @ Xp.T
    if name in CLOSED_FORMS:
        if on_host:
            return kernel_from_scalars(act, s[:, None], s2[None, :], C, return_error=True)
        if name in ("identity", "linear"):
            return C, 0.0
        return _arccos_xp(2, s[:, None], s2[None, :], C, xp), 0.0  # relu^2
    # Mehler series with per-row coefficients: K = sum_k c_k(s_i) c_k(s'_j) t_ij^k (Horner, in place)
    kmax = check_int("kmax", kmax, lo=0)
    r, r2 = xp.sqrt(s), xp.sqrt(s2)
    with np.errstate(divide="ignore", invalid="ignore"):
        ir = xp.where(r > 0, 1 / r, 0.0)
        ir2 = xp.where(r2 > 0, 1 / r2, 0.0)
    T = C
    T *= ir[:, None]
    T *= ir2[None, :]
    xp.clip(T, -1.0, 1.0, out=T)
    Cx, Rx = mehler_coefficients(act, _host(s), kmax)
    Cy, Ry = (Cx, Rx) if s2 is s else mehler_coefficients(act, _host(s2), kmax)
    if not on_host:
        Cx, Cy = xp.asarray(Cx), xp.asarray(Cy)
    K = xp.zeros_like(T)
    for k in range(kmax, -1, -1):
        K *= T
        K += xp.outer(Cx[:, k], Cy[:, k])
    return K, float(math.sqrt(Rx.max() * Ry.max())) if Rx.size and Ry.size else 0.0


# ------------------------------------------------------------- first order in B
def dk_dB_relu(x, xp, v):
    """``d k_{I + B v v^T}(x, x') / dB`` at ``B = 0`` for relu, closed form (docs/theory/spiked_kernel.md §5.2).

    ``(1/4pi) [u^2 |x'|/|x| sin(theta) + 2 u u' (pi - theta) + u'^2 |x|/|x'| sin(theta)]`` with
    ``u = <v, x>``, ``u' = <v, x'>`` and ``theta`` the angle between ``x`` and ``x'``.  It does
    not depend on ``A`` (``k_{AI + B vv^T}`` has the same derivative for every ``A > 0``).
    Accepts vectors or ``(n, d)``/``(n', d)`` matrices (returns the ``n x n'`` block).

    >>> x, xp, v = np.array([1.0, 0, 0]), np.array([0, 1.0, 0]), np.array([1.0, 1.0, 0])
    >>> round(float(dk_dB_relu(x, xp, v)), 12)   # u = u' = 1/sqrt(2), theta = pi/2: (2 + pi)/(8 pi)
    0.204577471546
    """
    X = np.atleast_2d(check_finite_array("x", x, dtype_kind="f")).astype(float)
    Xp = np.atleast_2d(check_finite_array("xp", xp, dtype_kind="f")).astype(float)
    v = check_finite_array("v", v, ndim=1, dtype_kind="f").astype(float)
    if X.shape[1] != Xp.shape[1] or v.shape[0] != X.shape[1]:
        raise ValueError(f"dimensions do not match: x {X.shape}, xp {Xp.shape}, v {v.shape}")
    v = v / np.linalg.norm(v)
    nx, nxp = np.linalg.norm(X, axis=1), np.linalg.norm(Xp, axis=1)
    if np.any(nx == 0) or np.any(nxp == 0):
        raise ValueError("x and xp must be non-zero")
    u, up = X @ v, Xp @ v
    c = X @ Xp.T
    ss = np.outer(nx, nxp)
    sin_part = np.sqrt(np.maximum(ss * ss - c * c, 0.0)) / ss
    th = np.arctan2(sin_part * ss, c)
    out = (np.outer(u * u / nx, nxp) * sin_part + 2 * np.outer(u, up) * (np.pi - th)
           + np.outer(nx, up * up / nxp) * sin_part) / (4 * np.pi)
    if np.ndim(x) == 1 and np.ndim(xp) == 1:
        return out[0, 0]
    if np.ndim(x) == 1:
        return out[0]
    if np.ndim(xp) == 1:
        return out[:, 0]
    return out


def dk_dB(activation, x, xp, v, A: float = 1.0, *, h: float | None = None):
    """``d k_{A I + B v v^T}/dB`` at ``B = 0``: closed form for relu, central difference otherwise.

    For non-relu ``sigma`` the derivative is ``[k(B=h) - k(B=-h)]/(2h)`` with
    ``h = 1e-4 A`` (``B = -h`` keeps ``Gamma`` PSD for ``h < A``), error ``O(h^2)``.

    >>> x, xp, v = np.array([1.0, 0.2, 0]), np.array([0.3, 1.0, 0]), np.array([1.0, 0, 0])
    >>> G = lambda B: np.eye(3) + B * np.outer(v, v)
    >>> fd = (rf_kernel("erf", x, xp, G(1e-6)) - rf_kernel("erf", x, xp, G(-1e-6))) / 2e-6
    >>> bool(abs(dk_dB("erf", x, xp, v) - fd) < 1e-7)
    True
    """
    act = get_activation(activation)
    A = check_positive("A", A)
    if act.name == "relu":
        return dk_dB_relu(x, xp, v)
    h = 1e-4 * A if h is None else check_positive("h", h)
    if h >= A:
        raise ValueError(f"h must be < A = {A} so that Gamma stays PSD, got {h}")
    X = np.atleast_2d(np.asarray(x, dtype=float))
    Xp = np.atleast_2d(np.asarray(xp, dtype=float))
    v = np.asarray(v, dtype=float) / np.linalg.norm(v)

    def k(B):
        XG = A * X + B * np.outer(X @ v, v)
        s = np.einsum("ij,ij->i", XG, X)
        s2 = np.einsum("ij,ij->i", A * Xp + B * np.outer(Xp @ v, v), Xp)
        return kernel_from_scalars(act, s[:, None], s2[None, :], XG @ Xp.T)

    out = (k(h) - k(-h)) / (2 * h)
    if np.ndim(x) == 1 and np.ndim(xp) == 1:
        return out[0, 0]
    return out
