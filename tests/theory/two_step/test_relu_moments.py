"""Closed-form Gaussian expectations of relu's derivatives (rmtfl/theory/_two_step/relu_moments.py) against
adaptive quadrature of the same integrals over z (xi integrated out by hand: P(u > 0 | z) = Phi((z + c) / b),
E[delta(u) | z] = phi((z + c) / b) / b), split where the integrand jumps or steepens."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from scipy import integrate, stats

from rmtfl.theory import get_activation, make_target, two_step
from rmtfl.theory._two_step.finite_n import F_table, finite_n_setup
from rmtfl.theory._two_step.finite_n_inputs import check_finite_n_inputs
from rmtfl.theory._two_step.relu_moments import half_moments, relu_A, relu_B, relu_F_table, relu_h_moments

phi, Phi = stats.norm.pdf, stats.norm.cdf
RELU = get_activation("relu")
TARGET = make_target("hermite(0, 1, 0.5)")


def _zint(f, breaks=(), lo=-10.0, hi=10.0):
    pts = sorted({lo, hi, *[p for p in (0.0, *breaks) if lo < p < hi]})   # z = 0: the own term jumps
    return sum(integrate.quad(f, a, b, limit=200, epsabs=1e-13, epsrel=1e-12)[0] for a, b in zip(pts[:-1], pts[1:]))


@pytest.mark.parametrize("c, b", [(0.3, 0.5), (-0.7, 0.2), (1.5, 0.05), (0.0, 1.3), (-0.2, 1e-7), (0.4, 0.0)])
def test_half_line_integrals(c, b):
    for side, (lo, hi) in ((+1, (0.0, 10.0)), (-1, (-10.0, 0.0))):
        A, B = relu_A(c, b, side, 4), relu_B(c, b, side, 3)
        step = (lambda z: float(z + c > 0)) if b < 1e-6 else (lambda z: Phi((z + c) / b))
        for k in range(5):
            ref = _zint(lambda z: z**k * phi(z) * step(z), (-c,), lo, hi)
            assert float(A[k]) == pytest.approx(ref, abs=1e-10)
        for k in range(4):
            ref = ((-c) ** k * phi(c) * (lo < -c < hi) if b < 1e-6
                   else _zint(lambda z: z**k * phi(z) * phi((z + c) / b) / b, (-c,), lo, hi))
            assert float(B[k]) == pytest.approx(ref, abs=1e-10)
    assert np.allclose(half_moments(4, +1) + half_moments(4, -1), [1, 0, 1, 0, 3])


@pytest.mark.parametrize("batch", ["reused", "fresh"])
def test_F_table_for_relu_against_quadrature(batch):
    st = finite_n_setup(RELU, TARGET, phi=2.0, batch=batch, phi2=2.0 if batch == "fresh" else None)
    assert st.mu2 == pytest.approx(1 / np.sqrt(2 * np.pi), rel=1e-12)      # E[delta(z)]: relu's mu_2
    t = np.array([0.05, 0.5, 1.5, -0.8])
    F, C, S, Cz, dF, X1 = F_table(RELU, st, t)
    assert np.array_equal(Cz, C) and X1 is None     # relu keeps c for z's coefficient (docs/theory/two_step.md §8.2)
    # the closed forms with the own term (measured, not used: docs/theory/two_step.md §8.2); fresh: Stein, c_z = c
    *_, Cz, X1 = relu_F_table(st, t, full=True)
    if batch == "fresh":
        np.testing.assert_allclose(Cz, C, atol=1e-12)
    h = 1e-6                                # dF/ds = t mu_1 c: against a central difference of F in s
    Fs = [F_table(RELU, replace(st, s=st.s + e), t, bulk=False).F for e in (h, -h)]
    np.testing.assert_allclose(dF, (Fs[0] - Fs[1]) / (2 * h), atol=1e-7)
    for i in (0, 37, 200, 383):
        y, s = st.y[i], st.s[i]
        own = y / st.phi if batch == "reused" else 0.0      # the sample's own term y sigma'(z) / phi: z > 0 only
        for q, tq in enumerate(t):
            b = abs(tq) * st.tau_h
            c = lambda z: tq * (st.mu1 * s + own * (z > 0))    # noqa: E731
            breaks = (-tq * st.mu1 * s, -tq * (st.mu1 * s + own))
            assert F[q, i] == pytest.approx(_zint(lambda z: phi(z) * Phi((z + c(z)) / b), breaks), abs=1e-9)
            assert C[q, i] == pytest.approx(_zint(lambda z: phi(z) * phi((z + c(z)) / b) / b, breaks), abs=1e-9)
            # c_z = E[z sigma'(u)], the own term's jump at z = 0 included, and E[zeta_1(z) sigma'(u)] with the
            # first step's remainder zeta_1(z) = 1{z > 0} - 1/2 - phi(0) z (docs/theory/two_step.md §8.2)
            P = lambda z: Phi((z + c(z)) / b)                       # noqa: E731
            assert Cz[q, i] == pytest.approx(_zint(lambda z: z * phi(z) * P(z), breaks), abs=1e-9)
            ref = _zint(lambda z: ((z > 0) - 0.5 - st.mu2 * z) * phi(z) * P(z), breaks)
            assert X1[q, i] == pytest.approx(ref, abs=1e-9)
    assert np.array_equal(S, F)                                       # sigma'^2 = sigma'


@pytest.mark.parametrize("which", ["both", "first", "second"])
def test_column_moments_for_relu_against_quadrature(which):
    st = finite_n_setup(RELU, TARGET, phi=2.0, batch="reused", phi2=None)
    ys, zs, t = np.array([3.0, -2.0, 7.5]), np.array([1.2, -0.9, 2.4]), np.array([0.3, 1.1, -0.05])
    eta1, eta2 = 2.0, 5.0
    mom = relu_h_moments(st, t=t, ys=ys, zs=zs, eta1=eta1, eta2=eta2, which=which)
    for si in range(ys.size):
        s, own = st.mus * zs[si], (ys[si] / st.phi if which == "both" else 0.0)
        for q, tq in enumerate(t):
            b = abs(tq) * st.tau_h
            breaks = (-tq * st.mu1 * s, -tq * (st.mu1 * s + own))
            p2 = lambda z: Phi((z + tq * (st.mu1 * s + own * (z > 0))) / b)       # noqa: E731  P(b2 = 1 | z)
            Fbar = _zint(lambda z: phi(z) * p2(z), breaks)

            def h(z, b2):
                return ((eta1 * ((z > 0) - st.mu1) if which != "second" else 0.0)
                        + (eta2 * (b2 - Fbar) if which != "first" else 0.0))
            for k, m in ((0, 2), (1, 1), (0, 4), (1, 3), (2, 2), (3, 1)):
                ref = _zint(lambda z: phi(z) * z**k * (p2(z) * h(z, 1.0) ** m + (1 - p2(z)) * h(z, 0.0) ** m), breaks)
                assert mom[k, m][si, q] == pytest.approx(ref, rel=1e-8, abs=1e-9)
            # E[xi h]: only b2 = 1{a + t tau_h xi > 0} sees xi, and E[xi 1{a + beta xi > 0}] = sign(beta) phi(a / |beta|)
            a = lambda z: z + tq * (st.mu1 * s + own * (z > 0))                # noqa: E731
            ref = eta2 * np.sign(tq) * _zint(lambda z: phi(z) * phi(a(z) / b), breaks) if which != "first" else 0.0
            assert mom["xi"][si, q] == pytest.approx(ref, rel=1e-8, abs=1e-9)


def test_relu_takes_the_finite_n_route_and_other_steps_do_not():
    p = two_step("relu", "hermite(0, 1, 0.5)", psi=1.0, phi=2.0, eta1=1000**0.3, eta2=1000**0.3, N=1000)
    assert p.mode == "finite-N" and p.bulk == "finite-N"
    for name in ("step", "relu^2"):
        with pytest.raises(ValueError, match="activation"):
            check_finite_n_inputs(get_activation(name), TARGET, 1000)
