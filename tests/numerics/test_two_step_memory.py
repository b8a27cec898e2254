"""Peak memory of the two-step simulation (issue 8: within 4x the inputs X and W; no N x n x d tensor).

Gradient steps keep W, X, the N x n matrix sigma'(W X^T) (computed in place) and G = S X: four
N x d-sized arrays at N = d = n, i.e. 2x the inputs; the spectrum adds the Gram matrix.  Measured
with tracemalloc (numpy reports its buffers to it); the benchmark measures the RSS at N = 4000.
"""
import tracemalloc

import pytest

from rmtfl.numerics.two_step import simulate_two_step


@pytest.mark.parametrize("k", [None, 5])
def test_peak_memory_within_bound(k):
    n = 500
    simulate_two_step(activation="tanh", target="linear", N=40, d=40, n=40, eta1=1.0, eta2=1.0, rng=0, k=k)
    tracemalloc.start()
    simulate_two_step(activation="tanh", target="linear", N=n, d=n, n=n, eta1=1.5, eta2=1.5, rng=0, k=k,
                      n_vectors=3)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    ratio = peak / (2 * n * n * 8)
    # measured 2.005 (the steps; the Gram matrix comes after S and G are freed); one more
    # N x n temporary would add 0.5
    assert ratio <= 2.2, ratio
