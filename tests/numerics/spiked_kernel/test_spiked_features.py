"""Tests of the one-step spiked features (rmtfl.numerics one_step_weights, measure_spike, generalisation_experiment).

Acceptance (issue 4): measured d E<w, w*>^2 within 10% of 1 + d B at d = 256, N = 512, n = 1024.
"""
import numpy as np
import pytest

from rmtfl.compare import mean_stderr
from rmtfl.numerics import generalisation_experiment, measure_spike, one_step_weights, ridge_predict
from rmtfl.theory import eta_from_b, spike_constants


@pytest.mark.parametrize("target", ["linear", "hermite(0, 1, 0.5)"])
def test_measured_spike_within_10_percent(target):
    d, N, n = 256, 512, 1024
    eta = eta_from_b("relu", target, psi=N / d, b=3.0)
    sc = spike_constants("relu", target, N=N, d=d, n=n, eta=eta)
    runs = [one_step_weights("relu", target, N=N, d=d, n=n, eta=eta, rng=g) for g in np.random.default_rng(7).spawn(4)]
    ms = [measure_spike(r.W1, r.beta_star, W0=r.W0) for r in runs]
    sp = np.mean([x.spike for x in ms])
    assert abs(sp / sc.spike_variance - 1) < 0.10
    orth, se = mean_stderr([x.orthogonal for x in ms])
    assert abs(orth - sc.orthogonal_variance) < 3 * max(se, np.mean([x.orthogonal_se for x in ms]) / 2)
    # the spike of W1 - W0 points along h_hat, whose overlap with beta* is the finite-alpha prediction
    cos2 = np.mean([(r.beta_hat @ r.beta_star) ** 2 / (r.beta_hat @ r.beta_hat) for r in runs])
    assert abs(cos2 - sc.cos2_hhat) < 0.05
    assert np.mean([x.cos2_top for x in ms]) == pytest.approx(sc.cos2_hhat, abs=0.06)


def test_same_seed_same_output():
    a = one_step_weights("relu", "tanh", N=30, d=20, n=40, eta=2.0, rng=3)
    b = one_step_weights("relu", "tanh", N=30, d=20, n=40, eta=2.0, rng=3)
    assert np.array_equal(a.W1, b.W1) and np.array_equal(a.beta_star, b.beta_star)
    assert a.W1.shape == (30, 20) and a.X.shape == (40, 20) and a.y.shape == (40,)
    assert np.allclose(a.beta_hat, a.X.T @ a.y / 40)


def test_ridge_predict_matches_primal():
    rng = np.random.default_rng(0)
    F2, Ft, y = rng.standard_normal((30, 50)), rng.standard_normal((7, 50)), rng.standard_normal(30)
    a = np.linalg.solve(F2.T @ F2 + 0.1 * np.eye(50), F2.T @ y)
    assert np.allclose(ridge_predict(F2 @ F2.T, Ft @ F2.T, y, lam=0.1), Ft @ a)
    with pytest.raises(ValueError, match="lam"):
        ridge_predict(np.eye(2), np.eye(2), np.ones(2), lam=0.0)


@pytest.mark.slow
def test_generalisation_ordering():
    res = generalisation_experiment("relu", "hermite(0, 1, 0.5)", d=48, n=192, n2=192, n_test=1920,
                                    N=(96, 2048), b=5.0, seeds=3, rng=1)
    k0, k0se = res.kernels["k0"]
    kh, khse = res.kernels["k1_hhat"]
    assert kh + 3 * khse < k0 - 3 * k0se
    assert res.nn[-1] + 3 * res.nn_se[-1] < k0 - 3 * k0se
    assert abs(res.nn[-1] - kh) < abs(res.nn[0] - kh)
    assert res.kernels["k1_target"].mean < kh  # the phi -> inf idealisation is better still


def test_generalisation_small_runs():
    res = generalisation_experiment("relu", "linear", d=12, n=48, n2=48, n_test=200, N=(16, 32), seeds=2,
                                    rng=0)
    assert res.nn.shape == (2,) and set(res.kernels) == {"k0", "k1_target", "k1_hhat"}
    assert res.N == (16, 32) and res.params["N"] == [16, 32] and res.params["n"] == 48
    import json

    d = json.loads(json.dumps(res.to_dict()))
    assert d["kernels"]["k0"]["mean"] == pytest.approx(res.kernels["k0"].mean) and "raw" not in d
    one = generalisation_experiment("relu", "linear", d=12, n=48, n2=48, n_test=200, N=16, seeds=1, rng=0,
                                    kernels=False)
    assert one.N == (16,) and one.kernels == {}
    with pytest.raises(ValueError, match="d must be"):
        generalisation_experiment("relu", "linear", d=1)
    with pytest.raises(TypeError):
        generalisation_experiment(d=12)  # activation and target are required


def _sim_backend():
    from rmtfl.numerics import Backend

    class _NumpyProxy:  # numpy under another name: the device code paths run on the CPU
        __name__ = "numpy_proxy"

        def __getattr__(self, name):
            return getattr(np, name)

    return Backend("sim", _NumpyProxy())


def test_device_code_path_matches_numpy():
    kw = dict(d=12, n=48, n2=48, n_test=200, N=(16, 32), seeds=2, rng=0)
    r1 = generalisation_experiment("relu", "hermite(0, 1, 0.5)", **kw)
    r2 = generalisation_experiment("relu", "hermite(0, 1, 0.5)", backend=_sim_backend(), **kw)
    np.testing.assert_allclose(r2.nn, r1.nn, rtol=1e-10)
    np.testing.assert_allclose(r2.rf, r1.rf, rtol=1e-10)
    for k, (m, _) in r1.kernels.items():
        assert r2.kernels[k].mean == pytest.approx(m, rel=1e-10)
    a = one_step_weights("relu", "hermite(0, 1, 0.5)", N=30, d=20, n=40, eta=2.0, rng=3)
    b = one_step_weights("relu", "hermite(0, 1, 0.5)", N=30, d=20, n=40, eta=2.0, rng=3, backend=_sim_backend())
    assert np.allclose(a.W1, b.W1, rtol=1e-13, atol=1e-15) and np.array_equal(a.X, b.X)


@pytest.mark.gpu
def test_cupy_matches_numpy():
    kw = dict(d=16, n=64, n2=64, n_test=320, N=(32, 128), seeds=2, rng=0)
    r1 = generalisation_experiment("relu", "hermite(0, 1, 0.5)", **kw)
    r2 = generalisation_experiment("relu", "hermite(0, 1, 0.5)", backend="cupy", **kw)
    np.testing.assert_allclose(r2.nn, r1.nn, rtol=1e-8)
    np.testing.assert_allclose(r2.rf, r1.rf, rtol=1e-8)
    for k, (m, _) in r1.kernels.items():
        assert r2.kernels[k].mean == pytest.approx(m, rel=1e-8)
    a = one_step_weights("relu", "hermite(0, 1, 0.5)", N=128, d=64, n=256, eta=4.0, rng=3)
    b = one_step_weights("relu", "hermite(0, 1, 0.5)", N=128, d=64, n=256, eta=4.0, rng=3, backend="cupy")
    assert isinstance(b.W1, np.ndarray) and np.allclose(a.W1, b.W1, rtol=1e-12, atol=1e-13)
    ms_a, ms_b = measure_spike(a.W1, a.beta_star), measure_spike(b.W1, b.beta_star)
    assert ms_a.spike == pytest.approx(ms_b.spike, rel=1e-10)
