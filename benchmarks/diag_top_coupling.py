"""The single samples coupled to the spikes of ``P``, the ``r`` most extreme only
(docs/theory/two_step_attempts.md §22; measured, not kept).

Attempt 10 couples every single sample's column to the spikes of ``P`` on its own: each sample's strength is lowered
by its Schur complement with ``P`` (:mod:`rmtfl.theory._two_step.sample_coupling`), as if it were the only one.  In a
batch the extreme columns share the coupling: on the group of them the Schur term ``B^T A^-1 B`` has rank at most
``r``, the number of spikes of ``P``, so by Weyl's inequalities it moves at most ``r`` of their outliers below where
the others keep theirs.  Here the shift acts on the ``r`` strongest samples of a typical batch only (by their
strength at the bulk's edge, the expected number stronger than a sub-bin below ``r``, fading over one sample:
:func:`top_weights`), the others keep their own laws.  The prediction as it is, coupled on every sample, and coupled
on the top ``r``, on a cached acceptance grid (:mod:`benchmarks.bench_two_step_finite_n`; its criteria)::

    python -m benchmarks.diag_top_coupling --grid two_step_finite_n_cache/n1000own.json --N 1000 --r 1
    python -m benchmarks.diag_top_coupling --grid two_step_finite_n_cache/n500r.json --N 500 --batch reused --r 1
"""
from __future__ import annotations

import argparse
import contextlib
import sys

import numpy as np


def top_weights(strengths, counts, r: float) -> np.ndarray:
    """Per sub-bin, the share of its samples among the ``r`` strongest of a typical batch: ``clip(r - before, 0, 1)``,
    ``before`` the expected number of samples stronger than the sub-bin (``counts``: the expected number in each)."""
    s, c = np.asarray(strengths, float), np.asarray(counts, float)
    order = np.argsort(-s)
    before = np.empty_like(c)
    before[order] = np.cumsum(c[order]) - c[order]
    return np.clip(r - before, 0.0, 1.0)


@contextlib.contextmanager
def top_coupling(r: float):
    """Within the block, the coupling to ``P`` of :func:`benchmarks.diag_sample_coupling.coupled_samples` acts on the
    ``r`` strongest samples only (module docstring)."""
    from rmtfl.theory._two_step import sample_coupling, sample_order

    from .diag_sample_group import edge_strengths

    kept, couple = sample_order.tail_law, sample_coupling.COUPLE_SAMPLES

    def tail_law(tau, x_edge, x_guess, parts, *, N, psi, wa, shift=None):
        strengths = None if shift is None else edge_strengths(tau, x_edge, parts, psi=psi, wa=wa)
        if strengths is None:
            return kept(tau, x_edge, x_guess, parts, N=N, psi=psi, wa=wa, shift=shift)
        w = top_weights(np.concatenate(strengths), np.concatenate([np.asarray(m, float) * n for m, _, _, n in parts]),
                        r)
        cuts = np.cumsum([0] + [len(s) for s in strengths])
        weights = [w[a:b] for a, b in zip(cuts[:-1], cuts[1:])]

        def shift_top(s):
            c = shift(s)
            if c is None:
                return None
            # a sub-bin repelled below (-inf) stays so where it is among the top r, and is not moved elsewhere
            with np.errstate(invalid="ignore"):
                return [np.where(wi > 0, np.where(np.isfinite(ci), ci * wi, ci), 0.0) for ci, wi in zip(c, weights)]
        return kept(tau, x_edge, x_guess, parts, N=N, psi=psi, wa=wa, shift=shift_top)
    sample_order.tail_law, sample_coupling.COUPLE_SAMPLES = tail_law, True
    try:
        yield
    finally:
        sample_order.tail_law, sample_coupling.COUPLE_SAMPLES = kept, couple


def grid(path: str, N: int, batch: str, r: float, draws: int = 25) -> None:
    """Points passing all three criteria, the values, counts and edges, and values, edges and the sign test, on a cached
    grid: as it is, coupled on every sample, coupled on the top ``r``."""
    from .bench_two_step_finite_n import compare_cell, sign_test
    from .diag_count_law import cache_points
    from .diag_count_statistic import median_count
    from .diag_sample_coupling import coupled_samples

    variants = {"as it is": contextlib.nullcontext, "coupled": coupled_samples,
                f"coupled, top {r:g}": lambda: top_coupling(r)}
    tot = {k: dict(all=0, values=0, counts=0, edges=0, ves=0) for k in variants}
    n = 0
    for act, tgt, a1, a2, S, counts in cache_points(path, N, batch, draws):
        m = median_count(counts)
        n += 1
        for name, ctx in variants.items():
            with ctx():
                c = compare_cell(act, tgt, batch, a1, a2, N, [{"sv": s} for s in S])
            t = tot[name]
            t["values"] += c["values_ok"]
            t["counts"] += c["pred_count"] == m
            t["edges"] += c["edge_ok"]
            t["all"] += c["values_ok"] and c["edge_ok"] and c["pred_count"] == m
            t["ves"] += c["values_ok"] and c["edge_ok"] and sign_test(counts, c["pred_count"]) >= 0.05
    print(f"N = {N}, {batch}, {n} points: all three criteria / values / counts / edges / values, edges and the sign test")
    for name, t in tot.items():
        print(f"  {name}: {t['all']} / {t['values']} / {t['counts']} / {t['edges']} / {t['ves']}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--grid", required=True, metavar="CACHE", help="the acceptance grid's draws")
    ap.add_argument("--N", type=int, default=1000)
    ap.add_argument("--batch", default="reused", choices=("reused", "fresh"))
    ap.add_argument("--r", type=float, default=1.0, help="how many of the strongest samples the coupling acts on")
    a = ap.parse_args(argv)
    grid(a.grid, a.N, a.batch, a.r)
    return 0


if __name__ == "__main__":
    sys.exit(main())
