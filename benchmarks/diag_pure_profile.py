"""The widened bulk against Gaussian matrices of its own separable profile (docs/theory/two_step_attempts.md §43).

The bulk of the finite-``N`` prediction is the deterministic equivalent of a matrix with independent Gaussian
entries of variance ``S(a_j, lambda_l) / d`` (docs/theory/two_step.md §8.2): rows at the quantiles of the law of
``a``, columns at the nodes of the law of ``M``'s eigenvalues less the batch's most extreme ranks.  This draws that
matrix itself, so that the solver and the top-value reading are checked apart from the model, and then with one
part of it random at a time::

    python -m benchmarks.diag_pure_profile --alphas 0.4,0.4 --draws 16

- ``nodes``: rows and columns at the bulk's own nodes (each node repeated by its weight): the bulk's top values
  should lie within the draws' standard error;
- ``rows drawn``: ``a`` drawn from its law, columns at the nodes;
- ``columns of M``: rows at their quantiles, columns at the eigenvalues of a drawn ``M`` less its ``K`` top ranks
  (the law the bulk takes), or with ``--kept`` at those of ``M`` over the batch less its ``K`` most extreme ``|y|``
  (the matrix the extreme samples leave behind);
- ``both``: rows drawn and columns of ``M``.

For a reused batch and the quadratic ``sigma = He1 + He2/2`` the exact ``W_2 - P`` is such a matrix with the columns
of ``M`` (``w_j (I + eta_1 a_j M)(I + eta_2 a_j M)`` along ``M``'s eigenvectors).
"""
from __future__ import annotations

import argparse
import math
import sys

QUADRATIC = "hermite(0, 1, 0.5)"


def pure_profile(alpha1: float, alpha2: float, *, activation: str = QUADRATIC, target: str = QUADRATIC,
                 batch: str = "reused", N: int = 1000, phi: float = 2.0, draws: int = 16, ranks: int = 4,
                 kept: bool = False, seed: int = 700) -> dict:
    """``{case: (mean, standard error)}`` of the top ``ranks`` singular values over ``draws`` (module docstring), and
    ``"prediction"``: the bulk's top values (``WidenedBulk.top_values``); ``psi = 1``, ``eta_t = N^alpha_t``."""
    import numpy as np
    from scipy import special

    import rmtfl.theory._two_step.finite_n as fn
    from rmtfl.theory import get_activation, make_target
    from rmtfl.theory._two_step.widened_bulk import column_functions

    act, tgt = get_activation(activation), make_target(target)
    d, n = N, int(round(phi * N))
    phi2 = phi if batch == "fresh" else None
    eta1, eta2 = float(N) ** alpha1, float(N) ** alpha2
    _, bulk = fn.prediction_bulk(act, tgt, psi=1.0, phi=phi, phi2=phi2, eta1=eta1, eta2=eta2, batch=batch, N=N)
    K = fn.extreme_ranks(N=N, psi=1.0, phi=phi, phi2=phi2, batch=batch)     # the samples the bulk leaves out
    rows_at_nodes, cols_at_nodes = bulk.red.at_nodes(N, d)    # each node stands for its weight's share of rows
    g_quantiles = special.ndtri((np.arange(N) + 0.5) / N)
    link = tgt.links[0]
    out = {"nodes": [], "rows drawn": [], "columns of M": [], "both": []}
    for k in range(draws):
        rng = np.random.default_rng(seed + k)
        X = rng.standard_normal((n, d))
        y = np.asarray(link(X[:, 0]), dtype=float)
        if kept:
            keep = np.argsort(-np.abs(y))[K:]
            lam = np.linalg.eigvalsh(X[keep].T @ (y[keep, None] * X[keep]) / n)[::-1]
        else:
            lam = np.linalg.eigvalsh(X.T @ (y[:, None] * X) / n)[::-1][K:]
        cols_of_m = column_functions(lam)
        drawn = bulk.functions(np.sort(rng.standard_normal(N)) / math.sqrt(N))
        at_quantiles = bulk.functions(g_quantiles / math.sqrt(N))
        Z = rng.standard_normal((N, d))
        for case, F, C in (("nodes", rows_at_nodes, cols_at_nodes), ("rows drawn", drawn, cols_at_nodes),
                           ("columns of M", at_quantiles, cols_of_m), ("both", drawn, cols_of_m)):
            S = np.clip(F @ C.T, 0.0, None)                 # the profile; rounding can leave -0
            H = np.sqrt(S / d) * Z[:, :C.shape[0]]
            out[case].append(np.linalg.svd(H, compute_uv=False)[:ranks])
    res = {case: (np.mean(v, axis=0), np.std(v, axis=0, ddof=1) / math.sqrt(draws)) for case, v in out.items()}
    res["prediction"] = bulk.top_values(ranks)
    return res


def parse_alphas(ap, text: str):
    """``(alpha1, alpha2)`` from ``--alphas`` ``"a1,a2"``, each in ``[0, 0.5)``; ``ap.error`` (exit 2) otherwise."""
    try:
        a1, a2 = (float(v) for v in text.split(","))
    except ValueError:
        ap.error(f"--alphas takes alpha1,alpha2, got {text!r}")
    if not (0 <= a1 < 0.5 and 0 <= a2 < 0.5):
        ap.error(f"--alphas must lie in [0, 0.5), got {text!r}")
    return a1, a2


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--alphas", default="0.4,0.4", help="alpha1,alpha2 in [0, 0.5)")
    ap.add_argument("--activation", default=QUADRATIC)
    ap.add_argument("--target", default=QUADRATIC)
    ap.add_argument("--batch", choices=["reused", "fresh"], default="reused")
    ap.add_argument("--N", type=int, default=1000)
    ap.add_argument("--draws", type=int, default=16)
    ap.add_argument("--seed", type=int, default=700, help="the first draw's seed (draw k: seed + k)")
    ap.add_argument("--kept", action="store_true", help="columns of M over the batch less its extreme samples")
    args = ap.parse_args(argv)
    a1, a2 = parse_alphas(ap, args.alphas)
    if args.N < 50 or args.draws < 2:
        ap.error("--N must be at least 50 and --draws at least 2")
    res = pure_profile(a1, a2, activation=args.activation, target=args.target, batch=args.batch, N=args.N,
                       draws=args.draws, kept=args.kept, seed=args.seed)
    print(f"{args.activation}, {args.target}, {args.batch}, ({a1:g}, {a2:g}), N = d = {args.N}, {args.draws} draws"
          + (", columns of M over the kept samples" if args.kept else ""))
    print(f"  {'prediction':13s} " + "  ".join(f"{v:.3f}      " for v in res["prediction"]))
    for case in ("nodes", "rows drawn", "columns of M", "both"):
        m, se = res[case]
        print(f"  {case:13s} " + "  ".join(f"{v:.3f}±{e:.3f}" for v, e in zip(m, se)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
