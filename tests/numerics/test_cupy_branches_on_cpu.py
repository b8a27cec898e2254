"""Every ``backend="cupy"`` code path, run on the CPU through a strict stand-in for cupy.

No GPU and no cupy on the development machines, so the branches taken only when
``be.name != "numpy"`` (or ``be.name == "cupy"``) would otherwise first run in a short, rare
GPU session.  Here they run against a fake ``cupy`` module installed in ``sys.modules`` (and a
fake ``cupyx.scipy.special``), reached through the real ``get_backend("cupy")`` ->
``_cupy_backend()`` route (``import cupy``, ``cuda.runtime.getDeviceCount()``).

The fake is a *strict* model of cupy's host/device rules, not just numpy under another name:

* its arrays (:class:`FakeDeviceArray`, module ``"cupy"``, so ``to_numpy`` calls ``.get()``)
  hold a numpy array but are not ``numpy.ndarray``s;
* ``numpy.asarray(device)`` raises ``TypeError`` (cupy: "Implicit conversion to a NumPy array
  is not allowed"), so scipy/numpy code that coerces a device array fails as on a GPU;
* a numpy array mixed into a device ufunc, operator or ``cupy.*`` call raises ``TypeError``
  (cupy: "Unsupported type numpy.ndarray"), except where cupy accepts host data
  (``asarray``/``array``/..., indices, ``a[...] = host``); scalars are fine;
* numpy functions on device arrays dispatch like cupy's ``__array_function__`` /
  ``__array_ufunc__`` (same-named cupy function; scipy.special ufuncs -> cupyx.scipy.special);
* reductions return 0-d device arrays, host data is copied on transfer, and the device
  generator (``cupy.random.default_rng``) is a different stream from numpy's.

Every cupy name the code touches is logged; the fixture fails if one is not in
``VERIFIED_CUPY_API`` (names checked against cupy's sources: ``cupy/__init__.py``,
``cupy/linalg``, ``cupy.random.Generator.standard_normal(size, dtype)``, ``cupyx.scipy.special``).

Reference for every comparison: the same call with ``backend="numpy"`` and the same host
``rng`` (bit-identical inputs), so values agree to rounding (different LAPACK drivers: 1e-10
relative in float64).  With ``device_rng=True`` only shapes, finiteness, reproducibility and the
use of the fake's own generator are checked.  What this cannot check: cuSOLVER/cuBLAS numerics,
float32 accuracy on a GPU, memory and speed (the ``@pytest.mark.gpu`` tests and
``benchmarks/gpu_check.py`` do).
"""
from __future__ import annotations

import json
import sys

import numpy as np
import pytest

from .fake_cupy import _FAKE_MODULES, VERIFIED_CUPY_API, fake_cupy_installed


@pytest.fixture
def cp():
    """The fake cupy, installed; at teardown every cupy name the code used must be a verified one."""
    with fake_cupy_installed() as fake:
        yield fake
    unverified = sorted(fake.log.names - VERIFIED_CUPY_API)
    assert not unverified, f"cupy API used but not verified to exist in cupy: {unverified}"


def _dev(x):
    return sys.modules["cupy"].asarray(x)


def _cols_match_up_to_sign(A, B, tol):
    A, B = np.asarray(A), np.asarray(B)
    assert A.shape == B.shape
    cos = np.abs(np.sum(A * B, axis=0)) / (np.linalg.norm(A, axis=0) * np.linalg.norm(B, axis=0))
    np.testing.assert_allclose(cos, 1.0, atol=tol)


def _is_host(*arrays):
    return all(type(a) is np.ndarray for a in arrays)


# ------------------------------------------------------------------------------ the fake itself
def test_fake_follows_cupys_host_device_rules(cp):
    from rmtfl.numerics import Backend, get_backend, to_numpy

    be = get_backend("cupy")
    assert isinstance(be, Backend) and be.name == "cupy" and be.xp is cp and get_backend("cupy") is be
    h = np.arange(6.0).reshape(2, 3)
    d = be.asarray(h)
    assert type(d).__module__ == "cupy" and not isinstance(d, np.ndarray)
    d[0, 0] = 7.0
    assert h[0, 0] == 0.0  # asarray copied the host data
    for bad in (lambda: np.asarray(d), lambda: d + h, lambda: h + d, lambda: h @ d.T, lambda: d @ h.T,
                lambda: cp.sqrt(h), lambda: cp.linalg.norm(h), lambda: d.dot(h.T)):
        with pytest.raises(TypeError):
            bad()
    d += 1.0
    d *= np.float32(2.0)
    assert to_numpy(d @ d.T).tolist() == (to_numpy(d) @ to_numpy(d).T).tolist()
    s = d.sum()
    assert type(s) is type(d) and s.ndim == 0 and float(s) == float(to_numpy(d).sum())
    assert type(np.linalg.norm(d)) is type(d)  # numpy function -> cupy function (__array_function__)
    assert type(cp.tanh(d, out=d)) is type(d) and bool((d < 1.0).all())
    g = be.device_rng(3)
    z = g.standard_normal((4, 2), dtype=np.float32)
    assert type(z) is type(d) and z.dtype == np.float32 and cp.log.generators == 1
    assert not np.array_equal(to_numpy(be.device_rng(3).standard_normal(5)),
                              np.random.default_rng(3).standard_normal(5))  # another stream than the host one
    be.synchronize()
    assert cp.log.syncs == 1


def test_fake_install_is_undone_and_real_failures_still_reported():
    from rmtfl.numerics import _backend as backend_mod
    from rmtfl.numerics import BackendUnavailable, get_backend

    before = {k: sys.modules.get(k) for k in _FAKE_MODULES}
    with fake_cupy_installed(n_devices=0):
        with pytest.raises(BackendUnavailable, match="no CUDA device is visible"):
            get_backend("cupy")
    with fake_cupy_installed(n_devices=None):
        with pytest.raises(BackendUnavailable, match="no CUDA device is usable"):
            get_backend("cupy")
    with fake_cupy_installed() as fake:
        assert get_backend("cupy").xp is fake
    assert {k: sys.modules.get(k) for k in _FAKE_MODULES} == before
    assert backend_mod._cupy_backend.cache_info().currsize == 0
    if before["cupy"] is None:  # the real situation here: a clean "cupy unavailable" error again
        with pytest.raises(BackendUnavailable, match="cupy"):
            get_backend("cupy")


def test_numpy_backend_takes_device_arrays_back_to_the_host(cp):
    # Backend.asarray promises "host or device"; on the numpy backend a device array must come back
    # through .get() (np.asarray of a cupy array raises), e.g. measure_spiked(sp_on_gpu) with its
    # default backend="numpy"
    from rmtfl.numerics import measure_spiked, singular_values, spiked_matrix
    from rmtfl.numerics import get_backend

    h = np.arange(6.0).reshape(2, 3)
    back = get_backend("numpy").asarray(_dev(h))
    assert _is_host(back) and np.array_equal(back, h)
    sp = spiked_matrix(120, 80, [3.0], rng=2, backend="cupy")
    np.testing.assert_allclose(measure_spiked(sp, rng=1).singular_values,
                               measure_spiked(spiked_matrix(120, 80, [3.0], rng=2), rng=1).singular_values, rtol=1e-10)
    np.testing.assert_allclose(singular_values(sp.W), singular_values(sp.W, backend="cupy"), rtol=1e-10)


# ------------------------------------------------------------------------------------ spectra
@pytest.mark.parametrize("shape", [(60, 90), (90, 60)])
@pytest.mark.parametrize("dtype,rtol", [("float64", 1e-10), ("float32", 2e-5)])
def test_spectra_match_numpy(cp, shape, dtype, rtol):
    from rmtfl.numerics import eigenvalues_of_gram, gaussian_matrix, gram_eigenvalues, singular_values

    W = gaussian_matrix(*shape, rng=1, dtype=dtype)
    Wd = gaussian_matrix(*shape, rng=1, dtype=dtype, backend="cupy")
    assert type(Wd).__module__ == "cupy" and np.array_equal(Wd.get(), W)  # same host draw, moved
    smax = float(singular_values(W)[0])
    for method in ("auto", "svd"):
        s = singular_values(Wd, backend="cupy", method=method)
        assert _is_host(s) and s.dtype == np.float64
        np.testing.assert_allclose(s, singular_values(W, method=method), rtol=rtol, atol=rtol * smax)
    np.testing.assert_allclose(singular_values(W, backend="cupy"), singular_values(W), rtol=rtol, atol=rtol * smax)
    ev = gram_eigenvalues(Wd, backend="cupy")
    assert _is_host(ev)
    np.testing.assert_allclose(ev, gram_eigenvalues(W), rtol=rtol, atol=rtol * smax**2)
    for side in ("N", "d"):
        e = eigenvalues_of_gram(Wd, side=side, backend="cupy")
        np.testing.assert_allclose(e, eigenvalues_of_gram(W, side=side), rtol=rtol, atol=rtol * smax**2)
    with pytest.raises(ValueError, match="finite"):
        singular_values(cp.asarray(np.full((3, 3), np.nan)), backend="cupy")


def test_square_float32_gram_route_in_float64_matches_numpy(cp):
    """The float64 second try of a float32 matrix (rmtfl/numerics/_classical/promote.py) on the device."""
    from rmtfl.numerics import dense_spectrum_and_top, singular_values

    g = np.random.default_rng(3)
    U, _ = np.linalg.qr(g.standard_normal((80, 80)))
    A = ((U * np.geomspace(1.0, 2e-3, 80)) @ U[::-1].T).astype(np.float32)
    np.testing.assert_allclose(singular_values(cp.asarray(A), backend="cupy"), singular_values(A), rtol=1e-9)
    s_all, s, Ud, Vd = dense_spectrum_and_top(cp.asarray(A), 2, backend="cupy")
    r_all, r, RU, RV = dense_spectrum_and_top(A, 2)
    assert _is_host(s_all, Ud, Vd) and Ud.dtype == np.float64
    np.testing.assert_allclose(s_all, r_all, rtol=1e-9)
    _cols_match_up_to_sign(Ud, RU, 1e-9)


@pytest.mark.parametrize("shape", [(150, 100), (100, 150)])
def test_top_triplets_and_dense_spectrum_match_numpy(cp, shape):
    from rmtfl.numerics import dense_spectrum_and_top, spiked_matrix, top_singular_triplets

    sp = spiked_matrix(*shape, [4.0, 2.5], rng=7)
    Wd = cp.asarray(sp.W)
    for edge in (None, 2.3):
        a = top_singular_triplets(Wd, 2, rng=0, edge=edge, backend="cupy")
        b = top_singular_triplets(sp.W, 2, rng=0, edge=edge, method="dense")
        assert a.method == "dense" and a.complete and _is_host(a.s, a.U, a.V)
        assert a.s.size == b.s.size and a.n_above == b.n_above
        np.testing.assert_allclose(a.s, b.s, rtol=1e-10)
        _cols_match_up_to_sign(a.U, b.U, 1e-9)
        _cols_match_up_to_sign(a.V, b.V, 1e-9)
        np.testing.assert_allclose(sp.W @ a.V, a.U * a.s, atol=1e-9)  # a triplet, not two unrelated vectors
    for method in ("mixed", "iterative", "arpack"):  # on the device every request is the dense solve
        assert top_singular_triplets(Wd, 2, rng=0, backend="cupy", method=method, tol=1e-9).method == "dense"
    a = top_singular_triplets(Wd, 1, margin=0, edge=2.3, backend="cupy")  # 2 values above the edge, 1 asked
    b = top_singular_triplets(sp.W, 1, margin=0, edge=2.3, method="dense")
    assert a.n_above == b.n_above == 2 and a.s.size == 2
    np.testing.assert_allclose(a.s, b.s, rtol=1e-10)
    s_all, s_top, U, V = dense_spectrum_and_top(Wd, 3, backend="cupy")
    r_all, r_top, RU, RV = dense_spectrum_and_top(sp.W, 3)
    assert _is_host(s_all, s_top, U, V)
    np.testing.assert_allclose(s_all, r_all, rtol=1e-10, atol=1e-10 * r_all[0])
    np.testing.assert_allclose(s_top, r_top, rtol=1e-10)
    _cols_match_up_to_sign(U, RU, 1e-9)
    _cols_match_up_to_sign(V, RV, 1e-9)


def test_top_eigenpairs_match_numpy(cp):
    from scipy.sparse.linalg import aslinearoperator

    from rmtfl.numerics import top_eigenpairs

    rng = np.random.default_rng(3)
    Z = rng.standard_normal((120, 80))
    S = Z @ Z.T / 80 + 6.0 * np.outer(np.eye(120)[0], np.eye(120)[0])
    for edge in (None, 4.0):
        a = top_eigenpairs(cp.asarray(S), 3, rng=1, edge=edge, backend="cupy")
        b = top_eigenpairs(S, 3, rng=1, edge=edge, method="dense")
        assert a.method == "dense" and _is_host(a.values, a.vectors) and a.n_above == b.n_above
        np.testing.assert_allclose(a.values, b.values, rtol=1e-10)
        _cols_match_up_to_sign(a.vectors, b.vectors, 1e-9)
    op = top_eigenpairs(aslinearoperator(S), 2, rng=1, backend="cupy")  # an operator stays on the host (ARPACK)
    np.testing.assert_allclose(op.values, b.values[:2], rtol=1e-8)


# ----------------------------------------------------------------------------------- samplers
def test_host_drawn_samplers_are_bit_identical(cp):
    from rmtfl.numerics import gaussian_matrix, spiked_matrix
    from rmtfl.numerics import init_first_layer, init_second_layer, sample_inputs

    for dtype in ("float64", "float32"):
        G = gaussian_matrix(30, 20, var=2.0, rng=4, dtype=dtype, backend="cupy")
        assert type(G).__module__ == "cupy" and G.dtype == np.dtype(dtype)
        assert np.array_equal(G.get(), gaussian_matrix(30, 20, var=2.0, rng=4, dtype=dtype))
        sp, sr = spiked_matrix(30, 20, [3.0, 1.0], rng=5, dtype=dtype, backend="cupy"), \
            spiked_matrix(30, 20, [3.0, 1.0], rng=5, dtype=dtype)
        assert np.array_equal(sp.W.get(), sr.W) and np.array_equal(sp.U, sr.U) and _is_host(sp.U, sp.V)
        for law in ("gaussian", "sphere"):
            assert np.array_equal(init_first_layer(30, 20, law=law, rng=5, dtype=dtype, backend="cupy").get(),
                                  init_first_layer(30, 20, law=law, rng=5, dtype=dtype))
        for law in ("gaussian", "rademacher"):
            assert np.array_equal(init_second_layer(30, law=law, rng=5, dtype=dtype, backend="cupy").get(),
                                  init_second_layer(30, law=law, rng=5, dtype=dtype))
        assert np.array_equal(sample_inputs(7, 4, rng=2, dtype=dtype, backend="cupy").get(),
                              sample_inputs(7, 4, rng=2, dtype=dtype))
    assert cp.log.generators == 0  # device_rng=False: nothing drawn on the device


def test_device_rng_uses_the_device_generator(cp):
    from rmtfl.numerics import gaussian_matrix, spiked_matrix
    from rmtfl.numerics import init_first_layer, init_second_layer, sample_inputs
    from rmtfl.numerics import device_normal

    def draws():
        return cp.log.generators, cp.log.draws

    for dtype in ("float64", "float32"):
        n0 = draws()
        G = gaussian_matrix(300, 200, rng=0, dtype=dtype, backend="cupy", device_rng=True)
        assert draws() == (n0[0] + 1, n0[1] + 1)
        assert type(G).__module__ == "cupy" and G.shape == (300, 200) and G.dtype == np.dtype(dtype)
        g = G.get().astype(np.float64)
        assert np.isfinite(g).all() and abs(g.var() * 200 - 1.0) < 4 * np.sqrt(2 / g.size)
        assert np.array_equal(g, gaussian_matrix(300, 200, rng=0, dtype=dtype, backend="cupy",
                                                 device_rng=True).get().astype(np.float64))  # reproducible
        assert not np.array_equal(g, gaussian_matrix(300, 200, rng=0, dtype=dtype).astype(np.float64))
        sp = spiked_matrix(60, 40, [3.0], rng=1, dtype=dtype, backend="cupy", device_rng=True)
        assert type(sp.W).__module__ == "cupy" and sp.W.dtype == np.dtype(dtype) and _is_host(sp.U, sp.V)
        assert np.array_equal(sp.U, spiked_matrix(60, 40, [3.0], rng=1).U)  # frames: host stream
        W = init_first_layer(50, 40, law="gaussian", rng=2, dtype=dtype, backend="cupy", device_rng=True)
        S = init_first_layer(50, 40, law="sphere", rng=2, dtype=dtype, backend="cupy", device_rng=True)
        np.testing.assert_allclose(np.linalg.norm(S.get().astype(float), axis=1), 1.0, rtol=1e-5)
        a = init_second_layer(50, law="gaussian", rng=3, dtype=dtype, backend="cupy", device_rng=True)
        r = init_second_layer(50, law="rademacher", rng=3, dtype=dtype, backend="cupy", device_rng=True)
        X = sample_inputs(20, 40, rng=4, dtype=dtype, backend="cupy", device_rng=True)
        for arr, shape in ((W, (50, 40)), (S, (50, 40)), (a, (50,)), (r, (50,)), (X, (20, 40))):
            assert type(arr).__module__ == "cupy" and arr.shape == shape and arr.dtype == np.dtype(dtype)
            assert np.isfinite(arr.get()).all()
        np.testing.assert_allclose(np.abs(r.get()), 1 / np.sqrt(50), rtol=1e-6)  # rademacher: host signs
    z = device_normal((3, 2), dtype="float32", rng=5, backend="cupy")
    assert type(z).__module__ == "cupy" and z.shape == (3, 2) and z.dtype == np.float32


# -------------------------------------------------------------------------------------- model
@pytest.mark.parametrize("activation", ["tanh", "relu", "hermite(0, 1, 0.5)", "he3", "erf", "gelu", "sigmoid",
                                        "softplus", "relu^2", "step"])
def test_gradient_steps_on_the_device_match_numpy(cp, activation):
    from rmtfl.numerics._two_step.model import (correlation_grad, gd_steps, gd_trajectory, init_first_layer,
                                                init_second_layer, sample_inputs, sample_targets)

    rng = np.random.default_rng(9)
    W = init_first_layer(40, 30, rng=rng)
    a = init_second_layer(40, rng=rng)
    X = sample_inputs(60, 30, rng=rng)
    v = np.linalg.qr(rng.standard_normal((30, 2)))[0].T
    Wd, ad, Xd = (cp.asarray(z) for z in (W, a, X))
    for target, kw in (("linear", {}), ("tanh", {"directions": v[:1]}), ([[0, 1, 0.5], "he2"], {"directions": v}),
                       (["linear", "linear"], {})):
        y = sample_targets(X, target=target, rng=1, **kw)
        yd = sample_targets(Xd, target=target, rng=1, **kw)
        assert type(yd).__module__ == "cupy"
        np.testing.assert_allclose(yd.get(), y, rtol=1e-12, atol=1e-12)
    y = sample_targets(X, target="tanh", rng=2)
    yd = cp.asarray(y)
    G = correlation_grad(activation, Wd, ad, Xd, yd)
    assert type(G).__module__ == "cupy"
    np.testing.assert_allclose(G.get(), correlation_grad(activation, W, a, X, y), rtol=1e-10, atol=1e-13)
    for etas in ([2.0], [1.5, 0.5]):
        np.testing.assert_allclose(gd_steps(activation, Wd, ad, (Xd, yd), etas=etas).get(),
                                   gd_steps(activation, W, a, (X, y), etas=etas), rtol=1e-10, atol=1e-12)
    X2 = sample_inputs(50, 30, rng=rng)
    y2 = sample_targets(X2, target="linear")
    outs = gd_trajectory(activation, Wd, ad, [(Xd, yd), (cp.asarray(X2), cp.asarray(y2))], etas=[1.0, 2.0])
    refs = gd_trajectory(activation, W, a, [(X, y), (X2, y2)], etas=[1.0, 2.0])
    for o, r in zip(outs, refs):
        np.testing.assert_allclose(o.get(), r, rtol=1e-10, atol=1e-12)


# ---------------------------------------------------------------------------------- two steps
def _agree(a, b, tol, tol_vec=1e-8):
    """Same measurements; min(N, d) < 200, so the numpy reference is the dense float64 solve too."""
    np.testing.assert_allclose(a.singular_values, b.singular_values, rtol=tol, atol=tol * b.singular_values[0])
    np.testing.assert_allclose(a.cos2_target, b.cos2_target, atol=tol_vec)
    np.testing.assert_allclose(a.cos2_a_powers, b.cos2_a_powers, atol=tol_vec)
    assert a.outlier_count == b.outlier_count and a.complete == b.complete and a.edge == b.edge


@pytest.mark.parametrize("k", [None, 5])
def test_simulations_match_numpy(cp, k):
    from rmtfl.numerics import simulate_one_step, simulate_two_step

    kw = dict(activation="tanh", target="linear", N=120, d=100, n=200, eta1=2.0, eta2=2.0, k=k)
    for extra in ({}, {"batch": "fresh", "n2": 150}, {"second_layer": "rademacher", "first_layer": "sphere"},
                  {"noise": 0.3, "n_vectors": 2}):
        c = simulate_two_step(**kw, **extra, rng=3, backend="cupy")
        h = simulate_two_step(**kw, **extra, rng=3)
        assert c.params["backend"] == "cupy" and _is_host(c.singular_values, c.cos2_target, c.cos2_a_powers)
        _agree(c, h, 1e-10)
    c = simulate_two_step(**kw, rng=3, backend="cupy", dtype="float32")
    h = simulate_two_step(**kw, rng=3, dtype="float32")
    np.testing.assert_allclose(c.singular_values[:5], h.singular_values[:5], rtol=2e-5)
    assert c.outlier_count == h.outlier_count
    # one step, with enough outliers that the default measures more vectors than its least three
    o_kw = dict(activation="hermite(0, 1, 1)", target=[[0, 1, 0.5]], N=100, d=100, n=300, eta=8.0, k=k)
    c, h = simulate_one_step(**o_kw, rng=1, backend="cupy"), simulate_one_step(**o_kw, rng=1)
    _agree(c, h, 1e-10)
    assert c.outlier_count >= 4 and c.cos2_target.shape[0] == c.outlier_count + 1  # every outlier's vectors


def test_more_outliers_than_the_default_cap_on_the_device(cp, monkeypatch):
    """Where the count rule finds more outliers than ``DEFAULT_VECTORS`` the device's full spectrum is taken again
    for their vectors (rmtfl/numerics/_two_step/measure.py), as the host solves for them."""
    import rmtfl.numerics._two_step.measure as measure
    from rmtfl.numerics import simulate_one_step

    monkeypatch.setattr(measure, "DEFAULT_VECTORS", 2)          # the first eigh keeps 3 vectors
    monkeypatch.setattr(measure, "default_vectors", lambda s, n_out, k: min(n_out, 6) + 1)   # the rule finds 6
    o_kw = dict(activation="hermite(0, 1, 1)", target=[[0, 1, 0.5]], N=100, d=100, n=300, eta=8.0)
    c, h = simulate_one_step(**o_kw, rng=1, backend="cupy"), simulate_one_step(**o_kw, rng=1)
    _agree(c, h, 1e-10)
    assert c.cos2_target.shape[0] == h.cos2_target.shape[0] == 7


@pytest.mark.parametrize("k", [None, 5])
def test_simulations_with_the_device_generator(cp, k):
    from rmtfl.numerics import simulate_one_step, simulate_two_step

    kw = dict(activation="tanh", target="linear", N=120, d=100, n=200, eta1=2.0, eta2=2.0, k=k)
    g0 = cp.log.generators
    a = simulate_two_step(**kw, rng=3, backend="cupy", device_rng=True)
    assert cp.log.generators - g0 == 3  # W0, a and X1 from the device generator
    b = simulate_two_step(**kw, rng=3, backend="cupy", device_rng=True)
    h = simulate_two_step(**kw, rng=3)
    assert a.params["device_rng"] and np.array_equal(a.singular_values, b.singular_values)
    assert not np.allclose(a.singular_values, h.singular_values)
    assert a.singular_values.size == (100 if k is None else max(k, a.outlier_count)) and a.outlier_count >= 1
    for r in (a, simulate_one_step(activation="relu", target="linear", N=80, d=80, n=160, eta=3.0, rng=2, k=k,
                                   backend="cupy", device_rng=True, dtype="float32")):
        assert np.isfinite(r.singular_values).all() and np.isfinite(r.cos2_target).all()
        assert np.all((r.cos2_a_powers >= 0) & (r.cos2_a_powers <= 1 + 1e-6))


def test_phase_diagram_matches_numpy(cp):
    from rmtfl.numerics import empirical_phase_diagram

    kw = dict(activation="tanh", target="linear", N=60, d=60, n=120, alpha1=[0.0], alpha2=[0.0, 0.2], seeds=2,
              rng=0, k=4)
    pd, ref = empirical_phase_diagram(**kw, backend="cupy"), empirical_phase_diagram(**kw)
    assert np.array_equal(pd.mean_count, ref.mean_count)
    assert np.array_equal(pd.mean_separated, ref.mean_separated)
    dev = empirical_phase_diagram(**kw, backend="cupy", device_rng=True)
    assert dev.mean_count.shape == (2, 1) and np.all(np.isfinite(dev.mean_count) & (dev.mean_count >= 0))


# ------------------------------------------------------------------------------------ kernels
@pytest.mark.parametrize("act", ["relu", "step", "erf", "relu^2", "identity", "tanh", "hermite(0.5, 1, 0.5)"])
def test_kernel_gram_and_activations_match_numpy(cp, act):
    from rmtfl.numerics import activate, empirical_rf_kernel, kernel_gram, sample_sphere

    X = sample_sphere(90, 5, rng=0) * 1.5
    v = np.eye(5)[2]
    for gamma in ((0.5, 2.0, v), 0.3, np.diag(np.arange(1.0, 6.0))):
        for Xp in (None, X[:30]):
            K = kernel_gram(act, cp.asarray(X), None if Xp is None else cp.asarray(Xp), gamma=gamma, backend="cupy")
            assert type(K).__module__ == "cupy"
            np.testing.assert_allclose(K.get(), kernel_gram(act, X, Xp, gamma=gamma), rtol=1e-12, atol=1e-13)
        np.testing.assert_allclose(kernel_gram(act, X, gamma=gamma, backend="cupy").get(),  # host input moved
                                   kernel_gram(act, X, gamma=gamma), rtol=1e-12, atol=1e-13)
    W = np.random.default_rng(1).standard_normal((30, 5))
    E = empirical_rf_kernel(act, W, X, backend="cupy")
    assert type(E).__module__ == "cupy"
    np.testing.assert_allclose(E.get(), empirical_rf_kernel(act, W, X), rtol=1e-11, atol=1e-12)
    np.testing.assert_allclose(empirical_rf_kernel(act, cp.asarray(W), cp.asarray(X), X[:7],
                                                   backend="cupy").get(),
                               empirical_rf_kernel(act, W, X, X[:7]), rtol=1e-11, atol=1e-12)
    Z = np.random.default_rng(2).standard_normal((7, 11)) * 2
    F = activate(act, cp.asarray(Z), backend="cupy")
    assert type(F).__module__ == "cupy"
    np.testing.assert_allclose(F.get(), activate(act, Z), rtol=1e-12, atol=1e-14)


def test_activate_other_names_on_the_device(cp):
    from rmtfl.numerics import activate

    Z = np.linspace(-3, 3, 24).reshape(4, 6)
    for act in ("sigmoid", "softplus", "relu^3", "square", "he3n", "gelu", "linear"):
        F = activate(act, cp.asarray(Z), backend="cupy")
        assert type(F).__module__ == "cupy" and F.dtype == np.float64
        np.testing.assert_allclose(F.get(), activate(act, Z), rtol=1e-12, atol=1e-14)


def test_kernel_spectra_and_experiments_match_numpy(cp):
    from rmtfl.numerics import (eigvec_alignment, gram_alignment, gram_degree_eigenvalues, kernel_gram,
                                linear_sector_gram, sample_sphere, top_gram_eigenpairs)

    X = sample_sphere(200, 6, rng=0)
    v = np.eye(6)[0]
    K = kernel_gram("relu", X, gamma=(1.0, 3.0, v)) / 200
    top = top_gram_eigenpairs(cp.asarray(K), k=4, rng=0)  # backend=None follows the device array
    vals, vecs, how = top.values, top.vectors, top.method
    ref = top_gram_eigenpairs(K, k=4, rng=0)
    ref_vals, ref_vecs = ref.values, ref.vectors
    assert how == "dense-eigh-cupy" and _is_host(vals, vecs)
    np.testing.assert_allclose(vals, ref_vals, rtol=1e-8)
    _cols_match_up_to_sign(vecs, ref_vecs, 1e-7)
    top2 = top_gram_eigenpairs(K, k=4, backend="cupy")
    vals2, how2 = top2.values, top2.method
    assert how2 == "dense-eigh-cupy" and np.allclose(vals2, vals, rtol=1e-12)
    b1, b2 = gram_degree_eigenvalues("relu", d=6, n=200, rng=3), gram_degree_eigenvalues("relu", d=6, n=200, rng=3,
                                                                                         backend="cupy")
    assert b2.method == "dense-eigh-cupy" and _is_host(b2.values, b2.mean)
    np.testing.assert_allclose(b2.values, b1.values, rtol=1e-8)
    for measure in ("sphere", "gaussian"):
        a1 = gram_alignment("relu", d=6, n=200, b=5.0, rng=4, measure=measure)
        a2 = gram_alignment("relu", d=6, n=200, b=5.0, rng=4, measure=measure, backend="cupy")
        assert a2.eigenvalue == pytest.approx(a1.eigenvalue, rel=1e-10)
        np.testing.assert_allclose([a2.cos2_y0, a2.cos2_y2, a2.cos2_psi], [a1.cos2_y0, a1.cos2_y2, a1.cos2_psi],
                                   atol=1e-8)
        l1 = linear_sector_gram("relu", A=0.1, B=0.5, d=6, n=200, measure=measure, rng=5)
        l2 = linear_sector_gram("relu", A=0.1, B=0.5, d=6, n=200, measure=measure, rng=5, backend="cupy")
        assert l2.target == pytest.approx(l1.target, rel=1e-10)
        assert l2.orthogonal == pytest.approx(l1.orthogonal, rel=1e-10)
    K0 = kernel_gram("relu", X, gamma=(1.0, 0.0, v))
    e1 = eigvec_alignment(K0, X, v, k=2, measure="sphere", rng=1)
    e2 = eigvec_alignment(kernel_gram("relu", X, gamma=(1.0, 0.0, v), backend="cupy"), X, v, k=2, measure="sphere")
    for key in ("values", "cos2_y0", "cos2_psi", "cos2_y2"):
        assert _is_host(getattr(e2, key))
        np.testing.assert_allclose(getattr(e2, key), getattr(e1, key), rtol=1e-7, atol=1e-8)


# -------------------------------------------------------------------------- spiked features
def test_spiked_features_match_numpy(cp):
    from rmtfl.numerics import generalisation_experiment, one_step_weights, ridge_predict

    for act in ("relu", "tanh"):
        a = one_step_weights(act, "hermite(0, 1, 0.5)", N=30, d=20, n=40, eta=2.0, rng=3)
        b = one_step_weights(act, "hermite(0, 1, 0.5)", N=30, d=20, n=40, eta=2.0, rng=3, backend="cupy")
        assert _is_host(b.W0, b.W1, b.a, b.X, b.y) and np.array_equal(a.X, b.X)
        np.testing.assert_allclose(b.W1, a.W1, rtol=1e-12, atol=1e-14)
    K = np.random.default_rng(0).standard_normal((12, 12))
    K = K @ K.T
    Kt, y = np.random.default_rng(1).standard_normal((5, 12)), np.arange(12.0)
    p = ridge_predict(cp.asarray(K), cp.asarray(Kt), cp.asarray(y), lam=0.5)
    assert type(p).__module__ == "cupy"
    np.testing.assert_allclose(p.get(), ridge_predict(K, Kt, y, lam=0.5), rtol=1e-10)
    kw = dict(d=10, n=40, n2=40, n_test=120, N=(16, 32), seeds=2, rng=0)
    r1 = generalisation_experiment("relu", "hermite(0, 1, 0.5)", **kw)
    r2 = generalisation_experiment("relu", "hermite(0, 1, 0.5)", backend="cupy", **kw)
    assert r2.params["backend"] == "cupy"
    np.testing.assert_allclose(r2.nn, r1.nn, rtol=1e-9)
    np.testing.assert_allclose(r2.rf, r1.rf, rtol=1e-9)
    for name, (m, _) in r1.kernels.items():
        assert r2.kernels[name].mean == pytest.approx(m, rel=1e-9)


# ------------------------------------------------------------------------------------- sweeps
def test_sweep_tasks_match_numpy(cp, tmp_path, capsys):
    from rmtfl.cli._main import main
    from rmtfl.sweep import run_sweep
    from rmtfl.sweep._experiments import bbp_task, get_experiment, kernel_task, one_step_task, two_step_task

    cases = [(bbp_task, {"theta": 2.0, "N": 60, "psi": 1.5}),
             (two_step_task, {"N": 60, "alpha1": 0.2, "alpha2": 0.3}),
             (one_step_task, {"N": 60, "eta": 3.0}),
             (kernel_task, {"d": 6, "n": 120, "b": 4.0})]
    for task, params in cases:
        c = task(params, np.random.default_rng(5), "cupy")
        h = task(params, np.random.default_rng(5), "numpy")
        assert c.keys() == h.keys()
        for key in h:
            assert c[key] == pytest.approx(h[key], rel=1e-8, abs=1e-9), (task.__name__, key)
    store = tmp_path / "s.sqlite"
    assert main(["sweep", "bbp", "--theta", "0,2", "--N", "40", "--seeds", "2", "--backend", "cupy", "--workers", "0",
                 "--store", str(store), "--no-progress", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert store.exists() and summary["computed"] == 4 and summary["failed"] == 0 and not summary["failures"]
    exp = get_experiment("bbp")
    grid = [exp.params({"theta": 2.0, "N": 40})]
    gpu = run_sweep(exp, grid, 2, workers=0, backend="cupy", progress=False)
    cpu = run_sweep(exp, grid, 2, workers=0, progress=False)
    assert gpu.failed == 0
    for m in ("s1", "s2", "cos2_v"):
        assert gpu.results[0].mean[m] == pytest.approx(cpu.results[0].mean[m], rel=1e-9)


# ---------------------------------------------------------------------------------------- CLI
def test_cli_simulate_commands_with_backend_cupy(cp, capsys):
    from rmtfl.cli._main import main

    def run(argv):
        rc = main(argv + ["--json"])
        out = capsys.readouterr().out
        assert rc == 0, out
        return json.loads(out)

    def close(a, b, path=""):
        if isinstance(a, dict):
            assert a.keys() == b.keys(), path
            for k in a:
                if k != "backend":
                    close(a[k], b[k], f"{path}.{k}")
        elif isinstance(a, list):
            assert len(a) == len(b), path
            for i, (x, y) in enumerate(zip(a, b)):
                close(x, y, f"{path}[{i}]")
        elif isinstance(a, float):
            assert a == pytest.approx(b, rel=1e-8, abs=1e-9), path
        else:
            assert a == b, path

    for argv in (["simulate", "spiked", "--N", "80", "--d", "60", "--theta", "3", "2"],
                 ["simulate", "two-step", "--N", "60", "--d", "60", "--n", "120", "--eta1", "2", "--eta2", "2",
                  "--k", "4"],
                 ["simulate", "two-step", "--N", "60", "--d", "50", "--n", "120", "--eta1", "2", "--eta2", "2",
                  "--batch", "fresh", "--n2", "80"],
                 ["simulate", "two-step", "--N", "60", "--d", "50", "--n", "120", "--eta1", "2", "--eta2", "2",
                  "--dtype", "float32"],
                 ["simulate", "kernel", "spectrum", "--d", "6", "--n", "150"],
                 ["simulate", "kernel", "alignment", "--d", "6", "--n", "150", "--b", "0,4", "--seeds", "2"]):
        c = run(argv + ["--backend", "cupy"])
        h = run(argv)
        if "float32" in argv:  # dense device eigh against the host solver, in float32
            np.testing.assert_allclose(c["singular_values"][:5], h["singular_values"][:5], rtol=2e-5)
        else:
            close(c, h)


def test_verify_quick_with_backend_cupy(cp, tmp_path, capsys):
    from rmtfl.cli._main import main
    from rmtfl.compare import VerifyContext, run_verify

    rc = main(["verify", "--quick", "--backend", "cupy", "--out", str(tmp_path), "--json"])
    out = capsys.readouterr().out
    assert rc == 0, out[-3000:]
    rep = json.loads((tmp_path / "report.json").read_text())
    assert rep["settings"]["backend"] == "cupy" and (tmp_path / "figures" / "kernel_spectrum.png").exists()
    # the parts that take a backend give the numpy measurements to rounding (same host draws)
    parts = ["classical", "two-step", "spiked-kernel"]
    ref = run_verify(VerifyContext(level="quick", seed=0, backend="numpy"), parts, progress=False).to_dict()
    got = [c for c in rep["comparisons"] if c["part"] in parts]
    assert len(got) == len(ref["comparisons"]) > 0
    for c, r in zip(got, ref["comparisons"]):
        assert c["name"] == r["name"] and c["passed"] == r["passed"]
        if isinstance(r["measured"], float):
            # values to 1e-9; squared overlaps to 1e-6: the numpy path's mixed-precision top-k vectors carry
            # errors ~ u_32 ||W||^2 / gap (seen: <= 3.3e-8), the device path's dense eigh does not
            tol = dict(abs=1e-6) if "cos" in c["name"] else dict(rel=1e-9, abs=1e-12)
            assert c["measured"] == pytest.approx(r["measured"], **tol), c["name"]
        else:
            assert c["measured"] == r["measured"], c["name"]


# --------------------------------------------------------------------------- gpu_check script
def test_gpu_check_script_on_the_fake(cp, tmp_path, capsys):
    """benchmarks/gpu_check.py as a GPU session runs it (same sizes; only the timing size shrunk by --n)."""
    gpu_check = pytest.importorskip("benchmarks.gpu_check")

    be, reason = gpu_check.ensure_cupy(install=False)
    assert reason is None and be.xp is cp
    rc = gpu_check.main(["--no-install", "--n", "120", "--budget", "120", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    details = json.loads((tmp_path / "gpu_check.json").read_text())
    rows = [r for sec in details["sections"].values() for r in sec["rows"]]
    assert details["backend"] == "cupy" and details["device"]["name"] == "fake device"
    # the s_max sanity check of the timing rows (|s_1 - 2| < 0.05) is for the GPU sizes (n >= 4000); at the
    # n = 120 used here the Tracy-Widom fluctuation of s_1 (~ n^(-2/3)) exceeds it, so only its value is checked
    sv = [r for r in rows if r["name"].startswith("singular_values") and "s_max" in r]
    assert len(sv) == 2 and all(abs(r["s_max"] - 2.0) < 0.3 for r in sv)
    f64 = [r for r in rows if "float32 / f64 Gram" in r["name"]]   # float32 against the float64 Gram floor too
    assert len(f64) in (2, 4) and all(r["floor_seconds"] > 0 for r in f64)
    bad = [r for r in rows if not r.get("ok") and r not in sv]
    assert not bad, bad
    assert rc == (0 if all(r["ok"] for r in rows) else 1), out[-2000:]
    assert {f"verify {p}" for p in gpu_check.VERIFY_PARTS} <= set(details["sections"])
    assert any(r["name"].startswith("two-step full spectrum N=d=n=120") for r in rows)
    assert cp.log.syncs >= 8 and cp.log.generators >= 6  # timed with the device generator, synchronised
    ev = gpu_check._bare_two_step(be, 60, "float32", 0)
    assert type(ev).__module__ == "cupy" and ev.shape == (60,) and ev.dtype == np.float32
    ev64 = gpu_check._bare_two_step(be, 60, "float32", 0, gram64=True)
    assert type(ev64).__module__ == "cupy" and ev64.dtype == np.float64
    np.testing.assert_allclose(ev64.get(), ev.get(), rtol=1e-3, atol=1e-3 * float(ev64.get().max()))


def test_acceptance_benchmark_draws_on_the_device_match_the_host(cp):
    """``bench_two_step_finite_n --backend cupy``: the same host draws from each seed, float32 steps on the device."""
    from benchmarks.bench_two_step_finite_n import simulate_cell

    for batch in ("reused", "fresh"):
        dev = simulate_cell("tanh", "hermite(0, 1, 0.5)", batch, 0.4, 0.2, 60, 2, backend="cupy")
        host = simulate_cell("tanh", "hermite(0, 1, 0.5)", batch, 0.4, 0.2, 60, 2)
        for d, h in zip(dev, host):
            np.testing.assert_allclose(d["sv"], h["sv"], rtol=1e-4, atol=1e-5 * h["sv"][0])  # float32 steps
            np.testing.assert_allclose(d["ct"], h["ct"], atol=1e-4)
