"""Single-sample columns coupled to the spikes of ``P``, on the law of their locations (docs/theory/two_step.md §8.3,
"Single samples pushed by the spikes of P").

A single sample's column of ``W_2`` (the direction ``x_i / |x_i|``, column denominator ``D_i(x)``) and ``P`` are
one perturbation of the bulk: the right vectors of ``P`` have the component ``u_i`` along the column
(:func:`~rmtfl.theory._two_step.finite_n.sample_components`).  With ``P``'s block ``A(x) = I - x <-tt> R G_V R``
of the joint problem (:mod:`.joint_roots`) and ``B = R u_i``, the sample's share taken out of ``P`` by
Sherman-Morrison, the Schur complement on the column is

    D_i(x) - c_i(x),   c_i = beta / (1 + x <-tt> beta),   beta = B^T A(x)^{-1} B,

and by Haynsworth's inertia the number of outliers above ``x`` is the number of spikes of ``P`` without the
sample above ``x`` plus one where that complement is negative.  Below the lowest spike of ``P``, ``A`` is
negative definite on ``P``'s directions, ``c_i < 0``, and the column's root moves down: its strength ``Q_i(x) = 1 -
D_i(x)`` becomes ``Q_i + c_i``.  Where ``1 + x <-tt> beta`` has turned negative (just below the spike of ``P``
without the sample) the sample is repelled below.  At and above the lowest spike the column keeps its own
location, the ranks it shares with the spikes being those of :func:`~.sample_order.ranked_values` and
:func:`~.joint_roots.ranks_over_top_sample`.  Deterministic.

The prediction uses it only with :data:`COUPLE_SAMPLES` set, which is off: the columns' own law lacks a
collective lift of the same size, and the two errors cancel in the values without it (docs/theory/two_step.md §8.4,
"The columns and P taken apart").
"""
from __future__ import annotations

import math

import numpy as np

from .sample_order import ranks_of, sample_outliers

__all__ = ["law_shift", "single_samples", "COUPLE_SAMPLES"]

#: Whether the prediction couples the single samples' columns to the spikes of ``P`` in the law of their locations
#: (module docstring; docs/theory/two_step.md §8.3, "Single samples pushed by the spikes of P").  Off.
COUPLE_SAMPLES = False


def single_samples(act, target, st, bulk, *, eta1, eta2, N, psi, rho, ranks, components, p_block=None, law_fn=None,
                   h_cache=None, eigenvalue=None):
    """:func:`~.sample_order.sample_outliers` with the columns coupled to the spikes of ``P`` where ``p_block =
    (G_U_w, G_V, g, n_spikes)`` is given and :data:`COUPLE_SAMPLES` is set (:func:`law_shift`; ``components(ys, zs,
    which)`` as there), and the columns' own mean locations: ``(samples, isolated, band, law, own)``, ``own`` the
    mean of each rank of the law without ``P`` (``law.uncoupled``), largest first; uncoupled, the samples' means.
    ``law_fn``, ``h_cache``, ``eigenvalue``: as :func:`~.sample_order.sample_outliers` takes them.
    """
    coupling = None
    if p_block is not None and COUPLE_SAMPLES:
        G_U_w, G_V, g, n_spikes = p_block
        coupling = (components, lambda us: law_shift(bulk, G_U_w, G_V, g, N, us, n_spikes))
    samples, isolated, band, law = sample_outliers(act, target, st, bulk, eta1=eta1, eta2=eta2, N=N, psi=psi,
                                                   rho=rho, ranks=ranks, coupling=coupling, law_fn=law_fn,
                                                   h_cache=h_cache, eigenvalue=eigenvalue)
    if law is None or law.uncoupled is None:
        return samples, isolated, band, law, [m for m, _, _ in samples]
    own = sorted((m for part in ranks_of(law.uncoupled, ranks) for m, _ in part), reverse=True)
    return samples, isolated, band, law, own


def law_shift(bulk, G_U_w, G_V, g, N, components, n_spikes):
    """``s -> [c per sub-bin of each batch part]`` (module docstring), or ``None`` at ``s`` at or above the lowest
    spike of ``P`` (fewer than ``n_spikes`` negative eigenvalues of ``A``) or inside the bulk.

    ``components``: per batch part, ``U`` (``(Q + 1) x sub-bins``), the components of the right vectors of ``P``
    along each sub-bin's sample; ``G_U_w``, ``G_V``, ``g``: as for :class:`~.joint_roots.JointProblem`;
    ``n_spikes``: the number of spikes of ``P`` above the bulk's edge.  A sub-bin repelled below (``1 + x <-tt> beta
    <= 0``) gets ``-inf``.
    """
    gq = g / math.sqrt(N)

    def shift(s):
        x = s * s
        tq, ttm = bulk.tau_rows(gq, x)
        if tq is None:
            return None
        F = G_U_w.factor(tq)                                # F^T F = Phi_A (no eigensolver)
        A = np.eye(F.shape[0]) - x * ttm * (F @ G_V @ F.T)
        A = (A + A.T) / 2
        if int(np.sum(np.linalg.eigvalsh(A) < 0.0)) < n_spikes:
            return None
        S = F.T @ np.linalg.solve(A, F)                     # = Phi_A^(1/2) (I - x<-tt> M)^-1 Phi_A^(1/2)
        out = []
        for U in components:
            beta = np.einsum("ik,ij,jk->k", U, S, U)
            den = 1.0 + x * ttm * beta
            ok = den > 0.0
            out.append(np.where(ok, beta / np.where(ok, den, 1.0), -np.inf))
        return out
    return shift
