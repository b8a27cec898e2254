"""How the finite-``N`` prediction's values move with the number of quantiles of the batch's most extreme sample
(docs/theory/two_step.md §8.3, "Ranks of the spikes over the most extreme sample").

The ranks the spikes of ``P`` and the single samples share are averaged over ``TOP_QUANTILES`` quantiles of the law of
the batch's most extreme sample (``ranks_over_top_sample``, at the nodes of ``top_quantile_rule``), each with ``P``'s
Gram given that sample there (reused batches).  This prints a point's top values with other numbers of quantiles,
the prediction otherwise as it is::

    python -m benchmarks.diag_top_quantiles --quantiles 4 6 8 12 16 24 --points \\
        "hermite(0, 1, 0.5)|hermite(0, 1, 0, 0.4082482904638631)|reused|0.3|0.2"

``--rule midpoint`` places the quantiles at ``(k - 1/2)/Q`` with equal weights, as the prediction did before
(docs/theory/two_step.md §8.3, "The quantiles of the most extreme sample"): those never reach the rare batches, and
the values keep moving with ``Q``.
"""
from __future__ import annotations

import argparse
import contextlib
import functools
import sys


@contextlib.contextmanager
def quantile_count(quantiles: int):
    """Within the block, the prediction averages over ``quantiles`` quantiles of the most extreme sample (its ranks
    and, with a reused batch, the Grams of ``P`` given it)."""
    from rmtfl.theory._two_step import finite_n as fn

    kept = fn.TOP_QUANTILES, fn.ranks_over_top_sample
    fn.TOP_QUANTILES = quantiles
    fn.ranks_over_top_sample = functools.partial(kept[1], quantiles=quantiles)
    try:
        yield
    finally:
        fn.TOP_QUANTILES, fn.ranks_over_top_sample = kept


def midpoint_rule(quantiles: int):
    """``(q, w)``: the ``(k - 1/2)/quantiles`` quantiles with equal weights (the rule before the Gauss rule of
    ``top_quantile_rule``)."""
    import numpy as np

    return (np.arange(quantiles) + 0.5) / quantiles, np.full(quantiles, 1.0 / quantiles)


@contextlib.contextmanager
def quantile_rule(rule: str):
    """Within the block, the most extreme sample's quantiles follow ``rule``: ``"gauss"`` (the prediction's) or
    ``"midpoint"`` (:func:`midpoint_rule`), for its ranks and for the Grams of ``P`` given it."""
    from rmtfl.theory._two_step import joint_roots, top_sample_gram

    if rule not in ("gauss", "midpoint"):
        raise ValueError(f"rule must be 'gauss' or 'midpoint', got {rule!r}")
    if rule == "gauss":
        yield
        return
    kept = joint_roots.top_quantile_rule
    joint_roots.top_quantile_rule = top_sample_gram.top_quantile_rule = midpoint_rule
    try:
        yield
    finally:
        joint_roots.top_quantile_rule = top_sample_gram.top_quantile_rule = kept


def top_values(point: str, quantiles: int, *, N: int = 1000, ranks: int = 3, rule: str = "gauss") -> list[float]:
    """The top ``ranks`` predicted values at ``point`` (``"act|target|batch|alpha1|alpha2"``, as
    :func:`benchmarks.diag_spike_spread.predict`) with ``quantiles`` quantiles of the most extreme sample, placed by
    ``rule`` (:func:`quantile_rule`)."""
    from benchmarks.diag_spike_spread import predict

    with quantile_count(quantiles), quantile_rule(rule):
        return [o.singular_value for o in predict(point, N)[:ranks]]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--points", nargs="+", required=True, help='"act|target|batch|alpha1|alpha2"')
    ap.add_argument("--quantiles", nargs="+", type=int, default=[4, 6, 8, 12, 16, 24])
    ap.add_argument("--N", type=int, default=1000)
    ap.add_argument("--ranks", type=int, default=3)
    ap.add_argument("--rule", choices=["gauss", "midpoint"], default="gauss",
                    help="where the quantiles lie: the prediction's Gauss rule, or equally spaced (the rule before)")
    args = ap.parse_args(argv)
    if min(args.quantiles) < 1:
        ap.error("--quantiles must be positive integers")
    print("| point | quantiles | top values |")
    print("|---|---|---|")
    for point in args.points:
        for q in args.quantiles:
            v = top_values(point, q, N=args.N, ranks=args.ranks, rule=args.rule)
            print(f"| {point} | {q} | {', '.join(f'{x:.3f}' for x in v)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
