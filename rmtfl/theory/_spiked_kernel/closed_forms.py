"""Closed-form random-features kernels: the arc-cosine family (relu, step, relu^2) and erf.

Normalisation (docs/conventions.md §7): no prefactor.  Functions of the scalars ``s = x^T Gamma x``,
``s2 = x2^T Gamma x2`` and ``c = x^T Gamma x2`` (docs/theory/spiked_kernel.md §2.1–§2.2):

* relu (Cho & Saul): ``(1/2pi) [sqrt(s s' - c^2) + (pi - theta) c]``, ``cos theta = c/sqrt(s s')``;
* step ``1{z > 0}``: ``(pi - theta)/(2 pi)``;  ``relu^2``: arc-cosine ``J_2``;
* erf (Williams): ``(2/pi) arcsin(2c / sqrt((1 + 2s)(1 + 2s')))``;
* identity / linear: ``c``.

:data:`CLOSED_FORMS` lists the activations with a closed form; every other activation goes
through Mehler's series (:mod:`.mehler`).
"""
from __future__ import annotations

import numpy as np

from rmtfl._validate import check_array, check_int

__all__ = ["CLOSED_FORMS", "arccos_kernel", "arccos_xp", "erf_kernel"]

#: Activations with a closed-form kernel.
CLOSED_FORMS = ("relu", "step", "relu^2", "erf", "identity", "linear")


def arccos_kernel(p: int, s, s2, c):
    """Arc-cosine kernel ``E[relu(u)^p relu(v)^p] = (1/2pi) (s s2)^{p/2} J_p(theta)`` for ``p = 0, 1, 2``.

    ``(u, v)`` centred Gaussian with variances ``s, s2`` and covariance ``c``.
    ``theta = atan2(sqrt(s s2 - c^2), c)`` (accurate near ``t = ±1``); Cho & Saul
    (docs/theory/spiked_kernel.md §2.1), no prefactor (docs/conventions.md §7).

    Examples
    --------
    >>> round(float(arccos_kernel(1, 1.0, 1.0, 1.0)), 12)   # E relu(z)^2
    0.5
    >>> round(float(arccos_kernel(2, 1.0, 1.0, 1.0)), 12)   # E relu(z)^4 = 3/2
    1.5
    """
    p = check_int("p", p, 0, 2)
    s, s2, c = check_kernel_scalars(s, s2, c)
    with np.errstate(over="ignore", invalid="ignore"):
        out = arccos_xp(p, s, s2, c, np)
    if not np.all(np.isfinite(out)):
        raise ValueError("s, s2 and c are too large: the kernel overflows (s s2 must stay below ~1e300)")
    return out


def check_kernel_scalars(s, s2, c):
    """Validated float arrays ``s, s2 >= 0`` (variances) and ``c`` (covariance), finite, broadcast together.

    Non-finite, complex or non-numeric values raise errors naming the parameter
    (docs/reliability.md §2).
    """
    s = check_array("s", s)
    s2 = check_array("s2", s2)
    c = check_array("c", c)
    try:
        s, s2, c = np.broadcast_arrays(s, s2, c)
    except ValueError:
        raise ValueError(f"s, s2 and c must broadcast together, got shapes {np.shape(s)}, {np.shape(s2)}, "
                         f"{np.shape(c)}") from None
    if np.any(s < 0):
        raise ValueError("s (x^T Gamma x) must be >= 0")
    if np.any(s2 < 0):
        raise ValueError("s2 (x2^T Gamma x2) must be >= 0")
    return s, s2, c


def arccos_xp(p: int, s, s2, c, xp):
    """:func:`arccos_kernel` on arrays of the namespace ``xp`` (numpy or cupy), no validation."""
    ss = s * s2
    sin_part = xp.sqrt(xp.maximum(ss - c * c, 0.0))
    th = xp.arctan2(sin_part, c)
    if p == 0:
        return (np.pi - th) / (2 * np.pi)
    if p == 1:
        return (sin_part + (np.pi - th) * c) / (2 * np.pi)
    # J_2 = 3 sin cos + (pi - th)(1 + 2 cos^2), times s s2
    return (3 * sin_part * c + (np.pi - th) * (ss + 2 * c * c)) / (2 * np.pi)


def erf_kernel(s, s2, c):
    """Williams' erf kernel ``(2/pi) arcsin(2c / sqrt((1 + 2s)(1 + 2s2)))`` on host arrays, no validation.

    Examples
    --------
    >>> round(float(erf_kernel(1.0, 1.0, 0.0)), 12)
    0.0
    """
    return (2 / np.pi) * np.arcsin(np.clip(2 * c / np.sqrt((1 + 2 * s) * (1 + 2 * s2)), -1.0, 1.0))
