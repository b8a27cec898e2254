"""Diagnostics of the collective effect of extreme samples (docs/theory/two_step.md §8.3, "Several extreme samples").

Four measurements behind the text of that section, at ``d = N = 1000``, ``n = 2000``, target ``He1 + He2/2``
(``--part samples``: any):

1. ``--part m``: the top eigenvalues of ``M = X^T diag(y) X / n`` over simulated batches, against (a) the
   single-sample poles ``lambda_i = y_i/phi + E[y / (1 - y/y_i)]`` at the median order statistics of ``y`` (the
   expectation over the law without the ``top`` most extreme samples, as in the prediction) and
   (b) the deterministic equivalent of ``M`` whose weights are those of a typical batch (``y`` at the ``n``
   quantiles of its law; Silverstein's equation with ``n`` discrete weights, its ``k``-th value where the expected
   number of eigenvalues above it is ``k - 1/2``).
2. ``--part w2``: for the quadratic ``sigma = He1 + He2/2`` at ``(alpha1, alpha2) = (0.1, 0.2)``, where exactly
   ``W_2 = H + (eta1 + eta2) a beta_hat^T + eta1 eta2 (a ⊙ a)(M beta_hat)^T``: the top singular values of
   ``W_2``, of ``W_2`` without the last term, and of ``H`` alone, draw by draw.
3. ``--part columns``: the same ``sigma`` at ``(0, 0.3)``.  In the eigenbasis of ``M`` the columns of ``H`` are
   independent, so ``H = [H_b, C]`` with ``C`` the ``K = 12`` columns of ``M``'s top eigenvectors, and the outliers
   of ``H`` are the ``x = s^2`` where ``T(x) = C^T (x - H_b H_b^T)^{-1} C`` has an eigenvalue 1 (Schur complement).
   Draw by draw: the top singular values of ``H``, the roots from the whole ``T``, and from its diagonal alone (each
   column by itself, as the single-sample prediction treats them).

4. ``--part samples``: any ``sigma`` and target (gelu, He1 + He2/2 at ``(0, 0.4)`` by default; ``--activation``,
   ``--target``, ``--alphas``), ``H`` = ``W_2``
   with ``beta_hat`` and ``a`` projected out (and any spike of ``P`` left above the bulk), and ``C`` the columns
   along the ``K = 12`` most extreme samples' inputs: the top values of ``H``, of ``H_b`` (without those
   directions), and the roots of the whole ``T`` and of its diagonal.

    python -m benchmarks.diag_sample_collective --part m     # about a minute on 2 cores
    python -m benchmarks.diag_sample_collective --part w2
    python -m benchmarks.diag_sample_collective --part columns
    python -m benchmarks.diag_sample_collective --part samples                    # gelu, (0, 0.4)
    python -m benchmarks.diag_sample_collective --part samples --alphas 0.4,0.4
"""
from __future__ import annotations

import argparse
import sys

import numpy as np
from scipy import special

#: He1 + He2/2, the target of every part (``--part samples``: the default).
TARGET = "hermite(0, 1, 0.5)"


def _link(z):
    return z + (z * z - 1) / 2


def typical_batch_top(y, d, count, *, eps=1e-3, points=6000):
    """Top ``count`` values of the deterministic equivalent of ``M`` with the discrete weights ``y``."""
    from rmtfl.theory._two_step.bulk_edge import weighted_mp_stieltjes

    n = y.size
    x = np.linspace(0.55 * y.max() * d / n, 1.3 * y.max() * d / n + 1.0, points)
    rho = np.maximum(weighted_mp_stieltjes(x, y, np.full(n, 1.0 / n), n / d, eps=eps).imag, 0.0) / np.pi
    above = d * np.concatenate([np.cumsum(((rho[1:] + rho[:-1]) / 2 * np.diff(x))[::-1])[::-1], [0.0]])
    return np.array([np.interp(-(k - 0.5), -above, x) for k in range(1, count + 1)])


def part_m(draws=30, d=1000, n=2000, top=10):
    from rmtfl.theory import make_target
    from rmtfl.theory._two_step.sample_spikes import bulk_cut, m_spike, y_law_truncated

    rng = np.random.default_rng(5)
    sims, ys = [], []
    for _ in range(draws):
        X = rng.standard_normal((n, d))
        y = _link(rng.standard_normal(n))
        sims.append(np.linalg.eigvalsh((X.T * y) @ X / n)[::-1][:top])
        ys.append(np.sort(y)[::-1][:top])
    target = make_target(TARGET)
    yb, wb = y_law_truncated(target, bulk_cut(target, n, ranks=top))      # the other samples: the law without the top
    y_med = np.median(ys, axis=0)
    poles = [m_spike(v, n / d, yb, wb) for v in y_med]
    typical = typical_batch_top(_link(special.ndtri((np.arange(n) + 0.5) / n)), d, top)
    S = np.array(sims)
    print(f"top {top} eigenvalues of M, d={d}, n={n}, y = He1 + He2/2, {draws} draws")
    for name, v in (("simulated mean", S.mean(0)), ("simulated median", np.median(S, 0)),
                    ("single-sample poles", poles), ("typical-batch equivalent", typical)):
        print(f"  {name:26s}" + " ".join(f"{x:6.3f}" for x in v))


def part_w2(seeds=4, N=1000, n=2000, a1=0.1, a2=0.2):
    e1, e2 = N**a1, N**a2
    rng = np.random.default_rng(0)
    print(f"quadratic sigma = He1 + He2/2, (alpha1, alpha2) = ({a1}, {a2}), N = d = {N}, n = {n}: "
          "top 3 singular values")
    for s in range(seeds):
        X = rng.standard_normal((n, N))
        y = _link(X[:, 0])
        W0 = rng.standard_normal((N, N)) / np.sqrt(N)
        a = rng.standard_normal(N) / np.sqrt(N)
        M, bh = (X.T * y) @ X / n, X.T @ y / n
        H = W0 + (e1 + e2) * (a[:, None] * (W0 @ M)) + e1 * e2 * ((a * a)[:, None] * (W0 @ M @ M))
        P1, P2 = (e1 + e2) * np.outer(a, bh), e1 * e2 * np.outer(a * a, M @ bh)
        sv = [np.linalg.svd(A, compute_uv=False)[:3] for A in (H + P1 + P2, H + P1, H)]
        print(f"  draw {s}: W2 {np.round(sv[0], 3)}  without (a⊙a)(M beta_hat)^T {np.round(sv[1], 3)}  "
              f"H {np.round(sv[2], 3)}  |that term| {np.linalg.norm(P2, 2):.2f}")


def _top_roots(f, xs, count=3):
    """``sqrt(x)`` at the largest root of ``f(x)[k] = 1`` on the grid ``xs`` (refined by brentq), ``k < count``."""
    from scipy import optimize

    out = []
    for k in range(count):
        g = [f(x)[k] - 1.0 for x in xs]
        i = max((i for i in range(1, xs.size) if g[i - 1] > 0 >= g[i]), default=None)
        out.append(np.sqrt(optimize.brentq(lambda x: f(x)[k] - 1.0, xs[i - 1], xs[i])) if i else np.nan)
    return np.array(out)


def part_columns(seeds=3, N=1000, n=2000, a1=0.0, a2=0.3, K=12):
    e1, e2 = N**a1, N**a2
    rng = np.random.default_rng(5)
    print(f"quadratic sigma = He1 + He2/2, (alpha1, alpha2) = ({a1}, {a2}), N = d = {N}, n = {n}: top 3 singular "
          f"values of H, and the roots of det(I - T(x)) with the {K} columns of M's top eigenvectors")
    for s in range(seeds):
        X = rng.standard_normal((n, N))
        y = _link(X[:, 0])
        W0 = rng.standard_normal((N, N)) / np.sqrt(N)
        a = rng.standard_normal(N) / np.sqrt(N)
        M = (X.T * y) @ X / n
        U = np.linalg.eigh(M)[1][:, ::-1]
        WM = W0 @ M
        H = W0 + (e1 + e2) * (a[:, None] * WM) + e1 * e2 * ((a * a)[:, None] * (WM @ M))
        Hr = H @ U                      # the columns of H along M's eigenvectors, most extreme first
        ev, Q = np.linalg.eigh(Hr[:, K:] @ Hr[:, K:].T)
        CQ = Q.T @ Hr[:, :K]
        T = lambda x: CQ.T @ (CQ / (x - ev)[:, None])      # noqa: E731

        xs = np.linspace(ev.max() * (1 + 1e-4), 3 * ev.max(), 400)
        full = _top_roots(lambda x: np.sort(np.linalg.eigvalsh(T(x)))[::-1], xs)
        diag = _top_roots(lambda x: np.sort(np.diag(T(x)))[::-1], xs)
        print(f"  draw {s}: H {np.round(np.linalg.svd(H, compute_uv=False)[:3], 3)}  whole T {np.round(full, 3)}  "
              f"diagonal of T {np.round(diag, 3)}")


def simulated_draw(activation, eta1, eta2, *, N, n, seed, target=TARGET):
    """One simulated two-step draw (``d = N``): ``(rng, W0, a, X, y, W2, beta_hat, project)``, ``project`` taking
    ``beta_hat`` out on the right and ``a`` on the left (the rank-one part of ``P``); ``rng`` continues the draw's."""
    from rmtfl.numerics import gd_steps, init_first_layer, init_second_layer, sample_inputs, sample_targets

    rng = np.random.default_rng(seed)
    W0, a = init_first_layer(N, N, rng=rng), init_second_layer(N, rng=rng)
    X = sample_inputs(n, N, rng=rng)
    y = sample_targets(X, target=target, rng=rng)
    W2 = gd_steps(activation, W0, a, (X, y), etas=[eta1, eta2])
    bh, an = X.T @ y, a / np.linalg.norm(a)
    bh /= np.linalg.norm(bh)

    def project(A):
        A = A - np.outer(A @ bh, bh)
        return A - np.outer(an, an @ A)

    return rng, W0, a, X, y, W2, bh, project


def part_samples(seeds=4, N=1000, n=2000, activation="gelu", a1=0.0, a2=0.4, K=12, target=TARGET):
    """Any sigma: ``H`` is ``W_2`` with ``beta_hat`` and ``a`` projected out (the rank-one part of ``P``), and its
    outliers are the roots of ``det(I - T(x))`` with the ``K`` columns ``H x_i / |x_i|`` of the most extreme ``|y_i|``
    (exactly: ``H H^T = H_b H_b^T + C C^T`` with ``C = H Q``, ``Q`` an orthonormal basis of those ``x_i``).  A spike
    of ``P`` that stays in ``H_b`` (a value above 1.3 times its sixth) is projected out of ``H`` first, so that the
    roots near the bulk are the extreme samples' own.  At the top root: the diagonal of ``T`` and the spread of its
    off-diagonal entries, beside the semicircle radius ``2 rms sqrt(K)`` of independent couplings of that size."""
    print(f"sigma = {activation}, target {target}, (alpha1, alpha2) = ({a1}, {a2}), N = d = {N}, n = {n}: top 3 "
          f"singular values of H, of H without the {K} most extreme samples' directions (H_b), and the roots of "
          f"det(I - T(x)) with their columns")
    for s in range(seeds):
        _, _, _, X, y, W2, _, project = simulated_draw(activation, N**a1, N**a2, N=N, n=n, seed=100 + s, target=target)
        H = project(W2)
        Q = np.linalg.qr(X[np.argsort(-np.abs(y))[:K]].T)[0]
        U, S, _ = np.linalg.svd(H - (H @ Q) @ Q.T)
        m = int(np.sum(S > 1.3 * S[5]))         # spikes of P left in H_b
        H -= U[:, :m] @ (U[:, :m].T @ H)
        C = H @ Q
        ev, V = np.linalg.eigh((H - C @ Q.T) @ (H - C @ Q.T).T)
        CQ = V.T @ C
        T = lambda x: CQ.T @ (CQ / (x - ev)[:, None])      # noqa: E731
        top = np.linalg.svd(H, compute_uv=False)[:3]
        xs = np.linspace(ev.max() * (1 + 1e-6), max(ev.max() + 3.0, 1.2 * top[0] ** 2), 2000)
        full = _top_roots(lambda x: np.sort(np.linalg.eigvalsh(T(x)))[::-1], xs)
        diag = _top_roots(lambda x: np.sort(np.diag(T(x)))[::-1], xs)
        E = T(full[0] ** 2)
        E -= np.diag(np.diag(E))
        rms = np.sqrt(np.sum(E**2) / (K * (K - 1)))
        print(f"  draw {s}: H {np.round(top, 3)}  H_b {np.round(np.sqrt(ev[::-1][:3]), 3)}  whole T "
              f"{np.round(full, 3)}  diagonal of T {np.round(diag, 3)}  (spikes of P removed: {np.round(S[:m], 3)}; "
              f"couplings at the top root: rms {rms:.3f}, top eigenvalue {np.linalg.eigvalsh(E)[-1]:.3f} against "
              f"2 rms sqrt(K) = {2 * rms * np.sqrt(K):.3f})")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", choices=["m", "w2", "columns", "samples"], required=True)
    ap.add_argument("--activation", default="gelu", help="sigma of --part samples")
    ap.add_argument("--alphas", default="0,0.4", help="alpha1,alpha2 of --part samples")
    ap.add_argument("--target", default=TARGET, help="target of --part samples")
    a = ap.parse_args(argv)
    if a.part == "samples":
        a1, a2 = (float(v) for v in a.alphas.split(","))
        part_samples(activation=a.activation, a1=a1, a2=a2, target=a.target)
    else:
        {"m": part_m, "w2": part_w2, "columns": part_columns}[a.part]()
    return 0


if __name__ == "__main__":
    sys.exit(main())
