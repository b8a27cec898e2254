"""CLI subcommands of the two-step part.

::

    rmtfl theory one-step [--activation A] [--target T [T ...]] [--noise S] [--psi P] [--phi F] --eta E [--json]
    rmtfl theory two-step [--activation A] [--target T [T ...]] [--noise S] [--psi P] [--phi F]
                          (--eta1 E1 | --alpha1 A1 [--c1 C1]) (--eta2 E2 | --alpha2 A2 [--c2 C2])
                          [--batch reused|fresh] [--phi2 F2] [--N N] [--json]
    rmtfl simulate two-step [--activation A] [--target T [T ...]] [--noise S] --N N --d D --n n
                            (--eta1 E1 | --alpha1 A1 [--c1 C1]) (--eta2 E2 | --alpha2 A2 [--c2 C2])
                            [--batch B] [--n2 n2] [--k K] [--dtype D] [--seed S] [--backend B]
                            [--json] [--out DIR]

The phase diagram over ``(alpha1, alpha2)`` is ``rmtfl phase-diagram`` (:mod:`rmtfl.cli._sweep`).

Conventions (docs/conventions.md §3–§5): ``W0`` entries ``N(0, 1/d)``, ``a ~ N(0, I/N)``,
correlation-loss steps ``W_t = W_{t-1} + eta_t G``, ``psi = N/d``, ``phi = n/d``.  Several
``--target`` values make a multi-index target; a target may be a name (linear, tanh, relu, he2,
he3n, ...) or ``hermite(a0, a1, ...)``.  Step sizes are numbers (``--eta1``), or exponents
``--alpha1`` in ``[0, 1/2)`` with prefactors ``--c1`` and the width ``--N``:
``eta = c N^alpha`` (docs/conventions.md §5).
"""
from __future__ import annotations

from rmtfl import _defaults

from ._common import (ACTIVATION_HELP, TARGET_HELP, default_note, emit, only_with, options, pyplot, usage_error,
                      write_json)

__all__ = ["register", "add_model_flags", "add_step_flags", "step_sizes", "target_spec"]


def target_spec(args):
    """The ``--target`` value(s): one link, or a list of links (a multi-index target)."""
    return args.target[0] if len(args.target) == 1 else list(args.target)


def step_sizes(args, N):
    """``(eta1, eta2)`` from ``--eta{t}`` or from ``--alpha{t}``, ``--c{t}`` and ``N`` (docs/conventions.md §5)."""
    from rmtfl.theory import step_size

    out = []
    for t in (1, 2):
        eta, alpha = getattr(args, f"eta{t}"), getattr(args, f"alpha{t}")
        only_with(args, alpha is not None, [f"--c{t}"], f"with --alpha{t} (eta{t} = c{t} N^alpha{t})")
        if eta is None:
            if N is None:
                usage_error(args, f"--alpha{t} needs the width --N (eta{t} = c{t} N^alpha{t})")
            from rmtfl._validate import check_alpha

            c = 1.0 if getattr(args, f"c{t}") is None else getattr(args, f"c{t}")
            eta = step_size(c, N=N, alpha=check_alpha(f"alpha{t}", alpha))
        out.append(float(eta))
    return out


def _cmd_one_step(args) -> int:
    from rmtfl.theory import one_step

    p = one_step(activation=args.activation, target=target_spec(args), psi=args.psi, phi=args.phi, eta=args.eta,
                 noise=args.noise)
    res = {"activation": args.activation, "target": args.target, "psi": args.psi, "phi": args.phi,
           "eta": args.eta, "noise": args.noise, **p.to_dict()}
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


def _check_batch(args, second: str) -> None:
    only_with(args, args.batch == "fresh", [second], "with --batch fresh")


def _second(value, first, batch):
    """``--phi2`` / ``--n2``: the fresh batch defaults to the size of the first one."""
    return (first if value is None else value) if batch == "fresh" else None


#: Singular values of ``P`` below this fraction of the largest are summed up in the text report, not listed (the JSON
#: report keeps them all): on the finite-N route they are the quadrature's round-off, 1e-7 and below.
P_SHOWN = 1e-3


def _p_line(spikes) -> str:
    """The text report's line of the singular values of ``P``: those above ``P_SHOWN`` of the largest."""
    spikes = list(spikes)
    top = max(spikes, default=0.0)
    shown = [v for v in spikes if v >= P_SHOWN * top]
    rest = len(spikes) - len(shown)
    return ("  singular values of P: " + ", ".join(f"{v:.6g}" for v in shown)
            + (f" (and {rest} below {P_SHOWN:g} of the largest; all in --json)" if rest else ""))


def _cmd_two_step(args) -> int:
    from rmtfl.theory import two_step

    _check_batch(args, "--phi2")
    only_with(args, args.N is not None, ["--extreme-samples"], "with --N (the finite-N route)")
    e1, e2 = step_sizes(args, args.N)
    p = two_step(activation=args.activation, target=target_spec(args), psi=args.psi, phi=args.phi, eta1=e1, eta2=e2,
                 batch=args.batch, phi2=_second(args.phi2, args.phi, args.batch), noise=args.noise, N=args.N,
                 extreme_samples=args.extreme_samples or "auto")
    res = {"activation": args.activation, "target": args.target, "psi": args.psi, "phi": args.phi,
           "phi2": _second(args.phi2, args.phi, args.batch), "eta1": e1, "eta2": e2, "batch": args.batch,
           "noise": args.noise, "N": args.N, "extreme_samples": args.extreme_samples or "auto",
           **p.to_dict()}
    lines = [f"two steps ({args.batch}): sigma={args.activation}, target={' + '.join(args.target)}, "
             f"eta1={e1:.6g}, eta2={e2:.6g}, N={args.N}, "
             + (f"Taylor order K={p.K}" if p.K >= 0 else "no Taylor truncation"),
             _p_line(p.spikes),
             f"  bulk edge: {p.bulk_edge:.6f}" + (
                 "" if p.fitted_edge is None else
                 f" (fold of the bulk's density; the count rule fits {p.fitted_edge:.6f} to the predicted spectrum, "
                 "docs/theory/two_step.md §8.4)")]
    for i, o in enumerate(p.outliers, 1):
        # the spread over draws at this N (docs/theory/two_step.md §8.5)
        s = f"s = {o.singular_value:.6f}" + ("" if o.spread is None else f" ± {o.spread:.3g}")
        if o.kind == "sample":
            lines.append(f"  outlier {i}: {s}, one extreme sample of the batch (its place and "
                         f"presence vary from batch to batch; docs/theory/two_step.md §8.3)")
            continue
        if o.kind == "tail":
            lines.append(f"  outlier {i}: {s}, a top value of the bulk's thin tail, above the edge the count rule "
                         f"fits below it (docs/theory/two_step.md §8.3)")
            continue
        lines.append(f"  outlier {i}: {s}, cos^2 target = {o.cos2_target:.6f}, cos^2 a = {o.cos2_second_layer:.6f}")
    if any(o.spread is not None for o in p.outliers):
        lines.append("  (± the standard deviation of each value from one draw of W0, a and the batch to the next, "
                     "docs/theory/two_step.md §8.5)")
    if not p.outliers:
        lines.append("  no outlier above the bulk edge")
    if p.count_range is not None and p.count_range[0] != p.count_range[1]:
        lines.append(f"  count over batches: {p.count_range[0]} to {p.count_range[1]} (single extreme samples; "
                     f"{len(p.outliers)} at the median, docs/theory/two_step.md §8.3)")
    if not p.reliable:
        lines.append("  UNRELIABLE at this N: see the notes below (docs/theory/two_step.md §8.2)")
    if p.outlier_count is not None:
        lines.append(f"  Lambda = {p.outlier_count.count}" + (" (critical line)" if p.outlier_count.critical else ""))
    lines += [f"  note: {n}" for n in p.notes]
    emit(res, args, "\n".join(lines))
    return 0


def _cmd_simulate(args) -> int:
    from rmtfl.numerics import simulate_two_step

    from ._common import check_sizes

    _check_batch(args, "--n2")
    check_sizes(args)
    e1, e2 = step_sizes(args, args.N)
    r = simulate_two_step(activation=args.activation, target=target_spec(args), N=args.N, d=args.d, n=args.n,
                          eta1=e1, eta2=e2, batch=args.batch, n2=_second(args.n2, args.n, args.batch),
                          noise=args.noise, k=args.k, dtype=args.dtype,
                          rng=args.seed, backend=args.backend)
    res = r.to_dict()
    if args.out:
        from pathlib import Path

        from rmtfl.compare import save_figure
        from rmtfl.plots import plot_spectrum

        plt = pyplot()
        res["written"] = str(write_json(args.out, "two_step_simulation.json", res))
        fig, ax = plt.subplots(figsize=(6, 4))
        plot_spectrum(r.singular_values, psi=args.N / args.d, ax=ax,
                      title=f"W2 ({args.batch}), N={args.N}, d={args.d}, n={args.n}")
        res["figure"] = str(save_figure(fig, Path(args.out) / "two_step_spectrum.png", r.params))
        plt.close(fig)
    s = r.singular_values
    lines = [f"simulated two steps ({args.batch}), N={args.N}, d={args.d}, n={args.n}, eta=({e1:.6g}, {e2:.6g})",
             "  top singular values: " + ", ".join(f"{v:.6f}" for v in s[:6]),
             f"  outliers beyond edge {r.edge:.4f}: {r.outlier_count} (complete: {r.complete})",
             "  cos^2(v_i, beta*_r): " + "; ".join(", ".join(f"{c:.4f}" for c in row) for row in r.cos2_target[:3]),
             "  cos^2(u_i, a):      " + ", ".join(f"{c:.4f}" for c in r.cos2_a_powers[:3, 0])]
    if "figure" in res:
        lines.append(f"  written: {res['written']}, {res['figure']}")
    emit(res, args, "\n".join(lines))
    return 0


def add_model_flags(p, *, noise: bool = True) -> None:
    """``--activation``, ``--target`` (several: a multi-index target) and ``--noise``."""
    p.add_argument("--activation", default=_defaults.ACTIVATION, help=ACTIVATION_HELP)
    p.add_argument("--target", nargs="+", default=[_defaults.TARGET], help=TARGET_HELP + "; several links "
                   "make a multi-index target")
    if noise:
        p.add_argument("--noise", type=float, default=0.0, help="label-noise standard deviation (default 0)")


def add_step_flags(p) -> None:
    """``--eta{t}`` or ``--alpha{t}`` (with ``--c{t}``), for ``t = 1, 2``."""
    for t in (1, 2):
        g = p.add_mutually_exclusive_group(required=True)
        g.add_argument(f"--eta{t}", type=float, default=None, help=f"step size eta{t}")
        g.add_argument(f"--alpha{t}", type=float, default=None,
                       help=f"exponent in [0, 1/2): eta{t} = c{t} N^alpha{t} (needs --N; docs/conventions.md §5)")
        p.add_argument(f"--c{t}", type=float, default=None, help=f"prefactor c{t} with --alpha{t} (default 1)")


def register(groups, top) -> None:
    """Add ``theory one-step|two-step`` and ``simulate two-step``."""
    th, sim = groups["theory"], groups["simulate"]

    p = th.add_parser("one-step", help="one large step: spike, top singular value, alignments, threshold",
                      parents=[options(json=True)])
    add_model_flags(p)
    p.add_argument("--psi", type=float, default=_defaults.PSI, help="N/d" + default_note(_defaults.PSI))
    p.add_argument("--phi", type=float, default=_defaults.PHI, help="n/d" + default_note(_defaults.PHI))
    p.add_argument("--eta", type=float, required=True, help="step size")
    p.set_defaults(func=_cmd_one_step)

    p = th.add_parser("two-step", help="two large steps: outliers of W2 and their alignments",
                      parents=[options(json=True)])
    add_model_flags(p)
    add_step_flags(p)
    p.add_argument("--psi", type=float, default=_defaults.PSI, help="N/d" + default_note(_defaults.PSI))
    p.add_argument("--phi", type=float, default=_defaults.PHI, help="n/d of the (first) batch"
                   + default_note(_defaults.PHI))
    p.add_argument("--batch", default="reused", choices=["reused", "fresh"], help="second batch (default reused)")
    p.add_argument("--phi2", type=float, default=None, help="n2/d of the fresh second batch (--batch fresh; "
                   "default phi)")
    p.add_argument("--N", type=int, default=None, help="width: keeps the N^-k/2 terms (default: the limit)")
    p.add_argument("--extreme-samples", default=None, choices=["auto", "single", "grouped"],
                   help="with --N: the batch's most extreme samples each a column of its own, or the most extreme as "
                        "one coupled group, counted through the Poisson process; auto (default) groups them with a "
                        "reused batch (docs/theory/two_step.md §8.3)")
    p.set_defaults(func=_cmd_two_step)

    p = sim.add_parser("two-step", help="sample two steps and measure the spectrum and alignments of W2",
                       parents=[options(json=True, out="two_step_simulation.json and two_step_spectrum.png",
                                        seed="seed of the initialisation and the data", backend="the steps and "
                                        "the SVD (random numbers drawn on the host)")])
    add_model_flags(p)
    add_step_flags(p)
    p.add_argument("--N", type=int, required=True, help="width")
    p.add_argument("--d", type=int, required=True, help="input dimension")
    p.add_argument("--n", type=int, required=True, help="first-batch size")
    p.add_argument("--batch", default="reused", choices=["reused", "fresh"], help="second batch (default reused)")
    p.add_argument("--n2", type=int, default=None, help="size of the fresh second batch (--batch fresh; default n)")
    p.add_argument("--k", type=int, default=None, help="only the top k singular values (default all)")
    p.add_argument("--dtype", default="float64", choices=["float64", "float32"], help="default float64")
    p.set_defaults(func=_cmd_simulate)
