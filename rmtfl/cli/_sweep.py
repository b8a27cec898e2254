"""CLI of the sweep part: ``rmtfl sweep EXPERIMENT ...`` and ``rmtfl phase-diagram``.

::

    rmtfl sweep two-step --alpha1 0:0.45:6 --alpha2 0:0.45:6 --N 800 --seeds 4 \\
        --store sweep.sqlite [--workers W | --scheduler tcp://HOST:PORT] [--backend cupy] [--json]
    rmtfl sweep one-step --eta 0:4:9 ...     rmtfl sweep bbp --theta 0:3:7 ...
    rmtfl phase-diagram [--empirical] --alpha1 ... --alpha2 ... --out DIR [...]

Axes take ``LO:HI:COUNT`` (inclusive linspace), ``a,b,c`` or a number; the
other parameters of the experiment are options with their defaults.
``--workers 0`` runs serially, ``--workers W`` on a local cluster of ``W``
one-thread processes (default: one per CPU), ``--scheduler`` on a running Dask
cluster.  The store (default ``sweep.sqlite``) is reused: a rerun computes only
the missing tasks.  Ctrl-C keeps every finished task (exit status 130).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

__all__ = ["register"]


def _add_executor_options(p) -> None:
    p.add_argument("--seeds", type=int, default=4, help="seeds per grid point (indices 0..S-1; default 4)")
    p.add_argument("--store", default="sweep.sqlite", help="SQLite result store (default sweep.sqlite)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--workers", type=int, default=None,
                   help="0 = serial; W = local cluster of W one-thread processes (default: one per CPU)")
    g.add_argument("--scheduler", default=None, help="address of a running Dask scheduler, tcp://HOST:PORT")
    p.add_argument("--backend", default="numpy", choices=["numpy", "cupy"], help="array backend of the tasks")
    p.add_argument("--root-seed", type=int, default=0, help="root entropy shared by all tasks (default 0)")
    p.add_argument("--retries", type=int, default=2, help="resubmissions of a task whose worker died")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--json", action="store_true", help="print the JSON summary")


def _add_experiment_options(p, exp, *, axis_help: str = "LO:HI:COUNT, a,b,c or a number") -> None:
    for name, default in exp.axes.items():
        p.add_argument(f"--{name}", default=default, metavar="SPEC", help=f"axis ({axis_help}; default {default})")
    for name, default in exp.fixed.items():
        kind = type(default) if isinstance(default, (int, float, str)) else str
        p.add_argument(f"--{name}", type=kind, default=default, help=f"default {default}")


def _grid(exp, args):
    from rmtfl.sweep import product_grid

    axes = {n: getattr(args, n) for n in exp.axes}
    fixed = {n: getattr(args, n) for n in exp.fixed}
    return product_grid(axes, fixed=fixed)


def _run(exp, args):
    from rmtfl.sweep import run_sweep

    grid = _grid(exp, args)
    if args.seeds < 1:
        raise ValueError(f"--seeds must be >= 1, got {args.seeds}")
    if args.workers is not None and args.workers < 0:
        raise ValueError(f"--workers must be >= 0, got {args.workers}")
    if args.backend == "cupy":
        from rmtfl.numerics import get_backend

        if args.scheduler is None:  # on a remote cluster the workers need the GPU, not the driver
            get_backend("cupy")
    return grid, run_sweep(exp, grid, args.seeds, store=args.store, workers=args.workers,
                           scheduler=args.scheduler, root_seed=args.root_seed, backend=args.backend,
                           retries=args.retries, progress=not args.no_progress)


def _table(exp, res) -> str:
    swept = list(exp.axes)
    metrics = list(exp.metrics)
    head = "  ".join(f"{c:>10}" for c in swept + ["n"] + metrics)
    lines = [head]
    for r in res.results:
        vals = [f"{r['params'][c]:>10.4g}" for c in swept] + [f"{r['n']:>10d}"]
        vals += [f"{r['mean'].get(m, float('nan')):>10.4g}" for m in metrics]
        lines.append("  ".join(vals))
    return "\n".join(lines)


def _cmd_sweep(args) -> int:
    from rmtfl.cli._main import emit
    from rmtfl.sweep import EXPERIMENTS, get_experiment

    exp = get_experiment(args.experiment)
    try:
        _, res = _run(exp, args)
    except KeyboardInterrupt:
        print(f"\ninterrupted: finished tasks are kept in {args.store}; rerun the same command to resume",
              file=sys.stderr)
        return 130
    out = res.to_dict()
    out["experiments"] = {n: e.description for n, e in EXPERIMENTS.items()}
    text = _table(exp, res) + "\n" + res.summary()
    if res.failures:
        text += "\nfailures:\n" + "\n".join(f"  {f['params']} seed {f['seed_index']}: {f['error']}"
                                              for f in res.failures[:10])
    emit(out, args, text)
    return 0 if res.failed == 0 else 1


def _cmd_phase(args) -> int:
    import numpy as np

    from rmtfl.cli._main import emit
    from rmtfl.compare._figures import save_figure, use_agg
    from rmtfl.sweep import get_experiment, parse_axis, theory_outliers

    use_agg()
    import matplotlib.pyplot as plt

    from rmtfl.plots._sweep import plot_phase_boundaries, plot_phase_map

    exp = get_experiment("two-step")
    a1 = np.array(parse_axis("alpha1", args.alpha1), float)
    a2 = np.array(parse_axis("alpha2", args.alpha2), float)
    for name, v in (("alpha1", a1), ("alpha2", a2)):
        if np.any((v < 0) | (v >= 0.5)):
            raise ValueError(f"{name} values must lie in [0, 0.5), got {v.tolist()}")
    from rmtfl.plots._sweep import _edges

    # theory on a fine grid over the same extent as the empirical cells (inside [0, 1/2))
    e1, e2 = _edges(a1), _edges(a2)
    fine1 = np.linspace(max(e1[0], 0.0), min(e1[-1], 0.4975), 200)
    fine2 = np.linspace(max(e2[0], 0.0), min(e2[-1], 0.4975), 200)
    kw = {"activation": args.activation, "target": args.target, "batch": args.batch, "phi": args.phi}
    theory_fine = theory_outliers(fine1, fine2, **kw)
    theory_grid = np.asarray(theory_outliers(a1, a2, **kw), float)
    metric = {"separated": "separated", "edge": "outliers"}[args.count]
    result = {"activation": args.activation, "target": args.target, "batch": args.batch, "count": args.count,
              "alpha1": a1.tolist(), "alpha2": a2.tolist(), "theory": theory_grid.tolist()}
    panels = 2 if args.empirical else 1
    fig, axes = plt.subplots(1, panels, figsize=(4.6 * panels, 3.8), squeeze=False)
    vmax = float(np.nanmax(theory_grid))   # the fine map saturates (colour bar extends) beyond it
    text = ""
    if args.empirical:
        try:
            grid, res = _run(exp, args)
        except KeyboardInterrupt:
            print(f"\ninterrupted: finished tasks are kept in {args.store}; rerun to resume", file=sys.stderr)
            plt.close(fig)
            return 130
        emp = np.array([r["mean"].get(metric, np.nan) for r in res.results], float).reshape(a1.size, a2.size)
        vmax = max(vmax, float(np.nanmax(emp)) if np.isfinite(emp).any() else 0.0)
        agree = float(np.mean(np.round(emp) == theory_grid)) if np.isfinite(emp).all() else float("nan")
        result.update({"empirical": emp.tolist(), "agreement": agree, **{k: v for k, v in res.to_dict().items()
                                                                            if k != "results"}})
        plot_phase_map(a1, a2, emp, ax=axes[0, 1], vmax=vmax, annotate=True,
                       title=f"empirical ({args.count} count), N={args.N}, {args.seeds} seeds")
        plot_phase_boundaries(axes[0, 1])
        text = res.summary() + f"\nempirical == theory (rounded mean) on {agree:.0%} of the grid"
    plot_phase_map(fine1, fine2, theory_fine, ax=axes[0, 0], vmax=vmax,
                   title=f"theory: Λ restricted to P_k≠0 ({args.activation})")
    plot_phase_boundaries(axes[0, 0])
    fig.tight_layout()
    path = save_figure(fig, Path(args.out) / "phase_diagram.png",
                       {k: (v if isinstance(v, (int, float, str, bool, type(None))) else str(v))
                        for k, v in vars(args).items() if k != "func"})
    plt.close(fig)
    result["figure"] = str(path)
    from rmtfl.sweep._engine import _json_clean

    emit(_json_clean(result), args, (text + "\n" if text else "") + f"figure: {path}")
    return 0


def register(groups, top) -> None:
    """Add ``rmtfl sweep EXPERIMENT`` and ``rmtfl phase-diagram`` to the top-level parser."""
    from rmtfl.sweep import EXPERIMENTS

    sw = top.add_parser("sweep", help="parameter sweeps: serial, local processes or a Dask cluster",
                        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = sw.add_subparsers(dest="experiment", required=True, metavar="EXPERIMENT")
    for name, exp in EXPERIMENTS.items():
        p = sub.add_parser(name, help=exp.description)
        _add_experiment_options(p, exp)
        _add_executor_options(p)
        p.set_defaults(func=_cmd_sweep)

    exp = EXPERIMENTS["two-step"]
    pd = top.add_parser("phase-diagram", help="theoretical (and --empirical) two-step outlier-count map")
    pd.add_argument("--empirical", action="store_true", help="also run the two-step sweep and draw it beside")
    pd.add_argument("--out", default="rmtfl-out", help="output folder (default ./rmtfl-out)")
    pd.add_argument("--count", default="separated", choices=["separated", "edge"],
                    help="empirical count: values split from the bulk by a 25%% relative gap (default), "
                         "or values beyond 1 + sqrt(psi) plus a Tracy-Widom margin")
    _add_experiment_options(pd, exp)
    _add_executor_options(pd)
    pd.set_defaults(func=_cmd_phase)
