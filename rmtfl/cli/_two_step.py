"""CLI subcommands of the two-step part.

::

    rmtfl theory one-step --activation A --target T [T ...] --psi P --phi F --eta E [--noise S] [--json]
    rmtfl theory two-step --activation A --target T [T ...] --psi P --phi F --eta1 E1 --eta2 E2
                          [--batch reused|fresh] [--phi2 F2] [--N N] [--mode M] [--seed S] [--json]
    rmtfl theory phase-diagram --alpha1 A [A ...] --alpha2 A [A ...] [--activation A] [--target T] [--N N]
                               [--degree L] [--batch B] [--json]
    rmtfl simulate two-step --activation A --target T [T ...] --N N --d D --n n --eta1 E1 --eta2 E2
                            [--batch B] [--n2 n2] [--k K] [--dtype D] [--backend B] [--seed S]
                            [--json] [--out DIR]

Conventions (docs/conventions.md §3–§5): ``W0`` entries ``N(0, 1/d)``, ``a ~ N(0, I/N)``,
correlation-loss steps ``W_t = W_{t-1} + eta_t G``, ``psi = N/d``, ``phi = n/d``.
Several ``--target`` values make a multi-index target; a target may be a name
(linear, tanh, relu, he2, he3n, ...) or ``hermite(a0, a1, ...)``.  Step sizes are
numbers; ``--alpha1/--alpha2`` with ``--c1/--c2`` and ``--N`` give ``eta = c N^alpha``.
"""
from __future__ import annotations

from pathlib import Path

__all__ = ["register"]


def _target(args):
    from rmtfl.theory import make_target

    spec = args.target if len(args.target) > 1 else args.target[0]
    return make_target(spec, noise=args.noise)


def _etas(args, N):
    from rmtfl.theory import step_size

    out = []
    for t in (1, 2):
        eta, alpha, c = getattr(args, f"eta{t}"), getattr(args, f"alpha{t}", None), getattr(args, f"c{t}")
        if eta is None:
            if alpha is None or N is None:
                raise ValueError(f"give --eta{t}, or --alpha{t} (in [0, 0.5)) together with --N")
            from rmtfl._validate import check_alpha

            eta = step_size(c, N, check_alpha(f"alpha{t}", alpha))
        out.append(eta)
    return out


def _cmd_one_step(args) -> int:
    from rmtfl.cli._main import emit
    from rmtfl.theory import one_step

    p = one_step(args.activation, _target(args), args.psi, args.phi, args.eta)
    res = {"activation": args.activation, "target": args.target, "psi": args.psi, "phi": args.phi,
           "eta": args.eta, "noise": args.noise, **p.__dict__}
    text = "\n".join([
        f"one step: sigma={args.activation}, target={' + '.join(args.target)}, psi={args.psi:g}, "
        f"phi={args.phi:g}, eta={args.eta:g}",
        f"  spike strength theta      : {p.theta:.6f}   (BBP threshold eta_c = {p.threshold:.6f})",
        f"  top singular value of W1  : {p.singular_value:.6f}   (bulk edge {p.bulk_edge:.6f})",
        f"  cos^2(v1, beta*)          : {p.cos2_target:.6f}",
        f"  cos^2(u1, a)              : {p.cos2_second_layer:.6f}",
    ])
    emit(res, args, text)
    return 0


def _cmd_two_step(args) -> int:
    from rmtfl.cli._main import emit
    from rmtfl.theory import two_step

    e1, e2 = _etas(args, args.N)
    p = two_step(args.activation, _target(args), args.psi, args.phi, e1, e2, batch=args.batch, phi2=args.phi2,
                 N=args.N, mode=args.mode, rng=args.seed)
    lam = p.outlier_count
    res = {"activation": args.activation, "target": args.target, "psi": args.psi, "phi": args.phi,
           "phi2": args.phi2, "eta1": e1, "eta2": e2, "batch": args.batch, "N": args.N, "mode": p.mode,
           "K": p.K, "bulk_edge": p.bulk_edge, "spikes": list(p.spikes),
           "outliers": [o.__dict__ for o in p.outliers], "notes": list(p.notes),
           "Lambda": None if lam is None else {"count": int(lam.count), "critical": bool(lam.critical)}}
    lines = [f"two steps ({args.batch}): sigma={args.activation}, target={' + '.join(args.target)}, "
             f"eta1={e1:.6g}, eta2={e2:.6g}, N={args.N}, mode={p.mode}, K={p.K}",
             "  singular values of P: " + ", ".join(f"{s:.6g}" for s in p.spikes),
             f"  bulk edge: {p.bulk_edge:.6f}"]
    for i, o in enumerate(p.outliers, 1):
        lines.append(f"  outlier {i}: s = {o.singular_value:.6f}, cos^2 target = {o.cos2_target:.6f}, "
                     f"cos^2 a = {o.cos2_second_layer:.6f}")
    if not p.outliers:
        lines.append("  no outlier above the bulk edge")
    emit(res, args, "\n".join(lines))
    return 0


def _cmd_phase(args) -> int:
    from rmtfl.cli._main import emit
    from rmtfl.theory import phase_diagram

    pd = phase_diagram(args.alpha1, args.alpha2, activation=args.activation, target=args.target,
                       degree=args.degree, batch=args.batch)
    res = pd.to_dict()
    lines = [f"Lambda (rows alpha2, columns alpha1 = {pd.alpha1.tolist()}), '*' = critical line, "
             f"'L' = learnable (information exponent > 1), k_min = {pd.k_min}"]
    for i, a2 in enumerate(pd.alpha2):
        cells = [f"{pd.Lambda[i, j]}{'*' if pd.critical[i, j] else ''}{'L' if pd.learnable[i, j] else ''}"
                 for j in range(pd.alpha1.size)]
        lines.append(f"  alpha2={a2:<6g} " + " ".join(f"{c:>4}" for c in cells))
    if args.N is not None:  # the map one sees at this width (quadratic sigma, reused batch)
        from rmtfl.theory import finite_n_outlier_map

        act = args.activation or "hermite(0, 1, 0.5)"
        fin = finite_n_outlier_map(args.alpha1, args.alpha2, target=args.target, N=args.N, psi=args.psi,
                                   phi=args.phi, c1=args.c1, c2=args.c2, activation=act)
        res["finite_N"] = {"N": args.N, "activation": act, "count": fin["count"].tolist(),
                           "bulk_edge": fin["edge"].tolist(), "outliers": fin["outliers"]}
        lines.append(f"outliers of W2 at N={args.N} (sigma={act}, eta_t = c_t N^alpha_t): BGN spike locations "
                     f"above the finite-N bulk edge (the edge in brackets)")
        for i, a2 in enumerate(fin["alpha2"]):
            cells = [f"{fin['count'][i, j]} ({fin['edge'][i, j]:.3g})" for j in range(fin["alpha1"].size)]
            lines.append(f"  alpha2={a2:<6g} " + " ".join(f"{c:>11}" for c in cells))
    emit(res, args, "\n".join(lines))
    return 0


def _cmd_simulate(args) -> int:
    from rmtfl.cli._main import emit
    from rmtfl.numerics import simulate_two_step

    e1, e2 = _etas(args, args.N)
    r = simulate_two_step(activation=args.activation, target=_target(args), N=args.N, d=args.d, n=args.n,
                          eta1=e1, eta2=e2, batch=args.batch, n2=args.n2, rng=args.seed, k=args.k,
                          dtype=args.dtype, backend=args.backend)
    res = r.to_dict()
    if args.out:
        import json

        from rmtfl.compare._figures import save_figure, use_agg

        use_agg()
        import matplotlib.pyplot as plt

        from rmtfl.plots._two_step import plot_spectrum

        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "two_step_simulation.json").write_text(json.dumps(res, indent=2))
        fig, ax = plt.subplots(figsize=(6, 4))
        plot_spectrum(r.singular_values, args.N / args.d, ax=ax,
                      title=f"W2 ({args.batch}), N={args.N}, d={args.d}, n={args.n}")
        res["figure"] = str(save_figure(fig, out / "two_step_spectrum.png", r.params))
        plt.close(fig)
    s = r.singular_values
    lines = [f"simulated two steps ({args.batch}), N={args.N}, d={args.d}, n={args.n}, eta=({e1:.6g}, {e2:.6g})",
             "  top singular values: " + ", ".join(f"{v:.6f}" for v in s[:6]),
             f"  outliers beyond edge {r.edge:.4f}: {r.outlier_count} (complete: {r.complete})",
             "  cos^2(v_i, beta*_r): " + "; ".join(", ".join(f"{c:.4f}" for c in row) for row in r.cos2_target[:3]),
             "  cos^2(u_i, a):      " + ", ".join(f"{c:.4f}" for c in r.cos2_a_powers[:3, 0])]
    if "figure" in res:
        lines.append(f"  figure: {res['figure']}")
    emit(res, args, "\n".join(lines))
    return 0


def _common(p, eta_names):
    p.add_argument("--activation", default="tanh", help="sigma (default tanh)")
    p.add_argument("--target", nargs="+", default=["linear"], help="link(s); several make a multi-index target")
    p.add_argument("--noise", type=float, default=0.0, help="label-noise standard deviation")
    p.add_argument("--json", action="store_true", help="print JSON")
    for t in eta_names:
        p.add_argument(f"--eta{t}", type=float, default=None, help=f"step size eta{t}")
        p.add_argument(f"--alpha{t}", type=float, default=None, help=f"exponent: eta{t} = c{t} N^alpha{t}")
        p.add_argument(f"--c{t}", type=float, default=1.0, help=f"prefactor c{t} (default 1)")


def register(groups, top) -> None:
    """Add ``theory one-step|two-step|phase-diagram`` and ``simulate two-step``."""
    th, sim = groups["theory"], groups["simulate"]

    p = th.add_parser("one-step", help="one large step: spike, top singular value, alignments, threshold")
    p.add_argument("--activation", default="tanh")
    p.add_argument("--target", nargs="+", default=["linear"])
    p.add_argument("--noise", type=float, default=0.0)
    p.add_argument("--psi", type=float, default=1.0, help="N/d")
    p.add_argument("--phi", type=float, default=2.0, help="n/d")
    p.add_argument("--eta", type=float, required=True)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_cmd_one_step)

    p = th.add_parser("two-step", help="two large steps: outliers of W2 and their alignments")
    _common(p, (1, 2))
    p.add_argument("--psi", type=float, default=1.0, help="N/d")
    p.add_argument("--phi", type=float, default=2.0, help="n/d (first batch)")
    p.add_argument("--phi2", type=float, default=None, help="n2/d of the fresh batch (required for fresh)")
    p.add_argument("--batch", default="reused", choices=["reused", "fresh"])
    p.add_argument("--N", type=int, default=None, help="width (keeps the N^-k/2 terms; default: the limit)")
    p.add_argument("--mode", default="auto", choices=["auto", "analytic", "semi-analytic"])
    p.add_argument("--seed", type=int, default=None, help="seed of the semi-analytic mode")
    p.set_defaults(func=_cmd_two_step)

    p = th.add_parser("phase-diagram", help="Lambda(alpha1, alpha2) and where IE>1 directions are learnable")
    p.add_argument("--alpha1", type=float, nargs="+", default=[0.0, 0.1, 0.2, 0.3, 0.4])
    p.add_argument("--alpha2", type=float, nargs="+", default=[0.0, 0.1, 0.2, 0.3, 0.4])
    p.add_argument("--activation", default=None, help="sigma (default: generic non-polynomial)")
    p.add_argument("--target", default="he3n")
    p.add_argument("--degree", type=int, default=None, help="polynomial degree L of sigma")
    p.add_argument("--batch", default="reused", choices=["reused", "fresh"])
    p.add_argument("--N", type=int, default=None,
                   help="also the finite-N map at this width (sigma = c0 + He1 + c2 He2, reused; ~1 s per point)")
    p.add_argument("--psi", type=float, default=1.0, help="N/d for --N (default 1)")
    p.add_argument("--phi", type=float, default=2.0, help="n/d for --N (default 2)")
    p.add_argument("--c1", type=float, default=1.0, help="eta1 = c1 N^alpha1 for --N")
    p.add_argument("--c2", type=float, default=1.0, help="eta2 = c2 N^alpha2 for --N")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_cmd_phase)

    p = sim.add_parser("two-step", help="sample two steps and measure the spectrum and alignments of W2")
    _common(p, (1, 2))
    p.add_argument("--N", type=int, required=True)
    p.add_argument("--d", type=int, required=True)
    p.add_argument("--n", type=int, required=True, help="first-batch size")
    p.add_argument("--n2", type=int, default=None, help="fresh second-batch size (required for fresh)")
    p.add_argument("--batch", default="reused", choices=["reused", "fresh"])
    p.add_argument("--k", type=int, default=None, help="only the top k singular values")
    p.add_argument("--dtype", default="float64", choices=["float64", "float32"])
    p.add_argument("--backend", default="numpy", choices=["numpy", "cupy"])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default=None, help="write JSON and a spectrum figure here")
    p.set_defaults(func=_cmd_simulate)
