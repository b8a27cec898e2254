"""Spectra helpers: Gram-side singular values, outlier counts, overlaps, ESD, KS distance."""
import math

import numpy as np
import pytest
from scipy.sparse.linalg import aslinearoperator

from rmtfl.numerics import (
    count_outliers, eigenvalues_of_gram, empirical_spectral_density, gaussian_matrix, ks_distance_mp,
    singular_values, spiked_matrix, squared_overlaps,
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


def test_count_outliers_and_pure_noise():
    N = d = 400
    edge = edge_margin(N, d, p=0.99)
    s = singular_values(gaussian_matrix(N, d, rng=0))
    assert count_outliers(s, N=N, d=d) == 0
    sp = spiked_matrix(N, d, [3.0, 2.0], rng=1)
    assert count_outliers(singular_values(sp.W), N=N, d=d) == 2
    assert edge > 2.0
    # false-alarm rate of the TW margin is ~ 1 - p (here p = 0.9): 40 noise draws
    hits = sum(count_outliers(singular_values(gaussian_matrix(100, 100, rng=r)), N=100, d=100, p=0.9) > 0
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
    with pytest.raises(ValueError, match="psi"):
        ks_distance_mp(x, 0.0)


def test_sv_range_of_noise():
    s = singular_values(gaussian_matrix(500, 1000, rng=1))
    lo, hi = mp_sv_edges(0.5)
    assert abs(s[0] - hi) < 0.05 and abs(s[-1] - lo) < 0.05


def _float32_with_values(m, s, seed):
    """A float32 ``m x m`` matrix ``U diag(s) V^T`` and the exact singular values of its float32 entries."""
    g = np.random.default_rng(seed)
    U, _ = np.linalg.qr(g.standard_normal((m, m)))
    V, _ = np.linalg.qr(g.standard_normal((m, m)))
    A = ((U * s) @ V.T).astype(np.float32)
    return A, np.linalg.svd(A.astype(np.float64), compute_uv=False)


def test_square_float32_takes_the_gram_route_in_float64():
    """Values from 1 down to 2e-3: float32 Gram eigenvalues cannot resolve the bottom (4e-6 lambda_1 < 100 u_32), so
    the Gram route runs in float64 (relative error ~u_64 (s_max/s_i)^2 ~ 3e-11), not the float32 SVD (~u_32)."""
    from rmtfl.numerics import dense_spectrum_and_top, gram_eigenvalues

    A, exact = _float32_with_values(200, np.geomspace(1.0, 2e-3, 200), 3)
    old = np.max(np.abs(np.linalg.svd(A, compute_uv=False) - exact) / exact)   # the float32 SVD, as before
    s = singular_values(A)
    assert np.max(np.abs(s - exact) / exact) < min(1e-9, old)
    np.testing.assert_allclose(gram_eigenvalues(A), exact**2, rtol=1e-9)
    s_all, s_top, U, V = dense_spectrum_and_top(A, 3)
    assert np.max(np.abs(s_all - exact) / exact) < min(1e-9, old) and U.dtype == V.dtype == np.float64
    A64 = A.astype(np.float64)
    assert np.max(np.abs(A64 @ V - U * s_top)) < 1e-12 and np.allclose(U.T @ U, np.eye(3), atol=1e-12)


def test_square_float32_with_a_spike_skips_the_svd(monkeypatch):
    """A two-step W_2 in float32: a spike 13x the edge of a square bulk, whose smallest values (about 2 % of them lie
    below 1e-3 s_max) send a float64 matrix to the SVD.  For float32 the float64 Gram route holds float32's own
    accuracy (|ds_i| <~ u_32 s_max) at every value, so the SVD is not called."""
    from rmtfl.numerics import dense_spectrum_and_top, spiked_matrix

    W = spiked_matrix(400, 400, [26.0], rng=5).W.astype(np.float32)
    exact = np.linalg.svd(W.astype(np.float64), compute_uv=False)
    assert np.mean(exact < 1e-3 * exact[0]) > 0.01

    def no_svd(*args, **kwargs):
        raise AssertionError("the SVD was called")

    monkeypatch.setattr(np.linalg, "svd", no_svd)
    u32 = np.finfo(np.float32).eps / 2
    assert np.max(np.abs(singular_values(W) - exact)) < 0.01 * u32 * exact[0]
    s_all, s, U, V = dense_spectrum_and_top(W, 2)
    assert np.max(np.abs(s_all - exact)) < 0.01 * u32 * exact[0]
    monkeypatch.undo()
    with pytest.raises(AssertionError):                    # the same spectrum in float64 keeps the SVD route
        monkeypatch.setattr(np.linalg, "svd", no_svd)
        singular_values(W.astype(np.float64))


def _wide_float32(m, L, seed):
    """A float32 ``m x L`` matrix with values from 1 down to 2e-3 (the float32 Gram route cannot resolve them)."""
    g = np.random.default_rng(seed)
    U, _ = np.linalg.qr(g.standard_normal((m, m)))
    V, _ = np.linalg.qr(g.standard_normal((L, m)))
    return ((U * np.geomspace(1.0, 2e-3, m)) @ V.T).astype(np.float32)


@pytest.mark.parametrize("tall", [False, True])
def test_float64_gram_of_float32_by_blocks(monkeypatch, tall):
    """The float64 Gram products run over column blocks of the wide side (here 11 blocks): the same values and
    vectors as in one block, and no float64 copy of the matrix (its 2.4 MB would show in the peak)."""
    import tracemalloc

    from rmtfl.numerics import dense_spectrum_and_top
    from rmtfl.numerics._classical import promote

    A = _wide_float32(60, 5000, 4)
    A = A.T.copy() if tall else A
    exact = np.linalg.svd(A.astype(np.float64), compute_uv=False)
    one = singular_values(A)
    s_all, s, U, V = dense_spectrum_and_top(A, 2)
    monkeypatch.setattr(promote, "BLOCK_BYTES", 8 * 60 * 460)
    tracemalloc.start()
    blocked = singular_values(A)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    np.testing.assert_allclose(blocked, one, rtol=1e-10)     # summation order: u_64 (s_max / s_i)^2 ~ 3e-11
    assert np.max(np.abs(blocked - exact) / exact) < 1e-9
    assert peak < 8 * A.size        # the float32 Gram, one block and the values; a float64 copy alone is 8 * A.size
    b_all, b, BU, BV = dense_spectrum_and_top(A, 2)
    np.testing.assert_allclose(b_all, s_all, rtol=1e-10)
    np.testing.assert_allclose(np.abs(BU), np.abs(U), atol=1e-10)
    np.testing.assert_allclose(np.abs(BV), np.abs(V), atol=1e-10)
    assert np.max(np.abs(A.astype(np.float64) @ BV - BU * b)) < 1e-12


def test_square_float32_skips_the_float32_try(monkeypatch):
    """A square float32 matrix of at least SQUARE_MIN (here 300 x 300 Gaussian: lambda_min / lambda_1 ~ 1e-6, below
    float32's 6e-6) goes to its float64 Gram matrix at once; smaller or non-square ones try float32 first."""
    from rmtfl.numerics import dense_spectrum_and_top
    from rmtfl.numerics._classical import promote, spectra

    A = np.random.default_rng(8).standard_normal((300, 300)).astype(np.float32)
    exact = np.linalg.svd(A.astype(np.float64), compute_uv=False)
    assert exact[-1] ** 2 < 100 * np.finfo(np.float32).eps / 2 * exact[0] ** 2     # the float32 try would fail
    ref = singular_values(A)
    calls = []
    monkeypatch.setattr(spectra, "_gram_eigvals", lambda B, be: calls.append(B.dtype) or 1 / 0)
    s = singular_values(A)
    assert not calls and np.max(np.abs(s - exact) / exact) < 1e-9
    np.testing.assert_allclose(s, ref, rtol=1e-12)
    assert promote.float64_first(A) and not promote.float64_first(A[:, :299])
    assert not promote.float64_first(A[:255, :255])
    assert not promote.float64_first(A.astype(np.float64))
    s_all, s_top, U, V = dense_spectrum_and_top(A, 2)
    assert np.max(np.abs(s_all - exact) / exact) < 1e-9 and U.dtype == np.float64
