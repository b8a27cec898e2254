"""The extreme columns' strengths in draws against the single-sample law (benchmarks/diag_column_law.py;
docs/theory/two_step_attempts.md §30)."""
import numpy as np
import pytest
from scipy import integrate, stats

from benchmarks.diag_column_law import K, draw_columns, draw_measures, pole_rows, strength_sf


def test_one_row_type_gives_the_gamma_law_of_the_sum():
    """``N`` rows of one type: ``S`` is a gamma variable of shape ``N k`` (``k = 1/2``: a scaled chi-square)."""
    N, t = 1000, 0.9
    for v, shape in ((1.0, 0.5), (2.0, 1.7)):
        m2 = v * v * (1 + 1 / shape)
        got = strength_sf([v], [m2], [t], [1.0], psi=1.0, N=N)[0]
        ref = stats.gamma.sf(1.0, N * shape, scale=v * t / (shape * N))
        assert got == pytest.approx(ref, abs=1e-9)


def test_two_row_types_against_the_sum_over_their_numbers():
    """Two row types at ``N = 20``: ``P(S > 1)`` summed over the binomial number of rows of the second type, each
    term the convolution of two gamma laws (scipy quad)."""
    N, wa, t, v = 20, np.array([0.7, 0.3]), np.array([0.5, 2.0]), np.array([1.0, 1.5])
    shape = 0.5
    scale = v * t / (shape * N)
    ref = 0.0
    for m in range(N + 1):
        a1, a2 = shape * (N - m), shape * m
        if a2 == 0:
            p = stats.gamma.sf(1.0, a1, scale=scale[0])
        elif a1 == 0:
            p = stats.gamma.sf(1.0, a2, scale=scale[1])
        else:
            p = stats.gamma.sf(1.0, a1, scale=scale[0]) + integrate.quad(
                lambda u: stats.gamma.pdf(u, a1, scale=scale[0]) * stats.gamma.sf(1.0 - u, a2, scale=scale[1]),
                0.0, 1.0, epsabs=1e-12, limit=200)[0]
        ref += stats.binom.pmf(m, N, wa[1]) * p
    got = strength_sf(v, 3 * v * v, t, wa, psi=1.0, N=N)[0]
    assert got == pytest.approx(ref, abs=1e-8)


def test_the_columns_count_the_values_beyond_the_rest_at_every_s():
    """Haynsworth: ``N_H(x) - N_{H_b}(x)`` is the number of eigenvalues of ``T(x)`` above 1, above and below the
    top of ``H_b``; with a row kernel of ones the columns' strengths are their squared norms."""
    H, C, lam, Hb, a, W2 = draw_columns("hermite(0, 1, 0.5)", 120, (0.2, 0.3), seed=3)
    assert C.shape == (120, K) and Hb.shape == (120, 120 - K)
    top = np.linalg.svd(Hb, compute_uv=False)[0]
    s_values = top * np.array([0.8, 0.95, 1.02, 1.2])
    rows = draw_measures(H, C, lam, Hb, a, W2, s_values, alphas=(0.2, 0.3), N=120,
                         kernel=lambda r, x: np.ones(np.size(r)), rows=(np.array([0.0]), np.array([1.0])))
    for s, row in zip(s_values, rows):
        assert row[0] == row[3]
        assert row[9] == int((np.linalg.svd(H, compute_uv=False) > s).sum())
    assert np.allclose(rows[0][5], -np.sort(-(C**2).sum(0)))


def test_a_marchenko_pastur_bulk_has_no_row_beyond_a_pole():
    """At vanishing steps every row has the same profile: the row kernel is finite and positive at every ``|a|``
    above the edge, so no row stands out of the bulk on its own."""
    from tests.theory.two_step.mp_bulk import mp_bulk

    bulk = mp_bulk(1000)
    assert pole_rows(bulk, 1.01 * bulk.x_edge, 1000) == 0.0
