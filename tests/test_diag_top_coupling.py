"""The top-r coupling of benchmarks/diag_top_coupling.py (docs/theory/two_step_attempts.md §22): its weights, and its
two limits, no sample coupled and every sample coupled, against the prediction as it is and attempt 10's."""
import numpy as np
import pytest

from benchmarks.diag_sample_coupling import coupled_samples
from benchmarks.diag_top_coupling import top_coupling, top_weights
from rmtfl.theory import two_step


def test_top_weights_take_the_r_strongest_expected_samples():
    w = top_weights([1.0, 3.0, 2.0], [1.0, 0.5, 0.5], r=1.0)
    np.testing.assert_allclose(w, [0.0, 1.0, 0.5])          # 0.5 sample stronger than the middle one
    np.testing.assert_allclose(top_weights([1.0, 3.0, 2.0], [1.0, 0.5, 0.5], r=2.0), [1.0, 1.0, 1.0])
    np.testing.assert_allclose(top_weights([1.0, 3.0, 2.0], [1.0, 0.5, 0.5], r=0.0), [0.0, 0.0, 0.0])


KW = dict(psi=1.0, phi=2.0, eta1=500 ** 0.2, eta2=500 ** 0.3, N=500, extreme_samples="single")   # as measured
ARGS = ("hermite(0, 1, 0.5)", "hermite(0, 1, 0, 0.4082482904638631)")


def _values(p):
    return [o.singular_value for o in p.outliers]


def _spreads(p):
    return [o.spread for o in p.outliers]


def test_top_coupling_limits():
    runs = {"as_is": two_step(*ARGS, **KW)}
    with coupled_samples():
        runs["every"] = two_step(*ARGS, **KW)
    with top_coupling(0.0):
        runs["none"] = two_step(*ARGS, **KW)
    with top_coupling(1e6):
        runs["all_top"] = two_step(*ARGS, **KW)
    as_is, every, none, all_top = (_values(runs[k]) for k in ("as_is", "every", "none", "all_top"))
    # with no sample coupled the law still takes the coupled path (its monotone envelope in s, the secant's stopping
    # rule on another grid): the same values to 1e-7, against shifts of a few per cent
    assert none == pytest.approx(as_is, rel=1e-6)
    assert all_top == pytest.approx(every, rel=1e-12)
    assert _spreads(runs["none"]) == pytest.approx(_spreads(runs["as_is"]), rel=1e-6)
    assert _spreads(runs["all_top"]) == pytest.approx(_spreads(runs["every"]), rel=1e-12)
    # the coupling narrows this point's single samples' laws (their spreads 2.90 and 1.57 -> 2.34 and 0.85); their
    # values, whose means the joint problem of P with the extreme columns gives, it moves by less than 1e-3 since
    # the spikes' laws leave out the most extreme sample's part (docs/theory/two_step.md §8.3)
    assert _spreads(runs["every"]) != pytest.approx(_spreads(runs["as_is"]), rel=0.1)
