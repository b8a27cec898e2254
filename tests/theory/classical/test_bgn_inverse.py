"""Inverse BGN map and the spiked covariance form: exact round trips, mpmath, the two models' agreement.

Reference values: closed forms of docs/theory/classical.md §2 and docs/analyze.md §4-§5 evaluated with mpmath.
"""
import math

import mpmath as mp
import numpy as np
import pytest

from rmtfl.theory import (bgn_inverse, bgn_outlier, bgn_outlier_sd, spiked_covariance_inverse,
                          spiked_covariance_outlier, spiked_covariance_sd)

PSIS = [0.1, 0.5, 1.0, 2.0, 7.5]


@pytest.mark.parametrize("psi", PSIS)
def test_round_trip_theta_s_theta(psi):
    tc = psi ** 0.25
    th = tc * np.array([1.0 + 1e-6, 1.01, 1.2, 1.5, 2.0, 5.0, 40.0])
    for var in (1.0, 0.3, 17.0):
        s = bgn_outlier(th * math.sqrt(var), psi, var=var).singular_value
        back = bgn_inverse(s, psi, var=var).theta / math.sqrt(var)
        assert np.max(np.abs(back - th) / th) < 1e-12 if th[0] > tc * 1.001 else True
        assert np.max(np.abs(back[1:] - th[1:]) / th[1:]) < 1e-12


@pytest.mark.parametrize("psi", PSIS)
def test_overlaps_and_derivative_match_mpmath(psi):
    mp.mp.dps = 40
    P = mp.mpf(psi)
    for t in (1.3 * psi ** 0.25, 2.0 * psi ** 0.25, 3.7):
        T = mp.mpf(t)

        def s_of(x):
            return mp.sqrt((1 + x * x) * (P + x * x)) / x

        s = s_of(T)
        r = bgn_inverse(float(s), psi)
        fwd = bgn_outlier(t, psi)
        assert r.theta == pytest.approx(t, rel=1e-12)
        assert r.cos2_left == pytest.approx(fwd.cos2_left, rel=1e-10, abs=1e-13)
        assert r.cos2_right == pytest.approx(fwd.cos2_right, rel=1e-10, abs=1e-13)
        dsdt = mp.diff(s_of, T)
        assert r.dtheta_ds == pytest.approx(float(1 / dsdt), rel=1e-10)


def test_below_edge_and_arrays():
    r = bgn_inverse([1.0, 1.0 + math.sqrt(0.5), 3.0], 0.5)
    assert r.theta[0] == 0.0 and r.cos2_left[0] == 0.0 and r.dtheta_ds[0] == 0.0
    assert r.theta[1] == 0.0 and math.isinf(r.dtheta_ds[1])
    assert r.theta[2] > 0.5 ** 0.25
    with pytest.raises(ValueError, match="s"):
        bgn_inverse(-1.0, 1.0)
    with pytest.raises(ValueError, match="psi"):
        bgn_inverse(2.0, 0.0)


def test_outlier_sd_closed_form_and_transpose_symmetry():
    # docs/analyze.md §4.2: sd^2 = (1 - psi/t^4)(1 + psi + 2 t^2) / (2 d s^2); psi = 1, t = 2: 0.75 / d
    assert bgn_outlier_sd(2.0, 1.0, d=1000) == pytest.approx(math.sqrt(0.75 / 1000), rel=1e-14)
    # W^T is d x N with noise variance psi in its own convention: theta' = theta/sqrt(psi), same singular values
    for psi, t in ((0.5, 1.7), (2.0, 2.5), (3.0, 1.6)):
        d = 800
        a = bgn_outlier_sd(t, psi, d=d)
        b = bgn_outlier_sd(t, 1.0 / psi, d=int(psi * d), var=psi)
        assert a == pytest.approx(b, rel=1e-12)
    assert bgn_outlier_sd(0.5, 1.0, d=100) == 0.0


def test_spiked_covariance_is_bgn_with_gaussian_u():
    """ell = 1 + t^2/psi, lambda = s^2/psi, the population overlap is cos2_right, Paul's sd is the Gaussian-u sd."""
    for psi in (0.5, 1.0, 2.0, 4.0):
        for t in (1.2 * psi ** 0.25, 2.0, 3.0 * psi ** 0.25):
            ell = 1.0 + t * t / psi
            sc = spiked_covariance_outlier(ell, psi)
            bg = bgn_outlier(t, psi)
            assert sc.eigenvalue == pytest.approx(bg.singular_value ** 2 / psi, rel=1e-13)
            assert sc.cos2 == pytest.approx(bg.cos2_right, rel=1e-12)
            d = 1000
            sd_lam = spiked_covariance_sd(ell, psi, n=int(psi * d))
            sd_s = bgn_outlier_sd(t, psi, d=d, gaussian_u=True)
            assert sd_lam == pytest.approx(2.0 * bg.singular_value * sd_s / psi, rel=1e-12)
            inv = spiked_covariance_inverse(sc.eigenvalue, psi)
            assert inv.ell == pytest.approx(ell, rel=1e-12)
            assert inv.cos2 == pytest.approx(sc.cos2, rel=1e-12)


def test_spiked_covariance_reference_values():
    # ell = 3, phi = 2 (g = 1/2): lambda = 3 (1 + 0.25) = 3.75, cos2 = 0.875 / 1.25 = 0.7, dl/dlambda = 1/0.875
    r = spiked_covariance_inverse(3.75, 2.0)
    assert (r.ell, r.cos2, r.dell_dlambda) == pytest.approx((3.0, 0.7, 1 / 0.875), rel=1e-14)
    below = spiked_covariance_inverse(1.0, 2.0)
    assert below.ell == 1.0 and below.cos2 == 0.0
    assert spiked_covariance_outlier(1.5, 2.0).eigenvalue == pytest.approx((1 + 0.5 ** 0.5) ** 2, rel=1e-14)


@pytest.mark.slow
def test_outlier_sd_matches_simulation():
    """sd of the top singular value over 300 draws (d = 300) within 4 s.e. of the sd estimate (docs/analyze.md §4.2)."""
    rng = np.random.default_rng(3)
    d = 300
    for psi, f in ((0.5, 2.0), (2.0, 1.6)):
        N = int(psi * d)
        t = f * psi ** 0.25
        s = []
        for _ in range(300):
            G = rng.standard_normal((N, d)) / math.sqrt(d)
            u = rng.standard_normal(N)
            v = rng.standard_normal(d)
            G += t * np.outer(u / np.linalg.norm(u), v / np.linalg.norm(v))
            s.append(np.linalg.norm(G, 2))
        sd = bgn_outlier_sd(t, psi, d=d)
        assert abs(np.std(s) - sd) < 4 * sd / math.sqrt(2 * 300) + 0.003
