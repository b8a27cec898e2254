"""The count read through the Poisson process of Lambda (rmtfl/theory/_two_step/poisson_count.py;
docs/theory/two_step.md §9.2)."""
import numpy as np
import pytest
from scipy.stats import poisson

from rmtfl.numerics import edge_outlier_count
from rmtfl.theory._classical.edge_count import edge_positions
from rmtfl.theory._two_step.poisson_count import blended, poisson_count, rank_laws, soft_edge_count
from rmtfl.theory._two_step.sample_order import SampleLaw


def _bulk(n=80, edge=2.0, scale=0.01):
    return edge - scale * edge_positions(n)


def _bulk_count(bulk):
    """``(xs, ns)``, ascending: the count of a bulk's values above ``x``, its k-th value where k - 1/2 lie above."""
    xs = np.concatenate([[bulk[0] + 0.5 * (bulk[0] - bulk[1])], bulk])[::-1]
    ns = np.concatenate([[0.0], np.arange(bulk.size) + 0.5])[::-1]
    return xs, ns


def test_the_ranks_of_a_process_of_mean_count_lambda_are_poisson():
    """With one part of 10^9 samples (as poisson_count builds it) the k-th value lies above s with probability
    P(Poisson(Lambda(s)) >= k), to the binomial's 1e-8."""
    grid = np.linspace(1.0, 3.0, 200)
    lam = 6.0 * np.exp(-3.0 * (grid - 1.0))
    law = SampleLaw(grid, (lam / 1e9)[:, None], (10**9,))
    g, F = rank_laws(law, [], 5)
    for k in range(1, 6):
        ref = poisson.sf(k - 1, np.interp(g, grid, lam))
        assert np.max(np.abs(F[:, k - 1] - ref)) < 1e-6


def test_a_spike_at_its_location_takes_the_first_rank():
    """Spikes of P at their locations and no single sample above the edge: the r-th value lies above s exactly where
    r spikes do."""
    grid = np.linspace(2.0, 3.0, 41)
    g, F = rank_laws(SampleLaw(grid, np.zeros((41, 1)), (1000,)), [5.0, 2.5], 3)
    assert F[g < 2.5 * (1 - 1e-8), 1].min() == 1.0 and F[g > 2.5 * (1 + 1e-8), 1].max() == 0.0
    assert F[g < 5.0 * (1 - 1e-8), 0].min() == 1.0 and F[:, 2].max() == 0.0


def test_a_rigid_bulk_under_well_separated_spikes_counts_the_spikes():
    """Lambda of a bulk alone (its k-th value where k - 1/2 lie above) with two spikes far above it: every spectrum
    of the lattice but a few (whose bulk top, drawn from the process, rises past the cut) counts 2, as the rule counts
    that spectrum itself, and the rule's edge is the bulk's."""
    bulk = _bulk()
    xs, ns = _bulk_count(bulk)
    grid = np.linspace(bulk[-1], xs[-1], 600)
    lam = np.interp(grid, xs, ns)
    count, edge, counts = poisson_count(grid, lam, [3.0, 2.6], J=12)
    assert count == 2 == edge_outlier_count(np.concatenate([[3.0, 2.6], bulk]), window=12).count
    assert np.mean(counts == 2) > 0.99 and abs(edge - 2.0) < 0.01


def test_a_process_of_mean_one_and_a_half_above_the_cut_counts_its_median():
    """A bulk with a Poisson process of mean 1.5 values far above its cut: the median count is the process's (1),
    and a lattice spectrum counts none of them about as often as the process has none (0.22; the bulk's top, drawn
    from the process as well, rises past the cut in a few more)."""
    bulk = _bulk()
    xs, ns = _bulk_count(bulk)
    grid = np.linspace(bulk[-1], 4.0, 2000)
    lam = np.interp(grid, xs, ns, right=0.0) + 1.5 * ((grid > 2.6) * (grid < 3.0) * (3.0 - grid) / 0.4
                                                     + (grid <= 2.6))
    count, _, counts = poisson_count(grid, lam, [], J=12)
    assert count == 1
    assert 0.15 < np.mean(counts == 0) <= poisson.pmf(0, 1.5) + 0.01


def _thin_tail(bottom_rank: int | None):
    """``(grid, Lambda)``: a bulk of 300 values (edge 2, Tracy–Widom scale 0.003; its k-th value where k - 1/2 lie
    above) and a thin tail of mean 20 values spread evenly over (2.05, 2.3), on a grid from the bulk's value of rank
    ``bottom_rank`` (its lowest if ``None``) up."""
    bulk = _bulk(300, scale=0.003)
    xs, ns = _bulk_count(bulk)
    grid = np.linspace(bulk[-1 if bottom_rank is None else bottom_rank], 2.5, 4000)
    return grid, np.interp(grid, xs, ns, right=0.0) + 20.0 * np.clip((2.3 - grid) / 0.25, 0.0, 1.0)


def test_a_thin_tail_of_twenty_values_keeps_its_spread_over_batches():
    """More values above the cut than the ranks drawn from the process (12), the rule's window of 72 below them: the
    ranks drawn grow with the count, so that the count spreads over the lattice (10 % and 90 % points 17 and 22;
    the process's own number of points, Poisson(20), 14 and 26) instead of sitting on the rigid ranks, where every
    spectrum counted 20 (docs/theory/two_step.md §8.3, "A count deeper than the drawn ranks")."""
    count, _, counts = poisson_count(*_thin_tail(None), [], J=72)
    lo, hi = (int(np.quantile(counts, q, method="inverted_cdf")) for q in (0.1, 0.9))
    assert count == 20 and lo <= 18 and hi >= 22


@pytest.mark.parametrize("bottom_rank", [62, 42])
def test_a_count_deeper_than_the_grid_is_not_cut_short(bottom_rank):
    """A grid that holds fewer bulk values than the rule's window (72): the rigid ranks below it follow the bulk's
    square-root law, so the count is the full grid's, 20, and its fitted edge within two Tracy–Widom scales of it
    (0.0005 and 0.0036 off; the continuation's law is the bulk's, but through two of Lambda's points where the bulk's
    k-th value sits at k - 1/2; it stopped at 10, or had no window at all)."""
    full = poisson_count(*_thin_tail(None), [], J=72)
    count, edge, _ = poisson_count(*_thin_tail(bottom_rank), [], J=72)
    assert count == full[0] == 20 and abs(edge - full[1]) < 2 * 0.003


def test_the_blend_is_one_lambda_below_the_fold_and_the_other_above_it():
    """blended: below the fold exactly the first Lambda, from (1 + width) times the fold exactly the second, a
    straight mix in s between."""
    g1, g2 = np.linspace(1.5, 3.0, 40), np.linspace(1.8, 3.5, 55)
    L1, L2 = 10.0 - 2.0 * g1, 12.0 - 3.0 * g2
    grid, lam = blended((g1, L1), (g2, L2), fold=2.0, width=0.05)
    lo, hi = np.interp(grid, g1, L1, right=0.0), np.interp(grid, g2, L2, right=0.0)
    assert np.allclose(lam[grid <= 2.0], lo[grid <= 2.0]) and np.allclose(lam[grid >= 2.1], hi[grid >= 2.1])
    mid = (grid > 2.0) & (grid < 2.1)
    w = (grid[mid] / 2.0 - 1.0) / 0.05
    assert np.allclose(lam[mid], (1 - w) * lo[mid] + w * hi[mid])


def test_the_soft_edge_count_is_the_airy_one_point_integral():
    """soft_edge_count (a cumulative trapezoid on a fixed grid) against scipy.integrate.quad of the beta = 1 one-point
    density, int_t^inf Ai from scipy.special.itairy: 0.17 values above the edge itself, 1/4 deep below it after the
    semiclassical count is taken off, none far above."""
    from scipy import integrate, special

    def rho(t):
        ai, aip, _, _ = special.airy(t)
        tail = 1.0 / 3.0 - special.itairy(t)[0] if t >= 0 else 1.0 / 3.0 + special.itairy(-t)[2]
        return aip**2 - t * ai**2 + 0.5 * ai * (1.0 - tail)

    for x in (1.0, 0.0, -2.0, -6.0):
        total = integrate.quad(rho, x, 12.0, limit=200)[0]
        semi = 2.0 / (3.0 * np.pi) * max(-x, 0.0) ** 1.5
        assert abs(soft_edge_count(x) - (total - semi)) < 2e-3
    assert abs(soft_edge_count(0.0) - 0.17) < 0.005 and abs(soft_edge_count(-30.0) - 0.25) < 0.01
    assert soft_edge_count(9.0) < 1e-6


def test_rigid_ranks_are_gamma_order_statistics():
    """Samples alone with rigidity gamma = 4: the r-th lies above s when a Gamma variable of shape 4 r and mean r is
    at most mu(s) (gamma = 1, the prediction's, is the Poisson process above)."""
    from scipy import special

    grid = np.linspace(2.0, 3.0, 41)
    tail = 0.008 * np.exp(-6.0 * (grid - 2.0))          # mu(s) = 8 exp(-6 (s - 2)) samples above s
    law = SampleLaw(grid, tail[:, None], (1000,))
    g, F = rank_laws(law, [], 5, gamma=4.0)
    mu = 1000 * np.interp(g, grid, tail)
    for r in range(1, 6):
        assert F[:, r - 1] == pytest.approx(special.gammainc(4.0 * r, 4.0 * mu), abs=1e-12)
