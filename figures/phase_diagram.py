"""The (alpha1, alpha2) phase diagram of two steps: theory (asymptotic and at N) beside simulation.

Writes ``phase_diagram.png``, sigma = He1 + He2/2 (L = 2), target z + He2/sqrt2, reused batch,
eta_t = c N^alpha_t, psi = 1, phi = 2:

(a) asymptotic number of outliers of W2, 1 + #{k <= Lambda: P_k != 0} (docs/theory/two_step.md §6), with the
    boundaries k alpha1 + alpha2 = k/2;
(b) the prediction at the simulated N (:func:`rmtfl.theory.two_step` with ``N``): the spikes of P at this N
    (coupled to the batch's extreme samples, docs/theory/two_step.md §8.3) above the predicted top of H = W2 - P,
    the widened finite-N bulk edge or the largest single-sample outlier, whichever is higher -- what (c) counts
    (large steps widen the bulk far beyond 1 + sqrt psi);
(c) simulation: the mean number of singular values of W2 above the top of its own bulk
    H = W2 - P (the sample's exact low-rank part, :func:`rmtfl.numerics.quadratic_bulk`), plus
    2 N^{-2/3} relative;
(d) where a reused batch learns the He3 direction (information exponent 3), tanh network.

Why (a) and (c) differ at N = 800 (measured): the boundaries are statements about exponents, and
N^0.05 = 1.4 here.  The second spike is above the BBP threshold wherever alpha1 + alpha2 >= 0.25
or so, long before its asymptotic boundary 0.5, while the bulk widens (at alpha1 = alpha2 = 0.4 its
predicted edge is 20.5, ten times 1 + sqrt psi, for this target (5.3 for a linear one; simulated
19.96 +- 1.09 and 5.36 +- 0.08), and ~140 values exceed the MP edge plus the Tracy-Widom margin,
so counts against the MP edge mean nothing there).  (b) is much closer to (c) than (a) is: the sidecar
records the fraction of the 25 points where they agree.  The total count of outliers (single-sample ones
included, the count rule of docs/theory/two_step.md §9.2) is the map :func:`rmtfl.theory.finite_n_outlier_map`
draws; ``benchmarks/bench_phase_agreement.py`` sets it beside simulations counted by the same rule.  The
asymptotic map itself needs much larger N (``rmtfl sweep --scheduler``).

Usage: ``python figures/phase_diagram.py --out DIR [--quick]``.
"""
from __future__ import annotations

from pathlib import Path


def _spikes_above_own_bulk(sig, tgt, N, alpha1, alpha2, c):
    """Predicted spikes of P above the predicted top of H = W2 - P: the finite-N bulk edge or the largest
    single-sample outlier (docs/theory/two_step.md §8.3), whichever is higher."""
    import numpy as np

    from rmtfl.theory import step_size, two_step

    out = np.zeros((len(alpha2), len(alpha1)))
    for i, a2 in enumerate(alpha2):
        for j, a1 in enumerate(alpha1):
            p = two_step(sig, tgt, psi=1.0, phi=2.0, eta1=step_size(c, N=N, alpha=a1), eta2=step_size(c, N=N, alpha=a2),
                         N=N)
            top = max([p.bulk_edge] + [o.singular_value for o in p.outliers if o.kind == "sample"])
            out[i, j] = sum(o.kind == "spike" and o.singular_value > top for o in p.outliers)
    return out


def _own_bulk_count(sig, tgt, N, alpha1, alpha2, c, seeds):
    """Mean number of singular values of simulated W2 above the top of its own bulk H = W2 - P (the
    sample's exact low-rank part, quadratic sigma), plus 2 N^{-2/3} relative (the edge scale)."""
    import numpy as np

    from rmtfl.numerics import quadratic_bulk, simulate_two_step
    from rmtfl.theory import step_size

    out = np.zeros((len(alpha2), len(alpha1)))
    for i, a2 in enumerate(alpha2):
        for j, a1 in enumerate(alpha1):
            e1, e2 = step_size(c, N=N, alpha=a1), step_size(c, N=N, alpha=a2)
            counts = []
            for seed in seeds:  # integer seeds: the same draws for W2 and for its bulk
                kw = dict(N=N, d=N, n=2 * N, eta1=e1, eta2=e2, rng=int(seed))
                s = simulate_two_step(sig, tgt, **kw, k=6, n_vectors=1).singular_values
                top = quadratic_bulk(sig, tgt, **kw, k=1)[0]
                counts.append(int(np.sum(s > top * (1 + 2 * N ** (-2 / 3)))))
            out[i, j] = np.mean(counts)
    return out


def main(argv=None) -> int:
    from rmtfl.compare._figures import figure_args

    args = figure_args(__doc__, argv)
    import matplotlib.pyplot as plt
    import numpy as np

    from rmtfl.compare import save_figure
    from rmtfl.plots._two_step import plot_phase_map
    from rmtfl.theory import finite_n_outlier_map, phase_diagram

    N = 300 if args.quick else 800
    n_seeds = 1 if args.quick else 2
    grid = np.array([0.0, 0.2, 0.4]) if args.quick else np.round(np.arange(0.0, 0.45, 0.05), 2)
    coarse = grid if args.quick else np.round(np.arange(0.0, 0.45, 0.1), 2)
    sig, tgt, c = "hermite(0, 1, 0.5)", [0.0, 1.0, 2**-0.5], 1.0
    th = phase_diagram(grid, grid, activation=sig, target=tgt)
    fin = finite_n_outlier_map(coarse, coarse, activation=sig, target=tgt, psi=1.0, phi=2.0, N=N, c1=c, c2=c)
    spikes = _spikes_above_own_bulk(sig, tgt, N, coarse, coarse, c)
    seeds = np.random.default_rng(args.seed).integers(0, 2**62, size=n_seeds)
    emp = _own_bulk_count(sig, tgt, N, coarse, coarse, c, seeds)
    fine = np.linspace(0, 0.49, 99)
    he3 = phase_diagram(fine, fine, activation="tanh", target="he3n")
    fig, axes = plt.subplots(1, 4, figsize=(21, 4))
    vmax = 2.0
    plot_phase_map(grid, grid, 1 + th.effective, ax=axes[0], vmax=vmax, label="outliers",
                   title="theory, N -> inf: 1 + Lambda (sigma = He1 + He2/2)")
    plot_phase_map(coarse, coarse, spikes, ax=axes[1], vmax=vmax, label="outliers",
                   title=f"theory at N={N}: spikes of P above the top of W2 - P")
    plot_phase_map(coarse, coarse, emp, ax=axes[2], vmax=vmax, label="outliers",
                   title=f"simulation, N=d={N}, n=2N: above the own bulk, {n_seeds} seed(s)")
    plot_phase_map(fine, fine, he3.learnable.astype(float), ax=axes[3], vmax=1, label="learnable",
                   title="reused batch learns He3 (2 a1 + a2 > 1)")
    fig.tight_layout()
    agree = float(np.mean(spikes == np.round(emp)))
    save_figure(fig, Path(args.out) / "phase_diagram.png",
                {"N": N, "seeds": [int(x) for x in seeds], "grid": grid.tolist(), "coarse_grid": coarse.tolist(),
                 "c": c, "activation": sig, "target": tgt, "seed": args.seed,
                 "theory_asymptotic": (1 + th.effective).tolist(), "theory_finite_N_spikes_above_own_bulk": spikes.tolist(),
                 "theory_finite_N_count": fin.count.tolist(),
                 "finite_N_bulk_edge": fin.edge.tolist(), "empirical_above_own_bulk": emp.tolist(),
                 "fraction_of_points_finite_N_theory_equals_rounded_simulation": agree})
    plt.close(fig)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
