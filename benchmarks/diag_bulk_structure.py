"""The finite-N bulk of ``W_2`` against its separable form on a simulated draw (docs/theory/two_step.md §8.4).

The widened bulk of docs/theory/two_step.md §8.2 says that, for a reused batch, row ``j`` of ``W_2 - P`` is
``w_j ((1 + e_j) I + p_j M + q_j M^2)`` plus independent noise of variance ``r_j / d`` per entry, with
``M = X^T diag(y) X / n`` and row coefficients that depend on ``t_j = eta1 a_j``.  This script builds that matrix
from a simulated draw's own ``W_0``, ``a``, ``X`` and ``y`` (the ``K = 12`` most extreme samples left out of ``M``,
as in the prediction) and sets its top singular values beside those of the simulated ``W_2`` with ``beta_hat`` and
``a`` projected out, any spike of ``P`` removed, and the same samples' directions projected out (``H_b``, as in
``diag_sample_collective --part samples``). Both are taken on the same draw, so a gap is the form's, not the
deterministic equivalent's. Target He1 + He2/2 unless ``--target`` says otherwise. ``--sample-weighted``: the form
with the second step's matrix as it is, ``X^T diag(y c) X / n`` with each sample's own ``c = E sigma''(z + t_j (y
sigma'(z) / phi + mu_1 s + xi))`` (``F_table`` at this draw's samples; rows grouped by ``t_j`` on 25 nodes), in
place of ``cbar(t_j) M`` and the identity part ``e_j``. ``--regress``: on the first draw, each row of ``W_2``
(``beta_hat`` and the extreme samples' directions projected out on the right) is fitted by least squares to ``(w_j,
w_j M, w_j M^2)``, and the fitted coefficients, averaged over rows binned by ``sqrt(N) a_j``, are set beside the
form's ``(1 + e_j, p_j, q_j)``.

    python -m benchmarks.diag_bulk_structure --activation gelu --alphas 0.4,0.4
    python -m benchmarks.diag_bulk_structure --activation gelu --alphas 0.4,0.4 --without-m2
    python -m benchmarks.diag_bulk_structure --activation gelu --alphas 0.4,0.4 --regress --draws 1
    python -m benchmarks.diag_bulk_structure --activation gelu --alphas 0.4,0.4 --sample-weighted
    python -m benchmarks.diag_bulk_structure --activation tanh --alphas 0.4,0.4
    python -m benchmarks.diag_bulk_structure --activation "hermite(0, 1, 0.5)" --alphas 0.2,0.3
"""
from __future__ import annotations

import argparse
import dataclasses
import math
import sys

import numpy as np

from benchmarks.diag_sample_collective import TARGET, simulated_draw


def run(activation, a1, a2, *, N=1000, draws=3, K=12, m2=True, regress=False, weighted=False, target=TARGET):
    from rmtfl.theory import get_activation, make_target
    from rmtfl.theory._two_step.finite_n import F_table, finite_n_grams, finite_n_setup, predict_finite_n
    from rmtfl.theory._two_step.sample_spikes import bulk_cut, truncated_rule
    from rmtfl.theory._two_step.widened_bulk import row_coefficients

    act, tgt = get_activation(activation), make_target(target)
    eta1, eta2, n = N**a1, N**a2, 2 * N
    st = finite_n_setup(act, tgt, phi=2.0, batch="reused", phi2=None)
    tn = finite_n_grams(act, st, eta1=eta1, eta2=eta2, N=N, bulk=False)[3]
    order = np.argsort(tn)
    st_b = finite_n_setup(act, tgt, phi=2.0, batch="reused", phi2=None, zs_rule=truncated_rule(*bulk_cut(tgt, n, K)),
                          ey2_ref=st.ey2)
    rows = [r[order] for r in finite_n_grams(act, st_b, eta1=eta1, eta2=eta2, N=N, bulk=True)[6]]
    pred = predict_finite_n(act, tgt, psi=1.0, phi=2.0, phi2=None, eta1=eta1, eta2=eta2, batch="reused", N=float(N))
    print(f"sigma = {activation}, target {target}, (alpha1, alpha2) = ({a1}, {a2}), N = d = {N}, n = {n}; "
          f"predicted bulk: edge {pred.edge:.3f}, top values {np.round(pred.bulk_top[:3], 3)}")

    def top(A):                         # top values past any spike (a value above 1.3 times the sixth)
        s = np.linalg.svd(A, compute_uv=False)
        m = int(np.sum(s > 1.3 * s[5]))
        return s[m:m + 3]

    for k in range(draws):
        rng, W0, a, X, y, W2, bh, project = simulated_draw(activation, eta1, eta2, N=N, n=n, seed=300 + k,
                                                           target=target)
        extreme = np.argsort(-np.abs(y))
        Q = np.linalg.qr(X[extreme[:K]].T)[0]
        H = project(W2)
        H_b = H - (H @ Q) @ Q.T
        # the separable form (docs/theory/two_step.md §8.2), row coefficients at this draw's t_j = eta1 a_j
        t = eta1 * a
        e, p1, p2, q, r = row_coefficients(a, st_b, eta1, eta2, tn[order], rows)
        one, p = 1 + e, p1 + p2
        q = q if m2 else np.zeros_like(t)
        Xb, yb = X[extreme[K:]], y[extreme[K:]]
        M = (Xb.T * yb) @ Xb / n
        WM = W0 @ M
        form = one[:, None] * W0 + p[:, None] * WM + q[:, None] * (WM @ M) \
            + np.sqrt(r)[:, None] * rng.standard_normal((N, N)) / math.sqrt(N)
        line = f"  draw {k}: simulated H_b {np.round(top(H_b), 3)}  separable form on the same draw " \
            f"{np.round(top(project(form)), 3)}"
        if weighted:
            # c per kept sample (F_table on this draw's samples: y and the non-self part of <x, X^T y / n>)
            st_draw = dataclasses.replace(st_b, y=yb, s=Xb @ (X.T @ y / n) - yb * np.sum(Xb * Xb, axis=1) / n)
            W1 = W0 + (t * st_b.mu2)[:, None] * WM
            wform = W1 + np.sqrt(r)[:, None] * rng.standard_normal((N, N)) / math.sqrt(N)
            nodes = np.linspace(t.min(), t.max(), 25)
            group = np.abs(t[:, None] - nodes[None, :]).argmin(axis=1)
            for g in np.unique(group):
                c = F_table(act, st_draw, [nodes[g]])[1][0]
                rows_g = group == g
                wform[rows_g] += (eta2 * a[rows_g])[:, None] * (W1[rows_g] @ ((Xb.T * (yb * c)) @ Xb / n))
            line += f"  sample-weighted {np.round(top(project(wform)), 3)}"
        print(line)
        if regress and k == 0:
            _regress(W0, W2, M, np.column_stack([bh, X[extreme[:K]].T]),
                     a * math.sqrt(N), np.column_stack([one, p, q]))


def _regress(W0, W2, M, right, g, model):
    """Row-wise least squares of ``W_2`` on ``(w_j, w_j M, w_j M^2)``, all with ``right`` projected out."""
    Q = np.linalg.qr(right)[0]

    def proj(A):
        return A - (A @ Q) @ Q.T

    H, B = proj(W2), [proj(W0), proj(W0 @ M), proj(W0 @ M @ M)]
    fit = np.array([np.linalg.lstsq(np.column_stack([b[j] for b in B]), H[j], rcond=None)[0]
                    for j in range(H.shape[0])])
    print("  rows of W_2 fitted to (w_j, w_j M, w_j M^2), mean coefficients by sqrt(N) a_j: fitted | form")
    for lo, hi in [(-4, -2), (-2, -1), (-1, 0), (0, 1), (1, 2), (2, 4)]:
        m = (g >= lo) & (g < hi)
        print(f"    [{lo:+d}, {hi:+d}) {int(m.sum()):4d} rows: 1+e, p, q = {np.round(fit[m].mean(0), 3)} | "
              f"{np.round(model[m].mean(0), 3)}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--activation", default="gelu")
    ap.add_argument("--alphas", default="0.4,0.4", help="alpha1,alpha2")
    ap.add_argument("--target", default=TARGET)
    ap.add_argument("--N", type=int, default=1000)
    ap.add_argument("--draws", type=int, default=3)
    ap.add_argument("--without-m2", action="store_true", help="the form without its q M^2 term")
    ap.add_argument("--regress", action="store_true", help="fit the rows of W_2 to (w, w M, w M^2) (first draw)")
    ap.add_argument("--sample-weighted", action="store_true", help="also the form with each sample's own c")
    a = ap.parse_args(argv)
    a1, a2 = (float(v) for v in a.alphas.split(","))
    run(a.activation, a1, a2, N=a.N, draws=a.draws, m2=not a.without_m2, regress=a.regress,
        weighted=a.sample_weighted, target=a.target)
    return 0


if __name__ == "__main__":
    sys.exit(main())
