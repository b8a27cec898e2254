"""The empirical count rule (docs/theory/two_step.md §9.2) against Marchenko–Pastur samples and planted spikes.

Reference values: Johnstone's finite-N centring and Tracy–Widom scale of the largest singular value
(``rmtfl.theory.largest_sv_scaling``), and the BGN location of a planted spike (``rmtfl.theory.bgn_outlier``).
"""
from __future__ import annotations

import math

import numpy as np
import pytest

import rmtfl.theory as th


def _svals(N, d, rng, spikes=()):
    W = rng.standard_normal((N, d)) / math.sqrt(d)
    for i, theta in enumerate(spikes):   # orthogonal unit directions e_i, e_i: W + theta e_i e_i^T
        W[i, i] += theta
    return np.linalg.svd(W, compute_uv=False)


@pytest.mark.parametrize("N,d", [(400, 400), (500, 250), (250, 500)])
def test_edge_and_scale_match_johnstone_on_pure_noise(N, d):
    rng = np.random.default_rng(11)
    fits = [th.edge_outlier_count(_svals(N, d, rng)) for _ in range(20)]
    sc = th.largest_sv_scaling(N, d)
    edge = np.mean([f.edge for f in fits])
    scale = np.mean([f.scale for f in fits])
    # fitted edge: the mean of 20 fits within one TW scale of Johnstone's centring; scale within 15 %
    assert abs(edge - sc.center) < sc.scale, (edge, sc)
    assert abs(scale / sc.scale - 1) < 0.15, (scale, sc)
    # false alarms: at most the level 0.01 plus 3 binomial standard errors over 20 draws
    alarms = np.mean([f.count > 0 for f in fits])
    assert alarms <= 0.01 + 3 * math.sqrt(0.01 * 0.99 / 20)


@pytest.mark.parametrize("spikes", [(3.0,), (4.0, 2.5), (5.0, 3.0, 1.6)])
def test_planted_spikes_counted(spikes):
    N = d = 500
    rng = np.random.default_rng(5)
    # every planted theta above psi^(1/4) = 1 by enough that its BGN location clears the margin by > 5 scales
    sc = th.largest_sv_scaling(N, d)
    for t in spikes:
        assert th.bgn_outlier(t, 1.0).singular_value > sc.center + 7 * sc.scale
    counts = [th.edge_outlier_count(_svals(N, d, rng, spikes)).count for _ in range(10)]
    assert counts == [len(spikes)] * 10


def test_below_threshold_spike_not_counted():
    N = d = 500
    rng = np.random.default_rng(3)
    counts = [th.edge_outlier_count(_svals(N, d, rng, (0.7,))).count for _ in range(20)]   # below BBP (1.0)
    assert np.mean(counts) <= 0.1


def test_bad_input_named():
    with pytest.raises(ValueError, match=r"\bs\b"):
        th.edge_outlier_count([1.0, np.nan, 0.5, 0.2, 0.1])
    with pytest.raises(ValueError, match="p"):
        th.edge_outlier_count(np.linspace(2, 1, 50), p=1.0)
    with pytest.raises(ValueError, match="window"):
        th.edge_outlier_count(np.linspace(2, 1, 50), window=80)
