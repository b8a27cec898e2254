"""benchmarks/diag_per_batch_count.py: the reduced per-batch model (docs/theory/two_step_attempts.md §5)."""
import math

import numpy as np
import pytest

from benchmarks.diag_per_batch_count import batch_model, draw_spectrum, spectrum_of


@pytest.fixture(scope="module")
def model():
    # the quadratic sigma with He1 + He2/2 at (0, 0.4), N = 1000: single samples make outliers
    return batch_model("hermite(0, 1, 0.5)", "hermite(0, 1, 0.5)", N=1000, psi=1.0, phi=2.0, eta1=1.0,
                       eta2=1000**0.4)


def test_without_extreme_samples_the_bulk_keeps_its_top_values(model):
    vals, above = spectrum_of(model, np.zeros((0, model["wa"].size)), np.zeros((0, model["wa"].size)), 0.0,
                              np.zeros(0))
    spikes = [v for v in model["spikes"] if v > model["bulk"].edge]
    assert above == len(spikes) and list(vals[:above]) == sorted(spikes, reverse=True)
    top = model["bulk"].top_values(vals.size - above)
    np.testing.assert_allclose(vals[above:], top, rtol=2e-3)   # two grids of the same density


def test_one_column_sits_at_its_own_outlier_location(model):
    from rmtfl.theory._two_step.widened_bulk import column_spike

    bulk, side = model["bulk"], model["sides"][0]
    v = side["v"][0]                                       # the most extreme sub-bin: far above its threshold
    vals, above = spectrum_of(model, v[None], side["v2"][:1], np.zeros((1, 1)), np.zeros(1))
    r = bulk.functions(bulk.a)[:, 5]
    s = column_spike(bulk, bulk.a, bulk.wa, v - 1.0 - r, rtol=1e-10)
    assert s is not None and above == len([x for x in model["spikes"] if x > bulk.edge]) + 1
    assert min(abs(vals[:above] - s)) < 2e-3 * s            # the root interpolated on the model's grid in s


def test_a_column_below_its_threshold_lifts_the_bulk_by_less_than_one_value(model):
    side = model["sides"][0]
    weak = [i for i in range(side["v"].shape[0])
            if model["N"] / model["d"] * float((model["tau_r"][0] * model["wa"]) @ side["v"][i]) < 1.0]
    assert weak                                            # sub-threshold columns exist at this point
    v, v2 = side["v"][weak[0]][None], side["v2"][weak[0]][None]
    base, above0 = spectrum_of(model, v[:0], v2[:0], 0.0, np.zeros(0))
    lifted, above1 = spectrum_of(model, v, v2, np.zeros((1, 1)), np.zeros(1))
    assert above1 == above0                                # no outlier of its own
    n = min(base.size, lifted.size) - 1
    assert np.all(lifted[:n] >= base[:n] - 1e-9) and lifted[above0] > base[above0]
    assert np.all(lifted[above0 + 1:n + 1] <= base[above0:n] + 1e-9)   # the shift is at most one value


def test_batches_are_reproducible_from_the_seed(model):
    a = draw_spectrum(model, np.random.default_rng(3))
    b = draw_spectrum(model, np.random.default_rng(3))
    np.testing.assert_array_equal(a[0], b[0])
    assert math.isfinite(a[0][0]) and a[1] >= 1


def test_joint_roots_without_columns_are_the_spikes_of_the_master_equation():
    from scipy import optimize

    from rmtfl.theory import get_activation, make_target
    from rmtfl.theory._two_step.finite_n import finite_n_grams, finite_n_setup, master_eigs, weighted_gram_u

    quad = "hermite(0, 1, 0.5)"
    m = batch_model(quad, quad, N=1000, psi=1.0, phi=2.0, eta1=1.0, eta2=1000**0.4, joint=True)
    W, r = m["wa"].size, m["P"]["G_V"].shape[0]
    vals, above = spectrum_of(m, np.zeros((0, W)), np.zeros((0, W)), np.zeros((0, 0)), np.zeros(0),
                              U=np.zeros((r, 0)))
    st = finite_n_setup(get_activation(quad), make_target(quad), phi=2.0, batch="reused", phi2=None)
    _, G_V, _, _, g, wg, *_ = finite_n_grams(get_activation(quad), st, eta1=1.0, eta2=1000**0.4, N=1000, bulk=False)
    bulk = m["bulk"]
    top = optimize.brentq(lambda s: master_eigs(bulk, s, weighted_gram_u(g, wg), G_V, g, 1000)[0] - 1.0,
                          bulk.edge * 1.01, 2 * vals[0])
    assert above >= 1 and abs(vals[0] - top) < 2e-3 * top        # the root interpolated on the model's grid in s
