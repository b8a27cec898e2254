"""The spikes of ``P`` taking up sample outliers in the count (docs/theory/two_step_attempts.md §34; measured on the
acceptance page's cached draws, not kept).

With a reused batch the count is read through the Poisson process of ``Lambda(s)``, the single samples' mean count
below the spikes, with the spikes of ``P`` added beside it (docs/theory/two_step.md §8.3).  Where a spike's right
vector leans on the batch's most extreme samples, a draw holds fewer values above the fold than the spikes and
``Lambda`` together (attempt 33, last paragraph).  The joint problem of the spikes and the extreme columns
(:class:`rmtfl.theory._two_step.joint_roots.JointProblem`) says how much of each spike is a sample: the weight ``w``
of ``P``'s block in its root's null vector.  Two readings of "a spike takes up a sample" replace ``Lambda`` by
``Lambda - A`` in the count (the values stay the prediction's):

* ``weights``: each spike root takes up ``1 - w`` of the process's top points, ``A(s) = E[min(X, a)]`` with ``X``
  Poisson of mean ``Lambda(s)`` and ``a`` the sum of ``1 - w`` over the spike roots (:func:`taken_up`);
* ``joint``: ``A(s)`` the spikes above ``s`` plus the extreme columns above ``s`` each alone less the roots of the
  joint problem above ``s``, averaged over the batch's most extreme column at the quantiles of its law (where
  :func:`~rmtfl.theory._two_step.joint_roots.ranks_over_top_sample` places it; :func:`joint_taken_up`), and
  ``Lambda - A`` kept non-increasing.

* ``--part weights``: per point of a page cache (reused), the spike roots' weights beside the prediction's count and
  the draws' median, and how many points over-count, match and under-count with a spike of weight below 1/2.
* ``--part lambda``: at one point, the draws' mean number of values above ``s`` beside ``Lambda`` plus the spikes,
  as it is and with ``--mode``.
* ``--part grid``: the page's three criteria for the prediction as it is and with ``--mode``, per activation and
  target, and the points gained and lost.

    python -m benchmarks.diag_absorb --part weights --cache CACHE/n1000.json --N 1000
    python -m benchmarks.diag_absorb --part grid --cache CACHE/n1000.json --N 1000 --mode weights
    python -m benchmarks.diag_absorb --part lambda --cache CACHE/n1000own.json --N 1000 --act gelu \
        --target "hermite(0, 1, 0, 0.4082482904638631)" --alphas 0.0,0.4
"""
from __future__ import annotations

import argparse
import contextlib
import sys

import numpy as np
from scipy import stats

from rmtfl.theory import edge_outlier_count
from rmtfl.theory._two_step import finite_n, two_step
from rmtfl.theory._two_step.counting import count_window
from rmtfl.theory._two_step.joint_roots import top_sample_places
from rmtfl.theory._two_step.poisson_count import blended, mean_count, poisson_count

from .diag_count_law import cache_points, lambda_at_point

MODES = ("weights", "joint")


def taken_up(lam, a: float):
    """``E[min(X, a)]`` for ``X`` Poisson of mean ``lam`` (elementwise) and ``a >= 0``: the mean number of the
    process's points above ``s`` that ``a`` spikes take up, the top points first (a fraction of ``a`` takes up that
    fraction of the next point)."""
    lam = np.asarray(lam, float)
    m, f = int(a), a - int(a)
    return sum(stats.poisson.sf(k - 1, lam) for k in range(1, m + 1)) + f * stats.poisson.sf(m, lam)


def joint_taken_up(jp, edge: float, top: float, shift, column: int, law, spikes, *, quantiles: int = 6,
                   points: int = 48):
    """``(grid, A)``: the spikes above ``s`` plus the extreme columns above ``s`` each alone less the roots of the
    joint problem ``jp`` above ``s`` (its negative eigenvalues), on ``points`` values of ``s`` from the ``edge`` up,
    averaged over the most extreme ``column`` at ``quantiles`` quantiles of its outlier's law ``law`` (the others
    where ``shift`` puts them)."""
    locs = top_sample_places(law, edge, quantiles)
    grid = edge * np.geomspace(1.0 + 1e-6, max(top, 1.5 * float(locs.max())) / edge, points)
    A = np.zeros(points)
    for s_q in locs:
        sh = np.array(shift, float)
        sh[column] = jp.denominators(float(s_q))[column]
        for k, s in enumerate(grid):
            roots = int(np.sum(jp.eig(float(s), sh) < 0))
            alone = int(np.sum(jp.denominators(float(s)) - sh < 0))
            A[k] += sum(v > s for v in spikes) + alone - roots
    return grid, A / quantiles


@contextlib.contextmanager
def absorbing(mode: str | None, seen: dict | None = None):
    """Within the block the prediction's count reads ``Lambda - A`` of ``mode`` (module docstring; ``None``: as it
    is); ``seen`` (a dict) receives each prediction's spike roots (``"joint"``: ``[(s, w), ...]``), with a
    single-sample law the joint problem's placement (``"placed"``), and where the count is read through the process
    ``"lambda"``: ``(grid, Lambda as read, spikes)``, with a mode ``Lambda`` as it is as a fourth entry, and the
    process's count on each lattice spectrum (``"counts"``)."""
    if mode is not None and mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    seen = {} if seen is None else seen
    roots, ranks, count = finite_n.spike_roots, finite_n.ranks_over_top_sample, two_step.count_through_process

    def spy_roots(jp, s_lo, s_hi, shift, n_uncoupled, n_max):
        seen["joint"] = roots(jp, s_lo, s_hi, shift, n_uncoupled, n_max)
        return seen["joint"]

    def spy_ranks(jp, s_lo, s_hi, shift, column, law, n, **kw):
        seen["placed"] = (jp, s_lo, s_hi, np.array(shift, float), column, law)
        return ranks(jp, s_lo, s_hi, shift, column, law, n, **kw)

    def counted(laws, bulk_top, fold, *, N, psi):
        grid, lam = blended(mean_count(laws.below, bulk_top), mean_count(laws.above, bulk_top), fold)
        seen["lambda"] = (grid, lam, laws.fixed)
        if mode is None or not seen.get("joint"):
            got = count(laws, bulk_top, fold, N=N, psi=psi)
            seen["counts"] = None if got is None else got[2]
            return got
        if mode == "weights":
            lam = lam - taken_up(lam, sum(1.0 - w for _, w in seen["joint"]))
        elif "placed" in seen:
            jp, s_lo, s_hi, shift, column, law = seen["placed"]
            g, A = joint_taken_up(jp, s_lo, s_hi, shift, column, law, [v for v, _ in seen["joint"]])
            lam = np.maximum.accumulate(np.maximum(lam - np.interp(grid, g, A, left=0.0, right=0.0), 0.0)[::-1])[::-1]
        seen["lambda"] = (grid, lam, laws.fixed, seen["lambda"][1])
        got = poisson_count(grid, lam, laws.fixed, count_window(N, psi), laws=laws.laws)
        seen["counts"] = None if got is None else got[2]
        return got

    def clear(*args, **kwargs):
        seen.clear()
        return predict(*args, **kwargs)
    predict = finite_n.predict_finite_n
    finite_n.spike_roots, finite_n.ranks_over_top_sample = spy_roots, spy_ranks
    two_step.count_through_process, two_step.predict_finite_n = counted, clear
    try:
        yield seen
    finally:
        finite_n.spike_roots, finite_n.ranks_over_top_sample = roots, ranks
        two_step.count_through_process, two_step.predict_finite_n = count, predict


def _cells(path: str, N: int, mode: str | None, draws: int):
    """``(act, tgt, a1, a2, cell, spike roots)`` of each reused point of a page cache, compared as the page does
    with the count of ``mode``."""
    from .bench_two_step_finite_n import compare_cell

    for act, tgt, a1, a2, S, _ in cache_points(path, N, "reused", draws):
        with absorbing(mode) as seen:
            cell = compare_cell(act, tgt, "reused", a1, a2, N, [{"sv": v} for v in S])
        yield act, tgt, a1, a2, cell, list(seen.get("joint", []))


def _verdict(cell) -> str:
    p, s = cell["pred_count"], cell["sim_count"]
    return "match" if cell["count_ok"] else ("over" if p > s else "under")


def part_weights(path: str, N: int, draws: int = 25) -> None:
    tally = {"over": [0, 0], "match": [0, 0], "under": [0, 0]}
    print(f"N = {N}, reused: the spike roots' weights of P's block (the joint problem), the count predicted / the "
          "draws' median")
    for act, tgt, a1, a2, cell, joint in _cells(path, N, None, draws):
        if len(joint) < 2:
            continue
        v = _verdict(cell)
        tally[v][0] += 1
        tally[v][1] += min(w for _, w in joint) < 0.5
        print(f"  {act:20s} {tgt:38s} ({a1}, {a2}) {cell['pred_count']}/{cell['sim_count']} {v:5s} "
              f"w = {', '.join(f'{w:.2f}' for _, w in joint)}", flush=True)
    print("points with two or more spike roots, and of them with a weight below 1/2: "
          + "; ".join(f"{k} {n} ({low})" for k, (n, low) in tally.items()))


def part_grid(path: str, N: int, mode: str, draws: int = 25) -> None:
    rows, gained, lost = {}, 0, 0
    for (act, tgt, a1, a2, cell, _), (*_, new, _) in zip(_cells(path, N, None, draws), _cells(path, N, mode, draws)):
        old_ok = cell["values_ok"] and cell["count_ok"] and cell["edge_ok"]
        new_ok = new["values_ok"] and new["count_ok"] and new["edge_ok"]
        t = rows.setdefault((act, tgt), np.zeros((2, 2), int))
        t += [[cell["count_ok"], old_ok], [new["count_ok"], new_ok]]
        gained, lost = gained + (new_ok and not old_ok), lost + (old_ok and not new_ok)
        if old_ok != new_ok:
            print(f"  {act:20s} {tgt:38s} ({a1}, {a2}) draws {cell['sim_count']}: as it is {cell['pred_count']}, "
                  f"{mode} {new['pred_count']}", flush=True)
    print(f"N = {N}, reused, mode {mode}: points passing the count / all three criteria, as it is | with the mode")
    for (act, tgt), t in rows.items():
        print(f"  {act:20s} {tgt:38s} {t[0, 0]}/{t[0, 1]} | {t[1, 0]}/{t[1, 1]}")
    total = sum(rows.values())
    print(f"  all {total[0, 0]}/{total[0, 1]} | {total[1, 0]}/{total[1, 1]}; gained {gained}, lost {lost}")


def part_lambda(path: str, N: int, a1: float, a2: float, act: str, tgt: str, mode: str, draws: int = 25) -> None:
    got = lambda_at_point(absorbing(mode), path, act, tgt, a1, a2, N, draws)
    if got is None:
        return
    S, p, seen = got
    grid, lam, fixed, *as_is = seen["lambda"]
    ratios = np.array([0.9, 0.95, 0.98, 1.0, 1.02, 1.05, 1.1, 1.15, 1.2, 1.3, 1.5])
    s = p.bulk_edge * ratios
    spikes = np.array([sum(v > x for v in fixed) for x in s])
    over = (S[:, :, None] > s[None, None, :]).sum(1)
    both = f" (as it is and with {mode})" if as_is else ""
    print(f"{act}, {tgt}, reused, N = {N}, ({a1}, {a2}): the mean number of values above s, the draws' "
          f"({len(S)}; their standard error) beside Lambda plus the spikes of P{both}; spike roots' weights "
          f"{', '.join(f'{w:.2f}' for _, w in seen.get('joint', []))}")
    print("  s / fold   " + " ".join(f"{v:6.2f}" for v in ratios))
    print("  draws      " + " ".join(f"{v:6.2f}" for v in over.mean(0)))
    print("  (s.e.)     " + " ".join(f"{v:6.2f}" for v in over.std(0, ddof=1) / np.sqrt(len(S))))
    for name, lm in ([("as it is", as_is[0])] if as_is else []) + [(mode or "as it is", lam)]:
        print(f"  {name:10s} " + " ".join(f"{v:6.2f}" for v in np.interp(s, grid, lm) + spikes))
    if seen.get("counts") is None:
        return
    drawn = np.array([edge_outlier_count(v, window=count_window(N, 1.0)).count for v in S])
    top = max(drawn.max(), seen["counts"].max()) + 1
    print(f"  the count rule's count k = 0..{top - 1}: the draws' share of each beside the process's "
          f"({mode or 'as it is'}; its median {len(p.outliers)})")
    print("  draws      " + " ".join(f"{v:5.2f}" for v in np.bincount(drawn, minlength=top) / len(drawn)))
    print("  process    " + " ".join(f"{v:5.2f}" for v in np.bincount(seen["counts"], minlength=top)
                                     / len(seen["counts"])))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--part", choices=("weights", "grid", "lambda"), default="weights")
    ap.add_argument("--cache", required=True, help="a cache of bench_two_step_finite_n (--cache)")
    ap.add_argument("--N", type=int, default=1000)
    ap.add_argument("--draws", type=int, default=25)
    ap.add_argument("--mode", choices=MODES + ("none",), default="weights",
                    help="with --part grid and lambda (none: the prediction as it is)")
    ap.add_argument("--alphas", default="0.2,0.3", help="with --part lambda")
    ap.add_argument("--act", default="hermite(0, 1, 0.5)", help="with --part lambda: the activation (cache name)")
    ap.add_argument("--target", default="hermite(0, 1, 0.5)", help="with --part lambda: the target (cache name)")
    args = ap.parse_args(argv)
    args.mode = None if args.mode == "none" else args.mode
    if args.part == "grid" and args.mode is None:
        ap.error("--part grid compares the prediction as it is with a --mode: weights or joint")
    if args.part == "lambda":
        a1, a2 = (float(v) for v in args.alphas.split(","))
        part_lambda(args.cache, args.N, a1, a2, args.act, args.target, args.mode, args.draws)
    elif args.part == "weights":
        part_weights(args.cache, args.N, args.draws)
    else:
        part_grid(args.cache, args.N, args.mode, args.draws)
    return 0


if __name__ == "__main__":
    sys.exit(main())
