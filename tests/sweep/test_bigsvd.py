"""Top-k singular values of a chunked two-step W2 (dask.array) against the in-memory result."""
import numpy as np
import pytest

from rmtfl.numerics import gd_steps
from rmtfl.theory import make_target
from rmtfl.sweep import materialise_inputs, top_singular_values_dask, two_step_w2_dask


@pytest.fixture(scope="module")
def case():
    # N, d, n chosen to fit here; eta_t = N^alpha_t with alpha1 = 0.4, alpha2 = 0.45 (several outliers
    # for a non-odd sigma, docs/theory/two_step.md §6); row chunks of 150 -> 4 x 4 blocks of Z = W X^T
    N, d, n, rows = 480, 400, 600, 150
    eta1, eta2 = N ** 0.4, N ** 0.45
    W2 = two_step_w2_dask("gelu", "linear", N=N, d=d, n=n, eta1=eta1, eta2=eta2, rng=11, rows=rows)
    W0, a, X, y = materialise_inputs(target="linear", N=N, d=d, n=n, rng=11, rows=rows)
    ref = gd_steps("gelu", W0, a, (X, y), etas=[eta1, eta2])
    return W2, ref


def test_chunked_w2_equals_in_memory(case):
    W2, ref = case
    assert W2.numblocks == (4, 1)
    dense = W2.compute(scheduler="threads")
    # same arithmetic up to summation order: relative 1e-12 of the largest entry
    assert np.max(np.abs(dense - ref)) < 1e-12 * np.max(np.abs(ref))


def test_svd_compressed_top_values(case):
    W2, ref = case
    k = 8
    s = top_singular_values_dask(W2, k, n_power_iter=6, rng=0, scheduler="threads")
    s_ref = np.linalg.svd(ref, compute_uv=False)[:k]
    # separated outliers (gap ratio s_{k+p}/s_i small): near machine precision
    out = s_ref > 1.2 * (1 + np.sqrt(480 / 400))
    assert out.sum() >= 2
    np.testing.assert_allclose(s[out], s_ref[out], rtol=1e-9)
    # randomised SVD never overshoots: a projection's singular values are <= the true ones
    assert np.all(s <= s_ref * (1 + 1e-12))


def test_numpy_input_and_bad_arguments():
    A = np.diag(np.arange(10.0, 0.0, -1.0))
    np.testing.assert_allclose(top_singular_values_dask(A, 3, n_power_iter=4, scheduler="sync"),
                               [10.0, 9.0, 8.0], rtol=1e-10)
    with pytest.raises(ValueError, match="k must be"):
        top_singular_values_dask(A, 11)
    noisy = make_target("linear", noise=0.1)
    with pytest.raises(ValueError, match="noise"):
        two_step_w2_dask("tanh", noisy, N=10, d=10, n=10, eta1=1.0, eta2=1.0, rows=5)
    with pytest.raises(ValueError, match="rows"):
        two_step_w2_dask("tanh", "linear", N=10, d=10, n=10, eta1=1.0, eta2=1.0, rows=0)
    with pytest.raises(ValueError, match="rng"):
        two_step_w2_dask("tanh", "linear", N=10, d=10, n=10, eta1=1.0, eta2=1.0, rows=5, rng=-1)
