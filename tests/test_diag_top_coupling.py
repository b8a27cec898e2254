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


def test_top_coupling_limits():
    as_is = _values(two_step(*ARGS, **KW))
    with coupled_samples():
        every = _values(two_step(*ARGS, **KW))
    with top_coupling(0.0):
        none = _values(two_step(*ARGS, **KW))
    with top_coupling(1e6):
        all_top = _values(two_step(*ARGS, **KW))
    # with no sample coupled the law still takes the coupled path (its monotone envelope in s, the secant's stopping
    # rule on another grid): the same values to 1e-7, against shifts of a few per cent
    assert none == pytest.approx(as_is, rel=1e-6)
    assert all_top == pytest.approx(every, rel=1e-12)
    assert every != pytest.approx(as_is, rel=1e-3)           # the coupling moves this point's values
