"""benchmarks/diag_sample_coupling.py: the planted sample's value taken apart into its column and P
(docs/theory/two_step.md §8.4, "The columns and P taken apart").

Reference: the draw's own singular values.  The determinant of the dilation, cross terms kept, vanishes exactly at
every singular value of ``W_2`` above the rest's top (and changes sign there); without ``P`` the column's denominator
``D'`` vanishes at the column's own value in ``H``.
"""
from __future__ import annotations

import numpy as np

from scipy import optimize

from benchmarks.diag_sample_coupling import HE3, DrawPieces, coupled_samples, planted_draw
from rmtfl.theory import make_target
from rmtfl.theory._two_step import sample_coupling


def test_the_determinant_vanishes_at_the_draws_singular_values():
    tgt = make_target(HE3)
    for seed, alphas in [(7000, (0.2, 0.4)), (7001, (0.0, 0.4))]:
        W2, H, e, lam, ell = planted_draw(tgt, N=240, alphas=alphas, z=-3.6, seed=seed)
        ex = DrawPieces(W2, H, e, ell)
        sw = np.linalg.svd(W2, compute_uv=False)
        above = sw[sw > ex.sb[0] * 1.001]
        assert above.size >= 2
        for v in above:
            lo, hi = ex.determinant(v * (1 - 1e-7)), ex.determinant(v * (1 + 1e-7))
            assert lo * hi < 0, (v, lo, hi)
        gaps = 0.5 * (above[1:] + above[:-1])            # and nowhere between them
        assert all(ex.determinant(g) != 0.0 for g in gaps)
        # the column alone (no P): its denominator D' vanishes at a singular value of H
        sh = np.linalg.svd(H, compute_uv=False)
        grid = np.linspace(ex.sb[0] * (1 + 1e-6), 3.0 * np.linalg.norm(ell) + 10.0, 200)
        d = [ex(s)[0] for s in grid]
        i = next(i for i in range(grid.size - 1) if d[i] < 0 <= d[i + 1])
        r0 = optimize.brentq(lambda s: ex(s)[0], grid[i], grid[i + 1], xtol=1e-12)
        assert np.min(np.abs(sh - r0)) < 1e-7 * r0


def test_coupled_samples_switches_the_flag_and_restores_it():
    assert sample_coupling.COUPLE_SAMPLES is False
    with coupled_samples():
        assert sample_coupling.COUPLE_SAMPLES is True
    assert sample_coupling.COUPLE_SAMPLES is False


def test_the_other_extreme_columns_lift_the_top_one():
    # second order in the off-diagonal entries: every other column lies below the top one, so each lifts it
    from benchmarks.diag_sample_coupling import QUADRATIC, part_repulsion

    alone, lifted = part_repulsion(make_target(QUADRATIC), N=1000, alphas=(0.4, 0.4))
    assert alone < lifted < 1.1 * alone


def test_repelled_columns_lift_the_top_sample_and_restore_the_law():
    from benchmarks.diag_sample_coupling import QUADRATIC, columns_alone, repelled_columns
    from rmtfl.theory import get_activation
    from rmtfl.theory._two_step import sample_order

    act, tgt, kept = get_activation(QUADRATIC), make_target(QUADRATIC), sample_order.tail_law
    alone = columns_alone(act, tgt, N=1000, alphas=(0.4, 0.4))
    with repelled_columns():
        assert sample_order.tail_law is not kept
        lifted = columns_alone(act, tgt, N=1000, alphas=(0.4, 0.4))
    assert sample_order.tail_law is kept
    assert alone[0] < lifted[0] < 1.1 * alone[0]       # measured +3.2 %, as --part repulsion's +3.5 %
