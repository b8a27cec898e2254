"""Parameter sweeps at scale: serial, local processes or a Dask cluster; resumable and lossless.

* :mod:`~rmtfl.sweep._grid` — axes, grids, canonical params, task keys and seeds;
* :mod:`~rmtfl.sweep._store` — the SQLite result store;
* :mod:`~rmtfl.sweep._engine` — :func:`run_sweep`;
* :mod:`~rmtfl.sweep._experiments` — the registry of sweepable experiments;
* :func:`two_step_w2_dask`, :func:`top_singular_values_dask` — top-k singular values of a ``W_2`` too large
  for one machine, with ``dask.array``;
* ``blas_threads`` (from :mod:`rmtfl._threads`) — pinning BLAS threads (executor-independent numbers).

Dask is imported only when a cluster is used (``workers >= 1`` or ``scheduler``) and by
the ``dask.array`` functions; ``import rmtfl.sweep`` and serial sweeps never need it.  Results are frozen dataclasses
deriving from :class:`rmtfl._results.Result` (``to_dict()``).
"""
from ._bigsvd import DaskInputs, materialise_inputs, top_singular_values_dask, two_step_w2_dask
from ._engine import PointSummary, SweepResult, TaskFailure, point_means, run_sweep
from ._experiments import EXPERIMENTS, Experiment, get_experiment, theory_outliers
from ._grid import canonical_params, parse_axis, product_grid, seed_indices, task_key, task_seed
from ._store import ResultStore, StoreError, TaskResult, to_table
from .._threads import blas_thread_control, blas_threads

__all__ = [
    "run_sweep", "SweepResult", "PointSummary", "TaskFailure", "point_means",
    "Experiment", "EXPERIMENTS", "get_experiment", "theory_outliers",
    "parse_axis", "product_grid", "canonical_params", "seed_indices", "task_key", "task_seed",
    "ResultStore", "StoreError", "TaskResult", "to_table",
    "blas_threads", "blas_thread_control",
    "two_step_w2_dask", "top_singular_values_dask", "materialise_inputs", "DaskInputs",
]
