"""backend="cupy" through the numerics (sampling, model, spectra, two-step) and the device RNG option.

On the CPU the device code paths run on a numpy stand-in backend ("sim": numpy under another
name, so every ``be.name != "numpy"`` branch is taken); the ``@pytest.mark.gpu`` tests run the
same comparisons on real cupy and skip without a CUDA device.  Reference: the numpy backend
with the same host ``rng`` (bit-identical inputs), so agreement is to rounding (1e-9 in float64).
"""
import numpy as np
import pytest

from rmtfl.numerics import gaussian_matrix, singular_values, spiked_matrix, top_singular_triplets
from rmtfl.numerics import Backend, get_backend, to_numpy
from rmtfl.numerics import init_first_layer, init_second_layer, sample_inputs
from rmtfl.numerics import device_normal
from rmtfl.numerics import simulate_one_step, simulate_two_step


class _NumpyProxy:
    __name__ = "numpy_proxy"

    def __getattr__(self, name):
        return getattr(np, name)


SIM = Backend("sim", _NumpyProxy())
KW = dict(activation="tanh", target="linear", N=150, d=120, n=240, eta1=2.0, eta2=2.0)


def _agree(a, b, tol):
    np.testing.assert_allclose(a.singular_values, b.singular_values, rtol=tol, atol=tol)
    np.testing.assert_allclose(a.cos2_target, b.cos2_target, atol=tol)
    np.testing.assert_allclose(a.cos2_a_powers, b.cos2_a_powers, atol=tol)
    assert a.outlier_count == b.outlier_count and a.complete == b.complete


@pytest.mark.parametrize("k", [None, 4])
def test_device_paths_match_numpy(k):
    _agree(simulate_two_step(**KW, rng=3, k=k, backend=SIM), simulate_two_step(**KW, rng=3, k=k), 1e-9)
    r1 = simulate_one_step(activation="relu", target="linear", N=100, d=100, n=200, eta=3.0, rng=1, backend=SIM)
    r2 = simulate_one_step(activation="relu", target="linear", N=100, d=100, n=200, eta=3.0, rng=1)
    _agree(r1, r2, 1e-9)
    sp = spiked_matrix(200, 150, [3.0, 2.0], rng=4)
    a = top_singular_triplets(sp.W, 2, rng=0, backend=SIM, edge=2.3)
    b = top_singular_triplets(sp.W, 2, rng=0, edge=2.3, method="iterative")
    np.testing.assert_allclose(a.s, b.s, rtol=1e-10)
    np.testing.assert_allclose(np.abs(np.sum(a.U * b.U, axis=0)), 1.0, atol=1e-9)
    np.testing.assert_allclose(singular_values(sp.W, backend=SIM), singular_values(sp.W), rtol=1e-12)


def test_host_rng_is_bit_identical_across_backends():
    for law in ("gaussian", "sphere"):
        np.testing.assert_array_equal(init_first_layer(30, 20, law=law, rng=5, backend=SIM),
                                      init_first_layer(30, 20, law=law, rng=5))
    for law in ("gaussian", "rademacher"):
        np.testing.assert_array_equal(init_second_layer(30, law=law, rng=5, backend=SIM),
                                      init_second_layer(30, law=law, rng=5))
    np.testing.assert_array_equal(sample_inputs(7, 4, rng=2, backend=SIM), sample_inputs(7, 4, rng=2))


def test_device_rng_is_another_reproducible_stream():
    a = simulate_two_step(**KW, rng=3, k=3, device_rng=True)
    b = simulate_two_step(**KW, rng=3, k=3, device_rng=True)
    c = simulate_two_step(**KW, rng=3, k=3)
    np.testing.assert_array_equal(a.singular_values, b.singular_values)
    assert not np.array_equal(a.singular_values, c.singular_values)
    assert a.params["device_rng"] and not c.params["device_rng"]
    # the same law: entries of W0 ~ N(0, 1/d), X ~ N(0, 1) (4-sigma checks on 1e5 entries)
    W = init_first_layer(400, 250, rng=1, device_rng=True)
    assert abs(W.var() * 250 - 1.0) < 4 * np.sqrt(2 / W.size) and abs(W.mean()) * np.sqrt(250) < 4 / np.sqrt(W.size)
    X = sample_inputs(400, 250, rng=1, device_rng=True, dtype="float32")
    assert X.dtype == np.float32 and abs(X.var() - 1.0) < 4 * np.sqrt(2 / X.size)
    S = init_first_layer(50, 40, law="sphere", rng=2, device_rng=True)
    np.testing.assert_allclose(np.linalg.norm(S, axis=1), 1.0, rtol=1e-12)
    G = gaussian_matrix(300, 200, rng=0, device_rng=True)
    assert not np.array_equal(G, gaussian_matrix(300, 200, rng=0))
    np.testing.assert_array_equal(G, gaussian_matrix(300, 200, rng=0, device_rng=True))
    sp = spiked_matrix(300, 200, [4.0], rng=0, device_rng=True)
    assert np.allclose(sp.U, spiked_matrix(300, 200, [4.0], rng=0).U)  # frames: host stream
    assert device_normal(3, dtype="float64", rng=1, backend="numpy").shape == (3,)


def test_cupy_request_without_gpu_fails_cleanly():
    try:
        get_backend("cupy")
    except ValueError as exc:
        assert "cupy" in str(exc)
        with pytest.raises(ValueError, match="cupy"):
            simulate_two_step(**KW, rng=0, backend="cupy")
        with pytest.raises(ValueError, match="cupy"):
            gaussian_matrix(3, 3, backend="cupy", device_rng=True)
    else:
        pytest.skip("cupy is usable here; the GPU tests cover it")


# ------------------------------------------------------------------------------ real GPU
@pytest.mark.gpu
@pytest.mark.parametrize("dtype,tol", [("float64", 1e-8), ("float32", 2e-3)])
def test_cupy_two_step_matches_numpy(dtype, tol):
    for k in (None, 5):
        g = simulate_two_step(**KW, rng=7, k=k, dtype=dtype, backend="cupy")
        c = simulate_two_step(**KW, rng=7, k=k, dtype=dtype)
        np.testing.assert_allclose(g.singular_values[:5], c.singular_values[:5], rtol=tol, atol=tol)
        np.testing.assert_allclose(g.cos2_target, c.cos2_target, atol=10 * tol)
        assert g.outlier_count == c.outlier_count


@pytest.mark.gpu
def test_cupy_device_rng_and_spectra():
    be = get_backend("cupy")
    a = simulate_two_step(**KW, rng=3, k=3, backend="cupy", device_rng=True)
    b = simulate_two_step(**KW, rng=3, k=3, backend="cupy", device_rng=True)
    np.testing.assert_array_equal(a.singular_values, b.singular_values)
    W = gaussian_matrix(300, 200, rng=0, backend="cupy", device_rng=True)
    assert type(W).__module__.startswith("cupy")
    s = singular_values(W, backend="cupy")
    np.testing.assert_allclose(s, np.linalg.svd(to_numpy(W), compute_uv=False), atol=1e-10)
    sp = spiked_matrix(400, 300, [3.0, 2.0], rng=1)
    t_gpu = top_singular_triplets(be.asarray(sp.W), 2, rng=0, backend="cupy", edge=2.4)
    t_cpu = top_singular_triplets(sp.W, 2, rng=0, edge=2.4, method="iterative")
    np.testing.assert_allclose(t_gpu.s, t_cpu.s, rtol=1e-10)
    assert t_gpu.method == "dense" and t_gpu.complete
