"""The count criterion of the finite-N acceptance grid (benchmarks/bench_two_step_finite_n.py)."""
import numpy as np
import pytest

from benchmarks.bench_two_step_finite_n import middle_counts, sign_test


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
