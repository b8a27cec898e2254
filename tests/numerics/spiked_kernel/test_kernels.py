"""Tests of the sampled kernels (rmtfl.numerics kernel_gram, gram_alignment, ...): Gram spectra by degree, Y2 alignment vs the zonal operator,
linear-sector estimates, top-k solver.

Acceptance (issue 4): Gram eigenvalues within 1% of the sphere eigenvalues (d = 10, n = 3000);
zonal overlaps match the Gram experiment within 3 standard errors over seeds.  Overlaps are squared
(docs/conventions.md §1) on both sides: zonal ``overlaps[2] = <f, Y_2>^2`` against the Gram ``cos2_y2``.
Backend tests: the device code paths run on the CPU through a numpy proxy namespace (unmarked), and
against real cupy on a GPU (``@pytest.mark.gpu``, skipped without one).
"""
import math

import numpy as np
import pytest

from rmtfl.compare import mean_stderr
from rmtfl.numerics import (empirical_rf_kernel, gram_alignment, gram_degree_eigenvalues, harmonic_vectors, kernel_gram,
                            linear_sector_gram, sample_sphere, top_gram_eigenpairs)
from rmtfl.theory import linear_sector
from rmtfl.theory import zonal_top_eigenfunction


def test_gram_eigenvalues_by_degree_within_one_percent():
    blocks = gram_degree_eigenvalues("relu", d=10, n=3000, rng=np.random.default_rng(11))
    assert blocks.multiplicity == (1, 10, 54)
    assert np.all(np.abs(blocks.mean / blocks.predicted - 1) < 0.01)


def test_gaussian_inputs_k0_spectrum():
    # Gaussian inputs: k_0 = k_{I/d} has the unit-sphere eigenvalues of k_I (docs/conventions.md §8); the block
    # means now fluctuate through the radial factor, O(n^-1/2) -> 2.5% at n = 1500
    blocks = gram_degree_eigenvalues("relu", d=8, n=1500, measure="gaussian", rng=np.random.default_rng(3))
    assert np.all(np.abs(blocks.mean / blocks.predicted - 1) < 0.025)


@pytest.mark.slow
@pytest.mark.parametrize("b", [5.0, 20.0])
def test_zonal_overlap_matches_gram_within_3se(b):
    d, n, S = 10, 2000, 6
    z = zonal_top_eigenfunction("relu", d=d, b=b, mixing=False)
    res = [gram_alignment("relu", d=d, n=n, b=b, rng=g) for g in np.random.default_rng(int(b)).spawn(S)]
    m, se = mean_stderr([r.cos2_y2 for r in res])
    pred = z.overlaps[2]  # <f, Y_2>^2
    # squared overlap: its own s.e. over seeds, floor 2 |<f,Y_2>| / sqrt(n S) (delta method of the n^-1/2 scale)
    assert abs(m - pred) < 3 * max(se, 2 * math.sqrt(pred) / math.sqrt(n * S))
    lm, lse = mean_stderr([r.eigenvalue for r in res])
    assert abs(lm - z.eigenvalue) < 3 * max(lse, z.eigenvalue / math.sqrt(n * S))


def test_alignment_small_and_gaussian_measure():
    r = gram_alignment("relu", d=8, n=600, b=10.0, rng=0, measure="gaussian")
    z = zonal_top_eigenfunction("relu", d=8, b=10.0, mixing=False, n_u=80, n_c=80)
    # one draw: |<phi,Y2>| within 0.15 of |<f,Y2>|, i.e. |cos^2 - <f,Y2>^2| < 2 |<f,Y2>| 0.15 + 0.15^2
    a = math.sqrt(z.overlaps[2])
    assert abs(r.cos2_y2 - z.overlaps[2]) < 2 * a * 0.15 + 0.15**2 and r.cos2_y0 > 0.8**2
    assert (r.activation, r.d, r.n, r.b, r.measure) == ("relu", 8, 600, 10.0, "gaussian")


def test_alignment_follows_the_activation():
    # regression: `rmtfl simulate kernel alignment --activation tanh` used to run relu. Same seed, same inputs
    # and direction: tanh and relu give different Gram matrices, hence different top eigenpairs
    r_relu = gram_alignment("relu", d=6, n=300, b=5.0, rng=7)
    r_tanh = gram_alignment("tanh", d=6, n=300, b=5.0, rng=7)
    assert (r_relu.activation, r_tanh.activation) == ("relu", "tanh")
    assert abs(r_relu.eigenvalue - r_tanh.eigenvalue) > 1e-3
    assert abs(r_relu.cos2_y2 - r_tanh.cos2_y2) > 1e-4
    # and each is the one its own kernel gives (the sample is the same for both: v, then X, from rng=7)
    g = np.random.default_rng(7)
    from rmtfl.numerics import random_direction, sample_measure

    v = random_direction(6, rng=g)
    X = sample_measure(300, 6, measure="sphere", rng=g)
    for act, r in (("relu", r_relu), ("tanh", r_tanh)):
        lam = np.linalg.eigvalsh(kernel_gram(act, X, gamma=(1.0, 5.0, v)) / 300)[-1]
        assert r.eigenvalue == pytest.approx(lam, rel=1e-9)


def test_linear_sector_estimates():
    for B in (0.0, 1.0):
        est = [linear_sector_gram("relu", A=0.1, B=B, d=10, n=1200, rng=g) for g in np.random.default_rng(5).spawn(3)]
        th = linear_sector("relu", A=0.1, B=B, d=10)
        m, se = mean_stderr([e.target for e in est])
        assert abs(m - th.target) < 3 * se + 4 * th.target / 1200
        m, se = mean_stderr([e.orthogonal for e in est])
        assert abs(m - th.orthogonal) < 3 * se + 4 * th.orthogonal / 1200


def test_linear_sector_general_sigma_compression():
    # tanh is not homogeneous: the linear functions are not exact eigenfunctions, but the Gram Rayleigh
    # quotient estimates the compression <psi, T psi> of the general-sigma formula
    est = [linear_sector_gram("tanh", A=0.1, B=0.5, d=10, n=1500, rng=g) for g in np.random.default_rng(9).spawn(4)]
    th = linear_sector("tanh", A=0.1, B=0.5, d=10)
    m, se = mean_stderr([e.target for e in est])
    assert abs(m - th.target) < 3 * se + 0.05 * th.target


def test_top_gram_eigenpairs_vs_eigh():
    X = sample_sphere(400, 6, rng=1)
    K = kernel_gram("relu", X, gamma=(1.0, 3.0, np.eye(6)[0])) / 400
    top = top_gram_eigenpairs(K, k=10, rng=2)
    vals, vecs, how = top.values, top.vectors, top.method
    ref = np.linalg.eigvalsh(K)[::-1][:10]
    assert np.allclose(vals, ref, atol=1e-12) and how == "subspace"
    assert np.allclose(np.linalg.norm(K @ vecs - vecs * vals, axis=0), 0, atol=1e-9)


def test_empirical_rf_kernel_converges():
    rng = np.random.default_rng(4)
    d = 5
    X = sample_sphere(6, d, rng=rng)
    v = np.eye(d)[1]
    W = rng.standard_normal((200_000, d)) * math.sqrt(0.5) + math.sqrt(1.5) * rng.standard_normal((200_000, 1)) * v
    Ke = empirical_rf_kernel("relu", W, X)
    K = kernel_gram("relu", X, gamma=(0.5, 1.5, v))
    assert np.abs(Ke - K).max() < 5e-3


def test_harmonic_vectors_and_errors():
    X = sample_sphere(500, 6, rng=0)
    Y = harmonic_vectors(X, np.eye(6)[0], degrees=(0, 1, 2))
    assert np.allclose(np.linalg.norm(Y, axis=0), 1)
    assert abs(Y[:, 0] @ Y[:, 2]) < 0.15
    with pytest.raises(ValueError, match="v must have length"):
        harmonic_vectors(X, np.ones(5))
    with pytest.raises(ValueError, match="d must be"):
        gram_alignment("relu", d=1, n=10, b=1.0)
    with pytest.raises(ValueError, match="b must be"):
        gram_alignment("relu", d=5, n=10, b=-1.0)
    with pytest.raises(TypeError):
        gram_alignment(5, 10, 1.0)  # activation first, sizes keyword-only


def test_eigvec_alignment_empirical_one_step_kernel():
    # the empirical RF kernel of a one-step network aligns its linear-sector eigenvector with psi* = <v, x>
    from rmtfl.numerics import one_step_weights
    from rmtfl.theory import eta_from_b
    from rmtfl.numerics import eigvec_alignment

    d, N, n = 20, 4000, 400
    eta = eta_from_b("relu", "linear", psi=N / d, b=40.0)
    net = one_step_weights("relu", "linear", N=N, d=d, n=4000, eta=eta, rng=2)
    X = np.random.default_rng(3).standard_normal((n, d))
    out = eigvec_alignment(empirical_rf_kernel("relu", net.W1, X), X, net.beta_star, k=3, rng=4)
    out0 = eigvec_alignment(empirical_rf_kernel("relu", net.W0, X), X, net.beta_star, k=3, rng=4)
    assert out.cos2_psi.max() > 0.8**2 and out0.cos2_psi.max() < 0.5**2
    assert set(out.to_dict()) == {"values", "cos2_y0", "cos2_psi", "cos2_y2"} and out.values.shape == (3,)


# ----------------------------------------------------------------------------- backends
class _NumpyProxy:
    """numpy under another name: ``xp is np`` is false, so the device (cupy) code paths run on the CPU."""

    __name__ = "numpy_proxy"

    def __getattr__(self, name):
        return getattr(np, name)


def _sim_backend():
    from rmtfl.numerics import Backend

    return Backend("sim", _NumpyProxy())


@pytest.mark.parametrize("act", ["relu", "step", "erf", "relu^2", "identity", "tanh"])
def test_device_code_path_matches_numpy(act):
    # same operations in another namespace: equal to rounding (the closed forms are elementwise maps on one GEMM)
    sim = _sim_backend()
    X = sample_sphere(120, 5, rng=0) * 1.5
    v = np.eye(5)[2]
    for gamma in ((0.5, 2.0, v), 0.3, np.diag(np.arange(1.0, 6.0))):
        np.testing.assert_allclose(kernel_gram(act, X, gamma=gamma, backend=sim), kernel_gram(act, X, gamma=gamma),
                                   rtol=1e-13, atol=1e-14)
        np.testing.assert_allclose(kernel_gram(act, X[:40], X[40:], gamma=gamma, backend=sim),
                                   kernel_gram(act, X[:40], X[40:], gamma=gamma), rtol=1e-13, atol=1e-14)
    W = np.random.default_rng(1).standard_normal((30, 5))
    np.testing.assert_allclose(empirical_rf_kernel(act, W, X, backend=sim),
                               empirical_rf_kernel(act, W, X), rtol=1e-12, atol=1e-13)


def test_device_code_path_experiments_match_numpy():
    sim = _sim_backend()
    b1 = gram_degree_eigenvalues("relu", d=6, n=300, rng=3)
    b2 = gram_degree_eigenvalues("relu", d=6, n=300, rng=3, backend=sim)
    assert b2.method == "dense-eigh-sim" and np.allclose(b1.values, b2.values, rtol=1e-10, atol=1e-14)
    a1, a2 = gram_alignment("relu", d=6, n=300, b=5.0, rng=4), gram_alignment("relu", d=6, n=300, b=5.0, rng=4,
                                                                                 backend=sim)
    assert a1.eigenvalue == pytest.approx(a2.eigenvalue, rel=1e-12)
    assert np.allclose([a1.cos2_y0, a1.cos2_y2, a1.cos2_psi], [a2.cos2_y0, a2.cos2_y2, a2.cos2_psi], atol=1e-9)
    l1, l2 = (linear_sector_gram("relu", A=0.1, B=0.5, d=6, n=300, rng=5, backend=be) for be in ("numpy", sim))
    assert l1.target == pytest.approx(l2.target, rel=1e-12) and l1.orthogonal == pytest.approx(l2.orthogonal, rel=1e-12)


def test_cupy_unavailable_is_a_clean_value_error():
    # on a machine without cupy the request fails with a plain ValueError (the GPU tests below then skip)
    from rmtfl.numerics import get_backend

    try:
        get_backend("cupy")
    except ValueError as exc:
        assert "cupy" in str(exc)
        with pytest.raises(ValueError, match="cupy"):
            kernel_gram("relu", sample_sphere(5, 3, rng=0), gamma=1.0, backend="cupy")


@pytest.mark.gpu
@pytest.mark.parametrize("act", ["relu", "step", "erf", "relu^2", "tanh"])
def test_cupy_gram_matches_numpy(act):
    from rmtfl.numerics import to_numpy

    X = sample_sphere(500, 8, rng=0) * 1.3
    v = np.eye(8)[1]
    for gamma in ((0.5, 2.0, v), 1.0 / 8):
        Kc = kernel_gram(act, X, gamma=gamma, backend="cupy")
        assert type(Kc).__module__.startswith("cupy")
        np.testing.assert_allclose(to_numpy(Kc), kernel_gram(act, X, gamma=gamma), rtol=1e-11, atol=1e-12)
    W = np.random.default_rng(1).standard_normal((64, 8))
    np.testing.assert_allclose(to_numpy(empirical_rf_kernel(act, W, X, backend="cupy")),
                               empirical_rf_kernel(act, W, X), rtol=1e-11, atol=1e-12)


@pytest.mark.gpu
def test_cupy_spectra_and_alignment_match_numpy():
    b1 = gram_degree_eigenvalues("relu", d=10, n=1500, rng=3)
    b2 = gram_degree_eigenvalues("relu", d=10, n=1500, rng=3, backend="cupy")
    assert b2.method == "dense-eigh-cupy" and np.allclose(b1.values, b2.values, rtol=1e-9, atol=1e-13)
    for b in (0.0, 5.0):
        a1 = gram_alignment("relu", d=10, n=1000, b=b, rng=4)
        a2 = gram_alignment("relu", d=10, n=1000, b=b, rng=4, backend="cupy")
        assert a1.eigenvalue == pytest.approx(a2.eigenvalue, rel=1e-10)
        assert np.allclose([a1.cos2_y0, a1.cos2_y2, a1.cos2_psi], [a2.cos2_y0, a2.cos2_y2, a2.cos2_psi], atol=1e-7)
    l1, l2 = (linear_sector_gram("relu", A=0.1, B=0.5, d=10, n=800, rng=5, backend=be) for be in ("numpy", "cupy"))
    assert l1.target == pytest.approx(l2.target, rel=1e-10) and l1.orthogonal == pytest.approx(l2.orthogonal, rel=1e-10)
