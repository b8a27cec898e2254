"""Peak memory of the two-step simulation (issue 8: within 4x the inputs X and W; no N x n x d tensor).

Two steps on one reused batch go through K = X X^T (the Gram route of rmtfl.numerics._two_step.model) and
keep W_0, X, the pre-activation Z (updated in place to W_1 X^T), S_0 and K: five N x d-sized arrays
at N = d = n, i.e. 2.5x the inputs; the spectrum comes after them and needs less.  Measured
with tracemalloc (numpy reports its buffers to it); the benchmark measures the RSS at N = 4000.
"""
import tracemalloc

import pytest

from rmtfl.numerics import simulate_two_step


@pytest.mark.parametrize("k", [None, 5])
def test_peak_memory_within_bound(k):
    n = 500
    simulate_two_step("tanh", "linear", N=40, d=40, n=40, eta1=1.0, eta2=1.0, k=k, rng=0)
    tracemalloc.start()
    simulate_two_step("tanh", "linear", N=n, d=n, n=n, eta1=1.5, eta2=1.5, k=k, n_vectors=3, rng=0)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    ratio = peak / (2 * n * n * 8)
    # measured 2.505 (the steps); one more N x n temporary would add 0.5
    assert ratio <= 2.7, ratio
