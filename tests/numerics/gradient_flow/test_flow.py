"""Gradient-flow simulation and measurements (issue 5 acceptance; reference values of docs/theory/gradient_flow.md §14)."""
import math
import time

import numpy as np
import pytest

from rmtfl.numerics import (active_count, find_plateaus, is_zero_preserving, kth_to_max_ratio, log_time_grid,
                            path_distance, Plateau, simulate_flow, winner_share)
from rmtfl.theory import escape_time, flow_example, limiting_path, make_problem, zero_preserving

EX1, EX2 = flow_example("check1"), flow_example("check2")
K1 = dict(activation="identity", N=1)
K2 = dict(activation="square", N=4)


def test_check1_escape_times_and_slope():
    # docs/theory/gradient_flow.md §14 Check 1: t_esc = 8.38846, 12.47634, 16.56422 for delta = 1e-4, 1e-6, 1e-8; slope 0.887671 (tol 1e-4)
    ts = []
    for d in (1e-4, 1e-6, 1e-8):
        run = simulate_flow(EX1.X, EX1.y, delta=d, w0=EX1.w0, t_end=30.0, t_eval=[0.0, 30.0],
                            escape_loss=EX1.escape_loss, **K1)
        ts.append(run.t_escape)
        assert run.conserved_drift < 1e-11   # a^2 - |w|^2 conserved (docs/theory/gradient_flow.md §14: to 1e-12)
    np.testing.assert_allclose(ts, [8.38846, 12.47634, 16.56422], atol=2e-5)
    slope = np.polyfit(np.log([1e4, 1e6, 1e8]), ts, 1)[0]
    assert slope == pytest.approx(0.887671, abs=1e-4)


def test_trajectory_error_falls_linearly_in_delta():
    # issue 5 acceptance: sup|w(t + ln(1/delta)/(2N*)) - p(t + ln(gamma)/(2N*))| at least linear in delta;
    # docs/theory/gradient_flow.md §14 Check 1: 8.12e-3, 8.12e-4, 8.12e-5 on t in [-3, 6]
    e = escape_time(EX1.X, EX1.y, delta=1.0, w0=EX1.w0, **K1)
    Nst = e.ncf_value
    tt = np.linspace(-3, 6, 37)
    p = limiting_path(EX1.X, EX1.y, t=tt + math.log(e.amplitude) / (2 * Nst), w0=EX1.w0,
                      estimate_error=False, **K1)
    errs = []
    for d in (1e-2, 1e-3, 1e-4):
        sh = math.log(1 / d) / (2 * Nst)
        run = simulate_flow(EX1.X, EX1.y, delta=d, w0=EX1.w0, t_end=sh + 6, t_eval=sh + tt, **K1)
        errs.append(path_distance(run, p.points).max())
    np.testing.assert_allclose(errs, [8.12e-3, 8.12e-4, 8.12e-5], rtol=2e-3)
    assert np.polyfit(np.log([1e-2, 1e-3, 1e-4]), np.log(errs), 1)[0] >= 0.95


def test_check2_escape_plateau_sparsity():
    # issue 5 acceptance: delta t_esc within 0.1% of T*(w0) at delta = 1e-4; non-winning units < 10 delta on the
    # first plateau.  docs/theory/gradient_flow.md §14 Check 2: delta t_esc = 2.322638, plateau at 0.17 for t in [23274, 80505],
    # mid-plateau norms (1.3747, 7.8e-5, 5.4e-5, 4.2e-5)
    d = 1e-4
    T = escape_time(EX2.X, EX2.y, delta=d, w0=EX2.w0, **K2).blowup_time
    grid = np.unique(np.r_[log_time_grid(12 / d, n=300, t_min=1.0), np.linspace(2e4, 8.2e4, 621)])  # 100-unit steps
    run = simulate_flow(EX2.X, EX2.y, delta=d, w0=EX2.w0, t_end=12 / d, t_eval=grid, escape_loss=0.42,
                        stop_loss=0.169, **K2)
    assert abs(d * run.t_escape - T) <= 1e-3 * T
    assert d * run.t_escape == pytest.approx(2.322638, abs=2e-6)
    plats = find_plateaus(run.t, run.loss, tol=1e-3)
    t0, t1, level = plats[0]
    assert (plats[0].t_start, plats[0].t_end, plats[0].level) == (t0, t1, level)
    assert level == pytest.approx(0.17, abs=1e-9)
    assert t0 == pytest.approx(23274, rel=0.01) and t1 == pytest.approx(80505, rel=0.01)
    mid = np.argmin(np.abs(run.t - 0.5 * (t0 + t1)))  # arithmetic middle of the plateau
    np.testing.assert_allclose(np.sort(run.unit_norms[mid])[::-1], [1.3747, 7.8e-5, 5.4e-5, 4.2e-5], rtol=0.02)
    first_half = (run.t >= t0) & (run.t <= t0 + 0.5 * (t1 - t0))
    assert np.sort(run.unit_norms[first_half], axis=1)[:, :-1].max() < 10 * d
    assert active_count(run.unit_norms[mid], 10 * d)[0] == 1
    assert run.conserved_drift < 1e-10
    assert run.t_stop == pytest.approx(t1, rel=0.01) and run.loss[-1] == pytest.approx(0.169, abs=1e-9)


def test_speed_first_plateau_under_10s():
    # issue 5 speed: d=3, n=5, width 4, delta=1e-4 to the end of the first plateau in < 10 s
    ex = flow_example("square5")
    t = time.perf_counter()
    run = simulate_flow(ex.X, ex.y, delta=1e-4, w0=ex.w0, t_end=1e6, t_eval=[0.0], escape_loss=0.4,
                        stop_loss=0.15223618932212962 - 1e-3, **K2)
    assert time.perf_counter() - t < 10.0 and np.isfinite(run.t_stop)


def test_gd_agrees_with_ode():
    kw = dict(delta=1e-2, w0=EX1.w0, t_end=8.0, t_eval=[0.0, 4.0, 8.0], **K1)
    a = simulate_flow(EX1.X, EX1.y, **kw)
    b = simulate_flow(EX1.X, EX1.y, method="gd", eta=1e-3, **kw)
    np.testing.assert_allclose(b.w, a.w, atol=5e-3)   # Euler error O(eta)
    assert b.method == "gd" and a.method == "dop853"


def test_zero_preserving_bit_exact():
    # docs/theory/gradient_flow.md §10 (derived, checked bit-exactly): square: pair and row alone; identity: row alone is NOT preserved
    pb = make_problem(EX1.X, EX1.y, activation="square", N=3)
    for s in zero_preserving(pb.arch):
        assert is_zero_preserving(pb, s.indices, steps=300, rng=0)
    pl = make_problem(EX1.X, EX1.y, activation="identity", N=3)
    row = [3, 4, 5]  # w_1 alone
    assert not is_zero_preserving(pl, row, steps=300, rng=0)
    assert all(is_zero_preserving(pl, s.indices, steps=300, rng=0) for s in zero_preserving(pl.arch))


def test_metrics():
    nu = np.array([[3.0, 1.0, 0.5, 0.0]])
    assert active_count(nu, 0.75)[0] == 2
    assert kth_to_max_ratio(nu, 2)[0] == pytest.approx(1 / 3)
    assert winner_share(nu)[0] == pytest.approx(9 / 10.25)
    assert find_plateaus([1, 2, 4, 8, 16], [1.0, 0.5, 0.5, 0.5, 0.1], tol=1e-3) == [Plateau(2.0, 8.0, 0.5)]
    assert find_plateaus([1, 2, 4, 8, 16], [1.0, 0.5, 0.5, 0.5, 0.1])[0].to_dict() == \
        {"t_start": 2.0, "t_end": 8.0, "level": 0.5}


def test_deterministic_and_bad_input():
    a = simulate_flow(EX1.X, EX1.y, delta=1e-3, t_end=1.0, rng=3, **K1)
    b = simulate_flow(EX1.X, EX1.y, delta=1e-3, t_end=1.0, rng=3, **K1)
    assert np.array_equal(a.w, b.w)
    assert np.linalg.norm(a.w[0]) == pytest.approx(1e-3, rel=1e-12)
    d = a.to_dict()
    assert d["w_final"] == a.w[-1].tolist() and d["t"] == a.t.tolist() and "w" not in d and d["method"] == "dop853"
    with pytest.raises(ValueError, match="delta"):
        simulate_flow(EX1.X, EX1.y, delta=0.0, t_end=1.0, **K1)
    with pytest.raises(ValueError, match="non-zero"):
        simulate_flow(EX1.X, EX1.y, delta=1e-3, w0=np.zeros(4), t_end=1.0, **K1)
    with pytest.raises(ValueError, match="homogeneous"):
        simulate_flow(EX1.X, EX1.y, delta=1e-3, t_end=1.0, activation="tanh", N=1)
    with pytest.raises(TypeError):
        simulate_flow(EX1.X, EX1.y, "identity", N=1, delta=1e-3, t_end=1.0)   # activation is keyword-only


def test_sparsity_exponent_is_one_l3():
    # docs/theory/gradient_flow.md §10 "(reconstruction: verify by simulation)": w_z = O(delta^gamma') up to the first saddle.
    # Measured: the non-winning norms in the middle of the first plateau scale exactly like delta (gamma' = 1).
    mids = []
    for d in (1e-2, 1e-3):
        grid = np.unique(np.r_[log_time_grid(12 / d, n=200, t_min=1.0), np.linspace(0.2 / d, 8.2 / d, 801)])
        run = simulate_flow(EX2.X, EX2.y, delta=d, w0=EX2.w0, t_end=12 / d, t_eval=grid, stop_loss=0.169,
                            **K2)
        t0, t1, _ = [p for p in find_plateaus(run.t, run.loss, tol=1e-3) if abs(p.level - 0.17) < 1e-3][0]
        mid = np.argmin(np.abs(run.t - 0.5 * (t0 + t1)))
        mids.append(np.sort(run.unit_norms[mid])[:-1].max())
    gamma = np.log(mids[0] / mids[1]) / np.log(10.0)
    assert gamma == pytest.approx(1.0, abs=0.05)


def test_check2_after_plateau_two_active_units():
    # docs/theory/gradient_flow.md §14 Check 2: after the plateau the loss goes to 0 with 2 active neurons
    run = simulate_flow(EX2.X, EX2.y, delta=1e-2, w0=EX2.w0, t_end=3e3, t_eval=[0.0, 3e3], **K2)
    assert run.loss[-1] < 1e-8
    assert active_count(run.unit_norms[-1], 1e-2 * run.unit_norms[-1].max())[0] == 2


def test_find_plateaus_wants_one_loss_per_time():
    assert find_plateaus([], []) == []
    with pytest.raises(ValueError, match="t and loss must have the same length .* got 0 and 5"):
        find_plateaus([], [1.0, 2.0, 3.0, 4.0, 5.0])


def test_a_long_l2_flow_is_integrated_by_lsoda():
    """An L = 2 flow at rest at its minimum still costs an explicit method O(t) steps (t_end = 1e5 took 50 s);
    beyond t_end = 1e3 "auto" takes LSODA, whose escape time and final state agree with DOP853's."""
    X, y = np.eye(2), [3.0, 4.0]
    kw = dict(activation="identity", N=1, delta=1e-3, w0=[1.0, 0.6, 0.8], escape_loss=6.0)
    short = simulate_flow(X, y, t_end=1e3, **kw)
    t0 = time.perf_counter()
    long = simulate_flow(X, y, t_end=1e8, **kw)
    assert time.perf_counter() - t0 < 5.0
    assert short.method == "dop853" and long.method == "lsoda"
    assert long.t_escape == pytest.approx(short.t_escape, rel=1e-9)
    np.testing.assert_allclose(long.w[-1], short.w[-1], rtol=1e-8)
    assert long.conserved_drift < 1e-10
