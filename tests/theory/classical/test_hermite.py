"""Hermite coefficients against closed forms and 30-digit mpmath quadrature.

Reference values: docs/conventions.md §2.1 and §11 (ReLU), and direct mpmath.quad
of E[f(z) He_k(z)] at 30 digits computed in the test itself.
"""
import math

import mpmath as mp
import numpy as np
import pytest

from rmtfl.theory import (
    dual_activation,
    gaussian_moment,
    get_activation,
    hermite_coeff_normalised,
    hermite_coeffs,
    hermite_he,
    information_exponent,
    nonlinear_norm,
)

SMOOTH = ["tanh", "sigmoid", "softplus", "erf", "gelu"]
CLOSED = ["relu", "step", "relu^2", "relu^3", "erf", "gelu", "identity", "square", "he3"]


def _mp_mu(name, k, dps=30):
    act = get_activation(name)
    with mp.workdps(dps):
        return mp.quad(lambda z: act.mp_fn(z) * hermite_he(k, z) * mp.npdf(z), [-mp.inf, 0, mp.inf])


def test_relu_reference_values():
    # docs/conventions.md §11
    mu = hermite_coeffs("relu", 4)
    s = 1 / math.sqrt(2 * math.pi)
    np.testing.assert_allclose(mu, [s, 0.5, s, 0.0, -s], atol=1e-15)
    assert hermite_coeff_normalised("relu", 2) == pytest.approx(0.2820947918, abs=1e-10)
    assert nonlinear_norm("relu") == pytest.approx(0.3014051375, abs=1e-10)


@pytest.mark.parametrize("name", CLOSED)
def test_closed_forms_match_mpmath(name):
    mu = hermite_coeffs(name, 7)
    ref = np.array([float(_mp_mu(name, k)) for k in range(8)])
    np.testing.assert_allclose(mu, ref, atol=1e-13)


@pytest.mark.parametrize("name", SMOOTH)
def test_quadrature_matches_mpmath(name):
    mu = hermite_coeffs(name, 6)
    ref = np.array([float(v) for v in [_mp_mu(name, k) for k in range(7)]])
    np.testing.assert_allclose(mu, ref, atol=1e-12)


def test_dps_path_agrees():
    np.testing.assert_allclose(hermite_coeffs("tanh", 5, dps=30), hermite_coeffs("tanh", 5), atol=1e-12)


def test_hermite_orthogonality():
    # E[He_3^2] = 3! = 6
    assert hermite_coeffs(lambda z: hermite_he(3, z), 3)[3] == pytest.approx(6.0, abs=1e-12)
    assert float(hermite_he(3, 2.0)) == 2.0


def test_stein_moments():
    # sigma = He1 + He2/2: sigma' = 1 + z, sigma'' = 1, so E[sigma'' sigma'^2] = E[(1+z)^2] = 2
    assert gaussian_moment("hermite(0,1,0.5)", 2, 2) == pytest.approx(2.0, abs=1e-12)
    # m = 0 is mu_j (Stein)
    assert gaussian_moment("tanh", 3, 0) == pytest.approx(hermite_coeffs("tanh", 3)[3], abs=1e-13)
    # quadrature against mpmath
    assert gaussian_moment("tanh", 3, 2) == pytest.approx(gaussian_moment("tanh", 3, 2, dps=25), abs=1e-11)
    with pytest.raises(ValueError, match="delta"):
        gaussian_moment("relu", 2, 1)


def test_information_exponent_and_dual():
    assert information_exponent("tanh") == 1
    assert information_exponent("he2") == 2
    assert information_exponent("he3n") == 3
    # E[erf(z)^2] = (2/pi) arcsin(2/3)
    assert float(dual_activation("erf", 1.0)) == pytest.approx(2 / math.pi * math.asin(2 / 3), abs=1e-12)
    assert float(dual_activation("relu", 0.0)) == pytest.approx(1 / (2 * math.pi), abs=1e-15)


def test_unknown_name_lists_known():
    with pytest.raises(ValueError, match="known:.*relu"):
        hermite_coeffs("swish-ish", 3)
    with pytest.raises(ValueError, match="kmax"):
        hermite_coeffs("relu", -1)


def test_issue14_evaluation_points():
    # NaN in -> NaN out; inf and an overflowing He_k(z) are refused by name, never inf/NaN from finite input
    from rmtfl.theory import dual_activation, hermite_he
    assert np.isnan(hermite_he(3, np.nan))
    for z in (np.inf, -np.inf, 1e300):
        with pytest.raises(ValueError, match="z "):
            hermite_he(3, z)
    assert np.isnan(dual_activation("tanh", np.nan, kmax=20))
    for t in (np.inf, 1.5):
        with pytest.raises(ValueError, match="t must"):
            dual_activation("tanh", t, kmax=20)
