"""The saddlepoint law of benchmarks/diag_strength_law.py (docs/theory/two_step_attempts.md §19) against sums of
gamma variables whose law is known in closed form."""
import math

import numpy as np
import pytest
from scipy import stats

from benchmarks.diag_strength_law import gamma_sum_sf


@pytest.mark.parametrize("x", [0.5, 1.0, 2.0, 4.0])
def test_equal_scales_sum_to_one_gamma(x):
    # rows of one scale: the sum is Gamma(sum of shapes); Lugannani-Rice is within 1e-3 at shape 6
    scale, shape = np.full((4, 1), 0.25), np.full((4, 1), 1.5)
    exact = stats.gamma.sf(x, a=6.0, scale=0.25)
    assert gamma_sum_sf(scale, shape, x)[0] == pytest.approx(exact, rel=2e-3)


@pytest.mark.parametrize("x", [1.0, 3.0, 6.0])
def test_two_exponentials_against_the_hypoexponential_law(x):
    m1, m2 = 1.0, 0.4                       # means of two exponentials (shape 1)
    exact = (m1 * math.exp(-x / m1) - m2 * math.exp(-x / m2)) / (m1 - m2)
    assert gamma_sum_sf(np.array([[m1], [m2]]), np.ones((2, 1)), x)[0] == pytest.approx(exact, rel=0.03)


def test_many_small_rows_near_the_gaussian_and_columns_are_independent():
    # 4000 chi-square rows of one degree each: Gamma(2000) exactly, close to the Gaussian; the columns do not mix
    rows = 4000
    scale = np.column_stack([np.full(rows, 1.0 / rows), np.full(rows, 2.0 / rows)])
    shape = np.full((rows, 2), 0.5)
    got = gamma_sum_sf(scale, shape, 0.51)
    assert got == pytest.approx(stats.gamma.sf(0.51, a=2000.0, scale=[1.0 / rows, 2.0 / rows]), rel=1e-3)
    assert got[0] == pytest.approx(stats.norm.sf(0.01 / math.sqrt(0.5 / rows)), abs=0.01)


def test_negative_scales_and_degenerate_columns():
    # -G with G ~ Gamma(3, 1): P(-G > -2) = P(G < 2)
    assert gamma_sum_sf(np.full((1, 1), -1.0), np.full((1, 1), 3.0), -2.0)[0] == pytest.approx(
        stats.gamma.cdf(2.0, a=3.0), rel=0.02)
    assert gamma_sum_sf(np.zeros((3, 1)), np.ones((3, 1)), 1.0)[0] == 0.0
