"""The first step's sigma' over the data grid: ``F(t; y, s) = E sigma'(z + t D)`` and its companions at each row
``t = eta_1 a`` (docs/theory/two_step.md §8.2), the tables the finite-``N`` prediction builds its low-rank part
and its widened bulk from (:mod:`rmtfl.theory._two_step.finite_n`).  Deterministic: Gauss–Hermite quadrature over
``(z, xi)``, closed forms for relu (:mod:`rmtfl.theory._two_step.relu_moments`).
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from .._classical.activation_type import PIECE, Activation
from .._classical.hermite import gauss_hermite_rule
from .relu_moments import is_relu, relu_F_table

__all__ = ["FTable", "F_table"]

_Z_ORDER, _XI_ORDER = 20, 6                        # inner (z, xi) for F and c
_W_ORDER = 60     # z + t xi of a fresh batch, one Gaussian: 3e-6 of the 400-node sums for tanh at eta_1 = N^0.4


class FTable(NamedTuple):
    """The tables of :func:`F_table`, each ``(Q, I)`` over the rows ``t_q`` and the data grid (``None`` where not
    asked for)."""

    F: np.ndarray              # E sigma'(z + t D)
    c: np.ndarray | None       # E sigma''(z + t D)
    sq: np.ndarray | None      # E sigma'(z + t D)^2
    cz: np.ndarray | None      # E z sigma'(z + t D)
    ds: np.ndarray             # dF/ds: how F moves with the sample's projection s on the first step
    x1: np.ndarray | None = None   # E zeta_1(z) sigma'(z + t D), zeta_1 the first step's remainder (reused, bulk)


def F_table(act: Activation, st, t, *, bulk=True) -> FTable:
    """``F(t_q; y_i, s_i)``, ``c(t_q; y_i, s_i)``, ``E sigma'(.)^2``, ``c_z(t_q; y_i, s_i)`` and ``dF/ds`` on the data
    grid (:class:`FTable`); ``st``: the :class:`~rmtfl.theory._two_step.finite_n.FiniteNSetup` of the data grid.

    ``F = E_{z,xi} sigma'(z + t D)``, ``c = E_{z,xi} sigma''(z + t D)`` (the coefficient of the
    part of ``sigma'`` linear in ``w_j``, Stein; only with ``bulk``) with
    ``D = y sigma'(z)/phi + mu_1 s + xi`` (reused) or ``mu_1 s + xi`` (fresh), ``xi ~ N(0, tau_h^2)``: a
    product rule over ``(z, xi)`` (reused), one sum of ``_W_ORDER`` nodes over ``z + t xi`` (fresh;
    docs/theory/two_step.md §8.2).  ``c_z = E[z sigma'(z + t D)]`` is the whole coefficient of ``z`` (Stein: ``c``
    times ``1 + t y sigma''(z)/phi``, the sample's own term in ``D``, on average); ``c`` for fresh batches.
    ``x1 = E[zeta_1(z) sigma'(z + t D)]`` (reused, with ``bulk``), ``zeta_1 = sigma' - mu_1 - mu_2 z`` the first
    step's remainder: the covariance of the two steps' remainders, which see the same samples
    (docs/theory/two_step.md §8.2, "The sample's own term and the two remainders").  relu: closed forms
    (:func:`~rmtfl.theory._two_step.relu_moments.relu_F_table`), with ``c_z = c`` and no ``x1`` (the same section says
    why).
    ``dF/ds = t mu_1 E sigma''(z + t D)`` comes from the same values of ``sigma'`` by Stein's lemma in ``xi``
    (reused) or in the one Gaussian (fresh): ``E[xi sigma'(.)] / tau_h`` and ``t mu_1 E[u sigma'(.)] / sqrt(1 +
    t^2 tau_h^2)`` (docs/theory/two_step.md §8.5, "The first step's direction").
    """
    t = np.atleast_1d(np.asarray(t, dtype=float))
    if is_relu(act):            # a step and a delta: closed forms, not quadrature (relu_moments.py)
        # c_z = c and no remainders' covariance: the exact ones (relu_F_table(full=True)) fix the bulk at small first
        # steps but, against the profile's M^2 term, narrow it under heavy-tailed targets at large ones
        # (docs/theory/two_step.md §8.2, "The sample's own term and the two remainders")
        Fo, Co, So = relu_F_table(st, t)
        return FTable(Fo, Co, So, Co, (t * st.mu1)[:, None] * Co)
    if not bulk and act.gaussian_smoothed((1, 2), 0.0, 0.0) is not None:
        return _smoothed_table(act, st, t)
    if st.batch == "fresh":
        # z + t xi is one Gaussian, N(0, 1 + t^2 tau_h^2): one sum over it, centred at t mu_1 s
        z, wz = gauss_hermite_rule(_W_ORDER)
        W = wz

        def args(tq, rows):
            return (tq * st.mu1) * st.s[rows, None] + math.sqrt(1.0 + (tq * st.tau_h) ** 2) * z[None, :]

        def slope_weights(tq):
            return (tq * st.mu1 / math.sqrt(1.0 + (tq * st.tau_h) ** 2)) * (wz * z)
    else:
        z, wz = gauss_hermite_rule(_Z_ORDER)
        xi, wx = gauss_hermite_rule(_XI_ORDER)
        base = (st.mu1 * st.s[:, None, None] + st.tau_h * xi[None, None, :]
                + (st.y[:, None] / st.phi * act.derivative(1, z)[None, :])[:, :, None])     # (I, A, B)
        W = np.outer(wz, wx).ravel()
        # sigma' constant (tau_h = 0, a linear sigma): F does not move with s
        wxi = np.outer(wz, wx * xi).ravel() * (st.mu1 / st.tau_h) if st.tau_h > 0 else np.zeros_like(W)

        def args(tq, rows):
            return (z[None, :, None] + tq * base[rows]).reshape(-1, W.size)

        def slope_weights(tq):
            return wxi
    Fo = np.empty((t.size, st.y.size))
    Do = np.empty_like(Fo)
    Co, So, Zo = (np.empty_like(Fo) for _ in range(3)) if bulk else (None, None, None)
    f0 = float(wz @ act.derivative(1, z))                   # quadrature mu_1: F(0) = mu_1 exactly
    c0 = float(wz @ act.derivative(2, z)) if bulk else 0.0
    if bulk and st.batch != "fresh":                        # E[z sigma'(.)] on the product rule: z at each node
        zw = np.repeat(z, W.size // z.size) * W
        z0 = float(wz @ (z * act.derivative(1, z)))
        # the first step's remainder sigma'(z) - mu_1 - mu_2 z at each node (quadrature moments: mean and slope 0)
        zeta1 = act.derivative(1, z) - f0 - z0 * z
        xw = np.repeat(zeta1, W.size // z.size) * W
        Xo = np.empty((t.size, st.y.size))
    # blocks of data nodes, their arguments and sigma' in a core's cache through the weighted sums (a multiple of 4
    # nodes, as BLAS groups a product's rows: the values of the whole grid at once, roundings included)
    step = max(4, 2 * PIECE // W.size // 4 * 4)
    for q, tq in enumerate(t):
        for i0 in range(0, st.y.size, step):
            r = slice(i0, i0 + step)
            v, *d2 = act.derivatives((1, 2) if bulk else (1,), args(tq, r))
            Fo[q, r] = v @ W - f0 + st.mu1
            Do[q, r] = v @ slope_weights(tq)
            if bulk:
                Co[q, r] = d2[0] @ W - c0 + st.mu2
                So[q, r] = (v * v) @ W
                Zo[q, r] = Co[q, r] if st.batch == "fresh" else v @ zw - z0 + st.mu2
                if st.batch != "fresh":
                    Xo[q, r] = v @ xw
    return FTable(Fo, Co, So, Zo, Do, Xo if bulk and st.batch != "fresh" else None)


def _smoothed_table(act: Activation, st, t) -> FTable:
    """``F`` and ``dF/ds`` of :func:`F_table` (``bulk=False``) where ``E sigma^(k)(a + b xi)`` has a closed form
    (:meth:`~rmtfl.theory._classical.activation_type.Activation.gaussian_smoothed`): the Gaussian ``xi`` (reused) or the
    whole of ``z + t xi`` (fresh) integrated exactly, ``dF/ds = t mu_1 E sigma''(.)`` directly.  ``F(0) = mu_1`` as
    on the quadrature route: the reused rule's own ``E sigma'(z)`` is taken out of it."""
    if st.batch == "fresh":
        # t mu_1 s + z + t xi: one Gaussian, N(t mu_1 s, 1 + t^2 tau_h^2)
        e0 = act.gaussian_smoothed((1,), 0.0, 1.0)[0]
        rows = [act.gaussian_smoothed((1, 2), (tq * st.mu1) * st.s, math.sqrt(1.0 + (tq * st.tau_h) ** 2))
                for tq in t]
    else:
        # z + t (mu_1 s + y sigma'(z) / phi) + t tau_h xi: the inner rule over z, xi exactly
        z, wz = gauss_hermite_rule(_Z_ORDER)
        d1 = act.derivative(1, z)
        e0 = float(wz @ d1)
        base = st.mu1 * st.s[:, None] + (st.y[:, None] / st.phi) * d1[None, :]          # (I, A)
        rows = [[v @ wz for v in act.gaussian_smoothed((1, 2), z[None, :] + tq * base, abs(tq) * st.tau_h)]
                for tq in t]
    Fo = np.array([v for v, _ in rows]) - e0 + st.mu1
    Do = (t * st.mu1)[:, None] * np.array([c for _, c in rows])
    return FTable(Fo, None, None, None, Do)
