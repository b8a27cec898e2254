"""The Gram matrix of ``P``'s right vectors over the batches given their most extreme sample
(docs/theory/two_step.md §8.3, "P given the batch's most extreme sample").

A reused batch's ``G_V`` (:func:`~rmtfl.theory._two_step.right_gram.basis_gram`) holds moments such as ``E[y^4]`` that
the batch's few most extreme samples set: under a heavy-tailed target the population law gives its mean over
batches, far from a typical batch's.  Given the most extreme sample (the samples ordered by reach as in
:func:`~rmtfl.theory._two_step.sample_spikes.bulk_cut`) at a reach that leaves tail probability ``p`` beyond it, the
batch's empirical law is that sample with weight ``1/n`` and the other ``n - 1`` from the law on the ``z*``-interval
within its reach.  The moments of the Gram matrix are linear in that law, so

    moments | max = (n - 1) / (n (1 - p)) [moments(population) - moments(beyond the reach)] + moments(max) / n,

whose mean over the law of the maximum is the population's moments.  The population part comes from the prediction's
own data grid; the tails beyond the reaches of all the quantiles share one grid (Gauss–Legendre on the segments
between consecutive reaches, and beyond the last), so every conditional Gram costs a few small matrix products.
Deterministic.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .joint_roots import top_quantile_rule
from .right_gram import GramMoments, reused_gram, reused_moments
from .sample_spikes import reach_cuts, truncated_rule
from .sigma_table import F_table

__all__ = ["TopSample", "top_sample_levels", "grams_given_top", "weighted_grams", "moments_given_top", "MIN_SIDE"]

#: A side of ``z*`` that holds the batch's most extreme sample with a smaller probability than this is left out (the
#: other side takes its share): targets with one heavy tail, such as He1 + He2/2, put it on that tail's side.
MIN_SIDE = 0.01

#: The tails' grid: Gauss-Legendre nodes per segment between reaches, and on the last one's ``[u, u + 5]``.  With the
#: quadratic sigma and He1 + He3/sqrt(6) the Grams lie within 1.2e-6 of a 64-node rule of the conditional law itself
#: (1.7e-4 with 2 nodes per segment: the reaches of the top quantiles lie far apart; 8e-10 with 4 and 10 nodes, which
#: take a third as long again for gelu).
_SEGMENT_ORDER, _TAIL_ORDER, _TAIL_LENGTH = 3, 8, 5.0


class TopSample(NamedTuple):
    """The batch's most extreme sample at one quantile of its law, on one side of ``z*``: its probability among the
    sides of that quantile (``weight``), its ``z*`` and ``y``, and ``G_V`` of the batches that have it."""

    weight: float
    z: float
    y: float
    G_V: np.ndarray


def top_sample_levels(n: int, quantiles: int) -> np.ndarray:
    """Tail probability beyond the reach of a batch's most extreme sample at the quantiles ``q`` of its law that
    :func:`~rmtfl.theory._two_step.joint_roots.top_quantile_rule` names: ``p = 1 - q^(1/n)`` (the other ``n - 1``
    samples all within that reach).

    >>> p = top_sample_levels(2000, 2)                # the batch's maximum at its 0.378 and 0.955 quantiles
    >>> [round(float(v) * 2000, 3) for v in p]        # about n p samples' worth of probability beyond it
    [0.973, 0.046]
    """
    return -np.expm1(np.log(top_quantile_rule(quantiles)[0]) / n)


def grams_given_top(act, target, st, F_pop, t, C, *, n: int, quantiles: int, grid) -> list[list[TopSample]]:
    """Per quantile of the batch's most extreme sample (:func:`top_sample_levels`, ascending), its sides
    (:class:`TopSample`, at most two, weights summing to 1) with ``G_V = C gram C^T`` of the batches given it (module
    docstring; a reused batch of ``n`` samples).

    ``st``: the prediction's data grid (:class:`~rmtfl.theory._two_step.finite_n.FiniteNSetup`, reused batch),
    ``F_pop`` the weights ``F(t_q; y, s)`` of ``P``'s vectors on it (``FTable.F``) at the rows ``t``, ``C`` the right
    vectors' coefficients (:func:`~rmtfl.theory._two_step.finite_n.vbar_coefficients`), ``grid(zs_rule)`` the data
    grid of the same batch on other nodes of ``z*`` (``finite_n_setup`` with ``zs_rule``, ``ey2_ref=st.ey2``).
    """
    return [[TopSample(w, z, y, C @ reused_gram(mom, st.phi) @ C.T) for w, z, y, mom in sides]
            for sides in moments_given_top(act, target, st, F_pop, t, n=n, quantiles=quantiles, grid=grid)]


def weighted_grams(tops: list[list[TopSample]]) -> list[tuple[float, np.ndarray]]:
    """``[(probability, G_V), ...]`` over every quantile and side of :func:`grams_given_top`'s result: each side's
    weight times its quantile's (:func:`~rmtfl.theory._two_step.joint_roots.top_quantile_rule`), summing to 1."""
    weights = top_quantile_rule(len(tops))[1]
    return [(top.weight * w, top.G_V) for sides, w in zip(tops, weights) for top in sides]


def moments_given_top(act, target, st, F_pop, t, *, n: int, quantiles: int, grid) -> list[list[tuple]]:
    """:func:`grams_given_top` before the Gram's assembly: per quantile, ``(weight, z, y, moments)`` of each side,
    the :class:`~rmtfl.theory._two_step.right_gram.GramMoments` of the batches given their most extreme sample
    there (linear in their law: over the law of the maximum they average to the population's)."""
    tails = top_sample_levels(n, quantiles)
    cuts = reach_cuts(target, tails)
    # the tails beyond each quantile's reach: segments between consecutive reaches on each side, and the last beyond
    nodes, weights, member = [], [], []
    for side in (0, 1):
        ends = [abs(c[0][side]) for c in cuts]
        bounds = np.maximum.accumulate(ends)                     # the reaches widen with the quantile
        pieces = [(bounds[k], bounds[k + 1], _SEGMENT_ORDER) for k in range(quantiles - 1)]
        pieces.append((bounds[-1], bounds[-1] + _TAIL_LENGTH, _TAIL_ORDER))
        for j, (a, b, order) in enumerate(pieces):
            if b <= a:
                continue
            zq, wq = truncated_rule(a, b, order=order)
            nodes.append(zq if side else -zq[::-1])
            weights.append(wq if side else wq[::-1])
            member.append(np.full(zq.size, j))                   # beyond quantile k's reach: the pieces j >= k
    tail_z = np.concatenate(nodes) if nodes else np.zeros(0)
    tail_w = np.concatenate(weights) if weights else np.zeros(0)
    seg = np.concatenate(member) if member else np.zeros(0, int)
    tops = [(k, side, float(c[0][side]), float(c[1][side])) for k, c in enumerate(cuts) for side in (0, 1)
            if c[1][side] >= MIN_SIDE]
    top_z = np.array([z for _, _, z, _ in tops])
    grid_z = np.concatenate([tail_z, top_z])
    st_x = grid((grid_z, np.ones(grid_z.size)))
    rest = st_x.w.reshape(grid_z.size, -1)[0]                   # the law of the data grid's other coordinates
    Pw_x = np.vstack([np.ones(st_x.y.size), F_table(act, st_x, t, bulk=False).F])
    pop = reused_moments(st, np.vstack([np.ones(st.y.size), F_pop]), st.w)
    # the laws on the extra grid: beyond each quantile's reach, and each top sample alone
    n_tail = tail_z.size
    W = np.zeros((quantiles + len(tops), grid_z.size))
    W[:quantiles, :n_tail] = np.where(seg[None, :] >= np.arange(quantiles)[:, None], tail_w[None, :], 0.0)
    W[quantiles + np.arange(len(tops)), n_tail + np.arange(len(tops))] = 1.0
    extra = reused_moments(st_x, Pw_x, np.kron(W, rest[None, :]))
    beyond = W[:quantiles].sum(axis=1)
    y_top = np.asarray(target.links[0](top_z), dtype=float) if len(tops) else np.zeros(0)
    out = [[] for _ in range(quantiles)]
    for i, (k, side, z, prob) in enumerate(tops):
        c = (n - 1) / (n * (1.0 - beyond[k]))
        mom = GramMoments(*(c * (P - E[k]) + E[quantiles + i] / n for P, E in zip(pop, extra)))
        out[k].append((prob, z, float(y_top[i]), mom))
    return [[(p / sum(s[0] for s in sides), z, y, mom) for p, z, y, mom in sides] for sides in out]
