"""Escape times: growth amplitude (L = 2) and blow-up time with the analytic tail (L > 2), docs/theory/gradient_flow.md §7, §14."""
import math

import numpy as np
import pytest

from rmtfl.theory import escape_time
from rmtfl.theory._gradient_flow.escape import blowup_time
from rmtfl.theory._gradient_flow.examples import flow_example
from rmtfl.theory import make_problem

EX1, EX2 = flow_example("check1"), flow_example("check2")


def test_check1_gamma_and_slope():
    # docs/theory/gradient_flow.md §14 Check 1: gamma = <u*, w0> = 0.571976, slope 1/(2N*) = 0.887671
    e = escape_time(EX1["X"], EX1["y"], activation="identity", width=1, delta=1e-4, w0=EX1["w0"])
    assert e.amplitude == pytest.approx(0.571976, abs=1e-6)
    assert e.slope == pytest.approx(0.887671, abs=1e-6)
    assert e.time == pytest.approx(math.log(1 / (1e-4 * e.amplitude)) * e.slope, rel=1e-14)
    assert math.isnan(e.blowup_time) and e.degree == 2


def test_check2_blowup_time():
    # docs/theory/gradient_flow.md §14 Check 2: T*(w0) = 2.3227165 (tolerance 1e-6), won by neuron 1
    e = escape_time(EX2["X"], EX2["y"], activation="square", width=4, delta=1e-4, w0=EX2["w0"])
    assert e.blowup_time == pytest.approx(2.3227165, abs=1e-6)
    assert e.time == pytest.approx(e.blowup_time / 1e-4, rel=1e-14)
    assert abs(e.direction[0]) == pytest.approx(3 ** -0.5, abs=1e-5)


def test_blowup_along_kkt_ray_is_exact():
    # along u*: T*(u*) = 1/(L(L-2)N*)
    pb = make_problem(EX2["X"], EX2["y"], activation="square", width=4)
    u = np.zeros(16)
    u[0], u[4] = 3 ** -0.5, (2 / 3) ** 0.5
    assert blowup_time(pb, u).time == pytest.approx(1 / (3 * 2 / (3 * math.sqrt(3))), rel=1e-10)


def test_deep_l7_blowup_is_reached():
    ex = flow_example("deep")
    pb = make_problem(ex["X"], ex["y"], activation="square", width=4, depth=3)
    u = np.random.default_rng(1).standard_normal(pb.P)
    b = blowup_time(pb, u)
    assert np.isfinite(b.time) and b.time > 0 and pb.degree == 7
    # scaling of the NCF flow: T*(c u) = T*(u) / c^(L-2)
    assert blowup_time(pb, u).time == pytest.approx(b.time, rel=1e-12)


@pytest.mark.parametrize("kw,match", [
    (dict(delta=0.0), "delta"), (dict(delta=-1e-3), "delta"),
    (dict(w0=np.zeros(16)), "non-zero"), (dict(w0=np.ones(5)), "shape"),
    (dict(activation="tanh"), "homogeneous")])
def test_bad_input(kw, match):
    args = dict(activation="square", width=4, delta=1e-3, w0=EX2["w0"])
    args.update(kw)
    with pytest.raises(ValueError, match=match):
        escape_time(EX2["X"], EX2["y"], **args)


def test_collapsing_direction_raises():
    # quadratic model with a negative-definite M: N < 0 everywhere, the flow collapses
    with pytest.raises(ValueError, match="collapses|no positive"):
        escape_time(np.eye(2), [-1.0, -1.0], activation="quadratic", width=1, delta=1e-3, w0=[1.0, 0.0])
