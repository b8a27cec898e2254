"""Backends: cupy is optional, never imported by ``import rmtfl``, and fails with a clear ValueError."""
import importlib.util
import subprocess
import sys

import numpy as np
import pytest

from rmtfl.numerics import BackendUnavailable, gaussian_matrix, get_backend, singular_values

HAS_CUPY = importlib.util.find_spec("cupy") is not None


def test_import_does_not_import_cupy():
    code = "import rmtfl, rmtfl.numerics, rmtfl.theory, rmtfl.compare, rmtfl.cli._main, sys; print('cupy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.skipif(HAS_CUPY, reason="cupy is installed here")
def test_cupy_missing_raises_clear_valueerror():
    with pytest.raises(BackendUnavailable, match="cupy") as exc:
        get_backend("cupy")
    assert isinstance(exc.value, ValueError)
    assert "install" in str(exc.value) or "device" in str(exc.value)
    with pytest.raises(ValueError, match="cupy"):
        gaussian_matrix(3, 3, backend="cupy")


def test_unknown_backend():
    with pytest.raises(ValueError, match="backend must be one of"):
        get_backend("jax")


def test_numpy_backend_roundtrip():
    be = get_backend("numpy")
    assert be.to_numpy(be.asarray([1.0, 2.0])).tolist() == [1.0, 2.0]


@pytest.mark.gpu
def test_cupy_singular_values_match_numpy():
    be = get_backend("cupy")
    W = gaussian_matrix(300, 500, rng=0)
    s_np = singular_values(W)
    s_cp = singular_values(be.asarray(W), backend="cupy")
    np.testing.assert_allclose(s_cp, s_np, atol=1e-10)
    W32 = gaussian_matrix(300, 500, rng=0, backend="cupy", dtype="float32")
    s32 = singular_values(W32, backend="cupy")
    np.testing.assert_allclose(s32[:50], singular_values(W32.get().astype(np.float64))[:50], atol=1e-4)


def test_issue14_to_numpy_refuses_non_numeric_and_get_backend_names_its_argument():
    from rmtfl.numerics import get_backend, to_numpy
    assert to_numpy(np.ones(2) + 1j).dtype.kind == "c"  # any numeric dtype and shape
    for bad in ("abc", None, np.array([object()] * 2)):
        with pytest.raises(TypeError, match="a must be a numeric array"):
            to_numpy(bad)
    with pytest.raises(ValueError, match="name="):
        get_backend("nope")
