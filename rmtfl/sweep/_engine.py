"""The sweep engine: every (grid point, seed) of an experiment as one task, on any executor.

``run_sweep(fn, grid, seeds, store=...)`` runs ``fn(params, rng)`` (or
``fn(params, rng, backend)``) for every grid point and seed index, where
``rng = numpy.random.default_rng(task_seed(name, version, params, seed))``.
The executor is

* ``workers=0``: serially, in this process;
* ``workers=W`` (default: one per CPU): an embedded ``dask.distributed.LocalCluster``
  of ``W`` single-threaded worker processes on loopback (127.0.0.1);
* ``scheduler="tcp://HOST:PORT"``: an existing Dask cluster.

Results are written to the :class:`~rmtfl.sweep.ResultStore` by this
(driver) process as they arrive (``as_completed``), one transaction each, so a
crash or ``kill -9`` of the driver loses only the tasks in flight; a rerun on
the same store computes only the tasks without an ``'ok'`` row.

Tasks run inside ``blas_threads(1)`` by default, so that the numbers do not
depend on the executor (OpenBLAS results change in the last bits with the
thread count): a serial run and a cluster run of the same sweep are
bit-for-bit identical on the same machine type.  A task that raises is stored
as ``'error'`` with its traceback and the sweep goes on; a task whose worker
dies is rescheduled by Dask (up to ``distributed.scheduler.allowed-failures``
times) and also resubmitted on ``retries``.  Dask is imported only when a
cluster is used.

Examples
--------
>>> import numpy as np
>>> def f(params, rng):
...     return {"m": params["x"] + rng.standard_normal()}
>>> res = run_sweep(f, [{"x": 0.0}, {"x": 1.0}], 3, store=":memory:", workers=0,
...                 name="doc", progress=False)
>>> res.tasks, res.computed, res.reused, res.failed
(6, 6, 0, 0)
>>> [r.n for r in res.results]
[3, 3]

An :class:`~rmtfl.sweep.Experiment` checks the whole grid before any task runs (no store row is
written for a bad grid).  JSON (``to_dict``) follows :func:`rmtfl._results.jsonify`: the standard
error of a single seed, NaN, is written ``"nan"``.
"""
from __future__ import annotations

import inspect
import logging
import math
import os
import socket
import sys
import time
import traceback
import uuid
from dataclasses import dataclass

import numpy as np

from rmtfl._results import Result
from rmtfl._threads import blas_threads

from ._grid import normalise_params, seed_indices, task_key, task_seed
from ._store import ResultStore, TaskResult

__all__ = ["run_sweep", "SweepResult", "PointSummary", "TaskFailure", "execute_task", "point_means"]


@dataclass(frozen=True)
class PointSummary(Result):
    """The finished seeds of one grid point: ``n`` of them, per-metric ``mean`` and standard error.

    ``stderr[m] = std(ddof=1)/sqrt(n)`` (NaN for ``n < 2``); a metric missing from every seed is NaN.
    """

    params: dict
    n: int
    mean: dict
    stderr: dict


@dataclass(frozen=True)
class TaskFailure(Result):
    """A task that ended in an error: its point, seed index and the last line of the traceback."""

    params: dict
    seed_index: int
    error: str


@dataclass(frozen=True)
class SweepResult(Result):
    """Summary of one sweep run.

    ``tasks`` = grid points x seeds; ``computed`` + ``reused`` + ``failed`` = ``tasks``
    unless interrupted.  ``results[i]`` (:class:`PointSummary`) holds the per-seed mean and
    standard error of every metric at ``grid[i]``, over the seeds of this sweep that finished
    ``'ok'``; ``failures`` the :class:`TaskFailure` of this run.
    """

    experiment: str
    version: str
    grid_points: int
    seeds: tuple
    tasks: int
    computed: int
    reused: int
    failed: int
    wall_seconds: float
    executor: str
    store: str
    results: tuple = ()
    failures: tuple = ()

    def summary(self) -> str:
        """One line: counts, wall time, store."""
        return (f"sweep {self.experiment} (v{self.version}): {self.grid_points} points x "
                f"{len(self.seeds)} seeds = {self.tasks} tasks; computed {self.computed}, "
                f"reused {self.reused}, failed {self.failed}; wall {self.wall_seconds:.2f} s "
                f"on {self.executor}; store {self.store}")


def _scalar_metrics(metrics) -> dict:
    if not isinstance(metrics, dict):
        raise ValueError(f"an experiment must return a dict of scalars, got {type(metrics).__name__}")
    out = {}
    for k, v in metrics.items():
        if isinstance(v, (bool, np.bool_)):
            out[str(k)] = bool(v)
        elif isinstance(v, (int, np.integer)):
            out[str(k)] = int(v)
        elif isinstance(v, (float, np.floating)):
            out[str(k)] = float(v)
        elif hasattr(v, "item") and getattr(v, "size", 0) == 1:  # 0-d numpy / cupy array
            out[str(k)] = v.item()
        else:
            raise ValueError(f"metric {k!r} must be a scalar, got {type(v).__name__}")
    return out


def execute_task(fn, params: dict, seed: np.random.SeedSequence, backend: str = "numpy",
                 pass_backend: bool = False, threads: int | None = 1) -> dict:
    """Run one task and return ``{"status", "metrics", "error", "seconds", "host"}``; never raises
    for an exception of ``fn`` (it becomes ``status='error'`` with the traceback)."""
    t0 = time.perf_counter()
    rng = np.random.default_rng(seed)
    try:
        with blas_threads(threads):
            out = fn(dict(params), rng, backend) if pass_backend else fn(dict(params), rng)
        metrics, status, error = _scalar_metrics(out), "ok", None
    except Exception:
        metrics, status, error = {}, "error", traceback.format_exc()
    return {"status": status, "metrics": metrics, "error": error,
            "seconds": time.perf_counter() - t0, "host": socket.gethostname()}


def _identify(fn, name, version):
    exp_fn = getattr(fn, "fn", None)
    if exp_fn is not None and hasattr(fn, "name") and hasattr(fn, "version"):  # an Experiment
        return exp_fn, name or fn.name, str(version if version is not None else fn.version)
    if not callable(fn):
        raise ValueError(f"fn must be a callable or an Experiment, got {type(fn).__name__}")
    default = f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', repr(fn))}"
    return fn, name or default, str(version if version is not None else getattr(fn, "__version__", "1"))


def _accepts_backend(fn) -> bool:
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return False
    params = [p for p in sig.parameters.values()
              if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)]
    return any(p.kind == p.VAR_POSITIONAL for p in params) or len(params) >= 3


def point_means(grid: list[dict], seeds, rows_by_key: dict, keys: list[list[str]]) -> tuple:
    """Per grid point, in grid order: a :class:`PointSummary` over the finished seeds.

    ``rows_by_key`` maps task keys to metric dicts (:meth:`ResultStore.metrics_by_key`);
    ``keys[i]`` are the task keys of ``grid[i]``, one per seed.
    """
    out = []
    for point, point_keys in zip(grid, keys):
        rows = [rows_by_key[k] for k in point_keys if k in rows_by_key]
        names = []
        for r in rows:
            names.extend(m for m in r if m not in names)
        mean, se = {}, {}
        for m in names:
            vals = np.array([float(r[m]) for r in rows if m in r and r[m] is not None], dtype=float)
            mean[m] = float(vals.mean()) if vals.size else math.nan
            se[m] = float(vals.std(ddof=1) / math.sqrt(vals.size)) if vals.size > 1 else math.nan
        out.append(PointSummary(point, len(rows), mean, se))
    return tuple(out)


def _default_workers() -> int:
    return max(1, os.cpu_count() or 1)


def run_sweep(fn, grid, seeds, *, store=None, workers: int | None = None, scheduler: str | None = None,
              name: str | None = None, version=None, root_seed: int = 0, backend: str = "numpy",
              blas_threads_per_task: int | None = 1, retries: int = 2, progress: bool = True,
              cluster_kwargs: dict | None = None) -> SweepResult:
    """Run ``fn`` over ``grid`` x ``seeds``, storing each finished task (see the module docstring).

    Parameters
    ----------
    fn : Experiment or callable
        ``fn(params, rng)`` or ``fn(params, rng, backend)`` returning a dict of scalars.
    grid : list of dict
        Grid points (see :func:`~rmtfl.sweep.product_grid`).
    seeds : int or sequence of int
        ``S`` means seed indices ``0..S-1``.
    store : str, Path, ResultStore or None
        The SQLite file; ``None`` or ``":memory:"`` keeps results in memory only.
    workers : int or None
        ``0`` serial; ``W >= 1`` a LocalCluster of ``W`` one-thread processes; ``None`` one per CPU.
    scheduler : str or None
        Address of a running Dask scheduler (then ``workers`` must be ``None``).
    name, version : str
        Task identity (default: the Experiment's, or the function's module.qualname and ``"1"``).
        Change ``version`` when the function's output changes, so old rows are not reused.
    root_seed : int
        Extra entropy shared by all tasks (a different root gives independent streams).
    backend : str
        Passed to ``fn`` as its third argument when it takes one (``"numpy"`` or ``"cupy"``).
    blas_threads_per_task : int or None
        BLAS threads inside each task (``1``: executor-independent numbers; ``None``: untouched).
    retries : int
        Dask resubmissions of a task whose worker was lost.
    """
    fn_, name, version = _identify(fn, name, version)
    if not isinstance(grid, (list, tuple)) or not grid:
        raise ValueError("grid must be a non-empty list of parameter dicts")
    grid = [normalise_params(p) for p in grid]
    validate = getattr(fn, "validate", None)
    if callable(validate):  # an Experiment: every point is checked before any task runs
        validate(grid)
    seeds = seed_indices(seeds)
    if scheduler is not None and workers is not None:
        raise ValueError("give either workers or scheduler, not both")
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 0):
        raise ValueError(f"workers must be an integer >= 0, got {workers!r}")
    if backend not in ("numpy", "cupy"):
        raise ValueError(f"backend must be 'numpy' or 'cupy', got {backend!r}")
    pass_backend = _accepts_backend(fn_)
    keys = [[task_key(name, version, p, s, root_seed) for s in seeds] for p in grid]
    if len({ks[0] for ks in keys}) != len(grid):
        raise ValueError("grid has duplicate points (the same parameters twice); remove the repeats")
    if workers != 0:  # a cluster run: say what is missing before the store is created or touched
        _dask_distributed()
    own_store = not isinstance(store, ResultStore)
    st = ResultStore(":memory:" if store is None else store) if own_store else store
    todo = [(i, s, k) for i, p in enumerate(grid) for s, k in zip(seeds, keys[i])]
    t0 = time.perf_counter()
    done = st.finished_keys([k for _, _, k in todo])
    pending = [t for t in todo if t[2] not in done]
    counts = {"computed": 0, "failed": 0}
    failures = []

    def record(i, s, k, out):
        st.record(TaskResult(k, name, version, grid[i], s, root_seed, out["status"], out["metrics"],
                             out["error"], backend, out["seconds"]))
        if out["status"] == "ok":
            counts["computed"] += 1
        else:
            counts["failed"] += 1
            last = (out["error"] or "").strip().splitlines()
            failures.append(TaskFailure(grid[i], s, last[-1] if last else ""))

    bar = _progress_bar(len(todo), len(todo) - len(pending), name, progress)
    executor = "serial"
    try:
        if pending and workers == 0:
            for i, s, k in pending:
                seed = task_seed(name, version, grid[i], s, root_seed)
                record(i, s, k, execute_task(fn_, grid[i], seed, backend, pass_backend, blas_threads_per_task))
                _tick(bar, counts, len(done))
        elif pending:
            executor = _run_dask(fn_, grid, pending, name, version, root_seed, backend, pass_backend,
                                 blas_threads_per_task, retries, workers, scheduler, cluster_kwargs,
                                 record, lambda: _tick(bar, counts, len(done)))
        else:
            executor = "none (all reused)"
    except BaseException:  # Ctrl-C, lost scheduler, ...: every finished task is already stored
        if own_store:
            st.close()
        raise
    finally:
        if bar is not None:
            bar.close()
        wall = time.perf_counter() - t0
    results = point_means(grid, seeds, st.metrics_by_key([k for _, _, k in todo]), keys)
    location = st.path if isinstance(st.path, str) else str(st.path)
    if own_store:
        st.close()
    return SweepResult(name, version, len(grid), tuple(seeds), len(todo), counts["computed"], len(done),
                       counts["failed"], wall, executor, location, results, tuple(failures))


def _progress_bar(total, initial, name, enabled):
    if not enabled:
        return None
    from tqdm.auto import tqdm

    bar = tqdm(total=total, initial=initial, desc=f"sweep {name}", unit="task", file=sys.stderr,
               dynamic_ncols=True, smoothing=0.1)
    bar.set_postfix(computed=0, reused=initial, failed=0, refresh=False)
    return bar


def _tick(bar, counts, reused):
    if bar is not None:
        bar.set_postfix(computed=counts["computed"], reused=reused, failed=counts["failed"], refresh=False)
        bar.update(1)


def _dask_distributed():
    """``dask.distributed`` or a ``ValueError`` saying how to get it."""
    try:
        import dask.distributed
    except ImportError:
        raise ValueError("a cluster sweep needs dask[distributed] (pip install -e '.[dist]'); "
                         "use workers=0 for a serial run") from None
    return dask.distributed


def _run_dask(fn, grid, pending, name, version, root_seed, backend, pass_backend, threads, retries,
              workers, scheduler, cluster_kwargs, record, tick) -> str:
    dd = _dask_distributed()
    Client, LocalCluster, as_completed = dd.Client, dd.LocalCluster, dd.as_completed
    cluster = None
    if scheduler is not None:
        client = Client(scheduler, timeout="30s")
        executor = f"scheduler {scheduler}"
    else:
        n = _default_workers() if workers is None else workers
        kw = dict(n_workers=n, threads_per_worker=1, processes=True, host="127.0.0.1",
                  dashboard_address=None, silence_logs=logging.ERROR)
        kw.update(cluster_kwargs or {})
        cluster = LocalCluster(**kw)
        client = Client(cluster)
        executor = f"LocalCluster({n} workers x 1 thread)"
    token = uuid.uuid4().hex[:8]
    futures = {}
    try:
        for i, s, k in pending:
            seed = task_seed(name, version, grid[i], s, root_seed)
            fut = client.submit(execute_task, fn, grid[i], seed, backend, pass_backend, threads,
                                key=f"rmtfl-sweep-{k[:24]}-{token}", pure=False, retries=retries)
            futures[fut.key] = (fut, i, s, k)
        for fut in as_completed([f for f, *_ in futures.values()]):
            _, i, s, k = futures.pop(fut.key)
            try:
                out = fut.result()
            except Exception as exc:  # KilledWorker after repeated worker loss, lost scheduler, ...
                out = {"status": "error", "metrics": {}, "seconds": 0.0, "host": "",
                       "error": "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))}
            fut.release()
            record(i, s, k, out)
            tick()
    finally:
        for fut, *_ in futures.values():
            fut.cancel()
        client.close()
        if cluster is not None:
            cluster.close()
    return executor
