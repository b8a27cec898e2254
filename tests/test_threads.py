"""BLAS thread pinning (rmtfl._threads, via threadpoolctl) (re-exported by rmtfl.sweep)."""
import numpy as np
import pytest
from threadpoolctl import threadpool_info

from rmtfl._threads import blas_thread_control, blas_thread_info, blas_threads


def _blas_threads_now():
    return [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]


def test_limit_applies_and_restores():
    import scipy.linalg  # noqa: F401  (scipy's own OpenBLAS must be pinned too)

    before = _blas_threads_now()
    assert blas_thread_control() and before
    with blas_threads(1):
        assert _blas_threads_now() == [1] * len(before)
        assert {row["num_threads"] for row in blas_thread_info()} == {1}
    assert _blas_threads_now() == before
    with blas_threads(None):
        assert _blas_threads_now() == before


def test_same_bits_inside_nested_limits():
    A = np.random.default_rng(0).standard_normal((300, 300))
    with blas_threads(1):
        r1 = A @ A
        with blas_threads(1):
            r2 = A @ A
    assert np.array_equal(r1, r2)


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2"])
def test_bad_thread_count(bad):
    with pytest.raises(ValueError, match="n must be an integer"):
        with blas_threads(bad):
            pass
