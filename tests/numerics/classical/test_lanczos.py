"""Lanczos top triplets (rmtfl.numerics._classical.lanczos) validated against dense LAPACK on small cases,
including completeness at the bulk edge (Tracy-Widom edge of rmtfl.theory.edge_margin)."""
import numpy as np
import pytest

from rmtfl.numerics import spiked_matrix
from rmtfl.numerics import lanczos_triplets
from rmtfl.numerics import top_singular_triplets
from rmtfl.theory import edge_margin


def _residuals(A, r):
    return (np.linalg.norm(A @ r.V - r.U * r.s, axis=0), np.linalg.norm(A.T @ r.U - r.V * r.s, axis=0))


@pytest.mark.parametrize("shape", [(300, 500), (500, 300), (400, 400)])
def test_matches_dense_and_triplets_hold(shape):
    A = spiked_matrix(*shape, [4.0, 2.6, 1.9], rng=3).W
    s_ref = np.linalg.svd(A, compute_uv=False)
    r = lanczos_triplets(A, 5, rng=1)  # 3 outliers and 2 bulk values, all converged
    np.testing.assert_allclose(r.s, s_ref[:5], rtol=1e-10)
    r1, r2 = _residuals(A, r)
    # one relation is exact by construction (u = M v / s), the other has the Lanczos residual
    assert min(r1.max(), r2.max()) < 1e-12 and max(r1.max(), r2.max()) <= 1e-10 * s_ref[0]
    np.testing.assert_allclose(r.U.T @ r.U, np.eye(5), atol=1e-10)
    np.testing.assert_allclose(r.V.T @ r.V, np.eye(5), atol=1e-10)


@pytest.mark.parametrize("seed", range(6))
def test_edge_completeness_against_dense(seed):
    # spikes near the BBP threshold put outliers just above the edge (the hard case), and a
    # repeated theta gives a near-degenerate pair of outliers that a single start vector must split
    N, d = 500, 400
    edge = edge_margin(N, d)
    A = spiked_matrix(N, d, [3.0, 3.0, 1.25, 1.15], rng=100 + seed).W
    s_ref = np.linalg.svd(A, compute_uv=False)
    n_true = int(np.sum(s_ref > edge))
    r = lanczos_triplets(A, 1, edge=edge, rng=seed)
    assert r.certified and r.s.size == max(1, n_true)
    np.testing.assert_allclose(r.s, s_ref[: r.s.size], rtol=1e-10)
    top = top_singular_triplets(A, 1, rng=seed, edge=edge, method="iterative")
    assert top.method == "lanczos" and top.complete and top.n_above == n_true


def test_low_rank_float32_reproducible_and_errors():
    g = np.random.default_rng(0)
    A = g.standard_normal((200, 2)) @ g.standard_normal((2, 150))  # rank 2: invariant Krylov space
    r = lanczos_triplets(A, 3, rng=0)
    s_ref = np.linalg.svd(A, compute_uv=False)
    np.testing.assert_allclose(r.s[:2], s_ref[:2], rtol=1e-10)
    assert r.s[2] < 1e-6 * s_ref[0]
    B = spiked_matrix(300, 300, [3.0], rng=1, dtype="float32").W
    r32 = lanczos_triplets(B, 1, edge=2.3, rng=0)
    s64 = np.linalg.svd(B.astype(np.float64), compute_uv=False)
    assert r32.U.dtype == np.float32 and abs(r32.s[0] - s64[0]) < 1e-5
    a, b = lanczos_triplets(B, 2, rng=7), lanczos_triplets(B, 2, rng=7)
    np.testing.assert_array_equal(a.s, b.s)
    np.testing.assert_array_equal(a.U, b.U)
    assert lanczos_triplets(spiked_matrix(300, 300, [3.0], rng=1).W, 30, rng=0, maxiter=5) is None
    with pytest.raises(ValueError, match="k must"):
        lanczos_triplets(A, 0)
    with pytest.raises(ValueError, match="tol"):
        lanczos_triplets(A, 1, tol=-1.0)
    with pytest.raises(ValueError, match="2-d"):
        lanczos_triplets(np.ones(3), 1)


def test_top_triplets_iterative_is_lanczos():
    A = spiked_matrix(300, 300, [3.0], rng=2).W
    s_ref = np.linalg.svd(A, compute_uv=False)
    top = top_singular_triplets(A, 3, rng=0, method="iterative", maxiter=2000, margin=2)
    assert top.method == "lanczos"
    np.testing.assert_allclose(top.s, s_ref[:3], rtol=1e-10)
    assert lanczos_triplets(A, 3, rng=0, maxiter=3) is None  # then top_singular_triplets uses ARPACK
