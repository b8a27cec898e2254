"""A first-batch sample's column under the second step of fresh batches (docs/theory/two_step.md §8.3, "A first-batch
sample in the second step").

The second step moves row ``j`` of ``W_1`` by ``e_j I + beta_j M_2``
(:func:`~rmtfl.theory._two_step.widened_bulk.row_coefficients`), so the column ``W_1 x_i`` of a first-batch sample
(``x_i`` a generic direction for ``M_2``) leaves it as ``(1 + e_j + beta_j m_1) W_1 x_i`` plus
``beta_j W_1 (M_2 - m_1) x_i``.  The single-sample law takes the first part without its identity factor
``1 + e_j`` (docs/theory/two_step_attempts.md §6: with it and without the columns' coupling to the spikes of ``P``
the values fall low).  The second part lies among the bulk's own columns, where the bulk's column kernel ``tt``
weighs it: with ``q_1(x) = x E_l[(lambda_l - m_1)^2 (-tt(lambda_l, x))]`` over the bulk's columns, the column
stands out beyond ``x = s^2`` where the top eigenvalue of the ``2 x 2`` matrix

    psi E_j[v_j (-t_j(x)) c_j c_j^T],      c_j = (1, beta_j sqrt(q_1(x)))

is 1 (the strength ``psi E_j[v_j (-t_j)]`` of the column alone is its first diagonal entry).  The laws of
:mod:`~rmtfl.theory._two_step.sample_order` take a column's strength linear in its row weights, so each tail bin's
column is given the weights ``v_j (u_1 + u_2 beta_j sqrt(q_1(x*)))^2`` of the top eigenvector ``u`` at its own root
``x*`` (at the edge where it has none): the same root, and around it the same strength to first order (a Rayleigh
quotient at its eigenvector).  Deterministic.
"""
from __future__ import annotations

import numpy as np

from .widened_bulk import row_coefficients

__all__ = ["carried_columns", "CARRY_POINTS"]

#: Points of the ``s`` grid on which the ``2 x 2`` problem is solved, from the edge to past the strongest root.
CARRY_POINTS = 32


def carried_columns(bulk, vmean, vm2, *, psi: float):
    """``(vmean, vm2)`` of the first-batch tail bins with the second step's ``beta`` part (module docstring):
    ``vmean``, ``vm2`` are ``E[v]`` and ``E[v^2]`` per bin and row of ``bulk`` (units of ``1/d``); unchanged where
    ``beta`` vanishes (``sigma''`` without a part along ``M``: an odd ``sigma`` with an odd target)."""
    _, _, beta, _, _ = row_coefficients(bulk.a, bulk.st, bulk.eta1, bulk.eta2, bulk.tn, bulk.rows)
    if not np.any(np.abs(beta) > 1e-9):
        return vmean, vm2
    lam, wl, m1 = bulk.red.colh[:, 1], bulk.red.col_weights, bulk.st.ey1
    wa = np.asarray(bulk.wa, dtype=float)
    vmean = np.asarray(vmean, dtype=float)

    def solve(x):                          # (P00, P01, P11, sqrt(q1)) per bin at x, None inside the bulk
        t = bulk.tau_rows(bulk.a, x)[0]
        tt = bulk.tau_columns(lam, x)
        if t is None or tt is None:
            return None
        sq = np.sqrt(max(x * float(wl @ ((lam - m1) ** 2 * tt)), 0.0))
        w = psi * wa * t
        return vmean @ w, (vmean @ (w * beta)) * sq, (vmean @ (w * beta * beta)) * sq * sq, sq

    def top(p):                            # the top eigenvalue of each bin's 2 x 2 matrix
        a, b, c = p[0], p[1], p[2]
        return 0.5 * (a + c) + np.sqrt(0.25 * (a - c) ** 2 + b * b)

    s_edge = bulk.edge * (1 + 1e-7)
    s_hi = 2.0 * s_edge
    for _ in range(6):                     # past the strongest bin's root
        p = solve(s_hi * s_hi)
        if p is None or np.max(top(p)) < 1.0:
            break
        s_hi *= 2.0
    s = s_edge + (s_hi - s_edge) * np.linspace(0.0, 1.0, CARRY_POINTS) ** 2
    sols = [solve(v * v) for v in s]
    ok = np.array([q is not None for q in sols])
    s, sols = s[ok], [q for q in sols if q is not None]
    if not sols:                           # no kernels above the edge: nothing to weigh the part along M_2 with
        return vmean, vm2
    P = [np.array([q[i] for q in sols]) for i in range(3)]           # each (points, bins)
    sq = np.array([q[3] for q in sols])
    lam_top = top(P)
    factor = np.ones_like(vmean)
    for b in range(vmean.shape[0]):
        above = np.nonzero(lam_top[:, b] >= 1.0)[0]
        k = int(above[-1]) if above.size else 0          # the root lies between k and k + 1 (at the edge: none)
        f = 0.0
        if above.size and k + 1 < s.size:
            lo, hi = lam_top[k, b], lam_top[k + 1, b]
            f = (lo - 1.0) / (lo - hi) if lo > hi else 0.0
        j = min(k + 1, s.size - 1)
        a, bb, c = ((1 - f) * Pi[k, b] + f * Pi[j, b] for Pi in P)
        q = (1 - f) * sq[k] + f * sq[j]
        ev = top((a, bb, c))
        if abs(bb) > 1e-300:
            u = np.array([bb, ev - a])
        else:                                            # no coupling: the larger diagonal entry's axis
            u = np.array([1.0, 0.0]) if a >= c else np.array([0.0, 1.0])
        u = u / np.linalg.norm(u)
        factor[b] = (u[0] + u[1] * beta * q) ** 2
    return vmean * factor, np.asarray(vm2, dtype=float) * factor ** 2
