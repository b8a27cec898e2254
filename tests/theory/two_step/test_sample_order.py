"""The ranks of the spikes of P and the single samples (docs/theory/two_step.md §8.3, "Ranked values" and "The single
samples' ranks from the same solutions").

Reference values: the binomial rank laws of ``ranked_values`` (tested against quadrature in test_sample_spikes.py) for
the ranks ``rank_outliers`` keeps, and the joint problem's means (given here) for those it takes from there: the rule
that picks between the two is what is tested.
"""
from __future__ import annotations

import numpy as np
import pytest

from rmtfl.theory._two_step import sample_order
from rmtfl.theory._two_step.sample_order import JOINT_MARGIN, SampleLaw, rank_outliers, ranked_values

EDGE = 2.0


def _law(n=50, p0=0.05, k=3.0):
    """One batch part of ``n`` samples, each an outlier above ``s`` with probability ``p0 exp(-k (s - edge))``."""
    grid = np.linspace(EDGE, EDGE + 4.0, 4001)
    return SampleLaw(grid, (p0 * np.exp(-k * (grid - EDGE)))[:, None], (n,))


def _case():
    law, spike = _law(), 9.0
    ranks = ranked_values(law, [spike], 4, spread=True)
    samples = tuple((m, 0.5, med) for m, med, _ in ranks[1:])        # the three single samples below the spike
    joint = [spike + 0.1] + [m - 0.05 for m, _, _ in ranks[1:]]      # the joint problem's means, rank by rank
    return law, spike, ranks, samples, joint


def test_a_sample_rank_takes_the_joint_mean_where_resolved_and_clear_of_the_edge():
    law, spike, ranks, samples, joint = _case()
    medians = [med for _, _, med in samples]
    clear = [med > (1 + JOINT_MARGIN) * EDGE for med in medians]
    assert clear[0] and not clear[-1]          # the case has a sample rank on either side of the margin
    locs, _, got, _, _ = rank_outliers(law, [spike], samples, joint, edge=EDGE, resolved=[True] * 4)
    assert locs[0] == pytest.approx(joint[0], abs=1e-12)                # a spike's rank: the joint mean always
    for (m, _, med), (g, _, gmed), j, ok in zip(samples, got, joint[1:], clear):
        assert gmed == pytest.approx(med, abs=1e-12)                   # the medians (the count) never move
        assert g == pytest.approx(j if ok else m, abs=1e-12)


def test_an_unresolved_rank_or_the_switch_off_keeps_the_samples_own_law(monkeypatch):
    law, spike, ranks, samples, joint = _case()
    _, _, got, _, _ = rank_outliers(law, [spike], samples, joint, edge=EDGE, resolved=[True, False, True, True])
    assert got[0][0] == pytest.approx(samples[0][0], abs=1e-12)       # no root in some batch: its own law's mean
    assert samples[1][2] > (1 + JOINT_MARGIN) * EDGE and got[1][0] == pytest.approx(joint[2], abs=1e-12)
    monkeypatch.setattr(sample_order, "JOINT_SAMPLE_RANKS", False)
    locs, _, off, _, _ = rank_outliers(law, [spike], samples, joint, edge=EDGE, resolved=[True] * 4)
    assert [m for m, _, _ in off] == pytest.approx([m for m, _, _ in samples], abs=1e-12)
    assert locs[0] == pytest.approx(joint[0], abs=1e-12)


def test_a_joint_rank_moves_by_the_joint_laws_and_keeps_the_medians_of_the_whole():
    """Where the joint ranks average over P given the batch's most extreme sample, a spike's rank that takes its mean
    from them moves by what ``joint_laws`` (its law less that sample's part) move it, not by its whole law; its
    median and spread still come from the whole law, and a sample's rank that keeps its own law's mean moves by the
    whole law as before (docs/theory/two_step.md §8.3)."""
    from scipy import stats

    law = _law()
    spike, sd = 2.6, 0.3
    x = np.linspace(-8 * sd, 8 * sd, 801)
    whole, part = (x, stats.norm.sf(x / sd)), (0.5 * x, stats.norm.sf(x / sd))
    still = ranked_values(law, [spike], 3, spread=True)
    samples = tuple((m, 0.5, med) for m, med, _ in still[1:])
    joint = [spike + 0.1, still[1][0] - 0.05, still[2][0] - 0.05]
    moved = {name: ranked_values(law, [spike], 3, laws=[lw], spread=True) for name, lw in
             (("whole", whole), ("part", part))}
    args = dict(sds=[sd], laws=[whole], edge=EDGE, resolved=[True, False, False])
    locs, medians, got, spreads, _ = rank_outliers(law, [spike], samples, joint, joint_laws=[part], **args)
    r = 0 if spike > samples[0][2] else 1                # the spike's rank in a typical batch
    assert locs[0] == pytest.approx(joint[r] + moved["part"][r][0] - still[r][0], abs=1e-12)
    assert medians[0] == pytest.approx(moved["whole"][r][1], abs=1e-12)
    assert spreads[0] == pytest.approx(moved["whole"][r][2], abs=1e-12)
    assert abs(moved["part"][r][0] - moved["whole"][r][0]) > 1e-3      # the two laws move the rank differently
    old, _, old_samples, _, _ = rank_outliers(law, [spike], samples, joint, **args)
    assert old[0] == pytest.approx(joint[r] + moved["whole"][r][0] - still[r][0], abs=1e-12)
    assert [g for g, _, _ in got] == pytest.approx([g for g, _, _ in old_samples], abs=1e-12)   # unresolved: own law
    none, _, _, _, _ = rank_outliers(law, [spike], samples, joint, joint_laws=[None], **args)
    assert none[0] == pytest.approx(joint[r], abs=1e-12)
