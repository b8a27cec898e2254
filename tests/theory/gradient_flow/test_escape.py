"""Escape times: growth amplitude (L = 2) and blow-up time with the analytic tail (L > 2), docs/theory/gradient_flow.md §7, §14."""
import math

import numpy as np
import pytest
from scipy.integrate import solve_ivp
from scipy.linalg import expm

from rmtfl.theory import escape_time, flow_example, make_problem
from rmtfl.theory._gradient_flow.escape import blowup_time

EX1, EX2 = flow_example("check1"), flow_example("check2")


def test_check1_gamma_and_slope():
    # docs/theory/gradient_flow.md §14 Check 1: gamma = <u*, w0> = 0.571976, slope 1/(2N*) = 0.887671
    e = escape_time(EX1.X, EX1.y, activation="identity", N=1, delta=1e-4, w0=EX1.w0)
    assert e.amplitude == pytest.approx(0.571976, abs=1e-6)
    assert e.slope == pytest.approx(0.887671, abs=1e-6)
    assert e.time == pytest.approx(math.log(1 / (1e-4 * e.amplitude)) * e.slope, rel=1e-14)
    assert math.isnan(e.blowup_time) and e.degree == 2


def _l2_case(name):
    """(X, y, settings, w0, N*, A): L = 2 data with the closed-form N* (docs/theory/gradient_flow.md §5.1) and the
    constant NCF Hessian A (grad N(u) = A u), both written out here from X and y, not taken from the package."""
    if name == "linear":
        X, y, w0 = EX1.X, EX1.y, EX1.w0
        m = X.T @ y                                   # N(a, w) = a <w, X^T y>
        A = np.zeros((4, 4))
        A[0, 1:], A[1:, 0] = m, m
        return X, y, dict(activation="identity", N=1), w0, np.linalg.norm(m) / 2, A
    X, y = EX1.X, EX1.y                               # quadratic model, one row: N(w) = w^T M w
    M = X.T @ (y[:, None] * X)
    w0 = np.array([0.3, -0.5, 0.8])
    return X, y, dict(activation="quadratic", N=1), w0, np.linalg.eigvalsh(M)[-1], 2 * M


@pytest.mark.parametrize("name", ["linear", "quadratic"])
def test_l2_escape_time_grows_like_log_inverse_delta(name):
    # L = 2: t_esc(delta) = ln(1/(delta gamma))/(2N*), so each factor 100 in 1/delta adds exactly ln(100)/(2N*)
    X, y, kw, w0, Nst, A = _l2_case(name)
    deltas = (1e-4, 1e-6, 1e-8)
    es = [escape_time(X, y, delta=d, w0=w0, **kw) for d in deltas]
    np.testing.assert_allclose(np.diff([e.time for e in es]), math.log(100.0) / (2 * Nst), rtol=1e-12)
    assert all(e.ncf_value == pytest.approx(Nst, rel=1e-12) and e.slope == pytest.approx(1 / (2 * Nst), rel=1e-12)
               for e in es)
    # gamma(w0) = lim exp(-2N* t) |u(t)| of the NCF flow du/dt = A u, here by the matrix exponential
    lam = np.linalg.eigvalsh(A)
    t = 40.0 / (lam[-1] - lam[-2])
    u0 = w0 / np.linalg.norm(w0)
    gamma = math.exp(-2 * Nst * t) * np.linalg.norm(expm(A * t) @ u0)
    assert es[0].amplitude == pytest.approx(gamma, rel=1e-9)
    assert es[0].time == pytest.approx(math.log(1 / (1e-4 * gamma)) / (2 * Nst), rel=1e-9)


def _blowup_in_plain_time(pb, u0, R):
    """T*(u0) measured without blowup_time: du/dt = grad N(u) from u0 as given (not normalised), in plain time t,
    until |u| = R, plus the tail 1/(L(L-2) N(u_hat) R^(L-2)) (docs/theory/gradient_flow.md §7.2)."""
    L = pb.degree

    def hit(t, u):
        return float(u @ u) - R * R

    hit.terminal, hit.direction = True, 1
    sol = solve_ivp(lambda t, u: pb.ncf_grad(u), (0.0, 1e12), u0, method="DOP853", rtol=1e-12,
                    atol=1e-15 * np.linalg.norm(u0), events=hit)
    assert sol.status == 1, sol.message
    u_hat = sol.y_events[0][0] / R
    return sol.t_events[0][0] + 1.0 / (L * (L - 2) * pb.ncf(u_hat) * R ** (L - 2))


@pytest.mark.parametrize("name,deltas,R", [("check2", (1.0, 1e-1, 1e-2), 1e4), ("deep", (1.0, 0.5, 0.25), 20.0)])
def test_blowup_time_scales_like_inverse_delta_power(name, deltas, R):
    # L > 2: the NCF flow from delta w0 blows up at T*(w0)/delta^(L-2)
    # (homogeneity: u_delta(t) = delta u(delta^(L-2) t)).
    # Measured by integrating from delta w0 in plain time (not the regularised time of blowup_time, which starts
    # from the unit vector), against escape_time; check 2 has L = 3, the [3, 4, 4, 1] z^2 net L = 7.
    ex = flow_example(name)
    pb = make_problem(ex.X, ex.y, **ex.settings)
    L = pb.degree
    u0 = ex.w0 / np.linalg.norm(ex.w0)
    measured = np.array([_blowup_in_plain_time(pb, d * u0, R) for d in deltas])
    predicted = [escape_time(ex.X, ex.y, delta=d, w0=ex.w0, **ex.settings) for d in deltas]
    np.testing.assert_allclose(measured, [p.time for p in predicted], rtol=1e-9)
    exponent = np.polyfit(np.log(deltas), np.log(measured), 1)[0]
    assert exponent == pytest.approx(-(L - 2), abs=1e-9)
    assert all(p.blowup_time == pytest.approx(measured[0], rel=1e-9) and p.degree == L for p in predicted)
    if name == "check2":
        assert measured[0] == pytest.approx(2.3227165, abs=1e-6)   # docs/theory/gradient_flow.md §14 Check 2


def test_check2_blowup_time():
    # docs/theory/gradient_flow.md §14 Check 2: T*(w0) = 2.3227165 (tolerance 1e-6), won by neuron 1
    e = escape_time(EX2.X, EX2.y, activation="square", N=4, delta=1e-4, w0=EX2.w0)
    assert e.blowup_time == pytest.approx(2.3227165, abs=1e-6)
    assert e.time == pytest.approx(e.blowup_time / 1e-4, rel=1e-14)
    assert abs(e.direction[0]) == pytest.approx(3 ** -0.5, abs=1e-5)


def test_blowup_along_kkt_ray_is_exact():
    # along u*: T*(u*) = 1/(L(L-2)N*)
    pb = make_problem(EX2.X, EX2.y, activation="square", N=4)
    u = np.zeros(16)
    u[0], u[4] = 3 ** -0.5, (2 / 3) ** 0.5
    assert blowup_time(pb, u).time == pytest.approx(1 / (3 * 2 / (3 * math.sqrt(3))), rel=1e-10)


@pytest.mark.parametrize("kw,match", [
    (dict(delta=0.0), "delta"), (dict(delta=-1e-3), "delta"),
    (dict(w0=np.zeros(16)), "non-zero"), (dict(w0=np.ones(5)), "shape"),
    (dict(activation="tanh"), "homogeneous")])
def test_bad_input(kw, match):
    args = dict(activation="square", N=4, delta=1e-3, w0=EX2.w0)
    args.update(kw)
    with pytest.raises(ValueError, match=match):
        escape_time(EX2.X, EX2.y, **args)


def test_collapsing_direction_raises():
    # quadratic model with a negative-definite M: N < 0 everywhere, the flow collapses
    with pytest.raises(ValueError, match="collapses|no positive"):
        escape_time(np.eye(2), [-1.0, -1.0], activation="quadratic", N=1, delta=1e-3, w0=[1.0, 0.0])
