"""Single-sample outliers of W2 (docs/theory/two_step.md §8.3) and the count of predicted roots (§9.2).

Reference values: Gaussian tail quantiles (scipy.stats.norm), the spiked-covariance (BBP) location
s^2 = psi l + l/(l - 1) of one column of variance l/d in an N x d matrix with entries N(0, 1/d).
"""
from __future__ import annotations

import math

import numpy as np
from scipy import stats

from rmtfl.theory import get_activation, make_target, two_step
from rmtfl.theory._two_step import finite_n as F
from rmtfl.theory._two_step.sample_spikes import bulk_cut, extreme_samples, truncated_rule
from rmtfl.theory._two_step.two_step import predicted_count


def test_extreme_samples_of_a_linear_target_are_gaussian_order_statistics():
    n = 2000
    y, z = extreme_samples(make_target("linear"), n, ranks=3)
    for k, v in enumerate(np.abs(y), 1):
        ref = stats.norm.isf((k - 0.3) / (n + 0.4) / 2)       # P(|z| > v) = (k - 0.3)/(n + 0.4)
        assert abs(v - ref) < 1e-3                              # grid spacing 4.5e-4
    assert np.allclose(y, z)


def test_bulk_cut_and_truncated_rule():
    lo, hi = bulk_cut(make_target("linear"), 1000, ranks=10)
    assert abs(hi + lo) < 1e-3 and abs(2 * stats.norm.sf(hi) - 10 / 1000) < 1e-5
    z, w = truncated_rule(lo, hi)
    assert abs(w.sum() - (stats.norm.cdf(hi) - stats.norm.cdf(lo))) < 1e-13
    m2 = stats.norm.expect(lambda x: x * x, lb=lo, ub=hi)
    assert abs(w @ z**2 - m2) < 1e-12
    assert bulk_cut(make_target("linear"), 1000, ranks=0) is None


def _mp_bulk(N, psi=1.0):
    """The finite-N bulk at vanishing steps: a Marchenko-Pastur profile."""
    A, T = get_activation("tanh"), make_target("linear")
    st = F.finite_n_setup(A, T, phi=2.0, batch="reused", phi2=None)
    *_, tn, g, wg, rows = F.finite_n_grams(A, st, eta1=1e-9, eta2=1e-9, N=N, bulk=True)
    o = np.argsort(tn)
    return F._Bulk(st, T, eta1=1e-9, eta2=1e-9, N=N, psi=psi, tn=tn[o], rows=tuple(r[o] for r in rows),
                   second_layer="gaussian")


def test_column_spike_is_the_spiked_covariance_location():
    for psi in (1.0, 0.5):
        bulk = _mp_bulk(2000, psi)
        assert abs(bulk.edge - (1 + math.sqrt(psi))) < 1e-6
        for ell in (2.5, 4.0):
            s = F.column_spike(bulk, bulk.a, bulk.wa, np.full(bulk.a.size, ell - 1.0))
            assert abs(s**2 - (psi * ell + ell / (ell - 1))) < 1e-6 * s**2
        below = 1 + 1 / math.sqrt(psi) - 0.2                    # under the BBP threshold l = 1 + 1/sqrt(psi)
        assert F.column_spike(bulk, bulk.a, bulk.wa, np.full(bulk.a.size, below - 1.0)) is None


def test_predicted_count_drops_roots_at_the_edge():
    assert predicted_count([10.0, 3.0], 2.0, N=1000, psi=1.0) == 2
    assert predicted_count([10.0, 2.0005], 2.0, N=1000, psi=1.0) == 1
    assert predicted_count([], 2.0, N=1000, psi=1.0) == 0


def test_bounded_target_has_no_sample_outliers_and_heavy_one_does():
    kw = dict(psi=1.0, phi=2.0, eta1=1000**0.4, eta2=1000**0.2, N=1000)
    light = two_step("tanh", "tanh", **kw)
    assert all(o.kind == "spike" for o in light.outliers)
    heavy = two_step("erf", "hermite(0, 1, 0, 0.4082482904638631)", **kw)
    samples = [o for o in heavy.outliers if o.kind == "sample"]
    assert samples and all(o.cos2_target == 0.0 and o.theta > 0 for o in samples)
    assert heavy.outliers[0].kind == "spike" and heavy.outliers[0].singular_value > 5 * samples[0].singular_value
