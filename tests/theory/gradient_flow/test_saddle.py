"""Limiting path p(t) and first saddle (docs/theory/gradient_flow.md §8–§9, §14)."""
import math

import numpy as np
import pytest

from rmtfl.theory import first_saddle, flow_example, limiting_path

EX1, EX2 = flow_example("check1"), flow_example("check2")


def test_check2_first_saddle():
    # docs/theory/gradient_flow.md §14 Check 2 / §9: a = 2^(-1/3), w = 2^(1/6) e1, loss 0.17, other neurons exactly 0
    s = first_saddle(EX2.X, EX2.y, activation="square", N=4, w0=EX2.w0)
    assert s.loss == pytest.approx(0.17, abs=1e-12)
    assert s.point[0] == pytest.approx(2 ** (-1 / 3), abs=1e-10)
    np.testing.assert_allclose(s.point[4:7], [2 ** (1 / 6), 0, 0], atol=1e-10)
    assert np.all(s.point[[1, 2, 3]] == 0) and np.all(s.point[7:] == 0)
    assert s.residual < 1e-10 and not s.at_infinity and s.active_units == 1


def test_check1_limit_is_least_squares():
    # docs/theory/gradient_flow.md §14 Check 1: a w -> beta_LS = (0.4419583, 0.4378018, 0.1482992), loss 0.6559876
    s = first_saddle(EX1.X, EX1.y, activation="identity", N=1)
    np.testing.assert_allclose(s.point[0] * s.point[1:], [0.4419583, 0.4378018, 0.1482992], atol=1e-7)
    assert s.loss == pytest.approx(0.6559876, abs=1e-7)
    beta = np.linalg.lstsq(EX1.X, EX1.y, rcond=None)[0]
    np.testing.assert_allclose(s.point[0] * s.point[1:], beta, atol=1e-10)
    assert s.point[0] ** 2 == pytest.approx(s.point[1:] @ s.point[1:], abs=1e-9)  # balanced (docs/theory/gradient_flow.md §6)


def test_path_eps_independence_l2():
    # docs/theory/gradient_flow.md §14 Check 1: paths from eps = 1e-4 and 1e-8 differ by ~1.2e-9 on t in [-3, 6]
    t = np.linspace(-3, 6, 19)
    kw = dict(activation="identity", N=1, t=t, estimate_error=False)
    p4 = limiting_path(EX1.X, EX1.y, eps=1e-4, **kw)
    p8 = limiting_path(EX1.X, EX1.y, eps=1e-8, **kw)
    assert np.max(np.linalg.norm(p4.points - p8.points, axis=1)) < 5e-9
    assert p4.convention == "blowup" and p4.shift == pytest.approx(math.log(1e4) / (2 * p4.ncf_value))


def test_path_accuracy_and_convention_l3():
    t = np.array([-20.0, 0.0, 5.0, 30.0])
    kw = dict(activation="square", N=4, t=t, w0=EX2.w0)
    p = limiting_path(EX2.X, EX2.y, **kw)
    assert p.accuracy < 1e-8
    assert p.loss[-1] == pytest.approx(0.17, abs=1e-8)
    assert np.all(p.points[:, 8:] == 0)                      # zero-preserving: other neurons exactly 0
    # p_unit(t) = p(t - 1/(L(L-2)N*))
    off = 1 / (3 * p.ncf_value)
    pu = limiting_path(EX2.X, EX2.y, convention="unit_norm", estimate_error=False,
                       **{**kw, "t": t + off})
    np.testing.assert_allclose(pu.points, p.points, atol=1e-8)
    # early times follow the NCF asymptote along u*: |p(t)| ~ (3 N* (-t))^(-1)
    assert np.linalg.norm(p.points[0]) == pytest.approx(1 / (3 * p.ncf_value * 20), rel=1e-3)


def test_logistic_saddle_at_infinity():
    ex = flow_example("logistic")
    s = first_saddle(ex.X, ex.y, activation="square", N=3, loss="logistic", w0=ex.w0)
    assert s.at_infinity
    assert s.loss == pytest.approx(2 * math.log(2), rel=1e-12)
    assert s.measured_loss == pytest.approx(2 * math.log(2), abs=1e-6)


def test_relu_outside_theory():
    with pytest.raises(ValueError, match="outside the theory"):
        first_saddle(EX1.X, EX1.y, activation="relu", N=2)


def test_default_direction_is_the_maximal_kkt_point():
    # w0=None: u* is the maximal KKT point of ncf_kkt (deterministic);
    # check 2: the first saddle of docs/theory/gradient_flow.md §9
    s = first_saddle(EX2.X, EX2.y, activation="square", N=4)
    assert s.loss == pytest.approx(0.17, abs=1e-12) and s.ncf_value == pytest.approx(2 / (3 * math.sqrt(3)), rel=1e-12)
    t = np.array([-5.0, 0.0, 5.0])
    a = limiting_path(EX2.X, EX2.y, activation="square", N=4, t=t, estimate_error=False)
    b = limiting_path(EX2.X, EX2.y, activation="square", N=4, t=t, estimate_error=False)
    assert np.array_equal(a.points, b.points)
    assert s.to_dict()["point"][0] == pytest.approx(2 ** (-1 / 3), abs=1e-10)


def test_limiting_path_times_in_any_order_and_within_range():
    """The times may come in any order (the points follow them); an empty array, or a time so late that the
    integration would run for hours (once a hang at t = 1e200), is refused naming t and its range."""
    X, y = np.eye(2), [3.0, 4.0]
    a = limiting_path(X, y, activation="identity", N=1, t=[0.0, 1.0, 10.0], estimate_error=False)
    b = limiting_path(X, y, activation="identity", N=1, t=[10.0, 0.0, 1.0], estimate_error=False)
    assert np.array_equal(a.points[[2, 0, 1]], b.points) and b.t.tolist() == [10.0, 0.0, 1.0]
    c = limiting_path(X, y, activation="identity", N=1, t=[0.0, 1.0, 1.0, 10.0], estimate_error=False)   # repeats
    assert np.array_equal(c.points[[0, 1, 3]], a.points) and np.array_equal(c.points[1], c.points[2])
    tiny = limiting_path(X, y, activation="identity", N=1, t=np.linspace(-3, 6, 91) * 1e-200)  # all one time
    assert np.all(tiny.points == tiny.points[0]) and np.all(np.isfinite(tiny.points))
    with pytest.raises(ValueError, match="t must hold at least one time"):
        limiting_path(X, y, activation="identity", N=1, t=[])
    with pytest.raises(ValueError, match=r"t must be at most 1000 / \(L N\*\)"):
        limiting_path(X, y, activation="identity", N=1, t=[0.0, 1e200])
