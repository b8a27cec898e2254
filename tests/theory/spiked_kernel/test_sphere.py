"""Tests of rmtfl.theory._spiked_kernel.sphere.

References: docs/theory/spiked_kernel.md §9 table (relu mu_k at d = 3, 10, 100; step at d = 3); independent
Funk–Hecke quadrature of the Legendre coefficients with mpmath (30 digits) for the closed forms.
"""
import math

import mpmath as mp
import numpy as np
import pytest

from rmtfl.theory import dual_activation
from rmtfl.theory._spiked_kernel.sphere import (funk_hecke, gaussian_moment_factor, gegenbauer_P, harmonic_multiplicity,
                                 linear_sector, monomial_sphere_eigen, relu_legendre, sphere_eigenvalues,
                                 step_legendre, zonal_harmonic)


def mp_legendre(sigma, k, d):
    """lambda_k = Gamma(d/2)/(sqrt(pi) Gamma((d-1)/2)) int sigma(t) P_k(t) (1-t^2)^((d-3)/2) dt, mpmath."""
    with mp.workdps(30):
        lam = mp.mpf(d - 2) / 2

        def C(t):  # unnormalised Gegenbauer C_k^lam by its own recurrence (mp.gegenbauer's 2F1 can stall)
            c0, c1 = mp.mpf(1), 2 * lam * t
            if k == 0:
                return c0
            for n in range(2, k + 1):
                c0, c1 = c1, (2 * t * (n + lam - 1) * c1 - (n + 2 * lam - 2) * c0) / n
            return c1

        c1 = C(mp.mpf(1))
        P = (lambda t: C(t) / c1) if d > 2 else (lambda t: mp.chebyt(k, t))
        const = mp.gamma(mp.mpf(d) / 2) / (mp.sqrt(mp.pi) * mp.gamma(mp.mpf(d - 1) / 2))
        val = mp.quad(lambda t: sigma(t) * P(t) * (1 - t * t) ** (mp.mpf(d - 3) / 2), [0, 1])
        return float(const * val)


@pytest.mark.parametrize("d", [3, 5, 10, 37])
@pytest.mark.parametrize("k", [0, 1, 2, 3, 4, 6])
def test_relu_step_closed_forms_vs_mpmath(d, k):
    assert abs(relu_legendre(k, d) - mp_legendre(lambda t: t, k, d)) < 1e-12
    assert abs(step_legendre(k, d) - mp_legendre(lambda t: 1, k, d)) < 1e-12


def test_spec_table():
    sp3 = sphere_eigenvalues("relu", d=3, kmax=4)
    assert np.allclose(sp3.mu, [3 / 16, 1 / 12, 0.01171875, 0, 3.2552083333e-4], rtol=1e-9, atol=1e-15)
    sp10 = sphere_eigenvalues("relu", d=10, kmax=2)
    assert abs(sp10.mu[0] - 0.1673012117) < 1e-10 and sp10.mu[1] == pytest.approx(0.025, rel=1e-14)
    assert abs(sp10.mu[2] - 1.382654642e-3) < 1e-12
    sp100 = sphere_eigenvalues("relu", d=100, kmax=2)
    assert abs(sp100.mu[2] - 1.568009972e-5) < 1e-14 and sp100.multiplicity[2] == 5049
    st = sphere_eigenvalues("step", d=3, kmax=3)
    assert np.allclose(st.mu, [1 / 4, 1 / 16, 0, 1 / 256], atol=1e-15)


def test_closed_form_vs_funk_hecke_of_dual_activation():
    for d in (3, 10, 50):
        sp = sphere_eigenvalues("relu", d=d, kmax=6)
        fh = [funk_hecke(lambda t: dual_activation("relu", t), k, d, order=3000) for k in range(7)]
        assert np.allclose(sp.mu, fh, atol=1e-9)


def test_trace_and_high_d():
    sp = sphere_eigenvalues("relu", d=10, kmax=40)
    assert 0.499 < sp.trace() <= 0.5
    big = sphere_eigenvalues("relu", d=4000, kmax=4)
    assert abs(big.mu[0] - 1 / (2 * math.pi)) < 1e-4
    assert abs(big.mu[2] / big.high_d[2] - 1) < 2e-3
    assert abs(4000**2 * big.mu[2] / 2 - 1 / (4 * math.pi)) < 1e-3
    # log-gamma keeps large d, k finite and positive
    huge = sphere_eigenvalues("relu", d=10_000, kmax=30)
    assert np.all(np.isfinite(huge.mu)) and huge.mu[30] > 0


def test_multiplicity_and_gegenbauer():
    assert [harmonic_multiplicity(10, k) for k in range(5)] == [1, 10, 54, 210, 660]
    assert harmonic_multiplicity(3, 4) == 9 and harmonic_multiplicity(2, 5) == 2
    t = np.linspace(-1, 1, 7)
    assert np.allclose(gegenbauer_P(3, 3, t), (5 * t**3 - 3 * t) / 2)
    assert np.allclose(gegenbauer_P(4, 2, t), np.cos(4 * np.arccos(t)))
    # zonal harmonic is unit norm under the u-marginal
    from rmtfl.theory._spiked_kernel.sphere import jacobi_rule

    u, w = jacobi_rule(200, 3.5)
    assert abs(w @ zonal_harmonic(2, 10, u) ** 2 - 1) < 1e-12


def test_monomial_formula_vs_quadrature():
    for d in (3, 8, 25):
        for j in range(0, 7):
            for k in range(0, j + 1):
                assert abs(monomial_sphere_eigen(j, k, d) - funk_hecke(lambda t: t**j, k, d)) < 1e-13


def test_general_sigma_quadrature_vs_hermite_series():
    # tanh: quadrature path against sum_j c_j^2 mu_k[t^j] (positive terms), c_j from Gauss-Hermite
    from rmtfl.theory import hermite_coeffs

    d = 10
    sp = sphere_eigenvalues("tanh", d=d, kmax=5)
    mu = hermite_coeffs("tanh", 61)
    c2 = [mu[j] ** 2 / math.factorial(j) for j in range(62)]
    ref = [sum(c2[j] * monomial_sphere_eigen(j, k, d) for j in range(62)) for k in range(6)]
    assert np.allclose(sp.mu, ref, atol=1e-11)
    assert sp.error < 1e-12


def test_gaussian_factor():
    assert gaussian_moment_factor(10, 1) == pytest.approx(10)
    assert gaussian_moment_factor(10, 2) == pytest.approx(120)
    sp = sphere_eigenvalues("relu", d=10, kmax=2)
    assert sp.gaussian_factor == pytest.approx(10) and np.allclose(sp.gaussian_k0, sp.mu)


def test_linear_sector_relu_exact_and_general_path():
    ls = linear_sector("relu", A=0.1, B=0.4, d=10)
    assert (ls.target, ls.orthogonal, ls.exact) == (pytest.approx(0.125), pytest.approx(0.025), True)
    sph = linear_sector("relu", A=0.1, B=0.4, d=10, measure="sphere")
    assert sph.target == pytest.approx(0.0125)
    # building block of the general-sigma (sphere) formula: h(r) = E_t[relu(r t) t] = r/(2d)
    from rmtfl.theory import get_activation
    from rmtfl.theory._spiked_kernel.sphere import _h_sphere

    r = np.array([0.5, 1.0, 2.0])
    assert np.allclose(_h_sphere(get_activation("relu"), r, 10), r / 20, atol=1e-12)
    # identity: exact, Gamma itself
    lin = linear_sector("identity", A=0.1, B=0.4, d=10)
    assert lin.exact and lin.target == pytest.approx(0.5)


def test_bad_input():
    with pytest.raises(ValueError, match="d must be"):
        sphere_eigenvalues("relu", d=1, kmax=3)
    with pytest.raises(ValueError, match="A must be"):
        linear_sector("relu", A=-1.0, B=0.0, d=5)
    with pytest.raises(ValueError, match="B must be"):
        linear_sector("relu", A=1.0, B=-0.1, d=5)
