"""benchmarks/diag_fresh_sample.py: a first-batch sample under the second step
(docs/theory/two_step_attempts.md §6)."""
from __future__ import annotations

import math

import numpy as np

from benchmarks.diag_fresh_sample import column_models, simulate
from rmtfl.theory import get_activation, make_target

QUAD, H2, H3 = "hermite(0, 1, 0.5)", "hermite(0, 1, 0.5)", "hermite(0, 1, 0, 0.4082482904638631)"


def test_models_reduce_to_the_prediction_where_the_second_step_has_no_identity_part():
    """The quadratic sigma's second step has no identity part (e_j = 0): "e2" is the prediction's column itself,
    and the 2 x 2 block, whose top eigenvalue is at least its (u, u) entry, only lifts the root."""
    y, roots, edge, rows = column_models(get_activation(QUAD), make_target(H2), N=400, alphas=(0.4, 0.4), z=5.0)
    assert y == 17.0
    for lam in ("bulk's samples", "whole law"):
        assert math.isclose(roots[f"e2, {lam}"], roots[f"scalar, {lam}"], rel_tol=1e-12)
        assert roots[f"2x2, {lam}"] > roots[f"e2, {lam}"] > edge
    np.testing.assert_allclose(rows["e2"], rows["scalar"], rtol=1e-12)


def test_identity_part_shrinks_the_excess_for_tanh():
    """tanh's second step shrinks each row (e_j < 0 at large |a_j|): the factor (1 + e_j)^2 lowers the column's
    variance in the outer rows and its root (docs/theory/two_step.md §8.3: 32.2 -> 26.1 at N = 1000)."""
    y, roots, edge, rows = column_models(get_activation("tanh"), make_target(H3), N=400, alphas=(0.4, 0.4), z=4.0)
    assert rows["e2"][0] < rows["scalar"][0] and rows["e2"][-1] < rows["scalar"][-1]
    assert edge < roots["e2, whole law"] < roots["scalar, whole law"]


def test_simulation_runs_and_finds_the_planted_sample():
    with_p, without_p, col, col_g = simulate(get_activation("tanh"), make_target(H3), N=120, alphas=(0.4, 0.4), z=4.0,
                                             draws=2)
    assert len(with_p) == len(without_p) == 2
    assert np.all(np.isfinite(col)) and np.all(np.isfinite(col_g))
    assert col[-1] > col_g[-1]                      # the planted sample's column stands out in the outer rows


def test_joint_problem_couples_the_planted_column_to_p():
    """The planted column alone in the joint problem has the column's own root; coupled to the spikes of P it moves
    (tanh at N = 1000: 2.464 -> 2.496, docs/theory/two_step.md §8.3; at N = 400 it moves down instead)."""
    from benchmarks.diag_fresh_sample import coupled_root

    act, tgt = get_activation("tanh"), make_target(H3)
    coupled, alone = coupled_root(act, tgt, N=1000, alphas=(0.4, 0.4), z=4.0)
    _, roots, _, _ = column_models(act, tgt, N=1000, alphas=(0.4, 0.4), z=4.0)
    assert math.isclose(alone, roots["scalar, whole law"], rel_tol=1e-6)
    assert abs(coupled / alone - 1) > 5e-3            # the coupling moves it (the size is the measurement)


def test_quadratic_h_is_w2_less_a_rank_two_part():
    """For sigma = He1 + He2/2 and one batch, ``W_2 - quadratic_h`` has rank two exactly (the parts along ``a``;
    docs/theory/two_step.md §5.4): its third singular value is at rounding level, its second is not."""
    from benchmarks.diag_fresh_sample import quadratic_h
    from rmtfl.numerics._two_step.model import gd_steps, sample_targets

    N = d = 120
    n = 240
    rng = np.random.default_rng(3)
    W0 = rng.standard_normal((N, d)) / math.sqrt(d)
    a = rng.standard_normal(N) / math.sqrt(N)
    X = rng.standard_normal((n, d))
    y = sample_targets(X, target=make_target(H3))
    eta1, eta2 = N**0.3, N**0.4
    W2 = gd_steps(get_activation(QUAD), W0, a, (X, y), etas=(eta1, eta2))
    s = np.linalg.svd(W2 - quadratic_h(W0, a, X, y, eta1, eta2), compute_uv=False)
    assert s[1] > 1.0 and s[2] < 1e-12 * s[0]
