"""The pieces of benchmarks/diag_count_law.py (docs/theory/two_step_attempts.md §18): the rigid ranks' laws, the
lattice count and edge and the deeper rule, against cases whose answer is known (the ranks' laws of gamma = 1 are the
theory's: tests/theory/two_step/test_poisson_count.py)."""
import numpy as np
import pytest

from benchmarks.diag_count_law import deep_count, lattice_count, rank_laws
from rmtfl.numerics import edge_outlier_count
from rmtfl.theory._classical.edge_count import edge_positions
from rmtfl.theory._two_step.sample_order import SampleLaw


def _law(grid, tail, n=1000):
    return SampleLaw(np.asarray(grid, float), np.asarray(tail, float)[:, None], (n,))


def test_rigid_ranks_spread_less():
    grid = np.linspace(2.0, 3.0, 201)
    tail = 0.008 * np.exp(-6.0 * (grid - 2.0))
    g, F1 = rank_laws(_law(grid, tail), [], 4)
    _, F4 = rank_laws(_law(grid, tail), [], 4, gamma=4.0)

    def iqr(F):
        return np.interp(0.25, F[::-1], g[::-1]) - np.interp(0.75, F[::-1], g[::-1])
    assert iqr(F4[:, 3]) < 0.7 * iqr(F1[:, 3])


def test_lattice_count_of_sure_ranks_is_the_rules_count():
    J = 26
    bulk = 2.0 - 0.01 * edge_positions(60)
    spikes = [3.0, 2.4, 2.1]
    grid = np.linspace(2.0, 3.5, 301)
    g, F = rank_laws(_law(grid, np.zeros(301)), spikes, 3)
    want = edge_outlier_count(np.concatenate([spikes, bulk]), window=J).count
    assert lattice_count(g, F, bulk, J, points=64) == want == 3


@pytest.mark.parametrize("seed", range(10))
def test_deep_rule(seed):
    rng = np.random.default_rng(seed)
    J = 26
    v = np.concatenate([[4.0, 3.0], 2.0 - 0.01 * edge_positions(78) + 0.001 * rng.standard_normal(78)])
    assert deep_count(v, J, 0) == edge_outlier_count(v, window=J).count
    assert deep_count(v, J, 13) == 2


def test_lattice_edge_of_sure_ranks_is_the_rules_edge():
    """Attempt 20's edge: with every rank sure, each lattice point is the one spectrum, and the mean edge is the
    rule's own fitted edge on it."""
    from benchmarks.diag_count_law import lattice_rule

    J = 26
    bulk = 2.0 - 0.01 * edge_positions(60)
    spikes = [3.0, 2.4, 2.1]
    grid = np.linspace(2.0, 3.5, 301)
    g, F = rank_laws(_law(grid, np.zeros(301)), spikes, 3)
    want = edge_outlier_count(np.concatenate([spikes, bulk]), window=J)
    count, edge = lattice_rule(g, F, bulk, J, points=64)
    assert count == want.count == 3
    assert edge == pytest.approx(want.edge, rel=1e-12) and edge == pytest.approx(2.0, abs=1e-12)


def test_lattice_edge_follows_an_uncertain_rank():
    """A value inside the rule's margin (2.015 over an edge at 2 of scale 0.01) in half the lattice points: it is
    never counted, it enters the fit window where present, and the mean edge lies half-way between the two spectra's
    fitted edges (the lattice places the value between its grid neighbours 2.010 and 2.015)."""
    from benchmarks.diag_count_law import lattice_rule

    J = 26
    bulk = 2.0 - 0.01 * edge_positions(60)
    grid = np.linspace(2.0, 3.5, 301)
    tail = np.where(grid < 2.015, 0.5, 0.0)               # one column (n = 1) above 2.015 with probability 1/2
    g, F = rank_laws(SampleLaw(grid, tail[:, None], (1,)), [3.0], 2)
    with_it = edge_outlier_count(np.concatenate([[3.0, 2.015], bulk]), window=J)
    without = edge_outlier_count(np.concatenate([[3.0], bulk]), window=J)
    count, edge = lattice_rule(g, F, bulk, J, points=256)
    assert count == with_it.count == without.count == 1
    assert without.edge < edge < with_it.edge
    assert edge == pytest.approx(0.5 * (with_it.edge + without.edge), abs=3e-3)
