"""benchmarks/diag_block_law.py: the quadratic sigma's single samples from the block of heavy rows and extreme
columns, pushed by P, in place of the columns' law (docs/theory/two_step_attempts.md §27)."""
from __future__ import annotations

import numpy as np
import pytest

from benchmarks.diag_block import block_count, poisson_rank_means, quadratic_bulk
from benchmarks.diag_block_law import QUADRATIC, block_samples, push_shift
from rmtfl.theory import get_activation, make_target, two_step
from rmtfl.theory._two_step import finite_n as fn

N = 200
ETA = N ** 0.4


def test_the_push_of_p_lowers_the_blocks_count():
    """The columns' coupling to P below its lowest spike is a push down (docs/theory/two_step.md §8.3): with it the
    block's expected count above every point of its grid is no larger, and smaller near the fold."""
    act, tgt = get_activation(QUADRATIC), make_target(QUADRATIC)
    st = fn.finite_n_setup(act, tgt, phi=2.0, batch="reused", phi2=None)
    bulk = quadratic_bulk(N, ETA, ETA)
    shift = push_shift(act, st, bulk, eta1=ETA, eta2=ETA, N=float(N))
    s0, free = block_count(bulk, N=N, eta1=ETA, eta2=ETA, K=8, rows=2, cross=True, points=30)
    s1, pushed = block_count(bulk, N=N, eta1=ETA, eta2=ETA, K=8, rows=2, cross=True, shift=shift, points=30)
    np.testing.assert_array_equal(s0, s1)
    assert np.all(pushed <= free + 1e-9) and pushed[0] < free[0] - 0.1
    assert np.all(np.diff(free) <= 0) and poisson_rank_means(s0, free, 3)[0] > bulk.edge


def test_the_block_replaces_only_the_quadratic_sigmas_single_samples():
    """Within the block the quadratic sigma with He1 + He2/2 gets other single samples (its top one higher without
    the push: the heavy rows' lift), tanh's prediction is unchanged to the bit, and leaving the block restores it."""
    def first_sample(act):
        r = fn.predict_finite_n(get_activation(act), make_target(QUADRATIC), psi=1.0, phi=2.0, phi2=None, eta1=ETA,
                                eta2=ETA, batch="reused", N=float(N))
        return r.samples[0][0] if r.samples else None

    before, other = first_sample(QUADRATIC), two_step("tanh", QUADRATIC, psi=1.0, phi=2.0, eta1=ETA, eta2=ETA, N=N)
    with block_samples(push=False):
        lifted = first_sample(QUADRATIC)
        other_in = two_step("tanh", QUADRATIC, psi=1.0, phi=2.0, eta1=ETA, eta2=ETA, N=N)
    assert before is not None and lifted > before
    assert [o.singular_value for o in other_in.outliers] == [o.singular_value for o in other.outliers]
    assert first_sample(QUADRATIC) == before


@pytest.mark.parametrize("rows", [0, 3])
def test_deterministic_block_is_block_counts_poisson_ranks(rows):
    """The refactor of attempt 25's deterministic block: its rank means are the Poisson ranks of block_count."""
    from benchmarks.diag_block import deterministic_block

    bulk = quadratic_bulk(N, ETA, ETA)
    means, above = deterministic_block(bulk, N=N, eta1=ETA, eta2=ETA, K=4, rows=rows, ranks=3)
    s, count = block_count(bulk, N=N, eta1=ETA, eta2=ETA, K=4, rows=rows)
    assert means == poisson_rank_means(s, count, 3) and above == float(count[0])


def test_the_second_route_adds_to_the_push():
    """P's update of the bulk's row kernel (attempt 24's second route) changes the columns' shift besides the
    components, finitely, and the block pushed through both routes ranks its first sample below the unpushed block's
    (N = 200; at N = 500 and 1000 the two routes bring W2's first three ranks within 2.5 % of the draws')."""
    act, tgt = get_activation(QUADRATIC), make_target(QUADRATIC)
    st = fn.finite_n_setup(act, tgt, phi=2.0, batch="reused", phi2=None)
    bulk = quadratic_bulk(N, ETA, ETA)
    ys, zs = np.array([9.0, 7.0]), np.array([3.5, 3.07])
    one = push_shift(act, st, bulk, eta1=ETA, eta2=ETA, N=float(N))
    both = push_shift(act, st, bulk, eta1=ETA, eta2=ETA, N=float(N), left=True)
    s = 1.2 * bulk.edge
    c1, c2 = one(s, ys, zs), both(s, ys, zs)
    assert c1 is not None and c2 is not None and np.all(np.isfinite(c2)) and not np.allclose(c1, c2)

    def first(**kw):
        with block_samples(**kw):
            r = fn.predict_finite_n(act, tgt, psi=1.0, phi=2.0, phi2=None, eta1=ETA, eta2=ETA, batch="reused",
                                    N=float(N))
        return r.samples[0][0]
    assert first(left=True) < first(push=False)
