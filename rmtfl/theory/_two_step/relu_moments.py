"""Gaussian expectations of relu's derivatives at shifted arguments, in closed form (docs/theory/two_step.md §8.2).

For relu, ``sigma'(u) = 1{u > 0}`` and ``sigma''(u) = delta(u)``.  The finite-``N`` route needs, over independent
``z, xi ~ N(0, 1)``, expectations of ``sigma'(u)``, ``sigma''(u)`` and of powers of ``z`` times indicators, at
``u = z + c(z) + b xi`` with ``c`` constant on each half-line ``z > 0``, ``z < 0`` (a sample's own term
``y sigma'(z) / phi`` jumps at ``z = 0``).  Gauss–Hermite quadrature of a step converges slowly; instead ``xi`` is
integrated out, ``P(u > 0 | z) = Phi((z + c) / b)``, and on a half-line ``H``

    A_k(H) = int_H z^k phi(z) Phi((z + c) / b) dz,      B_k(H) = int_H z^k phi(z) phi((z + c) / b) / b dz

follow in closed form: ``A_0`` from Owen's T function (``int_h^inf phi(v) Phi(v / b) dv = Phi(-h) / 2 + T(h, 1/b)``
with ``h = -c / sqrt(1 + b^2)``), ``B_k`` from the product of two Gaussians (a truncated-normal moment), and
``A_k`` for ``k >= 1`` by parts: ``A_k = -[z^(k-1) phi Phi]_H + (k - 1) A_(k-2) + B_(k-1)``.  At ``b -> 0`` they
tend to the pointwise step and delta.
"""
from __future__ import annotations

import math

import numpy as np
from scipy import special

from .._classical.activations import Activation

__all__ = ["is_relu", "half_moments", "relu_A", "relu_B", "relu_F_table", "relu_h_moments", "relu_move_covariance"]

_PHI0 = 1.0 / math.sqrt(2.0 * math.pi)
_B_FLOOR = 1e-12       # b below this is a step; the closed forms stay finite


def is_relu(act: Activation) -> bool:
    """Whether ``act`` is relu itself (the one non-smooth activation the finite-``N`` route treats exactly)."""
    return act.name == "relu" and not act.smooth and act.homogeneity == 1.0


def half_moments(kmax: int, side: int) -> np.ndarray:
    """``int_H z^k phi(z) dz``, ``k = 0..kmax``, over ``H = (0, inf)`` (``side = +1``) or ``(-inf, 0)`` (``-1``)."""
    m = [0.5, _PHI0]
    for k in range(2, kmax + 1):
        m.append((k - 1) * m[k - 2])
    return np.array([v * side**k for k, v in enumerate(m[:kmax + 1])])


def _x_pow_phi(j: int, x):
    """``x^j phi(x)``, 0 at ``x = +-inf``."""
    x = np.asarray(x, dtype=float)
    finite = np.isfinite(x)
    xf = np.where(finite, x, 0.0)
    return np.where(finite, xf**j * np.exp(-0.5 * xf * xf) * _PHI0, 0.0)


def relu_B(c, b, side: int, kmax: int) -> list:
    """``[B_0, ..., B_kmax]`` on the half-line ``side`` (module docstring); ``c``, ``b >= 0`` broadcast."""
    c = np.asarray(c, dtype=float)
    b = np.maximum(np.abs(np.asarray(b, dtype=float)), _B_FLOOR)
    r2 = 1.0 + b * b
    amp = np.exp(-0.5 * c * c / r2) / np.sqrt(2.0 * math.pi * r2)     # phi(c / sqrt(1 + b^2)) / sqrt(1 + b^2)
    mu, s = -c / r2, b / np.sqrt(r2)                                  # the product is amp * N(z; mu, s^2)
    edge = -mu / s                                                    # z = 0 in standard units
    lo, hi = (edge, np.inf) if side > 0 else (-np.inf, edge)
    # partial moments P_j = int_lo^hi x^j phi(x) dx of the standard normal, by parts
    P = [special.ndtr(hi) - special.ndtr(lo)]
    for j in range(1, kmax + 1):
        P.append(_x_pow_phi(j - 1, lo) - _x_pow_phi(j - 1, hi) + (j - 1) * (P[j - 2] if j >= 2 else 0.0))
    out = []
    for k in range(kmax + 1):                                         # int (mu + s x)^k phi(x) dx
        out.append(amp * sum(math.comb(k, j) * mu ** (k - j) * s**j * P[j] for j in range(k + 1)))
    return out


def relu_A(c, b, side: int, kmax: int) -> list:
    """``[A_0, ..., A_kmax]`` on the half-line ``side`` (module docstring); ``c``, ``b >= 0`` broadcast."""
    c = np.asarray(c, dtype=float)
    b = np.maximum(np.abs(np.asarray(b, dtype=float)), _B_FLOOR)
    h = -c / np.sqrt(1.0 + b * b)
    upper = 0.5 * special.ndtr(-h) + special.owens_t(h, 1.0 / b)      # P(z > 0, u > 0)
    A = [upper if side > 0 else special.ndtr(-h) - upper]
    B = relu_B(c, b, side, max(kmax - 1, 0))
    at0 = _PHI0 * special.ndtr(c / b)                                 # phi(0) Phi(c / b): the boundary z = 0
    for k in range(1, kmax + 1):
        boundary = side * at0 if k == 1 else 0.0
        A.append(boundary + (k - 1) * (A[k - 2] if k >= 2 else 0.0) + B[k - 1])
    return A


def relu_F_table(st, t, full=False):
    """``F``, ``c`` and ``E sigma'(.)^2`` of :func:`~rmtfl.theory._two_step.sigma_table.F_table` for relu, in closed
    form: arrays ``(Q, I)`` over the rows ``t`` and the data grid of ``st``; with ``full`` also ``c_z = E[z sigma'(u)]``
    (``A_1`` on both half-lines: the own term's jump at ``z = 0`` included) and ``x1 = E[zeta_1(z) sigma'(u)]`` with
    ``zeta_1 = 1{z > 0} - 1/2 - phi(0) z``, relu's first-step remainder (docs/theory/two_step.md §8.2)."""
    t = np.atleast_1d(np.asarray(t, dtype=float))[:, None]
    base = st.mu1 * st.s[None, :]
    own = st.y[None, :] / st.phi if st.batch == "reused" else 0.0
    b = np.abs(t) * st.tau_h
    Ap, Am = relu_A(t * (base + own), b, +1, 1), relu_A(t * base, b, -1, 1)
    F = Ap[0] + Am[0]
    C = relu_B(t * (base + own), b, +1, 0)[0] + relu_B(t * base, b, -1, 0)[0]
    if not full:
        return F, C, F.copy()                     # sigma'^2 = sigma' for relu
    # E[z sigma'(u)] (the sample's own jump included) and E[zeta_1(z) sigma'(u)], zeta_1 = 1{z > 0} - 1/2 - phi(0) z
    Z = Ap[1] + Am[1]
    X1 = 0.5 * (Ap[0] - Am[0]) - _PHI0 * Z
    return F, C, F.copy(), Z, X1


def relu_h_moments(st, *, t, ys, zs, eta1, eta2, which):
    """Moments ``E[z^k h^m]`` of :func:`~rmtfl.theory._two_step.sample_spikes.sample_strengths`' column excess for
    relu, in closed form: a dict ``(k, m) -> array (S, Q)`` for ``(k, m)`` in (0, 2), (1, 1), (0, 4), (1, 3), (2, 2),
    (3, 1), and ``"xi"``: ``E[xi h] = eta2 t tau_h E[delta(u)]`` (Stein in ``xi``; ``E[delta(u)]`` is ``B_0`` summed
    over the half-lines).

    ``h = eta1 (b1 - mu1) + eta2 (b2 - Fbar)`` with ``b1 = 1{z > 0}`` (first step; ``which`` in "both", "first")
    and ``b2 = 1{u > 0}`` (second step; "both", "second"), ``Fbar = E b2``: ``h`` takes one value on each of the
    four cells ``(b1, b2)``, and ``E[z^k 1{cell}]`` is ``A_k`` or ``M_k - A_k`` on the half-line of ``b1``.
    """
    t = np.atleast_1d(np.asarray(t, dtype=float))[None, :]                       # (1, Q)
    ys = np.asarray(ys, dtype=float)[:, None]                                     # (S, 1)
    base = st.mu1 * st.mus * np.asarray(zs, dtype=float)[:, None]
    own = ys / st.phi if which == "both" else 0.0
    b = np.abs(t) * st.tau_h
    shape = np.broadcast_shapes(t.shape, ys.shape)
    first, second = which in ("both", "first"), which in ("both", "second")
    parts = {}                                                                    # side -> (E[z^k b2=1], E[z^k b2=0])
    for side, c in ((+1, t * (base + own)), (-1, t * base)):
        M = half_moments(3, side)
        A = [np.broadcast_to(a, shape) for a in relu_A(c, b, side, 3)]
        parts[side] = (A, [M[k] - A[k] for k in range(4)])
    Fbar = parts[+1][0][0] + parts[-1][0][0]
    out = {}
    for k, m in ((0, 2), (1, 1), (0, 4), (1, 3), (2, 2), (3, 1)):
        total = np.zeros(shape)
        for side, (on, off) in parts.items():
            h1 = eta1 * ((1.0 if side > 0 else 0.0) - st.mu1) if first else 0.0
            for b2, weight in ((1.0, on[k]), (0.0, off[k])):
                h = h1 + (eta2 * (b2 - Fbar) if second else 0.0)
                total = total + h**m * weight
        out[k, m] = total
    dens = sum(relu_B(c, b, side, 0)[0] for side, c in ((+1, t * (base + own)), (-1, t * base)))
    out["xi"] = np.broadcast_to(eta2 * t * st.tau_h * dens if second else 0.0, shape)
    return out


def relu_move_covariance(t, y, c, tau_x, phi):
    """``Cov(sigma'(z), sigma'(z + t D))`` for relu, arrays ``(Q, I)`` over the rows ``t`` and the data nodes ``y``:
    ``P(z > 0, u > 0) - P(u > 0) / 2``, ``u = z + t (y 1{z > 0} / phi + c + tau_x xi)`` (reused batch; ``c`` the mean
    part of the first step's move, ``tau_x`` its spread; for
    :func:`~rmtfl.theory._two_step.sample_spikes.second_step_move`)."""
    t = np.atleast_1d(np.asarray(t, dtype=float))[:, None]
    b = np.abs(t) * tau_x
    up = relu_A(t * (c + y / phi)[None, :], b, +1, 0)[0]
    return 0.5 * (up - relu_A(t * c[None, :], b, -1, 0)[0])
