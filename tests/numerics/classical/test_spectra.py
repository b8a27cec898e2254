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
