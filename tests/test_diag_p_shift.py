"""P's spectral shift below the bulk's fold (benchmarks/diag_p_shift.py; docs/theory/two_step_attempts.md §28)."""
import math

import numpy as np

from benchmarks.diag_p_shift import count_draws, p_parts, p_phase, p_shift, predicted_shifts


def _quadratic(N=1000, a=0.4):
    from benchmarks.diag_block import quadratic_bulk
    from benchmarks.diag_quadratic_parts import QUADRATIC
    from rmtfl.theory import get_activation, make_target

    act, tgt = get_activation(QUADRATIC), make_target(QUADRATIC)
    bulk = quadratic_bulk(N, N**a, N**a, 12)
    return bulk, p_parts(act, tgt, phi=2.0, phi2=None, batch="reused", eta1=N**a, eta2=N**a, N=float(N))


def test_the_phase_above_the_fold_is_the_master_equation():
    """Above the fold the determinant from the continued kernels (resolvent_below at x + 1e-9 i) is
    det(I - x tt G_U(tau) G_V) from the bulk's Newton-solved kernels there (tau_rows): two independent routes to
    the same matrix; its sign is (-1)^r, r the master equation's roots above x
    (rmtfl.theory._two_step.widened_bulk.master_eigs)."""
    from rmtfl.theory._two_step.finite_n import weighted_gram_u
    from rmtfl.theory._two_step.widened_bulk import master_eigs

    bulk, (G_V, g, wg) = _quadratic()
    for s in (1.05, 1.5, 4.0):
        x = np.array([s * bulk.x_edge])
        t, _ = bulk.resolvent_below(x, 1e-9 * bulk.x_edge, levels=12, sweeps=60)
        det = p_phase(bulk, G_V, g, wg, 1000.0, x + 1e-9j * bulk.x_edge, t)[0]
        tq, ttm = bulk.tau_rows(g / math.sqrt(1000), x[0])
        ref = np.linalg.det(np.eye(g.size + 1) - x[0] * ttm * weighted_gram_u(g, wg)(tq) @ G_V)
        assert abs(det.imag) < 1e-6 * abs(det) and abs(det.real - ref) < 1e-8 * abs(ref)
        r = int(np.sum(master_eigs(bulk, math.sqrt(x[0]), weighted_gram_u(g, wg), G_V, g, 1000) > 1.0))
        assert np.sign(det.real) == (-1) ** r


def test_p_takes_values_from_the_bulk_top_only_below_the_fold():
    """The quadratic sigma, He1 + He2/2, (0.4, 0.4), N = 1000: zero at and above the fold, below it negative and
    larger the deeper (two spikes of P above the fold: xi_P from 2 down to 1.76 at 0.55 times the fold, s units)."""
    bulk, (G_V, g, wg) = _quadratic()
    x = bulk.x_edge * np.linspace(0.3, 1.02, 120)
    eta = 1e-3 * bulk.x_edge
    t, _ = bulk.resolvent_below(x, eta, levels=10, sweeps=20)
    sh = p_shift(bulk, G_V, g, wg, 1000.0, x, t, eta)
    assert np.all(sh[x >= bulk.x_edge] == 0.0)
    below = sh[x < bulk.x_edge]
    assert np.all(below <= 1e-9) and np.all(below > -2.0)
    assert below[0] < -0.15 and np.all(np.diff(below) >= -0.02)


def test_removing_columns_never_raises_a_count_and_the_bulk_count_follows_the_draws():
    """Per draw N(H_b) <= N(H) at every s (a column submatrix's singular values interlace below the matrix's), and
    over 6 small draws the bulk's predicted count near its fold (0.85 to 1.1 times it) lies within 3 standard errors
    and one value of the draws' N(H_b) at N = 200."""
    from benchmarks.diag_block import quadratic_bulk

    grid = math.sqrt(quadratic_bulk(200, 200**0.3, 200**0.3, 12).x_edge) * np.array([0.85, 0.95, 1.0, 1.1])
    cH, cB, cW, cWb = count_draws(N=200, eta1=200**0.3, eta2=200**0.3, draws=6, grid=grid)
    assert cH.shape == cB.shape == cW.shape == cWb.shape == (6, 4)
    assert np.all(cB <= cH)
    bulk, _, xi = predicted_shifts(N=200, eta1=200**0.3, eta2=200**0.3, grid=grid)
    assert np.all(np.abs(bulk - cB.mean(0)) <= 3 * cB.std(0, ddof=1) / math.sqrt(6) + 1.0)
    assert np.all(np.diff(xi) >= -1e-9)
