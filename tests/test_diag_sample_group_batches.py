"""benchmarks/diag_sample_group.py, ``--part batches``: the group's Dyson count at its bins' mean weights against
simulated batches of it (docs/theory/two_step.md §8.3, "The extreme samples as one group";
docs/theory/two_step_attempts.md §33)."""
from __future__ import annotations

import math

import numpy as np

from benchmarks.diag_sample_group import batch_counts, coupling_lift, pick_groups, spied_groups
from rmtfl.theory import two_step
from rmtfl.theory._two_step import sample_group
from rmtfl.theory._two_step.sample_group import Coupling, coupling_matrix, group_count


def _toy():
    """A dozen bins around the threshold, five of less than one expected column, coupled through three rows."""
    q = np.array([1.3, 1.15, 1.05, 0.98, 0.95, 0.92, 0.9, 0.85, 0.8, 0.75, 0.7, 0.6])
    w = np.array([0.4, 0.3, 0.6, 1.0, 1.5, 0.4, 2.0, 1.0, 0.7, 2.5, 1.0, 3.0])
    V = np.abs(np.random.default_rng(3).normal(1.0, 0.3, (12, 3)))
    return q, np.full(12, 0.04), w, 0.05**2 * (V @ V.T) / 3


class _NoPoisson:
    """A generator whose batches hold each bin's mean weight rounded, not a Poisson number of its columns."""

    def __init__(self, rng):
        self.rng = rng

    def poisson(self, w):
        return np.rint(w).astype(int)

    def standard_normal(self, *shape):
        return self.rng.standard_normal(*shape)


def test_the_batches_agree_with_the_dyson_count_at_the_mean_weights():
    q, sd, w, e2 = _toy()
    dyson = group_count(q, sd, w, e2).sum()               # 4.00; the columns alone 1.58
    mc, dy = batch_counts(q, sd, w, e2, draws=2000, rng=np.random.default_rng(1), dyson_draws=300)
    se = mc.std() / math.sqrt(mc.size)
    assert abs(mc.mean() - dyson) < 4 * se, (mc.mean(), se, dyson)
    pair = dy - mc[:dy.size]                              # the Dyson count at the drawn weights, paired
    assert abs(pair.mean()) < 4 * pair.std() / math.sqrt(pair.size) + 1e-3
    # deterministic given the generator
    again, _ = batch_counts(q, sd, w, e2, draws=50, rng=np.random.default_rng(1))
    assert np.array_equal(again, mc[:50])
    # batches without the Poisson multiplicities (each bin at its rounded weight) miss it: 3.73 ± 0.014
    fixed, _ = batch_counts(q, sd, w, e2, draws=2000, rng=_NoPoisson(np.random.default_rng(1)))
    assert abs(fixed.mean() - dyson) > 4 * math.hypot(se, fixed.std() / math.sqrt(fixed.size))


def test_the_lift_vanishes_without_couplings_and_grows_with_them():
    q, sd, w, e2 = _toy()
    lift = coupling_lift(q, sd, w, e2, scales=(0.0, 0.25, 0.5, 1.0, 2.0))
    assert lift[0] == 0.0
    assert np.all(np.diff(lift) > 0.0), lift
    assert math.isclose(lift[3], group_count(q, sd, w, e2).sum() - group_count(q, sd, w, 0 * e2).sum(), abs_tol=1e-12)


def test_the_spied_groups_are_the_theorys():
    U = np.random.default_rng(0).normal(size=(5, 2))
    assert np.allclose(coupling_matrix(Coupling(U)), U @ U.T)
    assert pick_groups([5.0, 3.9, 2.0, 1.1, 0.6, 0.31, 0.1], 3) == [5, 3, 1]
    kept = sample_group.warm_group_count
    with spied_groups() as runs:
        two_step("gelu", "hermite(0, 1, 0.5)", psi=1.0, phi=2.0, eta1=1000**0.4, eta2=1000**0.2, N=1000,
                 batch="reused")
    assert sample_group.warm_group_count is kept
    # one grouped law: the single samples' ranks and the count's law above the fold read the same one
    assert len(runs) == 1 and len(runs[0]) > 5
    q, sd, w, e2, total = max(runs[0], key=lambda r: r[4])
    assert e2.shape == (q.size, q.size) and total > 1.0
    assert math.isclose(group_count(q, sd, w, e2).sum(), total, rel_tol=1e-6)
