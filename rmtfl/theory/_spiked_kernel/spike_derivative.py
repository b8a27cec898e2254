"""First order in the spike: ``d k_{A I + B v v^T}(x, x2)/dB`` at ``B = 0`` (docs/theory/spiked_kernel.md §5.2).

Closed form for relu (:func:`dk_dB_relu`), a central difference of :func:`~rmtfl.theory.kernel_from_scalars`
otherwise (:func:`dk_dB`).  Normalisation as :func:`~rmtfl.theory.rf_kernel` (docs/conventions.md §7).
"""
from __future__ import annotations

import numpy as np

from rmtfl._validate import check_array, check_positive
from .._classical.activations import get_activation
from .rf_kernel import kernel_from_scalars

__all__ = ["dk_dB", "dk_dB_relu"]


def dk_dB_relu(x, x2, v):
    """``d k_{I + B v v^T}(x, x2) / dB`` at ``B = 0`` for relu, closed form (docs/theory/spiked_kernel.md §5.2).

    ``(1/4pi) [u^2 |x2|/|x| sin(theta) + 2 u u2 (pi - theta) + u2^2 |x|/|x2| sin(theta)]`` with
    ``u = <v, x>``, ``u2 = <v, x2>`` and ``theta`` the angle between ``x`` and ``x2``.  It does
    not depend on ``A`` (``k_{AI + B vv^T}`` has the same derivative for every ``A > 0``).
    Accepts vectors or ``(n, d)``/``(n2, d)`` matrices (returns the ``n x n2`` block).
    Normalisation as :func:`rf_kernel` (docs/conventions.md §7).

    Examples
    --------
    >>> x, x2, v = np.array([1.0, 0, 0]), np.array([0, 1.0, 0]), np.array([1.0, 1.0, 0])
    >>> round(float(dk_dB_relu(x, x2, v)), 12)   # u = u2 = 1/sqrt(2), theta = pi/2: (2 + pi)/(8 pi)
    0.204577471546
    """
    X, X2, v = _inputs(x, x2, v)
    # the derivative is 1-homogeneous in x and in x2: work on rescaled copies (no overflow/underflow)
    a, a2 = np.abs(X).max(), np.abs(X2).max()
    if a == 0 or a2 == 0:
        raise ValueError("x and x2 must be non-zero")
    X, X2 = X / a, X2 / a2
    nx, nx2 = np.linalg.norm(X, axis=1), np.linalg.norm(X2, axis=1)
    if np.any(nx == 0):
        raise ValueError("x must have non-zero rows")
    if np.any(nx2 == 0):
        raise ValueError("x2 must have non-zero rows")
    u, u2 = X @ v, X2 @ v
    c = X @ X2.T
    ss = np.outer(nx, nx2)
    sin_part = np.sqrt(np.maximum(ss * ss - c * c, 0.0)) / ss
    th = np.arctan2(sin_part * ss, c)
    out = (np.outer(u * u / nx, nx2) * sin_part + 2 * np.outer(u, u2) * (np.pi - th)
           + np.outer(nx, u2 * u2 / nx2) * sin_part) / (4 * np.pi)
    with np.errstate(over="ignore", under="ignore"):
        out = out * a * a2
    if not np.all(np.isfinite(out)):
        raise ValueError("x and x2 are too large: the derivative overflows")
    if np.ndim(x) == 1 and np.ndim(x2) == 1:
        return out[0, 0]
    if np.ndim(x) == 1:
        return out[0]
    if np.ndim(x2) == 1:
        return out[:, 0]
    return out


def _inputs(x, x2, v):
    """Validated ``x, x2`` (vectors or ``(n, d)`` matrices, as 2-d) and the unit vector ``v``."""
    X = np.atleast_2d(check_array("x", x, ndim=(1, 2), min_size=1))
    X2 = np.atleast_2d(check_array("x2", x2, ndim=(1, 2), min_size=1))
    v = check_array("v", v, ndim=1, min_size=1)
    if X2.shape[1] != X.shape[1]:
        raise ValueError(f"x and x2 must have the same dimension d, got shapes {X.shape}, {X2.shape}")
    if v.shape[0] != X.shape[1]:
        raise ValueError(f"v must have the dimension d = {X.shape[1]} of x, got shape {v.shape}")
    vmax = np.abs(v).max()
    if vmax == 0:
        raise ValueError("v must be non-zero")
    v = v / vmax
    return X, X2, v / np.linalg.norm(v)


def dk_dB(activation, x, x2, v, *, A: float = 1.0, h: float | None = None):
    """``d k_{A I + B v v^T}(x, x2)/dB`` at ``B = 0``: closed form for relu, central difference otherwise.

    For non-relu ``sigma`` the derivative is ``[k(B=h) - k(B=-h)]/(2h)`` with
    ``h = 1e-4 A`` (``B = -h`` keeps ``Gamma`` PSD for ``h < A``), error ``O(h^2)``.
    Normalisation as :func:`rf_kernel` (docs/conventions.md §7; docs/theory/spiked_kernel.md §5.2).

    Examples
    --------
    >>> from rmtfl.theory import rf_kernel
    >>> x, x2, v = np.array([1.0, 0.2, 0]), np.array([0.3, 1.0, 0]), np.array([1.0, 0, 0])
    >>> G = lambda B: np.eye(3) + B * np.outer(v, v)
    >>> fd = (rf_kernel("erf", x, x2, gamma=G(1e-6)) - rf_kernel("erf", x, x2, gamma=G(-1e-6))) / 2e-6
    >>> bool(abs(dk_dB("erf", x, x2, v) - fd) < 1e-7)
    True
    """
    act = get_activation(activation)
    A = check_positive("A", A)
    if act.name == "relu":
        return dk_dB_relu(x, x2, v)
    h = 1e-4 * A if h is None else check_positive("h", h)
    if h >= A:
        raise ValueError(f"h must be < A = {A} so that Gamma stays PSD, got {h}")
    X, X2, v = _inputs(x, x2, v)

    def k(B):
        XG = A * X + B * np.outer(X @ v, v)
        s = np.einsum("ij,ij->i", XG, X)
        s2 = np.einsum("ij,ij->i", A * X2 + B * np.outer(X2 @ v, v), X2)
        return kernel_from_scalars(act, s[:, None], s2[None, :], XG @ X2.T, kmax=40)

    with np.errstate(over="ignore", invalid="ignore"):
        XG = A * X
        s_ok = np.all(np.isfinite(np.einsum("ij,ij->i", XG, X))) and np.all(np.isfinite(
            np.einsum("ij,ij->i", A * X2, X2)))
    if not s_ok:
        raise ValueError("x, x2 or A is too large: x^T Gamma x overflows")
    out = (k(h) - k(-h)) / (2 * h)
    if not np.all(np.isfinite(out)):
        raise ValueError("x, x2 or A is too large: the kernel derivative overflows")
    if np.ndim(x) == 1 and np.ndim(x2) == 1:
        return out[0, 0]
    return out
