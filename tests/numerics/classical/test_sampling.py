"""Sampling of Gaussian and spiked matrices: law, reproducibility, invalid inputs."""
import numpy as np
import pytest

from rmtfl.numerics import gaussian_matrix, haar_frame, spiked_matrix


def test_gaussian_matrix_variance_and_reproducibility():
    W = gaussian_matrix(200, 500, var=2.0, rng=0)
    # entry variance var/d = 0.004, 1e5 entries: relative stderr sqrt(2/1e5) = 0.45%
    assert W.var() * 500 == pytest.approx(2.0, rel=0.02)
    np.testing.assert_array_equal(W, gaussian_matrix(200, 500, var=2.0, rng=0))
    assert not np.array_equal(W, gaussian_matrix(200, 500, var=2.0, rng=1))
    assert gaussian_matrix(3, 4, rng=0, dtype="float32").dtype == np.float32


def test_spiked_matrix_structure():
    th = np.array([3.0, 1.0])
    sp = spiked_matrix(80, 60, th, rng=5)
    np.testing.assert_allclose(sp.U.T @ sp.U, np.eye(2), atol=1e-12)
    np.testing.assert_allclose(sp.V.T @ sp.V, np.eye(2), atol=1e-12)
    # noise part is the same as an unspiked draw from the first child generator
    r_noise = np.random.default_rng(5).spawn(3)[0]
    W0 = gaussian_matrix(80, 60, rng=r_noise)
    np.testing.assert_allclose(sp.W - W0, sp.U @ np.diag(th) @ sp.V.T, atol=1e-12)
    same = spiked_matrix(80, 60, th, rng=5)
    np.testing.assert_array_equal(sp.W, same.W)


def test_haar_frame_is_haar_like():
    # E[(first coordinate)^2] = 1/n for a Haar unit vector
    vals = [haar_frame(10, 1, rng=r)[0, 0] ** 2 for r in np.random.default_rng(0).spawn(400)]
    assert np.mean(vals) == pytest.approx(0.1, abs=0.03)


@pytest.mark.parametrize("call,match", [
    (lambda: gaussian_matrix(0, 3), "N must"),
    (lambda: gaussian_matrix(3, 3, var=0.0), "var"),
    (lambda: gaussian_matrix(3, 3, dtype="int32"), "dtype"),
    (lambda: spiked_matrix(5, 5, -1.0), "theta"),
    (lambda: spiked_matrix(5, 5, [1.0] * 6), "number of spikes"),
    (lambda: spiked_matrix(5, 5, float("nan")), "theta"),
    (lambda: gaussian_matrix(3, 3, backend="torch"), "backend"),
])
def test_invalid_inputs(call, match):
    with pytest.raises(ValueError, match=match):
        call()
