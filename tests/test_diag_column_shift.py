"""The extreme samples' columns back in the bulk's top values (benchmarks/diag_column_shift.py;
docs/theory/two_step_attempts.md §15)."""
import numpy as np

from benchmarks.diag_column_shift import column_shift, left_out_columns, left_out_shift


def _bulk(act="tanh"):
    from rmtfl.theory import get_activation, make_target
    from rmtfl.theory._two_step.finite_n import bulk_without, extreme_ranks, finite_n_grams, finite_n_setup

    a, tgt, N = get_activation(act), make_target("linear"), 1000
    st = finite_n_setup(a, tgt, phi=2.0, batch="reused", phi2=None)
    tn = finite_n_grams(a, st, eta1=N**0.4, eta2=N**0.4, N=N, bulk=False)[3]
    K = extreme_ranks(N=N, psi=1.0, phi=2.0, phi2=None, batch="reused")
    bulk = bulk_without(a, tgt, st, ranks=K, eta1=N**0.4, eta2=N**0.4, N=N, psi=1.0, tn=tn)
    return a, tgt, st, bulk, K


def test_the_left_out_columns_are_the_samples_beyond_the_cut_and_their_shift_lifts_the_top_only_below_the_fold():
    """A linear target, tanh, (0.4, 0.4), N = 1000: the K = 12 samples beyond the bulk's cut, none of them above its
    threshold, add between 0 and 12 eigenvalues above each point below the fold, more the lower the point (up to the
    damped fixed point's roughness just below the fold, 0.02 here), and none above it: 0.85 at 0.9 times the fold."""
    act, tgt, st, bulk, K = _bulk()
    V, counts = left_out_columns(act, tgt, st, bulk, eta1=1000**0.4, eta2=1000**0.4, N=1000, psi=1.0, K=K)
    assert abs(counts.sum() - K) < 0.05 * K
    x = bulk.x_edge * np.linspace(0.9, 1.02, 40)
    t, _ = bulk.resolvent_below(x, 0.01 * bulk.x_edge / 40)
    shift = left_out_shift(bulk, x, t, (V, counts))
    assert np.all(shift[x >= bulk.x_edge] == 0.0)
    below = shift[x < bulk.x_edge]
    assert np.all(below >= -1e-9) and np.all(below <= counts.sum() + 1e-9)
    assert np.all(np.diff(below) <= 0.05) and below[0] > 0.5


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
