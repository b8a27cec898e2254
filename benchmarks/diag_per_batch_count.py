"""Per-batch spectra of ``W_2`` from the finite-N theory's ingredients: the count rule's median over batches
(docs/theory/two_step_attempts.md §5).

The prediction counts outliers on one typical spectrum; a simulation's median count is the median over batches of
the rule on each batch's spectrum, and the rule is not linear (docs/theory/two_step.md §8.4, "A count read off one
spectrum").  This diagnostic draws batches of a reduced model instead of ``W_2`` itself and counts each:

* the batch's extreme samples (those the bulk leaves out, ``|y|`` beyond the typical cut): a Poisson number per side
  of the law of ``y``, each at a uniform tail probability, with the column profile of its tail sub-bin
  (:func:`rmtfl.theory._two_step.sample_order.column_parts`);
* their columns as one ``K x K`` problem ``T(x) = diag(Q_i(x) + strength noise) + couplings``, the couplings
  ``sum_j c_ij c_kj tau_j`` Gaussian with variance ``(N / d^2) E_j[v_ij v_kj tau_j^2]`` (one draw per batch, scaled
  at each ``x``): above the edge the batch's column outliers are where an eigenvalue of ``T`` crosses 1;
* below the edge the expected count of the bulk plus the spectral shift ``arg det(I - T(x + i0)) / pi`` of the
  batch's columns (unwrapped from the edge), so that columns near their threshold lift the bulk's top instead of
  piling up above it;
* the spikes of ``P`` at the prediction's values (not coupled to the batch's columns), or with ``--joint`` solved
  together with them (the ``J(x)`` of :mod:`rmtfl.theory._two_step.joint_roots` with the batch's ``T(x)``).

The count rule of docs/theory/two_step.md §9.2 runs on each drawn spectrum; the median over ``--draws`` batches is set
beside the simulated median count of a cached grid (``benchmarks.bench_two_step_finite_n``).  Reused batches only.
The model samples, so it lives here and not in ``rmtfl.theory``::

    python -m benchmarks.diag_per_batch_count --cache two_step_fn_1000.json --select "gelu|hermite(0, 1, 0.5)|reused"
"""
from __future__ import annotations

import argparse
import collections
import json
import math
import sys

import numpy as np


def batch_model(act, tgt, *, N, psi, phi, eta1, eta2, whole_law=True, joint=False, below=400):
    """The reduced model's ingredients at one grid point (reused batch; module docstring), or ``None`` where no
    sample is left out of the bulk.  ``joint``: the spikes of ``P`` and each batch's columns as one problem (the
    ``J(x)`` of :mod:`rmtfl.theory._two_step.joint_roots` with the batch's ``K x K`` block), not the spikes at the
    prediction's values."""
    from rmtfl.theory import get_activation, make_target, two_step
    from rmtfl.theory._two_step import sample_spikes
    from rmtfl.theory._two_step.counting import count_window
    from rmtfl.theory._two_step.finite_n import (bulk_without, extreme_ranks, finite_n_grams, finite_n_setup,
                                                 sample_components, weighted_gram_u)
    from rmtfl.theory._two_step.sample_order import TAIL_BINS, TAIL_MASS, TAIL_SUB, column_parts
    from rmtfl.theory._two_step.widened_bulk import psd_sqrt

    from .diag_m_spike import m_spike_whole_law

    act_o, target = get_activation(act), make_target(tgt)
    d = N / psi
    st = finite_n_setup(act_o, target, phi=phi, batch="reused", phi2=None)
    _, G_V, _, tn, g, wg, *_ = finite_n_grams(act_o, st, eta1=eta1, eta2=eta2, N=N, bulk=False)
    K = extreme_ranks(N=N, psi=psi, phi=phi, phi2=None, batch="reused")
    if K == 0 or sample_spikes.bulk_cut(target, int(round(phi * d)), ranks=K) is None:
        return None
    bulk = bulk_without(act_o, target, st, ranks=K, eta1=eta1, eta2=eta2, N=N, psi=psi, tn=tn)
    rho = sample_spikes.second_step_move(act_o, st, eta1 * bulk.a)

    def whole(ys, zs, phi_b, yb, wb):      # beyond the bulk's samples, as the prediction's own rule
        lam = np.asarray(ys, dtype=float) / phi_b
        far = np.abs(ys) > np.max(np.abs(yb))
        lam[far] = m_spike_whole_law(target, np.asarray(ys)[far], np.asarray(zs)[far], phi_b, d)
        return lam
    (mass, vmean, vm2, n_b), = column_parts(act_o, target, st, bulk, eta1=eta1, eta2=eta2, N=N, psi=psi, ranks=K,
                                            rho=rho, eigenvalue=whole if whole_law else None)[0]
    pred = two_step(act, tgt, psi=psi, phi=phi, eta1=eta1, eta2=eta2, N=N, batch="reused")
    xe, J = bulk.x_edge, count_window(N, psi)
    top = bulk.top_values(J + 30)
    xb = np.linspace(min(top[-1] ** 2, 0.8 * xe), xe * (1 - 1e-6), below)
    t, nbulk = bulk.resolvent_below(xb, 0.5 * (xb[1] - xb[0]), levels=10, sweeps=16)
    s_hi = max([o.singular_value for o in pred.outliers] + [math.sqrt(xe)]) * 1.5
    sg = math.sqrt(xe) * (1 + 1e-7) + (s_hi - math.sqrt(xe)) * np.linspace(0.0, 1.0, 96) ** 2
    tau_r = np.array([bulk.tau_rows(bulk.a, s * s)[0] for s in sg])
    # each side's sub-bins, from its most extreme sample inward (their tail probabilities), and the probability
    # that a sample is one the bulk leaves out (z* outside its range) and of that side
    nb = mass.size // 2
    zg = np.linspace(-12.0, 12.0, 96001)
    wz = np.exp(-0.5 * zg * zg) * (zg[1] - zg[0]) / math.sqrt(2 * math.pi)
    yg = np.asarray(target.links[0](zg), dtype=float)
    out = (zg < bulk.zrange[0]) | (zg > bulk.zrange[1])
    sides = [dict(p_cut=float(wz[out & (sign * yg > 0)].sum()), his=np.cumsum(mass[i * nb:(i + 1) * nb]),
                  v=vmean[i * nb:(i + 1) * nb], v2=vm2[i * nb:(i + 1) * nb]) for i, sign in enumerate((1.0, -1.0))]
    P = None
    if joint:     # the right vectors of P along each sub-bin's sample, and the P block's kernels on the s grid
        p_tail = min(0.25, TAIL_MASS * K / n_b)
        ys, zs, _ = sample_spikes.tail_bins(target, n_b, p_tail, bins=TAIL_BINS)
        Rt, _ = sample_spikes.tail_refinement(n_b, p_tail, bins=TAIL_BINS, sub=TAIL_SUB)
        U = sample_components(act_o, st, eta1, eta2, tn, ys, zs, d, "both") @ Rt.T      # (r, sub-bins)
        GUw = weighted_gram_u(g, wg)
        kern = [bulk.tau_rows(g / math.sqrt(N), s * s) for s in sg]
        P = dict(G_V=G_V, U=[U[:, i * nb:(i + 1) * nb] for i in range(2)],
                 R=np.array([psd_sqrt(GUw(tq)) for tq, _ in kern]), xt=np.array([s * s * ttm for s, (_, ttm) in
                                                                                  zip(sg, kern)]))
    for i, side in enumerate(sides):
        side["u"] = None if P is None else P["U"][i]
    return dict(N=N, d=d, n=n_b, J=J, xe=xe, xb=xb, nbulk=nbulk, tau_c=-t, tau_r=tau_r, sg=sg, wa=bulk.wa, P=P,
                sides=sides, spikes=[o.singular_value for o in pred.outliers if o.kind != "sample"],
                prediction=pred, bulk=bulk)


def draw_spectrum(m, rng, *, couplings=True):
    """One batch of the reduced model: its top values (descending) and how many lie above the edge."""
    V, V2, U = [], [], []
    for side in m["sides"]:
        k = rng.poisson(m["n"] * side["p_cut"])
        b = np.minimum(np.searchsorted(side["his"], rng.random(k) * side["p_cut"]), side["his"].size - 1)
        V += [side["v"][i] for i in b]
        V2 += [side["v2"][i] for i in b]
        U += [] if side["u"] is None else [side["u"][:, i] for i in b]
    K = len(V)
    G = np.triu(rng.standard_normal((K, K)), 1)
    return spectrum_of(m, np.reshape(V, (K, -1)), np.reshape(V2, (K, -1)), G + G.T if couplings else 0 * G,
                       rng.standard_normal(K), U=np.array(U).T if m["P"] is not None else None)


def spectrum_of(m, V, V2, G, noise, U=None):
    """The top values (descending) of a batch whose extreme samples have the column variances ``V`` (``E[v]`` per
    row) and ``V2`` (``E[v^2]``), couplings ``G`` and strength deviations ``noise`` (standard normal scales), and
    how many lie above the edge (module docstring); ``U``: the components of the right vectors of ``P`` along them
    (``r x K``), with which the spikes of ``P`` are solved together with the columns (``m`` built with ``joint``)."""
    sg, s_e, K = m["sg"], math.sqrt(m["xe"]), len(V)
    if U is not None:
        return _joint_spectrum(m, V, V2, G, noise, U)
    vals = [v for v in m["spikes"] if v > s_e]
    count = m["nbulk"] + len(vals)
    if K:
        ev = np.sort(np.linalg.eigvalsh(_column_block(m, V, V2, G, noise, m["tau_r"]).real), axis=1)[:, ::-1]
        n_above = (ev > 1.0).sum(1)                      # (grid, K) descending: columns above each s
        for k in range(1, int(n_above[0]) + 1):          # the k-th column root: where the k-th eigenvalue crosses 1
            j = int(np.argmax(n_above < k)) if (n_above < k).any() else sg.size - 1
            e0, e1 = ev[j - 1, k - 1], ev[j, k - 1]
            vals.append(float(sg[j - 1] + (sg[j] - sg[j - 1]) * (e0 - 1.0) / (e0 - e1)))
        count = count + _column_shift(m, V, V2, G, noise) + n_above[0]
    return _below_edge(m, vals, count)


def _column_shift(m, V, V2, G, noise):
    """The batch's columns' spectral shift below the edge, ``arg det(I - T(x + i0)) / pi`` unwrapped from the edge
    (zero there)."""
    det = np.linalg.det(np.eye(len(V))[None] - _column_block(m, V, V2, G, noise, m["tau_c"]))
    phase = np.unwrap(np.angle(det)[::-1])[::-1]
    return (phase - phase[-1]) / np.pi


def _below_edge(m, vals, count):
    """The roots above the edge (descending) and, below it, the ``k``-th value where ``count`` falls to
    ``k - c`` (``c``: where the bulk's top values are read, ``TOP_VALUE_OFFSET``, docs/theory/two_step.md §9.2); and
    how many lie above the edge."""
    from rmtfl.theory._two_step.widened_bulk import TOP_VALUE_OFFSET

    vals = sorted(vals, reverse=True)
    out = list(vals)
    for k in range(len(vals) + 1, m["J"] + 25):
        if count[0] < k - TOP_VALUE_OFFSET:
            break
        out.append(math.sqrt(float(np.interp(-(k - TOP_VALUE_OFFSET), -count, m["xb"]))))
    return np.array(out), len(vals)


def _column_block(m, V, V2, G, noise, tau):
    """``T(x)`` of the batch's columns at the kernels ``tau`` (points x rows): ``(points, K, K)``."""
    N, d, wa = m["N"], m["d"], m["wa"]
    psi, K = N / d, len(V)
    Q = psi * (tau * wa) @ V.T
    sd = psi * np.sqrt(np.abs((tau * tau * wa) @ V2.T - Q * Q) / N)
    var = (N / d**2) * np.einsum("pj,kj,lj->pkl", tau * tau * wa, V, V)
    return np.eye(K)[None] * (Q + noise * sd)[:, :, None] + np.sqrt(var.astype(complex)) * G


def _joint_spectrum(m, V, V2, G, noise, U):
    """:func:`spectrum_of` with the spikes of ``P`` and the batch's columns as one problem: above the edge the roots
    of ``J(x) = [[I - x R (G_V - U U^T) R, R U], [U^T R, I - T(x)]]`` (each eigenvalue turning negative as ``x``
    comes down is an outlier), below it the columns' spectral shift as in :func:`spectrum_of`."""
    P, sg = m["P"], m["sg"]
    K, r = len(V), P["G_V"].shape[0]
    T = _column_block(m, V, V2, G, noise, m["tau_r"]).real if K else np.zeros((sg.size, 0, 0))
    GV = P["G_V"] - (U @ U.T if K else 0.0)
    neg = []
    for i in range(sg.size):
        R = P["R"][i]
        J = np.zeros((r + K, r + K))
        J[:r, :r] = np.eye(r) - P["xt"][i] * (R @ GV @ R)
        if K:
            J[:r, r:] = R @ U
            J[r:, :r] = J[:r, r:].T
            J[r:, r:] = np.eye(K) - T[i]
        neg.append(np.linalg.eigvalsh((J + J.T) / 2))
    ev = np.array(neg)                                   # ascending per grid point
    n_neg = (ev < 0).sum(1)
    vals = []
    for k in range(1, int(n_neg[0]) + 1):                # the k-th root: where the k-th smallest eigenvalue turns 0
        j = int(np.argmax(n_neg < k)) if (n_neg < k).any() else sg.size - 1
        e0, e1 = ev[j - 1, k - 1], ev[j, k - 1]
        vals.append(float(sg[j - 1] + (sg[j] - sg[j - 1]) * e0 / (e0 - e1)) if j > 0 else float(sg[0]))
    count = m["nbulk"] + n_neg[0] + (_column_shift(m, V, V2, G, noise) if K else 0.0)
    return _below_edge(m, vals, count)


def main(argv=None):
    from rmtfl.numerics import edge_outlier_count

    from .bench_two_step_finite_n import SHORT, middle_counts

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cache", required=True, help="simulations of benchmarks.bench_two_step_finite_n")
    ap.add_argument("--select", default="", help="a substring of 'activation|target|batch'")
    ap.add_argument("--draws", type=int, default=41)
    ap.add_argument("--seeds", type=int, default=25, help="simulated draws per point")
    ap.add_argument("--bulk-eigenvalue", action="store_true",
                    help="M's eigenvalue along a sample from the bulk's samples only (the prediction's), not the "
                         "whole law")
    ap.add_argument("--no-couplings", action="store_true")
    ap.add_argument("--joint", action="store_true", help="the spikes of P solved with each batch's columns")
    a = ap.parse_args(argv)
    cache = json.load(open(a.cache))
    tally = collections.Counter()
    for key, rows in sorted(cache.items()):
        p = key.split("|")
        N, batch, act, tgt, a1, a2 = int(p[0]), p[1], p[2], p[3], float(p[4]), float(p[5])
        kw = dict(x.split("=") for x in p[6:])
        psi, phi = float(kw.get("psi", 1.0)), float(kw.get("phi", 2.0))
        if batch != "reused" or a.select not in f"{act}|{tgt}|{batch}" or len(rows) < a.seeds:
            continue
        window = max(12, math.ceil(0.8 * math.sqrt(min(N, N / psi))))
        fits = [edge_outlier_count(np.array(r["sv"]), window=window) for r in rows[:a.seeds]]
        lo, hi = middle_counts([f.count for f in fits])
        m = batch_model(act, tgt, N=N, psi=psi, phi=phi, eta1=N ** a1, eta2=N ** a2, whole_law=not a.bulk_eigenvalue,
                        joint=a.joint)
        if m is None:
            continue
        pred = len(m["prediction"].outliers)
        rng = np.random.default_rng(1)
        drawn = [draw_spectrum(m, rng, couplings=not a.no_couplings) for _ in range(a.draws)]
        rule = [edge_outlier_count(s, window=window) for s, _ in drawn]
        med = int(np.median([r.count for r in rule]))
        tally["points"] += 1
        tally["prediction"] += lo <= pred <= hi
        tally["batches"] += lo <= med <= hi
        sim = np.mean([r["sv"][:8] for r in rows[:a.seeds]], axis=0)
        model = np.mean([s[:8] for s, _ in drawn if s.size >= 8], axis=0)
        print(f"{act} / {SHORT.get(tgt, tgt)} ({a1}, {a2}) count sim {lo}{'' if lo == hi else f'-{hi}'} "
              f"prediction {pred} batches {med}; edge sim {np.mean([f.edge for f in fits]):.3f} batches "
              f"{np.mean([r.edge for r in rule]):.3f}\n   simulated ranks 1-8 {np.round(sim, 3)}\n"
              f"   drawn ranks 1-8     {np.round(model, 3)}", flush=True)
    print(f"median count matched at {tally['batches']} of {tally['points']} points "
          f"(the prediction's count: {tally['prediction']})")


if __name__ == "__main__":
    sys.exit(main())
