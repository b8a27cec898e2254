"""The count from the mean count function below the spikes (benchmarks/diag_poisson_count.py;
docs/theory/two_step_attempts.md §29): the diagnostic's own parts (the reading's count, soft edge and blend are the
theory's: tests/theory/two_step/test_poisson_count.py)."""
import numpy as np

from benchmarks.diag_poisson_count import draws_lambda
from rmtfl.theory._classical.edge_count import edge_positions


def _bulk(n=80, edge=2.0, scale=0.01):
    return edge - scale * edge_positions(n)


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
