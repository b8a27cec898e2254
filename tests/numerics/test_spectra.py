"""Spectra helpers: dense/iterative agreement, completeness, overlaps, ESD, KS distance."""
import math

import numpy as np
import pytest
from scipy.sparse.linalg import aslinearoperator

from rmtfl.numerics import (
    count_outliers, eigenvalues_of_gram, empirical_spectral_density, gaussian_matrix, ks_distance_mp,
    singular_values, spiked_matrix, squared_overlaps, top_eigenpairs, top_singular_triplets,
)
from rmtfl.theory import edge_margin, mp_atom, mp_density, mp_sv_edges


@pytest.mark.parametrize("shape", [(60, 90), (90, 60), (50, 50)])
def test_singular_values_gram_matches_svd(shape):
    A = np.random.default_rng(0).standard_normal(shape)
    s_svd = np.linalg.svd(A, compute_uv=False)
    np.testing.assert_allclose(singular_values(A, method="svd"), s_svd, atol=1e-12)
    s = singular_values(A)
    assert np.all(np.diff(s) <= 0)
    np.testing.assert_allclose(s, s_svd, atol=1e-6)  # smallest values: absolute error ~ eps ||A||^2 / s
    np.testing.assert_allclose(s[:10], s_svd[:10], rtol=1e-12)


def _check_triplets(A, top):
    for i in range(top.s.size):
        np.testing.assert_allclose(A @ top.V[:, i], top.s[i] * top.U[:, i], atol=1e-8)
        np.testing.assert_allclose(A.T @ top.U[:, i], top.s[i] * top.V[:, i], atol=1e-8)


@pytest.mark.parametrize("method", ["iterative", "arpack", "dense"])
@pytest.mark.parametrize("shape", [(300, 400), (400, 300)])
def test_top_triplets_match_dense_svd(method, shape):
    sp = spiked_matrix(*shape, [4.0, 2.5, 1.8], rng=3)
    A = sp.W
    s_all = np.linalg.svd(A, compute_uv=False)
    top = top_singular_triplets(A, 3, rng=1, method=method)
    assert top.method == {"iterative": "lanczos", "arpack": "svds", "dense": "dense"}[method]
    np.testing.assert_allclose(top.s, s_all[:3], rtol=1e-10)
    assert top.U.shape == (shape[0], 3) and top.V.shape == (shape[1], 3)
    _check_triplets(A, top)


def test_top_triplets_reproducible_and_edge_complete():
    sp = spiked_matrix(300, 300, [5.0, 3.0, 2.2, 1.6], rng=4)
    A = sp.W
    s_all = np.linalg.svd(A, compute_uv=False)
    edge = edge_margin(300, 300)
    n_true = int(np.sum(s_all > edge))
    # margin 0 and k = 1: the first solve cannot certify completeness, so k is doubled
    top = top_singular_triplets(A, 1, rng=7, edge=edge, margin=0, method="iterative")
    assert top.complete and top.n_above == n_true and top.s.size == n_true
    assert top.n_computed > 1
    np.testing.assert_allclose(top.s, s_all[:n_true], rtol=1e-10)
    again = top_singular_triplets(A, 1, rng=7, edge=edge, margin=0, method="iterative")
    np.testing.assert_array_equal(top.s, again.s)
    np.testing.assert_array_equal(top.U, again.U)
    dense = top_singular_triplets(A, 1, edge=edge, method="dense")
    assert dense.complete and dense.n_above == n_true
    no_edge = top_singular_triplets(A, 2, rng=0, method="iterative")
    assert not no_edge.complete and no_edge.n_above is None


def test_top_triplets_cases_and_errors():
    A = np.random.default_rng(0).standard_normal((20, 30))
    top = top_singular_triplets(A, 20, rng=0)  # k = min(N, d): dense
    assert top.method == "dense" and top.s.size == 20
    with pytest.raises(ValueError, match="k must"):
        top_singular_triplets(A, 21)
    with pytest.raises(ValueError, match="k must"):
        top_singular_triplets(A, 0)
    with pytest.raises(ValueError, match="method"):
        top_singular_triplets(A, 2, method="lanczos")
    with pytest.raises(ValueError, match="edge"):
        top_singular_triplets(A, 2, edge=-1.0)


def test_top_eigenpairs():
    rng = np.random.default_rng(5)
    X = rng.standard_normal((250, 150))
    S = X @ X.T / 150 + 6.0 * np.outer(np.ones(250), np.ones(250)) / 250
    ev = np.linalg.eigvalsh(S)[::-1]
    for method in ("iterative", "dense"):
        r = top_eigenpairs(S, 2, rng=0, method=method)
        np.testing.assert_allclose(r.values, ev[:2], rtol=1e-10)
        np.testing.assert_allclose(S @ r.vectors, r.vectors * r.values[None, :], atol=1e-8)
    edge = 0.5 * (ev[1] + ev[0])
    r = top_eigenpairs(aslinearoperator(S), 1, rng=0, edge=edge, margin=0)
    assert r.complete and r.n_above == 1 and r.method == "eigsh"
    with pytest.raises(ValueError, match="square"):
        top_eigenpairs(X, 1)


def test_count_outliers_and_pure_noise():
    N = d = 400
    edge = edge_margin(N, d, p=0.99)
    s = singular_values(gaussian_matrix(N, d, rng=0))
    assert count_outliers(s, N, d) == 0
    sp = spiked_matrix(N, d, [3.0, 2.0], rng=1)
    assert count_outliers(singular_values(sp.W), N, d) == 2
    assert edge > 2.0
    # false-alarm rate of the TW margin is ~ 1 - p (here p = 0.9): 40 noise draws
    hits = sum(count_outliers(singular_values(gaussian_matrix(100, 100, rng=r)), 100, 100, p=0.9) > 0
               for r in np.random.default_rng(2).spawn(40))
    assert hits <= 12  # Binomial(40, ~0.1): P(>12) < 1e-3


def test_squared_overlaps():
    V = np.array([[1.0, 0.0], [1.0, 2.0]])
    E = np.array([[1.0], [0.0]])
    np.testing.assert_allclose(squared_overlaps(V, E), [[0.5], [0.0]])
    np.testing.assert_allclose(squared_overlaps(-V, 3 * E), [[0.5], [0.0]])
    with pytest.raises(ValueError):
        squared_overlaps(np.ones((3, 1)), np.ones((2, 1)))
    with pytest.raises(ValueError):
        squared_overlaps(np.zeros(2), np.ones(2))


def test_esd_and_gram_eigenvalues():
    W = gaussian_matrix(300, 150, rng=0)  # psi = 2: half the eigenvalues of W W^T are zero
    ev = eigenvalues_of_gram(W)
    assert ev.size == 300 and np.sum(ev < 1e-10) == 150
    esd = empirical_spectral_density(ev, bins=30)
    assert esd.atom == pytest.approx(mp_atom(2.0))
    assert np.sum(esd.density * np.diff(esd.edges)) == pytest.approx(0.5)
    # histogram vs density: bins of width ~0.19 hold ~5 eigenvalues each, agreement to ~Poisson noise
    mid = (esd.centers > 0.5) & (esd.centers < 5.0)
    assert np.max(np.abs(esd.density[mid] - mp_density(esd.centers[mid], 2.0))) < 0.12
    assert eigenvalues_of_gram(W, side="d").size == 150


@pytest.mark.parametrize("psi", [0.5, 2.0])
def test_ks_distance_scale(psi):
    # KS of MP eigenvalues is O(log N / N) (rigidity), far below the iid scale ~ 1/sqrt(N)
    N = 400
    d = int(N / psi)
    ks = [ks_distance_mp(eigenvalues_of_gram(gaussian_matrix(N, d, rng=r)), psi)
          for r in np.random.default_rng(11).spawn(4)]
    assert max(ks) < 1.5 * math.log(N) / N
    assert max(ks) < 0.5 / math.sqrt(N)
    # a wrong variance (10% off) is detected at the tolerance 1.5 log N / N used by rmtfl verify
    W = gaussian_matrix(N, d, var=1.1, rng=0)
    assert ks_distance_mp(eigenvalues_of_gram(W), psi) > 1.5 * math.log(N) / N


def test_ks_distance_exact_quantiles_and_atom():
    from rmtfl.theory import mp_quantile

    n = 1000
    x = mp_quantile((np.arange(n) + 0.5) / n, 2.0)  # exact half-point quantiles, atom included
    assert ks_distance_mp(x, 2.0) == pytest.approx(0.5 / n, abs=1e-9)
    with pytest.raises(ValueError, match="ratio"):
        ks_distance_mp(x, 0.0)


def test_sv_range_of_noise():
    s = singular_values(gaussian_matrix(500, 1000, rng=1))
    lo, hi = mp_sv_edges(0.5)
    assert abs(s[0] - hi) < 0.05 and abs(s[-1] - lo) < 0.05
