"""The count rule's structure that benchmarks/diag_count_statistic.py measures with: its count is the smallest
fixed point, and the median count from independent fixed-point events (docs/theory/two_step_attempts.md §17)."""
import numpy as np
import pytest

from benchmarks.diag_count_statistic import cut_weights, first_fixed_point, median_from_events
from rmtfl.numerics import edge_outlier_count
from rmtfl.theory._classical.edge_count import edge_positions


@pytest.mark.parametrize("seed", range(40))
def test_the_rules_count_is_its_smallest_fixed_point(seed):
    rng = np.random.default_rng(seed)
    J = 26
    bulk = 2.0 - 0.01 * edge_positions(90) + 0.004 * rng.standard_normal(90)
    tail = 2.0 + np.sort(rng.exponential(0.05, rng.integers(0, 12)))[::-1]     # a descent of single-sample values
    spikes = 2.5 + rng.exponential(1.0, rng.integers(0, 3))
    v = np.sort(np.concatenate([spikes, tail, bulk]))[::-1][:80]
    assert first_fixed_point(v, J) == edge_outlier_count(v, window=J).count


def test_the_cut_is_linear_in_the_window():
    J = 26
    w = 2.0 - 0.013 * edge_positions(J)
    r = edge_outlier_count(np.concatenate([[9.0], w, w[-1] - 0.01 * np.arange(1, 20)]), window=J)
    assert cut_weights(J) @ w == pytest.approx(r.threshold, rel=1e-12)


def test_median_from_independent_events():
    # P(count >= k) = prod_{r < k} (1 - pf_r): 1, 1, 1, 0.5, 0 for k = 0..4, so the (upper) median is 3
    assert median_from_events([0.0, 0.0, 0.5, 1.0]) == 3
    assert median_from_events([0.0, 0.6, 0.2]) == 1


def test_extreme_ranks_sets_and_restores_the_number_left_out():
    from benchmarks.diag_count_statistic import extreme_ranks
    from rmtfl.theory._two_step import sample_spikes, two_step

    keep, predict = sample_spikes.SAMPLE_RANKS, two_step.predict_finite_n
    with extreme_ranks("24"):
        assert sample_spikes.SAMPLE_RANKS == 24
    with extreme_ranks("double"):
        assert two_step.predict_finite_n is not predict
    assert (sample_spikes.SAMPLE_RANKS, two_step.predict_finite_n) == (keep, predict)
