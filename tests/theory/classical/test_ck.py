"""Conjugate-kernel law (docs/theory/kernel_spectra.md §1–2): exact limits, moments, speed, bad input, simulation."""
import math
import time

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate

from rmtfl.theory import (ck_moments_noncrossing, ck_spectrum, CKSpectrum, hermite_coeffs, mp_cdf, mp_density,
                          mp_moments, mp_quantile, mp_stieltjes, nonlinear_norm)

RATIOS = [(0.5, 0.5), (0.5, 2.0), (2.0, 0.5), (1.0, 1.0), (2.0, 2.0), (3.0, 1.5)]


def fuss_catalan_density(x):
    """Penson & Zyczkowski, Phys. Rev. E 83, 061118 (2011), s = 2: squared singular values of a product of two
    square Ginibre matrices (entries of variance 1/d), support [0, 27/4]."""
    r = 27 + 3 * np.sqrt(81 - 12 * x)
    return 2 ** (1 / 3) * np.sqrt(3) / (12 * np.pi) * (2 ** (1 / 3) * r ** (2 / 3) - 6 * x ** (1 / 3)) / (
        x ** (2 / 3) * r ** (1 / 3))


# ----------------------------------------------------------------------- exact limits
def test_linear_is_product_wishart_fuss_catalan():
    law = ck_spectrum("identity", psi=1.0, phi=1.0)
    assert law.edges.upper == pytest.approx(27 / 4, abs=1e-10)
    x = np.linspace(0.01, 6.74, 200)
    assert np.max(np.abs(law.density(x) - fuss_catalan_density(x))) < 1e-10
    # Fuss-Catalan numbers C(3k, k)/(2k + 1): 1, 3, 12, 55, 273, 1428
    fc = [math.comb(3 * k, k) / (2 * k + 1) for k in range(1, 7)]
    assert np.allclose(law.moments(6)[1:], fc, rtol=1e-12, atol=0)


@pytest.mark.parametrize("psi, phi", RATIOS)
def test_mu1_zero_is_marchenko_pastur(psi, phi):
    # he2 = z^2 - 1: mu_0 = mu_1 = 0, E sigma^2 = 2, so K is MP with ratio n/N and variance 2
    law = ck_spectrum("he2", psi=psi, phi=phi)
    g = phi / psi
    x = np.linspace(1e-3, 2 * (1 + math.sqrt(g)) ** 2 * 1.05, 301)
    assert np.max(np.abs(law.density(x) - mp_density(x, g, var=2.0))) < 1e-10
    assert np.max(np.abs(law.cdf(x) - mp_cdf(x, g, var=2.0))) < 1e-10
    p = np.linspace(0.01, 0.99, 19)
    assert np.max(np.abs(law.quantile(p) - mp_quantile(p, g, var=2.0))) < 1e-9
    assert np.allclose(law.moments(6), mp_moments(6, g, var=2.0), rtol=1e-12)
    z = np.array([0.5 + 0.3j, 3.0 + 1e-2j, -1.0 + 2j])
    # mp_stieltjes is int dmu/(w - t); ck's is int dmu/(t - z)
    assert np.max(np.abs(law.stieltjes(z) + mp_stieltjes(z, g, var=2.0))) < 1e-10
    assert law.atom == pytest.approx(max(0.0, 1 - 1 / g), abs=1e-15)


@pytest.mark.parametrize("act", ["relu", "tanh", "gelu", "identity"])
@pytest.mark.parametrize("psi, phi", RATIOS)
def test_moments_match_noncrossing_count(act, psi, phi):
    # two derivations: the power series of the equation for m (law.moments) and a direct sum over NC(k)
    series = ck_spectrum(act, psi=psi, phi=phi).moments(6, dps=40)
    combinatorial = ck_moments_noncrossing(act, 6, psi=psi, phi=phi, dps=40)
    for a, b in zip(series[1:], combinatorial):
        assert abs(a - b) <= mp.mpf("1e-10") * abs(b)


@pytest.mark.parametrize("act, psi, phi", [("relu", 1.0, 1.0), ("tanh", 0.5, 2.0), ("erf", 2.0, 0.5),
                                           ("gelu", 2.0, 2.0)])
def test_density_integrates_to_moments(act, psi, phi):
    law = ck_spectrum(act, psi=psi, phi=phi)
    mom = law.moments(3)
    for k in range(4):
        tot = law.atom if k == 0 else 0.0
        for lo, hi in law.intervals:
            # x = lo + (hi - lo)(1 - cos th)/2 removes the square-root (and the 1/sqrt x hard-edge) singularities
            def f(th):
                x = lo + (hi - lo) * (1 - math.cos(th)) / 2
                return x ** k * law.density(x) * (hi - lo) * math.sin(th) / 2
            tot += integrate.quad(f, 0, math.pi, limit=200, epsabs=1e-13, epsrel=1e-12)[0]
        assert tot == pytest.approx(mom[k], rel=1e-9, abs=1e-10)


def test_first_two_moments_closed_form():
    # m1 = E sigma^2 - mu0^2 = v; m2 = v^2 (1 + gamma) + phi mu1^4   (docs/theory/kernel_spectra.md §1.4)
    for act in ["relu", "tanh", "gelu"]:
        mu = hermite_coeffs(act, 1)
        c = nonlinear_norm(act) ** 2
        v = mu[1] ** 2 + c
        for psi, phi in RATIOS:
            m = ck_spectrum(act, psi=psi, phi=phi).moments(2)
            assert m[1] == pytest.approx(v, rel=1e-12)
            assert m[2] == pytest.approx(v * v * (1 + phi / psi) + phi * mu[1] ** 4, rel=1e-12)


def test_stieltjes_matches_integral_of_density():
    law = ck_spectrum("relu", psi=2.0, phi=1.0)
    for z in [1.0 + 0.5j, 0.2 + 0.05j, 4.0 + 1.0j]:
        re = sum(integrate.quad(lambda t: (law.density(t) / (t - z)).real, lo, hi, limit=400)[0]
                 for lo, hi in law.intervals)
        im = sum(integrate.quad(lambda t: (law.density(t) / (t - z)).imag, lo, hi, limit=400)[0]
                 for lo, hi in law.intervals)
        assert abs(law.stieltjes(z) - (re + 1j * im)) < 1e-8
        assert law.stieltjes(np.conj(z)) == pytest.approx(np.conj(law.stieltjes(z)))


@given(st.sampled_from(["relu", "tanh", "erf", "gelu"]), st.floats(0.2, 5.0), st.floats(0.2, 5.0))
@settings(max_examples=8, deadline=None)
def test_cdf_quantile_roundtrip_and_mass(act, psi, phi):
    law = ck_spectrum(act, psi=psi, phi=phi)
    assert law.cdf(law.edges.upper * 1.001) == pytest.approx(1.0, abs=1e-10)
    p = np.linspace(0.02, 0.98, 25)
    q = law.quantile(p)
    assert np.all(np.diff(q) >= 0)
    inside = p > law.atom + 1e-9
    assert np.allclose(law.cdf(q[inside]), p[inside], atol=1e-9)
    assert np.all(q[~inside] == 0.0)
    assert law.atom == pytest.approx(max(0.0, 1 - psi / phi), abs=1e-14)


def test_result_fields_and_json():
    law = ck_spectrum("relu", psi=1.0, phi=2.0, N=500)
    assert isinstance(law, CKSpectrum)
    d = law.to_dict()
    assert d["N"] == 500 and d["d"] == 500 and d["n"] == 1000 and "_law" not in d
    assert d["outliers"][0]["kind"] == "mu0"
    assert ck_spectrum("tanh", psi=1.0, phi=1.0, N=500).outliers == ()


def test_mu0_outlier_large_strength_expansion():
    # theta^2 -> inf: location = theta^2 + m1 (1 + gamma) + O(1/theta^2)   (docs/theory/kernel_spectra.md §2.2)
    law = ck_spectrum("relu", psi=1.0, phi=2.0, N=100000)
    o = law.outliers[0]
    v = law.moments(1)[1]
    assert o.location == pytest.approx(o.strength + v * (1 + 2.0), abs=0.05)
    mu = hermite_coeffs("relu", 4)
    assert o.strength == pytest.approx(200000 * (mu[0] + mu[4] / 4e5) ** 2 + 2 * mu[2] ** 2, rel=1e-12)


def test_norm_spikes_exist_for_even_centred_activation():
    law = ck_spectrum("he2", psi=2.0, phi=2.0, N=2000)
    (o,) = law.outliers
    assert o.kind == "norms" and o.multiplicity == 2 and o.exists
    assert o.strength == pytest.approx(4.0)  # phi mu2^2 / 2
    # MP bulk (ratio 1, var 2): BGN closed form s^2 = var (1 + t^2)(gamma + t^2)/t^2, t^2 = 4/2
    assert o.location == pytest.approx(2 * 3 * 3 / 2, rel=1e-9)


# ------------------------------------------------------------------------- speed
def test_speed_grid_and_quantiles():
    x = np.linspace(0, 5, 1000)
    t = time.perf_counter()
    law = ck_spectrum("gelu", psi=1.3, phi=0.7)
    law.density(x)
    law.cdf(x)
    assert time.perf_counter() - t < 1.0
    t = time.perf_counter()
    law.quantile(np.arange(1, 20) / 20)
    assert time.perf_counter() - t < 0.5


# ---------------------------------------------------------------------- bad input
@pytest.mark.parametrize("kw, name", [(dict(psi=0.0, phi=1.0), "psi"), (dict(psi=-1.0, phi=1.0), "psi"),
                                      (dict(psi=float("nan"), phi=1.0), "psi"), (dict(psi=1.0, phi=0.0), "phi"),
                                      (dict(psi=1.0, phi=float("inf")), "phi")])
def test_bad_ratios(kw, name):
    with pytest.raises(ValueError, match=name):
        ck_spectrum("relu", **kw)


def test_bad_activation_and_arguments():
    with pytest.raises(ValueError, match="activation"):
        ck_spectrum("nope", psi=1.0, phi=1.0)
    with pytest.raises(ValueError, match="constant"):
        ck_spectrum("hermite(1)", psi=1.0, phi=1.0)
    law = ck_spectrum("relu", psi=1.0, phi=1.0)
    with pytest.raises(ValueError, match="p"):
        law.quantile(1.5)
    with pytest.raises(ValueError, match="N"):
        ck_spectrum("relu", psi=1.0, phi=1.0, N=0)
    assert math.isnan(law.cdf(float("nan")))


# ------------------------------------------------------------------ simulation (slow)
@pytest.mark.slow
@pytest.mark.parametrize("act, psi, phi", [("relu", 1.0, 1.0), ("tanh", 0.5, 1.0), ("erf", 1.0, 0.5),
                                           ("gelu", 0.5, 0.5)])
def test_quantiles_edge_and_mu0_outlier_against_simulation(act, psi, phi):
    # acceptance of docs/theory/kernel_spectra.md §4 at d = 2000, mean of 2 seeds (the full 36-cell grid is in
    # benchmarks/bench_kernel_spectra.py --accuracy)
    from rmtfl.numerics import simulate_ck

    d = 2000
    N, n = int(psi * d), int(phi * d)
    law = ck_spectrum(act, psi=psi, phi=phi, N=N)
    n_out = sum(o.multiplicity for o in law.outliers if o.exists)
    levels = np.arange(1, 20) / 20
    qs, tops, outs = [], [], []
    for seed in (7, 1007):
        ev = simulate_ck(act, N=N, d=d, n=n, rng=seed).eigenvalues
        qs.append(np.quantile(ev, levels, method="inverted_cdf"))
        tops.append(ev[n_out])
        outs.append(ev[0])
    qsim = np.mean(qs, axis=0)
    assert np.all(np.abs(law.quantile(levels) - qsim) <= 0.01 + 0.02 * np.abs(qsim))
    edge = law.edges.upper
    assert abs(np.mean(tops) - law.top_bulk) <= 3 * n ** (-2 / 3) * edge
    if law.outliers:
        assert np.mean(outs) == pytest.approx(law.outliers[0].location, rel=0.01)


@pytest.mark.parametrize("act, psi, phi, atom", [("identity", 0.5, 3.0, 1 - 0.5 / 3), ("identity", 3.0, 2.0, 0.5),
                                                 ("identity", 2.0, 1.0, 0.0), ("relu", 4.0, 40.0, 0.9),
                                                 ("he2", 2.0, 3.0, 1 - 2 / 3)])
def test_atom_plus_continuous_mass_is_one(act, psi, phi, atom):
    # the continuous mass comes from integrating the density (not from the atom formula): they must add to 1
    law = ck_spectrum(act, psi=psi, phi=phi)
    assert law.atom == pytest.approx(atom, abs=1e-14)
    cont = 0.0
    for lo, hi in law.intervals:
        cont += integrate.quad(lambda th: law.density(lo + (hi - lo) * (1 - math.cos(th)) / 2) * (hi - lo)
                               * math.sin(th) / 2, 0, math.pi, limit=200, epsabs=1e-12)[0]
    assert law.atom + cont == pytest.approx(1.0, abs=1e-8)
