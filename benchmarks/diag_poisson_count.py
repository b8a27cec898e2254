"""The count from the mean count function below the spikes, its top ranks as a Poisson process
(docs/theory/two_step_attempts.md §29, §31–§33; measured on the acceptance page's cached draws, not kept).

Attempt 17 found that the draws' median count is carried by the marginal laws of their top 8-15 ranks drawn
independently.  Here those laws come from one function: ``Lambda(s)``, the mean number of values above ``s`` below
the spikes of ``P``.  The ``k``-th value below the spikes lies above ``s`` when a Poisson variable of mean
``Lambda(s)`` is at least ``k`` (:func:`benchmarks.diag_count_law.rank_laws` with that process in place of the
single samples'), for the top ``M`` ranks below the spikes; deeper ranks sit where ``Lambda`` is ``k - 1/2`` (the
bulk's values are rigid: drawn as a Poisson process too, they spread far wider than a draw's); the spikes at their
places.  The rule's median count over those spectra on a fixed Sobol lattice
(:func:`benchmarks.diag_count_law.lattice_rule`) is set against the draws' median count.  The prediction has since
taken this reading up as its option ``extreme_samples="grouped"`` (:mod:`rmtfl.theory._two_step.poisson_count`,
docs/theory/two_step.md §8.3): the count, the soft edge and the blend here are its functions.

* ``--part draws``: ``Lambda`` from the draws themselves (the top ranks whose 10 % point lies above 1.5 times the
  median ``J``-th value, at most three, taken as spikes), against their own median count and, with ``--other``, the
  median count of 25 other draws of the same point (seeds of its own), beside attempt 17's reference (the top 12
  ranks drawn from the draws' own marginal laws).
* ``--part grid``: ``Lambda`` from the prediction: its single samples' mean count ``mu(s)`` above the fold (held at
  its value at the fold below it: those samples stay above every ``s`` there) plus the bulk's count from its top
  values; ``--mode`` the prediction as it is (``kept``) or with earlier attempts' changes joined by ``+``
  (:func:`variant`: attempt 15's bulk ``without``, attempt 27's pushed block over it ``block``, ``whole``,
  ``coupled``, ``group``, ``pshift``: attempt 28's spectral shift of ``P`` below the fold).
  ``--airy``: the bulk's count at its fold as a finite real matrix's
  (:func:`rmtfl.theory._two_step.poisson_count.soft_edge_count`).
* ``--part compare``: ``Lambda`` of the draws beside the prediction's at one point; ``--part bias``: the
  prediction's ``Lambda`` less the draws' over the top 12 ranks below the spikes, per activation and target.
* ``--part accept`` (attempt 31): the acceptance page's three criteria for the prediction in ``--mode``, read on its
  spectrum (as the page reads it) and through the Poisson process of its ``Lambda``: the count is the process's
  median count, the values are those of the first ``count`` predicted roots in the order of their medians, the
  edge is the process's mean fitted edge (:func:`poisson_reading`); per activation and target, the points passing
  values / counts / edges / all three.
* ``--part blend`` (attempt 32): as ``accept``, with ``Lambda`` from ``--mode`` up to the fold and from ``--above``
  beyond ``(1 + --width)`` times the fold, linear in between (:func:`blended_lambda`), beside the prediction as it
  is read on its spectrum; with the points the blend gains and loses.  ``--values`` (attempt 33): the values from
  another mode's roots (default ``--above``'s).

    python -m benchmarks.diag_poisson_count --part draws --cache CACHE/n1000.json --N 1000
    python -m benchmarks.diag_poisson_count --part grid --cache CACHE/n1000.json --N 1000 --mode kept
    python -m benchmarks.diag_poisson_count --part compare --cache CACHE/n1000qown.json --N 1000 --alphas 0.3,0.3
    python -m benchmarks.diag_poisson_count --part bias --cache CACHE/n1000.json --N 1000 --mode without --airy
    python -m benchmarks.diag_poisson_count --part accept --cache CACHE/n1000.json --N 1000 --mode whole --airy
    python -m benchmarks.diag_poisson_count --part blend --cache CACHE/n1000.json --N 1000 --mode without+whole \
        --above group+whole --airy
    python -m benchmarks.diag_poisson_count --part blend --cache CACHE/n1000.json --N 1000 --mode whole \
        --above group+whole --values group --airy
"""
from __future__ import annotations

import argparse
import contextlib
import json
import sys

import numpy as np

from rmtfl.theory._two_step import poisson_count as _theory
# the theory's pieces of the reading (blended_lambda and TOP_RANKS under this module's names)
from rmtfl.theory._two_step.poisson_count import BLEND_WIDTH, TOP_RANKS, mean_count, samples_above
from rmtfl.theory._two_step.poisson_count import blended as blended_lambda

from .diag_count_law import cache_points, captured, point_draws
from .diag_count_statistic import median_count, points, rule_window

#: The parts a ``--mode`` joins with ``+`` (:func:`variant`).
MODE_PARTS = ("kept", "without", "block", "whole", "coupled", "group", "pshift", "unified")


def poisson_count(grid, lam, fixed, J: int, M: int = TOP_RANKS, laws=None) -> tuple[int, float] | None:
    """``(median count, mean fitted edge)`` of the rule over spectra whose top ``M`` ranks below the spikes
    ``fixed`` are the points of a Poisson process of mean count ``lam`` above each ``s`` of the ascending
    ``grid`` (module docstring; the theory's :func:`rmtfl.theory._two_step.poisson_count.poisson_count`);
    ``laws``: the spikes' laws as :func:`benchmarks.diag_count_law.rank_laws` takes them; ``None`` where the
    process holds no more than ``J`` values."""
    got = _theory.poisson_count(grid, lam, fixed, J, laws=laws, ranks=M)
    return None if got is None else got[:2]


def draws_lambda(S, J: int):
    """``(spikes, grid, Lambda)`` of the draws ``S`` (descending rows; module docstring)."""
    med = np.median(S, 0)
    r = min(int(np.sum(np.quantile(S, 0.1, axis=0) > 1.5 * med[min(J, S.shape[1] - 1)])), 3)
    grid = np.linspace(S[:, -1].min(), S[:, r:].max() * 1.05, 1500)
    lam = (S[:, r:, None] > grid[None, None, :]).sum(1).mean(0)
    return med[:r], grid, lam


def predicted_lambda(seen, airy: bool = False):
    """``(spikes, spikes' laws, grid, Lambda)`` of a captured prediction (module docstring); ``None`` without
    single samples.  ``airy``: the bulk's count near its fold as a finite matrix's mean count, the density's count
    plus the soft edge's excess at the edge and scale fitted to its first ten top values (the theory's
    :func:`rmtfl.theory._two_step.poisson_count.mean_count`); without it the density's count alone."""
    if "ranked" not in seen:
        return None
    law, fixed, _, laws = seen["ranked"]
    if law is None or not law.sizes:
        return None
    if airy:
        return (list(fixed), laws, *mean_count(law, seen["result"].bulk_top))
    bt = np.asarray(seen["result"].bulk_top, float)
    xs = np.concatenate([[bt[0] + 0.5 * (bt[0] - bt[1])], bt])[::-1]          # the bulk's count: k - 1/2 at v_k
    ns = np.concatenate([[0.0], np.arange(bt.size) + 0.5])[::-1]
    grid = np.unique(np.concatenate([np.linspace(bt[-1], max(xs[-1], law.grid[-1]), 1200), xs, law.grid]))
    return list(fixed), laws, grid, samples_above(law, grid) + np.interp(grid, xs, ns, left=ns[0], right=0.0)


def part_draws(path: str, N: int, batch: str, other: str | None, draws: int = 25, M: int = TOP_RANKS) -> None:
    from rmtfl.numerics import edge_outlier_count

    from .diag_count_statistic import fixed_point_events

    J = rule_window(N)
    with open(path) as f:
        cache = json.load(f)
    others = None
    if other:
        with open(other) as f:
            others = json.load(f)
    rng = np.random.default_rng(0)
    tally, n = {"Poisson from Lambda": 0, "top 12 from their marginals (attempt 17)": 0, "own median count": 0}, 0
    for key, S, counts in points(cache, N, batch, draws):
        m = median_count(counts)
        if others is not None:
            rows = others.get(key + "|own", [])[:draws]
            if len(rows) < draws:
                continue
            m = median_count([edge_outlier_count(np.array(r["sv"]), window=J).count for r in rows])
        S = -np.sort(-S, axis=1)
        n += 1
        spikes, grid, lam = draws_lambda(S, J)
        tally["Poisson from Lambda"] += poisson_count(grid, lam, spikes, J, M=min(M, S.shape[1] - J - 4))[0] == m
        raw = S[rng.integers(0, len(S), size=(2000, 12)), np.arange(12)[None, :]]
        V = np.tile(np.median(S, 0), (2000, 1))
        V[:, :12] = raw
        V = -np.sort(-V, axis=1)
        F = np.concatenate([fixed_point_events(V, J, min(40, V.shape[1] - J)), np.ones((2000, 1), bool)], 1)
        tally["top 12 from their marginals (attempt 17)"] += median_count(np.argmax(F, 1)) == m
        tally["own median count"] += median_count(counts) == m
    against = "the other draws' median count" if other else "their own median count"
    print(f"N = {N}, {batch}, {n} points: draws' Lambda against {against}")
    for k, v in tally.items():
        print(f"  {k:42s} {v}")


def variant(mode: str, act: str, tgt: str, N: float):
    """The context of ``--mode`` (module docstring) for one point, ``None`` where the mode does not apply: parts
    joined by ``+`` among ``kept``, ``without`` (attempt 15's bulk), ``block`` (attempt 27's pushed block over
    attempt 15's bulk, the quadratic sigma with He1 + He2/2 only), ``whole`` (attempt 4's whole-law eigenvalue of
    ``M``), ``coupled`` (the columns coupled to ``P``, attempt 10), ``group`` (attempt 13's group), ``pshift``
    (the bulk's count below the fold shifted by ``P``'s spectral shift, attempt 28: over attempt 15's bulk where
    ``without`` is a part as well) and ``unified`` (attempt 24's law, the lift and the push together:
    :func:`benchmarks.diag_unified_law.unified_law`; it brings the whole-law eigenvalue and the group of its own and
    stands alone)."""
    from rmtfl.theory import make_target

    from .diag_block_law import block_and_bulk
    from .diag_column_shift import column_shift
    from .diag_m_spike import whole_law_eigenvalues
    from .diag_p_shift import p_extra
    from .diag_quadratic_parts import QUADRATIC
    from .diag_sample_coupling import coupled_samples
    from .diag_sample_group import coupled_group
    from .diag_unified_law import unified_law

    parts = mode.split("+")
    if not set(parts) <= set(MODE_PARTS):
        raise ValueError(f"mode must join parts of {MODE_PARTS} with +, got {mode!r}")
    if "block" in parts and ({"without", "pshift"} & set(parts)):
        raise ValueError(f"block brings attempt 15's bulk of its own: it takes neither without nor pshift, "
                         f"got {mode!r}")
    if "unified" in parts and len(parts) > 1:
        raise ValueError(f"unified brings the whole-law eigenvalue, the push and the group of its own: it stands "
                         f"alone, got {mode!r}")
    if "block" in parts and not act == tgt == QUADRATIC:
        return None
    bulk = "without" if "without" in parts else "kept"
    if "pshift" in parts:
        parts = [p for p in parts if p != "without"]
    make = {"kept": contextlib.nullcontext, "without": lambda: column_shift("without"), "block": block_and_bulk,
            "pshift": lambda: column_shift(bulk, extra=p_extra()),
            "whole": lambda: whole_law_eigenvalues(make_target(tgt), float(N)), "coupled": coupled_samples,
            "unified": lambda: unified_law(make_target(tgt), int(N)),
            "group": coupled_group}

    @contextlib.contextmanager
    def stacked():
        with contextlib.ExitStack() as stack:
            for p in parts:
                stack.enter_context(make[p]())
            yield
    return stacked()


def predicted_points(path: str, N: int, batch: str, mode: str, draws: int = 25):
    """``(act, tgt, a1, a2, draws' spectra, counts, cell, seen)`` of each point of a page cache where ``mode``
    applies: the acceptance page's comparison (``cell``) of the prediction in ``mode`` (:func:`variant`) and what
    it captured (``seen``, :func:`benchmarks.diag_count_law.captured`)."""
    from .bench_two_step_finite_n import compare_cell

    for act, tgt, a1, a2, S, counts in cache_points(path, N, batch, draws):
        ctx = variant(mode, act, tgt, N)
        if ctx is None:
            continue
        with ctx, captured() as seen:
            cell = compare_cell(act, tgt, batch, a1, a2, N, [{"sv": v} for v in S])
        yield act, tgt, a1, a2, S, counts, cell, seen


def part_grid(path: str, N: int, batch: str, mode: str, draws: int = 25, airy: bool = False) -> None:
    J = rule_window(N)
    rows, total = {}, np.zeros(2, int)
    for act, tgt, a1, a2, S, counts, cell, seen in predicted_points(path, N, batch, mode, draws):
        m = median_count(counts)
        got = predicted_lambda(seen, airy)
        count = cell["pred_count"] if got is None else poisson_count(got[2], got[3], got[0], J, laws=got[1])[0]
        hit = np.array([cell["pred_count"] == m, count == m])
        rows[(act, tgt)] = rows.get((act, tgt), 0) + hit
        total += hit
        if not hit.all():
            print(f"  {act:20s} {tgt:38s} ({a1}, {a2}) draws {m} ({min(counts)}-{max(counts)}): "
                  f"spectrum {cell['pred_count']}, Poisson {count}", flush=True)
    print(f"N = {N}, {batch}, mode {mode}: points where the count is the draws' median, read on the predicted "
          "spectrum / from the Poisson process of its Lambda")
    for (act, tgt), v in rows.items():
        print(f"  {act:20s} {tgt:38s} {v[0]} / {v[1]}")
    print(f"  all {total[0]} / {total[1]}")


def part_compare(path: str, N: int, a1: float, a2: float, mode: str, act: str, tgt: str, batch: str,
                 airy: bool = False) -> None:
    from rmtfl.theory import two_step

    J = rule_window(N)
    S = -np.sort(-point_draws(path, act, tgt, a1, a2, N, batch), axis=1)
    spikes, _, _ = draws_lambda(S, J)
    with variant(mode, act, tgt, N) or contextlib.nullcontext(), captured() as seen:
        two_step(act, tgt, psi=1.0, phi=2.0, eta1=N ** a1, eta2=N ** a2, N=N, batch=batch,
                 phi2=2.0 if batch == "fresh" else None)
    got = predicted_total(seen, airy)
    if got is None:
        print("  the prediction has no single samples here")
        return
    s = np.quantile(S[:, len(spikes):12], [0.05, 0.25, 0.5, 0.75, 0.95], axis=0).ravel()
    s = np.unique(np.round(np.quantile(s, np.linspace(0, 1, 12)), 3))
    print(f"{act}, {tgt}, {batch}, N = {N}, ({a1}, {a2}), mode {mode}; fold {seen['result'].edge:.3f}; mean number "
          "of values above s")
    print("  s          " + " ".join(f"{v:6.2f}" for v in s))
    print("  draws      " + " ".join(f"{v:6.2f}" for v in drawn_total(S, s)))
    print("  prediction " + " ".join(f"{v:6.2f}" for v in np.interp(s, *got)))


def predicted_total(seen, airy: bool = False, lam=None):
    """``(grid, mean number of values above each s)`` of a captured prediction: its ``Lambda``
    (:func:`predicted_lambda`; or ``lam`` in that form) plus the spikes of ``P`` above ``s``; ``None`` without single
    samples.  Set beside the draws' own mean count above ``s`` (:func:`drawn_total`) it needs no sorting of values
    into spikes and the rest, where a draw's top single sample may pass for a spike (:func:`draws_lambda`)."""
    got = predicted_lambda(seen, airy) if lam is None else lam
    if got is None:
        return None
    fixed, _, grid, lam = got
    return grid, lam + sum((grid < v).astype(float) for v in fixed)


def drawn_total(S, s):
    """The draws' (rows of ``S``) mean number of values above each ``s``."""
    return (np.asarray(S)[:, :, None] > np.asarray(s, float)[None, None, :]).sum(1).mean(0)


def lambda_gap(S, seen, J: int, airy: bool = False, lam=None):
    """The prediction's mean count above ``s`` less the draws' ``S`` (:func:`predicted_total`, ``lam`` as there), at
    the draws' median values of their top 12 ranks below their spikes (:func:`draws_lambda`); ``None`` without
    single samples."""
    spikes, _, _ = draws_lambda(S, J)
    got = predicted_total(seen, airy, lam)
    if got is None:
        return None
    s = np.median(S, 0)[len(spikes):len(spikes) + TOP_RANKS]
    return np.interp(s, *got) - drawn_total(S, s)


def part_bias(path: str, N: int, batch: str, mode: str, draws: int = 25, airy: bool = False) -> None:
    J = rule_window(N)
    rows = {}
    for act, tgt, _, _, S, _, _, seen in predicted_points(path, N, batch, mode, draws):
        gap = lambda_gap(-np.sort(-S, axis=1), seen, J, airy)
        if gap is not None:
            rows.setdefault((act, tgt), []).append(gap)
    print(f"N = {N}, {batch}, mode {mode}: the prediction's mean count above s less the draws' at the draws' top 12 "
          "ranks below their spikes, over the points with single samples: mean over ranks 1-4 / 5-8 / 9-12 "
          "(min..max over points)")
    for (act, tgt), g in rows.items():
        g = np.array(g)
        cells = [g[:, i:i + 4].mean(1) for i in (0, 4, 8)]
        print(f"  {act:20s} {tgt:38s} {len(g):2d} points: " + " / ".join(
            f"{c.mean():+.2f} ({c.min():+.1f}..{c.max():+.1f})" for c in cells))


def poisson_reading(seen, J: int, airy: bool = False, lam=None):
    """``(count, mean fitted edge, values)`` of a captured prediction read through the Poisson process of its
    ``Lambda`` (:func:`poisson_count`): ``values`` the first ``count`` of its roots (the spikes of ``P`` and the
    single samples), taken in the order of their medians, as the prediction counts them, each at its mean;
    ``None`` without single samples.  ``lam``: another ``Lambda`` in :func:`predicted_lambda`'s form to read in
    place of the prediction's own (:func:`part_blend`)."""
    got = predicted_lambda(seen, airy) if lam is None else lam
    if got is None:
        return None
    count, edge = poisson_count(got[2], got[3], got[0], J, laws=got[1])
    r = seen["result"]
    medians = r.spike_medians or r.locations
    roots = sorted([(m, v) for m, v in zip(medians, r.locations)] + [(m, v) for v, _, m in r.samples],
                   key=lambda t: -t[0])
    return count, edge, [v for _, v in roots[:count]]


def _criteria(cell) -> list:
    """The page's three verdicts (values, count, edge) of a compared cell, read on the predicted spectrum."""
    return [cell["values_ok"], cell["count_ok"], cell["edge_ok"]]


def _process_criteria(values, count: int, edge: float, cell, S, counts, N: int) -> list:
    """The page's three verdicts of a reading through the Poisson process (:func:`poisson_reading`): its values
    against the draws ``S``, its count against their median count, its edge against their fitted edge (``cell``)."""
    from .bench_two_step_finite_n import edge_within, middle_counts, values_within

    low, high = middle_counts(counts)
    return [values_within(values, S, low)[0], low <= count <= high,
            edge_within(edge, cell["edge_sim"], cell["edge_se"], N)]


def _print_readings(rows) -> np.ndarray:
    """Prints, per activation and target, the points passing values / counts / edges / all three of two readings,
    and returns their sum over all rows (the caller prints the total line)."""
    for (act, tgt), t in rows.items():
        print(f"  {act:20s} {tgt:38s} {'/'.join(map(str, t[0]))} | {'/'.join(map(str, t[1]))}")
    return sum(rows.values())


def part_accept(path: str, N: int, batch: str, mode: str, draws: int = 25, airy: bool = False) -> None:
    J = rule_window(N)
    rows = {}
    for act, tgt, a1, a2, S, counts, cell, seen in predicted_points(path, N, batch, mode, draws):
        spectrum = _criteria(cell)
        got = poisson_reading(seen, J, airy)
        if got is None:                 # no single samples: both readings are the spectrum's
            process, count = spectrum, cell["pred_count"]
        else:
            count, edge, values = got
            process = _process_criteria(values, count, edge, cell, S, counts, N)
        t = rows.setdefault((act, tgt), np.zeros((2, 4), int))
        t += [[*spectrum, all(spectrum)], [*process, all(process)]]
        if not (all(spectrum) and all(process)):
            print(f"  {act:20s} {tgt:38s} ({a1}, {a2}) draws {cell['sim_count']}: spectrum {cell['pred_count']} "
                  f"{''.join('.x'[not b] for b in spectrum)}, Poisson {count} {''.join('.x'[not b] for b in process)}",
                  flush=True)
    print(f"N = {N}, {batch}, mode {mode}{' with the soft edge' if airy else ''}: points passing values / counts / "
          "edges / all three, read on the predicted spectrum | through the Poisson process of its Lambda")
    total = _print_readings(rows)
    print(f"  all {'/'.join(map(str, total[0]))} | {'/'.join(map(str, total[1]))}")


def part_blend(path: str, N: int, batch: str, mode: str, above: str, width: float = BLEND_WIDTH, draws: int = 25,
               airy: bool = False, values: str | None = None) -> None:
    """Attempt 32: the page's three criteria for the prediction as it is, read on its spectrum, beside the
    Poisson reading (:func:`poisson_reading`) of ``Lambda`` taken from ``mode`` up to the fold and from ``above``
    beyond (:func:`blended_lambda`), with the spikes and their laws of ``above`` and the roots of ``values``
    (attempt 33; default ``above``)."""
    from .bench_two_step_finite_n import compare_cell

    J = rule_window(N)
    values = values or above
    rows, moved, gaps = {}, np.zeros(2, int), {}
    for act, tgt, a1, a2, S, counts in cache_points(path, N, batch, draws):
        cells, seens = {}, {}
        for m in dict.fromkeys(("kept", mode, above, values)):
            with variant(m, act, tgt, N) or contextlib.nullcontext(), captured() as seen:
                cells[m] = compare_cell(act, tgt, batch, a1, a2, N, [{"sv": v} for v in S])
            seens[m] = seen
        spectrum = _criteria(cells["kept"])
        low_l, high_l, cell = predicted_lambda(seens[mode], airy), predicted_lambda(seens[above], airy), cells[above]
        if low_l is None or high_l is None:          # no single samples: the spectrum's reading of ``above``
            process, count = _criteria(cell), cell["pred_count"]
        else:
            grid, lam = blended_lambda(low_l[2:], high_l[2:], seens[above]["result"].edge, width)
            blend = (high_l[0], high_l[1], grid, lam)
            count, edge, roots = poisson_reading(seens[values], J, lam=blend)
            D = -np.sort(-S, axis=1)
            got = [lambda_gap(D, seens[m], J, airy) for m in ("kept", mode, above)]
            if all(g is not None for g in got):     # Lambda as each mode has it and blended, against the draws'
                gaps.setdefault((act, tgt), []).append(got + [lambda_gap(D, seens[above], J, airy, blend)])
            process = _process_criteria(roots, count, edge, cell, S, counts, N)
        t = rows.setdefault((act, tgt), np.zeros((2, 4), int))
        t += [[*spectrum, all(spectrum)], [*process, all(process)]]
        moved += [all(process) and not all(spectrum), all(spectrum) and not all(process)]
        if all(spectrum) != all(process):
            print(f"  {act:20s} {tgt:38s} ({a1}, {a2}) draws {cells['kept']['sim_count']}: as it is "
                  f"{cells['kept']['pred_count']} {''.join('.x'[not b] for b in spectrum)}, blend {count} "
                  f"{''.join('.x'[not b] for b in process)}", flush=True)
    print(f"N = {N}, {batch}: points passing values / counts / edges / all three, the prediction as it is read on "
          f"its spectrum | Lambda of {mode} up to the fold and of {above} from {1 + width:g} x fold, read through "
          f"its Poisson process{' (with the soft edge)' if airy else ''}, the values {values}'s roots")
    total = _print_readings(rows)
    print(f"  all {'/'.join(map(str, total[0]))} | {'/'.join(map(str, total[1]))}; the blend gains {moved[0]} "
          f"points, loses {moved[1]}")
    print(f"The mean count above s less the draws' (as --part bias) over the draws' top 12 ranks below their spikes "
          f"and over the points with single samples, its root mean square (its mean): kept / {mode} / {above} / the "
          "blend")
    for (act, tgt), g in gaps.items():
        g = np.array(g)
        rms, mean = np.sqrt(np.mean(g**2, axis=(0, 2))), g.mean(axis=(0, 2))
        print(f"  {act:20s} {tgt:38s} {len(g):3d} points: "
              + " / ".join(f"{r:.2f} ({m:+.2f})" for r, m in zip(rms, mean)))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", choices=("draws", "grid", "compare", "bias", "accept", "blend"), default="draws")
    ap.add_argument("--cache", required=True, help="a cache of bench_two_step_finite_n (--cache)")
    ap.add_argument("--N", type=int, default=1000)
    ap.add_argument("--batch", choices=("reused", "fresh"), default="reused")
    ap.add_argument("--other", default=None, help="with --part draws: the same points' draws with seeds of their own")
    ap.add_argument("--mode", default="kept",
                    help="parts joined by +: kept, without, block, whole, coupled, group, pshift, unified")
    ap.add_argument("--airy", action="store_true", help="with --part grid, compare, bias, accept: the bulk's count "
                    "at a finite matrix's soft edge")
    ap.add_argument("--above", default="group+whole", help="with --part blend: the mode whose Lambda is read "
                    "above the fold (--mode's below it)")
    ap.add_argument("--values", default=None, help="with --part blend: the mode whose roots give the values "
                    "(default --above's; attempt 33)")
    ap.add_argument("--width", type=float, default=BLEND_WIDTH, help="with --part blend: the blend runs from the "
                    "fold to (1 + WIDTH) x fold")
    ap.add_argument("--ranks", type=int, default=TOP_RANKS, help="with --part draws: ranks drawn from the process")
    ap.add_argument("--alphas", default="0.4,0.4", help="with --part compare")
    ap.add_argument("--act", default="hermite(0, 1, 0.5)", help="with --part compare: the activation (cache name)")
    ap.add_argument("--target", default="hermite(0, 1, 0.5)", help="with --part compare: the target (cache name)")
    a = ap.parse_args(argv)
    for flag, m in (("--mode", a.mode), ("--above", a.above), ("--values", a.values or a.above)):
        try:
            variant(m, a.act, a.target, a.N)          # checks the parts; enters nothing
        except ValueError as e:
            ap.error(f"{flag}: {e}")
    if not 0.0 < a.width <= 1.0:
        ap.error(f"--width must lie in (0, 1], got {a.width}")
    if a.part == "draws":
        part_draws(a.cache, a.N, a.batch, a.other, M=a.ranks)
    elif a.part == "bias":
        part_bias(a.cache, a.N, a.batch, a.mode, airy=a.airy)
    elif a.part == "accept":
        part_accept(a.cache, a.N, a.batch, a.mode, airy=a.airy)
    elif a.part == "blend":
        part_blend(a.cache, a.N, a.batch, a.mode, a.above, a.width, airy=a.airy, values=a.values)
    elif a.part == "grid":
        part_grid(a.cache, a.N, a.batch, a.mode, airy=a.airy)
    else:
        a1, a2 = (float(v) for v in a.alphas.split(","))
        part_compare(a.cache, a.N, a1, a2, a.mode, a.act, a.target, a.batch, airy=a.airy)
    return 0


if __name__ == "__main__":
    sys.exit(main())
