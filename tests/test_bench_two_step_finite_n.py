"""The count criterion of the finite-N acceptance grid (benchmarks/bench_two_step_finite_n.py)."""
import numpy as np
import pytest

from benchmarks.bench_two_step_finite_n import median_miss, middle_counts, sign_test


def test_middle_counts_odd_and_even():
    assert middle_counts([5, 3, 4]) == (4, 4)
    # an even sample has two middle values; every count between them is a sample median
    assert middle_counts([2, 3, 3, 4, 4, 6]) == (3, 4)
    assert middle_counts([1, 1, 2, 2, 2, 2]) == (2, 2)


def test_sign_test_exact_binomial_tails():
    counts = np.array([3] * 13)
    assert sign_test(counts, 3) == 1.0                       # no draw on either side
    # all 13 draws above: 2 * 2^-13
    assert sign_test(counts, 2) == pytest.approx(2 / 8192, rel=1e-12)
    # 11 of 13 below, 2 equal: 2 * P(Bin(13, 1/2) >= 11) = 2 * (78 + 13 + 1) / 8192
    counts = np.array([1] * 11 + [2, 2])
    assert sign_test(counts, 2) == pytest.approx(2 * 92 / 8192, rel=1e-12)
    # balanced draws never reject
    assert sign_test(np.array([1, 2, 3, 4, 5, 6, 7]), 4) == 1.0


def test_median_miss_exact_and_against_resampling():
    from scipy.stats import binom

    # a count that never varies: the median of any number of draws is that count
    assert median_miss(np.array([4] * 13)) == 0.0
    # two values, 1 in 6 draws of 13 and 2 in 7: the median of 13 draws is 2 unless 7 or more draws are 1
    c = np.array([1] * 6 + [2] * 7)
    assert median_miss(c) == pytest.approx(binom.sf(6, 13, 6 / 13), rel=1e-12)
    # against resampling the draws' own law
    c = np.array([2, 3, 3, 4, 4, 4, 5, 5, 6, 6, 7, 8, 9])
    rng = np.random.default_rng(1)
    meds = np.sort(rng.choice(c, (200_000, 13)), axis=1)[:, 6]
    p = np.mean(meds != 5)
    assert median_miss(c) == pytest.approx(p, abs=4 * np.sqrt(p * (1 - p) / 200_000))
