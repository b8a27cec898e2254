"""Marchenko–Pastur law: exact values (docs/theory/two_step.md §10, closed forms, mpmath at 30 digits) and properties."""
import math
from fractions import Fraction

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate

from rmtfl.theory import (
    mp_atom, mp_cdf, mp_density, mp_edges, mp_moment, mp_moments, mp_quantile, mp_stieltjes,
    mp_sv_atom, mp_sv_cdf, mp_sv_density, mp_sv_edges,
)

psis = st.floats(0.05, 20.0)
variances = st.floats(0.1, 5.0)


def test_sv_edges_reference_values():
    # docs/theory/two_step.md §10: psi = 0.5 -> [0.2928932188, 1.7071067812]; psi = 2 -> [0.4142135624, 2.4142135624]
    assert tuple(mp_sv_edges(0.5)) == pytest.approx((0.2928932188, 1.7071067812), abs=1e-10)
    assert tuple(mp_sv_edges(2.0)) == pytest.approx((0.4142135624, 2.4142135624), abs=1e-10)
    assert tuple(mp_edges(4.0, var=2.0)) == pytest.approx((2.0, 18.0), abs=1e-14)
    assert tuple(mp_sv_edges(4.0, var=4.0)) == pytest.approx((2.0, 6.0), abs=1e-14)


def test_edges_are_frozen_results_that_unpack():
    import dataclasses
    import json

    e = mp_edges(0.25)
    lo, hi = e
    assert (lo, hi) == (e.lower, e.upper) == (0.25, 2.25)
    assert json.loads(json.dumps(e.to_dict())) == {"lower": 0.25, "upper": 2.25}
    assert mp_sv_edges(2.0).upper == pytest.approx(1 + math.sqrt(2.0), abs=1e-15)
    with pytest.raises(dataclasses.FrozenInstanceError):
        e.lower = 0.0
    with pytest.raises(TypeError):
        mp_edges(0.25, 2.0)  # var is keyword-only


def test_second_moment_reference_values():
    # docs/theory/two_step.md §10: int l^2 rho = 1 + psi: 1.5 at psi = 0.5 and 2.0 at psi = 1
    assert mp_moment(2, 0.5) == pytest.approx(1.5, abs=1e-15)
    assert mp_moment(2, 1.0) == pytest.approx(2.0, abs=1e-15)
    assert mp_moment(3, 0.5) == pytest.approx(1 + 3 * 0.5 + 0.25, abs=1e-15)
    # Catalan numbers at psi = 1
    assert mp_moments(6, 1.0).tolist() == [1, 1, 2, 5, 14, 42, 132]
    assert mp_moment(3, Fraction(1, 2), exact=True) == Fraction(11, 4)
    assert mp_moment(2, 2, var=3, exact=True) == Fraction(27)


def _mp_cont_cdf(x, psi, dps=30):
    """Independent reference: mpmath quadrature of the density at ``dps`` digits."""
    with mp.workdps(dps):
        P = mp.mpf(psi)
        lo, hi = (1 - mp.sqrt(P)) ** 2, (1 + mp.sqrt(P)) ** 2
        f = lambda l: mp.sqrt((hi - l) * (l - lo)) / (2 * mp.pi * P * l)  # noqa: E731
        return mp.quad(f, [lo, mp.mpf(x)])


@pytest.mark.parametrize("psi", [0.25, 1.0, 3.0])
def test_cdf_against_mpmath_30_digits(psi):
    lo, hi = mp_edges(psi)
    for frac in (0.1, 0.5, 0.9):
        x = lo + frac * (hi - lo)
        ref = float(_mp_cont_cdf(x, psi)) + max(0.0, 1 - 1 / psi)
        assert mp_cdf(x, psi) == pytest.approx(ref, abs=1e-13)


def test_cdf_closed_form_at_psi_one():
    # F(1) = 1/3 + sqrt(3)/(2 pi) at psi = 1 (integrate sqrt((4-l)/l)/(2 pi) from 0 to 1)
    assert mp_cdf(1.0, 1.0) == pytest.approx(1 / 3 + math.sqrt(3) / (2 * math.pi), abs=1e-14)


def test_atom_and_limits():
    assert mp_atom(4.0) == 0.75 and mp_atom(1.0) == 0.0 and mp_atom(0.3) == 0.0
    assert mp_cdf(-1e-12, 4.0) == 0.0
    assert mp_cdf(0.0, 4.0) == pytest.approx(0.75, abs=1e-15)
    assert mp_cdf(100.0, 4.0) == 1.0
    assert mp_sv_atom(4.0, side="N") == 0.75 and mp_sv_atom(0.25, side="d") == 0.75
    assert mp_sv_atom(0.25, side="N") == 0.0


@settings(max_examples=40, deadline=None)
@given(psis.filter(lambda p: abs(p - 1.0) > 1e-2) | st.just(1.0), variances)
def test_density_normalisation_and_moments(psi, var):
    # (psi within 1e-2 of 1 but != 1: the density has a spike of width (1 - sqrt psi)^2 at the
    #  lower edge that adaptive quadrature cannot resolve; the closed-form CDF covers it below)
    lo, hi = mp_edges(psi, var=var)
    m, h = 0.5 * (lo + hi), 0.5 * (hi - lo)

    def integ(k):
        g = lambda t: mp_density(m - h * math.cos(t), psi, var=var) * (m - h * math.cos(t)) ** k * h * math.sin(t)  # noqa: E731
        return integrate.quad(g, 0, math.pi, epsabs=1e-13, epsrel=1e-12, limit=200)[0]

    assert integ(0) + mp_atom(psi) == pytest.approx(1.0, abs=1e-9)
    for k in (1, 2, 3):
        assert integ(k) == pytest.approx(mp_moment(k, psi, var=var), rel=1e-9)


@settings(max_examples=40, deadline=None)
@given(psis, st.floats(0.0, 1.0))
def test_quantile_inverts_cdf(psi, p):
    q = mp_quantile(p, psi)
    assert mp_cdf(q, psi) >= p - 1e-12
    if p > mp_atom(psi):
        assert mp_cdf(q, psi) == pytest.approx(p, abs=1e-10)
        assert q >= mp_edges(psi).lower - 1e-12
    else:
        assert q == 0.0


@settings(max_examples=30, deadline=None)
@given(psis)
def test_cdf_monotone_and_consistent_with_density(psi):
    lo, hi = mp_edges(psi)
    x = np.linspace(lo - 0.1, hi + 0.1, 400)
    F = mp_cdf(x, psi)
    assert np.all(np.diff(F) >= -1e-14)
    xm = lo + 0.37 * (hi - lo)
    dF = (mp_cdf(xm + 1e-5, psi) - mp_cdf(xm - 1e-5, psi)) / 2e-5
    assert dF == pytest.approx(mp_density(xm, psi), rel=1e-6)


def test_stieltjes_against_quadrature_and_equation():
    for psi in (0.5, 3.0):
        for w in (9.0 + 0.0j, 2.0 + 1.0j, -1.5 + 0.3j):
            g = mp_stieltjes(w, psi)
            lo, hi = mp_edges(psi)
            re = integrate.quad(lambda l: (mp_density(l, psi) / (w - l)).real, lo, hi, epsabs=1e-13)[0]
            im = integrate.quad(lambda l: (mp_density(l, psi) / (w - l)).imag, lo, hi, epsabs=1e-13)[0]
            ref = re + 1j * im + mp_atom(psi) / w
            assert abs(g - ref) < 1e-9
            # psi w g^2 - (w - 1 + psi) g + 1 = 0
            assert abs(psi * w * g * g - (w - 1 + psi) * g + 1) < 1e-12
    # Stieltjes inversion: -Im g(l + i eps) / pi -> density
    l0 = 1.3
    assert -mp_stieltjes(l0 + 1e-10j, 0.5).imag / math.pi == pytest.approx(mp_density(l0, 0.5), rel=1e-6)
    # g ~ 1/w
    assert abs(mp_stieltjes(1e8, 2.0) * 1e8 - 1) < 1e-6


def test_cdf_near_psi_one_is_continuous():
    # the closed form is continuous in psi through psi = 1 (the atom switches on continuously)
    for x in (0.01, 0.5, 2.0, 3.9):
        vals = [mp_cdf(x, p) for p in (1 - 1e-9, 1.0, 1 + 1e-9)]
        assert max(vals) - min(vals) < 1e-7


def test_sv_density_and_cdf():
    # nonzero singular values: max(1, psi) 2 s rho(s^2) integrates to 1
    for psi in (0.3, 2.5):
        lo, hi = mp_sv_edges(psi)
        mass = integrate.quad(lambda s: mp_sv_density(s, psi), lo, hi, limit=200)[0]
        assert mass * max(1.0, psi) == pytest.approx(1.0, abs=1e-8)
        massd = integrate.quad(lambda s: mp_sv_density(s, psi, side="d"), lo, hi, limit=200)[0]
        assert massd + mp_sv_atom(psi, side="d") == pytest.approx(1.0, abs=1e-8)
        s0 = 0.5 * (lo + hi)
        assert mp_sv_cdf(s0, psi) == pytest.approx(mp_cdf(s0**2, psi), abs=1e-15)
        assert mp_sv_cdf(hi + 1, psi, side="d") == pytest.approx(1.0, abs=1e-14)


def test_vectorised_shapes():
    x = np.linspace(0, 5, 12).reshape(3, 4)
    assert mp_density(x, 1.5).shape == (3, 4)
    assert mp_cdf(x, 1.5).shape == (3, 4)
    assert mp_quantile(np.array([0.1, 0.9]), 1.5).shape == (2,)
    assert isinstance(mp_density(1.0, 1.0), float)


@pytest.mark.parametrize("call", [
    lambda: mp_edges(0.0), lambda: mp_edges(-1.0), lambda: mp_edges(1.0, var=0.0),
    lambda: mp_density(1.0, float("nan")), lambda: mp_density([1.0, float("inf")], 1.0),
    lambda: mp_cdf(1.0, 1.0, var=-2), lambda: mp_quantile(1.5, 1.0), lambda: mp_moment(-1, 1.0),
    lambda: mp_sv_density(1.0, 1.0, side="x"), lambda: mp_stieltjes(float("nan"), 1.0),
    lambda: mp_moments(2, 0.0),
])
def test_invalid_inputs(call):
    with pytest.raises(ValueError):
        call()


def test_error_messages_name_parameter():
    with pytest.raises(ValueError, match="psi must be > 0"):
        mp_edges(0.0)
    with pytest.raises(ValueError, match="var must be > 0"):
        mp_density(1.0, 1.0, var=-1.0)


def test_singular_value_law_far_beyond_the_edge_is_exact():
    """|s| > 1.3e154 makes s^2 overflow: the law there is exactly CDF 1, density 0, with no warning and no error
    about the squared value (once "lam must contain only finite values")."""
    from rmtfl.theory import mp_density, mp_sv_cdf, mp_sv_density

    with np.errstate(all="raise"):
        assert mp_sv_cdf(1e200, 1.0) == 1.0 and mp_sv_density(1e200, 1.0) == 0.0
        assert mp_sv_cdf(np.array([-1e300, 1e300]), 2.0, side="d").tolist() == [0.0, 1.0]
        assert mp_density(np.array([1e308, -1e308]), 0.5).tolist() == [0.0, 0.0]
