"""Tests of rmtfl.theory._spiked_kernel.zonal (docs/theory/spiked_kernel.md §5.3–§5.5).

References: b = 0 gives the Funk–Hecke mu_0 (closed form); the odd sector is exactly A(1+b)/(4d)
(docs/theory/spiked_kernel.md §5.1); first-order matrix elements tend to 1/(2 pi d) and sqrt(2)/(4 pi d) (§5.3); the finite-d
operator with b = rho d tends to the d -> inf operator (docs/theory/spiked_kernel.md §5.5).  Overlaps are squared (docs/conventions.md §1):
``overlaps = amplitudes**2`` with signed amplitudes ``<f, Y_ell>``.
"""
import math

import numpy as np
import pytest

from rmtfl.theory import dk_dB_relu
from rmtfl.theory._spiked_kernel.sphere import jacobi_rule, sphere_eigenvalues, zonal_harmonic
from rmtfl.theory._spiked_kernel.zonal import first_order_mixing, zonal_limit_operator, zonal_operator, zonal_top_eigenfunction


def test_b0_is_isotropic():
    z = zonal_top_eigenfunction("relu", d=10, b=0.0, mixing=False)
    assert z.eigenvalue == pytest.approx(sphere_eigenvalues("relu", d=10, kmax=0).mu[0], abs=1e-12)
    assert abs(z.overlaps[0] - 1) < 1e-12 and abs(z.overlaps[2]) < 1e-24
    assert abs(z.amplitudes[0] - 1) < 1e-12 and abs(z.amplitudes[2]) < 1e-12
    assert z.odd_eigenvalue == pytest.approx(1 / 40, abs=1e-12)


@pytest.mark.parametrize("d,b", [(5, 3.0), (10, 20.0), (30, 5.0), (200, 400.0)])
def test_odd_sector_and_scale(d, b):
    z = zonal_top_eigenfunction("relu", d=d, b=b, A=0.5, mixing=False, n_u=100, n_c=100)
    assert z.odd_eigenvalue == pytest.approx(0.5 * (1 + b) / (4 * d), rel=1e-10)
    assert z.eigenvalue > z.odd_eigenvalue
    z1 = zonal_top_eigenfunction("relu", d=d, b=b, A=1.0, mixing=False, n_u=100, n_c=100)
    assert z.eigenvalue == pytest.approx(0.5 * z1.eigenvalue, rel=1e-12)
    assert np.allclose(z.amplitudes, z1.amplitudes, atol=1e-10)
    assert np.array_equal(z.overlaps, z.amplitudes**2) and np.all(z.overlaps >= 0)
    assert 0.99 < sum(z.overlaps) <= 1 + 1e-10  # Parseval: Y_0..Y_6 carry almost all of f
    assert z.amplitudes[0] > 0 and z.amplitudes[2] > 0  # relu: the spike mixes Y_2 in with a positive sign


def test_quadrature_convergence():
    a = zonal_top_eigenfunction("relu", d=10, b=20.0, n_u=120, n_c=120, mixing=False)
    b = zonal_top_eigenfunction("relu", d=10, b=20.0, n_u=200, n_c=200, mixing=False)
    assert abs(a.amplitudes[2] - b.amplitudes[2]) < 1e-6 and abs(a.eigenvalue - b.eigenvalue) < 1e-8
    assert abs(a.overlaps[2] - b.overlaps[2]) < 2e-6


def test_first_order_mixing_high_d():
    for d in (100, 1000):
        m = first_order_mixing("relu", d=d, n_u=100, n_c=100)
        assert m.dY0Y0 * 2 * math.pi * d == pytest.approx(1, rel=1.5 / d)
        assert m.dY2Y0 * 4 * math.pi * d / math.sqrt(2) == pytest.approx(1, rel=1.5 / d)
        assert m.eps_over_b == pytest.approx(1 / (math.sqrt(2) * d), rel=2.0 / d)


def test_first_order_matches_analytic_derivative():
    # <Y2, dK Y0> from the closed-form dk/dB (docs/theory/spiked_kernel.md §5.2) averaged over the zonal measure vs central difference
    d, n = 8, 80
    u, w = jacobi_rule(n, (d - 3) / 2)
    c, wc = jacobi_rule(n, (d - 4) / 2)
    v = np.eye(d)[0]
    D = np.zeros((n, n))
    for i in range(n):
        x = np.zeros((1, d))
        x[0, 0], x[0, 1] = u[i], math.sqrt(1 - u[i] ** 2)
        Xp = np.zeros((n * n, d))
        Xp[:, 0] = np.repeat(u, n)
        r = np.sqrt(1 - np.repeat(u, n) ** 2)
        Xp[:, 1] = r * np.tile(c, n)
        Xp[:, 2] = r * np.sqrt(1 - np.tile(c, n) ** 2)
        D[i] = (dk_dB_relu(x, Xp, v)[0].reshape(n, n) @ wc)
    y0, y2 = zonal_harmonic(0, d, u), zonal_harmonic(2, d, u)
    analytic = float((w * y2) @ D @ (w * y0))
    m = first_order_mixing("relu", d=d, n_u=n, n_c=n)
    assert analytic == pytest.approx(m.dY2Y0, rel=1e-6)


def test_limit_operator():
    assert zonal_limit_operator(0.0).eigenvalue == pytest.approx(1 / (2 * math.pi), abs=1e-12)
    for rho in (0.1, 1.0, 10.0):
        z = zonal_limit_operator(rho)
        assert z.odd_eigenvalue == pytest.approx(rho / 4, rel=1e-9)
    small = zonal_limit_operator(1e-3)
    assert small.tan_mix == pytest.approx(1e-3 / math.sqrt(2), rel=1e-2)
    fin = zonal_top_eigenfunction("relu", d=400, b=400.0, mixing=False)
    lim = zonal_limit_operator(1.0)
    assert abs(fin.amplitudes[2] - lim.amplitudes[2]) < 5e-3 and abs(fin.eigenvalue - lim.eigenvalue) < 5e-3
    assert abs(fin.overlaps[2] - lim.overlaps[2]) < 2 * 5e-3 * abs(lim.amplitudes[2]) + 2.5e-5
    assert np.array_equal(lim.overlaps, lim.amplitudes**2)


def test_other_activations_run():
    z = zonal_top_eigenfunction("erf", d=10, b=5.0, mixing=False, n_u=60, n_c=60)
    assert 0 < z.overlaps[0] <= 1 and 0 < z.amplitudes[0] <= 1
    op = zonal_operator("step", d=6, b=2.0, n_u=40, n_c=40)
    assert np.allclose(op.matrix, op.matrix.T) and op.nodes.shape == op.weights.shape == (40,)
    assert abs(op.weights.sum() - 1) < 1e-12 and op.to_dict() == {"d": 6, "b": 2.0, "A": 1.0}


def test_bad_input():
    with pytest.raises(ValueError, match="d must be"):
        zonal_top_eigenfunction("relu", d=1, b=1.0)
    with pytest.raises(ValueError, match="b must be"):
        zonal_top_eigenfunction("relu", d=10, b=-1.0)
    with pytest.raises(ValueError, match="A must be"):
        zonal_top_eigenfunction("relu", d=10, b=1.0, A=-1.0)
