"""The sweep engine on real executors: serial, an embedded LocalCluster, a cluster started in the test.

Fault tests: the driver SIGKILLed part-way (rerun reuses and completes), a worker SIGKILLed
mid-task (its task is retried, every point completes), a task that raises (recorded, sweep goes on).
An Experiment's grid is checked as a whole before any task runs.
"""
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

from rmtfl.sweep import PointSummary, ResultStore, get_experiment, product_grid, run_sweep
from rmtfl.sweep._experiments import bbp_task

BBP = get_experiment("bbp")


def fragile_bbp(params, rng, backend="numpy"):
    """The bbp task, failing at run time for theta > 2.5 (an Experiment would refuse a bad grid up front)."""
    if params["theta"] > 2.5:
        raise RuntimeError("theta too large for this test")
    return bbp_task(params, rng, backend)


def _grid(delay=0.0, thetas="0:3:4", N=60):
    return product_grid({"theta": thetas}, fixed=BBP.params({"N": N, "delay": delay}))


def _numbers(res):
    return [(r.params["theta"], r.n, r.mean) for r in res.results]


def test_serial_counts_reuse_and_failures(tmp_path):
    store = tmp_path / "s.sqlite"
    grid = _grid(thetas="3,0,2")                          # theta = 3 raises in the task
    kw = dict(store=store, workers=0, progress=False, name="bbp-fragile", version="1")
    r1 = run_sweep(fragile_bbp, grid, 3, **kw)
    assert (r1.tasks, r1.computed, r1.reused, r1.failed) == (9, 6, 0, 3)
    assert r1.results[0].n == 0 and r1.results[2].n == 3 and isinstance(r1.results[0], PointSummary)
    assert all("theta too large" in f.error for f in r1.failures)
    with ResultStore(store) as st:
        tb = st.rows(status="error")[0]["error"]
    assert tb.startswith("Traceback") and "fragile_bbp" in tb  # the full traceback is stored
    r2 = run_sweep(fragile_bbp, grid, [0, 1, 2, 3], **kw)
    assert (r2.computed, r2.reused, r2.failed) == (2, 6, 4)    # failed tasks are retried on a rerun
    assert _numbers(r2)[2][2] != _numbers(r1)[2][2]            # 4 seeds now, mean over all of them
    r3 = run_sweep(fragile_bbp, grid[1:], 4, **kw)
    assert (r3.computed, r3.reused, r3.failed, r3.executor) == (0, 8, 0, "none (all reused)")
    d = r3.to_dict()
    assert d["tasks"] == 8 and d["results"][0]["n"] == 4 and isinstance(d["results"][0]["mean"]["s1"], float)


def test_an_experiment_checks_the_whole_grid_first(tmp_path):
    """A bad point anywhere in the grid: ValueError naming the parameter, no task run, no store written."""
    store = tmp_path / "never.sqlite"
    with pytest.raises(ValueError, match=r"theta must be >= 0, got -1.*grid point"):
        run_sweep(BBP, _grid(thetas="0,1,-1"), 2, store=store, workers=0, progress=False)
    exp = get_experiment("two-step")
    for bad, match in (({"alpha2": 0.5}, "alpha2 must lie in"), ({"N": 0}, "N must be an integer"),
                       ({"activation": "nope"}, "nope"), ({"c1": -1.0}, "c1 must be > 0")):
        grid = [exp.params({"alpha1": 0.1, "alpha2": 0.1}), exp.params({"alpha1": 0.2, "alpha2": 0.1, **bad})]
        with pytest.raises(ValueError, match=match):
            run_sweep(exp, grid, 1, store=store, workers=0, progress=False)
    assert not store.exists()


def test_bbp_matches_bgn_prediction():
    """s1 above threshold matches BGN's closed form (docs/theory/two_step.md §2.1) within finite-size error."""
    from rmtfl.theory import bgn_outlier

    res = run_sweep(BBP, _grid(thetas="2,3", N=300), 4, workers=0, progress=False)
    for r in res.results:
        s_pred = bgn_outlier(r.params["theta"], 1.0).singular_value
        # outlier fluctuations ~ N^-1/2 (constant ~1) plus 3 stderr over seeds
        assert abs(r.mean["s1"] - s_pred) < 300 ** -0.5 + 3 * r.stderr["s1"]


def test_serial_equals_embedded_local_cluster(tmp_path):
    """Same numbers, bit for bit, from workers=0 and an embedded 2-process LocalCluster (loopback)."""
    exp = get_experiment("two-step")
    grid = product_grid({"alpha1": "0.1,0.4", "alpha2": "0.3"}, fixed=exp.params({"N": 120}))
    serial = run_sweep(exp, grid, 2, store=tmp_path / "a.sqlite", workers=0, progress=False)
    cluster = run_sweep(exp, grid, 2, store=tmp_path / "b.sqlite", workers=2, progress=False)
    assert cluster.executor.startswith("LocalCluster(2")
    assert cluster.computed == serial.computed == 4
    assert cluster.results == serial.results
    with ResultStore(tmp_path / "a.sqlite") as a, ResultStore(tmp_path / "b.sqlite") as b:
        ka = {r["key"]: r["s1"] for r in a.rows()}
        kb = {r["key"]: r["s1"] for r in b.rows()}
    assert ka == kb


_DRIVER = textwrap.dedent("""
    import sys
    from rmtfl.sweep import get_experiment, product_grid, run_sweep
    if __name__ == "__main__":
        exp = get_experiment("bbp")
        grid = product_grid({"theta": "0:3:4"}, fixed=exp.params({"N": 60, "delay": float(sys.argv[3])}))
        workers = int(sys.argv[2])
        run_sweep(exp, grid, 3, store=sys.argv[1], workers=workers, progress=False)
""")


def _kill_driver_part_way(tmp_path, workers, delay, min_rows):
    store = tmp_path / "killed.sqlite"
    script = tmp_path / "driver.py"
    script.write_text(_DRIVER)
    proc = subprocess.Popen([sys.executable, str(script), str(store), str(workers), str(delay)],
                            start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.time() + 120
        done = 0
        while time.time() < deadline and proc.poll() is None:
            if store.exists():
                try:
                    with ResultStore(store) as st:
                        done = st.count("ok")
                except ValueError:        # still being created
                    done = 0
                if done >= min_rows:
                    break
            time.sleep(0.05)
        assert proc.poll() is None, "the driver finished before it could be killed"
        os.kill(proc.pid, signal.SIGKILL)                 # the driver only
        proc.wait(timeout=30)
    finally:
        time.sleep(0.5)
        try:                                              # clean up this test's own worker processes
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    assert proc.returncode == -signal.SIGKILL
    with ResultStore(store) as st:
        assert st.integrity_ok()
        stored = st.count("ok")
    assert min_rows <= stored < 12
    return store, stored


def test_driver_sigkill_then_rerun_resumes(tmp_path):
    store, stored = _kill_driver_part_way(tmp_path, workers=0, delay=0.15, min_rows=3)
    store = store.rename(tmp_path / "serial.sqlite")
    grid = _grid(delay=0.15)
    rerun = run_sweep(BBP, grid, 3, store=store, workers=0, progress=False)
    assert rerun.reused == stored and rerun.computed == 12 - stored and rerun.failed == 0
    reference = run_sweep(BBP, grid, 3, store=tmp_path / "ref.sqlite", workers=0, progress=False)
    assert rerun.results == reference.results


@pytest.mark.slow
def test_cluster_driver_sigkill_then_rerun_resumes(tmp_path):
    store, stored = _kill_driver_part_way(tmp_path, workers=2, delay=0.3, min_rows=3)
    grid = _grid(delay=0.3)
    rerun = run_sweep(BBP, grid, 3, store=store, workers=2, progress=False)
    assert rerun.reused == stored and rerun.computed == 12 - stored and rerun.failed == 0
    reference = run_sweep(BBP, grid, 3, store=tmp_path / "ref.sqlite", workers=0, progress=False)
    assert rerun.results == reference.results


def test_worker_killed_mid_task_every_point_completes(tmp_path):
    """A LocalCluster started here on loopback; one worker is SIGKILLed while it runs a task."""
    from dask.distributed import Client, LocalCluster

    grid = _grid(delay=0.4, thetas="0:3:4")
    killed = {}
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None) as cluster:
        addr = cluster.scheduler_address
        assert addr.startswith("tcp://127.0.0.1:")

        def killer():
            with Client(addr) as c:
                deadline = time.time() + 60
                while time.time() < deadline and "pid" not in killed:
                    busy = [w for w, keys in c.processing().items() if keys]
                    if busy and len(c.scheduler_info()["workers"]) == 2:
                        time.sleep(0.1)                       # well inside the 0.4 s task
                        pid = c.run(os.getpid, workers=[busy[0]])[busy[0]]
                        os.kill(pid, signal.SIGKILL)
                        killed["pid"] = pid
                    time.sleep(0.02)

        t = threading.Thread(target=killer)
        t.start()
        res = run_sweep(BBP, grid, 2, store=tmp_path / "w.sqlite", scheduler=addr, progress=False)
        t.join()
    assert "pid" in killed
    assert (res.computed, res.failed) == (8, 0) and all(r.n == 2 for r in res.results)
    reference = run_sweep(BBP, grid, 2, workers=0, progress=False)
    assert res.results == reference.results


def test_bad_arguments():
    with pytest.raises(ValueError, match="workers"):
        run_sweep(BBP, _grid(), 1, workers=-1, progress=False)
    with pytest.raises(ValueError, match="either"):
        run_sweep(BBP, _grid(), 1, workers=1, scheduler="tcp://127.0.0.1:1", progress=False)
    with pytest.raises(ValueError, match="grid"):
        run_sweep(BBP, [], 1, workers=0, progress=False)
    with pytest.raises(ValueError, match="duplicate"):
        run_sweep(BBP, _grid() + _grid()[:1], 1, workers=0, progress=False)
    with pytest.raises(ValueError, match="backend"):
        run_sweep(BBP, _grid(), 1, workers=0, backend="jax", progress=False)


def test_plain_function_and_metric_validation():
    def f(params, rng):
        return {"v": np.float64(params["x"]) + rng.random(), "bad": [1, 2]} if params["x"] > 1 else \
            {"v": np.float64(params["x"]) + rng.random()}

    res = run_sweep(f, [{"x": 0.0}, {"x": 2.0}], 2, workers=0, progress=False, name="plain")
    assert (res.computed, res.failed) == (2, 2)
    assert "metric 'bad' must be a scalar" in res.failures[0].error


def test_two_concurrent_sweeps_share_one_store(tmp_path):
    """Two driver processes run the same sweep on one store at once: no corruption, no duplicate rows."""
    store = tmp_path / "shared.sqlite"
    script = tmp_path / "driver.py"
    script.write_text(_DRIVER)
    procs = [subprocess.Popen([sys.executable, str(script), str(store), "0", "0.05"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    errs = [p.communicate(timeout=120)[1] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], errs
    with ResultStore(store) as st:
        assert st.integrity_ok()
        assert st.count() == st.count("ok") == 12
        assert st._con.execute("SELECT count(DISTINCT key) FROM results").fetchone()[0] == 12
    grid = _grid(delay=0.05)
    again = run_sweep(BBP, grid, 3, store=store, workers=0, progress=False)
    assert (again.reused, again.computed) == (12, 0)
    assert again.results == run_sweep(BBP, grid, 3, workers=0, progress=False).results
