"""CLI subcommands of the kernel-spectra part.

::

    rmtfl theory ck [--activation A] [--psi P] [--phi F] [--N N] [--json]
    rmtfl simulate ck [--activation A] --N N --d D --n N [--seed S] [--backend B] [--json] [--out DIR]

Conventions (docs/theory/kernel_spectra.md §1): ``K = sigma(X W^T) sigma(X W^T)^T / N`` with ``X`` rows
``N(0, I_d)``, ``W`` rows ``N(0, I_d/d)``, ``psi = N/d``, ``phi = n/d``.
"""
from __future__ import annotations

from rmtfl import _defaults

from ._common import ACTIVATION_HELP, emit, options, write_json

__all__ = ["register"]

LEVELS = [0.05, 0.25, 0.5, 0.75, 0.95]


def _cmd_theory(args) -> int:
    from rmtfl.theory import ck_spectrum

    law = ck_spectrum(args.activation, psi=args.psi, phi=args.phi, N=args.N)
    q = [float(v) for v in law.quantile(LEVELS)]
    res = law.to_dict()
    res["quantiles"] = dict(zip([str(p) for p in LEVELS], q))
    lines = [
        f"conjugate kernel K = F F^T / N, sigma = {law.activation}, psi = N/d = {law.psi:g}, phi = n/d = {law.phi:g}",
        f"  mu0, mu1, mu2        : {law.mu0:.10g}, {law.mu1:.10g}, {law.mu2:.10g}",
        f"  nonlinear variance   : {law.nonlinear_var:.10g}",
        f"  bulk edges           : [{law.edges.lower:.10f}, {law.edges.upper:.10f}]",
        f"  atom at 0            : {law.atom:.10f}",
        "  quantiles            : " + ", ".join(f"{p:g}: {v:.6g}" for p, v in zip(LEVELS, q)),
    ]
    if law.N is not None:
        lines.append(f"  sizes N, d, n        : {law.N}, {law.d}, {law.n}; mean top bulk eigenvalue {law.top_bulk:.6g}")
        for o in law.outliers:
            where = f"{o.location:.10g}" if o.exists else "none (below threshold)"
            lines.append(f"  outlier {o.kind:<5s} x{o.multiplicity}   : {where} (strength {o.strength:.6g}, "
                         f"threshold {o.threshold:.6g})")
        if not law.outliers:
            lines.append("  outliers             : none (mu0 = mu2 = 0)")
    emit(res, args, "\n".join(lines))
    return 0


def _cmd_simulate(args) -> int:
    from rmtfl.numerics import ks_distance_ck, simulate_ck
    from rmtfl.theory import ck_spectrum

    s = simulate_ck(args.activation, N=args.N, d=args.d, n=args.n, k=1, rng=args.seed, backend=args.backend)
    law = ck_spectrum(args.activation, psi=args.N / args.d, phi=args.n / args.d, N=args.N)
    ks = ks_distance_ck(s.eigenvalues, law)
    n_out = sum(o.multiplicity for o in law.outliers if o.exists)
    res = dict(activation=s.activation, N=s.N, d=s.d, n=s.n, top=s.eigenvalues[:5].tolist(),
               top_bulk=float(s.eigenvalues[min(n_out, s.n - 1)]), cos2_ones=float(s.cos2_ones[0]), ks=ks,
               predicted_edge=law.edges.upper, predicted_top_bulk=law.top_bulk,
               predicted_outliers=[o.location for o in law.outliers])
    text = "\n".join([
        f"sampled conjugate kernel, sigma = {s.activation}, N = {s.N}, d = {s.d}, n = {s.n}, seed {args.seed}",
        "  top eigenvalues      : " + ", ".join(f"{v:.6g}" for v in s.eigenvalues[:5]),
        f"  top bulk (measured)  : {res['top_bulk']:.6g}  predicted {law.top_bulk:.6g} (limit edge {law.edges.upper:.6g})",
        "  predicted outliers   : " + (", ".join(f"{o.kind} {o.location:.6g}" for o in law.outliers) or "none"),
        f"  cos^2(top, 1/sqrt n) : {res['cos2_ones']:.6f}",
        f"  KS to ck_spectrum    : {ks:.5f}",
    ])
    if args.out:
        text += f"\n  written              : {write_json(args.out, 'ck.json', res)}"
    emit(res, args, text)
    return 0


def register(groups, top) -> None:
    """Add ``theory ck`` and ``simulate ck``."""
    th = groups["theory"]
    p = th.add_parser("ck", help="conjugate-kernel spectrum: bulk law, atom, quantiles, outliers",
                      parents=[options(json=True)])
    p.add_argument("--activation", default=_defaults.ACTIVATION, help=ACTIVATION_HELP)
    p.add_argument("--psi", type=float, default=_defaults.PSI, help=f"N/d (default {_defaults.PSI})")
    p.add_argument("--phi", type=float, default=_defaults.PHI, help=f"n/d (default {_defaults.PHI})")
    p.add_argument("--N", type=int, default=None, help="width: gives the finite-size outliers")
    p.set_defaults(func=_cmd_theory)

    sim = groups["simulate"]
    p = sim.add_parser("ck", help="sample the conjugate kernel and compare with ck_spectrum",
                       parents=[options(json=True, out="ck.json", seed="seed of X and W",
                                        backend="the features, the Gram and its eigenvalues")])
    p.add_argument("--activation", default=_defaults.ACTIVATION, help=ACTIVATION_HELP)
    p.add_argument("--N", type=int, required=True, help="width")
    p.add_argument("--d", type=int, required=True, help="input dimension")
    p.add_argument("--n", type=int, required=True, help="number of samples")
    p.set_defaults(func=_cmd_simulate)
