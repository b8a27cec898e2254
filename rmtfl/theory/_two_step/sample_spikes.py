"""Outliers of ``W_2`` made by single extreme samples (docs/theory/two_step.md §8.3).

With a heavy-tailed target (``He_3`` parts: ``y ~ z^3``) the largest ``|y_i|`` of a batch of ``n``
samples is several times its typical size, and sample ``i`` alone adds to ``W_2`` the rank-one term

    (y_i / n) u_i x_i^T,      u_ij = a_j [eta_1 (sigma'(z_j) - mu_1) + eta_2 (sigma'(z_j + t_j D_ji) - F(t_j))],

(``z_j = <w_j, x_i>``, ``t_j = eta_1 a_j``, ``D_ji`` the first-step change of neuron ``j`` on sample ``i``,
which holds the sample's own term ``y_i sigma'(z_j)/phi`` when the batch is reused; ``F`` as in
:mod:`rmtfl.theory._two_step.finite_n`).  The mean of ``sigma'`` over neurons is part of the low-rank ``P``
already (``x_i`` enters ``beta_hat`` and ``v(t)``), so only the fluctuation survives: ``u_i`` is orthogonal to
``a`` and ``x_i`` to ``beta*`` (up to ``O(d^{-1/2})``).  Its strength is

    theta_i^2 = (y_i / (phi sqrt(d)))^2 E_g[ g^2 E_{z, xi} h(g, z, xi)^2 ],    g = sqrt(N) a,

and it is an outlier when ``theta_i^2`` exceeds ``1 / D(edge)`` of the widened bulk, at the root of
``D(s) = 1 / theta_i^2`` (the D-transform of docs/theory/two_step.md §2.2, its ``N`` side weighted by the rows of
``u_i``).  Deterministic: the ``k``-th most extreme sample is placed at the median of its order statistic
(``P(|y| > y_(k)) = (k - 0.3)/(n + 0.4)``), so the prediction is that of a typical batch; in a given batch the
count and the locations fluctuate (extreme-value statistics, not ``N^{-1/2}``).
"""
from __future__ import annotations

import math

import numpy as np

from .._classical.activations import Activation
from .._classical.hermite import gauss_hermite_rule
from .._classical.targets import Target

__all__ = ["extreme_samples", "bulk_cut", "truncated_rule", "y_law_truncated", "sample_strengths", "SAMPLE_RANKS"]

#: How many of the most extreme samples of each batch are examined.
SAMPLE_RANKS = 12
_Z_GRID = 40001


def extreme_samples(target: Target, n: int, ranks: int | None = None):
    """``(y, z*)`` of the ``ranks`` samples with the largest ``|y|`` in a typical batch of ``n`` (module docstring).

    ``z*`` is the sample's projection on the target direction; label noise is left out of the tails
    (it is Gaussian and small beside a polynomial link's tail).
    """
    ranks = SAMPLE_RANKS if ranks is None else ranks
    z, y, w = _dense_y(target)
    order = np.argsort(-np.abs(y))
    tail = np.cumsum(w[order])                          # P(|y| >= |y|_(rank))
    p = (np.arange(1, ranks + 1) - 0.3) / (n + 0.4)
    idx = order[np.minimum(np.searchsorted(tail, p), z.size - 1)]
    return y[idx], z[idx]


def _dense_y(target: Target):
    z = np.linspace(-9.0, 9.0, _Z_GRID)
    y = np.asarray(target.links[0](z), dtype=float)
    w = np.exp(-0.5 * z * z)
    return z, y, w / w.sum()


def bulk_cut(target: Target, n: int, ranks: int | None = None):
    """``(lo, hi)``: the ``z*``-interval of the samples left in the bulk — all but the ``ranks`` most extreme ``|y|``
    of a batch of ``n`` on average (``P(|y| > y_c) = ranks / n``) — or ``None`` if that set is not an interval."""
    ranks = SAMPLE_RANKS if ranks is None else ranks
    z, y, w = _dense_y(target)
    order = np.argsort(-np.abs(y))
    k = int(np.searchsorted(np.cumsum(w[order]), ranks / n))
    inside = np.ones(z.size, bool)
    inside[order[:k]] = False
    if inside.all():
        return None
    lo, hi = z[inside].min(), z[inside].max()
    return (float(lo), float(hi)) if inside[(z >= lo) & (z <= hi)].all() else None


def truncated_rule(lo: float, hi: float, order: int = 24):
    """Nodes and weights of ``E[f(z) 1{lo <= z <= hi}]``, ``z ~ N(0, 1)`` (Gauss–Legendre; weights sum to ``P``)."""
    x, w = np.polynomial.legendre.leggauss(order)
    z = 0.5 * (hi - lo) * x + 0.5 * (hi + lo)
    return z, 0.5 * (hi - lo) * w * np.exp(-0.5 * z * z) / math.sqrt(2 * math.pi)


def y_law_truncated(target: Target, zrange):
    """Nodes and (sub-probability) weights of ``y`` over the bulk samples ``z* in zrange`` (label noise included)."""
    z, w = truncated_rule(*zrange, order=60)
    y = np.asarray(target.links[0](z), dtype=float)
    if target.noise > 0:
        e, we = gauss_hermite_rule(8)
        y = (y[:, None] + target.noise * e[None, :]).ravel()
        w = (w[:, None] * we[None, :]).ravel()
    return y, w


def sample_strengths(act: Activation, st, *, ys, zs, eta1, eta2, N, d, g, wg, which):
    """``theta^2`` of each extreme sample and the row weights of its ``u`` at the nodes ``g``.

    ``which``: ``"both"`` (reused batch: both steps see the sample), ``"first"`` or ``"second"`` (fresh
    batches: the sample is in that batch only).  ``st`` is the :class:`~rmtfl.theory._two_step.finite_n.FiniteNSetup`.
    """
    z, wz = gauss_hermite_rule(20)
    xi, wx = gauss_hermite_rule(6)
    W2 = np.outer(wz, wx)                                           # (A, B)
    sp = act.derivative(1, z)[:, None]                              # (A, 1)
    t = eta1 * g / math.sqrt(N)                                     # (Q,)
    phi_b = st.phi2 if which == "second" else st.phi
    thetas, rows = [], []
    for y, zst in zip(ys, zs):
        s = st.mus * zst
        D = st.mu1 * s + st.tau_h * xi[None, :]                     # (1, B)
        if which == "both":
            D = D + y * sp / st.phi                                 # (A, B): the sample's own term
        u = z[None, :, None] + t[:, None, None] * D[None]           # (Q, A, B)
        s2 = act.derivative(1, u)
        F = np.einsum("qab,ab->q", s2, W2)
        h = np.zeros_like(s2)
        if which in ("both", "first"):
            h = h + eta1 * (sp[None] - st.mu1)
        if which in ("both", "second"):
            h = h + eta2 * (s2 - F[:, None, None])
        eh2 = np.einsum("qab,ab->q", h * h, W2)                     # E[h^2 | g_q]
        ezh = np.einsum("qab,a,b->q", h, wz * z, wx)                # E[z h | g_q]
        kappa = y / (phi_b * math.sqrt(N))
        ex = 2 * kappa * g * ezh + kappa**2 * g**2 * eh2           # excess column variance per row node
        thetas.append(float(N / d * (wg @ ex)))
        rows.append(ex)
    return np.array(thetas), rows
