"""The spikes of P taking up sample outliers in the count (benchmarks/diag_absorb.py;
docs/theory/two_step_attempts.md §34)."""
import numpy as np
import pytest
from scipy import stats

from benchmarks.diag_absorb import absorbing, taken_up

HE3 = "hermite(0, 1, 0, 0.4082482904638631)"


@pytest.mark.parametrize("a", [0.0, 0.3, 1.0, 1.6, 3.0])
def test_taken_up_is_the_mean_of_the_process_points_capped_at_a(a):
    """E[min(X, a)] for X Poisson, summed over its law directly: integer and fractional a alike."""
    lam = np.array([0.05, 0.7, 2.0, 9.0])
    k = np.arange(200)
    direct = [float(np.sum(np.minimum(k, a) * stats.poisson.pmf(k, m))) for m in lam]
    assert np.allclose(taken_up(lam, a), direct, rtol=0, atol=1e-12)


def test_the_absorbing_count_lives_inside_its_block():
    """gelu with He1 + He3/sqrt6 at (0, 0.4), N = 1000, reused: the second spike root is mostly a sample (weight of
    P's block below 1/2), and taking up its share lowers the count; outside the block the prediction is as before."""
    from rmtfl.theory import two_step
    from rmtfl.theory._two_step import finite_n, two_step as module

    def count():
        return len(two_step("gelu", HE3, psi=1.0, phi=2.0, eta1=1.0, eta2=1000**0.4, N=1000).outliers)

    before = (finite_n.spike_roots, module.count_through_process, module.predict_finite_n)
    as_is = count()
    with absorbing(None) as seen:
        assert count() == as_is
        weights = [w for _, w in seen["joint"]]
    assert len(weights) == 2 and weights[1] < 0.5 < weights[0]
    with absorbing("weights"):
        assert count() == as_is - 1
    assert (finite_n.spike_roots, module.count_through_process, module.predict_finite_n) == before
    assert count() == as_is
    with pytest.raises(ValueError, match="mode must be one of"):
        with absorbing("spikes"):
            pass
