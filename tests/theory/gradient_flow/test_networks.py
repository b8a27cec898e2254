"""Architectures, packing, losses and homogeneity (docs/theory/gradient_flow.md §1–§2, docs/conventions.md §9, §11)."""
import numpy as np
import pytest

from rmtfl.theory import ebar, make_problem
from rmtfl.theory import FeedForward, QuadraticModel, TwoLayer, homogeneity_degree, zero_preserving
from rmtfl.theory import FLOW_EXAMPLES, flow_example

X5 = flow_example("check1").X
Y5 = flow_example("check1").y


def test_homogeneity_degrees_conventions_11():
    # docs/conventions.md §11: square two-layer L=3, quadratic model L=2, linear L=2, [3,4,4,1] z^2 L=7
    assert homogeneity_degree(TwoLayer(3, 4, "square")) == 3
    assert homogeneity_degree(QuadraticModel(3, 2)) == 2
    assert homogeneity_degree(TwoLayer(3, 2, "identity")) == 2
    assert homogeneity_degree(([3, 4, 4, 1], "square")) == 7
    assert homogeneity_degree(([3, 4, 1], "relu^3")) == 4


@pytest.mark.parametrize("act,N,depth", [("square", 4, 2), ("identity", 2, 2), ("relu^2", 3, 2),
                                             ("quadratic", 2, 2), ("square", 3, 3), ("identity", 2, 4)])
def test_homogeneity_measured_and_gradient(act, N, depth):
    pb = make_problem(X5, Y5, activation=act, N=N, depth=depth)
    u = np.random.default_rng(0).standard_normal(pb.P)
    # H(2w) = 2^L H(w): L is computed, checked here on the actual forward pass
    np.testing.assert_allclose(pb.arch.forward(X5, 2 * u), 2.0 ** pb.degree * pb.arch.forward(X5, u), rtol=1e-12)
    g = pb.grad(u)
    e = 1e-6
    fd = np.array([(pb.loss(u + e * v) - pb.loss(u - e * v)) / (2 * e) for v in np.eye(pb.P)])
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-7 * np.abs(g).max())
    # grad L(w) = -grad N(w) + O(|w|^(2L-1)) near the origin
    s = 1e-3
    np.testing.assert_allclose(pb.grad(s * u), -pb.ncf_grad(s * u), atol=1e-6 * np.linalg.norm(pb.ncf_grad(s * u)))


def test_packing_two_layer_a_first():
    net = TwoLayer(3, 2, "square")
    w = net.pack([1.0, 2.0], [[1, 0, 0], [0, 1, 0]])
    assert w.tolist()[:2] == [1.0, 2.0] and w.tolist()[2:5] == [1.0, 0.0, 0.0]
    np.testing.assert_allclose(net.forward(np.array([[2.0, 3.0, 0.0]]), w), [1 * 4 + 2 * 9])


def test_losses_and_ebar():
    # docs/conventions.md §9/§11: square ebar = y, logistic ebar = s y / 2
    assert ebar([1.0, -2.0], loss="square").tolist() == [1.0, -2.0]
    assert ebar([1.0, -2.0], loss="logistic").tolist() == [0.5, -1.0]
    assert ebar([1.0], loss="logistic", logistic_scale=2).tolist() == [1.0]
    pb = make_problem(np.eye(2), [1.0, -1.0], activation="identity", N=1, loss="logistic")
    assert pb.loss(np.zeros(3)) == pytest.approx(2 * np.log(2))
    big = np.array([50.0, 50.0, 0.0])  # huge output: stable logaddexp, no overflow
    assert np.isfinite(pb.loss(big * 100)) and np.all(np.isfinite(pb.grad(big * 100)))
    pm = make_problem(np.eye(2), [1.0, -1.0], activation="identity", N=1, reduction="mean")
    w = np.array([0.3, 0.2, -0.1])
    ps = make_problem(np.eye(2), [1.0, -1.0], activation="identity", N=1)
    assert pm.loss(w) == pytest.approx(ps.loss(w) / 2)


def test_conserved_and_unit_norms():
    net = TwoLayer(2, 2, "square")
    w = net.pack([1.0, 0.5], [[1.0, 1.0], [0.0, 0.0]])
    np.testing.assert_allclose(net.conserved(w), [2 - 2 * 1, 0 - 2 * 0.25])
    np.testing.assert_allclose(net.unit_norms(w), [np.sqrt(3), 0.5])
    ff = FeedForward([2, 3, 1], "identity")
    assert ff.unit_norms(np.ones(ff.n_params)).shape == (3,)


def test_zero_preserving_sets():
    sq = zero_preserving([3, 4, 1], activation="square")
    assert [s.kind for s in sq].count("pair") == 4 and [s.kind for s in sq].count("row") == 4
    lin = zero_preserving([3, 4, 1], activation="identity")
    assert {s.kind for s in lin} == {"pair"}
    deep = zero_preserving(FeedForward([3, 4, 4, 1], "square"))
    assert len(deep) == 16  # 8 hidden units x (pair, row)


@pytest.mark.parametrize("kwargs,match", [
    (dict(activation="tanh", N=2), "homogeneous"),
    (dict(activation="square", N=0), r"N must be an integer in \[1, 100000\]"),
])
def test_bad_architecture(kwargs, match):
    with pytest.raises(ValueError, match=match):
        make_problem(X5, Y5, **kwargs)


def test_bad_shapes():
    with pytest.raises(ValueError, match="y must have shape"):
        make_problem(X5, Y5[:3], activation="square", N=2)
    with pytest.raises(ValueError, match="X must be a 2-d"):
        make_problem(Y5, Y5, activation="square", N=2)
    with pytest.raises(ValueError, match="loss"):
        make_problem(X5, Y5, activation="square", N=2, loss="hinge")


def test_examples_load():
    for name in FLOW_EXAMPLES:
        ex = flow_example(name)
        pb = make_problem(ex.X, ex.y, **ex.settings)
        assert ex.w0.shape == (pb.P,) and ex.name == name
        assert ex.to_dict()["N"] == ex.N
    with pytest.raises(ValueError, match="example"):
        flow_example("nope")
