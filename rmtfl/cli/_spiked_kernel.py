"""CLI subcommands of the spiked-kernel part: ``rmtfl theory kernel ...`` and ``rmtfl simulate kernel ...``.

::

    rmtfl theory kernel spectrum [--activation A] [--d 10] [--kmax 6]
    rmtfl theory kernel zonal    [--activation A] [--d 10] [--b 5] [--A 1] | --rho R
    rmtfl theory kernel linear   [--activation A] [--d 10] [--A 1/d] [--B 0.5] [--measure gaussian|sphere]
    rmtfl theory kernel spike    --eta E [--activation A] [--target T] [--N 512] [--d 256] [--n 1024] [--noise 0]
    rmtfl simulate kernel spectrum       [--activation A] [--d 10] [--n 2000] [--measure sphere|gaussian]
    rmtfl simulate kernel alignment      [--activation A] [--d 10] [--n 2000] [--b 0,5,20] [--A 1] [--seeds 3]
                                         [--measure sphere|gaussian]
    rmtfl simulate kernel spike          [--activation A] [--target T] [--N 512] [--d 256] [--n 1024] [--b 3]
                                         [--noise 0] [--seeds 4]
    rmtfl simulate kernel generalisation [--activation A] [--target T] [--N 128,512,2048] [--d 64] [--n 4d]
                                         [--n2 n] [--n-test 10 n2] [--b 5] [--lam 0.01] [--noise 0] [--seeds 4]

All take ``--json`` (print JSON) and ``--out DIR`` (write ``kernel_<what>.json``, and for
``simulate kernel alignment|generalisation`` a PNG with its JSON sidecar); the ``simulate`` commands
take ``--seed S`` and ``--backend numpy|cupy`` (random numbers drawn on the host either way).
Eigenvalues are w.r.t. the input probability measure (docs/conventions.md §8); step sizes are
rmtfl's ``eta_1`` (docs/conventions.md §10.2 for giant-step conversions).  Overlaps are squared
(docs/conventions.md §1): ``overlaps`` / ``cos2_*`` are ``<f, Y>^2``; the zonal command also reports
the signed ``amplitudes`` ``<f, Y_ell>``.
"""
from __future__ import annotations

from rmtfl import _defaults

from ._common import (ACTIVATION_HELP, TARGET_HELP, emit, floats, ints, only_with, options, pyplot, usage_error,
                      write_json)

__all__ = ["register"]


def _finish(result: dict, args, text: str, name: str, fig=None) -> int:
    if args.out:
        from pathlib import Path

        result["written"] = str(write_json(args.out, f"kernel_{name}.json", result))
        if fig is not None:
            from rmtfl.compare import save_figure

            save_figure(fig, Path(args.out) / f"kernel_{name}.png", result.get("params", {}))
    if fig is not None:
        import matplotlib.pyplot as plt

        plt.close(fig)
    emit(result, args, text)
    return 0


# ------------------------------------------------------------------ theory
def _theory_spectrum(args) -> int:
    from rmtfl.theory import sphere_eigenvalues

    sp = sphere_eigenvalues(args.activation, d=args.d, kmax=args.kmax)
    res = {"activation": sp.activation, "d": sp.d, "k": list(range(args.kmax + 1)), "mu_sphere": sp.mu,
           "multiplicity": list(sp.multiplicity), "gaussian_factor": sp.gaussian_factor,
           "mu_gaussian_k0": sp.gaussian_k0, "high_d": sp.high_d, "method": sp.method, "error": sp.error}
    lines = [f"sphere eigenvalues of k_I ({sp.activation}, d={sp.d}, uniform probability measure; "
             f"{sp.method})", f"{'k':>3} {'N(d,k)':>10} {'mu_k':>14} {'k! c_k^2/d^k':>14}"]
    lines += [f"{k:>3} {n:>10} {m:>14.6e} {h:>14.6e}" for k, n, m, h in
              zip(range(args.kmax + 1), sp.multiplicity, sp.mu, sp.high_d)]
    if sp.gaussian_factor is not None:
        lines.append(f"Gaussian inputs: eigenvalues of k_I = {sp.gaussian_factor:g} x mu_k (m_2p)")
    return _finish(res, args, "\n".join(lines), "theory_spectrum")


def _theory_zonal(args) -> int:
    from rmtfl.theory import zonal_limit_operator, zonal_top_eigenfunction

    only_with(args, args.rho is None, ["--d", "--b", "--A"], "without --rho (the d -> inf operator has b = rho d)")
    if args.rho is not None:
        if args.activation not in (None, "relu"):
            usage_error(args, f"--rho: the d -> inf zonal operator is that of relu, got --activation {args.activation}")
        args.activation = "relu"
        z = zonal_limit_operator(args.rho)
        head = f"d -> inf zonal operator of relu, b = rho d, rho={args.rho:g}"
    else:
        d = 10 if args.d is None else args.d
        b = 5.0 if args.b is None else args.b
        A = 1.0 if args.A is None else args.A
        args.activation = args.activation or _defaults.ACTIVATION
        z = zonal_top_eigenfunction(args.activation, d=d, b=b, A=A)
        head = f"zonal top even eigenfunction ({args.activation}, d={d}, b={b:g}, A={A:g})"
    res = {"activation": args.activation, "d": z.d, "b": z.b, "A": z.A, "eigenvalue": z.eigenvalue,
           "overlaps": z.overlaps, "amplitudes": z.amplitudes, "tan_mix": z.tan_mix,
           "odd_eigenvalue": z.odd_eigenvalue, "eps_over_b": z.eps_over_b,
           "convention": "overlaps[l] = <f,Y_l>^2 (squared, docs/conventions.md §1); amplitudes[l] = <f,Y_l> "
                         "signed with <f,Y_0> > 0"}
    text = (f"{head}\n  top even eigenvalue {z.eigenvalue:.6g}, top odd {z.odd_eigenvalue:.6g}\n"
            f"  squared overlaps cos^2(f,Y_0)={z.overlaps[0]:.5f} cos^2(f,Y_2)={z.overlaps[2]:.5f} "
            f"cos^2(f,Y_4)={z.overlaps[4]:.3e}\n"
            f"  amplitudes <f,Y_0>={z.amplitudes[0]:.5f} <f,Y_2>={z.amplitudes[2]:+.5f} "
            f"<f,Y_4>={z.amplitudes[4]:+.5f}  tan(theta_mix)={z.tan_mix:.5f}  "
            f"eps/b (first order)={z.eps_over_b:.5g}")
    return _finish(res, args, text, "theory_zonal")


def _theory_linear(args) -> int:
    from rmtfl.theory import linear_sector

    A = args.A if args.A is not None else 1.0 / args.d
    ls = linear_sector(args.activation, A=A, B=args.B, d=args.d, measure=args.measure)
    res = {"activation": args.activation, "A": A, "B": args.B, "d": args.d, "measure": ls.measure,
           "target": ls.target, "orthogonal": ls.orthogonal, "boost": ls.boost, "exact": ls.exact}
    text = (f"linear sector ({args.activation}, {ls.measure} inputs, A={A:g}, B={args.B:g}, d={args.d}):\n"
            f"  <beta*,x>: {ls.target:.6g}   <e,x> (e ⊥ beta*): {ls.orthogonal:.6g}   boost {ls.boost:.4g}"
            f"   ({'exact eigenvalues' if ls.exact else 'Rayleigh quotients (compression)'})")
    return _finish(res, args, text, "theory_linear")


def _theory_spike(args) -> int:
    from rmtfl.theory import spike_constants

    sc = spike_constants(args.activation, args.target, N=args.N, d=args.d, n=args.n, eta=args.eta,
                         noise=args.noise)
    res = {"activation": args.activation, "target": args.target, "noise": args.noise, **sc.to_dict(),
           "spike_variance": sc.spike_variance, "orthogonal_variance": sc.orthogonal_variance}
    text = (f"one-step weight law, eta_1={sc.eta:g} (giant-step eta_G={sc.eta_giant:.4g}), "
            f"N={args.N}, d={args.d}, n={args.n}\n"
            f"  target form:    A={sc.A:.6g}  B={sc.B:.6g}  b=B/A={sc.b:.6g}"
            f"   (d E<w,beta*>^2 = {sc.spike_variance:.5g})\n"
            f"  h_hat form:     A={sc.A_hhat:.6g}  B={sc.B_hhat:.6g}  b={sc.b_hhat:.6g}"
            f"  cos^2(h,beta*)={sc.cos2_hhat:.5f}\n"
            f"  isotropic form: A'={sc.A_prime:.6g}  B'={sc.B_prime:.6g}   (d A' = {sc.orthogonal_variance:.5g})")
    return _finish(res, args, text, "theory_spike")


# ---------------------------------------------------------------- simulate
def _params(args, **extra) -> dict:
    keep = ("activation", "target", "N", "d", "n", "n2", "n_test", "b", "A", "lam", "noise", "measure", "seeds",
            "seed", "backend")
    return {**{k: getattr(args, k) for k in keep if hasattr(args, k)}, **extra}


def _check_backend(args) -> None:
    from rmtfl.numerics import get_backend

    from ._common import check_sizes

    check_sizes(args)          # sizes that would not fit in memory: refused before anything is drawn
    get_backend(args.backend)  # fail cleanly (exit 2) before any work if cupy is unusable


def _sim_spectrum(args) -> int:
    from rmtfl.numerics import gram_degree_eigenvalues

    _check_backend(args)
    bl = gram_degree_eigenvalues(args.activation, d=args.d, n=args.n, measure=args.measure, rng=args.seed,
                                 backend=args.backend)
    res = {"params": _params(args), "degrees": list(bl.degrees), "predicted": bl.predicted, "gram_mean": bl.mean,
           "gram_std": bl.std, "multiplicity": list(bl.multiplicity)}
    text = "\n".join([f"Gram eigenvalues of K/n by degree ({args.activation}, d={args.d}, n={args.n}, "
                      f"{args.measure})"] + [f"  k={k}: predicted {p:.6g}, Gram block mean {m:.6g} "
                                             f"({100 * (m / p - 1):+.2f}%)" for k, p, m in
                                             zip(bl.degrees, bl.predicted, bl.mean)])
    return _finish(res, args, text, "spectrum")


def _sim_alignment(args) -> int:
    import numpy as np

    from rmtfl.compare import mean_stderr
    from rmtfl.numerics import gram_alignment
    from rmtfl.theory import zonal_top_eigenfunction

    _check_backend(args)
    rng = np.random.default_rng(args.seed)
    rows = []
    for b in floats("--b", args.b):
        runs = [gram_alignment(args.activation, d=args.d, n=args.n, b=b, A=args.A, measure=args.measure, rng=g,
                               backend=args.backend) for g in rng.spawn(args.seeds)]
        m, se = mean_stderr([r.cos2_y2 for r in runs])
        z = zonal_top_eigenfunction(args.activation, d=args.d, b=b, A=args.A, mixing=False)
        rows.append({"b": b, "cos2_y2_gram": m, "cos2_y2_se": se, "cos2_y2_zonal": float(z.overlaps[2]),
                     "cos2_y0_gram": mean_stderr([r.cos2_y0 for r in runs]).mean,
                     "cos2_y0_zonal": float(z.overlaps[0]),
                     "cos2_psi_gram": mean_stderr([r.cos2_psi for r in runs]).mean,
                     "eig_gram": mean_stderr([r.eigenvalue for r in runs]).mean, "eig_zonal": z.eigenvalue})
    res = {"params": _params(args), "rows": rows,
           "convention": "cos2_* are squared overlaps <phi_top, Y>^2 (docs/conventions.md §1)"}
    fig = None
    if args.out:
        plt = pyplot()
        from rmtfl.plots import plot_y2_alignment

        bs = [r["b"] for r in rows]
        fig, ax = plt.subplots(figsize=(4.6, 3.6))
        plot_y2_alignment(bs, [r["cos2_y2_zonal"] for r in rows], bs, [r["cos2_y2_gram"] for r in rows],
                          [r["cos2_y2_se"] for r in rows], ax=ax,
                          title=f"{args.activation}, d={args.d}, n={args.n}")
    text = "\n".join([f"squared overlap cos^2(phi_top, Y2) of the top Gram eigenvector ({args.activation}, "
                      f"d={args.d}, n={args.n}, A={args.A:g})"] +
                     [f"  b={r['b']:g}: Gram {r['cos2_y2_gram']:.4f} ± {r['cos2_y2_se']:.4f}, "
                      f"zonal {r['cos2_y2_zonal']:.4f}" for r in rows])
    return _finish(res, args, text, "alignment", fig)


def _sim_spike(args) -> int:
    import numpy as np

    from rmtfl.compare import mean_stderr
    from rmtfl.numerics import measure_spike, one_step_weights
    from rmtfl.theory import eta_from_b, spike_constants

    _check_backend(args)
    rng = np.random.default_rng(args.seed)
    eta = eta_from_b(args.activation, args.target, psi=args.N / args.d, b=args.b)
    sc = spike_constants(args.activation, args.target, N=args.N, d=args.d, n=args.n, eta=eta, noise=args.noise)
    ms = []
    for g in rng.spawn(args.seeds):
        r = one_step_weights(args.activation, args.target, N=args.N, d=args.d, n=args.n, eta=eta, noise=args.noise,
                             rng=g, backend=args.backend)
        ms.append(measure_spike(r.W1, r.beta_star, W0=r.W0))
    sp, sp_se = mean_stderr([x.spike for x in ms])
    orth, orth_se = mean_stderr([x.orthogonal for x in ms])
    res = {"params": _params(args, eta=eta),
           "spike_measured": sp, "spike_se": sp_se, "spike_predicted": sc.spike_variance,
           "orthogonal_measured": orth, "orthogonal_se": orth_se, "orthogonal_predicted": sc.orthogonal_variance,
           "cos2_top_singular": float(np.mean([x.cos2_top for x in ms])), "cos2_hhat_predicted": sc.cos2_hhat}
    text = (f"one-step weights (eta_1={eta:.4g}, N={args.N}, d={args.d}, n={args.n}, {args.seeds} seeds)\n"
            f"  d E<w,beta*>^2: {sp:.4f} ± {sp_se:.4f}   predicted 1 + dB = {sc.spike_variance:.4f}\n"
            f"  orthogonal:     {orth:.4f} ± {orth_se:.4f}   predicted d A' = {sc.orthogonal_variance:.4f}")
    return _finish(res, args, text, "spike")


def _sim_generalisation(args) -> int:
    from rmtfl.numerics import generalisation_experiment

    _check_backend(args)
    n = 4 * args.d if args.n is None else args.n
    n2 = n if args.n2 is None else args.n2
    widths = tuple(ints("--N", args.N))
    r = generalisation_experiment(args.activation, args.target, d=args.d, n=n, n2=n2,
                                  n_test=10 * n2 if args.n_test is None else args.n_test, N=widths, b=args.b,
                                  lam=args.lam, noise=args.noise, seeds=args.seeds, rng=args.seed, backend=args.backend)
    res = {"params": {**_params(args), **r.params}, **{k: v for k, v in r.to_dict().items() if k != "params"}}
    fig = None
    if args.out:
        plt = pyplot()
        from rmtfl.plots import plot_test_error

        fig, ax = plt.subplots(figsize=(4.8, 3.6))
        plot_test_error(r.N, r.nn, r.nn_se, r.kernels, ax=ax, rf=r.rf, rf_se=r.rf_se,
                        title=f"d={args.d}, b={args.b:g}")
    text = "\n".join([f"test MSE (d={args.d}, b={args.b:g}, {args.seeds} seeds)"] +
                     [f"  N={m}: one-step NN {a:.4f} ± {s:.4f}   RF(init) {f:.4f}" for m, a, s, f in
                      zip(r.N, r.nn, r.nn_se, r.rf)] +
                     [f"  KRR {k}: {v[0]:.4f} ± {v[1]:.4f}" for k, v in r.kernels.items()])
    return _finish(res, args, text, "generalisation", fig)


def _activation(p) -> None:
    p.add_argument("--activation", default=_defaults.ACTIVATION, help=ACTIVATION_HELP)


def _target(p) -> None:
    p.add_argument("--target", default=_defaults.TARGET, help=TARGET_HELP)
    p.add_argument("--noise", type=float, default=0.0, help="label-noise standard deviation (default 0)")


def _measure(p, default: str) -> None:
    p.add_argument("--measure", default=default, choices=["gaussian", "sphere"],
                   help=f"input measure (default {default}; docs/conventions.md §8)")


def register(groups, top) -> None:
    """Add ``rmtfl theory kernel {spectrum,zonal,linear,spike}`` and ``rmtfl simulate kernel ...``."""
    th = groups["theory"].add_parser("kernel", help="spiked random-features kernel: spectra, zonal, spike")
    kinds = th.add_subparsers(dest="kind", required=True, metavar="KIND")

    def theory(name, help_):
        return kinds.add_parser(name, help=help_, parents=[options(json=True, out=f"kernel_theory_{name}.json")])

    p = theory("spectrum", "Funk-Hecke eigenvalues of k_I on the sphere, by degree")
    _activation(p)
    p.add_argument("--d", type=int, default=10, help="dimension (default 10)")
    p.add_argument("--kmax", type=int, default=6, help="highest degree (default 6)")
    p.set_defaults(func=_theory_spectrum)

    p = theory("zonal", "top even eigenfunction of k_Gamma, Gamma = A(I + b v v^T), on the sphere")
    p.add_argument("--activation", default=None,
                   help=f"{ACTIVATION_HELP} (default {_defaults.ACTIVATION}; relu with --rho)")
    p.add_argument("--d", type=int, default=None, help="dimension (default 10)")
    p.add_argument("--b", type=float, default=None, help="spike ratio B/A (default 5)")
    p.add_argument("--A", type=float, default=None, help="bulk scale A (default 1)")
    p.add_argument("--rho", type=float, default=None, help="instead: the d -> inf operator of relu with b = rho d")
    p.set_defaults(func=_theory_zonal)

    p = theory("linear", "eigenvalues of the linear sector of k_Gamma along beta* and orthogonal to it")
    _activation(p)
    p.add_argument("--d", type=int, default=10, help="dimension (default 10)")
    p.add_argument("--A", type=float, default=None, help="bulk scale A (default 1/d)")
    p.add_argument("--B", type=float, default=0.5, help="spike B (default 0.5)")
    _measure(p, "gaussian")
    p.set_defaults(func=_theory_linear)

    p = theory("spike", "the one-step weight law: A, B, b = B/A and the h_hat and isotropic forms")
    _activation(p)
    _target(p)
    p.add_argument("--eta", type=float, required=True, help="rmtfl step size eta_1")
    p.add_argument("--N", type=int, default=512, help="width (default 512)")
    p.add_argument("--d", type=int, default=256, help="dimension (default 256)")
    p.add_argument("--n", type=int, default=1024, help="batch size (default 1024)")
    p.set_defaults(func=_theory_spike)

    si = groups["simulate"].add_parser("kernel", help="Gram spectra, Y2 alignment, one-step spike, test error")
    kinds = si.add_subparsers(dest="kind", required=True, metavar="KIND")

    def simulate(name, help_, figure=False):
        what = f"kernel_{name}.json" + (f" and kernel_{name}.png" if figure else "")
        return kinds.add_parser(name, help=help_, parents=[options(
            json=True, out=what, seed="root seed of the draws", backend="the Gram matrices and networks")])

    p = simulate("spectrum", "Gram eigenvalues of K/n by degree against the sphere spectrum")
    _activation(p)
    p.add_argument("--d", type=int, default=10, help="dimension (default 10)")
    p.add_argument("--n", type=int, default=2000, help="samples (default 2000)")
    _measure(p, "sphere")
    p.set_defaults(func=_sim_spectrum)

    p = simulate("alignment", "squared overlap of the top Gram eigenvector with Y2, against the zonal theory",
                 figure=True)
    _activation(p)
    p.add_argument("--d", type=int, default=10, help="dimension (default 10)")
    p.add_argument("--n", type=int, default=2000, help="samples (default 2000)")
    p.add_argument("--b", default="0,5,20", help="spike ratio(s) b, comma-separated (default 0,5,20)")
    p.add_argument("--A", type=float, default=1.0, help="bulk scale A (default 1)")
    p.add_argument("--seeds", type=int, default=3, help="draws per b (default 3)")
    _measure(p, "sphere")
    p.set_defaults(func=_sim_alignment)

    p = simulate("spike", "one-step weights: spike and orthogonal second moments against the law")
    _activation(p)
    _target(p)
    p.add_argument("--N", type=int, default=512, help="width (default 512)")
    p.add_argument("--d", type=int, default=256, help="dimension (default 256)")
    p.add_argument("--n", type=int, default=1024, help="batch size (default 1024)")
    p.add_argument("--b", type=float, default=3.0, help="spike ratio b; eta_1 from it (default 3)")
    p.add_argument("--seeds", type=int, default=4, help="draws (default 4)")
    p.set_defaults(func=_sim_spike)

    p = simulate("generalisation", "test error of the one-step network and random features, against KRR",
                 figure=True)
    _activation(p)
    _target(p)
    p.add_argument("--N", default="128,512,2048", help="width(s), comma-separated (default 128,512,2048)")
    p.add_argument("--d", type=int, default=64, help="dimension (default 64)")
    p.add_argument("--n", type=int, default=None, help="samples of the step (default 4 d)")
    p.add_argument("--n2", type=int, default=None, help="samples of the ridge readout (default n)")
    p.add_argument("--n-test", dest="n_test", type=int, default=None, help="test samples (default 10 n2)")
    p.add_argument("--b", type=float, default=5.0, help="spike ratio b; eta_1 from it (default 5)")
    p.add_argument("--lam", type=float, default=1e-2, help="ridge penalty (default 0.01)")
    p.add_argument("--seeds", type=int, default=4, help="draws (default 4)")
    p.set_defaults(func=_sim_generalisation)
