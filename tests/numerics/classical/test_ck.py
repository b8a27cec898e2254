"""Sampled conjugate kernels (docs/theory/kernel_spectra.md §5)."""
import numpy as np
import pytest

from rmtfl.numerics import ck_gram, ks_distance_ck, simulate_ck, simulate_ck_one_step
from rmtfl.theory import ck_spectrum, get_activation


def test_gram_matches_definition_and_seed():
    K = ck_gram("tanh", N=30, d=20, n=25, rng=3)
    g = np.random.default_rng(3)
    X = g.standard_normal((25, 20))
    W = g.standard_normal((30, 20)) / np.sqrt(20)
    F = np.tanh(X @ W.T)
    assert np.allclose(K, F @ F.T / 30, atol=1e-13)
    assert np.array_equal(K, ck_gram("tanh", N=30, d=20, n=25, rng=3))


@pytest.mark.parametrize("act", ["relu", "tanh", "gelu"])
def test_simulate_eigenvalues_equal_gram_eigenvalues(act):
    s = simulate_ck(act, N=40, d=30, n=50, rng=1)
    ev = np.sort(np.linalg.eigvalsh(ck_gram(act, N=40, d=30, n=50, rng=1)))[::-1]
    assert np.allclose(s.eigenvalues, ev, atol=1e-10)
    assert np.all(np.diff(s.eigenvalues) <= 0)
    top = simulate_ck(act, N=40, d=30, n=50, k=2, rng=1)
    assert np.allclose(top.top_values, ev[:2], atol=1e-10)
    assert top.top_vectors.shape == (50, 2) and top.cos2_ones.shape == (2,)


def test_relu_top_vector_is_the_constant_mode_and_ks_small():
    s = simulate_ck("relu", N=400, d=400, n=400, k=1, rng=0)
    assert s.cos2_ones[0] > 0.98
    law = ck_spectrum("relu", psi=1.0, phi=1.0, N=400)
    assert s.eigenvalues[0] == pytest.approx(law.outliers[0].location, rel=0.03)
    assert ks_distance_ck(s.eigenvalues, law) < 0.03


def test_ks_counts_zero_eigenvalues_as_the_atom():
    s = simulate_ck("tanh", N=100, d=200, n=300, rng=2)
    law = ck_spectrum("tanh", psi=0.5, phi=1.5)
    assert ks_distance_ck(s.eigenvalues, law) < 0.05


def test_bad_input():
    with pytest.raises(ValueError, match=r"\bN\b"):
        simulate_ck("relu", N=0, d=3, n=3)
    with pytest.raises(ValueError, match="activation"):
        simulate_ck("nope", N=3, d=3, n=3)
    with pytest.raises(ValueError, match="N, d, n"):
        simulate_ck("relu", N=10 ** 6, d=10 ** 6, n=10 ** 6)
    with pytest.raises(ValueError, match="activation"), np.errstate(invalid="ignore"):
        simulate_ck(get_activation(lambda z: np.log(z)), N=5, d=5, n=5, rng=0)
    law = ck_spectrum("relu", psi=1.0, phi=1.0)
    with pytest.raises(ValueError, match="eigs"):
        ks_distance_ck(np.array([1.0, np.nan]), law)
    with pytest.raises(ValueError, match="eigs"):
        ks_distance_ck(np.array([1.0 + 1j, 2.0]), law)
    with pytest.raises(ValueError, match="law"):
        ks_distance_ck(np.array([1.0]), object())


def test_one_step_sample_shapes_and_spike():
    r = simulate_ck_one_step("tanh", "linear", N=150, d=150, n=300, eta=4.0, rng=0)
    assert r.before.shape == (300,) and r.after.shape == (300,)
    assert r.after[0] > 1.2 * r.before[0]
