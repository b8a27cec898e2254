"""Conjugate-kernel spectra: prediction (``ck_spectrum``) against simulation (``simulate_ck``), and speed.

Usage::

    python benchmarks/bench_kernel_spectra.py --accuracy [--d 2000] [--seeds 2] [--json FILE]
    python benchmarks/bench_kernel_spectra.py --speed [--size 4000]
    python benchmarks/bench_kernel_spectra.py --gram                 # k1 Gram outlier against B/A

Accuracy (docs/theory/kernel_spectra.md §6): for sigma in {relu, tanh, erf, gelu} and psi, phi in {0.5, 1, 2}
(``N = psi d``, ``n = phi d``), the quantiles at levels 0.05..0.95 of the sampled eigenvalues (inverse empirical
CDF, mean over seeds) against ``CKSpectrum.quantile``; reported as the largest ``|q_pred - q_sim| / (0.01 + 0.02
|q_sim|)`` (acceptance: <= 1), the top bulk edge (largest eigenvalue once the predicted outliers are removed) as
``|edge_sim - edge_pred| / (3 n^{-2/3} edge_pred)`` (acceptance: <= 1) for the limiting edge and for the finite-size
mean top eigenvalue ``CKSpectrum.top_bulk`` (Tracy-Widom shift), the relative error of the ``mu_0`` outlier
(acceptance: <= 1 %) and the KS distance of one draw.

Speed: the floor (one GEMM ``X W^T``, ``sigma``, one SYRK, ``eigh`` values only), each part timed on its own,
against ``simulate_ck`` at ``n = N = d = size``, measured in the same run; and the law: construction plus density
and CDF on 1000 points, and ``quantile`` at 19 levels.
"""
from __future__ import annotations

import argparse
import json
import time

import numpy as np

__all__ = ["accuracy", "speed", "gram_outliers", "main"]

ACTIVATIONS = ("relu", "tanh", "erf", "gelu")
RATIOS = (0.5, 1.0, 2.0)
LEVELS = np.arange(1, 20) / 20


def accuracy(d=2000, seeds=2, activations=ACTIVATIONS, ratios=RATIOS, verbose=True, only=None):
    """Rows of the acceptance table (one per activation, psi, phi; ``only``: a list of such triples)."""
    from rmtfl.numerics import ks_distance_ck, simulate_ck
    from rmtfl.theory import ck_spectrum

    rows = []
    cells = only or [(a, p, f) for a in activations for p in ratios for f in ratios]
    for act, psi, phi in cells:
        N, n = int(round(psi * d)), int(round(phi * d))
        law = ck_spectrum(act, psi=psi, phi=phi, N=N)
        n_out = sum(o.multiplicity for o in law.outliers if o.exists)
        qs, tops, outs, ks = [], [], [], []
        t0 = time.perf_counter()
        for s in range(seeds):
            ev = simulate_ck(act, N=N, d=d, n=n, rng=1000 * s + 7).eigenvalues
            qs.append(np.quantile(ev, LEVELS, method="inverted_cdf"))
            tops.append(ev[n_out])
            if n_out:
                outs.append(ev[0])
            if s == 0:
                ks.append(ks_distance_ck(ev, law))
        qsim = np.mean(qs, axis=0)
        qpred = law.quantile(LEVELS)
        q_ratio = float(np.max(np.abs(qpred - qsim) / (0.01 + 0.02 * np.abs(qsim))))
        edge = law.edges.upper
        edge_ratio = float(abs(np.mean(tops) - edge) / (3 * n ** (-2 / 3) * edge))
        tb_ratio = float(abs(np.mean(tops) - law.top_bulk) / (3 * n ** (-2 / 3) * edge))
        row = dict(activation=act, psi=psi, phi=phi, N=N, d=d, n=n, q_ratio=q_ratio,
                   edge_pred=edge, edge_sim=float(np.mean(tops)), edge_ratio=edge_ratio,
                   top_bulk=law.top_bulk, top_bulk_ratio=tb_ratio,
                   ks=float(ks[0]), seconds=time.perf_counter() - t0)
        if n_out:
            o = law.outliers[0]
            row.update(outlier_pred=o.location, outlier_sim=float(np.mean(outs)),
                       outlier_rel=float(abs(np.mean(outs) - o.location) / o.location))
        rows.append(row)
        if verbose:
            print(_fmt(row), flush=True)
    return rows


def _fmt(r):
    out = (f"| {r['activation']} | {r['psi']:g} | {r['phi']:g} | {r['q_ratio']:.2f} | {r['edge_pred']:.4f} | "
           f"{r['edge_sim']:.4f} | {r['edge_ratio']:.2f} | {r['top_bulk']:.4f} | {r['top_bulk_ratio']:.2f} | ")
    if "outlier_pred" in r:
        out += f"{r['outlier_pred']:.2f} | {r['outlier_sim']:.2f} | {100 * r['outlier_rel']:.3f} % |"
    else:
        out += "– | – | – |"
    return out + f" {r['ks']:.4f} |"


HEADER = ("| sigma | psi | phi | quantile err / tol | edge (limit) | top bulk sim | err / tol | top bulk pred (finite n) | "
          "err / tol | mu0 pred | mu0 sim | mu0 err | KS |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|")


def speed(size=4000, rng=0):
    """Floor parts and ``simulate_ck`` at ``n = N = d = size``, and the law's speed; a dict of seconds."""
    import scipy.linalg as sla

    from rmtfl.numerics import simulate_ck
    from rmtfl.numerics._classical.blas import gram_upper, matmul
    from rmtfl.theory import ck_spectrum

    g = np.random.default_rng(rng)
    X = g.standard_normal((size, size))
    W = g.standard_normal((size, size)) / np.sqrt(size)
    out = {}
    t = time.perf_counter()
    P = matmul(X, W.T)
    out["gemm"] = time.perf_counter() - t
    t = time.perf_counter()
    np.maximum(P, 0.0, out=P)
    out["sigma"] = time.perf_counter() - t
    t = time.perf_counter()
    G = gram_upper(P)
    G *= 1.0 / size
    out["syrk"] = time.perf_counter() - t
    del P, X, W
    t = time.perf_counter()
    sla.eigh(G, lower=False, eigvals_only=True, overwrite_a=True, check_finite=False, driver="evd")
    out["eigh"] = time.perf_counter() - t
    del G
    out["floor"] = out["gemm"] + out["sigma"] + out["syrk"] + out["eigh"]
    t = time.perf_counter()
    simulate_ck("relu", N=size, d=size, n=size, rng=rng)
    out["simulate_ck"] = time.perf_counter() - t
    out["ratio"] = out["simulate_ck"] / out["floor"]
    x = np.linspace(0.0, 5.0, 1000)
    t = time.perf_counter()
    law = ck_spectrum("relu", psi=1.0, phi=1.0)
    law.density(x)
    law.cdf(x)
    out["law_1000"] = time.perf_counter() - t
    t = time.perf_counter()
    law.quantile(LEVELS)
    out["quantile_19"] = time.perf_counter() - t
    return out


def gram_outliers(n=2000, d=1000, ratios=(1.0, 4.0), seeds=3, activation="relu"):
    """k1 Gram (``Gamma = A I + B w* w*^T``, ``A = 1/d``) top eigenvalue against ``kernel_gram_spectrum``."""
    from rmtfl.numerics import kernel_gram
    from rmtfl.theory import kernel_gram_spectrum

    rows = []
    for b in ratios:
        A = 1.0 / d
        gam = (A, b * A, np.eye(d)[0])
        pred = kernel_gram_spectrum(activation, phi=n / d, gamma=gam)
        tops = []
        for s in range(seeds):
            X = np.random.default_rng(s).standard_normal((n, d))
            K = kernel_gram(activation, X, gamma=gam)
            w, V = np.linalg.eigh(K)
            z = X[:, 0] / np.linalg.norm(X[:, 0])
            tops.append(np.r_[w[::-1][:3], (V[:, ::-1][:, :3].T @ z) ** 2])
        tops = np.array(tops)
        rows.append(dict(b=b, pred=[(o.kind, o.location, o.cos2_Xw) for o in pred.outliers],
                         edge=pred.edges.upper, sim=tops.mean(0).tolist(),
                         se=(tops.std(0, ddof=1) / np.sqrt(seeds)).tolist()))
        print(rows[-1], flush=True)
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--accuracy", action="store_true")
    ap.add_argument("--speed", action="store_true")
    ap.add_argument("--gram", action="store_true")
    ap.add_argument("--d", type=int, default=2000)
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--size", type=int, default=4000)
    ap.add_argument("--json", default=None)
    ap.add_argument("--only", nargs="+", default=None, metavar="ACT:PSI:PHI", help="re-run these cells only")
    args = ap.parse_args(argv)
    res = {}
    if args.accuracy:
        print(HEADER)
        only = None if args.only is None else [(c.split(":")[0], float(c.split(":")[1]), float(c.split(":")[2]))
                                               for c in args.only]
        res["accuracy"] = accuracy(d=args.d, seeds=args.seeds, only=only)
    if args.speed:
        res["speed"] = speed(args.size)
        print(json.dumps(res["speed"], indent=1))
    if args.gram:
        res["gram"] = gram_outliers()
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(res, fh, indent=1)
    return res


if __name__ == "__main__":
    main()
