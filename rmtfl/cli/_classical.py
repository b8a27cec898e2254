"""CLI subcommands of the classical part.

::

    rmtfl theory mp --ratio R [--var V] [--kmax K] [--json]
    rmtfl theory bgn --theta T [T ...] --ratio R [--var V] [--json]
    rmtfl theory hermite --activation NAME --kmax K [--dps D] [--json]
    rmtfl theory tw --beta B (--s S | --p P) [--json]
    rmtfl simulate spiked --N N --d D --theta T [T ...] [--seed S] [--var V] [--p P] [--json] [--out DIR]

Conventions: ``W`` is ``N x d`` with iid ``N(0, var/d)`` entries, ``ratio = N/d``;
MP eigenvalues are those of ``W W^T``; BGN overlaps are squared, left = N side.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

__all__ = ["register"]


def _cmd_mp(args) -> int:
    from rmtfl.cli._main import emit
    from rmtfl.theory import bgn_threshold
    from rmtfl.theory import mp_atom, mp_edges, mp_moments, mp_sv_atom, mp_sv_edges

    lo, hi = mp_edges(args.ratio, args.var)
    slo, shi = mp_sv_edges(args.ratio, args.var)
    res = {
        "ratio": args.ratio, "var": args.var,
        "convention": "eigenvalues of W W^T (N x N), W N x d with entries N(0, var/d), ratio = N/d",
        "eig_edges": [lo, hi], "sv_edges": [slo, shi],
        "atom": mp_atom(args.ratio), "atom_d_side": mp_sv_atom(args.ratio, "d"),
        "continuous_mass": min(1.0, 1.0 / args.ratio),
        "moments": mp_moments(args.kmax, args.ratio, args.var).tolist(),
        "bgn_threshold": bgn_threshold(args.ratio, args.var),
    }
    text = "\n".join([
        f"Marchenko-Pastur, ratio N/d = {args.ratio:g}, var = {args.var:g}",
        f"  eigenvalue edges of W W^T : [{lo:.10f}, {hi:.10f}]",
        f"  singular-value edges      : [{slo:.10f}, {shi:.10f}]",
        f"  atom at 0 (N side)        : {res['atom']:.10f}",
        f"  moments E l^k, k=0..{args.kmax}  : " + ", ".join(f"{m:.10g}" for m in res["moments"]),
        f"  BBP threshold             : {res['bgn_threshold']:.10f}",
    ])
    emit(res, args, text)
    return 0


def _cmd_bgn(args) -> int:
    import numpy as np

    from rmtfl.cli._main import emit
    from rmtfl.theory import bgn_outlier, bgn_threshold

    th = np.array(args.theta, dtype=float)
    r = bgn_outlier(th, args.ratio, args.var)
    thr = bgn_threshold(args.ratio, args.var)
    rows = [{"theta": float(t), "s": float(s), "cos2_left": float(a), "cos2_right": float(b),
             "outlier": bool(t > thr)} for t, s, a, b in zip(th, r.s, r.cos2_left, r.cos2_right)]
    res = {"ratio": args.ratio, "var": args.var, "threshold": thr,
           "convention": "W0 + theta u v^T, W0 N x d entries N(0, var/d); left = N side; overlaps squared",
           "outliers": rows}
    lines = [f"BGN, ratio N/d = {args.ratio:g}, var = {args.var:g}, threshold = {thr:.10f}",
             f"{'theta':>10} {'s':>14} {'cos2_left':>14} {'cos2_right':>14}"]
    lines += [f"{x['theta']:>10.6g} {x['s']:>14.10f} {x['cos2_left']:>14.10f} {x['cos2_right']:>14.10f}"
              for x in rows]
    emit(res, args, "\n".join(lines))
    return 0


def _cmd_hermite(args) -> int:
    from rmtfl.cli._main import emit
    from rmtfl.theory import hermite_coeffs, information_exponent, nonlinear_norm

    mu = hermite_coeffs(args.activation, args.kmax, dps=args.dps)
    mu = [float(m) for m in mu]
    c = [m / math.sqrt(math.factorial(k)) for k, m in enumerate(mu)]
    res = {"activation": args.activation, "kmax": args.kmax, "dps": args.dps,
           "convention": "mu_k = E[sigma(z) He_k(z)], c_k = mu_k / sqrt(k!), z ~ N(0,1)",
           "mu": mu, "c": c}
    try:
        res["nonlinear_norm"] = float(nonlinear_norm(args.activation))
        res["information_exponent"] = float(information_exponent(args.activation))
    except ValueError:  # e.g. activations whose second moment is not available
        pass
    lines = [f"Hermite coefficients of {args.activation} (mu_k = E[sigma He_k], c_k = mu_k/sqrt(k!))",
             f"{'k':>3} {'mu_k':>20} {'c_k':>20}"]
    lines += [f"{k:>3} {m:>20.12g} {ck:>20.12g}" for k, (m, ck) in enumerate(zip(mu, c))]
    if args.dps is not None:
        # full-precision strings from the mpmath path (closed forms where the activation has one)
        import mpmath as mp

        from rmtfl.theory import get_activation
        from rmtfl.theory._classical.hermite import hermite_coeffs_mp

        act = get_activation(args.activation)
        if act.hermite_exact is None and (act.herme is not None or act.mp_fn is not None):
            with mp.workdps(args.dps):
                res["mu_digits"] = [mp.nstr(v, args.dps) for v in hermite_coeffs_mp(act, args.kmax, args.dps)]
            lines += [f"mu_{k} = {v}" for k, v in enumerate(res["mu_digits"])]
    if "nonlinear_norm" in res:
        lines.append(f"mu_>1 (BES+22 'mu_2') = {res['nonlinear_norm']:.12g}")
    emit(res, args, "\n".join(lines))
    return 0


def _cmd_tw(args) -> int:
    from rmtfl.cli._main import emit
    from rmtfl.theory import tracy_widom_cdf, tracy_widom_quantile

    if args.s is not None:
        val = tracy_widom_cdf(args.s, args.beta)
        res = {"beta": args.beta, "s": args.s, "cdf": val}
        text = f"F_{args.beta}({args.s:g}) = {val:.12f}"
    else:
        val = tracy_widom_quantile(args.p, args.beta)
        res = {"beta": args.beta, "p": args.p, "quantile": val}
        text = f"TW_{args.beta} quantile at p = {args.p:g}: {val:.12f}"
    emit(res, args, text)
    return 0


def _cmd_spiked(args) -> int:
    import numpy as np

    from rmtfl.cli._main import emit
    from rmtfl.numerics import measure_spiked, spiked_matrix
    from rmtfl.theory import bgn_outlier

    rng = np.random.default_rng(args.seed)
    r_mat, r_solve = rng.spawn(2)
    sp = spiked_matrix(args.N, args.d, args.theta, rng=r_mat, var=args.var, backend=args.backend)
    m = measure_spiked(sp, rng=r_solve, var=args.var, p=args.p, backend=args.backend)
    th = np.sort(np.asarray(args.theta, float))[::-1]
    pred = bgn_outlier(th, args.N / args.d, args.var)
    res = {"N": args.N, "d": args.d, "ratio": args.N / args.d, "var": args.var, "seed": args.seed,
           "theta": th.tolist(), "edge_threshold": m.edge, "n_outliers": m.n_outliers, "complete": m.complete,
           "measured": {"s": m.s.tolist(), "cos2_left": m.cos2_left.tolist(), "cos2_right": m.cos2_right.tolist()},
           "predicted": {"s": pred.s.tolist(), "cos2_left": pred.cos2_left.tolist(),
                         "cos2_right": pred.cos2_right.tolist()}}
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "spiked.json").write_text(json.dumps(res, indent=2))
        res["written"] = str(out / "spiked.json")
    lines = [f"spiked W = W0 + sum theta u v^T, N={args.N}, d={args.d}, seed={args.seed}; "
             f"{m.n_outliers} value(s) above the TW edge {m.edge:.6f}",
             f"{'theta':>8} {'s meas':>10} {'s pred':>10} {'cos2L meas':>11} {'pred':>8} {'cos2R meas':>11} {'pred':>8}"]
    for i, t in enumerate(th):
        lines.append(f"{t:>8.4g} {m.s[i]:>10.5f} {pred.s[i]:>10.5f} {m.cos2_left[i]:>11.4f} "
                     f"{pred.cos2_left[i]:>8.4f} {m.cos2_right[i]:>11.4f} {pred.cos2_right[i]:>8.4f}")
    if args.out:
        lines.append(f"written: {res['written']}")
    emit(res, args, "\n".join(lines))
    return 0


def register(groups, top) -> None:
    """Add ``theory mp|bgn|hermite|tw`` and ``simulate spiked``."""
    th = groups["theory"]
    p = th.add_parser("mp", help="Marchenko-Pastur edges, atom, moments")
    p.add_argument("--ratio", type=float, required=True, help="psi = N/d > 0")
    p.add_argument("--var", type=float, default=1.0, help="entry variance times d (default 1)")
    p.add_argument("--kmax", type=int, default=4, help="highest moment (default 4)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_cmd_mp)

    p = th.add_parser("bgn", help="BGN outlier singular value and squared overlaps")
    p.add_argument("--theta", type=float, nargs="+", required=True, help="spike strength(s) >= 0")
    p.add_argument("--ratio", type=float, required=True, help="psi = N/d > 0")
    p.add_argument("--var", type=float, default=1.0)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_cmd_bgn)

    p = th.add_parser("hermite", help="Hermite coefficients of an activation")
    p.add_argument("--activation", required=True, help="e.g. relu, tanh, erf, he3, 'hermite(0,1,0.5)'")
    p.add_argument("--kmax", type=int, required=True)
    p.add_argument("--dps", type=int, default=None, help="mpmath digits (default: double precision)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_cmd_hermite)

    p = th.add_parser("tw", help="Tracy-Widom CDF or quantile")
    p.add_argument("--beta", type=int, required=True, choices=[1, 2])
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--s", type=float, help="evaluate F_beta(s)")
    g.add_argument("--p", type=float, help="quantile at probability p in (0, 1)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_cmd_tw)

    sim = groups["simulate"]
    p = sim.add_parser("spiked", help="sample W0 + sum theta u v^T and measure its outliers")
    p.add_argument("--N", type=int, required=True)
    p.add_argument("--d", type=int, required=True)
    p.add_argument("--theta", type=float, nargs="+", required=True)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--var", type=float, default=1.0)
    p.add_argument("--p", type=float, default=0.99, help="TW probability of the outlier edge (default 0.99)")
    p.add_argument("--backend", default="numpy", choices=["numpy", "cupy"])
    p.add_argument("--json", action="store_true")
    p.add_argument("--out", default=None, help="folder for spiked.json")
    p.set_defaults(func=_cmd_spiked)
