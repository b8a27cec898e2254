"""The extreme samples' columns back in the bulk's top values (benchmarks/diag_column_shift.py;
docs/theory/two_step_attempts.md §15)."""
import numpy as np

import pytest

from benchmarks.diag_column_shift import column_shift, converged_kernels, left_out_columns, left_out_shift, shift_on


def _bulk(act="tanh"):
    from rmtfl.theory import get_activation, make_target
    from rmtfl.theory._two_step.finite_n import extreme_ranks, prediction_bulk

    a, tgt, N = get_activation(act), make_target("linear"), 1000
    st, bulk = prediction_bulk(a, tgt, psi=1.0, phi=2.0, phi2=None, eta1=N**0.4, eta2=N**0.4, batch="reused", N=N)
    return a, tgt, st, bulk, extreme_ranks(N=N, psi=1.0, phi=2.0, phi2=None, batch="reused")


def test_the_left_out_columns_are_the_samples_beyond_the_cut_and_their_shift_lifts_the_top_only_below_the_fold():
    """A linear target, tanh, (0.4, 0.4), N = 1000: the K = 12 samples beyond the bulk's cut, none of them above its
    threshold, add between 0 and 12 eigenvalues above each point below the fold, more the lower the point, and none
    above it: 0.9 at 0.9 times the fold."""
    act, tgt, st, bulk, K = _bulk()
    V, counts = left_out_columns(act, tgt, st, bulk, eta1=1000**0.4, eta2=1000**0.4, N=1000, psi=1.0, K=K)
    assert abs(counts.sum() - K) < 0.05 * K
    x = bulk.x_edge * np.linspace(0.9, 1.02, 40)
    shift = shift_on(bulk, x, (V, counts), 1e-5 * bulk.x_edge)
    assert np.all(shift[x >= bulk.x_edge] == 0.0)
    below = shift[x < bulk.x_edge]
    assert np.all(below >= -1e-9) and np.all(below <= counts.sum() + 1e-9)
    assert np.all(np.diff(below) <= 1e-6) and below[0] > 0.5


def _mp_bulk(N):
    """The widened bulk with no step at all: ``W_0``'s Marchenko–Pastur law at ``psi = 1``."""
    from rmtfl.theory import get_activation, make_target
    from rmtfl.theory._two_step.finite_n import bulk_without, finite_n_grams, finite_n_setup

    act, tgt = get_activation("tanh"), make_target("hermite(0, 1, 0.5)")
    st = finite_n_setup(act, tgt, phi=2.0, batch="reused", phi2=None)
    tn = finite_n_grams(act, st, eta1=0.0, eta2=0.0, N=N, bulk=False)[3]
    return bulk_without(act, tgt, st, ranks=0, eta1=0.0, eta2=0.0, N=N, psi=1.0, tn=tn)


@pytest.mark.parametrize("v", [0.5, 4.0])
def test_a_columns_spectral_shift_against_simulation(v):
    """One column of entries ``N(0, v / d)`` added to ``W_0`` (``N = d = 150``, 600 draws, the same ``W_0`` with and
    without it): the mean number of eigenvalues of ``H H^T`` it adds above ``x`` is within 3.5 standard errors plus
    ``2 / N`` (the deterministic equivalent's finite-size error) of ``arg(1 - Q(x + i0)) / pi``, below the column's
    threshold (``v = 0.5``: none added at the fold) and above it (``v = 4``: its outlier, one above the fold)."""
    N = 150
    bulk = _mp_bulk(N)
    xs = np.array([1.0, 2.0, 3.0, bulk.x_edge])
    t = converged_kernels(bulk, xs, 1e-5)
    cols = (np.full((1, bulk.a.size), v), np.array([1.0]))
    at_fold = float(np.angle(1.0 - bulk.red.psi * complex(((-t[-1]) * bulk.wa) @ cols[0][0]))) / np.pi
    assert at_fold == pytest.approx(1.0 if v > 1.0 else 0.0, abs=0.01)
    formula = left_out_shift(bulk, xs, t, cols)[:3] + at_fold
    rng = np.random.default_rng(7)
    added = []
    for _ in range(600):
        W = rng.standard_normal((N, N)) / np.sqrt(N)
        c = rng.standard_normal((N, 1)) * np.sqrt(v / N)
        e0 = np.linalg.svd(W, compute_uv=False) ** 2
        e1 = np.linalg.svd(np.hstack([W, c]), compute_uv=False) ** 2
        added.append([(e1 > x).sum() - (e0 > x).sum() for x in xs[:3]])
    added = np.array(added, float)
    se = added.std(0, ddof=1) / np.sqrt(len(added))
    assert np.all(np.abs(added.mean(0) - formula) < 3.5 * se + 2.0 / N), (added.mean(0), formula, se)


def test_the_shift_is_taken_as_zero_at_the_fold_and_converged_off_the_axis():
    """The quadratic sigma with He1 + He2/2 at (0.2, 0.3), N = 1000 (the diagnostic's point of
    docs/theory/two_step_attempts.md §38): the shift that the count reads (0.003 Tracy–Widom scales off the axis)
    moves by less than 0.05 values from a third of that, while the bulk's own eight levels of twelve sweeps at
    0.01 scales, read from the grid's last point below the fold, leave it more than 0.1 values lower deep."""
    from benchmarks.diag_count_parts import QUAD, HE2, _captured, shift_below
    from benchmarks.diag_column_shift import point_left_out_columns
    from rmtfl.theory._two_step.poisson_count import edge_fit

    got = _captured(column_shift("without", shift=False), QUAD, HE2, 0.2, 0.3, 1000)
    bulk, fold = got["bulk"], got["fold"]
    scale = edge_fit(got["bulk_top"])[1]
    cols = point_left_out_columns(*got["point"], bulk, N=1000, psi=got["psi"])
    y, a = shift_below(bulk, cols, fold, scale)
    _, b = shift_below(bulk, cols, fold, scale, eta=0.001)
    assert a.max() > 1.0 and np.abs(a - b).max() < 0.05
    x = (fold + y[:-1] * scale) ** 2
    t, _ = bulk.resolvent_below(x, 0.01 * 2 * fold * scale)
    rough = left_out_shift(bulk, x, t, cols)
    assert a[0] - rough[0] > 0.1


def test_the_variant_lives_only_inside_its_block():
    from rmtfl.theory import two_step
    from rmtfl.theory._two_step import finite_n, two_step as two_step_module

    before = (finite_n.WidenedBulk, two_step_module.predict_finite_n)
    p0 = two_step("tanh", "linear", psi=1.0, phi=2.0, eta1=1000**0.4, eta2=1000**0.4, N=1000)
    with column_shift("without"):
        p1 = two_step("tanh", "linear", psi=1.0, phi=2.0, eta1=1000**0.4, eta2=1000**0.4, N=1000)
    assert (finite_n.WidenedBulk, two_step_module.predict_finite_n) == before
    assert p1.bulk_edge < p0.bulk_edge                     # d - K columns: a lower fold
    p2 = two_step("tanh", "linear", psi=1.0, phi=2.0, eta1=1000**0.4, eta2=1000**0.4, N=1000)
    assert p2.bulk_edge == p0.bulk_edge and p2.fitted_edge == p0.fitted_edge
