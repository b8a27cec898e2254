"""Tracy–Widom laws: published values (Bornemann 2010, Table; Prähofer–Spohn), moments by quadrature."""
import math

import numpy as np
import pytest
from scipy import integrate

from rmtfl.theory import edge_margin, largest_sv_scaling, tracy_widom_cdf, tracy_widom_pdf, tracy_widom_quantile
from rmtfl.theory._classical.tracy_widom import TW_MEAN, TW_Q99, TW_STD, _solve_quantile, tracy_widom_mean


def test_f2_reference_value():
    # F2(-2) = 0.41322414250512 (Bornemann 2010, Table 4 / Prähofer–Spohn tables)
    assert tracy_widom_cdf(-2.0, beta=2) == pytest.approx(0.4132241425, abs=1e-10)


def test_means_by_quadrature():
    # E TW2 = -1.7710868074, E TW1 = -1.2065335745 (Bornemann 2010, Table 1)
    assert tracy_widom_mean(beta=2) == pytest.approx(-1.7710868074, abs=1e-9)
    assert tracy_widom_mean(beta=1) == pytest.approx(-1.2065335745, abs=1e-9)
    assert TW_MEAN[1] == pytest.approx(-1.2065335745, abs=1e-10)


def test_variance_by_quadrature_of_density():
    # Var TW2 = 0.8131947928, Var TW1 = 1.6077810345 (Bornemann 2010, Table 1)
    for beta, var_ref in ((2, 0.8131947928), (1, 1.6077810345)):
        x, w = np.polynomial.legendre.leggauss(200)
        s = 13.0 * (x + 1.0) - 10.0  # (-10, 16): 1 - F1(16) ~ exp(-(2/3) 16^1.5) ~ 1e-19
        f = tracy_widom_pdf(s, beta=beta)
        m1 = 13.0 * np.dot(w, s * f)
        m2 = 13.0 * np.dot(w, s * s * f)
        assert m1 == pytest.approx(TW_MEAN[beta], abs=1e-7)
        assert m2 - m1**2 == pytest.approx(var_ref, abs=1e-7)
        assert math.sqrt(var_ref) == pytest.approx(TW_STD[beta], abs=1e-9)


def test_quadrature_converged():
    for beta in (1, 2):
        for s in (-6.0, -2.0, 0.0, 3.0):
            assert tracy_widom_cdf(s, beta=beta) == pytest.approx(tracy_widom_cdf(s, beta=beta, nodes=160), abs=1e-13)


def test_quantiles():
    for beta in (1, 2):
        for p in (0.01, 0.5, 0.95, 0.99):
            q = tracy_widom_quantile(p, beta=beta)
            assert tracy_widom_cdf(q, beta=beta) == pytest.approx(p, abs=1e-11)
    # well-known 95% / 99% points: TW1 0.9793, 2.0234; TW2 -0.2325, 0.4776
    assert tracy_widom_quantile(0.95, beta=1) == pytest.approx(0.9793, abs=1e-3)
    assert tracy_widom_quantile(0.99, beta=1) == pytest.approx(2.0234, abs=1e-3)
    assert tracy_widom_quantile(0.95, beta=2) == pytest.approx(-0.2325, abs=1e-3)
    assert tracy_widom_quantile(0.99, beta=2) == pytest.approx(0.4776, abs=1e-3)


def test_tabulated_count_level_is_the_solved_quantile():
    # TW_Q99 spares the first count a root search; it must be what the solver gives
    for beta in (1, 2):
        assert _solve_quantile(0.99, beta) == pytest.approx(TW_Q99[beta], abs=1e-12)
        assert tracy_widom_cdf(TW_Q99[beta], beta=beta) == pytest.approx(0.99, abs=1e-12)


def test_cdf_monotone_array():
    s = np.linspace(-7, 5, 50)
    F = tracy_widom_cdf(s, beta=1)
    assert F.shape == (50,) and np.all(np.diff(F) > 0)
    assert integrate.quad(lambda v: tracy_widom_pdf(v, beta=2), -9, 6, limit=100)[0] == pytest.approx(1.0, abs=1e-7)


def test_edge_scaling_and_margin():
    c, sc = largest_sv_scaling(1000, 2000)
    r = largest_sv_scaling(1000, 2000)
    assert (r.center, r.scale) == (c, sc) and r.to_dict() == {"center": c, "scale": sc}
    assert largest_sv_scaling(1000, 2000, var=4.0).center == pytest.approx(2 * c, rel=1e-14)
    with pytest.raises(TypeError):
        edge_margin(1000, 2000, 1.0)  # var is keyword-only
    assert c == pytest.approx(1 + math.sqrt(0.5), rel=2e-3)
    assert 0 < sc < 0.02
    # margin grows with p and shrinks with N (scale ~ N^-2/3)
    assert edge_margin(500, 500, p=0.5) < edge_margin(500, 500, p=0.99)
    m1 = edge_margin(500, 500) - 2.0
    m2 = edge_margin(4000, 4000) - 2.0
    assert m2 / m1 == pytest.approx(8 ** (-2 / 3), rel=0.15)
    # var scaling
    assert edge_margin(300, 600, var=4.0) == pytest.approx(2 * edge_margin(300, 600), rel=1e-14)
    # symmetric in the orientation of W up to the var convention (W^T has entries var N/d / N)
    assert edge_margin(300, 600) == pytest.approx(edge_margin(600, 300, var=0.5), rel=1e-14)


@pytest.mark.parametrize("call,match", [
    (lambda: tracy_widom_cdf(0.0, beta=4), "beta"),
    (lambda: tracy_widom_cdf(0.0, beta=True), "beta"),
    (lambda: tracy_widom_cdf(float("nan"), beta=1), "s must"),
    (lambda: tracy_widom_quantile(1.0, beta=1), "p must"),
    (lambda: tracy_widom_quantile(0.0, beta=2), "p must"),
    (lambda: edge_margin(0, 10), "N must"),
    (lambda: edge_margin(10, 10, var=-1.0), "var"),
    (lambda: edge_margin(10, 10, p=1.5), "p must"),
    (lambda: edge_margin(10, 10, beta=3), "beta"),
])
def test_invalid_inputs(call, match):
    with pytest.raises(ValueError, match=match):
        call()
