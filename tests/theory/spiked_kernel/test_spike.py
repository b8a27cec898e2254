"""Tests of rmtfl.theory._spiked_kernel.spike (docs/theory/spiked_kernel.md §1.3; docs/conventions.md §10.2).

Reference values computed by hand: relu mu_1 = 1/2, E sigma'^2 = 1/2; linear target mu_1* = 1, E y^2 = 1,
E[y^2 z^2] = 3.
"""
import math

import pytest

from rmtfl.theory._spiked_kernel.spike import b_from_eta, eta_from_b, spike_constants, target_moments


def test_values_linear_target():
    d, m, n, eta = 256, 512, 1024, 4.0
    sc = spike_constants("relu", "linear", eta, n, m, d)
    assert sc.A == 1 / d
    assert sc.B == pytest.approx(eta**2 * 0.25 / m)
    assert sc.b == pytest.approx(eta**2 * 0.25 * d / m)
    assert sc.eta_giant == pytest.approx(eta * math.sqrt(m))
    bh2 = 1 + ((d - 1) * 1 + 3 - 1) / n
    assert sc.beta_hat_norm2 == pytest.approx(bh2)
    assert sc.cos2_hhat == pytest.approx((1 + 2 / n) / bh2)
    assert sc.residual == pytest.approx(eta**2 * 0.25 / (m * n))
    assert sc.A_prime == pytest.approx(1 / d + eta**2 * 0.5 / (m * n))
    assert sc.B_prime == sc.B
    assert sc.spike_variance == pytest.approx(1 + d * sc.B)
    # leading-order finite-phi forms of the spec
    phi = n / d
    assert sc.b_hhat == pytest.approx(sc.b * (1 + 1 / phi), rel=2e-2)


def test_giant_step_example():
    # docs/conventions.md §11: eta_G = 64 at m = 1024 is eta_1 = 2
    sc = spike_constants("relu", "linear", 2.0, 100, 1024, 64)
    assert sc.eta_giant == pytest.approx(64.0)
    assert sc.kappa2 == pytest.approx((64 * 0.5 / 1024) ** 2)  # kappa = eta_G mu_1 / m


def test_eta_b_roundtrip_and_noise():
    for tgt in ("linear", "tanh", "hermite(0, 1, 0.5)"):
        eta = eta_from_b("relu", tgt, 3.0, 300, 50)
        assert b_from_eta("relu", tgt, eta, 300, 50) == pytest.approx(3.0)
    mu1s, Ey2, Ey2z2 = target_moments("hermite(0, 1, 0.5)", noise=0.1)
    assert (mu1s, Ey2, Ey2z2) == (pytest.approx(1.0), pytest.approx(1.51), pytest.approx(5.51))


def test_bad_input():
    with pytest.raises(ValueError, match="single-index"):
        spike_constants("relu", ["linear", "he2"], 1.0, 10, 10, 10)
    with pytest.raises(ValueError, match="d must be"):
        spike_constants("relu", "linear", 1.0, 10, 10, 1)
    with pytest.raises(ValueError, match="non-zero"):
        eta_from_b("relu", "he2", 1.0, 10, 10)
