"""One extreme sample planted in the first of two fresh batches (or in a reused one): its outlier and its column
against the column model of the finite-N prediction and two corrections of it
(docs/theory/two_step_attempts.md §6).

A first-batch sample ``x_i`` is an eigen-direction ``u`` of ``M_1`` (eigenvalue ``lambda_i``); the first step puts
its excess ``delta_j`` into row ``j`` of ``W_1``.  The second step multiplies row ``j`` of ``W_1`` on the right by
``(1 + e_j) I + p_j M_2`` (its identity part ``e_j = eta_2 a_j <y c>`` and its ``M_2`` part
``p_j = eta_2 a_j cbar``, docs/theory/two_step.md §8.2), so in the Gram matrix the excess lies along
``(1 + e_j) u + p_j M_2 u``, a direction that turns from row to row.  The prediction's column keeps ``delta_j``
alone along ``u`` ("scalar"); "e2" multiplies it by ``(1 + e_j)^2``; "2x2" takes the top eigenvalue of the
``2 x 2`` block on ``(u, M_2 u / |M_2 u|)``.  Each is solved for its root above the widened bulk, with the eigenvalue
of ``M_1`` along the sample over the bulk's samples (as the prediction) or over the whole law
(:func:`benchmarks.diag_m_spike.m_spike_whole_law`).

The simulation (``N = d``, ``n = n2 = 2d``, seeds 4000, 4001, ...) plants ``z* = --z`` in the first sample of the
first batch and reports the singular value whose right vector leans most on it, with ``W_2`` as it is and with
``W_2`` less its part along ``a`` (the top spike of ``P``, to which the sample's column couples; the joint problem
of :mod:`rmtfl.theory._two_step.joint_roots` gives the column's root coupled to ``P`` and alone, fresh batches), and
the column ``(W_2 - a a^T W_2 / |a|^2) x`` (``x`` the sample less its part along ``beta*``) row by row, binned in
``g = sqrt(N) a``.  ``--batch reused`` plants it in the one batch both steps see::

    python -m benchmarks.diag_fresh_sample --activation tanh --target "hermite(0, 1, 0, 0.4082482904638631)" --z 4
    python -m benchmarks.diag_fresh_sample --batch reused

``--coupling`` (the quadratic sigma, reused) sets the planted sample's value in ``W_2`` beside its value in ``W_2``
less its exact rank-two part along ``a`` (:func:`quadratic_h`), and both beside the prediction's column root: the
column is exact, and the spikes of ``P`` move the sample's value (docs/theory/two_step.md §8.4)::

    python -m benchmarks.diag_fresh_sample --coupling --target "hermite(0, 1, 0, 0.4082482904638631)" \\
        --alphas 0.2,0.4 --z 3.575 --draws 12
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import types

import numpy as np

BINS = np.array([-4.0, -2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 4.0])


def _setup(act, tgt, *, N, alphas, z, batch):
    """The prediction's pieces at this point (its data grid, Gram matrices and widened bulk) and the planted sample's
    ``y`` and eigenvalue of ``M_1`` over the whole law."""
    from rmtfl.theory._two_step import finite_n as fn

    from .diag_m_spike import m_spike_whole_law

    eta1, eta2 = N ** alphas[0], N ** alphas[1]
    y = float(tgt.links[0](np.array([z]))[0])
    phi2 = 2.0 if batch == "fresh" else None
    st = fn.finite_n_setup(act, tgt, phi=2.0, batch=batch, phi2=phi2)
    _, G_V, _, tn, g, wg, _, _ = fn.finite_n_grams(act, st, eta1=eta1, eta2=eta2, N=float(N), bulk=False)
    K = fn.extreme_ranks(N=N, psi=1.0, phi=2.0, phi2=phi2, batch=batch)
    bulk = fn.bulk_without(act, tgt, st, ranks=K, eta1=eta1, eta2=eta2, N=float(N), psi=1.0, tn=tn)
    lam = float(m_spike_whole_law(tgt, np.array([y]), np.array([z]), 2.0, N)[0])
    return types.SimpleNamespace(eta1=eta1, eta2=eta2, y=y, st=st, G_V=G_V, tn=tn, g=g, wg=wg, bulk=bulk, lam=lam)


def column_models(act, tgt, *, N, alphas, z, batch="fresh"):
    """The planted sample's ``y``, the roots of the three column models with both eigenvalues, the bulk's edge, and
    the models' row variances averaged over the bins of ``g`` (``BINS``)."""
    from scipy import optimize

    from rmtfl.theory._two_step.sample_spikes import m_spike, sample_strengths, second_step_move, y_law_truncated
    from rmtfl.theory._two_step.widened_bulk import row_coefficients

    p = _setup(act, tgt, N=N, alphas=alphas, z=z, batch=batch)
    st, bulk, y, eta1, eta2 = p.st, p.bulk, p.y, p.eta1, p.eta2
    which = "first" if batch == "fresh" else "both"
    # |M_2 u|^2 for a direction u generic to M_2 (a reused batch: u is M's own eigenvector, no mixing)
    m2 = st.tau**2 * st.phi / st.phi2 + st.ey1**2 if batch == "fresh" else 0.0

    def parts(a, lam):
        r = bulk.functions(a)[:, 5]
        g = a * math.sqrt(N)
        move = second_step_move(act, st, eta1 * a) if batch == "reused" else None
        delta = sample_strengths(act, st, ys=[y], zs=[z], eta1=eta1, eta2=eta2, N=float(N), d=float(N), g=g,
                                 wg=np.full(g.size, 1.0 / g.size), which=which, lams=[lam], rho=move)[1][0]
        e, _, q, _, _ = row_coefficients(a, bulk.st, eta1, eta2, bulk.tn, bulk.rows)   # the identity and M_2 parts
        return r, delta, e, q

    def strength(mode, r, delta, e, q, tau, w):
        base = float(w @ ((1 + r) * tau))
        if mode == "scalar":
            return base + float(w @ (delta * tau))
        A = float(w @ (tau * delta * (1 + e) ** 2))
        if mode == "e2":
            return base + A
        B = float(w @ (tau * delta * (1 + e) * q)) * math.sqrt(m2)
        C = float(w @ (tau * delta * q * q)) * m2
        return base + 0.5 * (A + C) + math.sqrt(0.25 * (A - C) ** 2 + B * B)

    yb, wb = y_law_truncated(tgt, bulk.zrange)
    lams = {"bulk's samples": m_spike(y, 2.0, yb, wb), "whole law": p.lam}
    roots = {}
    for lname, lam in lams.items():
        r, delta, e, q = parts(bulk.a, lam)
        for mode in ("scalar", "e2", "2x2"):
            def f(x, mode=mode):
                return bulk.red.psi * strength(mode, r, delta, e, q, bulk.tau_rows(bulk.a, x)[0], bulk.wa) - 1.0
            xe = bulk.x_edge * (1 + 1e-7)
            if f(xe) <= 0:
                roots[f"{mode}, {lname}"] = None
                continue
            hi = 2 * xe
            while f(hi) > 0:
                hi *= 2
            roots[f"{mode}, {lname}"] = math.sqrt(optimize.brentq(f, xe, hi, xtol=1e-12))
    gf = np.linspace(-4.0, 4.0, 801)
    r, delta, e, _ = parts(gf / math.sqrt(N), p.lam)
    wgt, b = np.exp(-0.5 * gf**2), np.digitize(gf, BINS) - 1

    def binned(v):
        return [float(np.sum((wgt * v)[b == k]) / np.sum(wgt[b == k])) for k in range(BINS.size - 1)]

    rows = {"scalar": binned(1 + r + delta), "e2": binned((1 + e) ** 2 * (1 + delta) + r), "base 1 + r": binned(1 + r)}
    return y, roots, bulk.edge, rows


def coupled_root(act, tgt, *, N, alphas, z):
    """The planted column's root in the joint problem of :mod:`rmtfl.theory._two_step.joint_roots` (the column alone
    with the spikes of ``P``; the prediction's column with the whole-law eigenvalue), coupled to ``P`` and not:
    ``(coupled, uncoupled)``; fresh batches."""
    from rmtfl.theory._two_step import finite_n as fn
    from rmtfl.theory._two_step.joint_roots import ExtremeColumns, JointProblem
    from rmtfl.theory._two_step.sample_spikes import sample_strengths

    p = _setup(act, tgt, N=N, alphas=alphas, z=z, batch="fresh")
    bulk = p.bulk
    r = bulk.functions(bulk.a)[:, 5]
    ex = sample_strengths(act, p.st, ys=[p.y], zs=[z], eta1=p.eta1, eta2=p.eta2, N=float(N), d=float(N),
                          g=bulk.a * math.sqrt(N), wg=bulk.wa, which="first", lams=[p.lam])[1][0]
    U = fn.sample_components(act, p.st, p.eta1, p.eta2, p.tn, np.array([p.y]), np.array([z]), float(N), "first")
    out = []
    for UU in (U, 0.0 * U):
        jp = JointProblem(bulk, ExtremeColumns(np.array([1.0 + r + ex]), UU), fn.weighted_gram_u(p.g, p.wg), p.G_V,
                          p.g, float(N))
        se = bulk.edge * (1 + 1e-7)
        roots = jp.roots(se, 3 * se + 100.0, np.zeros(1), refine=lambda found: range(len(found)))
        out.append(min(roots, key=lambda v: v[1])[0])      # the root whose null vector lies least in P's block
    return tuple(out)


def quadratic_h(W0, a, X, y, eta1, eta2):
    """``H = W_0 (I + eps_1 M)(I + eps_2 M)``, row ``j`` with ``eps_t = eta_t a_j``: ``W_2`` of the quadratic
    ``sigma = He1 + He2/2`` after two steps on one batch, less its rank-two part along ``a`` (``W_2 - H`` has rank 2
    exactly; docs/theory/two_step.md §5.4).  It is the bulk whose top values :func:`rmtfl.numerics.quadratic_bulk`
    returns, which takes that part away from ``W_2`` instead; here the batch is given (a planted sample), and the
    product form is checked against ``W_2`` by a test.  Its columns along the eigenvectors of
    ``M = X^T diag(y) X / n`` are independent, so a sample's outlier in ``H`` is its column alone, uncoupled from the
    spikes of ``P``."""
    M = X.T @ (y[:, None] * X) / X.shape[0]
    e1, e2 = (eta1 * a)[:, None], (eta2 * a)[:, None]
    W0M = W0 @ M
    return W0 + (e1 + e2) * W0M + (e1 * e2) * (W0M @ M)


def planted_batch(tgt, *, N, d, n, z, seed):
    """``(W0, a, X, y)`` of one draw (``rng`` seeded with ``seed``) whose first sample is planted at ``z* = z`` (the
    target direction is ``e_1``) and whose other ``|z*|`` are kept below ``|z| - 0.05`` (redrawn uniform on
    ``[-2, 2]``), so that the planted sample is the batch's most extreme."""
    from rmtfl.numerics._two_step.model import sample_targets

    rng = np.random.default_rng(seed)
    W0 = rng.standard_normal((N, d)) / math.sqrt(d)
    a = rng.standard_normal(N) / math.sqrt(N)
    X = rng.standard_normal((n, d))
    big = np.abs(X[:, 0]) > abs(z) - 0.05
    X[big, 0] = rng.uniform(-2.0, 2.0, int(big.sum()))
    X[0, 0] = z
    return W0, a, X, sample_targets(X, target=tgt)


def coupling_to_p(tgt, *, N, alphas, z, draws):
    """The quadratic sigma, one reused batch whose most extreme sample is planted at ``z* = z`` (every other
    ``|z*|`` kept below ``|z| - 0.05``; seeds 7000, 7001, ...): per draw, the singular value whose right vector
    leans most on the sample, in ``W_2`` and in :func:`quadratic_h` (without the spikes of ``P``)."""
    from rmtfl.numerics._two_step.model import gd_steps
    from rmtfl.theory import get_activation

    act = get_activation("hermite(0, 1, 0.5)")
    d, n = N, 2 * N
    eta1, eta2 = N ** alphas[0], N ** alphas[1]
    out = {"W_2": [], "H": []}
    for s in range(draws):
        W0, a, X, y = planted_batch(tgt, N=N, d=d, n=n, z=z, seed=7000 + s)
        x = X[0] / np.linalg.norm(X[0])
        for name, A in (("W_2", gd_steps(act, W0, a, (X, y), etas=(eta1, eta2))),
                        ("H", quadratic_h(W0, a, X, y, eta1, eta2))):
            _, S, Vt = np.linalg.svd(A, full_matrices=False)
            out[name].append(float(S[int(np.argmax((Vt[:10] @ x) ** 2))]))
    return out


def simulate(act, tgt, *, N, alphas, z, draws, batch="fresh"):
    """Per draw: the planted sample's singular value in ``W_2`` and in ``W_2`` less its part along ``a``; and the mean
    squared column entries (times ``d``) per bin of ``g``, along the sample and along a random direction."""
    from rmtfl.numerics._two_step.model import gd_steps, sample_targets

    d, n = N, 2 * N
    eta1, eta2 = N ** alphas[0], N ** alphas[1]
    with_p, without_p = [], []
    acc, acc_g, cnt = (np.zeros(BINS.size - 1) for _ in range(3))
    for s in range(draws):
        rng = np.random.default_rng(4000 + s)
        W0 = rng.standard_normal((N, d)) / math.sqrt(d)
        a = rng.standard_normal(N) / math.sqrt(N)
        X1, X2 = rng.standard_normal((n, d)), rng.standard_normal((n, d))
        X1[0, 0] = z                                                    # the target direction is e_1
        first = (X1, sample_targets(X1, target=tgt))
        W = gd_steps(act, W0, a, [first, (X2, sample_targets(X2, target=tgt))] if batch == "fresh" else first,
                     etas=(eta1, eta2))
        ah = a / np.linalg.norm(a)
        Wp = W - np.outer(ah, ah @ W)
        x = X1[0] / np.linalg.norm(X1[0])
        for M, out in ((W, with_p), (Wp, without_p)):
            _, S, Vt = np.linalg.svd(M, full_matrices=False)
            k = int(np.argmax((Vt[:12] @ x) ** 2))
            out.append(float(S[k]))
        xo = x.copy()
        xo[0] = 0.0
        xo /= np.linalg.norm(xo)
        u = rng.standard_normal(d)
        u[0] = 0.0
        u /= np.linalg.norm(u)
        b = np.digitize(a * math.sqrt(N), BINS) - 1
        for k in range(BINS.size - 1):
            m = b == k
            acc[k] += float(np.sum((Wp[m] @ xo) ** 2)) * d
            acc_g[k] += float(np.sum((Wp[m] @ u) ** 2)) * d
            cnt[k] += m.sum()
    return with_p, without_p, (acc / cnt).tolist(), (acc_g / cnt).tolist()


def main(argv=None) -> int:
    from rmtfl.theory import get_activation, make_target

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--activation", default="tanh")
    ap.add_argument("--target", default="hermite(0, 1, 0, 0.4082482904638631)")
    ap.add_argument("--alphas", default="0.4,0.4")
    ap.add_argument("--z", type=float, default=4.0, help="z* of the planted sample")
    ap.add_argument("--N", type=int, default=1000)
    ap.add_argument("--draws", type=int, default=30)
    ap.add_argument("--batch", default="fresh", choices=("fresh", "reused"),
                    help="reused: the sample planted in the one batch, which both steps see")
    ap.add_argument("--json", default=None)
    ap.add_argument("--coupling", action="store_true",
                    help="the quadratic sigma, reused: the planted sample's value in W_2 and without the spikes of P "
                         "(coupling_to_p), beside the prediction's column root")
    a = ap.parse_args(argv)
    act, tgt = get_activation(a.activation), make_target(a.target)
    alphas = tuple(float(v) for v in a.alphas.split(","))
    if a.coupling:
        _, roots, _, _ = column_models(get_activation("hermite(0, 1, 0.5)"), tgt, N=a.N, alphas=alphas, z=a.z,
                                       batch="reused")
        vals = coupling_to_p(tgt, N=a.N, alphas=alphas, z=a.z, draws=a.draws)
        root = roots["scalar, bulk's samples"]
        print(f"column root (prediction, uncoupled): {root:.3f}; medians over "
              f"{a.draws} draws: " + ", ".join(f"{k} {np.median(v):.3f}" for k, v in vals.items()))
        return 0
    y, roots, edge, rows = column_models(act, tgt, N=a.N, alphas=alphas, z=a.z, batch=a.batch)
    coupled, uncoupled = coupled_root(act, tgt, N=a.N, alphas=alphas, z=a.z) if a.batch == "fresh" else (None, None)
    with_p, without_p, col, col_g = simulate(act, tgt, N=a.N, alphas=alphas, z=a.z, draws=a.draws, batch=a.batch)
    se = lambda v: float(np.std(v, ddof=1) / math.sqrt(len(v)))      # noqa: E731
    print(f"planted y = {y:.3f}, bulk edge {edge:.4f}")
    for k, v in roots.items():
        print(f"  root, {k:28s} {'-' if v is None else f'{v:.3f}'}")
    if coupled is not None:
        print(f"  joint problem (scalar, whole law): {uncoupled:.3f} alone, {coupled:.3f} coupled to the spikes of P")
    print(f"  simulated: W_2 {np.mean(with_p):.3f} ± {se(with_p):.3f}; less its part along a "
          f"{np.mean(without_p):.3f} ± {se(without_p):.3f} ({a.draws} draws)")
    print("  column variance per bin of g", BINS.tolist())
    for name, v in [("simulated, the sample", col), ("simulated, a random direction", col_g)] + list(rows.items()):
        print(f"    {name:30s}", " ".join(f"{x:7.3f}" for x in v))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(dict(y=y, roots=roots, edge=edge, coupled=coupled, uncoupled=uncoupled, with_p=with_p,
                           without_p=without_p, column=col, column_random=col_g, models=rows), f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
