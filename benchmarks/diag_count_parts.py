"""The count above ``s`` taken apart along the extreme directions of ``M`` (docs/theory/two_step_attempts.md §37; a
diagnostic, measured, not kept).

The count's mean count function (docs/theory/two_step.md §8.3) is a sum of parts: the bulk's count, read off a
widened bulk whose columns are the law of ``M = X^T diag(y) X / n`` less the ranks its ``K`` most extreme samples
take; the spikes of ``P``; the single samples' mean count ``mu(s)``, which below the fold is held at its value there
(a sample above the fold adds one value above every ``s`` below it, one below adds none).  Counts on the acceptance
grid sum every part's error, and the errors of different parts cancel at one point and add at the next.  Here each
part is set beside its own counterpart in a draw.

In a draw (reused batch, ``N = d``, ``n = 2N``) take ``M``'s ``K`` eigen-directions of largest ``|lambda|`` out of
``W_2`` (``W_2 V_r``, ``V_r`` the other ``d - K`` eigenvectors): that is the bulk the prediction builds, ``d - K``
columns at ``M``'s other eigenvalues, with the spikes of ``P`` (whose right vectors lie along ``beta*`` and the
first step's direction, not along ``M``'s extreme ones).  The rest of the count, the count of ``W_2`` less that of
``W_2 V_r``, is the extreme directions' part: between 0 and ``K`` at every ``s`` (the values interlace).  (Zeroing
the ``K`` most extreme samples' targets instead is another split: ``M`` without them has its top eigenvalues some
10 % above ``M``'s ranks ``K + 1`` on, so that bulk is not the prediction's.)

Beside them, from the prediction: its bulk as it is (``d`` columns: docs/theory/two_step.md §8.2) and with ``d - K``
columns (docs/theory/two_step_attempts.md §15's bulk without its shift,
:func:`benchmarks.diag_column_shift.column_shift`), each with the spikes of ``P``; ``mu``; and ``mu`` plus the
left-out columns' spectral shift below the fold (:func:`benchmarks.diag_column_shift.left_out_shift`), the expected
values a column adds above ``s`` inside the bulk, ``arg(1 - Q(x + i0)) / pi`` less its value at the fold.  All at
``s = fold + y scale`` (the prediction's fold and the Tracy–Widom scale fitted to its bulk's top values).

The parts read together, with the edge's window (``--grid``, and the last row of each table): the bulk of ``d - K``
columns plus the extreme part read through the centred Tracy–Widom jitter ``delta`` of the edge
(:func:`benchmarks.diag_critical_window.tw_jitter`), in scales ``y`` from the fold,

    P(delta <= y) mu(max(y, 0)) + E_delta[(mu(fold) + shift(y - delta)) 1{delta > y}],

an outlier above the fold counted where the edge lies below ``s``, the shift read from the moved edge
(:func:`jittered`)::

    python -m benchmarks.diag_count_parts --act gelu --target "hermite(0, 1, 0.5)" --alphas 0.4,0.4 --draws 25
    python -m benchmarks.diag_count_parts --all --draws 25
    python -m benchmarks.diag_count_parts --grid CACHE/n1000.json --N 1000
    python -m benchmarks.diag_count_parts --grid CACHE/n1000.json --N 1000 --pool CACHE/n1000own.json

``--own-seeds`` reads a cache of each point's own draws, ``--pool`` follows the shared draws with each point's own
(49 a point), and ``--rough-shift`` reads the shift as attempt 37 first did, before it was solved to convergence
(docs/theory/two_step_attempts.md §38).  ``--fine-top`` reads the bulk's top values off its converged density, in
the tables and on the grid (with ``--no-window`` the count as it is over them;
docs/theory/two_step_attempts.md §39), and ``--points`` sets each point of ``--act`` and ``--target`` apart::

    python -m benchmarks.diag_count_parts --grid CACHE/n1000.json --N 1000 --fine-top --points \
        --act "hermite(0, 1, 0.5)" --target "hermite(0, 1, 0.5)"
"""
from __future__ import annotations

import argparse
import contextlib
import sys

import numpy as np

from .diag_count_law import lambda_and_samples, point_args, replaced_count

#: Places of ``s``: Tracy–Widom scales from the prediction's fold.
Y_PARTS = (-20.0, -15.0, -10.0, -6.0, -3.0, 0.0, 2.0, 4.0, 6.0, 12.0)

#: The targets He1 + He2/2 and He1 + He3/sqrt 6, and the quadratic sigma He1 + He2/2 (the same expression).
HE2, HE3, QUAD = "hermite(0, 1, 0.5)", "hermite(0, 1, 0, 0.4082482904638631)", "hermite(0, 1, 0.5)"

#: The points of ``--all``: ``(activation, target, alpha1, alpha2)``, reused, ``N = d``, ``n = 2N``; ``alpha2 =
#: None``: one step (``eta2 = 0``).
PART_POINTS = [("gelu", HE2, 0.4, None), ("gelu", HE3, 0.4, None), ("gelu", HE2, 0.4, 0.4), ("gelu", HE3, 0.2, 0.4),
               (QUAD, HE2, 0.2, 0.3), (QUAD, HE2, 0.4, 0.4), (QUAD, HE3, 0.2, 0.2), ("erf", HE3, 0.0, 0.4)]

#: ``M``'s most extreme eigen-directions taken out of a draw: the ``K`` of the prediction at ``N = d``, ``n = 2N``.
EXTREME_DIRECTIONS = 12


def step_sizes(N: int, a1: float, a2: float | None) -> tuple[float, float]:
    """``(eta1, eta2) = (N^alpha1, N^alpha2)``; ``alpha2 = None``: one step, ``eta2 = 0``."""
    return float(N) ** a1, 0.0 if a2 is None else float(N) ** a2


def drawn_parts(act: str, tgt: str, a1: float, a2: float, *, N: int, s, draws: int, seed: int = 1000,
                K: int = EXTREME_DIRECTIONS):
    """``(all, bulk)``, each ``draws x len(s)``: the number of singular values of ``W_2`` above each ``s``, and of
    ``W_2 V_r`` (``M``'s ``K`` eigen-directions of largest ``|lambda|`` taken out), one row per draw (reused batch,
    ``N = d``, ``n = 2N``, the streams of :func:`benchmarks.diag_window_count.spawned_draw` from ``seed + k``)."""
    from rmtfl.numerics import gd_steps
    from rmtfl.theory import get_activation, make_target

    from .diag_window_count import spawned_draw

    sigma, target = get_activation(act), make_target(tgt)
    s = np.asarray(s, float)
    full, bulk = [], []
    for k in range(draws):
        W0, a, X, y = spawned_draw(N, target, seed + k)
        W = gd_steps(sigma, W0, a, (X, y), etas=step_sizes(N, a1, a2))
        lam, V = np.linalg.eigh(X.T @ (y[:, None] * X) / X.shape[0])
        rest = V[:, np.argsort(-np.abs(lam))[K:]]
        full.append((np.linalg.svd(W, compute_uv=False)[:, None] > s).sum(0))
        bulk.append((np.linalg.svd(W @ rest, compute_uv=False)[:, None] > s).sum(0))
    return np.array(full, float), np.array(bulk, float)


#: How far off the real axis the shift is read, in Tracy–Widom scales (:func:`shift_below`): it moves by less than
#: 0.05 values from a third of it (docs/theory/two_step_attempts.md §38).
SHIFT_ETA = 0.003


def shift_below(bulk, columns, fold: float, scale: float, points: int = 201, eta: float = SHIFT_ETA,
                rough: bool = False):
    """``(y, shift)``: the left-out ``columns``' spectral shift (:func:`benchmarks.diag_column_shift.left_out_shift`)
    at ``s = fold + y scale`` from 40 scales (or 30 % of the fold) below the fold up to it, on ``points`` places,
    ``eta`` Tracy–Widom scales off the axis, its kernels solved to convergence
    (:func:`benchmarks.diag_column_shift.shift_on`) and the shift taken as zero at the fold itself.
    ``rough``: as attempt 37 first read it (docs/theory/two_step_attempts.md §38), on 321 places a tenth of the
    grid's step off the axis, with the bulk's own eight levels of twelve sweeps, and zero at the grid's last place
    below the fold."""
    from .diag_column_shift import left_out_shift, shift_on

    y = np.linspace(max(-40.0, -0.3 * fold / scale), 0.0, 321 if rough else points)
    x = (fold + y * scale) ** 2
    if rough:
        t, _ = bulk.resolvent_below(x, 0.1 * (x[1] - x[0]))
        below, out = x < bulk.x_edge, np.zeros_like(x)
        out[below] = left_out_shift(bulk, x[below], t[below], columns)
        return y, out
    return y, shift_on(bulk, x, columns, eta * 2.0 * fold * scale)


def jittered(grid, mu, fold: float, scale: float, shift) -> np.ndarray:
    """The extreme part read through the edge's jitter on ``grid`` (module docstring): ``mu`` the single samples'
    mean count there, ``shift = (y, values)`` of :func:`shift_below`."""
    from .diag_critical_window import tw_jitter

    delta, w = tw_jitter()
    y = (np.asarray(grid, float) - fold) / scale
    inside = np.subtract.outer(y, delta)
    under = inside < 0                                   # the moved edge above s
    above = np.interp(np.maximum(grid, fold), grid, mu) * (1.0 - under @ w)
    mu0 = float(np.interp(fold, grid, mu))
    below = under * (mu0 + np.interp(inside, shift[0], shift[1], left=shift[1][0], right=0.0))
    return above + below @ w


@contextlib.contextmanager
def windowed(seen: dict | None = None, rough: bool = False):
    """Within the block the prediction's count reads the parts together (module docstring): the bulk of ``d - K``
    columns (:func:`benchmarks.diag_column_shift.column_shift` without its shift) and :func:`jittered` in place of
    ``mu``; ``seen`` (a dict, yielded) receives ``"windowed"``: ``(grid, Lambda)``; ``rough``: the shift as
    :func:`shift_below` reads it with ``rough``."""
    from rmtfl.theory._two_step.counting import count_window
    from rmtfl.theory._two_step.poisson_count import edge_fit, poisson_count

    from .diag_column_shift import column_shift, point_left_out_columns

    def counted(seen, laws, bulk_top, fold, *, N, psi):
        grid, lam, mu = lambda_and_samples(laws, bulk_top, fold)
        scale = edge_fit(bulk_top)[1]
        columns = point_left_out_columns(*seen["point"], seen["bulk"], N=N, psi=psi)
        new = lam - mu + jittered(grid, mu, fold, scale, shift_below(seen["bulk"], columns, fold, scale,
                                                                     rough=rough))
        seen["windowed"] = (grid, new)
        return poisson_count(grid, new, laws.fixed, count_window(N, psi), laws=laws.laws)

    with column_shift("without", shift=False), replaced_count(counted, seen) as got:
        yield got


#: The bulk's top values read off its density on this many points, with this many levels of ``eta`` and sweeps
#: at each (:func:`fine_top`; the prediction's are 80, 8 and 12).
FINE_TOP = (640, 16, 40)


@contextlib.contextmanager
def fine_top():
    """Within the block the widened bulk's top values are read off its density solved to convergence on a fine grid
    (:data:`FINE_TOP`; docs/theory/two_step_attempts.md §39): the prediction's own reading lifts them in a thin
    tail (docs/theory/two_step.md §9.2)."""
    from rmtfl.theory._two_step import widened_bulk

    base = widened_bulk.WidenedBulk.top_values

    def top_values(self, count, *, points=80, levels=8, sweeps=12):
        return base(self, count, points=FINE_TOP[0], levels=FINE_TOP[1], sweeps=FINE_TOP[2])
    widened_bulk.WidenedBulk.top_values = top_values
    try:
        yield
    finally:
        widened_bulk.WidenedBulk.top_values = base


@contextlib.contextmanager
def reading(*, rough: bool = False, fine: bool = False, window: bool = True):
    """The count read with :func:`windowed` (``window``; ``rough`` as it takes it) over the bulk's top values of
    :func:`fine_top` (``fine``), or as the prediction reads them."""
    with contextlib.ExitStack() as stack:
        if fine:
            stack.enter_context(fine_top())
        if window:
            stack.enter_context(windowed(rough=rough))
        yield


def point_rows(path: str, act: str, tgt: str, *, N: int, own: bool, pool: str | None, context) -> None:
    """Per reused point of the acceptance grid of ``act`` and ``tgt`` whose count is not 1 everywhere: the draws'
    median count, spread and mean fitted edge, and the predicted count and fitted edge as it is and within
    ``context()``."""
    from . import bench_two_step_finite_n as bench
    from .diag_m_spike import load_cache

    cache, draws = load_cache(path, pool), 49 if pool else 25
    print(f"{act}, {tgt}, N = {N}, reused, {draws} draws a point: the draws' median count [range] and mean fitted "
          "edge | the prediction's count and fitted edge as it is | in the variant, and its fold")
    for a1 in bench.GRID:
        for a2 in bench.GRID:
            rows = cache.get(bench.cache_key(act, tgt, "reused", a1, a2, N, own=own), [])[:draws]
            if len(rows) < draws:
                continue
            r0 = bench.compare_cell(act, tgt, "reused", a1, a2, N, rows)
            with context():
                r1 = bench.compare_cell(act, tgt, "reused", a1, a2, N, rows)
            if max(r0["sim_count"], r0["pred_count"], r1["pred_count"]) <= 1:
                continue
            lo, hi = r0["count_spread"]
            print(f"  ({a1}, {a2}) draws {r0['sim_count']} [{lo}-{hi}] {r0['edge_sim']:.4f} | as is "
                  f"{r0['pred_count']} {r0['edge_pred']:.4f} | {r1['pred_count']} {r1['edge_pred']:.4f} "
                  f"(fold {r1['edge_fold']:.4f})")


def _predict(act, tgt, a1, a2, N):
    """``two_step(..., N=N)`` at a reused point, ``N = d``, ``n = 2N``, ``eta`` of :func:`step_sizes`."""
    from rmtfl.theory import two_step

    eta1, eta2 = step_sizes(N, a1, a2)
    return two_step(act, tgt, psi=1.0, phi=2.0, eta1=eta1, eta2=eta2, N=N)


def _captured(context, act, tgt, a1, a2, N):
    """The prediction's count laws, bulk top values, fold, widened bulk and point, made within ``context``."""
    from rmtfl.theory._two_step.counting import count_through_process

    got = {}

    def counted(seen, laws, bulk_top, fold, *, N, psi):
        got.update(laws=laws, bulk_top=np.asarray(bulk_top, float), fold=fold, bulk=seen["bulk"],
                   point=seen["point"], psi=psi)
        return count_through_process(laws, bulk_top, fold, N=N, psi=psi)

    with context, replaced_count(counted):
        _predict(act, tgt, a1, a2, N)
    return got


def predicted_parts(act: str, tgt: str, a1: float, a2: float, *, N: int, ys=Y_PARTS) -> dict | None:
    """The prediction's parts at ``s = fold + y scale`` for each ``y`` of ``ys`` (module docstring): ``"s"``,
    ``"fold"``, ``"scale"``; ``"bulk"`` and ``"bulk_dK"`` (each with the spikes of ``P``), ``"mu"``, ``"shift"``,
    ``"all"`` (the count's ``Lambda`` plus the spikes of ``P``), ``"windowed"`` (the parts together through the edge's
    window, :func:`windowed`, with them); ``None`` where the count is not read through the Poisson process (no single
    samples)."""
    from rmtfl.theory._two_step.poisson_count import edge_fit

    from .diag_column_shift import column_shift, point_left_out_columns

    got = _captured(contextlib.nullcontext(), act, tgt, a1, a2, N)
    if not got:
        return None
    fold, bulk = got["fold"], got["bulk"]
    grid, lam, mu = lambda_and_samples(got["laws"], got["bulk_top"], fold)
    scale = edge_fit(got["bulk_top"])[1]
    s = fold + np.asarray(ys, float) * scale
    fixed = np.asarray(got["laws"].fixed, float)
    spikes = (fixed[None, :] > s[:, None]).sum(1)
    pa, pt, kw = got["point"]
    cols = point_left_out_columns(pa, pt, kw, bulk, N=N, psi=got["psi"])
    y_sh, sh = shift_below(bulk, cols, fold, scale)
    shift = np.interp(np.asarray(ys, float), y_sh, sh, right=0.0)
    dk = _captured(column_shift("without", shift=False), act, tgt, a1, a2, N)
    seen = {}
    with windowed(seen):
        _predict(act, tgt, a1, a2, N)
    g2, lam2, mu2 = lambda_and_samples(dk["laws"], dk["bulk_top"], dk["fold"])
    spikes2 = (np.asarray(dk["laws"].fixed, float)[None, :] > s[:, None]).sum(1)
    mus = np.interp(s, grid, mu)
    return dict(s=s, fold=fold, scale=scale, bulk=np.interp(s, grid, lam - mu) + spikes,
                bulk_dK=np.interp(s, g2, lam2 - mu2) + spikes2, mu=mus, shift=shift,
                all=np.interp(s, grid, lam) + spikes, windowed=np.interp(s, *seen["windowed"]) + spikes2)


def part_table(act: str, tgt: str, a1: float, a2: float, *, N: int, draws: int, seed: int = 1000) -> None:
    pred = predicted_parts(act, tgt, a1, a2, N=N)
    if pred is None:
        print(f"{act}, {tgt}, ({a1}, {a2}): the count is not read through the process here (no single samples)")
        return
    full, bulk = drawn_parts(act, tgt, a1, a2, N=N, s=pred["s"], draws=draws, seed=seed)
    extreme = full - bulk

    def se(v):
        return v.std(0, ddof=1) / np.sqrt(len(v))

    print(f"{act}, {tgt}, ({a1}, {'one step' if a2 is None else a2}), N = {N}, {draws} draws (seeds {seed} on): "
          f"values above s = fold + y scale (fold {pred['fold']:.4f}, scale {pred['scale']:.4g}); "
          f"K = {EXTREME_DIRECTIONS} directions of M")
    rows = [("y", np.array(Y_PARTS), "7.0f"),
            ("all: draws", full.mean(0), "7.2f"), ("  (s.e.)", se(full), "7.2f"), ("  predicted", pred["all"], "7.2f"),
            ("bulk: draws", bulk.mean(0), "7.2f"), ("  d - K columns", pred["bulk_dK"], "7.2f"),
            ("  d columns", pred["bulk"], "7.2f"),
            ("extreme: draws", extreme.mean(0), "7.2f"), ("  (s.e.)", se(extreme), "7.2f"),
            ("  mu", pred["mu"], "7.2f"), ("  mu + shift", pred["mu"] + pred["shift"], "7.2f"),
            ("all: windowed", pred["windowed"], "7.2f")]
    for name, v, f in rows:
        print(f"  {name:16s}" + "".join(format(x, f) for x in v))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--N", type=int, default=1000)
    ap.add_argument("--act", default="gelu")
    ap.add_argument("--target", default=HE2)
    ap.add_argument("--alphas", default="0.4,0.4", help="alpha1,alpha2 (eta_t = N^alpha_t)")
    ap.add_argument("--one-step", action="store_true", help="eta2 = 0 (alpha2 of --alphas unused)")
    ap.add_argument("--all", action="store_true", help="the points of PART_POINTS instead of one")
    ap.add_argument("--draws", type=int, default=12, help="draws simulated at each point")
    ap.add_argument("--seed", type=int, default=1000, help="the first draw's seed")
    ap.add_argument("--grid", default=None, metavar="CACHE",
                    help="the acceptance grid's reused draws (bench_two_step_finite_n --cache): the parts together "
                         "through the edge's window beside the prediction as it is, instead of the tables")
    ap.add_argument("--own-seeds", action="store_true", help="with --grid: a cache of --own-seeds")
    ap.add_argument("--pool", default=None, metavar="OWN_CACHE",
                    help="with --grid: each point's own draws after the shared ones, 49 a point")
    ap.add_argument("--rough-shift", action="store_true",
                    help="with --grid: the left-out columns' shift as first read (docs/theory/two_step_attempts.md §38)")
    ap.add_argument("--fine-top", action="store_true",
                    help="the bulk's top values off its converged density (docs/theory/two_step_attempts.md §39)")
    ap.add_argument("--no-window", action="store_true", help="with --grid --fine-top: the count read as it is")
    ap.add_argument("--points", action="store_true", help="with --grid: per point of --act and --target")
    a = ap.parse_args(argv)
    a1, a2 = point_args(ap, a, cache_parts=())
    if a.N < 4 * EXTREME_DIRECTIONS:
        ap.error(f"--N must be at least {4 * EXTREME_DIRECTIONS}, got {a.N}")
    if (a.own_seeds or a.pool or a.rough_shift or a.no_window or a.points) and not a.grid:
        ap.error("--own-seeds, --pool, --rough-shift, --no-window and --points go with --grid")
    if a.own_seeds and a.pool:
        ap.error("--pool follows the shared draws of --grid with each point's own: it does not take --own-seeds")
    if a.no_window and (a.rough_shift or not a.fine_top):
        ap.error("--no-window reads the count as it is: it goes with --fine-top and not with --rough-shift")
    if a.grid:
        from .diag_m_spike import run_grid

        def context(target=None):
            return reading(rough=a.rough_shift, fine=a.fine_top, window=not a.no_window)
        if a.points:
            point_rows(a.grid, a.act, a.target, N=a.N, own=a.own_seeds, pool=a.pool, context=context)
            return 0
        name = " + ".join((["fine top"] if a.fine_top else [])
                          + ([] if a.no_window else ["windowed" + (", rough shift" if a.rough_shift else "")]))
        run_grid(a.grid, N=a.N, batch="reused", own=a.own_seeds, pool=a.pool, draws=49 if a.pool else 25,
                 variant=(name, context))
        return 0
    with fine_top() if a.fine_top else contextlib.nullcontext():
        for act, tgt, b1, b2 in (PART_POINTS if a.all else [(a.act, a.target, a1, None if a.one_step else a2)]):
            part_table(act, tgt, b1, b2, N=a.N, draws=a.draws, seed=a.seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
