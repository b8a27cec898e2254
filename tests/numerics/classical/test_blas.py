"""Host products through scipy's BLAS (rmtfl.numerics._classical.blas) equal numpy's, for every memory layout."""
import numpy as np
import pytest

from rmtfl.numerics._classical.blas import gram_upper, matmul


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_matmul_layouts(dtype):
    rng = np.random.default_rng(0)
    A = rng.standard_normal((7, 5)).astype(dtype)
    B = rng.standard_normal((5, 4)).astype(dtype)
    tol = 1e-5 if dtype == np.float32 else 1e-13
    views_a = [A, np.asfortranarray(A), rng.standard_normal((14, 5)).astype(dtype)[::2]]
    views_b = [B, np.asfortranarray(B), rng.standard_normal((4, 5)).astype(dtype).T]
    for a in views_a:
        for b in views_b:
            C = matmul(a, b)
            assert C.dtype == dtype and C.flags.c_contiguous
            np.testing.assert_allclose(C, a @ b, rtol=tol, atol=tol)


def test_matmul_falls_back_to_at():
    A = np.arange(6).reshape(2, 3)  # integers: numpy's @
    assert matmul(A, A.T).tolist() == (A @ A.T).tolist()
    x = np.ones(3)
    np.testing.assert_array_equal(matmul(np.ones((2, 3)), x), [3.0, 3.0])  # 1-d operand
    with pytest.raises(ValueError):
        matmul(np.ones((2, 3)), np.ones((2, 3)))  # numpy's own shape error


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gram_upper(dtype):
    M = np.random.default_rng(1).standard_normal((6, 9)).astype(dtype)
    tol = 1e-5 if dtype == np.float32 else 1e-13
    for m in (M, np.asfortranarray(M)):
        G = gram_upper(m)
        np.testing.assert_allclose(np.triu(G), np.triu(M @ M.T), rtol=tol, atol=tol)
        assert np.all(np.tril(G, -1) == 0)
    with pytest.raises(ValueError, match="float32 or float64"):
        gram_upper(np.ones((2, 2), dtype=int))
