"""Marchenko–Pastur histogram and the BBP transition of a rank-one spike.

Writes ``mp_bbp.png``: (a) ESD of ``W W^T`` against the MP density at ``psi = 0.5``
and ``psi = 2`` (atom at 0 not drawn), (b) top singular value of
``W0 + theta u v^T`` versus ``theta`` with the BGN curve, the bulk edge
``1 + sqrt(psi)`` and the threshold ``psi^{1/4}``, (c) squared overlaps of the
top left (N side) and right (d side) singular vectors with ``u`` and ``v``.
``W0`` is ``N x d`` with iid ``N(0, 1/d)`` entries; simulated points are
means ± s.e. over seeds.

Usage: ``python figures/mp_bbp.py --out DIR [--quick]``.
"""
from __future__ import annotations

from pathlib import Path


def main(argv=None) -> int:
    from rmtfl.compare._figures import figure_args

    args = figure_args(__doc__, argv)
    import matplotlib.pyplot as plt
    import numpy as np

    from rmtfl.compare._classical import simulate_bbp
    from rmtfl.compare import save_figure
    from rmtfl.numerics import gaussian_matrix
    from rmtfl.numerics import eigenvalues_of_gram
    from rmtfl.plots._classical import plot_bbp_outlier, plot_bbp_overlaps, plot_mp_histogram
    from rmtfl.theory import bgn_threshold

    N = 300 if args.quick else 1000
    seeds = 3 if args.quick else 6
    factors = (0.4, 0.8, 1.2, 1.6, 2.2, 3.0) if not args.quick else (0.5, 1.5, 2.5)
    psis = (0.5, 2.0)
    rng = np.random.default_rng(args.seed)
    r_hist, r_bbp = rng.spawn(2)
    fig, axes = plt.subplots(3, 2, figsize=(9.2, 10.0), constrained_layout=True)
    for j, (psi, r_h, r_b) in enumerate(zip(psis, r_hist.spawn(2), r_bbp.spawn(2))):
        W = gaussian_matrix(N, int(round(N / psi)), rng=r_h)
        plot_mp_histogram(eigenvalues_of_gram(W), psi, ax=axes[0, j], bins=50)
        thetas = [f * bgn_threshold(psi) for f in factors]
        sim = simulate_bbp(thetas, N=N, psi=psi, rngs=r_b.spawn(seeds))
        plot_bbp_outlier(sim.theta, sim.singular_value, sim.singular_value_se, psi=psi, ax=axes[1, j])
        plot_bbp_overlaps(sim.theta, sim.cos2_left, sim.cos2_left_se, sim.cos2_right, sim.cos2_right_se,
                          psi=psi, ax=axes[2, j])
    out = Path(args.out)
    save_figure(fig, out / "mp_bbp.png", {"N": N, "psi": list(psis), "theta_over_threshold": list(factors),
                                          "seeds": seeds, "seed": args.seed, "quick": args.quick})
    plt.close(fig)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
