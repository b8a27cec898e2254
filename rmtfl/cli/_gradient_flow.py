"""``rmtfl flow kkt|simulate|saddle``: the gradient-flow part on built-in or user data.

::

    rmtfl flow kkt      (--example NAME | --data FILE.npz) [--activation A] [--N N] [--depth L] [--loss S]
                        [--restarts R] [--method auto|search|closed] [--json] [--out DIR]
    rmtfl flow saddle   (--example NAME | --data FILE.npz) [network flags] [--restarts R] [--seed S]
                        [--json] [--out DIR]
    rmtfl flow simulate (--example NAME | --data FILE.npz) [network flags] [--delta D] [--t-end T]
                        [--points P] [--seed S] [--json] [--out DIR]

Data: ``--example NAME`` (:data:`rmtfl.theory.FLOW_EXAMPLES`) or ``--data FILE.npz`` with arrays ``X``
(rows are samples), ``y`` and optionally ``w0`` (packed, docs/conventions.md §9).  The network comes from
the example; ``--activation``, ``--N`` (hidden width), ``--depth`` and ``--loss`` override it (for
``--data`` they default to square / 4 / 2 / square).  Losses are summed.  The initial direction ``w0``
is the example's (or the file's); ``--seed S`` draws a Gaussian one instead (:func:`rmtfl.numerics.random_direction`).
The KKT search is deterministic (docs/theory/gradient_flow.md §3–§5), so ``kkt`` takes no seed.
"""
from __future__ import annotations

import math
from pathlib import Path

from ._common import emit, options, write_json

__all__ = ["register"]

#: Network of a ``--data`` file unless overridden.
DATA_DEFAULTS = {"activation": "square", "N": 4, "depth": 2, "loss": "square"}


def _load(args) -> dict:
    """``{"X", "y", "w0", "escape_loss", "settings"}`` of the example or the file, with the overrides applied."""
    import numpy as np

    from rmtfl.theory import flow_example

    if args.example is not None:
        ex = flow_example(args.example)
        data = {"X": ex.X, "y": ex.y, "w0": ex.w0, "escape_loss": ex.escape_loss, "settings": dict(ex.settings)}
    else:
        path = Path(args.data)
        if not path.is_file():
            raise ValueError(f"--data must be an existing .npz file, got {args.data!r}")
        z = np.load(path, allow_pickle=False)
        if "X" not in z or "y" not in z:
            raise ValueError(f"--data file must contain arrays 'X' and 'y'; it has {sorted(z.files)}")
        data = {"X": z["X"], "y": z["y"], "w0": z["w0"] if "w0" in z else None, "escape_loss": None,
                "settings": dict(DATA_DEFAULTS)}
    for key in DATA_DEFAULTS:
        v = getattr(args, key)
        if v is not None:
            data["settings"][key] = v
    return data


def _w0(data, args, P, *, required: bool):
    """The initial direction: drawn with ``--seed``, else the example's, else drawn with seed 0 (or ``None``)."""
    import numpy as np

    from rmtfl import _defaults
    from rmtfl.numerics import random_direction

    if args.seed is not None:
        return random_direction(P, rng=args.seed)
    if data["w0"] is not None and np.size(data["w0"]) == P:
        return np.asarray(data["w0"], float)
    return random_direction(P, rng=_defaults.SEED) if required else None


def _guard(fn):
    """Run ``fn(args)``; a search that did not converge is reported (exit 1), never shown as a result."""
    def run(args) -> int:
        import sys

        from rmtfl.theory import KKTSearchError, SaddleSearchError

        try:
            return fn(args)
        except (KKTSearchError, SaddleSearchError) as exc:
            print(f"rmtfl flow: not converged: {' '.join(str(exc).split())}", file=sys.stderr)
            return 1
    return run


@_guard
def _cmd_kkt(args) -> int:
    from rmtfl.theory import ncf_kkt

    data = _load(args)
    st = data["settings"]
    r = ncf_kkt(data["X"], data["y"], **st, restarts=args.restarts, method=args.method)
    res = {"settings": st, **r.to_dict()}
    path = write_json(args.out, "flow_kkt.json", res) if args.out else None
    lines = [f"NCF KKT point ({r.architecture}, loss={st['loss']}, sum reduction)",
             f"  N* = {r.value:.10g}   Delta = {r.margin:.6g}   L = {r.degree}   method = {r.method}",
             f"  residual |grad N - L N u| = {r.residual:.2e}   search best = {r.search_value:.10g}",
             "  local maxima found: " + ", ".join(f"{p.value:.6g} ({p.active_units} active, {p.hits} hits)"
                                                 for p in r.all)]
    if not r.smooth:
        lines.append("  note: plain ReLU is outside the theory (gradient not locally Lipschitz)")
    if path:
        lines.append(f"  written: {path}")
    emit(res, args, "\n".join(lines))
    return 0


@_guard
def _cmd_saddle(args) -> int:
    from rmtfl.theory import first_saddle, make_problem

    data = _load(args)
    st = data["settings"]
    pb = make_problem(data["X"], data["y"], **st)
    w0 = _w0(data, args, pb.P, required=False)
    s = first_saddle(data["X"], data["y"], **st, w0=w0, restarts=args.restarts)
    res = {"settings": st, "seed": args.seed, **s.to_dict()}
    path = write_json(args.out, "flow_saddle.json", res) if args.out else None
    text = (f"first saddle = lim p(t) (L = {s.degree}, N* = {s.ncf_value:.8g})\n"
            f"  loss = {s.loss:.10g}   residual |grad L| = {s.residual:.2e}   at infinity = {s.at_infinity}\n"
            f"  active units = {s.active_units}   reached at t = {s.time:.4g} (blowup convention)\n  {s.note}"
            + (f"\n  written: {path}" if path else ""))
    emit(res, args, text)
    return 0


@_guard
def _cmd_simulate(args) -> int:
    from rmtfl.numerics import active_count, find_plateaus, log_time_grid, simulate_flow
    from rmtfl.theory import escape_time, make_problem

    data = _load(args)
    st = data["settings"]
    pb = make_problem(data["X"], data["y"], **st)
    w0 = _w0(data, args, pb.P, required=True)
    delta = args.delta
    pred = escape_time(data["X"], data["y"], **st, delta=delta, w0=w0)
    t_end = args.t_end if args.t_end is not None else (
        3.0 * pred.time if pb.degree > 2 else pred.time + 20.0 * pred.slope)
    thr = data["escape_loss"]
    run = simulate_flow(data["X"], data["y"], **st, delta=delta, w0=w0, t_end=t_end,
                        t_eval=log_time_grid(t_end, n=args.points, t_min=min(1.0, t_end * 1e-6)),
                        escape_loss=thr if thr is not None else pb.loss_at_zero() * 0.75)
    plats = find_plateaus(run.t, run.loss, tol=1e-3)
    res = {"settings": {**st, "delta": delta, "t_end": t_end, "points": args.points, "seed": args.seed,
                        "method": run.method},
           "predicted_escape": pred.time, "measured_escape": run.t_escape,
           "final_loss": float(run.loss[-1]), "initial_loss": float(run.loss[0]),
           "plateaus": plats, "conserved_drift": run.conserved_drift,
           "active_final_rel": int(active_count(run.unit_norms[-1], 1e-2 * run.unit_norms[-1].max())[0]),
           "seconds": run.seconds, "nfev": run.nfev}
    path = write_json(args.out, "flow_simulate.json", {**res, "trajectory": run}) if args.out else None
    if args.out:
        from rmtfl.compare import save_figure
        from rmtfl.plots import plot_unit_norms

        from ._common import pyplot

        plt = pyplot()
        fig, axs = plt.subplots(1, 2, figsize=(10, 4))
        axs[0].plot(run.t, run.loss)
        axs[0].set_xscale("symlog", linthresh=1.0)
        axs[0].set_xlabel("t")
        axs[0].set_ylabel("loss (sum)")
        if math.isfinite(pred.time):
            axs[0].axvline(pred.time, color="k", ls="--", lw=0.8, label="predicted escape")
            axs[0].legend(fontsize=8)
        plot_unit_norms(run.t, run.unit_norms, ax=axs[1], delta=delta, t_escape=run.t_escape)
        save_figure(fig, Path(args.out) / "flow_simulate.png", res["settings"])
        plt.close(fig)
    text = (f"gradient flow ({pb.arch.describe()}, L = {pb.degree}, delta = {delta:g}, {run.method})\n"
            f"  escape: measured {run.t_escape:.6g}, predicted {pred.time:.6g}"
            + (" (L = 2: up to an O(1) offset)" if pb.degree == 2 else "") + "\n"
            f"  loss {run.loss[0]:.6g} -> {run.loss[-1]:.6g}; plateaus (t0, t1, level): "
            + "; ".join(f"({a:.4g}, {b:.4g}, {c:.6g})" for a, b, c in plats) + "\n"
            f"  conservation drift {run.conserved_drift:.2e}; {run.nfev} gradient evaluations, {run.seconds:.2f} s"
            + (f"\n  written: {path}" if path else ""))
    emit(res, args, text)
    return 0


def register(groups, top) -> None:
    """Add ``rmtfl flow {kkt,simulate,saddle}``."""
    from rmtfl.theory import FLOW_EXAMPLES

    p = top.add_parser("flow", help="gradient flow of homogeneous nets from small initialisation")
    sub = p.add_subparsers(dest="what", required=True, metavar="WHAT")
    seed_help = ("draw the initial direction w0 ~ N(0, I)/|.| with this seed (default: the example's or the "
                 "file's w0")

    def command(name, help_, out, seed=None):
        q = sub.add_parser(name, help=help_, parents=[options(json=True, out=out, seed=seed, seed_default=None)])
        g = q.add_mutually_exclusive_group(required=True)
        g.add_argument("--example", default=None, choices=list(FLOW_EXAMPLES), help="built-in data set")
        g.add_argument("--data", default=None, help="FILE.npz with X (n x d), y (n,), optional w0")
        q.add_argument("--activation", default=None, help="identity, square, relu, relu^p, quadratic "
                       "(default: the example's; square for --data)")
        q.add_argument("--N", type=int, default=None, help="hidden width (default: the example's; 4 for --data)")
        q.add_argument("--depth", type=int, default=None, help="weight layers, 2 = two-layer (default: the "
                       "example's; 2 for --data)")
        q.add_argument("--loss", default=None, choices=["square", "logistic"],
                       help="summed loss (default: the example's; square for --data)")
        return q

    k = command("kkt", "maximal KKT point of the constrained NCF (deterministic search)", "flow_kkt.json")
    k.add_argument("--restarts", type=int, default=20, help="starting points of the search (default 20)")
    k.add_argument("--method", default="auto", choices=["auto", "search", "closed"], help="default auto")
    k.set_defaults(func=_cmd_kkt)

    s = command("simulate", "simulate the flow from delta*w0 and compare the escape time",
                "flow_simulate.json and flow_simulate.png", seed=seed_help + "; seed 0 when there is none)")
    s.add_argument("--delta", type=float, default=1e-3, help="initial scale delta > 0 (default 1e-3)")
    s.add_argument("--t-end", type=float, default=None, help="horizon (default from the predicted escape)")
    s.add_argument("--points", type=int, default=300, help="output grid size, log-spaced (default 300)")
    s.set_defaults(func=_cmd_simulate)

    q = command("saddle", "first saddle = lim p(t)", "flow_saddle.json",
                seed=seed_help + "; the selected KKT direction when there is none)")
    q.add_argument("--restarts", type=int, default=20, help="starting points of the KKT search (default 20)")
    q.set_defaults(func=_cmd_saddle)
