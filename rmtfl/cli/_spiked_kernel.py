"""CLI subcommands of the spiked-kernel part (issue 4).

::

    rmtfl theory kernel spectrum [--activation relu] [--d 10] [--kmax 6]
    rmtfl theory kernel zonal    [--activation relu] [--d 10] [--b 5] | [--rho 0.5]
    rmtfl theory kernel linear   [--activation relu] [--d 10] [--A 0.1] [--B 0.5] [--measure gaussian]
    rmtfl theory kernel spike    --eta 4 --n 1024 --m 512 --d 256 [--target linear] [--noise 0]
    rmtfl simulate kernel spectrum       [--d 10] [--n 3000]
    rmtfl simulate kernel alignment      [--d 10] [--n 2000] [--b 0,5,20] [--seeds 3]
    rmtfl simulate kernel spike          [--d 256] [--m 512] [--n 1024] [--b 3] [--seeds 4]
    rmtfl simulate kernel generalisation [--d 64] [--widths 128,512,2048] [--b 5] [--seeds 4]

All take ``--json`` (print JSON) and ``--out DIR`` (write ``kernel_<what>.json``, and for
``simulate alignment|generalisation`` a PNG with its JSON sidecar).  Eigenvalues
are w.r.t. the input probability measure; step sizes are rmtfl's ``eta_1``
(docs/conventions.md §10.2 for giant-step conversions).  Overlaps are squared
(docs/conventions.md §1): ``overlaps`` / ``cos2_*`` are ``<f, Y>^2``; the zonal command also
reports the signed ``amplitudes`` ``<f, Y_ell>``.  ``simulate`` commands take
``--backend numpy|cupy`` (random numbers drawn on the host either way).
"""
from __future__ import annotations

import json
from pathlib import Path

__all__ = ["register"]


def _floats(s: str) -> list[float]:
    try:
        return [float(x) for x in s.split(",") if x.strip()]
    except ValueError:
        raise ValueError(f"expected a comma-separated list of numbers, got {s!r}") from None


def _ints(s: str) -> list[int]:
    try:
        return [int(x) for x in s.split(",") if x.strip()]
    except ValueError:
        raise ValueError(f"expected a comma-separated list of integers, got {s!r}") from None


def _finish(result: dict, args, text: str, name: str, fig=None) -> int:
    from rmtfl.cli._main import emit
    from rmtfl.compare import to_jsonable

    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / f"kernel_{name}.json").write_text(json.dumps(result, indent=2, default=to_jsonable))
        if fig is not None:
            import matplotlib.pyplot as plt

            from rmtfl.compare import save_figure

            save_figure(fig, out / f"kernel_{name}.png", result.get("params", {}))
            plt.close(fig)
    elif fig is not None:
        import matplotlib.pyplot as plt

        plt.close(fig)
    emit(result, args, text)
    return 0


# ------------------------------------------------------------------ theory
def _theory(args) -> int:
    what = args.kind
    if what == "spectrum":
        from rmtfl.theory import sphere_eigenvalues

        sp = sphere_eigenvalues(args.activation, args.d, args.kmax)
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
    if what == "zonal":
        from rmtfl.theory import zonal_limit_operator, zonal_top_eigenfunction

        if args.rho is not None:
            z = zonal_limit_operator(args.rho)
            head = f"d -> inf zonal operator, b = rho d, rho={args.rho:g}"
        else:
            z = zonal_top_eigenfunction(args.activation, args.d, args.b, A=args.A)
            head = f"zonal top even eigenfunction ({args.activation}, d={args.d}, b={args.b:g}, A={args.A:g})"
        res = {"d": z.d, "b": z.b, "A": z.A, "eigenvalue": z.eigenvalue, "overlaps": z.overlaps,
               "amplitudes": z.amplitudes, "tan_mix": z.tan_mix, "odd_eigenvalue": z.odd_eigenvalue,
               "eps_over_b": z.eps_over_b,
               "convention": "overlaps[l] = <f,Y_l>^2 (squared, docs/conventions.md §1); amplitudes[l] = <f,Y_l> "
                             "signed with <f,Y_0> > 0"}
        text = (f"{head}\n  top even eigenvalue {z.eigenvalue:.6g}, top odd {z.odd_eigenvalue:.6g}\n"
                f"  squared overlaps cos^2(f,Y_0)={z.overlaps[0]:.5f} cos^2(f,Y_2)={z.overlaps[2]:.5f} "
                f"cos^2(f,Y_4)={z.overlaps[4]:.3e}\n"
                f"  amplitudes <f,Y_0>={z.amplitudes[0]:.5f} <f,Y_2>={z.amplitudes[2]:+.5f} "
                f"<f,Y_4>={z.amplitudes[4]:+.5f}  tan(theta_mix)={z.tan_mix:.5f}  "
                f"eps/b (first order)={z.eps_over_b:.5g}")
        return _finish(res, args, text, "theory_zonal")
    if what == "linear":
        from rmtfl.theory import linear_sector

        A = args.A if args.A is not None else 1.0 / args.d
        ls = linear_sector(args.activation, A, args.B, args.d, args.measure)
        res = {"A": A, "B": args.B, "d": args.d, "measure": ls.measure, "target": ls.target,
               "orthogonal": ls.orthogonal, "boost": ls.boost, "exact": ls.exact}
        text = (f"linear sector ({args.activation}, {ls.measure} inputs, A={A:g}, B={args.B:g}, d={args.d}):\n"
                f"  <beta*,x>: {ls.target:.6g}   <e,x> (e ⊥ beta*): {ls.orthogonal:.6g}   boost {ls.boost:.4g}"
                f"   ({'exact eigenvalues' if ls.exact else 'Rayleigh quotients (compression)'})")
        return _finish(res, args, text, "theory_linear")
    # spike
    from rmtfl.theory import spike_constants

    if args.eta is None:
        raise ValueError("--eta is required for 'rmtfl theory kernel spike'")
    sc = spike_constants(args.activation, args.target, args.eta, args.n, args.m, args.d, noise=args.noise)
    from dataclasses import asdict

    res = asdict(sc)
    text = (f"one-step weight law, eta_1={sc.eta:g} (giant-step eta_G={sc.eta_giant:.4g}), "
            f"n={sc.n}, m={sc.m}, d={sc.d}\n"
            f"  target form:    A={sc.A:.6g}  B={sc.B:.6g}  b=B/A={sc.b:.6g}"
            f"   (d E<w,beta*>^2 = {sc.spike_variance:.5g})\n"
            f"  h_hat form:     A={sc.A_hhat:.6g}  B={sc.B_hhat:.6g}  b={sc.b_hhat:.6g}"
            f"  cos^2(h,beta*)={sc.cos2_hhat:.5f}\n"
            f"  isotropic form: A'={sc.A_prime:.6g}  B'={sc.B_prime:.6g}   (d A' = {sc.orthogonal_variance:.5g})")
    return _finish(res, args, text, "theory_spike")


# ---------------------------------------------------------------- simulate
def _simulate(args) -> int:
    import numpy as np

    from rmtfl.compare import mean_stderr

    what = args.kind
    rng = np.random.default_rng(args.seed)
    if what == "spectrum":
        from rmtfl.numerics import gram_degree_eigenvalues

        bl = gram_degree_eigenvalues(args.activation, args.d, args.n, rng=rng, measure=args.measure,
                                     backend=args.backend)
        res = {"params": {"d": args.d, "n": args.n, "measure": args.measure, "seed": args.seed,
                          "backend": args.backend},
               "degrees": list(bl.degrees), "predicted": bl.predicted, "gram_mean": bl.mean, "gram_std": bl.std,
               "multiplicity": list(bl.multiplicity)}
        text = "\n".join([f"Gram eigenvalues of K/n by degree ({args.activation}, d={args.d}, n={args.n}, "
                          f"{args.measure})"] + [f"  k={k}: predicted {p:.6g}, Gram block mean {m:.6g} "
                                                 f"({100 * (m / p - 1):+.2f}%)" for k, p, m in
                                                 zip(bl.degrees, bl.predicted, bl.mean)])
        return _finish(res, args, text, "spectrum")
    if what == "alignment":
        from rmtfl.numerics import gram_alignment
        from rmtfl.theory import zonal_top_eigenfunction

        rows = []
        for b in _floats(args.b):
            runs = [gram_alignment(args.d, args.n, b, rng=g, measure=args.measure, backend=args.backend)
                    for g in rng.spawn(args.seeds)]
            m, se = mean_stderr([r.cos2_y2 for r in runs])
            z = zonal_top_eigenfunction("relu", args.d, b, mixing=False)
            rows.append({"b": b, "cos2_y2_gram": m, "cos2_y2_se": se, "cos2_y2_zonal": float(z.overlaps[2]),
                         "cos2_y0_gram": mean_stderr([r.cos2_y0 for r in runs])[0],
                         "cos2_y0_zonal": float(z.overlaps[0]),
                         "cos2_psi_gram": mean_stderr([r.cos2_psi for r in runs])[0],
                         "eig_gram": mean_stderr([r.eigenvalue for r in runs])[0], "eig_zonal": z.eigenvalue})
        res = {"params": {"d": args.d, "n": args.n, "seeds": args.seeds, "measure": args.measure,
                          "seed": args.seed, "backend": args.backend},
               "convention": "cos2_* are squared overlaps <phi_top, Y>^2 (docs/conventions.md §1)", "rows": rows}
        fig = None
        if args.out:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt

            from rmtfl.plots._spiked_kernel import plot_y2_alignment

            bs = [r["b"] for r in rows]
            fig, ax = plt.subplots(figsize=(4.6, 3.6))
            plot_y2_alignment(bs, [r["cos2_y2_zonal"] for r in rows], bs, [r["cos2_y2_gram"] for r in rows],
                              [r["cos2_y2_se"] for r in rows], ax=ax, title=f"relu, d={args.d}, n={args.n}")
        text = "\n".join([f"squared overlap cos^2(phi_top, Y2) of the top Gram eigenvector (relu, d={args.d}, "
                          f"n={args.n})"] +
                         [f"  b={r['b']:g}: Gram {r['cos2_y2_gram']:.4f} ± {r['cos2_y2_se']:.4f}, "
                          f"zonal {r['cos2_y2_zonal']:.4f}" for r in rows])
        return _finish(res, args, text, "alignment", fig)
    if what == "spike":
        from rmtfl.numerics import measure_spike, one_step_weights
        from rmtfl.theory import eta_from_b, spike_constants

        eta = eta_from_b(args.activation, args.target, args.b, args.m, args.d)
        sc = spike_constants(args.activation, args.target, eta, args.n, args.m, args.d, noise=args.noise)
        ms = []
        for g in rng.spawn(args.seeds):
            r = one_step_weights(args.activation, args.target, args.d, args.m, args.n, eta, noise=args.noise, rng=g,
                                 backend=args.backend)
            ms.append(measure_spike(r.W1, r.beta_star, r.W0))
        sp, sp_se = mean_stderr([x.spike for x in ms])
        orth, orth_se = mean_stderr([x.orthogonal for x in ms])
        res = {"params": {"d": args.d, "m": args.m, "n": args.n, "b": args.b, "eta": eta, "seeds": args.seeds,
                          "backend": args.backend},
               "spike_measured": sp, "spike_se": sp_se, "spike_predicted": sc.spike_variance,
               "orthogonal_measured": orth, "orthogonal_se": orth_se, "orthogonal_predicted": sc.orthogonal_variance,
               "cos2_top_singular": float(np.mean([x.cos2_top for x in ms])), "cos2_hhat_predicted": sc.cos2_hhat}
        text = (f"one-step weights (eta_1={eta:.4g}, d={args.d}, m={args.m}, n={args.n}, {args.seeds} seeds)\n"
                f"  d E<w,beta*>^2: {sp:.4f} ± {sp_se:.4f}   predicted 1 + dB = {sc.spike_variance:.4f}\n"
                f"  orthogonal:     {orth:.4f} ± {orth_se:.4f}   predicted d A' = {sc.orthogonal_variance:.4f}")
        return _finish(res, args, text, "spike")
    # generalisation
    from rmtfl.numerics import generalisation_experiment

    n1 = args.n1 or 4 * args.d
    res_obj = generalisation_experiment(args.activation, args.target, d=args.d, n1=n1, n2=args.n2 or n1,
                                        n_test=args.n_test or 10 * (args.n2 or n1), widths=_ints(args.widths),
                                        b=args.b, lam=args.lam, noise=args.noise, seeds=args.seeds, rng=rng,
                                        backend=args.backend)
    res = {"params": res_obj.params, "widths": list(res_obj.widths), "nn": res_obj.nn, "nn_se": res_obj.nn_se,
           "rf": res_obj.rf, "rf_se": res_obj.rf_se, "kernels": res_obj.kernels}
    fig = None
    if args.out:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        from rmtfl.plots._spiked_kernel import plot_test_error

        fig, ax = plt.subplots(figsize=(4.8, 3.6))
        plot_test_error(res_obj.widths, res_obj.nn, res_obj.nn_se, res_obj.kernels, ax=ax, rf=res_obj.rf,
                        rf_se=res_obj.rf_se, title=f"d={args.d}, b={args.b:g}")
    text = "\n".join([f"test MSE (d={args.d}, b={args.b:g}, {args.seeds} seeds)"] +
                     [f"  m={m}: one-step NN {a:.4f} ± {s:.4f}   RF(init) {r:.4f}" for m, a, s, r in
                      zip(res_obj.widths, res_obj.nn, res_obj.nn_se, res_obj.rf)] +
                     [f"  KRR {k}: {v[0]:.4f} ± {v[1]:.4f}" for k, v in res_obj.kernels.items()])
    return _finish(res, args, text, "generalisation", fig)


def _common(p):
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--out", default=None, help="folder for kernel_<what>.json (and figures)")
    p.add_argument("--activation", default="relu", help="activation name (default relu)")


def register(groups, top) -> None:
    """Add ``rmtfl theory kernel ...`` and ``rmtfl simulate kernel ...``."""
    th = groups["theory"].add_parser("kernel", help="spiked random-features kernel: spectra, zonal, spike")
    th.add_argument("kind", choices=["spectrum", "zonal", "linear", "spike"])
    _common(th)
    th.add_argument("--d", type=int, default=10)
    th.add_argument("--kmax", type=int, default=6)
    th.add_argument("--b", type=float, default=5.0, help="spike ratio B/A (zonal)")
    th.add_argument("--rho", type=float, default=None, help="d -> inf operator with b = rho d (zonal)")
    th.add_argument("--A", type=float, default=None, help="bulk scale A (linear: default 1/d; zonal: 1)")
    th.add_argument("--B", type=float, default=0.5, help="spike B (linear)")
    th.add_argument("--measure", default="gaussian", choices=["gaussian", "sphere"])
    th.add_argument("--eta", type=float, default=None, help="rmtfl step size eta_1 (spike)")
    th.add_argument("--n", type=int, default=1024)
    th.add_argument("--m", type=int, default=512)
    th.add_argument("--target", default="linear")
    th.add_argument("--noise", type=float, default=0.0)

    def _theory_defaults(args):
        if args.kind == "zonal" and args.A is None:
            args.A = 1.0
        return _theory(args)

    th.set_defaults(func=_theory_defaults)

    si = groups["simulate"].add_parser("kernel", help="Gram spectra, Y2 alignment, one-step spike, test error")
    si.add_argument("kind", choices=["spectrum", "alignment", "spike", "generalisation"])
    _common(si)
    si.add_argument("--d", type=int, default=10)
    si.add_argument("--n", type=int, default=2000)
    si.add_argument("--m", type=int, default=512)
    si.add_argument("--b", default="5", help="spike ratio b (alignment: comma list)")
    si.add_argument("--seeds", type=int, default=3)
    si.add_argument("--seed", type=int, default=0)
    si.add_argument("--measure", default="sphere", choices=["gaussian", "sphere"])
    si.add_argument("--target", default="hermite(0, 1, 0.5)")
    si.add_argument("--noise", type=float, default=0.0)
    si.add_argument("--widths", default="128,512,2048")
    si.add_argument("--n1", type=int, default=None)
    si.add_argument("--n2", type=int, default=None)
    si.add_argument("--n-test", dest="n_test", type=int, default=None)
    si.add_argument("--lam", type=float, default=1e-2)
    si.add_argument("--backend", default="numpy", choices=["numpy", "cupy"],
                    help="array backend for the sampled Gram matrices and networks (default numpy)")

    def _sim_defaults(args):
        from rmtfl.numerics import get_backend

        get_backend(args.backend)  # fail cleanly (exit 2) before any work if cupy is unusable
        if args.kind != "alignment":
            vals = _floats(args.b)
            if len(vals) != 1:
                raise ValueError(f"--b must be one number for '{args.kind}', got {args.b!r}")
            args.b = vals[0]
        return _simulate(args)

    si.set_defaults(func=_sim_defaults)
