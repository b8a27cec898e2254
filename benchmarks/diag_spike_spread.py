"""The spread of the two-step outliers from draw to draw: prediction against simulation (docs/theory/two_step.md §8.5).

For each point, ``--draws`` simulations of ``W_2`` (``N = d``, ``n = n2 = 2N``, float32 steps, seeds 5000, 5001, ...)
give the mean and standard deviation of the top singular values; ``rmtfl.theory.two_step(..., N=N)`` gives each
outlier's value and its ``spread``.  The standard error of a simulated standard deviation is about
``sd / sqrt(2 (draws - 1))``.  ``--json`` keeps the simulated numbers (the reference of
tests/theory/two_step/test_spike_spread.py).

    python -m benchmarks.diag_spike_spread [--draws 200] [--first-seed 5000] [--json FILE]
                                           [--points "act|target|batch|a1|a2" ...]

``--correlations RANK`` reports instead what the RANK-th value follows from draw to draw (:func:`correlations`);
``--decompose FIXED`` splits each value's variance over draws into the part the batch makes and the part ``W_0`` and
``a`` make (:func:`decompose`), beside the parts of the predicted spread (:func:`predicted_parts`).
"""
from __future__ import annotations

import argparse
import json
import math
import sys

import numpy as np

H2, H3, QUAD = "hermite(0, 1, 0.5)", "hermite(0, 1, 0, 0.4082482904638631)", "hermite(0, 1, 0.5)"

#: The points of the reference: spikes of P alone (tanh, gelu; He1 + He2/2 and He1 + He3/sqrt(6)), both batches,
#: two of the quadratic sigma where two spikes of P and single-sample outliers share ranks, and two spikes near the
#: edge (where the bulk's own resolvent adds to the spread).
POINTS = [f"tanh|{H2}|reused|0.2|0.2", f"tanh|{H2}|reused|0.0|0.4", f"tanh|{H3}|reused|0.0|0.4",
          f"{QUAD}|{H3}|fresh|0.4|0.4", f"tanh|{H2}|reused|0.4|0.4", f"gelu|{H2}|reused|0.4|0.4",
          f"tanh|{H2}|fresh|0.4|0.4", f"{QUAD}|{H3}|reused|0.2|0.2", f"tanh|{H2}|reused|0.0|0.0",
          f"erf|{H2}|reused|0.1|0.0"]


def simulate(point: str, N: int, draws: int, first_seed: int = 5000) -> list:
    """The top 8 singular values of ``draws`` simulated ``W_2`` at ``point`` (``act|target|batch|a1|a2``), seeds
    ``first_seed, first_seed + 1, ...``."""
    from rmtfl.numerics import simulate_two_step

    act, tgt, batch, a1, a2 = point.split("|")
    kw = dict(batch="fresh", n2=2 * N) if batch == "fresh" else {}
    return [[float(v) for v in simulate_two_step(act, tgt, N=N, d=N, n=2 * N, eta1=N ** float(a1),
                                                 eta2=N ** float(a2), rng=first_seed + s, dtype="float32", n_vectors=1,
                                                 **kw).singular_values[:8]] for s in range(draws)]


def correlations(point: str, N: int, draws: int, rank: int = 2) -> dict:
    """Which draw-to-draw quantities the ``rank``-th singular value follows (reused batches; seeds 9000, 9001, ...):
    its correlation with the rows' ``E_N[g^4]`` (``g = sqrt(N) a``), the batch's ``E_n[y^2]`` and ``E_n[y^4]`` and its
    largest ``|y|``, and the share of its variance that a linear fit on all four leaves
    (docs/theory/two_step.md §8.5)."""
    from rmtfl.numerics._two_step.model import gd_steps
    from rmtfl.theory import get_activation, make_target

    act, tgt, batch, a1, a2 = point.split("|")
    if batch != "reused":
        raise ValueError(f"correlations: reused batches only, got {point!r}")
    act, tgt = get_activation(act), make_target(tgt)
    rows = []
    for s in range(draws):
        W0, a, X, y = _draw(np.random.default_rng(9000 + s), N, tgt)
        W = gd_steps(act, W0, a, (X, y), etas=(N ** float(a1), N ** float(a2)))
        sv = np.linalg.svd(W, compute_uv=False)[rank - 1]
        g = a * math.sqrt(N)
        rows.append((sv, np.mean(g**4), np.mean(y**2), np.mean(y**4), np.max(np.abs(y))))
    R = np.array(rows)
    X = np.column_stack([np.ones(draws), R[:, 1:]])
    resid = R[:, 0] - X @ np.linalg.lstsq(X, R[:, 0], rcond=None)[0]
    names = ("E_N[g^4]", "E_n[y^2]", "E_n[y^4]", "max |y|")
    return dict(sd=float(R[:, 0].std(ddof=1)), unexplained=float(resid.var() / R[:, 0].var()),
                **{k: float(np.corrcoef(R[:, 0], R[:, i + 1])[0, 1]) for i, k in enumerate(names)})


def _draw(rng, N, tgt):
    """``W_0``, ``a`` and one batch ``(X, y)`` of ``2N`` samples (``d = N``), from ``rng`` in that order."""
    from rmtfl.numerics._two_step.model import sample_targets

    W0, a = rng.standard_normal((N, N)) / math.sqrt(N), rng.standard_normal(N) / math.sqrt(N)
    X = rng.standard_normal((2 * N, N))
    return W0, a, X, sample_targets(X, target=tgt)


def decompose(point: str, N: int, fixed: int, draws: int) -> dict:
    """The mean over ``fixed`` draws of ``(W_0, a)`` of the variance of the top three singular values over ``draws``
    batches (``"batch"``), and the mean over ``fixed`` batches of their variance over ``draws`` draws of ``(W_0, a)``
    (``"W0, a"``), as standard deviations (reused batches; float64 steps; seeds 8000 + ``f`` for the fixed part,
    20000 + 1000 ``f`` + ``s`` for the rest).  With no interaction between the two they would add up to the total
    variance (docs/theory/two_step.md §8.5)."""
    from rmtfl.numerics._two_step.model import gd_steps
    from rmtfl.theory import get_activation, make_target

    act, tgt, batch, a1, a2 = point.split("|")
    if batch != "reused":
        raise ValueError(f"decompose: reused batches only, got {point!r}")
    act, tgt = get_activation(act), make_target(tgt)
    etas = (N ** float(a1), N ** float(a2))
    out = {}
    for varies in ("batch", "W0, a"):
        var = []
        for f in range(fixed):
            W0f, af, Xf, yf = _draw(np.random.default_rng(8000 + f), N, tgt)
            sv = []
            for s in range(draws):
                W0, a, X, y = _draw(np.random.default_rng(20000 + 1000 * f + s), N, tgt)
                W0, a = (W0f, af) if varies == "batch" else (W0, a)
                X, y = (Xf, yf) if varies == "W0, a" else (X, y)
                sv.append(np.linalg.svd(gd_steps(act, W0, a, (X, y), etas=etas), compute_uv=False)[:3])
            var.append(np.var(sv, axis=0, ddof=1))
        out[varies] = np.sqrt(np.mean(var, axis=0)).tolist()
    return out


def predicted_parts(point: str, N: int) -> list:
    """Per outlier of ``P`` (largest first), the standard deviation each part of the predicted spread alone gives
    (``detail`` of :func:`rmtfl.theory._two_step.spike_spread.spike_spreads`)."""
    from rmtfl.theory import get_activation, make_target
    from rmtfl.theory._two_step.finite_n import predict_finite_n

    act, tgt, batch, a1, a2 = point.split("|")
    parts = []
    predict_finite_n(get_activation(act), make_target(tgt), psi=1.0, phi=2.0, phi2=2.0 if batch == "fresh" else None,
                     eta1=N ** float(a1), eta2=N ** float(a2), batch=batch, N=float(N), spread_detail=parts)
    names = ("data", "first", "chi2", "rows", "resolvent")
    return [None if p is None else {k: p[k] for k in names} for p in parts]


def predict(point: str, N: int):
    """``two_step`` at ``point``: the outliers, largest first."""
    from rmtfl.theory import two_step

    act, tgt, batch, a1, a2 = point.split("|")
    return two_step(act, tgt, psi=1.0, phi=2.0, eta1=N ** float(a1), eta2=N ** float(a2), N=N, batch=batch,
                    phi2=2.0 if batch == "fresh" else None).outliers


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--N", type=int, default=1000)
    ap.add_argument("--draws", type=int, default=200)
    ap.add_argument("--points", nargs="*", default=POINTS)
    ap.add_argument("--json", default=None)
    ap.add_argument("--first-seed", type=int, default=5000, help="seed of the first draw (default 5000)")
    ap.add_argument("--correlations", type=int, default=0, metavar="RANK",
                    help="instead: what the RANK-th value follows from draw to draw (reused points)")
    ap.add_argument("--decompose", type=int, default=0, metavar="FIXED",
                    help="instead: the variance the batch makes and the one W0 and a make, each over --draws draws "
                         "and averaged over FIXED draws of the other (reused points)")
    a = ap.parse_args(argv)
    if a.decompose:
        for p in a.points:
            print(p, json.dumps(dict(simulated=decompose(p, a.N, a.decompose, a.draws),
                                     predicted=predicted_parts(p, a.N))), flush=True)
        return 0
    if a.correlations:
        for p in a.points:
            print(p, json.dumps(correlations(p, a.N, a.draws, a.correlations)), flush=True)
        return 0
    ref = {"_source": f"python -m benchmarks.diag_spike_spread --draws {a.draws} (simulate_two_step, N = d = {a.N}, "
                      f"n = n2 = {2 * a.N}, float32, seeds {a.first_seed}-{a.first_seed + a.draws - 1})"}
    print("| point | rank | predicted value ± spread | simulated mean ± sd |\n|---|---|---|---|")
    for p in a.points:
        S = np.array(simulate(p, a.N, a.draws, a.first_seed))
        ref[p] = dict(N=a.N, draws=a.draws, mean=S.mean(0).tolist(), sd=S.std(0, ddof=1).tolist())
        for r, o in enumerate(predict(p, a.N)[:3]):
            print(f"| {p} | {r + 1} | {o.singular_value:.3f} ± {o.spread:.3f} | {S[:, r].mean():.3f} ± "
                  f"{S[:, r].std(ddof=1):.3f} (± {S[:, r].std(ddof=1) / math.sqrt(2 * (a.draws - 1)):.3f}) |",
                  flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(ref, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
