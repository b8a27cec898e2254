"""The two-layer model and its GEMM gradient (docs/conventions.md §4–§5)."""
import numpy as np
import pytest

from rmtfl.numerics._two_step.model import (correlation_grad, gd_steps, gd_trajectory, init_first_layer,
                                            init_second_layer, sample_inputs, sample_targets)
from rmtfl.theory import make_target


def _loop_grad(W, a, X, y, dsig):
    G = np.zeros_like(W)
    for x, yi in zip(X, y):
        G += np.outer(a * dsig(W @ x) * yi, x)
    return G / len(y)


@pytest.mark.parametrize("act,dsig", [("tanh", lambda z: 1 - np.tanh(z) ** 2),
                                      ("hermite(0, 1, 0.5)", lambda z: 1 + z),
                                      ("relu", lambda z: (z > 0) * 1.0),
                                      ("erf", lambda z: 2 / np.sqrt(np.pi) * np.exp(-z * z))])
def test_gradient_matches_loop(act, dsig):
    rng = np.random.default_rng(0)
    W, a = rng.standard_normal((7, 5)), rng.standard_normal(7)
    X, y = rng.standard_normal((11, 5)), rng.standard_normal(11)
    assert np.allclose(correlation_grad(act, W, a, X, y), _loop_grad(W, a, X, y, dsig), atol=1e-12)


def test_laws_and_shapes():
    W = init_first_layer(500, 400, rng=0)
    assert W.shape == (500, 400) and abs(W.var() * 400 - 1) < 0.02
    S = init_first_layer(50, 40, law="sphere", rng=0)
    assert np.allclose(np.linalg.norm(S, axis=1), 1.0)
    a = init_second_layer(10_000, rng=1)
    assert abs(a @ a - 1) < 0.05
    r = init_second_layer(64, law="rademacher", rng=1)
    assert np.allclose(np.abs(r), 1 / 8) and r @ r == pytest.approx(1.0)


def test_targets_default_directions_and_noise():
    X = sample_inputs(1000, 6, rng=0)
    t = make_target(["linear", "he2n"])
    y = sample_targets(X, target=t)
    assert np.allclose(y, X[:, 0] + (X[:, 1] ** 2 - 1) / np.sqrt(2))
    yn = sample_targets(X, target=make_target("linear", noise=0.5), rng=3)
    assert abs(np.std(yn - X[:, 0]) - 0.5) < 0.05
    Q = np.linalg.qr(np.random.default_rng(1).standard_normal((6, 1)))[0].T
    assert np.allclose(sample_targets(X, target="linear", directions=Q), X @ Q[0])
    with pytest.raises(TypeError):
        sample_targets(X, "linear")                     # target is keyword-only: the old call fails loudly


def test_gd_steps_reused_and_fresh():
    rng = np.random.default_rng(2)
    W0, a = init_first_layer(20, 15, rng=rng), init_second_layer(20, rng=rng)
    X1, X2 = sample_inputs(30, 15, rng=rng), sample_inputs(25, 15, rng=rng)
    y1, y2 = sample_targets(X1, target="tanh"), sample_targets(X2, target="tanh")
    W1 = W0 + 1.5 * correlation_grad("tanh", W0, a, X1, y1)
    W2 = W1 + 0.5 * correlation_grad("tanh", W1, a, X1, y1)
    assert np.allclose(gd_steps("tanh", W0, a, (X1, y1), etas=[1.5, 0.5]), W2)
    W2f = W1 + 0.5 * correlation_grad("tanh", W1, a, X2, y2)
    assert np.allclose(gd_steps("tanh", W0, a, [(X1, y1), (X2, y2)], etas=[1.5, 0.5]), W2f)
    traj = gd_trajectory("tanh", W0, a, [(X1, y1), (X2, y2)], etas=[1.5, 0.5])   # every iterate
    assert traj.shape == (2, 20, 15) and np.allclose(traj[0], W1) and np.allclose(traj[1], W2f)
    assert np.allclose(gd_trajectory("tanh", W0, a, (X1, y1), etas=[1.5, 0.5])[1], W2)
    W0c = W0.copy()
    gd_steps("tanh", W0, a, (X1, y1), etas=[1.0])
    gd_trajectory("tanh", W0, a, (X1, y1), etas=[1.0])
    assert np.array_equal(W0, W0c)                      # input not modified
    with pytest.raises(ValueError, match="batches"):
        gd_steps("tanh", W0, a, [(X1, y1)], etas=[1.0, 2.0])
    with pytest.raises(TypeError):
        gd_steps("tanh", W0, a, (X1, y1), [1.0])        # etas keyword-only


def test_float32_and_reproducible():
    W = init_first_layer(30, 20, rng=5, dtype="float32")
    assert W.dtype == np.float32
    X = sample_inputs(40, 20, rng=6, dtype="float32")
    y = sample_targets(X, target="tanh")
    a = init_second_layer(30, rng=7, dtype="float32")
    G = correlation_grad("tanh", W, a, X, y)
    assert G.dtype == np.float32
    assert np.array_equal(init_first_layer(30, 20, rng=5), init_first_layer(30, 20, rng=5))


def test_bad_inputs():
    with pytest.raises(ValueError, match="law"):
        init_first_layer(3, 3, law="uniform")
    with pytest.raises(ValueError, match=r"\bN\b"):
        init_second_layer(0)
    with pytest.raises(ValueError, match="dtype"):
        sample_inputs(3, 3, dtype="int8")
    with pytest.raises(ValueError, match="activation"):
        correlation_grad("nope", np.eye(2), np.ones(2), np.eye(2), np.ones(2))
    with pytest.raises(TypeError):
        init_first_layer(3, 3, "gaussian")              # law and rng are keyword-only


@pytest.mark.parametrize("activation", ["tanh", "relu", "hermite(0, 1, 0.5)", "erf"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_two_steps_on_one_batch_take_the_gram_route_and_agree(activation, dtype):
    """Two reused-batch steps go through K = X X^T (3 GEMMs + a SYRK instead of 4 GEMMs); the result
    equals two explicit correlation_grad steps to rounding (relu: up to pre-activations that sit
    within rounding of its kink, none in this draw)."""
    from rmtfl.numerics._two_step import model

    g = np.random.default_rng(6).spawn(3)
    N, d, n = 120, 90, 100
    W0 = init_first_layer(N, d, rng=g[0], dtype=dtype)
    a = init_second_layer(N, rng=g[1], dtype=dtype)
    X = sample_inputs(n, d, rng=g[2], dtype=dtype)
    y = sample_targets(X, target="tanh")
    assert model._gram_route_pays(W0, a, X, y)
    W2 = gd_steps(activation, W0, a, (X, y), etas=[1.3, 2.1])
    W = W0
    for eta in (1.3, 2.1):
        W = W + dtype(eta) * correlation_grad(activation, W, a, X, y)
    tol = 1e-5 if dtype == np.float32 else 1e-13
    assert W2.dtype == dtype
    np.testing.assert_allclose(W2, W, rtol=0, atol=tol * np.abs(W).max())
    # n much larger than N and d: the plain route is cheaper and is taken
    assert not model._gram_route_pays(W0, a, np.vstack([X] * 3), np.concatenate([y] * 3))
