"""The eigenvalue of M along an extreme sample over the whole law of y (rmtfl/theory/_two_step/whole_law.py;
docs/theory/two_step.md §8.3)."""
from __future__ import annotations

import math

import numpy as np
from scipy import integrate

from rmtfl.theory import make_target
from rmtfl.theory._two_step.whole_law import pv_inverse, whole_law_eigenvalue


def _dens(z):
    return math.exp(-0.5 * z * z) / math.sqrt(2 * math.pi)


def test_principal_value_against_cauchy_quadrature():
    """PV E[1/(v - g(z))] against scipy's Cauchy-weight quadrature around each real root (He1 + He2/2: two roots;
    He1 + He3/sqrt(6): one); measured 4e-14 and 1.4e-12 relative."""
    q = dict(limit=200, epsabs=1e-14, epsrel=1e-12)
    for coef, v in [([0, 1, 0.5], 8.68), ([0, 1, 0, 0.4082482904638631], -9.3)]:
        target = make_target("hermite(" + ", ".join(str(c) for c in coef) + ")")

        def g(z, c=coef):
            return float(np.polynomial.hermite_e.hermeval(z, c))
        shifted = np.array(coef, dtype=float)
        shifted[0] -= v
        roots = sorted(r.real for r in np.polynomial.hermite_e.HermiteE(shifted).roots() if abs(r.imag) < 1e-12)
        total, lo = 0.0, -12.0
        for r in roots:
            gp = (g(r + 1e-6) - g(r - 1e-6)) / 2e-6

            def rest(z, r=r, gp=gp):
                return _dens(z) * (z - r) / (v - g(z)) if z != r else -_dens(r) / gp
            total += integrate.quad(lambda z: _dens(z) / (v - g(z)), lo, r - 0.5, **q)[0]
            total += integrate.quad(rest, r - 0.5, r + 0.5, weight="cauchy", wvar=r, **q)[0]
            lo = r + 0.5
        total += integrate.quad(lambda z: _dens(z) / (v - g(z)), lo, 12.0, **q)[0]
        assert abs(pv_inverse(target, [v])[0] - total) < 1e-10 * abs(total)


def test_a_root_on_the_grid_and_an_extremum_of_the_link():
    """A root exactly on a grid point (z = 3.4) gives the same value as its neighbours; y = -1, the minimum of
    He1 + He2/2, is not resolved (NaN)."""
    target = make_target("hermite(0, 1, 0.5)")
    v = 3.4 + (3.4**2 - 1) / 2
    on, off = pv_inverse(target, [v, v + 1e-9])
    assert abs(on - off) < 1e-9 * abs(off)
    assert np.isnan(whole_law_eigenvalue(target, [-1.0], [-1.0], 2.0, 1000.0)[0])


def test_a_planted_sample_has_the_whole_law_eigenvalue():
    """d = 300, n = 600, one sample planted at z* = 3.4 in 40 drawn batches: the eigenvalue of M whose eigenvector
    leans most on it lies within 3 standard errors plus 5/d of the whole-law value."""
    target = make_target("hermite(0, 1, 0.5)")
    d, n, zi = 300, 600, 3.4
    rng = np.random.default_rng(11)
    vals = []
    for _ in range(40):
        X = rng.standard_normal((n, d))
        X[0, 0] = zi
        y = np.asarray(target.links[0](X[:, 0]), dtype=float)
        ev, V = np.linalg.eigh(X.T @ (y[:, None] * X) / n)
        vals.append(ev[-10:][np.argmax((V[:, -10:].T @ X[0]) ** 2)])
    m, se = np.mean(vals), np.std(vals, ddof=1) / math.sqrt(len(vals))
    assert abs(whole_law_eigenvalue(target, [target.links[0](zi)], [zi], 2.0, d)[0] - m) < 3 * se + 5.0 / d
