"""Acceptance grid of the finite-N two-step prediction against simulation (docs/theory/two_step.md §8.4).

For each activation, target, batch and grid point ``(alpha1, alpha2)`` (``eta_t = N^alpha_t``, ``psi = 1``,
``phi = phi2 = 2``; ``--psi``, ``--phi`` set other shapes) it simulates ``W_2`` over several seeds
(:func:`rmtfl.numerics.simulate_two_step`, float32 steps, every singular value) and compares with
:func:`rmtfl.theory.two_step` at that ``N``:

* each predicted outlier against the simulated value of the same rank (mean over seeds): within 3 % or
  3 standard errors, whichever is larger;
* the predicted count against the simulated count (median over seeds of
  :func:`rmtfl.numerics.edge_outlier_count`, docs/theory/two_step.md §9.2; 25 seeds by default, an odd number
  so that the median is one count; for an even number either middle value is accepted); reported beside it:
  whether the predicted spread of the count over batches (``count_range``, docs/theory/two_step.md §8.3) holds
  the median, how many single draws it holds, and a sign test of the predicted count against the draws (the
  probability, were the prediction a median of the count's law, of at least as many draws on one side of it),
  and the criterion's noise floor (``median_miss``: how often the median of as many draws misses the median of
  the draws' own law); and the count the same rule gives on the simulated spectra's rank-by-rank median
  (``median_spectrum_count``): how well a count read off one typical spectrum, as the prediction's is, can do;
* the predicted bulk edge against the simulated one: the edge the count rule fits to the predicted spectrum
  (``fitted_edge``) against the mean of the edges it fits to the simulated spectra, within 3 standard errors plus
  three Tracy–Widom scales ``3 N^(-2/3) edge``; the fold of the predicted bulk's density (``bulk_edge``) is shown
  beside it.

Every point draws seeds 1000, 1001, ..., so the points of a grid share their batches and one fluctuation of them;
``--own-seeds`` draws each point's batches from seeds of its own (:func:`point_seed`; docs/theory/two_step.md §8.4,
"Seeds of their own at each point"); ``--pool OWN_CACHE`` follows the draws of ``--cache`` with each point's own
from a cache written with ``--own-seeds``, up to ``--seeds`` in all (docs/theory/two_step.md §8.4, "49 draws a
point").  Simulations are cached in a JSON file (``--cache``), so an interrupted run resumes; ``--out`` writes the
Markdown table; a cache of fewer seeds is extended.  The whole grid at ``N = 1000``
(4 activations x 2 targets x (25 reused + 9 fresh) points x 25 seeds) takes about 50 minutes in one process
(0.40 s a draw on a 2-core AMD EPYC; 0.60 s before a square float32 spectrum went to its float64 Gram matrix at
once)::

    python -m benchmarks.bench_two_step_finite_n --N 1000 --cache two_step_fn_1000.json \
        --out docs/benchmarks/two_step_finite_n.md

``--figure docs/benchmarks/two_step_finite_n.png`` draws the grid as well, one panel per activation and target
(:func:`plot_grid`), with a JSON sidecar of the rows drawn.
"""
from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import re
import sys
import time
import zlib

import numpy as np

ACTIVATIONS = ["tanh", "erf", "gelu", "hermite(0, 1, 0.5)"]
TARGETS = ["hermite(0, 1, 0.5)", "hermite(0, 1, 0, 0.4082482904638631)"]   # He1 + He2/2, He1 + He3/sqrt(6)
GRID = [0.0, 0.1, 0.2, 0.3, 0.4]
SHORT = {"hermite(0, 1, 0.5)": "He1+He2/2", "hermite(0, 1, 0, 0.4082482904638631)": "He1+He3/√6"}

#: The words that end the title of a section drawn with seeds of its own at each point (``--own-seeds``).
OWN_TITLE = "seeds of its own at each point"
#: The end of the titles of the sections run with ``--extreme-samples grouped`` or ``single``, the choice the
#: default (``auto``) does not make for that batch (docs/theory/two_step.md §8.3).
GROUPED_TITLE = "extreme samples grouped"
SINGLE_TITLE = "extreme samples single"


def cache_key(act, tgt, batch, a1, a2, N, psi=1.0, phi=2.0, own=False) -> str:
    """The key of a grid point's draws in a ``--cache`` file (``own``: drawn with ``--own-seeds``)."""
    shape = "" if (psi, phi) == (1.0, 2.0) else f"|psi={psi}|phi={phi}"      # the default shape keeps its old keys
    return f"{N}|{batch}|{act}|{tgt}|{a1}|{a2}{shape}" + ("|own" if own else "")


def point_seed(key: str) -> int:
    """The first seed of a grid point that draws batches of its own (``--own-seeds``): ``10^9`` plus a multiple of
    1000 set by the point's cache key, so that no two points of a page share a batch (docs/theory/two_step.md §8.4)."""
    return 10**9 + 1000 * (zlib.crc32(key.encode()) % 10**6)


def simulate_cell(act, tgt, batch, a1, a2, N, seeds, start=0, psi=1.0, phi=2.0, backend="numpy", seed0=1000):
    """Top singular values (80, or the count rule's window plus 44 where that is more, beyond ``N = 2000``: at
    ``N = 8000`` the window holds 72 values, and 80 would cap the count at 8) and the top 3 target alignments of
    ``W_2`` for seeds ``seed0 + start .. seed0 + seeds - 1`` (``d = N / psi``, ``n = n2 = phi d``).  The inputs are
    drawn on the host from the seed on either ``backend``, so ``"cupy"`` gives the same draws up to float32
    rounding."""
    from rmtfl.numerics import simulate_two_step
    from rmtfl.theory._two_step.counting import count_window

    d = int(round(N / psi))
    n = int(round(phi * d))
    rows = []
    for s in range(start, seeds):
        kw = dict(batch="fresh", n2=n) if batch == "fresh" else {}
        r = simulate_two_step(act, tgt, N=N, d=d, n=n, eta1=N ** a1, eta2=N ** a2, rng=seed0 + s,
                              dtype="float32", n_vectors=3, backend=backend, **kw)
        rows.append(dict(sv=[float(v) for v in r.singular_values[:max(80, count_window(N, psi) + 44)]],
                         ct=[float(v) for v in r.cos2_target[:3, 0]]))
    return rows


def page_rows(page):
    """``(section title, cells)`` of each table row of a page this benchmark wrote, leaving out the sections drawn
    with seeds of their own at each point (``--own-seeds``), which measure the same points again, and those run with
    ``--extreme-samples grouped`` or ``single``, another prediction (the default's rows are the ones read here)."""
    title = ""
    for line in open(page, encoding="utf-8"):
        if line.startswith("## "):
            title = line[3:].strip()
        c = [x.strip() for x in line.strip().strip("|").split("|")]
        if len(c) == 11 and c[0].isdigit() and OWN_TITLE not in title and GROUPED_TITLE not in title \
                and SINGLE_TITLE not in title:
            yield title, c


def sample_value_errors(page) -> dict:
    """Relative errors of the single-sample outliers (``kind="sample"``, docs/theory/two_step.md §8.3) on the rows of a
    page this benchmark wrote, against the simulated mean of the same rank (docs/theory/two_step.md §9.3, "Outlier
    values"): ``{(N, batch, σ, target): [error, ...]}`` over the sections at ``psi = 1``, ``phi = 2`` with the shared
    seeds.  The page does not say which predicted values are single samples, so each row is predicted again (about
    0.1 s a row)."""
    out = {}
    for title, c in page_rows(page):
        if "Other" in title or not (c[5] and c[6]):
            continue
        p = row_prediction(title, c)
        sim = [float(v) for v in c[6].split(",")]
        out.setdefault((int(c[0]), c[1], c[2], c[3]), []).extend(
            o.singular_value / s - 1 for o, s in zip(p.outliers, sim) if o.kind == "sample")
    return {k: v for k, v in out.items() if v}


def row_prediction(title, c):
    """``two_step(..., N=N)`` at the point of a page row (``c``, its cells as :func:`page_rows` yields them), with
    ``psi`` and ``phi`` from its section's ``title`` where it names them (else 1 and 2): about 0.1 s."""
    from rmtfl.theory import two_step

    names = {v: k for k, v in SHORT.items()}
    shape = re.search(r"psi = ([\d.]+), phi = ([\d.]+)", title)
    psi, phi = (float(shape[1]), float(shape[2])) if shape else (1.0, 2.0)
    N, batch, act, tgt = int(c[0]), c[1], names.get(c[2], c[2]), names.get(c[3], c[3])
    a1, a2 = (float(v) for v in c[4].strip("()").split(","))
    return two_step(act, tgt, psi=psi, phi=phi, eta1=N ** a1, eta2=N ** a2, N=N, batch=batch,
                    phi2=phi if batch == "fresh" else None)


def compare_cell(act, tgt, batch, a1, a2, N, rows, psi=1.0, phi=2.0, extreme_samples="auto"):
    """One table row: prediction beside the simulation (module docstring for the criteria)."""
    from rmtfl.numerics import edge_outlier_count
    from rmtfl.theory import two_step
    from rmtfl.theory._two_step.counting import count_window

    t0 = time.perf_counter()
    p = two_step(act, tgt, psi=psi, phi=phi, eta1=N ** a1, eta2=N ** a2, N=N, batch=batch,
                 phi2=phi if batch == "fresh" else None, extreme_samples=extreme_samples)
    dt = time.perf_counter() - t0
    S = np.array([r["sv"] for r in rows])
    window = count_window(N, psi)        # the rule's J (docs/theory/two_step.md §9.2)
    fits = [edge_outlier_count(np.array(r["sv"]), window=window) for r in rows]
    counts = np.array([f.count for f in fits])
    mid = middle_counts(counts)
    typical = median_spectrum_count([r["sv"] for r in rows], window)
    sim_count = mid[0]
    pred = [o.singular_value for o in p.outliers]
    ok_vals, worst = values_within(pred, S, sim_count)
    edges = np.array([f.edge for f in fits])
    e_m, e_se = edges.mean(), edges.std(ddof=1) / math.sqrt(len(edges))
    # the same statistic on both sides: the count rule's edge on the predicted spectrum (docs/theory/two_step.md §8.4)
    e_pred = p.fitted_edge if p.fitted_edge is not None else p.bulk_edge
    e_ok = e_pred is not None and edge_within(e_pred, e_m, e_se, N)
    return dict(act=act, tgt=tgt, batch=batch, a1=a1, a2=a2, N=N, psi=psi, phi=phi, mode=p.mode,
                extreme_samples=extreme_samples,
                reliable=bool(p.reliable),
                pred=pred, sim=S[:, :max(len(pred), sim_count, 1)].mean(0).tolist(), pred_count=len(pred),
                sim_count=sim_count, count_spread=[int(counts.min()), int(counts.max())],
                count_range=list(p.count_range),
                count_in_range=bool(p.count_range[0] <= mid[1] and mid[0] <= p.count_range[1]),
                draws_in_range=int(np.sum((counts >= p.count_range[0]) & (counts <= p.count_range[1]))),
                draws=int(counts.size), count_p=sign_test(counts, len(pred)), median_miss=median_miss(counts),
                values_ok=bool(ok_vals), worst_rel=worst, count_ok=bool(mid[0] <= len(pred) <= mid[1]),
                sim_count_high=int(mid[1]), typical_count=typical, typical_ok=bool(mid[0] <= typical <= mid[1]),
                edge_pred=e_pred, edge_fold=p.bulk_edge, edge_sim=float(e_m), edge_se=float(e_se), edge_ok=bool(e_ok),
                seconds=dt)


def values_within(pred, S, count) -> tuple[bool, float]:
    """The values criterion: the first ``count`` predicted values (the first one when ``count`` is 0) each within
    3 % or 3 standard errors, whichever is larger, of the mean of its rank over the draws ``S`` (rows descending);
    ``(passes, largest relative error)``."""
    ok, worst = True, 0.0
    for i, v in enumerate(pred[:count] if count else pred[:1]):
        m, se = S[:, i].mean(), S[:, i].std(ddof=1) / math.sqrt(len(S))
        worst = max(worst, abs(v - m) / m)
        ok &= bool(abs(v - m) <= max(0.03 * m, 3 * se))
    return ok, worst


def edge_within(e_pred, e_mean, e_se, N) -> bool:
    """The edge criterion: a predicted fitted edge within 3 standard errors of the draws' mean fitted edge plus 3
    Tracy-Widom units ``N^(-2/3)`` of it."""
    return bool(abs(e_pred - e_mean) <= 3 * e_se + 3 * N ** (-2 / 3) * e_mean)


def middle_counts(counts) -> tuple[int, int]:
    """The sample median of the simulated counts as ``(low, high)``: one value for an odd number of draws, the two
    middle values for an even number (every count between them is a median of the sample)."""
    c = np.sort(np.asarray(counts))
    return int(c[(c.size - 1) // 2]), int(c[c.size // 2])


def median_spectrum_count(spectra, window) -> int:
    """The count rule on the rank-by-rank median of the simulated ``spectra`` (descending singular values; the
    common leading length is used).

    The prediction is counted by the same rule on one predicted spectrum (docs/theory/two_step.md §9.2); this is
    that count for an exact typical spectrum.  The rule is not linear in the spectrum, so it need not be the median
    of the draws' counts (docs/theory/two_step.md §8.4, "A count read off one spectrum").
    """
    from rmtfl.numerics import edge_outlier_count

    L = min(len(s) for s in spectra)
    typical = np.median(np.array([np.asarray(s[:L], float) for s in spectra]), axis=0)
    return int(edge_outlier_count(typical, window=window).count)


def sign_test(counts, predicted) -> float:
    """Two-sided sign test of ``predicted`` as a median of the law of ``counts``: twice the probability that a
    Binomial(draws, 1/2) reaches the larger number of draws strictly on one side (conservative with ties)."""
    from scipy.stats import binom

    side = max(int(np.sum(counts > predicted)), int(np.sum(counts < predicted)))
    return float(min(1.0, 2.0 * binom.sf(side - 1, counts.size, 0.5)))


def median_miss(counts) -> float:
    """How often the median of as many draws misses the median of ``counts``, were ``counts`` the law itself.

    With ``F`` the empirical distribution and ``m`` its median, the median of ``n`` draws (``n`` odd) is at most
    ``k`` when at least ``(n + 1) / 2`` draws are: ``P(med <= k) = P(Binomial(n, F(k)) >= (n + 1) / 2)``, so the
    miss is ``1 - P(med <= m) + P(med <= m - 1)``.  Summed over a grid it is the number of points at which even a
    prediction of each point's true median count would differ from the simulated median (the criterion's noise
    floor).
    """
    from scipy.stats import binom

    c = np.sort(np.asarray(counts))
    n, m = c.size, c[(c.size - 1) // 2]
    need = (n + 1) // 2
    at_most = [binom.sf(need - 1, n, np.mean(c <= k)) for k in (m, m - 1)]
    return float(1.0 - at_most[0] + at_most[1])


def _typical(results) -> str:
    ok = [r["typical_ok"] for r in results if "typical_ok" in r]
    return f"{sum(ok)} of {len(results)} points" if len(ok) == len(results) else "(not recorded)"


def _points(k: int) -> str:
    return f"{k} point{'s' * (k != 1)}"


def _sim_count(r) -> str:
    lo, hi = r["sim_count"], r.get("sim_count_high", r["sim_count"])
    return f"{lo}" if lo == hi else f"{lo}–{hi}"


def markdown(results) -> str:
    lines = ["| N | batch | σ | target | (α1, α2) | predicted outliers | simulated (mean) | count pred/sim | "
             "count range pred / sim draws | edge pred/sim (fold) | pass |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        ok = r["values_ok"] and r["count_ok"] and r["edge_ok"]
        lines.append(
            f"| {r['N']} | {r['batch']} | {SHORT.get(r['act'], r['act'])} | {SHORT.get(r['tgt'], r['tgt'])} | "
            f"({r['a1']}, {r['a2']}) | {', '.join(f'{v:.3f}' for v in r['pred'])} | "
            f"{', '.join(f'{v:.3f}' for v in r['sim'])} | "
            f"{r['pred_count']}/{_sim_count(r)}{'†' * (r['count_p'] < 0.05)} | "
            f"{r['count_range'][0]}–{r['count_range'][1]} / {r['count_spread'][0]}–{r['count_spread'][1]} | "
            f"{r['edge_pred']:.3f}/{r['edge_sim']:.3f} ({r.get('edge_fold', r['edge_pred']):.3f}) | "
            f"{'yes' if ok else 'NO'} |")
    n = len(results)
    passed = sum(r["values_ok"] and r["count_ok"] and r["edge_ok"] for r in results)
    head = (f"{passed} of {n} grid points pass all three criteria (values {sum(r['values_ok'] for r in results)}, "
            f"counts {sum(r['count_ok'] for r in results)}, edges {sum(r['edge_ok'] for r in results)}); "
            f"the count differs significantly from the draws (sign test, 5 %, † in the table) at "
            f"{_points(sum(r['count_p'] < 0.05 for r in results))}, and a prediction of each point's true median "
            f"count would itself miss the simulated median at about {sum(r['median_miss'] for r in results):.0f} "
            f"points (the draws' spread, docs/theory/two_step.md §8.4); the rule applied to the simulated spectra's "
            f"rank-by-rank median, one typical spectrum as the prediction's count reads, gives the median count at "
            f"{_typical(results)}; "
            f"the predicted count range holds the median simulated count at {sum(r['count_in_range'] for r in results)}"
            f" points and {sum(r['draws_in_range'] for r in results)} of {sum(r['draws'] for r in results)} single "
            f"draws; prediction time median {np.median([r['seconds'] for r in results]):.3f} s, "
            f"largest {max(r['seconds'] for r in results):.3f} s.\n\n")
    return head + "\n".join(lines) + "\n"


def plot_grid(results, *, ax=None):
    """One activation and target: each grid point ``(alpha1, alpha2)`` as a cell, green where it passes all three
    criteria, red where it fails, with the predicted/median simulated count and the failed criteria
    (V values, C count, E edge; † the sign test).  ``results``: rows of :func:`compare_cell` for one activation,
    target, batch and ``N``.  Returns the Axes."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(3.2, 3.0))
    a1s = sorted({r["a1"] for r in results})
    a2s = sorted({r["a2"] for r in results})
    for r in results:
        i, j = a1s.index(r["a1"]), a2s.index(r["a2"])
        failed = "".join(c for c, ok in zip("VCE", (r["values_ok"], r["count_ok"], r["edge_ok"])) if not ok)
        ax.add_patch(plt.Rectangle((i - 0.5, j - 0.5), 1, 1, facecolor="#fbb4ae" if failed else "#ccebc5",
                                   edgecolor="white", lw=1.5))
        text = f"{r['pred_count']}/{_sim_count(r)}{'†' * (r['count_p'] < 0.05)}" + (f"\n{failed}" if failed else "")
        ax.text(i, j, text, ha="center", va="center", fontsize=7)
    ax.set_xlim(-0.5, len(a1s) - 0.5)
    ax.set_ylim(-0.5, len(a2s) - 0.5)
    ax.set_xticks(range(len(a1s)), [f"{a:g}" for a in a1s], fontsize=7)
    ax.set_yticks(range(len(a2s)), [f"{a:g}" for a in a2s], fontsize=7)
    ax.set_xlabel("α1", fontsize=8)
    ax.set_ylabel("α2", fontsize=8)
    r0 = results[0]
    passed = sum(all(r[k] for k in ("values_ok", "count_ok", "edge_ok")) for r in results)
    ax.set_title(f"σ = {SHORT.get(r0['act'], r0['act'])}, target {SHORT.get(r0['tgt'], r0['tgt'])}: "
                 f"{passed}/{len(results)}", fontsize=8)
    return ax


def save_grid_figure(results, path):
    """Every activation x target of ``results`` (one batch and ``N``) as a panel of :func:`plot_grid`; the PNG at
    ``path`` with its JSON sidecar (the rows drawn); returns the PNG's path."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from rmtfl.compare import save_figure

    acts = list(dict.fromkeys(r["act"] for r in results))
    tgts = list(dict.fromkeys(r["tgt"] for r in results))
    fig, axes = plt.subplots(len(acts), len(tgts), figsize=(3.3 * len(tgts), 3.0 * len(acts)), squeeze=False)
    for i, act in enumerate(acts):
        for j, tgt in enumerate(tgts):
            rows = [r for r in results if r["act"] == act and r["tgt"] == tgt]
            if rows:
                plot_grid(rows, ax=axes[i, j])
            else:
                axes[i, j].set_axis_off()
    r0 = results[0]
    chosen = r0.get("extreme_samples", "auto")
    grouped = "" if chosen == "auto" else f", extreme samples {chosen}"
    fig.suptitle(f"Finite-N two steps against {r0['draws']} simulated draws: N = {r0['N']}, {r0['batch']} batch"
                 f"{grouped} (count predicted/simulated; V, C, E: values, count, edge missed)", fontsize=9)
    fig.tight_layout()
    keep = ("act", "tgt", "batch", "N", "a1", "a2", "pred_count", "sim_count", "sim_count_high", "count_p", "values_ok",
            "count_ok", "edge_ok", "worst_rel", "edge_pred", "edge_sim")
    out = save_figure(fig, path, {"criteria": "docs/theory/two_step.md §8.4", "draws": r0["draws"],
                                  "extreme_samples": r0.get("extreme_samples", "auto"),
                                  "rows": [{k: r[k] for k in keep} for r in results]})
    plt.close(fig)
    return out


#: Bins of the gap between the count rule's edge on the predicted spectrum and the bulk's fold (:func:`edge_gaps`).
GAP_BINS = ((-math.inf, -0.04), (-0.04, -0.02), (-0.02, 0.02), (0.02, math.inf))


def edge_gaps(page) -> list[dict]:
    """How the predicted fitted edge and count fare against the gap ``fitted_edge / bulk_edge - 1`` on the rows of a
    page this benchmark wrote (docs/theory/two_step.md §9.3, "The edge the count rule fits"): per bin of
    :data:`GAP_BINS`, the rows, those whose fitted edge is more than 3 % off the simulated one, and those whose
    count is off the simulated median (too many, too few).  The note of
    :func:`rmtfl.theory._two_step.counting.low_edge_note` quotes these numbers.  The sections drawn with seeds of
    their own at each point (``--own-seeds``) measure the same points again and are left out."""
    rows = []
    for _, c in page_rows(page):
        m = re.fullmatch(r"([\d.]+)/([\d.]+) \(([\d.]+)\)", c[9])
        if m:
            fitted, sim, fold = map(float, m.groups())
            pred, med = (int(v) for v in c[7].replace("†", "").split("/"))
            rows.append((fitted / fold - 1, abs(fitted / sim - 1) > 0.03, pred - med))
    return [dict(gap=(lo, hi), rows=len(v), edge_off=sum(r[1] for r in v), count_over=sum(r[2] > 0 for r in v),
                 count_under=sum(r[2] < 0 for r in v))
            for lo, hi in GAP_BINS for v in [[r for r in rows if lo <= r[0] < hi]]]


#: Activations whose bulk ends in a square-root edge (bounded ``sigma'``): :func:`edge_offsets` reports them apart.
SATURATING = ("tanh", "erf", "sigmoid", "softplus")


def edge_offsets(page) -> dict:
    """``fitted_edge / simulated_edge - 1`` (the count rule's edge on the predicted spectrum against the one it fits on
    the draws) over the rows of a page this benchmark wrote: its median and mean over all rows and its mean over the
    rows of :data:`SATURATING` activations, each with the row count (docs/theory/two_step.md §9.2, "Where the bulk's
    values are read"); the rows read as in :func:`edge_gaps`."""
    every, light = [], []
    for _, c in page_rows(page):
        m = re.fullmatch(r"([\d.]+)/([\d.]+) \(([\d.]+)\)", c[9])
        if m:
            fitted, sim, _ = map(float, m.groups())
            every.append(fitted / sim - 1)
            if c[2] in SATURATING:
                light.append(fitted / sim - 1)
    return dict(rows=len(every), median=float(np.median(every)), mean=float(np.mean(every)),
                saturating_rows=len(light), saturating_mean=float(np.mean(light)))


def spread_errors(page, share=None) -> list[dict]:
    """How the outlier values fare against the prediction's own spread on the rows of a page this benchmark wrote
    (docs/theory/two_step.md §9.3, "What the result flags"): each row is predicted again (about 0.1 s a row; ``psi``
    and ``phi`` from its section's title) and put in one of two groups by its largest ``spread / value`` over the
    predicted outliers, below ``share`` or not (default :data:`rmtfl.theory._two_step.two_step.SPREAD_NOTE`).  Per
    group: the rows, the median and largest over rows of the largest relative error of a value against the simulated
    mean of its rank, the rows where that error exceeds 5 %, and those where it is the prediction lying high.  The
    note of :func:`rmtfl.theory._two_step.two_step.wide_spread_note` quotes these numbers."""
    from rmtfl.theory._two_step.two_step import SPREAD_NOTE

    share = SPREAD_NOTE if share is None else share
    rows = []
    for title, c in page_rows(page):
        if not (c[5] and c[6]):
            continue
        p = row_prediction(title, c)
        errors = [o.singular_value / float(s) - 1 for o, s in zip(p.outliers, c[6].split(","))]
        if errors:
            rows.append((max(o.spread / o.singular_value for o in p.outliers), max(errors, key=abs)))
    out = []
    for wide in (False, True):
        e = np.array([r[1] for r in rows if (r[0] >= share) == wide])
        out.append(dict(wide=wide, rows=int(e.size), median=float(np.median(np.abs(e))) if e.size else math.nan,
                        largest=float(np.abs(e).max()) if e.size else math.nan, off=int(np.sum(np.abs(e) > 0.05)),
                        high=int(np.sum(e > 0))))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--N", type=int, default=1000)
    ap.add_argument("--grid", default=",".join(map(str, GRID)))
    ap.add_argument("--seeds", type=int, default=25)
    ap.add_argument("--batches", default="reused,fresh")
    ap.add_argument("--activations", default=";".join(ACTIVATIONS))
    ap.add_argument("--targets", default=";".join(TARGETS))
    ap.add_argument("--cache", default="two_step_finite_n_cache.json")
    ap.add_argument("--out", default=None, help="Markdown table")
    ap.add_argument("--json", default=None, help="per-point comparison as JSON")
    ap.add_argument("--simulate-only", action="store_true")
    ap.add_argument("--own-seeds", action="store_true",
                    help="each grid point draws batches of its own (point_seed), instead of seeds 1000, 1001, ... at "
                         "every point, which makes the points share one fluctuation of the batches")
    ap.add_argument("--title", default=None, help="heading of the table's section (with --append)")
    ap.add_argument("--append", action="store_true", help="append the table to --out instead of replacing it")
    ap.add_argument("--figure", default=None, help="PNG (with a JSON sidecar) of the grid, one panel per σ and target")
    ap.add_argument("--psi", type=float, default=1.0, help="N/d (default 1)")
    ap.add_argument("--phi", type=float, default=2.0, help="n/d, and n2/d for fresh batches (default 2)")
    ap.add_argument("--extreme-samples", default="auto", choices=("auto", "single", "grouped"),
                    help="how the prediction takes the batch's most extreme samples (rmtfl.theory.two_step; "
                         "docs/theory/two_step.md §8.3; default auto, the prediction's default)")
    ap.add_argument("--pool", default=None, metavar="CACHE",
                    help="the draws of each point after those of --cache: its draws with seeds of its own from CACHE "
                         "(a cache written with --own-seeds), up to --seeds in all; nothing is simulated")
    ap.add_argument("--backend", default="numpy", choices=("numpy", "cupy"),
                    help="where the draws are simulated (the same draws on both, drawn on the host from the seed)")
    ap.add_argument("--edge-gaps", default=None, metavar="PAGE",
                    help="only print the edge-gap table of a page this benchmark wrote (docs/theory/two_step.md §9.3) "
                         "and the fitted edge's offset from the simulated one (docs/theory/two_step.md §9.2)")
    ap.add_argument("--sample-values", default=None, metavar="PAGE",
                    help="only print the errors of the single-sample outliers on a page this benchmark wrote, per "
                         "N, batch, σ and target (docs/theory/two_step.md §9.3)")
    ap.add_argument("--spread-errors", default=None, metavar="PAGE",
                    help="only print how the values fare against the prediction's own spread on a page this benchmark "
                         "wrote (docs/theory/two_step.md §9.3)")
    a = ap.parse_args(argv)
    if a.spread_errors:
        for g in spread_errors(a.spread_errors):
            print(f"largest spread/value {'at least' if g['wide'] else 'below'} the note's share: {g['rows']} points, "
                  f"largest value error median {100 * g['median']:.1f} %, largest {100 * g['largest']:.1f} %, "
                  f"above 5 % at {g['off']}, the prediction high at {g['high']}")
        return 0
    if a.sample_values:
        for (N, batch, act, tgt), e in sorted(sample_value_errors(a.sample_values).items()):
            print(f"N = {N}, {batch}, {act}, {tgt}: {len(e)} value{'s' * (len(e) != 1)}, "
                  f"median {100 * np.median(e):+.1f} %, "
                  f"from {100 * min(e):+.1f} to {100 * max(e):+.1f} %")
        return 0
    if a.edge_gaps:
        for b in edge_gaps(a.edge_gaps):
            print(f"gap in [{b['gap'][0]:+.2f}, {b['gap'][1]:+.2f}): {b['rows']} points, fitted edge >3 % off at "
                  f"{b['edge_off']}, count too high at {b['count_over']}, too low at {b['count_under']}")
        o = edge_offsets(a.edge_gaps)
        print(f"fitted edge against the simulated one over {o['rows']} points: median {100 * o['median']:+.2f} %, "
              f"mean {100 * o['mean']:+.2f} %; {', '.join(SATURATING)} ({o['saturating_rows']} points): mean "
              f"{100 * o['saturating_mean']:+.2f} %")
        return 0
    if a.pool and (a.own_seeds or a.simulate_only):
        ap.error("--pool adds each point's own draws to the shared ones of --cache: it takes neither --own-seeds nor "
                 "--simulate-only")
    grid = [float(v) for v in a.grid.split(",")]
    cache = json.load(open(a.cache)) if os.path.exists(a.cache) else {}
    pool = json.load(open(a.pool)) if a.pool else None
    cells = list(itertools.product(a.batches.split(","), a.activations.split(";"), a.targets.split(";"), grid, grid))
    results = []
    for batch, act, tgt, a1, a2 in cells:
        k = cache_key(act, tgt, batch, a1, a2, a.N, a.psi, a.phi, own=a.own_seeds)
        have = len(cache.get(k, []))
        if pool is not None:      # the shared draws, then the point's own: nothing simulated
            rows = cache.get(k, []) + pool.get(cache_key(act, tgt, batch, a1, a2, a.N, a.psi, a.phi, own=True), [])
            if len(rows) < a.seeds:
                ap.error(f"--pool: the point {k} has {len(rows)} draws in --cache and --pool, fewer than --seeds "
                         f"{a.seeds}")
        else:
            if have < a.seeds:   # a cache of fewer seeds is extended, the seeds it holds are kept
                cache[k] = cache.get(k, []) + simulate_cell(act, tgt, batch, a1, a2, a.N, a.seeds, start=have,
                                                            psi=a.psi, seed0=point_seed(k) if a.own_seeds else 1000,
                                                            phi=a.phi, backend=a.backend)
                tmp = a.cache + ".tmp"
                with open(tmp, "w") as f:
                    json.dump(cache, f)
                os.replace(tmp, a.cache)
            rows = cache[k]
        if not a.simulate_only:
            r = compare_cell(act, tgt, batch, a1, a2, a.N, rows[:a.seeds], psi=a.psi, phi=a.phi,
                             extreme_samples=a.extreme_samples)
            results.append(r)
            print(json.dumps(r), flush=True)
    if results:
        text = markdown(results)
        if a.out:
            os.makedirs(os.path.dirname(a.out) or ".", exist_ok=True)
            head = f"## {a.title}\n\n" if a.title else ""
            with open(a.out, "a" if a.append else "w") as f:
                f.write(head + text + "\n")
        if a.json:
            with open(a.json, "w") as f:
                json.dump(results, f, indent=1)
        if a.figure:
            save_grid_figure(results, a.figure)
        print(text.splitlines()[0])
    return 0


if __name__ == "__main__":
    sys.exit(main())
