"""The count from the mean count function below the spikes (benchmarks/diag_poisson_count.py;
docs/theory/two_step_attempts.md §29)."""
import numpy as np
from scipy.stats import poisson

from benchmarks.diag_count_law import rank_laws
from benchmarks.diag_poisson_count import draws_lambda, poisson_count
from rmtfl.numerics import edge_outlier_count
from rmtfl.theory._classical.edge_count import edge_positions
from rmtfl.theory._two_step.sample_order import SampleLaw


def _bulk(n=80, edge=2.0, scale=0.01):
    return edge - scale * edge_positions(n)


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


def test_a_rigid_bulk_under_well_separated_spikes_counts_the_spikes():
    """Lambda of a bulk alone (its k-th value where k - 1/2 lie above) with two spikes far above it: every spectrum
    of the lattice counts 2, as the rule counts that spectrum itself."""
    bulk = _bulk()
    xs = np.concatenate([[bulk[0] + 0.5 * (bulk[0] - bulk[1])], bulk])[::-1]
    ns = np.concatenate([[0.0], np.arange(bulk.size) + 0.5])[::-1]
    grid = np.linspace(bulk[-1], xs[-1], 600)
    lam = np.interp(grid, xs, ns)
    count, edge = poisson_count(grid, lam, [3.0, 2.6], J=12)
    assert count == 2 == edge_outlier_count(np.concatenate([[3.0, 2.6], bulk]), window=12).count
    assert abs(edge - 2.0) < 0.01


def test_the_draws_lambda_is_their_mean_count_below_the_spikes():
    """Draws with one spike far above a bulk: the spike is taken out and Lambda at each s is the draws' mean count
    of the rest above s."""
    rng = np.random.default_rng(3)
    S = np.stack([np.concatenate([[5.0 + 0.1 * rng.standard_normal()], _bulk() + 0.005 * rng.standard_normal()])
                  for _ in range(20)])
    S = -np.sort(-S, axis=1)
    spikes, grid, lam = draws_lambda(S, 12)
    assert spikes.size == 1 and abs(spikes[0] - np.median(S[:, 0])) < 1e-12
    for s in (1.9, 1.95, 1.99):
        assert abs(np.interp(s, grid, lam) - (S[:, 1:] > s).sum(1).mean()) < 0.6


def test_the_soft_edge_count_is_the_airy_one_point_integral():
    """soft_edge_count (a cumulative trapezoid on a fixed grid) against scipy.integrate.quad of the beta = 1 one-point
    density, int_t^inf Ai from scipy.special.itairy: 0.17 values above the edge itself, 1/4 deep below it after the
    semiclassical count is taken off, none far above."""
    from scipy import integrate, special

    from benchmarks.diag_poisson_count import soft_edge_count

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


def test_a_variant_of_joined_parts_lives_only_inside_its_block():
    """--mode parts joined by + change the prediction inside the block and leave it as it was; the quadratic
    sigma's block does not apply to other activations; attempt 24's unified law stands alone."""
    from benchmarks.diag_poisson_count import variant
    from rmtfl.theory._two_step import finite_n, sample_coupling, sample_order

    before = (finite_n.WidenedBulk, sample_order.extreme_eigenvalues, sample_coupling.COUPLE_SAMPLES)
    before_law = sample_order.tail_law
    with variant("without+whole+coupled", "tanh", "linear", 1000.0):
        assert finite_n.WidenedBulk is not before[0]
        assert sample_order.extreme_eigenvalues is not before[1] and sample_coupling.COUPLE_SAMPLES
    assert (finite_n.WidenedBulk, sample_order.extreme_eigenvalues, sample_coupling.COUPLE_SAMPLES) == before
    assert variant("block", "tanh", "hermite(0, 1, 0.5)", 1000.0) is None
    # attempt 24's unified law brings its own whole-law eigenvalue and group: it joins no other part
    with variant("unified", "tanh", "linear", 1000.0):
        assert sample_coupling.COUPLE_SAMPLES and sample_order.tail_law is not before_law
    assert sample_order.tail_law is before_law and sample_coupling.COUPLE_SAMPLES == before[2]
    import pytest

    with pytest.raises(ValueError, match="stands alone"):
        variant("unified+group", "tanh", "linear", 1000.0)


def test_the_poisson_reading_takes_the_predicted_roots_in_the_order_of_their_medians():
    """Attempt 31's reading (poisson_reading) at a point with single samples (the quadratic sigma with He1 + He2/2 at
    (0.3, 0.3), N = 1000): a count the rule can reach on the process's spectra, the values the prediction's own
    roots, the spikes of P first; at a point without single samples (tanh, (0, 0)) no reading."""
    from benchmarks.diag_count_law import captured
    from benchmarks.diag_poisson_count import poisson_reading
    from rmtfl.theory import two_step

    quad = "hermite(0, 1, 0.5)"
    with captured() as seen:
        p = two_step(quad, quad, psi=1.0, phi=2.0, eta1=1000**0.3, eta2=1000**0.3, N=1000)
    count, edge, values = poisson_reading(seen, J=26, airy=True)
    r = seen["result"]
    assert 2 <= count <= len(r.locations) + len(r.samples) and len(values) == count
    assert np.allclose(values[:2], r.locations[:2])           # the two spikes of P stand far above every sample
    roots = np.array([o.singular_value for o in p.outliers] + [v for v, _, _ in r.samples])
    assert all(np.min(np.abs(roots - v)) < 1e-12 for v in values)
    assert edge < values[-1] and abs(edge / p.bulk_edge - 1.0) < 0.1       # the rule's edge near the fold
    with captured() as seen:
        two_step("tanh", quad, psi=1.0, phi=2.0, eta1=1.0, eta2=1.0, N=1000)
    assert poisson_reading(seen, J=26) is None


def test_the_blend_is_one_lambda_below_the_fold_and_the_other_above_it():
    """Attempt 32's blended_lambda: below the fold exactly the first Lambda, from (1 + width) times the fold exactly
    the second, the straight mix of the two in s / fold between, on the union of the two grids."""
    from benchmarks.diag_poisson_count import blended_lambda

    g1, g2 = np.linspace(1.0, 3.0, 101), np.linspace(1.5, 4.0, 77)
    L1, L2 = 10.0 * np.exp(-2.0 * (g1 - 1.0)), 12.0 * np.exp(-1.5 * (g2 - 1.5))
    grid, lam = blended_lambda((g1, L1), (g2, L2), fold=2.0, width=0.05)
    assert np.array_equal(grid, np.unique(np.concatenate([g1, g2])))
    below, above = grid <= 2.0, grid >= 2.1
    assert np.allclose(lam[below], np.interp(grid[below], g1, L1))
    assert np.allclose(lam[above], np.interp(grid[above], g2, L2, right=0.0))
    s = 2.05                                                           # halfway: w = 1/2
    ref = 0.5 * (np.interp(s, g1, L1) + np.interp(s, g2, L2))
    assert abs(np.interp(s, grid, lam) - ref) < 0.02 * ref


def test_the_blend_part_refuses_a_width_outside_its_range(capsys):
    """--part blend: a --width outside (0, 1] or an unknown --above or --values part is a usage error (exit 2)
    naming it."""
    import pytest

    from benchmarks.diag_poisson_count import main

    for bad in (["--width", "0"], ["--width", "1.5"], ["--above", "group+nothing"], ["--values", "whole+nothing"]):
        with pytest.raises(SystemExit) as e:
            main(["--part", "blend", "--cache", "unused.json", *bad])
        assert e.value.code == 2
        assert bad[0] in capsys.readouterr().err
