"""``rmtfl flow kkt|simulate|saddle``: the gradient-flow part on built-in or user data.

Data: ``--example NAME`` (see :mod:`rmtfl.theory._gradient_flow.examples`) or ``--data FILE.npz``
with arrays ``X`` (rows are samples), ``y`` and optionally ``w0`` (packed, conventions
docs/theory/gradient_flow.md §9); ``--activation``, ``--width``, ``--depth``, ``--loss`` override the example's
settings (for ``--data`` they default to square / 4 / 2 / square).  Losses are summed.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

__all__ = ["register"]


def _load(args) -> dict:
    from rmtfl.theory._gradient_flow.examples import FLOW_EXAMPLES, flow_example

    if (args.example is None) == (args.data is None):
        raise ValueError(f"give exactly one of --example ({', '.join(FLOW_EXAMPLES)}) or --data FILE.npz")
    if args.example is not None:
        ex = flow_example(args.example)
    else:
        path = Path(args.data)
        if not path.is_file():
            raise ValueError(f"--data must be an existing .npz file, got {args.data!r}")
        z = np.load(path, allow_pickle=False)
        if "X" not in z or "y" not in z:
            raise ValueError(f"--data file must contain arrays 'X' and 'y'; it has {sorted(z.files)}")
        ex = {"X": z["X"], "y": z["y"], "w0": z["w0"] if "w0" in z else None, "activation": "square",
              "width": 4, "depth": 2, "loss": "square"}
    for key in ("activation", "width", "depth", "loss"):
        v = getattr(args, key)
        if v is not None:
            ex[key] = v
    return ex


def _kw(ex):
    return dict(activation=ex["activation"], width=ex["width"], depth=ex["depth"], loss=ex["loss"])


def _w0(ex, args, P):
    if ex.get("w0") is not None and len(ex["w0"]) == P and args.w0_seed is None:
        return np.asarray(ex["w0"], float)
    v = np.random.default_rng(args.w0_seed if args.w0_seed is not None else args.seed).standard_normal(P)
    return v / np.linalg.norm(v)


def _write(args, name, payload) -> Path | None:
    if not args.out:
        return None
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{name}.json"
    from rmtfl.compare import to_jsonable

    path.write_text(json.dumps(payload, indent=2, default=to_jsonable))
    return path


def _guard(fn, args) -> int:
    """Run ``fn``; a search that did not converge is reported (exit 1), never shown as a result."""
    import sys

    from rmtfl.theory import KKTSearchError
    from rmtfl.theory import SaddleSearchError

    try:
        return fn(args)
    except (KKTSearchError, SaddleSearchError) as exc:
        print(f"rmtfl flow: not converged: {exc}", file=sys.stderr)
        return 1


def _cmd_kkt(args) -> int:
    return _guard(_cmd_kkt_impl, args)


def _cmd_kkt_impl(args) -> int:
    from rmtfl.cli._main import emit
    from rmtfl.theory import ncf_kkt

    ex = _load(args)
    r = ncf_kkt(ex["X"], ex["y"], restarts=args.restarts, rng=args.seed, method=args.method, **_kw(ex))
    res = {"settings": {k: ex[k] for k in ("activation", "width", "depth", "loss")}, **r.to_dict()}
    path = _write(args, "flow_kkt", res)
    lines = [f"NCF KKT point ({r.architecture}, loss={ex['loss']}, sum reduction)",
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


def _cmd_saddle(args) -> int:
    return _guard(_cmd_saddle_impl, args)


def _cmd_saddle_impl(args) -> int:
    from rmtfl.cli._main import emit
    from rmtfl.theory import first_saddle
    from rmtfl.theory import make_problem

    ex = _load(args)
    pb = make_problem(ex["X"], ex["y"], **_kw(ex))
    w0 = _w0(ex, args, pb.P) if (ex.get("w0") is not None or args.w0_seed is not None) else None
    s = first_saddle(ex["X"], ex["y"], rng=args.seed, w0=w0, **_kw(ex))
    res = {"settings": {k: ex[k] for k in ("activation", "width", "depth", "loss")}, **s.to_dict()}
    path = _write(args, "flow_saddle", res)
    text = (f"first saddle = lim p(t) (L = {s.degree}, N* = {s.ncf_value:.8g})\n"
            f"  loss = {s.loss:.10g}   residual |grad L| = {s.residual:.2e}   at infinity = {s.at_infinity}\n"
            f"  active units = {s.active_units}   reached at t = {s.time:.4g} (blowup convention)\n  {s.note}"
            + (f"\n  written: {path}" if path else ""))
    emit(res, args, text)
    return 0


def _cmd_simulate(args) -> int:
    return _guard(_cmd_simulate_impl, args)


def _cmd_simulate_impl(args) -> int:
    from rmtfl.cli._main import emit
    from rmtfl.numerics._gradient_flow.flow import active_count, find_plateaus, log_time_grid, simulate_flow
    from rmtfl.theory import escape_time
    from rmtfl.theory import make_problem

    ex = _load(args)
    kw = _kw(ex)
    pb = make_problem(ex["X"], ex["y"], **kw)
    w0 = _w0(ex, args, pb.P)
    delta = args.delta
    pred = escape_time(ex["X"], ex["y"], delta=delta, w0=w0, **kw)
    t_end = args.t_end if args.t_end is not None else (
        3.0 * pred.time if pb.degree > 2 else pred.time + 20.0 * pred.slope)
    thr = ex.get("escape_loss")
    run = simulate_flow(ex["X"], ex["y"], delta=delta, w0=w0, t_end=t_end,
                        t_eval=log_time_grid(t_end, args.points, t_min=min(1.0, t_end * 1e-6)),
                        escape_loss=thr if thr is not None else pb.loss_at_zero() * 0.75, **kw)
    plats = find_plateaus(run.t, run.loss, 1e-3)
    res = {"settings": {**{k: ex[k] for k in ("activation", "width", "depth", "loss")}, "delta": delta,
                        "t_end": t_end, "method": run.method},
           "predicted_escape": pred.time, "measured_escape": run.t_escape,
           "final_loss": float(run.loss[-1]), "initial_loss": float(run.loss[0]),
           "plateaus": plats, "conserved_drift": run.conserved_drift,
           "active_final_rel": int(active_count(run.unit_norms[-1], 1e-2 * run.unit_norms[-1].max())[0]),
           "seconds": run.seconds, "nfev": run.nfev}
    path = _write(args, "flow_simulate", {**res, "trajectory": run.to_dict()})
    if args.out:
        import matplotlib.pyplot as plt

        from rmtfl.compare._figures import save_figure, use_agg
        from rmtfl.plots._gradient_flow import plot_unit_norms

        use_agg()
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
    from rmtfl.theory._gradient_flow.examples import FLOW_EXAMPLES

    p = top.add_parser("flow", help="gradient flow of homogeneous nets from small initialisation")
    sub = p.add_subparsers(dest="what", required=True, metavar="WHAT")

    def common(q):
        q.add_argument("--example", default=None, choices=list(FLOW_EXAMPLES), help="built-in data set")
        q.add_argument("--data", default=None, help="FILE.npz with X (n x d), y (n,), optional w0")
        q.add_argument("--activation", default=None, help="identity, square, relu, relu^p, quadratic")
        q.add_argument("--width", type=int, default=None, help="hidden width h")
        q.add_argument("--depth", type=int, default=None, help="weight layers (2 = two-layer)")
        q.add_argument("--loss", default=None, choices=["square", "logistic"])
        q.add_argument("--seed", type=int, default=0, help="seed of the KKT restarts / random w0")
        q.add_argument("--w0-seed", type=int, default=None, help="draw a Gaussian w0 with this seed")
        q.add_argument("--json", action="store_true", help="print JSON")
        q.add_argument("--out", default=None, help="folder for JSON (and figures)")

    k = sub.add_parser("kkt", help="maximal KKT point of the constrained NCF")
    common(k)
    k.add_argument("--restarts", type=int, default=20)
    k.add_argument("--method", default="auto", choices=["auto", "search", "closed"])
    k.set_defaults(func=_cmd_kkt)
    s = sub.add_parser("simulate", help="simulate the flow from delta*w0 and compare the escape time")
    common(s)
    s.add_argument("--delta", type=float, default=1e-3, help="initial scale delta > 0")
    s.add_argument("--t-end", type=float, default=None, help="horizon (default from the predicted escape)")
    s.add_argument("--points", type=int, default=300, help="output grid size (log-spaced)")
    s.set_defaults(func=_cmd_simulate)
    q = sub.add_parser("saddle", help="first saddle = lim p(t)")
    common(q)
    q.set_defaults(func=_cmd_saddle)
