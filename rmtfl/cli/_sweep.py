"""CLI of the sweep part: ``rmtfl sweep EXPERIMENT ...`` and ``rmtfl phase-diagram`` (the descriptions below).
"""
from __future__ import annotations

import argparse
import os
import sys

from rmtfl import _defaults

from ._common import ACTIVATION_HELP, TARGET_HELP, emit, only_with, options, usage_error, write_json

__all__ = ["register", "SWEEP_DESCRIPTION", "PHASE_DESCRIPTION"]

#: ``rmtfl sweep --help``.
SWEEP_DESCRIPTION = """\
Parameter sweeps, resumable and lossless: every (grid point, seed) of an experiment is one task.

    rmtfl sweep two-step --alpha1 0:0.45:6 --alpha2 0:0.45:6 --N 800 --seeds 4 \\
        --store sweep.sqlite [--workers W | --scheduler tcp://HOST:PORT] [--backend cupy] [--json]
    rmtfl sweep one-step --eta 0:4:9 ...     rmtfl sweep bbp --theta 0:3:7 ...     rmtfl sweep kernel --b 0:16:5 ...

Axes take LO:HI:COUNT (inclusive linspace), a,b,c or a number; the other parameters of the
experiment are options with their defaults (model defaults from rmtfl._defaults).  The whole grid
is checked before any task runs (exit status 2, nothing written, e.g. for --alpha1 0:0.5:3:
alpha must lie in [0, 1/2), docs/conventions.md §5).  --workers 0 runs serially, --workers W on a
local cluster of W one-thread processes (default: one per CPU), --scheduler on a running Dask
cluster (dask is imported only then).  The store (default sweep.sqlite) is reused: a rerun
computes only the missing tasks.  --seed is the root seed shared by all tasks, --seeds S the
number of seed indices per grid point.  Ctrl-C keeps every finished task (exit status 130).
"""

#: ``rmtfl phase-diagram --help``.
PHASE_DESCRIPTION = """\
The (alpha1, alpha2) map of two large steps, eta_t = c_t N^alpha_t (docs/theory/two_step.md §6).

    rmtfl phase-diagram [--alpha1 SPEC] [--alpha2 SPEC] [--activation A] [--target T]
                        [--N N [--psi P] [--c1 C1] [--c2 C2]]
                        [--empirical --N N [--seeds S] [--store FILE] [--workers W | --scheduler ADDR] ...]
                        [--json] [--out DIR]

By default the theory: Lambda, its critical lines, the learnable region and the effective count
#{1 <= k <= Lambda : P_k != 0} (rmtfl.theory.phase_diagram).  With --N N also the finite-N map at
that width (rmtfl.theory.finite_n_outlier_map: quadratic sigma, reused batch).  With --empirical the
simulated map of the two-step sweep at width --N beside it (the sweep flags as for rmtfl sweep).
Flags that would change nothing are refused (exit status 2).  --out DIR writes phase_diagram.json
and phase_diagram.png.  Maps have shape (len(alpha2), len(alpha1)).
"""

#: Defaults of the executor flags of ``rmtfl phase-diagram --empirical`` (and ``rmtfl sweep``).
EXECUTOR_DEFAULTS = {"seeds": 4, "store": "sweep.sqlite", "retries": 2}


def _add_executor_options(p, *, conditional: bool = False) -> None:
    """``--seeds --store --workers|--scheduler --retries --no-progress`` (``--seed``, ``--backend``: parents)."""
    d = (lambda k: None) if conditional else EXECUTOR_DEFAULTS.get
    p.add_argument("--seeds", type=int, default=d("seeds"), help="seeds per grid point (indices 0..S-1; default 4)")
    p.add_argument("--store", default=d("store"), help="SQLite result store (default sweep.sqlite)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--workers", type=int, default=None,
                   help="0 = serial; W = local cluster of W one-thread processes (default: one per CPU)")
    g.add_argument("--scheduler", default=None, help="address of a running Dask scheduler, tcp://HOST:PORT")
    p.add_argument("--retries", type=int, default=d("retries"), help="resubmissions of a task whose worker died "
                   "(default 2)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")


def _axis_flag(p, name, default, *, help_=None) -> None:
    p.add_argument(f"--{name}", default=default, metavar="SPEC",
                   help=help_ or f"axis: LO:HI:COUNT, a,b,c or a number (default {default})")


def _add_experiment_options(p, exp, *, skip=(), conditional=()) -> None:
    """One flag per axis (a SPEC) and per fixed parameter (typed by its default)."""
    for name, default in exp.axes.items():
        if name not in skip:
            _axis_flag(p, name, default)
    for name, default in exp.fixed.items():
        if name in skip:
            continue
        kind = type(default) if isinstance(default, (int, float, str)) else str
        help_ = ACTIVATION_HELP if name == "activation" else TARGET_HELP if name == "target" else f"default {default}"
        p.add_argument(f"--{name}", type=kind, default=None if name in conditional else default, help=help_)


#: Most values of one axis (``LO:HI:COUNT``) and most tasks (grid points x seeds) of one sweep.
MAX_AXIS, MAX_TASKS = 10_000, 1_000_000


def _axis(name: str, spec):
    """The values of ``--name SPEC``, a ``COUNT`` beyond :data:`MAX_AXIS` refused before anything is built."""
    from rmtfl.sweep import parse_axis

    if isinstance(spec, str) and spec.count(":") == 2:
        count = spec.rsplit(":", 1)[1].strip()
        try:
            big = int(count) > MAX_AXIS
        except ValueError:  # parse_axis says what is wrong with it
            big = False
        if big:
            raise ValueError(f"--{name}: COUNT in LO:HI:COUNT must be at most {MAX_AXIS}, got {count}")
    return parse_axis(name, spec)


def _point_memory(name: str, p: dict):
    """``(flag, bytes, what)``: what one task of experiment ``name`` at grid point ``p`` allocates (with workspace)."""
    item = 4 if p.get("dtype") == "float32" else 8
    if "N" in p and "psi" in p:
        N = p["N"]
        d = max(2, round(N / p["psi"]))
        if name == "bbp":
            return "--N", 3.0 * item * N * d, f"an N x d matrix and its SVD (N={N}, d={d})"
        n = max(2, round(p.get("phi", 1.0) * d))
        return "--N", 2.0 * item * (n * d + N * d + 2.0 * n * N), f"the data, weights and features (N={N}, d={d}, n={n})"
    if "n" in p and "d" in p:
        n, d = p["n"], p["d"]
        return "--n", 3.0 * item * (n * n + n * d), f"the n x n Gram matrix (n={n}, d={d})"
    return None


def _check_sweep_size(exp, grid, args) -> None:
    """Refuse a sweep with too many tasks, or whose tasks (times the concurrent workers) exceed the memory."""
    from rmtfl._validate import check_memory

    tasks = len(grid) * args.seeds
    if tasks > MAX_TASKS:
        raise ValueError(f"--seeds: the sweep has {len(grid)} grid points x {args.seeds} seeds = {tasks} tasks, "
                         f"more than {MAX_TASKS}; split it")
    if getattr(args, "scheduler", None) is not None:  # remote workers: their memory is not ours to check
        return
    need = [m for m in (_point_memory(exp.name, p) for p in grid) if m is not None]
    if need:
        flag, nbytes, what = max(need, key=lambda m: m[1])
        workers = args.workers if args.workers is not None else (os.cpu_count() or 1)
        parallel = max(1, min(workers, tasks))
        check_memory(flag, nbytes * parallel, what + (f", {parallel} tasks at once" if parallel > 1 else ""))


def _grid(exp, args, **override):
    from rmtfl.sweep import product_grid

    axes = {n: _axis(n, override.get(n, getattr(args, n))) for n in exp.axes}
    size = 1
    for n, values in axes.items():
        size *= len(values)
    if size > MAX_TASKS:
        raise ValueError(f"the grid has {size} points ({' x '.join(f'{len(v)} {n}' for n, v in axes.items())}), "
                         f"more than {MAX_TASKS}; use fewer values per axis")
    fixed = {n: override.get(n, getattr(args, n) if getattr(args, n) is not None else exp.fixed[n])
             for n in exp.fixed}
    grid = product_grid(axes, fixed=fixed)
    exp.validate(grid)  # the whole grid, before any task (and before the store is opened)
    return grid


def _check_executor(args) -> None:
    from rmtfl._validate import check_int

    check_int("--seeds", args.seeds, lo=1)
    check_int("--retries", args.retries, lo=0)
    if args.workers is not None:
        check_int("--workers", args.workers, lo=0)
    if args.backend == "cupy" and args.scheduler is None:  # on a remote cluster the workers need the GPU
        from rmtfl.numerics import get_backend

        get_backend("cupy")


def _run(exp, grid, args):
    from rmtfl.sweep import run_sweep

    return run_sweep(exp, grid, args.seeds, store=args.store, workers=args.workers, scheduler=args.scheduler,
                     root_seed=args.seed, backend=args.backend, retries=args.retries,
                     progress=not args.no_progress)


def _table(exp, res) -> str:
    swept = list(exp.axes)
    metrics = list(exp.metrics)
    lines = ["  ".join(f"{c:>10}" for c in swept + ["n"] + metrics)]
    for r in res.results:
        vals = [f"{r.params[c]:>10.4g}" for c in swept] + [f"{r.n:>10d}"]
        vals += [f"{r.mean.get(m, float('nan')):>10.4g}" for m in metrics]
        lines.append("  ".join(vals))
    return "\n".join(lines)


def _interrupted(args) -> int:
    print(f"\nrmtfl: interrupted: finished tasks are kept in {args.store}; rerun the same command to resume",
          file=sys.stderr)
    return 130


def _failures(res) -> str:
    if not res.failures:
        return ""
    return "\nfailures:\n" + "\n".join(f"  {f.params} seed {f.seed_index}: {f.error}" for f in res.failures[:10])


def _cmd_sweep(args) -> int:
    from rmtfl.sweep import get_experiment

    exp = get_experiment(args.experiment)
    grid = _grid(exp, args)
    _check_executor(args)
    _check_sweep_size(exp, grid, args)
    try:
        res = _run(exp, grid, args)
    except KeyboardInterrupt:
        return _interrupted(args)
    emit(res, args, _table(exp, res) + "\n" + res.summary() + _failures(res))
    return 0 if res.failed == 0 else 1


# ------------------------------------------------------------------ phase diagram
def _phase_text(pd) -> list[str]:
    lines = [f"Lambda (rows alpha2, columns alpha1 = {pd.alpha1.tolist()}), '*' = critical line, "
             f"'L' = learnable (information exponent > 1 directions), k_min = {pd.k_min}; "
             f"effective count in brackets"]
    for i, a2 in enumerate(pd.alpha2):
        cells = [f"{pd.Lambda[i, j]}{'*' if pd.critical[i, j] else ''}{'L' if pd.learnable[i, j] else ''}"
                 f"({pd.effective[i, j]})" for j in range(pd.alpha1.size)]
        lines.append(f"  alpha2={a2:<6g} " + " ".join(f"{c:>8}" for c in cells))
    return lines


def _cmd_phase(args) -> int:
    import numpy as np

    from rmtfl.sweep import get_experiment
    from rmtfl.theory import phase_diagram

    empirical, N = args.empirical, args.N
    only_with(args, N is not None or empirical, ["--psi", "--c1", "--c2"], "with --N or --empirical")
    only_with(args, N is not None and args.batch == "reused", ["--extreme-samples"], "with --N (the finite-N map)")
    only_with(args, empirical, ["--seeds", "--store", "--workers", "--scheduler", "--retries", "--no-progress",
                                "--seed", "--backend", "--count", "--dtype"], "with --empirical")
    if empirical and N is None:
        usage_error(args, "--empirical needs the width --N of the simulated networks")
    if N is not None and args.batch == "fresh" and not empirical:
        usage_error(args, "--N: the finite-N map is that of a reused batch; with --batch fresh, --N only sets the "
                          "width of --empirical")
    from rmtfl._validate import check_alpha

    a1 = np.array(_axis("alpha1", args.alpha1), float)
    a2 = np.array(_axis("alpha2", args.alpha2), float)
    for name, axis in (("alpha1", a1), ("alpha2", a2)):
        for v in axis:
            check_alpha(name, v)
    if a1.size * a2.size > MAX_TASKS:
        raise ValueError(f"--alpha1/--alpha2: the map has {a1.size} x {a2.size} cells, more than {MAX_TASKS}")
    psi = _defaults.PSI if args.psi is None else args.psi
    c1 = 1.0 if args.c1 is None else args.c1
    c2 = 1.0 if args.c2 is None else args.c2
    exp, grid = get_experiment("two-step"), None
    if empirical:  # check the whole sweep before any work
        for k, v in EXECUTOR_DEFAULTS.items():
            if getattr(args, k) is None:
                setattr(args, k, v)
        args.seed = _defaults.SEED if args.seed is None else args.seed
        args.backend = _defaults.BACKEND if args.backend is None else args.backend
        args.count = "separated" if args.count is None else args.count
        grid = _grid(exp, args, alpha1=a1.tolist(), alpha2=a2.tolist(), N=N, psi=psi, phi=args.phi, c1=c1, c2=c2,
                     activation=args.activation, target=args.target, batch=args.batch,
                     dtype=args.dtype or "float64")
        _check_executor(args)
        _check_sweep_size(exp, grid, args)

    pd = phase_diagram(a1, a2, activation=args.activation, target=args.target, degree=args.degree,
                       batch=args.batch, phi=args.phi)
    result = {"activation": args.activation, "target": args.target, "batch": args.batch, "phi": args.phi,
              "degree": args.degree, "convention": "maps have shape (len(alpha2), len(alpha1)); "
              "eta_t = c_t N^alpha_t (docs/conventions.md §5)", **pd.to_dict()}
    lines = _phase_text(pd)
    fin = None
    if N is not None and args.batch == "reused":
        from rmtfl.theory import finite_n_outlier_map

        try:
            fin = finite_n_outlier_map(a1, a2, activation=args.activation, target=args.target, psi=psi,
                                       phi=args.phi, N=N, c1=c1, c2=c2, extreme_samples=args.extreme_samples or "auto")
        except ValueError as exc:
            if not empirical:
                raise
            result["notes"] = [f"finite-N map not drawn: {exc}"]
            lines.append(f"note: finite-N map not drawn: {exc}")
    if fin is not None:
        result["finite_N"] = {"N": N, "psi": psi, "c1": c1, "c2": c2, **fin.to_dict()}
        lines.append(f"outliers of W2 at N={N} (eta_t = c_t N^alpha_t): BGN spike locations above the "
                     f"finite-N bulk edge (the edge in brackets)")
        shaky = np.zeros(fin.count.shape, bool) if fin.reliable is None else ~np.asarray(fin.reliable, bool)
        for i, al2 in enumerate(fin.alpha2):
            cells = [(f"{fin.count[i, j]}" if fin.count_low[i, j] == fin.count_high[i, j] else
                      f"{fin.count[i, j]}[{fin.count_low[i, j]}-{fin.count_high[i, j]}]") + f" ({fin.edge[i, j]:.3g})"
                     + ("?" if shaky[i, j] else "") for j in range(fin.alpha1.size)]
            lines.append(f"  alpha2={al2:<6g} " + " ".join(f"{c:>16}" for c in cells))
        if (fin.count_low != fin.count_high).any():
            lines.append("  [low-high]: the count varies from batch to batch (single extreme samples, "
                         "docs/theory/two_step.md §8.3)")
        if shaky.any():
            lines.append("  ?: the prediction marks itself unreliable there; `rmtfl theory two-step --N ...` at that "
                         "point says why (docs/theory/two_step.md §9.3)")
    emp = None
    if empirical:
        try:
            res = _run(exp, grid, args)
        except KeyboardInterrupt:
            return _interrupted(args)
        metric = {"separated": "separated", "edge": "outliers"}[args.count]
        emp = np.array([r.mean.get(metric, np.nan) for r in res.results], float).reshape(a1.size, a2.size).T
        agree = float(np.mean(np.round(emp) == pd.effective)) if np.isfinite(emp).all() else float("nan")
        result["empirical"] = {"count": args.count, "metric": metric, "mean": emp, "agreement": agree,
                               "sweep": {k: v for k, v in res.to_dict().items() if k != "results"}}
        lines += [f"simulated (mean '{metric}' over {args.seeds} seeds, N={N}; rows alpha2):"]
        lines += [f"  alpha2={al2:<6g} " + " ".join(f"{v:>8.3g}" for v in emp[i]) for i, al2 in enumerate(a2)]
        lines += [res.summary() + _failures(res), f"simulated == theory (rounded mean) on {agree:.0%} of the grid"]
    if args.out:
        path = _phase_figure(args, a1, a2, pd, fin, emp)
        result["figure"] = str(path)
        result["written"] = str(write_json(args.out, "phase_diagram.json", result))
        lines.append(f"written: {result['written']}, {path}")
    emit(result, args, "\n".join(lines))
    return 0 if not empirical or res.failed == 0 else 1


def _phase_figure(args, a1, a2, pd, fin, emp):
    """The panels: theory (effective count, fine grid), the finite-N map, the simulation."""
    from pathlib import Path

    import numpy as np

    from rmtfl.compare import save_figure
    from rmtfl.plots import cell_edges, plot_count_map, plot_phase_boundaries
    from rmtfl.sweep import theory_outliers

    from ._common import pyplot

    plt = pyplot()
    # theory on a fine grid over the extent of the cells (inside [0, 1/2))
    e1, e2 = cell_edges(a1), cell_edges(a2)
    fine1 = np.linspace(max(e1[0], 0.0), min(e1[-1], 0.4975), 200)
    fine2 = np.linspace(max(e2[0], 0.0), min(e2[-1], 0.4975), 200)
    fine = theory_outliers(args.activation, args.target, alpha1=fine1, alpha2=fine2, batch=args.batch, phi=args.phi)
    panels = [("theory: Λ restricted to P_k≠0 ({})".format(args.activation), fine1, fine2, fine, False, None, None)]
    if fin is not None:
        spread = fin.count_low != fin.count_high
        shaky = None if fin.reliable is None else ~np.asarray(fin.reliable, bool)
        panels.append((f"theory at N={args.N}: outliers beyond the first"
                       + ("\n(hatched: count varies between batches)" if spread.any() else "")
                       + ("\n(?: the prediction marks itself unreliable)" if shaky is not None and shaky.any() else ""),
                       a1, a2, np.maximum(fin.count - 1, 0), True, spread, shaky))
    if emp is not None:
        panels.append((f"simulated ({args.count} count), N={args.N}, {args.seeds} seeds", a1, a2, emp, True, None,
                       None))
    vmax = float(max(np.nanmax(pd.effective), *[np.nanmax(v) if np.isfinite(v).any() else 0.0
                                                 for _, _, _, v, _, _, _ in panels[1:]], 0.0))
    fig, axes = plt.subplots(1, len(panels), figsize=(4.6 * len(panels), 3.8), squeeze=False)
    for ax, (title, x, y, v, annotate, unc, shaky) in zip(axes[0], panels):
        plot_count_map(x, y, v, ax=ax, vmax=vmax, annotate=annotate, title=title, uncertain=unc, unreliable=shaky)
        plot_phase_boundaries(ax=ax)
    fig.tight_layout()
    settings = {k: v for k, v in vars(args).items() if k not in ("func", "_parser")}
    path = save_figure(fig, Path(args.out) / "phase_diagram.png",
                       {k: (v if isinstance(v, (int, float, str, bool, type(None))) else str(v))
                        for k, v in settings.items()})
    plt.close(fig)
    return path


def register(groups, top) -> None:
    """Add ``rmtfl sweep EXPERIMENT`` and ``rmtfl phase-diagram`` to the top-level parser."""
    from rmtfl.sweep import EXPERIMENTS

    sw = top.add_parser("sweep", help="parameter sweeps: serial, local processes or a Dask cluster",
                        description=SWEEP_DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = sw.add_subparsers(dest="experiment", required=True, metavar="EXPERIMENT")
    for name, exp in EXPERIMENTS.items():
        p = sub.add_parser(name, help=exp.description, parents=[options(
            json=True, seed="root seed shared by all tasks", backend="the tasks")])
        _add_experiment_options(p, exp)
        _add_executor_options(p)
        p.set_defaults(func=_cmd_sweep)

    pd = top.add_parser(
        "phase-diagram", help="the (alpha1, alpha2) map of two steps: theory, finite N, and simulated",
        description=PHASE_DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter,
        parents=[options(json=True, out="phase_diagram.json and phase_diagram.png",
                         seed="root seed of the --empirical tasks (default 0)", seed_default=None,
                         backend="the --empirical tasks")])
    pd.set_defaults(backend=None)
    _axis_flag(pd, "alpha1", "0:0.4:5")
    _axis_flag(pd, "alpha2", "0:0.4:5")
    pd.add_argument("--activation", default=_defaults.ACTIVATION, help=ACTIVATION_HELP)
    pd.add_argument("--target", default=_defaults.TARGET, help=TARGET_HELP)
    pd.add_argument("--batch", default="reused", choices=["reused", "fresh"], help="second batch (default reused)")
    pd.add_argument("--phi", type=float, default=_defaults.PHI, help=f"n/d (default {_defaults.PHI})")
    pd.add_argument("--degree", type=int, default=None, help="polynomial degree L of sigma in Lambda (default: "
                    "sigma's own, none for a non-polynomial sigma)")
    pd.add_argument("--N", type=int, default=None, help="width: the finite-N map (~1 s per point) and the width "
                    "of --empirical")
    pd.add_argument("--psi", type=float, default=None, help=f"N/d, with --N or --empirical (default {_defaults.PSI})")
    pd.add_argument("--c1", type=float, default=None, help="eta1 = c1 N^alpha1, with --N or --empirical (default 1)")
    pd.add_argument("--c2", type=float, default=None, help="eta2 = c2 N^alpha2, with --N or --empirical (default 1)")
    pd.add_argument("--extreme-samples", default=None, choices=["auto", "single", "grouped"],
                    help="with --N: the finite-N map with the batch's most extreme samples each a column of its own "
                         "(single), or as one coupled group counted through the Poisson process (grouped, what the "
                         "default auto does with the reused batch of the map; docs/theory/two_step.md §8.3)")
    pd.add_argument("--empirical", action="store_true", help="also run the two-step sweep at width --N and draw it "
                    "beside the theory")
    pd.add_argument("--count", default=None, choices=["separated", "edge"],
                    help="--empirical count: values split from the bulk by a 25%% relative gap (default), "
                         "or values beyond 1 + sqrt(psi) plus a Tracy-Widom margin")
    pd.add_argument("--dtype", default=None, choices=["float64", "float32"], help="--empirical precision "
                    "(default float64)")
    _add_executor_options(pd, conditional=True)
    pd.set_defaults(func=_cmd_phase)
