"""The finite-N two-step prediction at random points off the acceptance grid, against a few simulated draws each
(docs/theory/two_step.md §9.3, "Off the grid"; docs/reliability.md §4).

The acceptance page (:mod:`benchmarks.bench_two_step_finite_n`) checks a fixed grid; this probe draws every input at
once from the ranges people simulate -- seven sigma, five targets (Hermite degree up to 4, label noise), ``psi`` and
``phi`` off the default shape, ``N`` from 300 to 1500, both exponents in ``[0, 0.45]``, both batch kinds -- and sets
``rmtfl.theory.two_step(..., N=N)`` beside ``--draws`` simulated draws of ``W_2`` (float32 steps; point ``i`` of seed
``S`` draws with seeds ``100000 S + 100 i``, ``+ 1``, ...: the points' draws are independent, so the errors of
few-draw means do not line up across points).  With a heavy-tailed target at a small batch the top value's law over
batches is itself heavy-tailed: a few draws' mean and standard error understate it, and ``--draws`` should be
raised before reading a miss there as the prediction's (docs/theory/two_step.md §9.3).

Per point: the top outlier within 5 % or 3 standard errors of the simulated mean (``top``), the count of the rule of
docs/theory/two_step.md §9.2 against the median simulated count (``count``), the fitted edge within 3 standard errors
plus ``3 N^(-2/3)`` edge (``edge``); a point whose prediction is marked reliable but whose top outlier is more than
25 % and 3 standard errors off is a suspect, and is drawn again with ``--confirm`` draws (40 by default; the first
``--draws`` of them are the same): it is reported as ``WRONG`` only if the larger sample still says so.  A
heavy-tailed law of the top value over batches can make a suspect of a right prediction: the quadratic sigma with
He1 + He3/sqrt(6), reused, N = 300, psi = 0.5, phi = 1, (alpha1, alpha2) = (0.25, 0.15), predicted 24.3, had 11.2 over
the four draws of seed 8, and 22.5 +- 3.7 over sixty others (docs/reliability.md §4)::

    python -m benchmarks.probe_two_step_accuracy --seed 1 --count 60            # about 3 minutes on one core

``--at JSON`` checks one given point instead, and prints every predicted outlier beside the simulated ranks::

    python -m benchmarks.probe_two_step_accuracy --draws 8 \\
        --at '{"act": "square", "tgt": "hermite(0, 1, 0.5)", "N": 1000, "a1": 0.3, "a2": 0.3}'

Exit status 1 when any point is ``WRONG``.
"""
from __future__ import annotations

import argparse
import json
import math
import random
import sys
import time

import numpy as np

ACTIVATIONS = ["tanh", "erf", "gelu", "relu", "sigmoid", "softplus", "hermite(0, 1, 0.5)"]
TARGETS = ["hermite(0, 1, 0.5)", "hermite(0, 1, 0, 0.4082482904638631)", "hermite(0, 1)", "hermite(0, 0.8, 0.4)",
           "hermite(0, 1, 0, 0, 0.2)"]
#: The largest ``N d n`` simulated (twice that of N = d = 1000, n = 2000).
MAX_WORK = 4e9
WRONG = 0.25


def draw(rng: random.Random, wide: bool = False) -> dict:
    """One random point: the call's arguments, the sizes ``d, n`` and the batch.  ``wide``: more extreme shapes
    (``psi`` from 0.25 to 4, ``phi`` from 0.5 to 8) and a Rademacher second layer half the time."""
    while True:
        if wide:
            psi, phi = rng.choice([0.25, 0.5, 1.0, 2.0, 4.0]), rng.choice([0.5, 1.0, 2.0, 4.0, 8.0])
        else:
            psi, phi = rng.choice([0.5, 1.0, 2.0]), rng.choice([1.0, 2.0, 4.0])
        N = rng.choice([300, 500, 1000, 1500])
        d, n = int(round(N / psi)), int(round(phi * N / psi))
        if N * d * n <= MAX_WORK and min(d, n) >= 2:
            break
    batch = rng.choice(["reused", "fresh"])
    pt = dict(act=rng.choice(ACTIVATIONS), tgt=rng.choice(TARGETS), psi=psi, phi=phi, N=N, d=d, n=n, batch=batch,
              a1=round(rng.uniform(0.0, 0.45), 2), a2=round(rng.uniform(0.0, 0.45), 2),
              noise=rng.choice([0.0, 0.0, 0.25]))
    if wide:
        pt["second_layer"] = rng.choice(["gaussian", "rademacher"])
    return pt


def check(pt: dict, draws: int, first_seed: int = 1000) -> dict:
    """The prediction beside ``draws`` simulated draws at the point ``pt`` (seeds ``first_seed``, ``first_seed + 1``,
    ...; module docstring for the criteria)."""
    from rmtfl.numerics import edge_outlier_count, simulate_two_step
    from rmtfl.theory import two_step

    N, eta1, eta2 = pt["N"], pt["N"] ** pt["a1"], pt["N"] ** pt["a2"]
    fresh = pt["batch"] == "fresh"
    t0 = time.perf_counter()
    layer = pt.get("second_layer", "gaussian")
    p = two_step(pt["act"], pt["tgt"], psi=pt["psi"], phi=pt["phi"], eta1=eta1, eta2=eta2, N=N, batch=pt["batch"],
                 phi2=pt["phi"] if fresh else None, noise=pt["noise"], second_layer=layer)
    seconds = time.perf_counter() - t0
    window = max(12, math.ceil(0.8 * math.sqrt(min(N, pt["d"]))))
    tops, counts, edges, ranks = [], [], [], []
    k = min(max(3, len(p.outliers) + 2), 80, N, pt["d"])        # within the 80 values each draw keeps
    for s in range(draws):
        r = simulate_two_step(pt["act"], pt["tgt"], N=N, d=pt["d"], n=pt["n"], eta1=eta1, eta2=eta2,
                              batch=pt["batch"], n2=pt["n"] if fresh else None, noise=pt["noise"], rng=first_seed + s,
                              dtype="float32", k=min(80, N, pt["d"]), second_layer=layer)
        sv = np.asarray(r.singular_values[:80], dtype=float)
        f = edge_outlier_count(sv, window=window)
        tops.append(sv[0])
        ranks.append(sv[:k])
        counts.append(f.count)
        edges.append(f.edge)
    top, top_se = float(np.mean(tops)), float(np.std(tops, ddof=1) / math.sqrt(draws))
    e_m, e_se = float(np.mean(edges)), float(np.std(edges, ddof=1) / math.sqrt(draws))
    pred_top = p.outliers[0].singular_value if p.outliers else (p.fitted_edge or p.bulk_edge)
    rel = abs(pred_top - top) / top
    e_pred = p.fitted_edge if p.fitted_edge is not None else p.bulk_edge
    out = dict(pt, pred_top=pred_top, sim_top=top, sim_top_se=top_se, rel_top=rel,
               top_ok=bool(abs(pred_top - top) <= max(0.05 * top, 3 * top_se)),
               pred_count=len(p.outliers), sim_counts=sorted(int(c) for c in counts),
               count_ok=bool(len(p.outliers) == int(np.median(counts))),
               edge_pred=e_pred, edge_sim=e_m,
               edge_ok=bool(abs(e_pred - e_m) <= 3 * e_se + 3 * N ** (-2 / 3) * e_m),
               reliable=bool(p.reliable), notes=list(p.notes), seconds=seconds,
               pred_values=[o.singular_value for o in p.outliers], pred_kinds=[o.kind for o in p.outliers],
               sim_values=np.mean(ranks, axis=0).tolist(),
               sim_values_se=(np.std(ranks, axis=0, ddof=1) / math.sqrt(draws)).tolist())
    out["wrong"] = bool(out["reliable"] and rel > WRONG and abs(pred_top - top) > 3 * top_se)
    return out


def _again(r: dict, draws: int) -> str:
    """What the first draws of a suspect said, for its line of the table."""
    if "first_draws" not in r:
        return ""
    return f" (drawn {len(r['sim_counts'])} times; the first {draws}: {r['first_draws']['sim_top']:.3f})"


def point(spec: str) -> dict:
    """A point given on the command line (``--at``): a JSON object with ``act``, ``tgt``, ``N``, ``a1``, ``a2`` and
    optionally ``psi`` (1), ``phi`` (2), ``batch`` ("reused"), ``noise`` (0), ``second_layer`` ("gaussian")."""
    try:
        pt = json.loads(spec)
    except json.JSONDecodeError as e:
        raise ValueError(f"--at must be a JSON object, got {spec!r} ({e})") from None
    if not isinstance(pt, dict) or not {"act", "tgt", "N", "a1", "a2"} <= pt.keys():
        raise ValueError(f"--at must be a JSON object with act, tgt, N, a1 and a2, got {spec!r}")
    unknown = set(pt) - {"act", "tgt", "N", "a1", "a2", "psi", "phi", "batch", "noise", "second_layer"}
    if unknown:
        raise ValueError(f"--at: unknown keys {sorted(unknown)}")
    pt = dict(dict(psi=1.0, phi=2.0, batch="reused", noise=0.0, second_layer="gaussian"), **pt)
    for key in ("N", "a1", "a2", "psi", "phi", "noise"):
        if isinstance(pt[key], bool) or not isinstance(pt[key], (int, float)) or not math.isfinite(pt[key]):
            raise ValueError(f"--at: {key} must be a number, got {pt[key]!r}")
    if pt["psi"] <= 0 or pt["phi"] <= 0:
        raise ValueError(f"--at: psi and phi must be positive, got {pt['psi']!r} and {pt['phi']!r}")
    pt["d"] = int(round(pt["N"] / pt["psi"]))
    pt["n"] = int(round(pt["phi"] * pt["d"]))
    return pt


def report(r: dict) -> str:
    """The predicted outliers beside the simulated ranks, the counts and the edges of one checked point."""
    pred = ", ".join(f"{v:.4g} ({k})" for v, k in zip(r["pred_values"], r["pred_kinds"])) or "none"
    sim = ", ".join(f"{v:.4g} ± {e:.2g}" for v, e in zip(r["sim_values"], r["sim_values_se"]))
    return (f"predicted outliers: {pred}{'' if r['reliable'] else '  (marked unreliable)'}\n"
            f"simulated ranks (mean ± s.e. of {len(r['sim_counts'])} draws): {sim}\n"
            f"count: predicted {r['pred_count']}, simulated {r['sim_counts']}\n"
            f"fitted edge: predicted {r['edge_pred']:.4g}, simulated {r['edge_sim']:.4g}\n"
            f"criteria: top {'ok' if r['top_ok'] else 'MISS'}, count {'ok' if r['count_ok'] else 'MISS'}, "
            f"edge {'ok' if r['edge_ok'] else 'MISS'}" + "".join(f"\nnote: {n}" for n in r["notes"][1:]))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--count", type=int, default=40)
    ap.add_argument("--draws", type=int, default=4, help="simulated draws per point")
    ap.add_argument("--confirm", type=int, default=40,
                    help="draws for a point whose first draws say WRONG, before it is reported (at most 100)")
    ap.add_argument("--json", default=None, help="write every point's comparison here")
    ap.add_argument("--wide", action="store_true",
                    help="psi from 0.25 to 4, phi from 0.5 to 8, Rademacher second layers")
    ap.add_argument("--at", default=None, metavar="JSON",
                    help="check one point instead, e.g. '{\"act\": \"square\", \"tgt\": \"hermite(0, 1, 0.5)\", "
                         "\"N\": 1000, \"a1\": 0.3, \"a2\": 0.3}' (psi 1, phi 2, reused, no noise unless given)")
    a = ap.parse_args(argv)
    for name, lo in (("count", 1), ("draws", 2), ("confirm", 2)):
        if not lo <= getattr(a, name) <= (100 if name != "count" else 1000):
            ap.error(f"--{name} must be in [{lo}, {100 if name != 'count' else 1000}], got {getattr(a, name)}")
    if a.at is not None:
        try:
            pt = point(a.at)
        except ValueError as e:
            ap.error(str(e))
        try:
            r = check(pt, a.draws, first_seed=100_000 * a.seed)
        except ValueError as e:                         # a value out of the route's range: rmtfl names it
            ap.error(f"--at: {e}")
        print(report(r))
        if a.json:
            with open(a.json, "w") as f:
                json.dump(r, f, indent=1)
        return 1 if r["wrong"] else 0
    rng = random.Random(a.seed)
    rows = []
    for i in range(a.count):
        pt = draw(rng, a.wide)
        r = check(pt, a.draws, first_seed=100_000 * a.seed + 100 * i)
        if r["wrong"] and a.confirm > a.draws:        # a suspect: more draws (the first ones the same) decide
            first = {k: r[k] for k in ("sim_top", "sim_top_se", "sim_counts")}
            r = dict(check(pt, a.confirm, first_seed=100_000 * a.seed + 100 * i), first_draws=first)
        rows.append(r)
        flags = "".join(k[0].upper() if not r[k + "_ok"] else "." for k in ("top", "count", "edge"))
        print(f"{i:3d} {flags} {'WRONG' if r['wrong'] else '':5s} {r['act']:>18s} {r['tgt']:>38s} {r['batch']:6s} "
              f"N={r['N']:<5d} psi={r['psi']:<4g} phi={r['phi']:<4g} a=({r['a1']:.2f},{r['a2']:.2f}) "
              f"noise={r['noise']:<4g} {r.get('second_layer', 'gaussian')[:4]} "
              f"top {r['pred_top']:.3f}/{r['sim_top']:.3f}+-{r['sim_top_se']:.3f} "
              f"count {r['pred_count']}/{r['sim_counts']} {'' if r['reliable'] else 'UNRELIABLE'}{_again(r, a.draws)}",
              flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    n = len(rows)
    rel = sorted(r["rel_top"] for r in rows if r["reliable"])
    print(f"{n} points: top {sum(r['top_ok'] for r in rows)}, count {sum(r['count_ok'] for r in rows)}, "
          f"edge {sum(r['edge_ok'] for r in rows)}; reliable {len(rel)}, their top outlier off by at most "
          f"{100 * (rel[-1] if rel else 0):.1f} % (median {100 * (rel[len(rel) // 2] if rel else 0):.1f} %); "
          f"wrong {sum(r['wrong'] for r in rows)} (suspects drawn again: {sum('first_draws' in r for r in rows)})")
    return 1 if any(r["wrong"] for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
