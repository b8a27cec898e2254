"""CLI subcommands of the classical part.

::

    rmtfl theory mp [--psi P] [--var V] [--kmax K] [--json]
    rmtfl theory bgn --theta T [T ...] [--psi P] [--var V] [--json]
    rmtfl theory hermite [--activation A] [--kmax K] [--dps D] [--json]
    rmtfl theory tw --beta {1,2} (--s S | --p P) [--json]
    rmtfl simulate spiked --N N --d D --theta T [T ...] [--var V] [--p P] [--seed S] [--backend B]
                          [--json] [--out DIR]

Conventions (docs/conventions.md §1): ``W`` is ``N x d`` with iid ``N(0, var/d)`` entries,
``psi = N/d`` (``--ratio`` is a hidden alias of ``--psi`` for ``mp`` and ``bgn``); MP eigenvalues are
those of ``W W^T``; BGN overlaps are squared, left = N side (docs/theory/classical.md §3).
"""
from __future__ import annotations

import argparse
import math

from rmtfl import _defaults

from ._common import ACTIVATION_HELP, default_note, emit, options, write_json

__all__ = ["register"]


def _cmd_mp(args) -> int:
    from rmtfl.theory import bgn_threshold, mp_atom, mp_edges, mp_moments, mp_sv_atom, mp_sv_edges

    psi, var = args.psi, args.var
    lo, hi = mp_edges(psi, var=var)
    slo, shi = mp_sv_edges(psi, var=var)
    res = {
        "psi": psi, "var": var,
        "convention": "eigenvalues of W W^T (N x N), W N x d with entries N(0, var/d), psi = N/d",
        "eig_edges": [lo, hi], "sv_edges": [slo, shi],
        "atom": mp_atom(psi), "atom_d_side": mp_sv_atom(psi, side="d"),
        "continuous_mass": min(1.0, 1.0 / psi),
        "moments": list(mp_moments(args.kmax, psi=psi, var=var)),
        "bgn_threshold": bgn_threshold(psi, var=var),
    }
    text = "\n".join([
        f"Marchenko-Pastur, psi = N/d = {psi:g}, var = {var:g}",
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

    from rmtfl.theory import bgn_outlier, bgn_threshold

    psi, var = args.psi, args.var
    th = np.array(args.theta, dtype=float)
    r = bgn_outlier(th, psi, var=var)
    thr = bgn_threshold(psi, var=var)
    rows = [{"theta": float(t), "singular_value": float(v), "cos2_left": float(a), "cos2_right": float(b),
             "outlier": bool(t > thr)}
            for t, v, a, b in zip(th, np.atleast_1d(r.singular_value), np.atleast_1d(r.cos2_left),
                                  np.atleast_1d(r.cos2_right))]
    res = {"psi": psi, "var": var, "threshold": thr,
           "convention": "W0 + theta u v^T, W0 N x d entries N(0, var/d); left = N side; overlaps squared",
           "outliers": rows}
    lines = [f"BGN, psi = N/d = {psi:g}, var = {var:g}, threshold = {thr:.10f}",
             f"{'theta':>10} {'s':>14} {'cos2_left':>14} {'cos2_right':>14}"]
    lines += [f"{x['theta']:>10.6g} {x['singular_value']:>14.10f} {x['cos2_left']:>14.10f} "
              f"{x['cos2_right']:>14.10f}" for x in rows]
    emit(res, args, "\n".join(lines))
    return 0


def _cmd_hermite(args) -> int:
    from rmtfl.theory import hermite_coeffs, information_exponent, nonlinear_norm

    mu = hermite_coeffs(args.activation, kmax=args.kmax, dps=args.dps)
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
        from rmtfl.theory import hermite_coeffs_mp

        act = get_activation(args.activation)
        if act.hermite_exact is None and (act.herme is not None or act.mp_fn is not None):
            with mp.workdps(args.dps):
                res["mu_digits"] = [mp.nstr(v, args.dps) for v in hermite_coeffs_mp(act, args.kmax, dps=args.dps)]
            lines += [f"mu_{k} = {v}" for k, v in enumerate(res["mu_digits"])]
    if "nonlinear_norm" in res:
        lines.append(f"mu_>1 (BES+22 'mu_2') = {res['nonlinear_norm']:.12g}")
    emit(res, args, "\n".join(lines))
    return 0


def _cmd_tw(args) -> int:
    from rmtfl.theory import tracy_widom_cdf, tracy_widom_quantile

    if args.s is not None:
        val = tracy_widom_cdf(args.s, beta=args.beta)
        res = {"beta": args.beta, "s": args.s, "cdf": val}
        text = f"F_{args.beta}({args.s:g}) = {val:.12f}"
    else:
        val = tracy_widom_quantile(args.p, beta=args.beta)
        res = {"beta": args.beta, "p": args.p, "quantile": val}
        text = f"TW_{args.beta} quantile at p = {args.p:g}: {val:.12f}"
    emit(res, args, text)
    return 0


def _cmd_spiked(args) -> int:
    import numpy as np

    from rmtfl.numerics import measure_spiked, spiked_matrix
    from rmtfl.theory import bgn_outlier

    from ._common import check_arrays

    check_arrays("--N" if args.N >= args.d else "--d", (args.N, args.d), copies=3,
                 what=f"an N x d matrix and its SVD (N={args.N}, d={args.d})")
    rng = np.random.default_rng(args.seed)
    r_mat, r_solve = rng.spawn(2)
    sp = spiked_matrix(N=args.N, d=args.d, theta=args.theta, var=args.var, rng=r_mat, backend=args.backend)
    m = measure_spiked(sp, var=args.var, p=args.p, rng=r_solve, backend=args.backend)
    th = np.sort(np.asarray(args.theta, float))[::-1]
    psi = args.N / args.d
    pred = bgn_outlier(th, psi, var=args.var)
    res = {"N": args.N, "d": args.d, "psi": psi, "var": args.var, "p": args.p, "seed": args.seed,
           "backend": args.backend, "theta": th.tolist(), "edge": m.edge, "outlier_count": m.outlier_count,
           "complete": m.complete,
           "measured": {"singular_values": m.singular_values, "cos2_left": m.cos2_left,
                        "cos2_right": m.cos2_right},
           "predicted": {"singular_values": np.atleast_1d(pred.singular_value),
                         "cos2_left": np.atleast_1d(pred.cos2_left), "cos2_right": np.atleast_1d(pred.cos2_right)}}
    if args.out:
        res["written"] = str(write_json(args.out, "spiked.json", res))
    lines = [f"spiked W = W0 + sum theta u v^T, N={args.N}, d={args.d}, seed={args.seed}; "
             f"{m.outlier_count} value(s) above the TW edge {m.edge:.6f}",
             f"{'theta':>8} {'s meas':>10} {'s pred':>10} {'cos2L meas':>11} {'pred':>8} {'cos2R meas':>11} "
             f"{'pred':>8}"]
    ms, pr = res["measured"], res["predicted"]
    for i, t in enumerate(th):
        lines.append(f"{t:>8.4g} {ms['singular_values'][i]:>10.5f} {pr['singular_values'][i]:>10.5f} "
                     f"{ms['cos2_left'][i]:>11.4f} {pr['cos2_left'][i]:>8.4f} {ms['cos2_right'][i]:>11.4f} "
                     f"{pr['cos2_right'][i]:>8.4f}")
    if args.out:
        lines.append(f"written: {res['written']}")
    emit(res, args, "\n".join(lines))
    return 0


def _psi(p) -> None:
    """``--psi`` (default :data:`rmtfl._defaults.PSI`) and its hidden alias ``--ratio``."""
    p.add_argument("--psi", type=float, default=_defaults.PSI, help="psi = N/d > 0" + default_note(_defaults.PSI))
    p.add_argument("--ratio", type=float, dest="psi", default=argparse.SUPPRESS, help=argparse.SUPPRESS)


def register(groups, top) -> None:
    """Add ``theory mp|bgn|hermite|tw`` and ``simulate spiked``."""
    th = groups["theory"]
    js = dict(parents=[options(json=True)])
    p = th.add_parser("mp", help="Marchenko-Pastur edges, atom, moments", **js)
    _psi(p)
    p.add_argument("--var", type=float, default=1.0, help="entry variance times d (default 1)")
    p.add_argument("--kmax", type=int, default=4, help="highest moment (default 4)")
    p.set_defaults(func=_cmd_mp)

    p = th.add_parser("bgn", help="BGN outlier singular value and squared overlaps", **js)
    p.add_argument("--theta", type=float, nargs="+", required=True, help="spike strength(s) >= 0")
    _psi(p)
    p.add_argument("--var", type=float, default=1.0, help="entry variance times d (default 1)")
    p.set_defaults(func=_cmd_bgn)

    p = th.add_parser("hermite", help="Hermite coefficients of an activation", **js)
    p.add_argument("--activation", default=_defaults.ACTIVATION, help=ACTIVATION_HELP)
    p.add_argument("--kmax", type=int, default=4, help="highest degree k (default 4)")
    p.add_argument("--dps", type=int, default=None, help="mpmath digits (default: double precision)")
    p.set_defaults(func=_cmd_hermite)

    p = th.add_parser("tw", help="Tracy-Widom CDF or quantile", **js)
    p.add_argument("--beta", type=int, required=True, choices=[1, 2])
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--s", type=float, help="evaluate F_beta(s)")
    g.add_argument("--p", type=float, help="quantile at probability p in (0, 1)")
    p.set_defaults(func=_cmd_tw)

    sim = groups["simulate"]
    p = sim.add_parser("spiked", help="sample W0 + sum theta u v^T and measure its outliers",
                       parents=[options(json=True, out="spiked.json", seed="seed of the matrix and the solver",
                                        backend="the matrix and its SVD")])
    p.add_argument("--N", type=int, required=True, help="rows (width)")
    p.add_argument("--d", type=int, required=True, help="columns (input dimension)")
    p.add_argument("--theta", type=float, nargs="+", required=True, help="spike strength(s) >= 0")
    p.add_argument("--var", type=float, default=1.0, help="entry variance times d (default 1)")
    p.add_argument("--p", type=float, default=0.99, help="TW probability of the outlier edge (default 0.99)")
    p.set_defaults(func=_cmd_spiked)
