"""The count from the prediction's own rank laws, and a count rule fitted deeper in the bulk
(docs/theory/two_step_attempts.md §18 and §20; measured on the acceptance page's cached draws, not kept).

Attempt 17 found that the draws' median count is, to the criterion's noise, the rule's median over spectra whose
top ranks are drawn independently from the draws' own marginal laws.  Two parts follow that up:

* ``law``: the same with the *prediction's* laws of its ranks in place of the draws'.  The ``r``-th value of a batch
  lies above ``s`` when ``m(s)`` spikes of ``P`` and ``q >= r - m(s)`` single samples do
  (docs/theory/two_step.md §8.3, "Ranked values"); here the samples above ``s`` are the points of a process of
  mean ``mu(s) = sum_b n_b P_b(S > s)`` whose ``q``-th point lies above ``s`` when a Gamma variable of shape
  ``q gamma`` and mean ``q`` is at most ``mu(s)`` (``gamma = 1``: the Poisson limit of the binomial sums the
  prediction uses; larger ``gamma``: more rigid ranks).  Each of the top ranks (the prediction's and ``--extra``
  more) is drawn from its law by inversion at the points of a fixed, unscrambled Sobol lattice (a deterministic
  cubature), a rank's mass below the edge dropped; the predicted bulk's top values fill in below; the rule's
  median count over the lattice is set against the draws' median count.  The mean over the lattice of the edge the
  rule fits at its count predicts the draws' mean fitted edge from the same laws (attempt 20).  For three readings
  (the predicted spectrum's count and edge; the laws' count with the spectrum's edge; the laws' count and edge) the
  points passing all three criteria of the acceptance page, the sign test at 5 %, and values, edges and the sign
  test together are printed as well.  ``--group``, ``--whole``, ``--ranks K``
  and ``--shift``: the variants of attempts 13, 4, 17 and 15 (the extreme columns coupled into one group; the
  whole-law eigenvalue of ``M`` along the samples; ``K`` extreme samples out of the bulk; the bulk without the
  extreme columns, with their spectral shift) in the prediction the laws come from.
* ``deep``: a rule whose edge fit starts ``K0`` ranks down, ``v[K0:K0+J]``, the ``k``-th value placed at
  ``x_{k-r}`` below the edge (``r`` the count so far), iterated to a fixed point as the rule is: a cut that does
  not slide with the values just below the outliers.  The draws' median count with that rule against the same rule
  on the predicted spectrum (its bulk's top values taken 40 further down).

    python -m benchmarks.diag_count_law --cache CACHE/n1000.json --N 1000 --part law      # about 3 minutes
    python -m benchmarks.diag_count_law --cache CACHE/n1000.json --N 1000 --part law --group --whole --ranks 24
    python -m benchmarks.diag_count_law --cache CACHE/n1000.json --N 1000 --part deep --K0 13,26
"""
from __future__ import annotations

import argparse
import contextlib
import json
import sys

import numpy as np

from rmtfl.theory._two_step import poisson_count

from .diag_count_statistic import median_count, rule_window


def rank_laws(law, fixed, ranks: int, laws=None, gamma: float = 1.0):
    """``(grid, F)``: ``F[:, r - 1] = P(r-th value > s)`` on ``grid``, ``r = 1..ranks``, for the
    spikes ``fixed`` of ``P`` (each at its location, or spread by its law ``(x, sf)`` of
    docs/theory/two_step.md §8.5) and the single samples of the
    :class:`~rmtfl.theory._two_step.sample_order.SampleLaw` ``law`` (module docstring; ``gamma`` the rigidity of
    their ranks): the theory's :func:`rmtfl.theory._two_step.poisson_count.rank_laws`."""
    return poisson_count.rank_laws(law, fixed, ranks, laws, gamma=gamma)


def lattice_count(grid, F, bulk_top, J: int, points: int = poisson_count.LATTICE_POINTS) -> int:
    """The rule's median count over spectra whose top ranks are drawn independently from ``F`` (:func:`rank_laws`)
    by inversion at the points of a fixed Sobol lattice (a rank's mass below ``grid[0]`` dropped; above the grid
    its value is the grid's top), the ``bulk_top`` values below them."""
    return lattice_rule(grid, F, bulk_top, J, points)[0]


def lattice_rule(grid, F, bulk_top, J: int, points: int = poisson_count.LATTICE_POINTS) -> tuple[int, float] | None:
    """:func:`lattice_count` and the mean over the lattice of the edge the rule fits at its count (attempt 20): the
    prediction of the draws' mean fitted edge from the same laws (the lattice's spectra and their counts and edges
    are the theory's :func:`rmtfl.theory._two_step.poisson_count.lattice_rule`); ``None`` where the spectra hold no
    more than ``J`` values."""
    got = poisson_count.lattice_rule(grid, F, bulk_top, J, points)
    if got is None:
        return None
    counts, edges = got
    return median_count(counts), float(edges.mean())


@contextlib.contextmanager
def captured():
    """Within the block, ``seen`` (yielded) holds the arguments of the last ranked-values call of a prediction
    (``"ranked"``: ``(law, fixed, ranks, laws)``) and its finite-``N`` result (``"result"``)."""
    from rmtfl.theory._two_step import sample_order, two_step

    seen, ranked, predict = {}, sample_order.ranked_values, two_step.predict_finite_n

    def spy_ranked(law, fixed, ranks, *, laws=None, spread=False):
        seen["ranked"] = (law, fixed, ranks, laws)
        return ranked(law, fixed, ranks, laws=laws, spread=spread)

    def spy_predict(*args, **kwargs):
        seen["result"] = predict(*args, **kwargs)
        return seen["result"]
    sample_order.ranked_values, two_step.predict_finite_n = spy_ranked, spy_predict
    try:
        yield seen
    finally:
        sample_order.ranked_values, two_step.predict_finite_n = ranked, predict


def law_rule(seen, J: int, extra: int = 4, gamma: float = 1.0):
    """``(count, mean fitted edge)`` from the captured prediction's rank laws (:func:`lattice_rule`); ``None``
    without single samples."""
    if "ranked" not in seen:
        return None
    law, fixed, ranks, laws = seen["ranked"]
    if law is None or not law.sizes:
        return None
    grid, F = rank_laws(law, fixed, ranks + extra, laws, gamma)
    return lattice_rule(grid, F, seen["result"].bulk_top, J)


def deep_count(v, J: int, K0: int) -> int:
    """The count of a rule whose fit starts ``K0`` ranks down (module docstring); ``K0 = 0``: the rule itself."""
    from rmtfl.numerics import edge_outlier_count
    from rmtfl.theory import tracy_widom_quantile
    from rmtfl.theory._classical.edge_count import edge_positions

    v = np.sort(np.asarray(v, float))[::-1]
    if K0 == 0:
        return edge_outlier_count(v, window=J).count
    q, xs = float(tracy_widom_quantile(0.99, beta=1)), edge_positions(K0 + J)
    r, seen = 0, set()
    while True:
        x = xs[K0 - r:K0 - r + J]             # rank k = K0 + 1 .. K0 + J is the (k - r)-th value below the edge
        (e, sig), *_ = np.linalg.lstsq(np.stack([np.ones(J), -x], 1), v[K0:K0 + J], rcond=None)
        rn = min(int(np.sum(v > e + max(sig, 0.0) * q)), K0)
        if rn == r or rn in seen:
            return rn
        seen.add(r)
        r = rn


def point_draws(path: str, act: str, tgt: str, a1: float, a2: float, N: int, batch: str = "reused", draws=None):
    """The draws' top values at one point of a page cache (rows, as simulated), the first ``draws`` of them (all
    without it); a cache whose name ends in ``own.json`` holds draws with seeds of each point's own."""
    from .bench_two_step_finite_n import cache_key

    with open(path) as f:
        rows = json.load(f)[cache_key(act, tgt, batch, a1, a2, N, own=path.endswith("own.json"))]
    return np.array([r["sv"] for r in rows[:draws]])


def prediction_in(context, act: str, tgt: str, a1: float, a2: float, N: int, *, say: bool = True):
    """``(prediction, seen)`` at one reused point (``N = d``, ``n = 2N``), made within ``context`` (a context
    manager that yields the dict it fills, with ``"lambda"`` where the count is read through the Poisson process);
    ``None`` where it is not read there (said so with ``say``)."""
    from rmtfl.theory import two_step

    with context as seen:
        p = two_step(act, tgt, psi=1.0, phi=2.0, eta1=N ** a1, eta2=N ** a2, N=N)
    if "lambda" not in seen:
        if say:
            print("  the count is not read through the process here (no single samples)")
        return None
    return p, seen


def lambda_at_point(context, path: str, act: str, tgt: str, a1: float, a2: float, N: int, draws: int = 25):
    """``(draws, prediction, seen)`` at one reused point of a page cache: its first ``draws`` draws
    (:func:`point_draws`) and :func:`prediction_in` ``context``; ``None`` where that is."""
    got = prediction_in(context, act, tgt, a1, a2, N)
    return None if got is None else (point_draws(path, act, tgt, a1, a2, N, draws=draws), *got)


def add_point_args(ap, *, point_parts: str, draw_parts: str, alphas: str, cache_parts: str = "lambda, grid") -> None:
    """The arguments the one-point diagnostics share: ``--cache``, ``--N``, ``--act``, ``--target``, ``--alphas``
    (default ``alphas``), ``--draws`` and ``--acts``; ``point_parts``, ``draw_parts`` and ``cache_parts`` name in the
    help the parts that read the point, the draws and a page cache."""
    ap.add_argument("--cache", default=None, help=f"a page cache of reused draws (--part {cache_parts})")
    ap.add_argument("--N", type=int, default=1000)
    ap.add_argument("--act", default="gelu", help=f"with --part {point_parts}")
    ap.add_argument("--target", default="hermite(0, 1, 0, 0.4082482904638631)", help=f"with --part {point_parts}")
    ap.add_argument("--alphas", default=alphas, help=f"with --part {point_parts}: alpha1,alpha2")
    ap.add_argument("--draws", type=int, default=12, help=f"with --part {draw_parts}: draws simulated")
    ap.add_argument("--acts", default=None, help="with --part grid: only these activations (; between)")


def point_args(ap, a, cache_parts=("lambda", "grid")) -> tuple[float, float]:
    """``(alpha1, alpha2)`` from a diagnostic's parsed ``--alphas``, after the checks the one-point diagnostics share
    (``ap.error``, exit 2, where they fail): ``--alphas`` two numbers, ``--cache`` given for the parts in
    ``cache_parts`` (a diagnostic without ``--part`` has none), ``--draws`` at least 2."""
    try:
        a1, a2 = (float(v) for v in a.alphas.split(","))
    except ValueError:
        ap.error(f"--alphas must be two numbers a1,a2, got {a.alphas!r}")
    if getattr(a, "part", None) in cache_parts and a.cache is None:
        ap.error(f"--part {a.part} reads a page cache: give --cache")
    if a.draws < 2:
        ap.error(f"--draws must be at least 2, got {a.draws}")
    return a1, a2


def lambda_and_samples(laws, bulk_top, fold: float):
    """``(grid, Lambda, mu)``: the count's mean count function below the spikes of ``P`` as the prediction blends it
    through the ``fold`` (docs/theory/two_step.md §8.3) and, on the same grid and blended the same way, its single
    samples' part ``mu(s) = sum_b n_b P_b(S > s)``."""
    grid, lam = poisson_count.blended(poisson_count.mean_count(laws.below, bulk_top),
                                      poisson_count.mean_count(laws.above, bulk_top), fold)
    _, mu = poisson_count.blended((grid, poisson_count.samples_above(laws.below, grid)),
                                  (grid, poisson_count.samples_above(laws.above, grid)), fold)
    return grid, lam, mu


@contextlib.contextmanager
def replaced_count(counted, seen: dict | None = None):
    """Within the block the prediction's count through the Poisson process is ``counted(seen, laws, bulk_top, fold,
    N=N, psi=psi)`` in place of :func:`rmtfl.theory._two_step.counting.count_through_process`; ``seen`` (a dict,
    yielded) holds the prediction under way (``"point"``: the activation and target as the route resolved them and
    its keywords) and its widened bulk (``"bulk"``), cleared at each prediction.  All restored on leaving."""
    from rmtfl.theory._two_step import finite_n, two_step

    seen = {} if seen is None else seen
    count, bulk_without, predict = two_step.count_through_process, finite_n.bulk_without, two_step.predict_finite_n

    def spy_bulk(*args, **kwargs):
        seen["bulk"] = bulk_without(*args, **kwargs)
        return seen["bulk"]

    def spy_predict(act, target, **kwargs):
        seen.clear()
        seen["point"] = (act, target, kwargs)
        return predict(act, target, **kwargs)

    def spy_count(laws, bulk_top, fold, *, N, psi):
        return counted(seen, laws, bulk_top, fold, N=N, psi=psi)

    two_step.count_through_process, finite_n.bulk_without, two_step.predict_finite_n = spy_count, spy_bulk, spy_predict
    try:
        yield seen
    finally:
        two_step.count_through_process, finite_n.bulk_without, two_step.predict_finite_n = count, bulk_without, predict


def cache_points(path, N, batch, draws):
    """``(act, tgt, a1, a2, spectra, counts)`` of each point of a page cache at width ``N`` (``batch``): the draws'
    top values and the rule's count on each."""
    from .diag_count_statistic import points

    with open(path) as f:
        cache = json.load(f)
    for key, S, counts in points(cache, N, batch, draws):
        act, tgt, a1, a2 = key.split("|")[2:6]
        yield act, tgt, float(a1), float(a2), S, counts


def _predict(act, tgt, a1, a2, N, batch):
    from rmtfl.theory import two_step

    return two_step(act, tgt, psi=1.0, phi=2.0, eta1=N ** a1, eta2=N ** a2, N=N, batch=batch,
                    phi2=2.0 if batch == "fresh" else None)


def part_law(path, N, batch, *, group=False, whole=False, ranks=None, shift=False, gamma=1.0, extra=4, draws=25,
             verbose=False):
    from rmtfl.theory import make_target

    from .bench_two_step_finite_n import compare_cell, edge_within, sign_test
    from .diag_column_shift import column_shift
    from .diag_count_statistic import extreme_ranks
    from .diag_m_spike import whole_law_eigenvalues
    from .diag_sample_group import coupled_group

    J, tot = rule_window(N), dict(points=0, prediction=0, law=0, computed=0)
    # per reading (the predicted spectrum's count and edge; the laws' count with the spectrum's edge; the laws' count
    # and edge, attempt 20): all three criteria, the sign test, values + edges + sign test
    read = {"the spectrum's count and edge": [0, 0, 0], "the laws' count": [0, 0, 0],
            "the laws' count and edge": [0, 0, 0]}
    for act, tgt, a1, a2, S, counts in cache_points(path, N, batch, draws):
        m = median_count(counts)
        with contextlib.ExitStack() as st:
            if group:
                st.enter_context(coupled_group())
            if whole:
                st.enter_context(whole_law_eigenvalues(make_target(tgt), float(N)))
            if ranks:
                st.enter_context(extreme_ranks(str(ranks)))
            if shift:
                st.enter_context(column_shift("without"))
            seen = st.enter_context(captured())
            cell = compare_cell(act, tgt, batch, a1, a2, N, [{"sv": s} for s in S])
        pc = cell["pred_count"]
        rule = law_rule(seen, J, extra, gamma)
        lc = pc if rule is None else rule[0]
        law_edge_ok = cell["edge_ok"] if rule is None else edge_within(rule[1], cell["edge_sim"], cell["edge_se"], N)
        for name, c, e_ok in zip(read, (pc, lc, lc), (cell["edge_ok"], cell["edge_ok"], law_edge_ok)):
            sign = sign_test(counts, c) >= 0.05
            read[name][0] += cell["values_ok"] and e_ok and c == m
            read[name][1] += sign
            read[name][2] += cell["values_ok"] and e_ok and sign
        tot["points"] += 1
        tot["prediction"] += pc == m
        tot["computed"] += rule is not None
        tot["law"] += lc == m
        if verbose and lc != m:
            print(f"  {act}, {tgt}, ({a1}, {a2}): draws {m}, prediction {pc}, law {lc}")
    print(f"N = {N}, {batch}: {tot}")
    print("  all three criteria / the sign test / values, edges and the sign test: "
          + "; ".join(f"with {k} {'/'.join(map(str, v))}" for k, v in read.items()))


def part_deep(path, N, batch, K0s, draws=25):
    from rmtfl.theory._two_step import widened_bulk

    J, hit, spread, n = rule_window(N), dict.fromkeys(K0s, 0), dict.fromkeys(K0s, 0.0), 0
    top_values = widened_bulk.WidenedBulk.top_values
    widened_bulk.WidenedBulk.top_values = lambda self, count, **kw: top_values(self, count + 40, **kw)
    try:
        for act, tgt, a1, a2, S, _ in cache_points(path, N, batch, draws):
            with captured() as seen:
                _predict(act, tgt, a1, a2, N, batch)
            r = seen["result"]
            spec = sorted(list(r.spike_medians or r.locations) + [m for (_, _, m) in r.samples], reverse=True)
            spec = np.array(spec + list(r.bulk_top))
            n += 1
            for K0 in K0s:
                counts = [deep_count(s, J, K0) for s in S]
                hit[K0] += deep_count(spec, J, K0) == median_count(counts)
                spread[K0] += float(np.std(counts))
    finally:
        widened_bulk.WidenedBulk.top_values = top_values
    for K0 in K0s:
        print(f"N = {N}, {batch}, fit from rank {K0}: prediction = draws' median count at {hit[K0]} of {n} points; "
              f"the draws' count's standard deviation {spread[K0] / n:.2f} (mean over points)")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cache", required=True, help="a cache of bench_two_step_finite_n (--cache)")
    ap.add_argument("--N", type=int, default=1000)
    ap.add_argument("--batch", choices=("reused", "fresh"), default="reused")
    ap.add_argument("--draws", type=int, default=25)
    ap.add_argument("--part", choices=("law", "deep"), default="law")
    ap.add_argument("--group", action="store_true", help="with --part law: attempt 13's coupled group")
    ap.add_argument("--whole", action="store_true", help="with --part law: attempt 4's whole-law eigenvalue")
    ap.add_argument("--ranks", type=int, default=None, help="with --part law: extreme samples out of the bulk")
    ap.add_argument("--shift", action="store_true", help="with --part law: attempt 15's bulk and shift")
    ap.add_argument("--gamma", type=float, default=1.0, help="with --part law: the rigidity of the samples' ranks")
    ap.add_argument("--extra", type=int, default=4, help="with --part law: ranks drawn beyond the prediction's")
    ap.add_argument("--K0", default="0,13,26", help="with --part deep: the ranks the fit starts at")
    ap.add_argument("-v", "--verbose", action="store_true", help="with --part law: the points it misses")
    a = ap.parse_args(argv)
    if a.part == "law":
        part_law(a.cache, a.N, a.batch, group=a.group, whole=a.whole, ranks=a.ranks, shift=a.shift,
                 gamma=a.gamma, extra=a.extra, draws=a.draws, verbose=a.verbose)
    else:
        part_deep(a.cache, a.N, a.batch, [int(k) for k in a.K0.split(",")], a.draws)
    return 0


if __name__ == "__main__":
    sys.exit(main())
