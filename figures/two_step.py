"""Two large gradient steps: the spectrum of W2 with its MP bulk and predicted outliers.

Writes ``two_step.png``: histogram of the singular values of W2 for the exactly solvable
quadratic network sigma = He1 + He2/2 with target z + He2/sqrt2 (reused batch,
docs/theory/two_step.md §5.4), with the MP singular-value density of the bulk and the two outliers
predicted by BGN on the spiked low-rank part (docs/theory/two_step.md §8) marked; and the same for a
tanh network with fresh batches (Lambda = 0, one outlier).  psi = 1.

Usage: ``python figures/two_step.py --out DIR [--quick]``.
"""
from __future__ import annotations

from pathlib import Path


def main(argv=None) -> int:
    from rmtfl.compare._figures import figure_args

    args = figure_args(__doc__, argv)
    import matplotlib.pyplot as plt
    import numpy as np

    from rmtfl.compare import save_figure
    from rmtfl.numerics import simulate_two_step
    from rmtfl.plots._two_step import plot_spectrum
    from rmtfl.theory import two_step

    N = 500 if args.quick else 1500
    g1, g2 = np.random.default_rng(args.seed).spawn(2)
    sig, tgt = "hermite(0, 1, 0.5)", [0.0, 1.0, 2**-0.5]
    eta = round(8.0 * (N / 1500) ** 0.25, 3)
    pq = two_step(sig, tgt, psi=1.0, phi=4.0, eta1=eta, eta2=eta, N=N)
    rq = simulate_two_step(sig, tgt, N=N, d=N, n=4 * N, eta1=eta, eta2=eta, rng=g1)
    pt = two_step("tanh", "linear", psi=1.0, phi=2.0, eta1=1.5, eta2=1.5, batch="fresh", phi2=2.0, N=N)
    rt = simulate_two_step("tanh", "linear", N=N, d=N, n=2 * N, eta1=1.5, eta2=1.5, batch="fresh", n2=2 * N,
                           rng=g2)
    fig, axes = plt.subplots(1, 2, figsize=(12, 4))
    plot_spectrum(rq.singular_values, 1.0, [o.singular_value for o in pq.outliers], ax=axes[0],
                  title=f"W2: sigma=He1+He2/2, g=z+He2/sqrt2, reused, eta={eta}, N=d={N}, n={4 * N}")
    plot_spectrum(rt.singular_values, 1.0, [o.singular_value for o in pt.outliers], ax=axes[1],
                  title=f"W2: tanh, linear target, fresh, eta=1.5+1.5, N=d={N}")
    fig.tight_layout()
    save_figure(fig, Path(args.out) / "two_step.png",
                {"N": N, "eta_quadratic": eta, "phi_quadratic": 4.0, "seed": args.seed,
                 "predicted_quadratic": [o.singular_value for o in pq.outliers],
                 "measured_quadratic": rq.singular_values[:2].tolist(),
                 "predicted_tanh": [o.singular_value for o in pt.outliers],
                 "measured_tanh": rt.singular_values[:1].tolist()})
    plt.close(fig)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
