"""Kernel Gram spectrum at n ∝ d (docs/theory/kernel_spectra.md §3): closed forms, bad input, simulation."""
import math

import numpy as np
import pytest
import scipy.linalg as sla

from rmtfl.theory import hermite_coeffs, kernel_gram_spectrum, KernelGramSpectrum, mp_cdf, mp_density, nonlinear_norm


def test_k0_bulk_is_shifted_scaled_mp():
    s = kernel_gram_spectrum("tanh", phi=0.5)
    mu = hermite_coeffs("tanh", 1)
    assert s.scale == pytest.approx(mu[1] ** 2, rel=1e-12)
    assert s.shift == pytest.approx(nonlinear_norm("tanh") ** 2, rel=1e-12)
    x = np.linspace(0.0, 2.0, 51)
    assert np.allclose(s.density(x), mp_density((x - s.shift) / s.scale, 0.5) / s.scale, atol=1e-14)
    assert np.allclose(s.cdf(x), mp_cdf((x - s.shift) / s.scale, 0.5), atol=1e-14)
    assert s.quantile(0.5) == pytest.approx(float(s.shift + s.scale * 0.0) + s.scale * float(
        __import__("rmtfl").theory.mp_quantile(0.5, 0.5)), rel=1e-12)
    assert s.outliers == () and isinstance(s, KernelGramSpectrum)


def test_b_spike_closed_form_and_threshold():
    d = 1000
    v = np.eye(d)[0]
    for b in (1.0, 4.0):
        s = kernel_gram_spectrum("relu", phi=2.0, gamma=(1 / d, b / d, v))
        o = [o for o in s.outliers if o.kind == "B-spike"][0]
        # relu is 1-homogeneous: scale = mu1^2 (A d) = 1/4 at tau = 1 + b/d
        assert s.scale == pytest.approx(0.25, rel=1e-12)
        assert o.location == pytest.approx(s.shift + 0.25 * (1 + b) * (2.0 + 1 / b), rel=1e-12)
        assert o.cos2_Xw == pytest.approx(1 - 1 / (2.0 * b * b), rel=1e-12)
    below = kernel_gram_spectrum("relu", phi=2.0, gamma=(1 / d, 0.5 / d, v))
    o = [o for o in below.outliers if o.kind == "B-spike"][0]
    assert not o.exists and math.isnan(o.location) and o.threshold == pytest.approx(2 ** -0.5)


def test_constant_mode_large_strength():
    s = kernel_gram_spectrum("relu", phi=1.0, d=5000)
    o = s.outliers[0]
    # theta G(lam) = 1 with G ~ 1/lam + m1/lam^2: lam ~ theta + mean of the bulk (shift + scale)
    assert o.location == pytest.approx(o.strength + s.shift + s.scale, abs=0.02)


def test_bad_input():
    with pytest.raises(ValueError, match="phi"):
        kernel_gram_spectrum("relu", phi=0.0)
    with pytest.raises(ValueError, match="phi"):
        kernel_gram_spectrum("relu", phi=float("nan"))
    with pytest.raises(ValueError, match="activation"):
        kernel_gram_spectrum("nope", phi=1.0)
    with pytest.raises(ValueError, match="mu_1"):
        kernel_gram_spectrum("he2", phi=1.0)
    with pytest.raises(ValueError, match="gamma"):
        kernel_gram_spectrum("relu", phi=1.0, gamma=np.eye(3))
    with pytest.raises(ValueError, match=r"\bd\b"):
        kernel_gram_spectrum("relu", phi=1.0, gamma=0.5)


@pytest.mark.slow
@pytest.mark.parametrize("b", [1.0, 4.0])
def test_k1_outliers_against_simulation(b):
    # acceptance: n = 2000, d = 1000, within 3 % or 3 s.e. (docs/theory/kernel_spectra.md §3.3)
    from rmtfl.numerics import kernel_gram

    n, d = 2000, 1000
    gam = (1 / d, b / d, np.eye(d)[0])
    pred = kernel_gram_spectrum("relu", phi=n / d, gamma=gam)
    const, spike = pred.outliers
    tops = []
    for seed in range(3):
        X = np.random.default_rng(seed).standard_normal((n, d))
        K = kernel_gram("relu", X, gamma=gam)
        tops.append(sla.eigh(K, eigvals_only=True, subset_by_index=(n - 2, n - 1))[::-1])
    tops = np.array(tops)
    m, se = tops.mean(0), tops.std(0, ddof=1) / math.sqrt(3)
    assert abs(m[0] - const.location) <= max(0.03 * const.location, 3 * se[0])
    assert abs(m[1] - spike.location) <= max(0.03 * spike.location, 3 * se[1])
