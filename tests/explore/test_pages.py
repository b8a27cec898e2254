"""The explore pages without a browser: inputs, predictions, the worker machinery, uploads, the command.

The numbers each page shows come from its ``theory(params)``; they are compared here with the
rmtfl.theory functions they come from, and the background-run machinery (stale runs cancelled,
bad input as a message) is exercised with a stand-in document.
"""
from __future__ import annotations

import base64
import io
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import rmtfl.theory as th


def test_importing_rmtfl_explore_and_the_cli_imports_no_bokeh():
    code = ("import sys, rmtfl, rmtfl.explore, rmtfl.cli, rmtfl.cli._explore; "
            "print(sorted(m for m in ('bokeh', 'selenium', 'tornado') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


# ------------------------------------------------------------------------------------------ inputs
def test_page_inputs_are_checked_with_the_control_named():
    from rmtfl.explore import _flow, _kernel, _mp_bbp, _steps

    with pytest.raises(ValueError, match=r"N must be an integer in \[10, 2000\], got 5000"):
        _mp_bbp.params(psi=0.5, theta=2.0, N=5000, seed=0)
    with pytest.raises(ValueError, match="d = N/psi = 40000 exceeds 4000"):
        _mp_bbp.params(psi=0.05, theta=2.0, N=2000, seed=0)
    with pytest.raises(ValueError, match="theta must be a number"):
        _mp_bbp.params(psi=0.5, theta=float("nan"), N=100, seed=0)
    with pytest.raises(ValueError, match=r"N must be an integer in \[20, 1500\]"):
        _steps.params("tanh", "linear", 0.3, 0.2, "reused", 1501, 0)
    with pytest.raises(ValueError, match=r"alpha2 must be a number in \[0.0, 0.5\)"):
        _steps.params("tanh", "linear", 0.3, 0.5, "reused", 100, 0)
    with pytest.raises(ValueError, match="activation must be one of"):
        _steps.params("softsign", "linear", 0.3, 0.2, "reused", 100, 0)
    with pytest.raises(ValueError, match="activation must be one of"):
        _kernel.params("tanh", 10, 5.0, 100, 0)   # odd: no even sector, nothing to mix
    with pytest.raises(ValueError, match=r"n must be an integer in \[50, 3000\]"):
        _kernel.params("relu", 10, 5.0, 10**6, 0)
    with pytest.raises(ValueError, match="delta must be a number"):
        _flow.params("check2", 0.0)
    with pytest.raises(ValueError, match=r"N must be an integer.*got 2\.5"):
        _mp_bbp.params(psi=0.5, theta=2.0, N=2.5, seed=0)


# ------------------------------------------------------------------------------------------ predictions
def test_mp_bbp_prediction_is_the_bgn_outlier_and_the_tw_margin():
    from rmtfl.explore import _mp_bbp

    for psi, theta in [(0.5, 2.0), (2.0, 0.9), (1.0, 1.5)]:
        p = _mp_bbp.params(psi=psi, theta=theta, N=300, seed=0)
        v = _mp_bbp.theory(p)["values"]
        ref = th.bgn_outlier(theta, psi)
        assert v["outlier"] == ref.singular_value and v["cos2_left"] == ref.cos2_left
        assert v["cos2_right"] == ref.cos2_right
        assert v["threshold"] == pytest.approx(psi ** 0.25, rel=1e-12)
        assert v["edge"] == pytest.approx(1 + psi ** 0.5, rel=1e-12)
        assert v["tw_margin"] == th.edge_margin(300, p["d"])
        assert v["separated"] == int(theta > psi ** 0.25)


def test_mp_bbp_simulation_matches_the_prediction_at_the_fluctuation_scale():
    from rmtfl.explore import _mp_bbp

    p = _mp_bbp.params(psi=0.5, theta=2.0, N=200, seed=3)
    r = _mp_bbp.simulate(p, threading.Event())
    v = r["values"]
    # outlier 2.3717 (BGN); one draw at N = 200 fluctuates by ~ N^-1/2 = 0.07
    assert abs(v["top"] - 2.3717082451262845) < 0.25
    assert abs(v["cos2_left"] - 0.8611111111111112) < 0.1
    assert v["outliers"] == 1 and r["s"].size == 200


def test_steps_prediction_is_two_step_at_this_N():
    from rmtfl.explore import _steps

    p = _steps.params("gelu", "hermite(0, 1, 0.7071067811865476)", 0.3, 0.45, "reused", 200, 0)
    v = _steps.theory(p)["values"]
    pred = th.two_step("gelu", "hermite(0, 1, 0.7071067811865476)", psi=1.0, phi=2.0,
                       eta1=200 ** 0.3, eta2=200 ** 0.45, N=200)
    assert v["outliers"] == len(pred.outliers) >= 2   # two spikes of P (docs/theory/two_step.md §8.2)
    assert [v["s1"], v["s2"]] == [o.singular_value for o in pred.outliers[:2]]
    assert v["Lambda"] == th.outlier_count(0.3, 0.45).count
    lo, hi = pred.count_range                    # shown only when the count varies between batches
    assert v.get("outliers_over_batches") == (f"{lo}-{hi}" if lo != hi else None)
    assert pred.reliable and "unreliable" not in v
    # a prediction that flags itself says so on the page, with its first reason
    p = _steps.params("hermite(0, 1, 0.5)", "tanh", 0.45, 0.45, "reused", 500, 0)
    v = _steps.theory(p)["values"]
    assert v["unreliable"].startswith("all 12 most extreme samples of a batch give outliers")


def test_steps_page_takes_a_fresh_second_batch():
    # the page's fresh batch has n2 = n (phi2 = phi): theory and simulation both run, and agree on the top outlier
    from rmtfl.explore import _steps

    p = _steps.params("tanh", "linear", 0.3, 0.3, "fresh", 200, 0)
    v = _steps.theory(p)["values"]
    pred = th.two_step("tanh", "linear", psi=1.0, phi=2.0, eta1=200 ** 0.3, eta2=200 ** 0.3, N=200, batch="fresh",
                       phi2=2.0)
    assert v["s1"] == pred.outliers[0].singular_value and v["mode"] == "finite-N"
    s = _steps.simulate(p, None)["values"]
    assert s["outliers"] == v["outliers"] == 1 and abs(s["s1"] / v["s1"] - 1) < 0.05    # one draw: ~1 % apart


def test_kernel_and_flow_predictions():
    from rmtfl.explore import _flow, _kernel

    v = _kernel.theory(_kernel.params("gelu", 8, 3.0, 200, 0))["values"]
    z = th.zonal_top_eigenfunction("gelu", d=8, b=3.0, n_u=80, n_c=80)   # the page uses 40 nodes for gelu
    assert v["k1_top"] == pytest.approx(z.eigenvalue, abs=1e-9)
    assert v["cos2_y2"] == pytest.approx(z.overlaps[2], abs=1e-9)
    ex = th.flow_example("check1")
    v = _flow.theory(_flow.params("check1", 1e-2))["values"]
    e = th.escape_time(ex.X, ex.y, activation=ex.activation, N=ex.N, depth=ex.depth, loss=ex.loss, delta=1e-2,
                       w0=ex.w0)
    assert v["escape_time"] == e.time and v["degree"] == 2
    with pytest.raises(ValueError, match="beyond the simulated horizon"):
        _flow.theory(_flow.params("deep", 1e-4))


# ------------------------------------------------------------------------------------------ the worker
class FakeDoc:
    """Collects next-tick callbacks (thread-safe), run by :meth:`drain` on the test's thread."""

    def __init__(self):
        self.pending, self.lock = [], threading.Lock()

    def add_next_tick_callback(self, cb):
        with self.lock:
            self.pending.append(cb)

    def drain(self, timeout=10.0, until=lambda: True):
        t_end = time.monotonic() + timeout
        while time.monotonic() < t_end:
            with self.lock:
                cbs, self.pending = self.pending, []
            for cb in cbs:
                cb()
            if until():
                return
            time.sleep(0.01)
        raise TimeoutError


def test_a_newer_run_cancels_the_running_one_and_only_the_newest_is_drawn():
    from rmtfl.explore._jobs import Jobs, checkpoint

    doc, states, drawn, stopped = FakeDoc(), [], [], []
    jobs = Jobs(doc, lambda kind, text: states.append(kind), "simulation")
    started = threading.Event()

    def slow(cancel):
        started.set()
        for _ in range(1000):          # 10 s unless cancelled
            time.sleep(0.01)
            try:
                checkpoint(cancel)
            except Exception:
                stopped.append(True)
                raise
        return "slow"

    jobs.submit(slow, drawn.append)
    assert started.wait(5)
    t0 = time.monotonic()
    jobs.submit(lambda cancel: "queued-then-stale", drawn.append)   # made stale by the next one
    jobs.submit(lambda cancel: "fast", drawn.append)
    doc.drain(until=lambda: bool(drawn))
    assert drawn == ["fast"] and stopped == [True]
    assert time.monotonic() - t0 < 2.0
    assert states[0] == "busy" and states[-1] == "idle"
    jobs.shutdown()


def test_bad_input_and_faults_in_a_run_become_one_line_messages():
    from rmtfl.explore._jobs import Jobs

    doc, states = FakeDoc(), []
    jobs = Jobs(doc, lambda kind, text: states.append((kind, text)), "theory")

    def bad(cancel):
        raise ValueError("psi must be positive, got -1")

    jobs.submit(bad, lambda r: None)
    doc.drain(until=lambda: states[-1][0] == "error")
    assert states[-1] == ("error", "bad input: psi must be positive, got -1")
    jobs.submit(lambda cancel: 1 / 0, lambda r: None)
    doc.drain(until=lambda: states[-1][0] == "error" and "Zero" in states[-1][1])
    assert "Traceback" not in states[-1][1]
    jobs.shutdown()


# ------------------------------------------------------------------------------------------ uploads
def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _npy(a) -> bytes:
    buf = io.BytesIO()
    np.save(buf, a)
    return buf.getvalue()


def test_uploads_are_read_without_pickles_and_refused_with_a_reason():
    from rmtfl.explore._matrix import read_upload

    W = np.arange(12.0).reshape(3, 4)
    assert np.array_equal(read_upload(_b64(_npy(W)), "w.npy")["W"], W)
    buf = io.BytesIO()
    np.savez(buf, a=np.ones(3), W1=W, W2=2 * W)
    assert list(read_upload(_b64(buf.getvalue()), "m.npz")) == ["W1", "W2"]
    for data, name, match in [(b"hello", "x.npy", "not a readable"), (b"", "x.npy", "empty"),
                              (_npy(W), "x.txt", "upload a .npy or .npz"),
                              (_npy(np.ones(5)), "v.npy", "no real 2-D matrix .*1-D"),
                              (_npy(np.array([[1.0, np.nan], [0.0, 1.0]])), "n.npy", "NaN"),
                              (_npy(np.array([[{"a": 1}]], dtype=object)), "o.npy", "not a readable")]:
        with pytest.raises(ValueError, match=match):
            read_upload(_b64(data), name)


def test_the_matrix_page_analyses_or_says_the_analysis_is_missing():
    from rmtfl.explore._matrix import analyse, analysis_function

    import rmtfl.numerics as nm

    W = nm.spiked_matrix(100, 200, 3.0, rng=0).W
    r = analyse(W, 0.05)
    assert r["s"].size == 100 and r["values"]["N"] == 100
    if analysis_function() is None:
        assert r["report"] is None
    else:
        assert r["values"]["outliers"] >= 1


def test_the_matrix_page_reads_the_report_of_rmtfl_analyze(monkeypatch):
    """The page against the SpectrumReport contract (a stand-in report; the real one is tested by its module)."""
    import types

    import rmtfl
    from rmtfl.explore._matrix import analyse

    calls = []

    def fake_analyze(W, *, alpha=0.05):
        calls.append((W.shape, alpha))
        out = types.SimpleNamespace(singular_value=3.1, p_value=1e-9, theta=2.9, cos2_left=0.9, cos2_right=0.8)
        return types.SimpleNamespace(var=1.0, ratio=0.5, bulk_edge=1.707, ks=0.02, mp_consistent=True,
                                     outliers=[out])

    monkeypatch.setattr(rmtfl, "analyze", fake_analyze, raising=False)
    r = analyse(np.eye(4, 8), 0.01)
    assert calls == [((4, 8), 0.01)]
    v = r["values"]
    assert (v["outliers"], v["s1"], v["p1"], v["theta1"], v["cos2_left1"], v["cos2_right1"]) == (1, 3.1, 1e-9, 2.9,
                                                                                                   0.9, 0.8)
    assert (v["var"], v["ratio"], v["bulk_edge"], v["ks"], v["mp_consistent"]) == (1.0, 0.5, 1.707, 0.02, True)


# ------------------------------------------------------------------------------------------ the command
def test_explore_without_bokeh_exits_2_with_the_extra_named(monkeypatch, capsys):
    import importlib.util

    from rmtfl.cli import main

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "bokeh" else real(name, *a))
    assert main(["explore"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ['rmtfl: error: rmtfl explore needs bokeh: pip install -e ".[explore]"']


@pytest.mark.parametrize("port", ["0", "65536", "-1"])
def test_explore_port_out_of_range_exits_2(port, capsys):
    from rmtfl.cli import main

    assert main(["explore", "--port", port]) == 2
    assert "--port must be an integer in [1, 65535]" in capsys.readouterr().err


def test_serve_prints_its_url_and_ctrl_c_stops_it_cleanly(monkeypatch, capsys):
    import rmtfl.explore as ex

    class Loop:
        def start(self):
            raise KeyboardInterrupt

        def add_callback(self, *a):
            raise AssertionError("no browser without open_browser")

    class Server:
        port, io_loop, stopped = 5123, Loop(), False

        def start(self):
            pass

        def stop(self):
            Server.stopped = True

    monkeypatch.setattr(ex, "make_server", lambda **kw: Server())
    assert ex.serve(port=5123) == 0
    out = capsys.readouterr().out
    assert "http://127.0.0.1:5123/" in out and Server.stopped


def test_explore_serves_http_on_loopback():
    """A real server in a subprocess: ``rmtfl explore`` prints its URL, serves the index, stops on SIGINT."""
    pytest.importorskip("bokeh")
    import signal
    import urllib.request

    from rmtfl.explore import free_port

    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "rmtfl", "explore", "--port", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert f"http://127.0.0.1:{port}/" in line
        html = urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=30).read().decode()
        assert "rmtfl explore" in html
        lesson = urllib.request.urlopen(f"http://127.0.0.1:{port}/lessons/02_bbp.py", timeout=30).read().decode()
        assert "BBP" in lesson
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert "Traceback" not in err
