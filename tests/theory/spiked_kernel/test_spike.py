"""Tests of the one-step weight law: spike_constants, b_from_eta, eta_from_b, target_moments.

docs/theory/spiked_kernel.md §1.3; docs/conventions.md §10.2.

Reference values computed by hand: relu mu_1 = 1/2, E sigma'^2 = 1/2; linear target mu_1* = 1, E y^2 = 1,
E[y^2 z^2] = 3.
"""
import math

import pytest

from rmtfl.theory import b_from_eta, eta_from_b, spike_constants
from rmtfl.theory._spiked_kernel.spike import target_moments


def test_values_linear_target():
    d, N, n, eta = 256, 512, 1024, 4.0
    sc = spike_constants("relu", "linear", N=N, d=d, n=n, eta=eta)
    assert (sc.N, sc.d, sc.n) == (N, d, n)
    assert sc.A == 1 / d
    assert sc.B == pytest.approx(eta**2 * 0.25 / N)
    assert sc.b == pytest.approx(eta**2 * 0.25 * d / N)
    assert sc.eta_giant == pytest.approx(eta * math.sqrt(N))
    bh2 = 1 + ((d - 1) * 1 + 3 - 1) / n
    assert sc.beta_hat_norm2 == pytest.approx(bh2)
    assert (sc.mu1_star, sc.Ey2, sc.Ey2z2) == (pytest.approx(1.0), pytest.approx(1.0), pytest.approx(3.0))
    assert sc.cos2_hhat == pytest.approx((1 + 2 / n) / bh2)
    assert sc.residual == pytest.approx(eta**2 * 0.25 / (N * n))
    assert sc.A_prime == pytest.approx(1 / d + eta**2 * 0.5 / (N * n))
    assert sc.B_prime == sc.B
    assert sc.spike_variance == pytest.approx(1 + d * sc.B)
    # leading-order finite-phi forms of the spec
    phi = n / d
    assert sc.b_hhat == pytest.approx(sc.b * (1 + 1 / phi), rel=2e-2)


def test_giant_step_example():
    # docs/conventions.md §11: eta_G = 64 at N = 1024 is eta_1 = 2
    sc = spike_constants("relu", "linear", N=1024, d=64, n=100, eta=2.0)
    assert sc.eta_giant == pytest.approx(64.0)
    assert sc.kappa2 == pytest.approx((64 * 0.5 / 1024) ** 2)  # kappa = eta_G mu_1 / m


def test_eta_b_roundtrip_and_noise():
    for tgt in ("linear", "tanh", "hermite(0, 1, 0.5)"):
        eta = eta_from_b("relu", tgt, psi=6.0, b=3.0)
        assert b_from_eta("relu", tgt, psi=6.0, eta=eta) == pytest.approx(3.0)
        # only psi = N/d enters: the target-aligned b of spike_constants at N/d = 6 is the same
        assert spike_constants("relu", tgt, N=300, d=50, n=100, eta=eta).b == pytest.approx(3.0)
    tm = target_moments("hermite(0, 1, 0.5)", noise=0.1)
    assert (tm.mu1_star, tm.Ey2, tm.Ey2z2) == (pytest.approx(1.0), pytest.approx(1.51), pytest.approx(5.51))


def test_results_are_json_ready():
    import json

    sc = spike_constants("relu", "linear", N=64, d=32, n=64, eta=1.0)
    d = sc.to_dict()
    assert d["N"] == 64 and "m" not in d
    json.dumps(d)
    assert json.loads(json.dumps(target_moments("linear").to_dict()))["mu1_star"] == pytest.approx(1.0)


def test_bad_input():
    with pytest.raises(ValueError, match="single-index"):
        spike_constants("relu", ["linear", "he2"], N=10, d=10, n=10, eta=1.0)
    with pytest.raises(ValueError, match="d must be"):
        spike_constants("relu", "linear", N=10, d=1, n=10, eta=1.0)
    with pytest.raises(ValueError, match="N must be"):
        spike_constants("relu", "linear", N=0, d=10, n=10, eta=1.0)
    with pytest.raises(ValueError, match="non-zero"):
        eta_from_b("relu", "he2", psi=1.0, b=1.0)
    with pytest.raises(ValueError, match="psi must be"):
        b_from_eta("relu", "linear", psi=0.0, eta=1.0)
    with pytest.raises(TypeError):
        spike_constants("relu", "linear", 1.0, 10, 10, 10)  # sizes are keyword-only
