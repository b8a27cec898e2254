"""Spiked-kernel spectra: k0 vs k1 Gram eigenvalues by degree, and Y2 alignment of the top eigenvector vs b.

Writes ``kernel_spectrum.png`` (sorted Gram eigenvalues of ``K/n`` for relu ``k_I`` and
``k_{I + b v v^T}`` on the unit sphere, with the Funk–Hecke levels ``mu_k`` and the
predicted ``k_1`` levels: top even zonal eigenvalue and the boosted linear eigenvalue
``(1+b)/(4d)``) and ``y2_alignment.png`` (the squared overlap ``cos^2(phi_top, Y_2)`` of the
Gram top eigenvector, mean ± s.e. over seeds, over the zonal-operator curve ``<f, Y_2>^2`` and
its first-order line ``sin^2 theta_mix``; overlaps are squared, docs/conventions.md §1).
Eigenvalues are w.r.t. the uniform probability measure on ``S^{d-1}`` (docs/conventions.md §8).
At ``b = 40`` (``d = 10``) the top even and odd zonal eigenvalues are within 7 % (1.095 vs 1.025),
so at finite ``n`` the Gram top eigenvector mixes with ``psi* = <v, x>`` (``cos^2`` 0.22 ± 0.04
at ``n = 2000``, 0.05 ± 0.02 at ``n = 4000``; 4 seeds) and its squared ``Y_2`` overlap sits below
the curve (0.202 ± 0.005 at n = 2000, 0.219 ± 0.004 at n = 4000 vs ``<f, Y_2>^2`` = 0.2265),
converging as ``n`` grows.

Usage: ``python figures/kernel_spectrum.py --out DIR [--quick]``.
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
    from rmtfl.numerics import (gram_alignment, gram_degree_eigenvalues, kernel_gram, random_direction,
                                sample_sphere, top_gram_eigenpairs)
    from rmtfl.plots._spiked_kernel import plot_degree_spectrum, plot_y2_alignment
    from rmtfl.theory import linear_sector
    from rmtfl.theory import first_order_mixing, zonal_top_eigenfunction

    out = Path(args.out)
    rng = np.random.default_rng(args.seed)
    d = 10
    n = 1200 if args.quick else 3000
    b = 10.0
    r_x, r_s, r_v, r_a = rng.spawn(4)
    X = sample_sphere(n, d, rng=r_x)
    blocks = gram_degree_eigenvalues("relu", d=d, n=n, X=X, rng=r_s)
    v = random_direction(d, rng=r_v)
    K1 = kernel_gram("relu", X, gamma=(1.0, b, v))
    K1 /= n
    ev1 = top_gram_eigenpairs(K1, k=len(blocks.values), rng=r_v, tol=1e-6, max_iter=30).values
    z = zonal_top_eigenfunction("relu", d=d, b=b, mixing=False)
    ls = linear_sector("relu", A=1.0, B=b, d=d, measure="sphere")
    fig, ax = plt.subplots(figsize=(5.2, 3.8))
    plot_degree_spectrum(blocks.values, ev1, {f"$\\mu_{k}$": v_ for k, v_ in zip(blocks.degrees, blocks.predicted)},
                         ax=ax, k1_levels={"top even (zonal)": z.eigenvalue, "$(1+b)/(4d)$": ls.target},
                         title=f"relu, unit sphere, d={d}, n={n}, b={b:g}")
    save_figure(fig, out / "kernel_spectrum.png", {"d": d, "n": n, "b": b, "seed": args.seed, "quick": args.quick})
    plt.close(fig)

    n_al = 800 if args.quick else 2000
    seeds = 2 if args.quick else 4
    bs = [0.0, 5.0, 20.0] if args.quick else [0.0, 2.0, 5.0, 10.0, 20.0, 40.0]
    means, ses = [], []
    for bb, g in zip(bs, r_a.spawn(len(bs))):
        m, se = mean_stderr([gram_alignment("relu", d=d, n=n_al, b=bb, rng=gg).cos2_y2 for gg in g.spawn(seeds)])
        means.append(m)
        ses.append(se)
    grid = np.linspace(0, max(bs) * 1.05, 15 if args.quick else 30)
    curve = [float(zonal_top_eigenfunction("relu", d=d, b=x, mixing=False, n_u=100, n_c=100).overlaps[2])
             for x in grid]  # squared overlaps <f, Y_2>^2
    eps = first_order_mixing("relu", d=d).eps_over_b
    fo = [(x * eps) ** 2 / (1 + (x * eps) ** 2) for x in grid]  # sin^2(theta_mix), tan(theta_mix) = b eps/b
    fig, ax = plt.subplots(figsize=(4.6, 3.6))
    plot_y2_alignment(grid, curve, bs, means, ses, ax=ax, first_order=fo,
                      title=f"relu, d={d}, n={n_al}, {seeds} seeds")
    save_figure(fig, out / "y2_alignment.png", {"d": d, "n": n_al, "b": bs, "seeds": seeds, "seed": args.seed,
                                                "quick": args.quick, "eps_over_b": eps,
                                                "y": "squared overlap cos^2(phi_top, Y_2) (docs/conventions.md §1)",
                                                "cos2_y2_gram": means, "cos2_y2_se": ses})
    plt.close(fig)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
