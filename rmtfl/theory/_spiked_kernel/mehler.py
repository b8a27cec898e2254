"""Mehler's series of the random-features kernel and its truncation error.

For any ``sigma`` without a closed form (:mod:`.closed_forms`), ``k_Gamma`` is
``sum_k c_k(sigma; s) c_k(sigma; s2) t^k`` with ``t = c/sqrt(s s2)`` and the variance-scaled
normalised Hermite coefficients ``c_k(sigma; s) = E[sigma(sqrt(s) z) He_k(z)]/sqrt(k!)``
(docs/theory/spiked_kernel.md §2.4).  Truncated at ``kmax`` it has the Cauchy–Schwarz bound
``|tail| <= sqrt(R(s) R(s2))``, ``R(s) = E[sigma(sqrt(s) z)^2] - sum_{k<=kmax} c_k(sigma; s)^2``
(:func:`kernel_truncation_error`).  Normalisation: no prefactor (docs/conventions.md §7).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import special

from rmtfl._results import Result
from rmtfl._validate import check_array, check_int
from .._classical.activations import Activation, get_activation
from .._classical.hermite import gauss_hermite_rule, hermite_coeffs
from .closed_forms import CLOSED_FORMS

#: Largest Mehler truncation degree: beyond it ``sqrt(k!)`` overflows a double (docs/reliability.md §1).
MEHLER_KMAX_LIMIT = 170

__all__ = ["MEHLER_KMAX_LIMIT", "check_kmax", "MehlerCoefficients", "mehler_coefficients", "mehler_series", "kernel_truncation_error",
           "check_variances"]


def check_kmax(kmax) -> int:
    """The Mehler truncation degree: an integer in ``[0, MEHLER_KMAX_LIMIT]``."""
    return check_int("kmax", kmax, lo=0, hi=MEHLER_KMAX_LIMIT)


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


@dataclass(frozen=True)
class MehlerCoefficients(Result):
    """Variance-scaled Hermite coefficients ``c_k(sigma; s_i)`` and the Mehler tail ``R(s_i)``.

    ``coefficients[i, k] = c_k(sigma; s_i)`` (docs/theory/spiked_kernel.md §2.4) and
    ``tail[i] = E[sigma(sqrt(s_i) z)^2] - sum_{k<=kmax} coefficients[i, k]^2 >= 0``.
    Unpacks as ``C, R = mehler_coefficients(...)``.
    """

    coefficients: np.ndarray
    tail: np.ndarray

    def __iter__(self):
        return iter((self.coefficients, self.tail))


def mehler_coefficients(activation, s, *, kmax: int = 40) -> MehlerCoefficients:
    """Variance-scaled normalised Hermite coefficients ``c_k(sigma; s)`` and the tail ``R(s)``.

    Normalisation: ``c_k(sigma; s) = E[sigma(sqrt(s) z) He_k(z)]/sqrt(k!)``, so that
    ``E[sigma(u) sigma(v)] = sum_k c_k(sigma; s) c_k(sigma; s2) t^k`` for centred Gaussians of
    variances ``s, s2`` and correlation ``t`` (Mehler; docs/theory/spiked_kernel.md §2.4).

    Parameters
    ----------
    activation : str, callable or Activation
        Smooth or homogeneous ``sigma``.
    s : array_like
        Variances ``s_i >= 0``.
    kmax : int
        Largest degree kept.

    Returns
    -------
    MehlerCoefficients
        ``coefficients`` of shape ``(len(s), kmax + 1)`` and ``tail`` of shape ``(len(s),)``.

    Examples
    --------
    >>> C, R = mehler_coefficients("tanh", [1.0], kmax=30)
    >>> bool(R[0] < 1e-6)
    True
    """
    act = get_activation(activation)
    kmax = check_kmax(kmax)
    s = check_array("s", s, ndim=(0, 1), min_size=1)
    if np.any(s < 0):
        raise ValueError("s (variances) must be >= 0")
    with np.errstate(over="ignore", invalid="ignore"):
        out = _mehler(act, s, kmax)
    if not (np.all(np.isfinite(out.coefficients)) and np.all(np.isfinite(out.tail))):
        raise ValueError("s is too large: the Mehler coefficients overflow")
    return out


def _mehler(act: Activation, s, kmax: int) -> MehlerCoefficients:
    if act.smooth is False and act.homogeneity is None:
        raise ValueError(f"activation {act.name!r} is neither smooth nor homogeneous; no Mehler series")
    C, m2 = _variance_coeffs(act, s, kmax)
    R = np.maximum(m2 - (C * C).sum(axis=1), 0.0)
    return MehlerCoefficients(C, R)


def check_variances(s, s2):
    """Broadcast the variances ``s = x^T Gamma x``, ``s2 = x2^T Gamma x2`` to float arrays; ``ValueError`` if negative.

    Examples
    --------
    >>> [a.tolist() for a in check_variances(1.0, [2.0, 3.0])]
    [[1.0, 1.0], [2.0, 3.0]]
    """
    s, s2 = check_array("s", s), check_array("s2", s2)
    try:
        s, s2 = np.broadcast_arrays(s, s2)
    except ValueError:
        raise ValueError(f"s and s2 must broadcast together, got shapes {s.shape}, {s2.shape}") from None
    if np.any(s < 0):
        raise ValueError("s (x^T Gamma x) must be >= 0")
    if np.any(s2 < 0):
        raise ValueError("s2 (x2^T Gamma x2) must be >= 0")
    return s, s2


def _compact(a):
    """``a`` without the axes a broadcast view repeats (stride 0): the same values, a shape that broadcasts back."""
    return a[tuple(slice(0, 1) if st == 0 and n > 1 else slice(None) for st, n in zip(a.strides, a.shape))]


def mehler_series(act: Activation, s, s2, c, kmax: int):
    """Mehler's series ``sum_{k<=kmax} c_k(sigma; s) c_k(sigma; s2) t^k`` on broadcastable scalars (no validation).

    ``t = c/sqrt(s s2)`` (0 where ``s s2 = 0``), clipped to ``[-1, 1]``; Horner in ``t``
    (docs/theory/spiked_kernel.md §2.4).  ``act`` is an :class:`Activation`; ``s, s2, c`` are float
    arrays that broadcast together, with ``s, s2 >= 0``, and ``kmax`` a validated int
    (:func:`~rmtfl.theory.kernel_from_scalars` does the checks).  The coefficients are computed once per distinct
    variance and kept in the shapes of ``s`` and ``s2``, so a row ``s[:, None]`` against a column ``s2[None, :]``
    costs one outer product per degree.  Normalisation: no prefactor (docs/conventions.md §7).

    Examples
    --------
    >>> one = np.ones(1)
    >>> bool(abs(mehler_series(get_activation("identity"), one, one, 0.5 * one, 3)[0] - 0.5) < 1e-12)
    True
    """
    s, s2 = _compact(np.asarray(s, dtype=float)), _compact(np.asarray(s2, dtype=float))
    c = np.asarray(c, dtype=float)
    flat_s, inv = np.unique(np.concatenate([s.ravel(), s2.ravel()]), return_inverse=True)
    CT = np.ascontiguousarray(_mehler(act, flat_s, kmax).coefficients.T)   # (kmax + 1, distinct variances)
    i1, i2 = inv[: s.size].reshape(s.shape), inv[s.size:].reshape(s2.shape)
    ss = s * s2
    with np.errstate(invalid="ignore", divide="ignore"):
        t = np.where(ss > 0, c / np.sqrt(ss), 0.0)
    t = np.clip(t, -1.0, 1.0)
    out = np.zeros(np.broadcast_shapes(s.shape, s2.shape, c.shape))
    for k in range(kmax, -1, -1):
        out = out * t + CT[k][i1] * CT[k][i2]
    return out


def kernel_truncation_error(activation, s, s2, *, kmax: int = 40) -> float:
    """Bound on the Mehler truncation error of :func:`~rmtfl.theory.kernel_from_scalars` (0 for closed forms).

    ``max sqrt(R(s) R(s2))`` over the broadcast pairs ``(s, s2)``, with
    ``R(s) = E[sigma(sqrt(s) z)^2] - sum_{k<=kmax} c_k(sigma; s)^2`` (Cauchy–Schwarz on the tail of
    the Mehler series, docs/theory/spiked_kernel.md §2.4).  It does not depend on the covariance ``c``.

    Parameters
    ----------
    activation : str, callable or Activation
        The activation ``sigma``.
    s, s2 : array_like
        Variances ``x^T Gamma x`` and ``x2^T Gamma x2`` (``>= 0``; broadcast together).
    kmax : int
        Mehler truncation degree.

    Returns
    -------
    float

    Examples
    --------
    >>> kernel_truncation_error("relu", 1.0, 2.0)
    0.0
    >>> bool(kernel_truncation_error("tanh", 1.0, 1.0, kmax=7) > kernel_truncation_error("tanh", 1.0, 1.0, kmax=15))
    True
    """
    act = get_activation(activation)
    s, s2 = check_variances(s, s2)
    kmax = check_kmax(kmax)
    if act.name in CLOSED_FORMS or s.size == 0:
        return 0.0
    flat_s, inv = np.unique(np.concatenate([s.ravel(), s2.ravel()]), return_inverse=True)
    with np.errstate(over="ignore", invalid="ignore"):
        R = _mehler(act, flat_s, kmax).tail
        out = float(np.sqrt(R[inv[: s.size]] * R[inv[s.size:]]).max())
    if not math.isfinite(out):
        raise ValueError("s and s2 are too large: the Mehler tail overflows")
    return out

