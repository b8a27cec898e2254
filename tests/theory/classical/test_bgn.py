"""BGN outliers: docs/theory/two_step.md §10 reference values, mpmath, D-transform agreement, properties, invalid inputs."""
import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rmtfl.theory import (
    DTransformBulk, bgn_dtransform, bgn_outlier, bgn_threshold, dtransform_threshold, mp_atom, mp_density,
    mp_edges,
)

# docs/theory/two_step.md §10 (closed forms, <= 1e-8)
REFERENCE = [
    (0.5, 2.0, (2.3717082451, 0.8611111111, 0.775)),
    (2.0, 2.0, (2.7386127875, 0.5833333333, 0.7)),
    (1.0, 1.5, (2.1666666667, 0.5555555556, 0.5555555556)),
    (0.5, 0.7, (1.7071067812, 0.0, 0.0)),
]


@pytest.mark.parametrize("psi,theta,ref", REFERENCE)
def test_reference_values(psi, theta, ref):
    assert tuple(bgn_outlier(theta, psi)) == pytest.approx(ref, abs=1e-10)


def test_result_is_a_frozen_result_that_unpacks():
    import dataclasses
    import json

    r = bgn_outlier(2.0, 0.5)
    s, wl, wr = r
    assert (s, wl, wr) == (r.singular_value, r.cos2_left, r.cos2_right)
    assert json.loads(json.dumps(r.to_dict())) == {"singular_value": s, "cos2_left": wl, "cos2_right": wr}
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.singular_value = 0.0
    arr = bgn_outlier(np.array([0.5, 2.0]), 0.5).to_dict()
    assert len(arr["singular_value"]) == 2
    with pytest.raises(TypeError):
        bgn_outlier(2.0, 0.5, 1.0)  # var is keyword-only


def test_thresholds():
    assert bgn_threshold(0.5) == pytest.approx(0.8408964153, abs=1e-10)
    assert bgn_threshold(2.0) == pytest.approx(1.1892071150, abs=1e-10)
    assert bgn_threshold(2.0, var=4.0) == pytest.approx(2 * 1.1892071150, abs=1e-9)


def test_mpmath_30_digits():
    # exact rationals: psi = 1/2, theta = 2 -> s^2 = 5 * 4.5 / 4 = 45/8, cos2_left = 31/36, cos2_right = 31/40
    r = bgn_outlier(2, "0.5", dps=40)
    with mp.workdps(40):
        assert abs(r.singular_value - mp.sqrt(mp.mpf(45) / 8)) < mp.mpf(10) ** -30
        assert abs(r.cos2_left - mp.mpf(31) / 36) < mp.mpf(10) ** -30
        assert abs(r.cos2_right - mp.mpf(31) / 40) < mp.mpf(10) ** -30
    assert float(r.singular_value) == pytest.approx(bgn_outlier(2.0, 0.5).singular_value, abs=1e-15)


def test_psi_one_and_large_theta():
    th = np.array([1.2, 3.0, 10.0])
    r = bgn_outlier(th, 1.0)
    np.testing.assert_allclose(r.singular_value, th + 1 / th, atol=1e-14)
    np.testing.assert_allclose(r.cos2_left, 1 - th**-2.0, atol=1e-14)
    np.testing.assert_allclose(r.cos2_right, 1 - th**-2.0, atol=1e-14)
    # s = theta + (1 + psi)/(2 theta) + O(theta^-3)
    big = 1e3
    assert bgn_outlier(big, 3.0).singular_value - big - 4.0 / (2 * big) == pytest.approx(0.0, abs=1e-8)


def test_variance_scaling():
    r1 = bgn_outlier(3.0, 0.7, var=2.25)
    r0 = bgn_outlier(3.0 / 1.5, 0.7)
    assert r1.singular_value == pytest.approx(1.5 * r0.singular_value, rel=1e-14)
    assert r1.cos2_left == pytest.approx(r0.cos2_left, abs=1e-14)


@pytest.mark.parametrize("psi", [0.5, 2.0, 1.0, 4.0])
def test_dtransform_agrees_with_closed_form(psi):
    # docs/theory/two_step.md §2.2: psi < 1, psi = 1 and psi > 1 (atom at 0 included), to 1e-10
    tc = bgn_threshold(psi)
    th = np.array([0.5 * tc, 1.01 * tc, 1.3 * tc, 2.0, 5.0])
    a = np.array(tuple(bgn_outlier(th, psi)))
    b = np.array(tuple(bgn_dtransform(th, psi)))
    np.testing.assert_allclose(b, a, atol=1e-10, rtol=0)


def test_dtransform_explicit_density_and_threshold():
    psi = 3.0
    bulk = DTransformBulk(psi, density=lambda l: mp_density(l, psi), support=mp_edges(psi), atom=mp_atom(psi))
    assert dtransform_threshold(bulk) == pytest.approx(bgn_threshold(psi), abs=1e-10)
    assert tuple(bgn_dtransform(2.5, bulk=bulk)) == pytest.approx(tuple(bgn_outlier(2.5, psi)), abs=1e-10)
    with pytest.raises(ValueError, match="mass"):
        DTransformBulk(psi, density=lambda l: mp_density(l, psi), support=mp_edges(psi), atom=0.0)


def test_dtransform_from_eigenvalue_sample_quantiles():
    # an eigenvalue "sample" placed at MP quantiles approximates the MP law; the D-transform
    # prediction then agrees with the closed form to O(1/n) away from the threshold
    from rmtfl.theory import mp_quantile

    psi, n = 0.5, 20000
    ev = mp_quantile((np.arange(n) + 0.5) / n, psi)
    r = bgn_dtransform(np.array([2.0, 3.0]), psi, eigenvalues=ev)
    ref = bgn_outlier(np.array([2.0, 3.0]), psi)
    np.testing.assert_allclose(np.array(tuple(r)), np.array(tuple(ref)), atol=2e-3)
    # the empirical D has a pole at the top value: a tiny theta still gives a root just above it
    small = bgn_dtransform(0.05, psi, eigenvalues=ev)
    assert small.singular_value >= math.sqrt(ev.max())


@settings(max_examples=60, deadline=None)
@given(st.floats(0.05, 20.0))
def test_continuity_at_threshold(psi):
    tc = bgn_threshold(psi)
    below = bgn_outlier(tc * (1 - 1e-9), psi)
    above = bgn_outlier(tc * (1 + 1e-9), psi)
    assert above.singular_value == pytest.approx(below.singular_value, abs=1e-6)
    assert above.cos2_left == pytest.approx(0.0, abs=1e-6)
    assert above.cos2_right == pytest.approx(0.0, abs=1e-6)


@settings(max_examples=60, deadline=None)
@given(st.floats(0.05, 20.0), st.lists(st.floats(0.0, 30.0), min_size=2, max_size=6))
def test_monotone_in_theta(psi, thetas):
    th = np.sort(np.array(thetas))
    r = bgn_outlier(th, psi)
    for arr in r:
        assert np.all(np.diff(arr) >= -1e-12)
        assert np.all(np.isfinite(arr))
    assert np.all((r.cos2_left >= 0) & (r.cos2_left <= 1) & (r.cos2_right >= 0) & (r.cos2_right <= 1))
    assert np.all(r.singular_value >= 1 + math.sqrt(psi) - 1e-12)


@settings(max_examples=40, deadline=None)
@given(st.floats(0.05, 20.0), st.floats(0.1, 10.0))
def test_transpose_symmetry(psi, theta):
    # W^T is d x N with entries N(0, 1/d) = N(0, psi/N): psi -> 1/psi, var psi; left/right swap
    a = bgn_outlier(theta, psi)
    b = bgn_outlier(theta, 1 / psi, var=psi)
    assert b.singular_value == pytest.approx(a.singular_value, rel=1e-12)
    assert b.cos2_left == pytest.approx(a.cos2_right, abs=1e-12)
    assert b.cos2_right == pytest.approx(a.cos2_left, abs=1e-12)


@pytest.mark.parametrize("call,match", [
    (lambda: bgn_outlier(-1.0, 1.0), "theta"),
    (lambda: bgn_outlier(1.0, 0.0), "psi"),
    (lambda: bgn_outlier(1.0, 1.0, var=0.0), "var"),
    (lambda: bgn_outlier(float("nan"), 1.0), "theta"),
    (lambda: bgn_outlier([1.0, float("inf")], 1.0), "theta"),
    (lambda: bgn_threshold(-2.0), "psi"),
    (lambda: bgn_dtransform(1.0, -1.0), "psi"),
    (lambda: bgn_dtransform(1.0), "psi"),
    (lambda: bgn_dtransform(-1.0, 1.0), "theta"),
    (lambda: DTransformBulk(1.0), "exactly one"),
    (lambda: DTransformBulk(1.0, eigenvalues=[-1.0, 2.0]), "eigenvalues"),
])
def test_invalid_inputs(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_issue14_huge_spikes_and_bad_bulks():
    from rmtfl.theory import bgn_dtransform, bgn_outlier, dtransform_threshold
    r = bgn_outlier(1e300, 0.5)  # the limits stay finite: s ~ theta, cosines -> 1
    assert r.singular_value == pytest.approx(1e300, rel=1e-12) and r.cos2_left == 1.0 and r.cos2_right == 1.0
    with pytest.raises(ValueError, match="theta"):
        bgn_dtransform(1e300, 2.0)
    with pytest.raises(ValueError, match="atom"):
        bgn_dtransform(2.0, 2.0, atom=np.nan)
    with pytest.raises(TypeError, match="bulk"):
        dtransform_threshold("mp")
