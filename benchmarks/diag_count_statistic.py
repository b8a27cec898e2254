"""What the count rule's median over draws depends on: how far any count read off one spectrum, or off the draws'
marginal laws, can go (docs/theory/two_step_attempts.md §17; measured on the acceptance page's cached draws).

The count rule (:func:`rmtfl.numerics.edge_outlier_count`, docs/theory/two_step.md §9.2) fits an edge and a
Tracy–Widom scale to ``J`` values and counts those above ``edge + 2.02 scale``, iterated.  On a draw ``v``
(descending) its count is the smallest fixed point ``r``: the cut ``thr_r`` fitted to ``v[r:r+J]`` lies at or above
``v[r]`` and below ``v[r-1]`` (:func:`first_fixed_point`; the part ``rule`` checks it on every cached draw).  With
``sigma > 0`` the cut is linear in the window, ``thr_r = c . v[r:r+J]``, so each fixed-point event is a pair of
linear inequalities.  The parts set the draws' median count beside counts built from less than the whole draws:

* ``spectra``: the rule on one spectrum built rank by rank from the draws (the ``p``-quantile of each rank, ``p``
  from 0.3 to 0.7; the mean), on the draws' median cut, and with a wider window;
* ``laws``: the count's median from the fixed-point events' marginal probabilities (exact, over the draws, or
  Gaussian from the margins' means and spreads) taken as independent, and from Gaussian spectra with the draws'
  rank means and covariance (drawn here, with a fixed seed: a diagnostic, not a prediction);
* ``marginals`` (with ``--other CACHE``, the same points drawn with seeds of their own): the other draws' median count
  against the median of the rule over spectra whose top ``t`` ranks are drawn independently from this cache's
  marginal laws of those ranks (re-sorted; the rest at the draws' rank-by-rank medians; ``t`` from 5 to 20; and the
  top 12 from Gaussian laws of the same means and spreads; only the ranks that are outliers of the median spectrum,
  and two more), beside this cache's own median count and its median spectrum (out of sample: the marginals and the
  median they are set against come from different draws);
* ``ranks``: the acceptance grid with ``--ranks K`` of a typical batch's most extreme samples out of the bulk in place
  of 12 (docs/theory/two_step.md §8.3; ``--ranks double``: 24, and 48, only where all 12 give outliers).

    python -m benchmarks.diag_count_statistic --cache CACHE/n1000.json --N 1000      # CACHE: the page's cache directory
    python -m benchmarks.diag_count_statistic --cache CACHE/n2000.json --N 2000 --batch fresh --draws 13
    python -m benchmarks.diag_count_statistic --cache CACHE/n2000.json --N 2000 --part ranks --ranks 24
    python -m benchmarks.diag_count_statistic --cache CACHE/n1000.json --N 1000 --part marginals \
        --other CACHE/n1000own.json
"""
from __future__ import annotations

import argparse
import contextlib
import json
import sys

import numpy as np


def rule_window(N: int, psi: float = 1.0) -> int:
    """``J`` of the count rule at width ``N`` (docs/theory/two_step.md §9.2)."""
    from rmtfl.theory._two_step.counting import count_window

    return count_window(N, psi)


def _fit(J: int):
    """The rule's least-squares fit as rows: ``(edge, scale) = P @ window``, and its margin ``q_0.99`` of TW₁."""
    from rmtfl.theory import tracy_widom_quantile
    from rmtfl.theory._classical.edge_count import edge_positions

    P = np.linalg.pinv(np.stack([np.ones(J), -edge_positions(J)], axis=1))
    return P, float(tracy_widom_quantile(0.99, beta=1))


def edge_weights(J: int) -> np.ndarray:
    """``c`` with ``edge = c . window``: the edge the rule fits to a window of ``J`` values."""
    return _fit(J)[0][0]


def cut_weights(J: int) -> np.ndarray:
    """``c`` with ``thr = c . window`` (the fitted edge plus ``q_0.99`` fitted scales), valid where the fitted
    scale is positive."""
    P, q = _fit(J)
    return P[0] + q * P[1]


def fixed_point_events(V, J: int, K: int = 40) -> np.ndarray:
    """``F[s, r]``: whether ``r`` is a fixed point of the rule on draw ``s`` (rows of ``V`` descending)."""
    V = np.atleast_2d(np.asarray(V, float))
    P, q = _fit(J)
    F = np.zeros((V.shape[0], K), bool)
    for r in range(K):
        win = V[:, r:r + J]
        thr = win @ P[0] + q * np.maximum(win @ P[1], 0.0)
        above = V[:, r - 1] > thr if r else np.ones(V.shape[0], bool)
        F[:, r] = (V[:, r] <= thr) & above
    return F


def first_fixed_point(v, J: int, K: int = 40) -> int:
    """The smallest fixed point of the rule on one spectrum ``v`` (descending): its count."""
    hits = np.flatnonzero(fixed_point_events(v, J, K)[0])
    return int(hits[0]) if hits.size else K


def median_from_events(pf) -> int:
    """The median count were the fixed-point events independent with probabilities ``pf`` (per ``r``):
    ``P(count >= k) = prod_{r < k} (1 - pf_r)``."""
    return int(np.sum(np.cumprod(1.0 - np.asarray(pf)) >= 0.5))


def points(cache: dict, N: int, batch: str | None = None, draws: int = 25):
    """``(key, spectra, counts)`` of each grid point at width ``N`` (of ``batch``, default both) in a page cache:
    the first ``draws`` draws' top values, descending."""
    from rmtfl.numerics import edge_outlier_count

    J = rule_window(N)
    for key, rows in cache.items():
        if not key.startswith(f"{N}|{batch or ''}") or "psi=" in key:
            continue
        S = np.array([r["sv"] for r in rows[:draws]])
        yield key, S, np.array([edge_outlier_count(s, window=J).count for s in S])


def median_count(counts) -> int:
    """The sample median of ``counts`` (the lower middle value for an even number, as the acceptance page reads it)."""
    from .bench_two_step_finite_n import middle_counts

    return middle_counts(counts)[0]


def part_rule(cache, N, batch=None, draws=25) -> None:
    J = rule_window(N)
    same = total = 0
    for _, S, counts in points(cache, N, batch, draws):
        same += sum(first_fixed_point(s, J) == c for s, c in zip(S, counts))
        total += len(counts)
    print(f"N = {N}: the smallest fixed point is the rule's count on {same} of {total} draws")


def part_spectra(cache, N, batch=None, draws=25) -> None:
    from rmtfl.numerics import edge_outlier_count

    J = rule_window(N)
    names = ["q0.3", "q0.4", "median", "q0.6", "q0.7", "mean", "median cut", "median, 2J"]
    hit = dict.fromkeys(names, 0)
    n = 0
    for _, S, counts in points(cache, N, batch, draws):
        m, n = median_count(counts), n + 1
        room = S.shape[1] - 2 * J            # the wider window leaves this many values to count
        if room < 20:                        # too few cached values to count under the wider rule: not measured
            hit["median, 2J"] = None
        for p, name in ((0.3, "q0.3"), (0.4, "q0.4"), (0.5, "median"), (0.6, "q0.6"), (0.7, "q0.7")):
            hit[name] += edge_outlier_count(np.quantile(S, p, axis=0), window=J).count == m
        hit["mean"] += edge_outlier_count(S.mean(0), window=J).count == m
        thr = np.median([edge_outlier_count(s, window=J).threshold for s in S])
        hit["median cut"] += int(np.sum(np.median(S, 0) > thr)) == m
        if hit["median, 2J"] is not None:    # against the wider rule's own median count
            wide = [edge_outlier_count(s, window=2 * J, max_outliers=room).count for s in S]
            hit["median, 2J"] += edge_outlier_count(np.median(S, 0), window=2 * J,
                                                    max_outliers=room).count == median_count(wide)
    print(f"N = {N}, {n} points: the draws' median count read off one spectrum")
    for k in names:
        print(f"  {k:12s} {'-' if hit[k] is None else hit[k]}")


def _spread(X) -> np.ndarray:
    return np.maximum(X.std(0, ddof=1), 1e-12)


def part_laws(cache, N, batch=None, draws=25, seed: int = 0) -> None:
    from scipy.stats import norm

    J = rule_window(N)
    c = cut_weights(J)
    rng = np.random.default_rng(seed)
    hit = {"events, exact": 0, "events, Gaussian": 0, "Gaussian spectra": 0}
    n = 0
    for _, S, counts in points(cache, N, batch, draws):
        m, n = median_count(counts), n + 1
        K = min(40, S.shape[1] - J)
        hit["events, exact"] += median_from_events(fixed_point_events(S, J, K).mean(0)) == m
        G = np.stack([S[:, r] - S[:, r:r + J] @ c for r in range(K)], axis=1)
        H = np.stack([S[:, r - 1] - S[:, r:r + J] @ c for r in range(1, K)], axis=1)
        pf = norm.cdf(-G.mean(0) / _spread(G)) * np.concatenate([[1.0], norm.cdf(H.mean(0) / _spread(H))])
        hit["events, Gaussian"] += median_from_events(pf) == m
        L = min(70, S.shape[1])
        sim = rng.multivariate_normal(S[:, :L].mean(0), np.cov(S[:, :L].T), size=2000, method="eigh")
        sim = -np.sort(-sim, axis=1)
        firsts = np.argmax(np.concatenate([fixed_point_events(sim, J, L - J), np.ones((len(sim), 1), bool)], 1), 1)
        hit["Gaussian spectra"] += int(np.median(firsts)) == m
    print(f"N = {N}, {n} points: the draws' median count from the marginal laws")
    for k, v in hit.items():
        print(f"  {k:18s} {v}")


def part_marginals(cache, other, N, batch=None, draws=25, seed: int = 0, tops=(5, 8, 12, 15, 20)) -> None:
    from rmtfl.numerics import edge_outlier_count

    J = rule_window(N)
    rng = np.random.default_rng(seed)
    hit = {f"top {t} drawn": 0 for t in tops} | dict.fromkeys(("top 12 Gaussian", "median's outliers",
                                                              "median's outliers + 2", "own median count",
                                                              "median spectrum"), 0)
    n = 0
    for key, S, counts in points(cache, N, batch, draws):
        rows = other.get(key + "|own", [])[:draws]
        if len(rows) < draws:
            continue
        m = median_count([edge_outlier_count(np.array(r["sv"]), window=J).count for r in rows])
        n += 1
        raw = S[rng.integers(0, len(S), size=(2000, S.shape[1])), np.arange(S.shape[1])[None, :]]
        gauss = S.mean(0) + S.std(0, ddof=1) * rng.standard_normal(raw.shape)
        med = np.median(S, 0)
        typ = edge_outlier_count(med, window=J).count          # the ranks that are outliers in the median spectrum
        for name, t, drawn in ([(f"top {t} drawn", t, raw) for t in tops] + [("top 12 Gaussian", 12, gauss)]
                               + [("median's outliers", typ, raw), ("median's outliers + 2", typ + 2, raw)]):
            V = np.tile(med, (2000, 1))
            V[:, :t] = drawn[:, :t]
            V = -np.sort(-V, axis=1)
            K = min(40, V.shape[1] - J)
            F = np.concatenate([fixed_point_events(V, J, K), np.ones((len(V), 1), bool)], 1)
            hit[name] += median_count(np.argmax(F, 1)) == m
        hit["own median count"] += median_count(counts) == m
        hit["median spectrum"] += edge_outlier_count(med, window=J).count == m
    print(f"N = {N}, {n} points: the other draws' median count")
    for k, v in hit.items():
        print(f"  {k:18s} {v}")


@contextlib.contextmanager
def extreme_ranks(ranks: str):
    """Within the block, ``ranks`` (a number, or ``"double"``) of a typical batch's most extreme samples leave the bulk
    (``SAMPLE_RANKS``, docs/theory/two_step.md §8.3); ``"double"``: 12, then twice as many while all of them give
    outliers (the prediction's note says so), up to 48."""
    from rmtfl.theory._two_step import sample_spikes, two_step

    keep, predict = sample_spikes.SAMPLE_RANKS, two_step.predict_finite_n

    def doubling(*args, **kwargs):
        try:
            while True:
                r = predict(*args, **kwargs)
                if sample_spikes.SAMPLE_RANKS >= 48 or not any("most extreme samples of a batch give" in n
                                                               for n in r.notes):
                    return r
                sample_spikes.SAMPLE_RANKS *= 2
        finally:
            sample_spikes.SAMPLE_RANKS = keep

    if ranks == "double":
        two_step.predict_finite_n = doubling
    else:
        sample_spikes.SAMPLE_RANKS = int(ranks)
    try:
        yield
    finally:
        sample_spikes.SAMPLE_RANKS, two_step.predict_finite_n = keep, predict


def part_ranks(path, N, batch, ranks, own, draws) -> None:
    from .diag_m_spike import run_grid

    @contextlib.contextmanager
    def variant(target):
        with extreme_ranks(ranks):
            yield
    run_grid(path, N=N, batch=batch or "reused", own=own, variant=(f"{ranks} ranks", variant), draws=draws)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cache", required=True, help="a cache of bench_two_step_finite_n (--cache)")
    ap.add_argument("--N", type=int, default=1000)
    ap.add_argument("--batch", choices=("reused", "fresh"), default=None, help="default: both")
    ap.add_argument("--draws", type=int, default=25, help="the first this many draws of each point")
    ap.add_argument("--part", choices=("rule", "spectra", "laws", "marginals", "ranks", "all"), default="all")
    ap.add_argument("--other", default=None, help="with --part marginals: the cache of the same points' own seeds")
    ap.add_argument("--ranks", default="24", help="with --part ranks: a number, or double")
    ap.add_argument("--own-seeds", action="store_true", help="with --part ranks: a cache of --own-seeds")
    a = ap.parse_args(argv)
    if a.part == "ranks":
        part_ranks(a.cache, a.N, a.batch, a.ranks, a.own_seeds, a.draws)
        return 0
    with open(a.cache) as f:
        cache = json.load(f)
    if a.part == "marginals":
        if not a.other:
            ap.error("--part marginals needs --other CACHE")
        with open(a.other) as f:
            part_marginals(cache, json.load(f), a.N, a.batch, a.draws)
        return 0
    for name, part in (("rule", part_rule), ("spectra", part_spectra), ("laws", part_laws)):
        if a.part in (name, "all"):
            part(cache, a.N, a.batch, a.draws)
    return 0


if __name__ == "__main__":
    sys.exit(main())
