"""One large gradient step: alignment of W1's top singular vectors against eta.

Writes ``one_step.png``: (a) cos^2 of the top right singular vector with beta* and of the
top left one with a, theory (BBP/BGN, docs/theory/two_step.md §3.3) over simulated means ± s.e.;
(b) top singular value of W1 with the bulk edge 1 + sqrt(psi).  tanh network, linear
target, psi = 1, phi = 2; W0 entries N(0, 1/d), a ~ N(0, I/N), correlation loss.

Usage: ``python figures/one_step.py --out DIR [--quick]``.
"""
from __future__ import annotations

from pathlib import Path


def main(argv=None) -> int:
    from rmtfl.compare._figures import figure_args

    args = figure_args(__doc__, argv)
    import matplotlib.pyplot as plt
    import numpy as np

    from rmtfl.compare import mean_stderr
    from rmtfl.compare import save_figure
    from rmtfl.numerics import simulate_one_step
    from rmtfl.plots._two_step import plot_alignment_vs_eta
    from rmtfl.theory import one_step

    N = 300 if args.quick else 1000
    seeds = 2 if args.quick else 3
    psi, phi = 1.0, 2.0
    etas = [0.6, 1.2, 1.6, 2.0, 3.0, 4.0] if not args.quick else [0.8, 2.0, 3.5]
    grid = np.linspace(0.2, 4.5, 200)
    th = [one_step("tanh", "linear", psi=psi, phi=phi, eta=e) for e in grid]
    kids = np.random.default_rng(args.seed).spawn(len(etas))
    pts = {"cos2 target": [], "cos2 a": []}
    err = {"cos2 target": [], "cos2 a": []}
    s1, s1e = [], []
    for eta, g in zip(etas, kids):
        rs = [simulate_one_step("tanh", "linear", N=N, d=N, n=int(phi * N), eta=eta, k=4, rng=c)
              for c in g.spawn(seeds)]
        for key, vals in (("cos2 target", [r.cos2_target[0, 0] for r in rs]),
                          ("cos2 a", [r.cos2_a_powers[0, 0] for r in rs])):
            m, se = mean_stderr(vals)
            pts[key].append(m)
            err[key].append(se)
        m, se = mean_stderr([r.singular_values[0] for r in rs])
        s1.append(m)
        s1e.append(se)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    plot_alignment_vs_eta(grid, {"cos2 target": [q.cos2_target for q in th], "cos2 a": [q.cos2_second_layer for q in th]},
                          etas, pts, err, threshold=th[0].threshold, ax=axes[0],
                          title=f"one step, tanh, linear target, N=d={N}, n={int(phi * N)}")
    axes[1].plot(grid, [q.singular_value for q in th], "C0", label="theory s1(W1)")
    axes[1].errorbar(etas, s1, yerr=s1e, fmt="o", color="C0", ms=4, label=f"simulated ({seeds} seeds)")
    axes[1].axhline(1 + psi**0.5, color="gray", ls=":", label="bulk edge")
    axes[1].set_xlabel(r"step size $\eta$")
    axes[1].set_ylabel("top singular value")
    axes[1].legend(fontsize=8)
    fig.tight_layout()
    out = Path(args.out)
    save_figure(fig, out / "one_step.png", {"N": N, "psi": psi, "phi": phi, "etas": etas, "seeds": seeds,
                                            "seed": args.seed, "activation": "tanh", "target": "linear"})
    plt.close(fig)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
