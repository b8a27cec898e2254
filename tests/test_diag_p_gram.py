"""The typical batches of benchmarks/diag_p_gram.py (docs/theory/two_step_attempts.md §21): their data grids against
the laws they stand for."""
import math

import numpy as np
import pytest
from scipy import integrate, special, stats

from benchmarks.diag_p_gram import conditional_rule, max_nodes, typical_rule
from rmtfl.theory import make_target

HE3 = make_target("hermite(0, 1, 0, 0.4082482904638631)")


@pytest.mark.parametrize("n", [1000, 2000])
def test_max_nodes_are_quantiles_of_the_most_extreme_samples_law(n):
    u = max_nodes(n, 4)
    cdf = (1.0 - 2.0 * stats.norm.sf(u)) ** n
    np.testing.assert_allclose(cdf, (np.arange(4) + 0.5) / 4, rtol=0, atol=1e-12)


@pytest.mark.parametrize("n", [1000, 2000])
def test_typical_rule_is_one_batch_with_its_most_extreme_sample_where_asked(n):
    z, w = typical_rule(HE3, n, 12, zmax=-3.7)
    assert w.sum() == pytest.approx(1.0, abs=2.0 / n)
    assert np.abs(z).max() == pytest.approx(3.7) and z[np.argmax(np.abs(z))] < 0
    assert np.sum(w == 1.0 / n) == 12                     # the K extreme samples, one n-th each


def test_conditional_rule_averaged_over_the_max_is_the_population_law():
    """The batch given its most extreme sample, averaged over that sample's law, has the population's moments:
    E[y^4] of He1 + He3/sqrt6 (236.0) from Q quantiles of the max on either side converges to the exact integral
    (the midpoint rule in the level misses the far tail of the max: -2.3 % at Q = 200, -0.9 % at Q = 800)."""
    n = 1000

    def y4(z):
        return np.asarray(HE3.links[0](z), float) ** 4
    exact = integrate.quad(lambda z: y4(np.array([z]))[0] * math.exp(-z * z / 2) / math.sqrt(2 * math.pi),
                           -12, 12, limit=200)[0]

    def error(Q):
        levels = (np.arange(Q) + 0.5) / Q
        us = -special.ndtri((1.0 - levels ** (1.0 / n)) / 2.0)
        means = []
        for u in us:
            for side in (1.0, -1.0):
                z, w = conditional_rule(n, side * u)
                assert w.sum() == pytest.approx(1.0, abs=1e-12)
                means.append(float(w @ y4(z)))
        return np.mean(means) / exact - 1.0
    e200, e800 = error(200), error(800)
    assert -0.03 < e200 < e800 < 0.0 and abs(e800) < 0.5 * abs(e200)
