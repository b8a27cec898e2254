"""Mixed-precision top-k solver (rmtfl.numerics._classical.mixed) against dense float64 LAPACK.

Reference values: ``numpy.linalg.svd`` / ``eigvalsh`` of the same matrix (float64, backward stable
to ~1e-15 relative for the top values)."""
import numpy as np
import pytest

from rmtfl.numerics import gd_steps, init_first_layer, init_second_layer, sample_inputs, sample_targets
from rmtfl.numerics import spiked_matrix
from rmtfl.numerics._classical.mixed import mixed_top_eigh, mixed_top_triplets
from rmtfl.theory import edge_margin

U32 = 2.0**-24


@pytest.fixture(scope="module")
def two_step_W():
    """W_2 of a two-step run (tanh, linear target, N = d = n = 500): one outlier, bulk values packed
    at the edge -- the case the solver is for."""
    g = np.random.default_rng(8).spawn(4)
    N = d = n = 500
    W0 = init_first_layer(N, d, rng=g[0])
    a = init_second_layer(N, rng=g[1])
    X = sample_inputs(n, d, rng=g[2])
    return gd_steps("tanh", W0, a, (X, sample_targets(X, target="linear", rng=g[3])), etas=[3.0, 3.0])


@pytest.mark.parametrize("transpose", [False, True])
def test_values_match_dense_to_float64_accuracy(two_step_W, transpose):
    A = two_step_W.T[:, :420] if transpose else two_step_W[:420]  # both Gram sides, N != d
    s_ref = np.linalg.svd(A, compute_uv=False)
    r = mixed_top_triplets(A, 10)
    np.testing.assert_allclose(r.s, s_ref[:10], rtol=1e-11)
    err = np.abs(r.values - s_ref[:10] ** 2)
    # the reported Kato-Temple bounds hold (with a rounding floor of the float64 reference itself)
    assert np.all(err <= r.error_bounds + 1e-13 * r.values[0])
    assert np.all(r.error_bounds < 1e-8 * r.values[0])
    # vectors: orthonormal, aligned with the dense ones (|cos| = 1 - O(angle^2))
    U, s, Vt = np.linalg.svd(A, full_matrices=False)
    cos = np.abs(np.sum(r.V * Vt[:10].T, axis=0))
    gaps = np.minimum(np.abs(s[:10] ** 2 - s[1:11] ** 2), np.abs(s[:10] ** 2 - np.r_[np.inf, s[:9] ** 2]))
    np.testing.assert_allclose(r.V.T @ r.V, np.eye(10), atol=1e-12)
    assert np.all(1 - cos <= (2 * r.residuals / gaps) ** 2 + 1e-12)


def test_certificate_and_floor_path():
    N, d = 300, 360
    sp = spiked_matrix(N, d, [5.0, 4.0, 3.0, 2.5], rng=1)
    edge = edge_margin(N, d)
    s_ref = np.linalg.svd(sp.W, compute_uv=False)
    n_true = int(np.sum(s_ref > edge))
    assert n_true == 4
    r = mixed_top_triplets(sp.W, 1, edge=edge, pad=0)  # 1 + 1 float32 values first, then by value
    assert r.certified and r.s.size == 4 and r.n_computed >= 4
    np.testing.assert_allclose(r.s, s_ref[:4], rtol=1e-11)
    assert 0 < r.slack < 1e-3 * edge**2  # the a priori float32 bound is far below the TW margin
    assert not mixed_top_triplets(sp.W, 2).certified  # no edge: nothing certified
    # an edge just under a value: that value is returned and the certificate still holds
    r2 = mixed_top_triplets(sp.W, 1, edge=0.5 * (s_ref[5] + s_ref[6]))
    assert r2.s.size == 6 and r2.certified


def test_whole_spectrum_request():
    A = np.random.default_rng(3).standard_normal((40, 25))
    r = mixed_top_triplets(A, 25, edge=0.0)
    np.testing.assert_allclose(r.s, np.linalg.svd(A, compute_uv=False), rtol=1e-10)
    assert r.certified  # nothing is left below


def test_float32_input():
    A = spiked_matrix(250, 300, [4.0], rng=2).W.astype(np.float32)
    r = mixed_top_triplets(A, 3)
    s_ref = np.linalg.svd(A.astype(np.float64), compute_uv=False)
    np.testing.assert_allclose(r.s, s_ref[:3], rtol=1e-5)  # products in float32


def test_symmetric_eigh():
    rng = np.random.default_rng(4)
    X = rng.standard_normal((300, 200))
    S = X @ X.T / 200 + 5.0 * np.outer(np.ones(300), np.ones(300)) / 300
    ev = np.linalg.eigvalsh(S)[::-1]
    r = mixed_top_eigh(S, 4, edge2=ev[2] - 1e-3)
    np.testing.assert_allclose(r.values, ev[:4], rtol=1e-11)
    assert r.certified and r.U is None
    np.testing.assert_allclose(np.linalg.norm(S @ r.vectors - r.vectors * r.values, axis=0), r.residuals,
                               rtol=0.01, atol=1e-14)


def test_bad_input():
    with pytest.raises(ValueError, match="square"):
        mixed_top_eigh(np.ones((3, 4)), 1)
    with pytest.raises(ValueError, match="2-d"):
        mixed_top_triplets(np.ones(3), 1)
    with pytest.raises(ValueError, match="k must"):
        mixed_top_triplets(np.ones((3, 4)), 4)
    with pytest.raises(ValueError, match="edge"):
        mixed_top_triplets(np.ones((3, 4)), 1, edge=-1.0)
    with pytest.raises(ValueError, match="pad"):
        mixed_top_triplets(np.ones((3, 4)), 1, pad=-1)
    with pytest.raises(ValueError, match="edge2"):
        mixed_top_eigh(np.eye(3), 1, edge2=float("nan"))


@pytest.mark.parametrize("theta", [100.0, 1e4])
def test_large_dynamic_range_falls_back_to_float64(theta):
    """A spike of strength 100 (10^4) over a unit bulk: float32 resolves the Gram eigenvalues only to
    ~u_32 theta^2, i.e. bulk values to ~1e-3 (or not at all); the Kato-Temple check catches it and
    the pairs come from a float64 dense solve, accurate to rounding.  (Measured before the check:
    relative errors 3e-9 and 0.36 for the bulk values.)"""
    sp = spiked_matrix(400, 400, [theta], rng=1)
    s_ref = np.linalg.svd(sp.W, compute_uv=False)[:10]
    r = mixed_top_triplets(sp.W, 10)
    assert r.solve_dtype == "float64"
    np.testing.assert_allclose(r.s, s_ref, rtol=1e-12)
    # outlier only, certified at the edge: float32 suffices at 100 (slack ~0.24 < edge^2 / 10);
    # at 10^4 the slack (~2e3) swamps the edge and the float64 solve decides
    r_edge = mixed_top_triplets(sp.W, 1, edge=edge_margin(400, 400))
    assert r_edge.certified and r_edge.s.size == 1
    np.testing.assert_allclose(r_edge.s, s_ref[:1], rtol=1e-12)
    assert r_edge.solve_dtype == ("float32" if theta < 1e3 else "float64")


def test_moderate_dynamic_range_stays_float32_within_rtol():
    sp = spiked_matrix(400, 400, [10.0], rng=1)
    s_ref = np.linalg.svd(sp.W, compute_uv=False)[:10]
    r = mixed_top_triplets(sp.W, 10)
    assert r.solve_dtype == "float32"
    assert np.all(np.abs(r.values - s_ref**2) <= 1e-8 * r.values + 1e-13 * r.values[0])
    with pytest.raises(ValueError, match="rtol"):
        mixed_top_triplets(sp.W, 2, rtol=0.0)
