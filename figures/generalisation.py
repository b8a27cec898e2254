"""Test error versus width: one-step network (ridge readout) against KRR with k0, k1(beta*), k1(h_hat).

One correlation-loss step on ``n = 4d`` samples with ``eta = sqrt(b psi)/|mu_1 mu_1*|``
(fixed ``b`` as the width ``N`` grows), ridge readout on fresh ``n2 = 4d`` samples with
``lam = 1e-2``; relu, target ``He_1 + He_2/2``, Gaussian inputs (docs/theory/spiked_kernel.md §7.2).
The KRR baselines are width-independent and drawn as lines (mean ± s.e. band).

Usage: ``python figures/generalisation.py --out DIR [--quick]``.
"""
from __future__ import annotations

from pathlib import Path


def main(argv=None) -> int:
    from rmtfl.compare._figures import figure_args

    args = figure_args(__doc__, argv)
    import matplotlib.pyplot as plt

    from rmtfl.compare import save_figure
    from rmtfl.numerics import generalisation_experiment
    from rmtfl.plots._spiked_kernel import plot_test_error

    d = 32 if args.quick else 64
    Ns = (64, 256, 1024) if args.quick else (64, 128, 256, 512, 1024, 2048, 4096)
    seeds = 2 if args.quick else 4
    b = 5.0
    res = generalisation_experiment("relu", "hermite(0, 1, 0.5)", d=d, n=4 * d, n2=4 * d, n_test=40 * d,
                                    N=Ns, b=b, lam=1e-2, seeds=seeds, rng=args.seed)
    fig, ax = plt.subplots(figsize=(4.8, 3.6))
    plot_test_error(res.N, res.nn, res.nn_se, res.kernels, ax=ax, rf=res.rf, rf_se=res.rf_se,
                    title=f"relu, $g=He_1+He_2/2$, d={d}, b={b:g}")
    save_figure(fig, Path(args.out) / "generalisation.png", {**res.params, "seed": args.seed, "quick": args.quick})
    plt.close(fig)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
