"""The finite-N bulk of ``W_2`` against the exact matrix it describes (docs/theory/two_step.md §8.2).

For the quadratic ``sigma = He1 + c He2`` two steps are exact algebra: with ``eps_t = eta_t a_j`` and
``M_t = X_t^T diag(y_t) X_t / n``, row ``j`` of ``W_2`` less its low-rank part ``P`` is
``w_j (I + 2 c eps_1 M_1)(I + 2 c eps_2 M_2)`` for fresh batches and ``w_j (I + 2 c eps_1 M)(I + 2 c eps_2 M)`` for a
reused one.  This script draws that matrix ``H`` (both batches with the samples the prediction leaves out of the bulk
redrawn, so that its law is the one the widened bulk describes) and sets its top singular values beside the top values
the prediction's bulk puts there (``bulk_top``, where its density has ``k - 1/2`` values above the ``k``-th).  Both
batch kinds at the same steps: the reused bulk is the check that the comparison itself is sound.
``--quantile-rows``: the second layer ``a`` at the quantiles of its law, as the prediction takes its rows (each
quantile on the row that holds the same rank in the drawn ``a``; the draws are otherwise the same).
``--activation``: another ``sigma``, with the whole ``W_2`` of two gradient steps in place of the exact ``H`` (its top
values, as many as the prediction has spikes of ``P``, left out).  ``--projected``: the batches whole, and ``H``
with the directions of each batch's extreme samples (as many as the prediction leaves out of the bulk) projected out
on the right, ``H_b``: the matrix the bulk's columns describe since they follow the whole law of ``M`` less its top
ranks (docs/theory/two_step.md §8.2, "The bulk's columns").  The table of docs/theory/two_step.md §8.2:

    python -m benchmarks.diag_fresh_bulk --seed 500 --draws 16 --alphas 0.4,0.4
    python -m benchmarks.diag_fresh_bulk --seed 500 --draws 16 --alphas 0.4,0.4 --quantile-rows
    python -m benchmarks.diag_fresh_bulk --seed 500 --draws 16 --alphas 0.4,0.4 --projected
    python -m benchmarks.diag_fresh_bulk --seed 500 --draws 16 --alphas 0.4,0.4 --activation gelu
"""
from __future__ import annotations

import argparse
import math
import sys

import numpy as np

TARGET = "hermite(0, 1, 0.5)"
SIGMA = "hermite(0, 1, 0.5)"


def exact_rows(W0, a, M1, M2, eta1, eta2, c2=0.5):
    """``W_2 - P`` for ``sigma = He1 + c2 He2``: rows ``w_j (I + 2 c2 eta_1 a_j M_1)(I + 2 c2 eta_2 a_j M_2)``
    (``M_2 = M_1`` for a reused batch)."""
    e1, e2 = (2 * c2 * eta1 * a)[:, None], (2 * c2 * eta2 * a)[:, None]
    W1 = W0 + e1 * (W0 @ M1)
    return W1 + e2 * (W1 @ M2)


def exact_bulk(a1, a2, *, N=1000, phi=2.0, draws=6, target=TARGET, ranks=6, seed=300, quantile_rows=False,
               activation=SIGMA, projected=False):
    """``{"fresh": (mean, se), "reused": (mean, se)}`` of the top ``ranks`` singular values of ``H`` over ``draws``,
    and ``{"fresh": ..., "reused": ...}`` of the prediction's ``bulk_top`` (``psi = 1``, ``eta_t = N^alpha_t``).

    ``activation`` other than the quadratic ``sigma``: ``H`` is the whole ``W_2`` of :func:`rmtfl.numerics.gd_steps`
    less its top values, as many as the prediction has spikes of ``P`` (no exact form to take ``P`` out with).
    ``projected`` (quadratic ``sigma`` only): whole batches, and ``H`` less its part along each batch's ``K`` most
    extreme samples (module docstring)."""
    from rmtfl.numerics import gd_steps
    from rmtfl.theory import get_activation, make_target, two_step
    from rmtfl.theory._two_step import sample_spikes
    from rmtfl.theory._two_step.finite_n import predict_finite_n

    act, tgt = get_activation(activation), make_target(target)
    exact = activation == SIGMA
    c2 = 0.5                                            # sigma = He1 + c2 He2, so sigma'(u) = 1 + 2 c2 u
    d, n = N, int(round(phi * N))
    eta1, eta2 = float(N) ** a1, float(N) ** a2
    if projected and not exact:
        raise ValueError("projected: only for the quadratic sigma, whose H is exact")
    K = min(sample_spikes.SAMPLE_RANKS, n // 4)
    lo, hi = sample_spikes.bulk_cut(tgt, n, ranks=K)
    link = tgt.links[0]

    def batch(rng):
        X = rng.standard_normal((n, d))
        out = (X[:, 0] < lo) | (X[:, 0] > hi)           # beta* = e_1: the samples the bulk leaves out, redrawn
        while out.any() and not projected:
            X[out, 0] = rng.standard_normal(int(out.sum()))
            out = (X[:, 0] < lo) | (X[:, 0] > hi)
        y = np.asarray(link(X[:, 0]), dtype=float)
        return X, y, X.T @ (y[:, None] * X) / n

    def off_extremes(H, *batches):
        """``H`` less its part along the directions of each batch's ``K`` samples of largest ``|y|``."""
        C = np.concatenate([X[np.argsort(-np.abs(y))[:K]] for X, y in batches]).T
        Q, _ = np.linalg.qr(C)
        return H - (H @ Q) @ Q.T

    sims = {"fresh": [], "reused": []}
    for s in range(draws):
        rng = np.random.default_rng(seed + s)
        W0 = rng.standard_normal((N, d)) / math.sqrt(d)
        a = rng.standard_normal(N) / math.sqrt(N)
        if quantile_rows:   # the prediction's rows: the quantiles of the law of a, in the drawn a's order (the
            from scipy import special       # rest of the draw is the same as without this option)
            q = np.empty(N)
            q[np.argsort(a)] = special.ndtri((np.arange(N) + 0.5) / N) / math.sqrt(N)
            a = q
        (X1, y1, M1), (X2, y2, M2) = batch(rng), batch(rng)
        for kind, Mb in (("fresh", M2), ("reused", M1)):
            if exact:
                H = exact_rows(W0, a, M1, Mb, eta1, eta2, c2)
                if projected:
                    H = off_extremes(H, (X1, y1), (X2, y2)) if kind == "fresh" else off_extremes(H, (X1, y1))
                sims[kind].append(np.linalg.svd(H, compute_uv=False)[:ranks])
                continue
            W2 = gd_steps(act, W0, a, [(X1, y1), (X2, y2)] if kind == "fresh" else (X1, y1), etas=[eta1, eta2])
            sims[kind].append(np.linalg.svd(W2, compute_uv=False))
    out, pred = {}, {}
    for kind, v in sims.items():
        r = predict_finite_n(act, tgt, psi=1.0, phi=phi, phi2=phi if kind == "fresh" else None, eta1=eta1,
                             eta2=eta2, batch=kind, N=N)
        skip = 0 if exact else sum(o.kind == "spike" for o in two_step(
            act, tgt, psi=1.0, phi=phi, phi2=phi if kind == "fresh" else None, eta1=eta1, eta2=eta2, batch=kind,
            N=N).outliers)
        v = np.array([row[skip:skip + ranks] for row in v])
        out[kind] = (v.mean(0), v.std(0, ddof=1) / math.sqrt(len(v)))
        pred[kind] = np.array(r.bulk_top[:ranks])
    return out, pred


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--alphas", default="0.4,0.4", help="alpha1,alpha2")
    ap.add_argument("--target", default=TARGET)
    ap.add_argument("--activation", default=SIGMA, help="sigma (other than He1 + He2/2: the whole W_2, see above)")
    ap.add_argument("--N", type=int, default=1000)
    ap.add_argument("--draws", type=int, default=6)
    ap.add_argument("--seed", type=int, default=300, help="the first draw's seed (draw k: seed + k)")
    ap.add_argument("--quantile-rows", action="store_true", help="a at the quantiles of its law, as the prediction")
    ap.add_argument("--projected", action="store_true", help="whole batches, the extreme samples' directions "
                                                             "projected out (quadratic sigma)")
    args = ap.parse_args(argv)
    a1, a2 = (float(v) for v in args.alphas.split(","))
    sims, pred = exact_bulk(a1, a2, N=args.N, draws=args.draws, target=args.target, quantile_rows=args.quantile_rows,
                             activation=args.activation, seed=args.seed, projected=args.projected)
    print(f"sigma {args.activation}, target {args.target}, N = d = {args.N}, n = 2N, alphas ({a1}, {a2}), "
          f"{args.draws} draws")
    for kind in ("fresh", "reused"):
        m, se = sims[kind]
        print(f"  {kind:6s} simulated:  " + "  ".join(f"{v:.3f}±{e:.3f}" for v, e in zip(m, se)))
        print(f"  {kind:6s} prediction: " + "  ".join(f"{v:.3f}      " for v in pred[kind]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
