"""The eigenvalue of ``M = X^T diag(y) X / n`` along one extreme sample, with the batch's other extreme samples
present (docs/theory/two_step_attempts.md §4; the prediction takes it where they are in the problem with it,
docs/theory/two_step.md §8.3).

The prediction puts a sample's eigenvalue at the pole of Silverstein's equation over the samples the widened bulk
keeps (:func:`rmtfl.theory._two_step.sample_spikes.m_spike`).  In a batch the other extreme samples are there too.
Over the whole law of ``y`` -- a principal value where they come near ``y_i`` -- and with ``|x_i|^2 = d - 1 + z_i^2``::

    lambda_i = (y_i / phi) (1 + (z_i^2 - 1) / d) + y_i (y_i PV E[1 / (y_i - y)] - 1).

The formula and its principal value are the theory's (:mod:`rmtfl.theory._two_step.whole_law`,
docs/theory/two_step.md §8.3; :func:`m_spike_whole_law` here).  This script plants one sample at ``z* = z_i`` in
batches whose other samples are drawn and sets the eigenvalue whose eigenvector leans most on it (mean and standard
error over the draws) beside both formulas::

    python -m benchmarks.diag_m_spike                                   # He1 + He2/2, d = 1000, z = 3.2, 3.6, 4.0
    python -m benchmarks.diag_m_spike --target "hermite(0, 1, 0, 0.4082482904638631)" --z 3.2,3.5,-3.7 --draws 40
    python -m benchmarks.diag_m_spike --d 500 --z 3.4,3.9 --draws 80

About 0.5 s per draw at ``d = 1000`` on one core.

``--grid CACHE`` instead puts the whole-law eigenvalue into the prediction as attempt 4 did (every extreme sample's
column, in the single-sample order statistics and in the joint problem with the spikes of ``P``, each single sample's
rank at its own law's mean: :func:`as_own_laws`) and sets it beside the prediction as it is on the acceptance grid
whose draws ``CACHE`` holds (:mod:`benchmarks.bench_two_step_finite_n`; its criteria), per activation and target::

    python -m benchmarks.diag_m_spike --grid two_step_finite_n_cache/n1000.json --N 1000 --batch reused
    python -m benchmarks.diag_m_spike --grid two_step_finite_n_cache/n1000.json --batch fresh --alphas 0,0.2,0.4
"""
from __future__ import annotations

import argparse
import contextlib
import json
import math
import sys

import numpy as np

from rmtfl.theory._two_step import whole_law
# the formula of the module docstring, the theory's (other diagnostics import it from here under this name)
from rmtfl.theory._two_step.whole_law import whole_law_eigenvalue as m_spike_whole_law


def planted(target, zi: float, *, d: int, n: int, draws: int, seed: int = 11):
    """Mean and standard error over ``draws`` batches of the eigenvalue of ``M`` whose eigenvector leans most on a
    sample planted at ``z* = zi`` (the other ``n - 1`` samples drawn; ``beta* = e_1``)."""
    rng = np.random.default_rng(seed)
    link = target.links[0]
    vals = []
    for _ in range(draws):
        X = rng.standard_normal((n, d))
        X[0, 0] = zi
        y = np.asarray(link(X[:, 0]), dtype=float) + target.noise * rng.standard_normal(n)
        ev, V = np.linalg.eigh(X.T @ (y[:, None] * X) / n)
        side = slice(-10, None) if y[0] > 0 else slice(0, 10)
        vals.append(ev[side][np.argmax((V[:, side].T @ X[0]) ** 2)])
    return float(np.mean(vals)), float(np.std(vals, ddof=1) / math.sqrt(draws))


@contextlib.contextmanager
def as_own_laws():
    """Within the block, the prediction as it was before each single sample's rank took its mean from the joint
    problem with the spikes of ``P`` (docs/theory/two_step.md §8.3): ``M``'s eigenvalue along each extreme sample the
    pole over the bulk's samples in the single samples' law and in the joint problem, and each single sample's rank
    at the mean of its own law, the spikes' ranks with ``P``'s population Gram at every quantile of the batch's most
    extreme sample (the same to within the joint roots' precision, ``ROOT_RTOL``: the roots are now warm-started and
    more of them solved).  The diagnostics that measured that law take it so."""
    from rmtfl.theory._two_step import finite_n, sample_order

    kept = finite_n.WHOLE_LAW_EIGENVALUE, sample_order.JOINT_SAMPLE_RANKS, finite_n.TOP_SAMPLE_GRAM
    finite_n.WHOLE_LAW_EIGENVALUE = sample_order.JOINT_SAMPLE_RANKS = finite_n.TOP_SAMPLE_GRAM = False
    try:
        yield
    finally:
        finite_n.WHOLE_LAW_EIGENVALUE, sample_order.JOINT_SAMPLE_RANKS, finite_n.TOP_SAMPLE_GRAM = kept


@contextlib.contextmanager
def whole_law_eigenvalues(target, d: float):
    """Within the block, the prediction of :func:`as_own_laws` takes :func:`m_spike_whole_law` as the eigenvalue of
    ``M`` along each extreme sample beyond the bulk (where it is resolved), in place of the pole over the bulk's
    samples (:func:`rmtfl.theory._two_step.whole_law.whole_law_eigenvalues`): attempt 4 as it was measured."""
    from rmtfl.theory._two_step import joint_roots, sample_order, sample_spikes

    kept = sample_spikes.extreme_eigenvalues
    with as_own_laws():
        sample_order.extreme_eigenvalues = joint_roots.extreme_eigenvalues = whole_law.whole_law_eigenvalues(target, d)
        try:
            yield
        finally:
            sample_order.extreme_eigenvalues = joint_roots.extreme_eigenvalues = kept


def grid_effect(cache, *, N: int, batch: str, alphas, own: bool = False, variant=None, draws: int = 25) -> dict:
    """Per ``(activation, target)`` of the acceptance grid: how many points pass all three criteria, the values, the
    counts and the edges, and at how many the sign test does not set the predicted count apart from the draws (at
    5 %, docs/theory/two_step.md §8.4), with the prediction as it is and with the whole-law eigenvalue (25 draws a
    point; ``own``: the draws of ``--own-seeds``).  ``variant``: ``(name, context(target))``, another change of the
    prediction to set beside it (default ``("whole law", whole_law_eigenvalues)``); ``draws``: the draws a point
    takes (points with fewer are left out)."""
    from rmtfl.theory import make_target

    from . import bench_two_step_finite_n as bench

    name_v, context = variant or ("whole law", lambda target: whole_law_eigenvalues(target, float(N)))
    table = {}
    for act in bench.ACTIVATIONS:
        for tgt in bench.TARGETS:
            row = table.setdefault((act, tgt), {"as is": [0] * 5, name_v: [0] * 5})
            for a1 in alphas:
                for a2 in alphas:
                    rows = cache.get(bench.cache_key(act, tgt, batch, a1, a2, N, own=own), [])[:draws]
                    if len(rows) < draws:
                        continue
                    for name in row:
                        ctx = context(make_target(tgt)) if name == name_v else contextlib.nullcontext()
                        with ctx:
                            r = bench.compare_cell(act, tgt, batch, a1, a2, N, rows)
                        ok = (r["values_ok"], r["count_ok"], r["edge_ok"])
                        row[name] = [t + v for t, v in zip(row[name], (all(ok),) + ok + (r["count_p"] >= 0.05,))]
    return table


def print_grid_effect(table, *, N: int, batch: str) -> None:
    """Print :func:`grid_effect`'s table, one line per activation and target and the totals."""
    names = list(next(iter(table.values())))
    print(f"N = {N}, {batch}: points passing all three / values / counts / edges / the sign test")
    for (act, tgt), row in table.items():
        print(f"  {act:20s} {tgt:38s}", "   ".join(f"{k}: {'/'.join(map(str, v))}" for k, v in row.items()))
    tot = {k: [sum(r[k][i] for r in table.values()) for i in range(5)] for k in names}
    print("  all", "   ".join(f"{k}: {'/'.join(map(str, v))}" for k, v in tot.items()))


def add_grid_arguments(ap) -> None:
    """``--grid CACHE``, ``--batch`` and ``--own-seeds``: the acceptance grid a diagnostic compares on
    (:func:`run_grid`)."""
    ap.add_argument("--grid", default=None, metavar="CACHE", help="the acceptance grid's draws: compare there instead")
    ap.add_argument("--batch", default="reused", choices=("reused", "fresh"), help="with --grid")
    ap.add_argument("--own-seeds", action="store_true", help="with --grid: a cache of --own-seeds")


def load_cache(path: str, pool: str | None = None) -> dict:
    """The draws of a cache file (``bench_two_step_finite_n --cache``); ``pool``: a cache of each point's own draws
    (``--own-seeds``), whose rows follow the shared ones at each point, under the shared key."""
    with open(path) as f:
        cache = json.load(f)
    if pool is not None:
        with open(pool) as f:
            own_draws = json.load(f)
        cache = {k: rows + own_draws.get(k + "|own", []) for k, rows in cache.items()}
    return cache


def run_grid(path: str, *, N: int, batch: str, own: bool, variant, draws: int = 25, pool: str | None = None) -> None:
    """:func:`grid_effect` on the acceptance grid of ``batch`` (``alpha`` in {0, 0.1, ..., 0.4} reused, {0, 0.2, 0.4}
    fresh) whose draws the cache file ``path`` holds, ``draws`` a point, printed by :func:`print_grid_effect`;
    ``pool``: a cache of each point's own draws (``--own-seeds``) to follow the shared ones of ``path`` at each point,
    as ``bench_two_step_finite_n --pool`` takes them (docs/theory/two_step.md §8.4, "49 draws a point")."""
    cache = load_cache(path, pool)
    alphas = [0.0, 0.1, 0.2, 0.3, 0.4] if batch == "reused" else [0.0, 0.2, 0.4]
    print_grid_effect(grid_effect(cache, N=N, batch=batch, alphas=alphas, own=own, variant=variant, draws=draws),
                      N=N, batch=batch)


def main(argv=None) -> int:
    from rmtfl.theory import make_target
    from rmtfl.theory._two_step.sample_spikes import bulk_cut, m_spike, y_law_truncated

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", default="hermite(0, 1, 0.5)")
    ap.add_argument("--d", type=int, default=1000)
    ap.add_argument("--phi", type=float, default=2.0, help="n/d")
    ap.add_argument("--z", default="3.2,3.6,4.0", help="comma-separated z* of the planted sample")
    ap.add_argument("--draws", type=int, default=30)
    ap.add_argument("--grid", default=None, metavar="CACHE",
                    help="the acceptance grid's draws (bench_two_step_finite_n --cache): compare on the grid instead")
    ap.add_argument("--N", type=int, default=1000, help="with --grid")
    ap.add_argument("--batch", default="reused", choices=("reused", "fresh"), help="with --grid")
    ap.add_argument("--alphas", default="0,0.1,0.2,0.3,0.4", help="with --grid")
    ap.add_argument("--own-seeds", action="store_true", help="with --grid: a cache of bench_two_step_finite_n "
                                                             "--own-seeds")
    args = ap.parse_args(argv)
    if args.grid:
        with open(args.grid) as f:
            cache = json.load(f)
        table = grid_effect(cache, N=args.N, batch=args.batch, alphas=[float(v) for v in args.alphas.split(",")],
                            own=args.own_seeds)
        print_grid_effect(table, N=args.N, batch=args.batch)
        return 0
    target = make_target(args.target)
    n = int(round(args.phi * args.d))
    yb, wb = y_law_truncated(target, bulk_cut(target, n, ranks=12))
    print(f"target {args.target}, d = {args.d}, n = {n}, {args.draws} draws")
    print("  z_i     y_i      simulated          whole law   bulk's samples only")
    for zi in (float(v) for v in args.z.split(",")):
        yi = float(np.asarray(target.links[0](np.array([zi])))[0])
        m, se = planted(target, zi, d=args.d, n=n, draws=args.draws)
        whole = m_spike_whole_law(target, [yi], [zi], args.phi, args.d)[0]
        print(f"  {zi:5.2f} {yi:8.3f}   {m:8.4f} +- {se:.4f}   {whole:9.4f}   {m_spike(yi, args.phi, yb, wb):9.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
