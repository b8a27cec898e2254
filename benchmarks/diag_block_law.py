"""The quadratic sigma's single samples from the block of heavy rows and extreme columns, pushed by ``P``, in place of
the columns' law (docs/theory/two_step_attempts.md §27; measured, not kept).

The single-sample law of docs/theory/two_step.md §8.3 takes a batch's extreme samples as independent columns over
rows drawn alike.  For ``sigma = He1 + He2/2`` with He1 + He2/2 (reused batch) its ladder of values is too flat
(docs/theory/two_step_attempts.md §26), and attempt 25's block of a few heavy rows and the extreme columns has the
draws' shape.  Here the law's ``P(S > s)`` per sample becomes ``mu(s) / n``, ``mu`` the block's expected count above
``s`` (:func:`benchmarks.diag_block.block_count`: four heavy rows, the batch's top ``K`` samples, the cross terms),
so that the count is Poisson and the ranks, the count, the bands and the spikes' ranks follow as the prediction
takes them; with ``push`` each column's strength carries the coupling to ``P`` of docs/theory/two_step.md §8.3
("Single samples pushed by the spikes of P", :func:`rmtfl.theory._two_step.sample_coupling.law_shift`), which the
columns' law leaves off because it lacks the block's lift, through its components alone or with ``P``'s update of
the bulk's row kernel as well (attempt 24's two routes, ``left``).  ``--grid`` reads the count on the predicted
spectrum and from the rank laws (attempt 18); ``--cache`` at one point sets the predicted spectra beside the draws'
median one::

    python -m benchmarks.diag_block_law --N 500 --alphas 0.4,0.4
    python -m benchmarks.diag_block_law --N 1000 --alphas 0.4,0.4 --cache CACHE/n1000.json
    python -m benchmarks.diag_block_law --N 1000 --grid CACHE/n1000.json

(``CACHE``: the draws of ``bash benchmarks/two_step_finite_n_page.sh CACHE``.)  Other activations and targets are
left as they are.
"""
from __future__ import annotations

import argparse
import contextlib
import math
import sys

import numpy as np

from .diag_quadratic_parts import QUADRATIC


def push_shift(act, st, bulk, *, eta1: float, eta2: float, N: float, left: bool = False):
    """``shift(s, ys, zs)``: the coupling to ``P`` of the columns of samples ``(ys, zs)`` at ``s`` (``None`` at or
    above the lowest spike of ``P``; a column repelled below it gets ``-1e3``): through the components of ``P``'s
    right vectors along them, and with ``left`` through ``P``'s update of the bulk's row kernel along its left vectors
    as well (attempt 24's second route, :func:`benchmarks.diag_quadratic_parts.left_route_shift`, on the block's
    column profiles at ``P``'s nodes)."""
    from rmtfl.theory._two_step import finite_n as fn
    from rmtfl.theory._two_step.sample_coupling import law_shift

    from .diag_block import entry_variances, whole_law_columns
    from .diag_quadratic_parts import left_route_shift

    _, G_V, _, tn, g, wg, _, _ = fn.finite_n_grams(act, st, eta1=eta1, eta2=eta2, N=N, bulk=False)
    G_U_w = fn.weighted_gram_u(g, wg)
    e0 = fn.master_eigs(bulk, bulk.edge * (1 + 1e-7), G_U_w, G_V, g, N)
    n_spikes = 0 if e0 is None else int(np.sum(e0 > 1.0))
    cache = {}

    def shift(s, ys, zs):
        key = (np.asarray(ys).tobytes(), np.asarray(zs).tobytes())
        if key not in cache:
            U = fn.sample_components(act, st, eta1, eta2, tn, ys, zs, N, "both")
            lam = whole_law_columns(ys, zs, d=int(round(N)), n=int(round(st.phi * N)))
            cache[key] = (law_shift(bulk, G_U_w, G_V, g, N, [U], n_spikes),
                          entry_variances(g, lam, N=int(round(N)), eta1=eta1, eta2=eta2).T)
        base, V = cache[key]
        c = base(s)
        if c is None:
            return None
        c = c[0]
        if left:
            c = c + left_route_shift(bulk, G_U_w, G_V, g, N, s, V, wg)
        return np.where(np.isfinite(c), c, -1e3)
    return shift


def block_law(act, st, bulk, *, eta1: float, eta2: float, N: float, rows: float = 4, K: float = 12,
              push: bool = True, left: bool = False, points: int = 60):
    """The :class:`~rmtfl.theory._two_step.sample_order.SampleLaw` of the block (module docstring) on the block's own
    grid from the bulk's fold."""
    from rmtfl.theory._two_step.sample_order import SampleLaw

    from .diag_block import block_count

    shift = push_shift(act, st, bulk, eta1=eta1, eta2=eta2, N=N, left=left) if push else None
    s_grid, mu = block_count(bulk, N=int(round(N)), eta1=eta1, eta2=eta2, K=K, rows=rows, cross=True, shift=shift,
                             points=points)
    n = int(round(st.phi * N))
    return SampleLaw(np.asarray(s_grid), np.clip(mu / n, 0.0, 1.0)[:, None], (n,))


@contextlib.contextmanager
def block_samples(*, push: bool = True, left: bool = False, rows: float = 4, K: float = 12):
    """Within the block, the prediction's single samples of the quadratic sigma with He1 + He2/2 (reused, ``N = d``)
    come from :func:`block_law`; every other prediction is left as it is."""
    from rmtfl.theory._two_step import sample_coupling
    from rmtfl.theory._two_step.sample_order import ranks_of

    base = sample_coupling.sample_outliers

    def outliers(act, target, st, bulk, *, eta1, eta2, N, psi, ranks, rho=None, coupling=None, **kw):
        kept = base(act, target, st, bulk, eta1=eta1, eta2=eta2, N=N, psi=psi, ranks=ranks, rho=rho,
                    coupling=coupling, **kw)         # kw: the law's form and the h-moment cache, passed on
        if (act.name != QUADRATIC or target.name != QUADRATIC or st.batch != "reused" or psi != 1.0
                or kept[3] is None):
            return kept
        law = block_law(act, st, bulk, eta1=eta1, eta2=eta2, N=N, rows=rows, K=K, push=push, left=left)
        per_part, band_part = ranks_of(law, ranks, with_bands=True)
        thetas = [th for _, th, _ in kept[0]] or [math.nan]
        found = [(mean, thetas[min(k, len(thetas) - 1)], median) for k, (mean, median) in enumerate(per_part[0])]
        return tuple(sorted(found, reverse=True)), {"both": len(per_part[0])}, tuple(band_part[0]), law

    sample_coupling.sample_outliers = outliers
    try:
        yield
    finally:
        sample_coupling.sample_outliers = base


@contextlib.contextmanager
def block_and_bulk():
    """:func:`block_samples` pushed through both routes over attempt 15's bulk
    (:func:`benchmarks.diag_column_shift.column_shift`, ``"without"``: the ``d - K`` columns and the left-out
    columns' spectral shift below the fold)."""
    from .diag_column_shift import column_shift

    with column_shift("without"), block_samples(left=True):
        yield


def variants() -> dict:
    """``name -> context``: the prediction as it is, the block without and with the push of ``P`` (its components),
    with the push through both routes, and that over attempt 15's bulk."""
    return {"as is": contextlib.nullcontext, "block": lambda: block_samples(push=False), "block + push": block_samples,
            "+ both routes": lambda: block_samples(left=True), "+ attempt 15's bulk": block_and_bulk}


def grid(path: str, N: int, draws: int = 25) -> dict:
    """Per variant (:func:`variants`) on the quadratic sigma's He1 + He2/2 points of a page cache (shared or own seeds):
    at how many points the predicted count is the draws' median, read on the predicted spectrum (the prediction's
    count) and from its rank laws (the lattice of docs/theory/two_step_attempts.md §18,
    :func:`benchmarks.diag_count_law.law_rule`); at how many that laws' count passes the sign test; at how many the
    values, the laws' edge and the laws' count all pass; at how many the values, the spectrum's fitted edge and its
    count all pass (the acceptance page's criterion)."""
    from .bench_two_step_finite_n import compare_cell, edge_within, sign_test
    from .diag_count_law import cache_points, captured, law_rule
    from .diag_count_statistic import median_count, rule_window

    J, tally = rule_window(N), {name: [0] * 5 for name in variants()}
    for act, tgt, a1, a2, S, counts in cache_points(path, N, "reused", draws):
        if act != QUADRATIC or tgt != QUADRATIC:
            continue
        m, line = median_count(counts), []
        for name, ctx in variants().items():
            with ctx(), captured() as seen:
                cell = compare_cell(act, tgt, "reused", a1, a2, N, [{"sv": v} for v in S])
            rule = law_rule(seen, J)
            lc, le = (cell["pred_count"], cell["edge_pred"]) if rule is None else rule
            ok = cell["values_ok"] and edge_within(le, cell["edge_sim"], cell["edge_se"], N) and lc == m
            kept = cell["values_ok"] and cell["edge_ok"] and cell["pred_count"] == m
            tally[name] = [t + int(v) for t, v in zip(tally[name], (cell["pred_count"] == m, lc == m,
                                                                       sign_test(counts, lc) >= 0.05, ok, kept))]
            line.append(f"{name} {cell['pred_count']}/{lc}")
        print(f"  ({a1}, {a2}) draws {m} ({min(counts)}-{max(counts)}) | " + " | ".join(line), flush=True)
    return tally


def print_spectra(path: str, N: int, a1: float, a2: float, ranks: int = 20) -> None:
    """At one point of a page cache: the median of the draws' ranks beside each variant's predicted spectrum (the
    medians the count reads, then the bulk's top values); through the route's own ``predict_finite_n``, which
    attempt 15's bulk wraps."""
    from rmtfl.theory import get_activation, make_target
    from rmtfl.theory._two_step import two_step as two_step_module

    from .diag_count_law import point_draws

    S = point_draws(path, QUADRATIC, QUADRATIC, a1, a2, N)
    cols = {"draws' median": np.median(S, axis=0)[:ranks]}
    for name, ctx in variants().items():
        with ctx():
            r = two_step_module.predict_finite_n(get_activation(QUADRATIC), make_target(QUADRATIC), psi=1.0, phi=2.0,
                                                 phi2=None, eta1=N ** a1, eta2=N ** a2, batch="reused", N=float(N))
        med = sorted(list(r.spike_medians or r.locations) + [m for _, _, m in r.samples], reverse=True)
        cols[name] = np.array(med + list(r.bulk_top) + [math.nan] * ranks)[:ranks]
    print("  rank  " + "  ".join(cols))
    for k in range(ranks):
        print(f"  {k + 1:4d}  " + "  ".join(f"{v[k]:8.3f}" for v in cols.values()))
    print_rank_quantiles(S[:, :8], N, a1, a2)


def print_rank_quantiles(S, N: int, a1: float, a2: float, ranks=range(2, 8)) -> None:
    """The 10, 50 and 90 % quantiles over batches of ranks 3-8: of the draws ``S`` (one row per draw) and of each
    variant's rank laws (:func:`benchmarks.diag_count_law.rank_laws`; ``-`` where the rank lies below the bulk's fold
    in that share of batches)."""
    from rmtfl.theory import two_step

    from .diag_count_law import captured, rank_laws

    print("  the ranks' 10 / 50 / 90 % quantiles over batches")
    print("  draws: " + "; ".join(f"{k + 1}: " + "/".join(f"{np.quantile(S[:, k], p):.3f}" for p in (0.1, 0.5, 0.9))
                                  for k in ranks))
    for name, ctx in variants().items():
        with ctx(), captured() as seen:
            two_step(QUADRATIC, QUADRATIC, psi=1.0, phi=2.0, eta1=N ** a1, eta2=N ** a2, N=N)
        law, fixed, count, laws = seen["ranked"]
        grid, F = rank_laws(law, fixed, count + 4, laws)
        cells = []
        for k in ranks:
            Fk = F[:, k] if k < F.shape[1] else np.zeros_like(grid)
            cells.append(f"{k + 1}: " + "/".join("-" if Fk[0] < p else f"{np.interp(-p, -Fk, grid):.3f}"
                                                  for p in (0.9, 0.5, 0.1)))
        print(f"  {name}: " + "; ".join(cells))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--N", type=int, default=500, help="N = d, n = 2N")
    ap.add_argument("--alphas", default="0.4,0.4", help="alpha1,alpha2 (eta_t = N^alpha_t) of one point")
    ap.add_argument("--grid", default=None, metavar="CACHE", help="the acceptance grid's draws: compare there")
    ap.add_argument("--cache", default=None, help="one point: its draws' median spectrum beside the predicted ones")
    args = ap.parse_args(argv)
    from rmtfl.theory import two_step

    N = args.N
    if args.grid is None:
        a1, a2 = (float(v) for v in args.alphas.split(","))
        print(f"quadratic sigma, He1 + He2/2, reused, N = d = {N}, ({a1}, {a2})")
        for name, ctx in variants().items():
            with ctx():
                p = two_step(QUADRATIC, QUADRATIC, psi=1.0, phi=2.0, eta1=N ** a1, eta2=N ** a2, N=N)
            print(f"  {name:13s} {[round(o.singular_value, 3) for o in p.outliers]}, fitted edge "
                  f"{p.fitted_edge:.3f}, count range {p.count_range}")
        if args.cache:
            print_spectra(args.cache, N, a1, a2)
        return 0
    print(f"N = {N}, quadratic sigma, He1 + He2/2, reused, draws of {args.grid}")
    tally = grid(args.grid, N)
    print("  points where the predicted count is the draws' median, read on the predicted spectrum / from the rank laws"
          " (attempt 18); where the laws' count passes the sign test; where the values, the laws' edge and count pass;"
          " where the values, the spectrum's edge and count pass")
    for name, v in tally.items():
        print(f"  {name}: {'/'.join(map(str, v))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
