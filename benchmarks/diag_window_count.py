"""The single samples' count read through a spike's finite-N window (docs/theory/two_step_attempts.md §35; measured
on the acceptance page's cached draws and on draws of its own, not kept).

The count through the Poisson process (docs/theory/two_step.md §8.3) adds, for each single sample whose outlier
lies above the fold, one value above every ``s`` below the fold.  One spiked column of a sample covariance adds
fewer (:mod:`benchmarks.diag_critical_window`): deep below the edge its spectral shift, about one half, and within a
few Tracy–Widom scales of the edge a window that :func:`~benchmarks.diag_critical_window.window_model` describes.
Here that window replaces the samples' part of ``Lambda`` (the values the bulk's own count leaves):

* each point of the samples' location measure above the fold (``-dmu``, ``mu(s) = sum_b n_b P_b(S > s)`` as the
  prediction blends it through the fold) at ``x`` Tracy–Widom scales above the fold adds
  ``K(y; x) = E_delta[1{0 <= y - delta < x} + 1{y - delta < 0} shift_x(y - delta)]`` values above ``s = fold +
  y scale`` (:func:`location_kernel`; ``shift_x`` the Marchenko–Pastur spike's shift at the strength whose outlier
  lies ``x`` scales up, ``delta`` the centred Tracy–Widom jitter of the edge, ``scale`` the bulk's own, fitted to its
  top values);
* with ``subcritical`` (the default), each sample the bulk leaves out whose column lies below its threshold, of
  strength ``q = Q_b(edge)`` (:func:`benchmarks.diag_column_shift.left_out_columns`), adds the shift of the
  Marchenko–Pastur spike ``q`` times the threshold's, read the same way (:func:`subcritical_kernel`).

* ``--part lambda``: at one point, the draws' mean number of values above ``s`` beside the prediction's ``Lambda``
  plus the spikes of ``P``, as it is and windowed, from 30 scales below the fold to 20 above.
* ``--part grid``: per point of a page cache (reused), the count and fitted edge as it is and windowed, the root mean
  square of each ``Lambda`` against the draws' mean count at 15 to 2 scales around the fold; then per activation
  and target the points passing the count and all three criteria.
* ``--part remove``: at one point, what the batch's ``K`` most extreme samples (by ``|y|``) add above each ``s``,
  measured: the same draw's two steps with and without them (their targets set to zero, so their terms leave the
  gradients exactly and ``n`` is kept), beside the samples' part of ``Lambda`` as it is and windowed; ``--step
  first`` or ``second`` takes them out of that step only.
* ``--part ranks``: the same for each of the 12 most extreme samples taken out alone, beside the law's probability
  that its ``k``-th largest single-sample outlier lies above ``s``.

    python -m benchmarks.diag_window_count --part lambda --cache CACHE/n1000.json --N 1000 --act gelu \\
        --target "hermite(0, 1, 0, 0.4082482904638631)" --alphas 0.2,0.4
    python -m benchmarks.diag_window_count --part grid --cache CACHE/n1000.json --N 1000
    python -m benchmarks.diag_window_count --part remove --N 1000 --act gelu --alphas 0.2,0.4 --draws 12
    python -m benchmarks.diag_window_count --part ranks --N 1000 --act gelu --alphas 0.4,0.2 --draws 12
"""
from __future__ import annotations

import argparse
import functools
import sys

import numpy as np

from rmtfl.theory._two_step.counting import count_window
from rmtfl.theory._two_step.poisson_count import edge_fit, poisson_count, samples_above

from .diag_column_shift import point_left_out_columns
from .diag_count_law import (add_point_args, cache_points, lambda_and_samples, lambda_at_point, point_args,
                             prediction_in, replaced_count)
from .diag_critical_window import mp_shift, spike_strength, tw_jitter
from .diag_poisson_count import drawn_total

#: Nodes of the Tracy–Widom jitter (the kernels move by less than 0.005 from 121 to 281).
JITTER_POINTS = 121

#: The outliers' places of :func:`location_kernel`'s table, in Tracy–Widom scales above the fold (beyond its top
#: the shift below the edge is the top's).
X_TABLE = np.linspace(0.0, 60.0, 241)

#: The steps :func:`removed_counts` takes the samples out of.
STEPS = ("both", "first", "second")

#: Where :func:`grid`'s root mean square compares each ``Lambda`` with the draws, in scales from the fold.
Y_COMPARE = np.array([-15.0, -10.0, -6.0, -4.0, -2.0, -1.0, 0.0, 1.0, 2.0])


@functools.lru_cache(maxsize=4)
def _shift_table(N: int, d: int, depth: float = 80.0, points: int = 1601):
    """``(v, shifts)``: ``v`` from ``-depth`` to just below 0 and the shift below the edge of each spike of
    :data:`X_TABLE`."""
    v = np.linspace(-depth, 0.0, points)
    v[-1] = -1e-9
    return v, np.array([mp_shift(spike_strength(x, N, d), v, N=N, d=d) for x in X_TABLE])


@functools.lru_cache(maxsize=4)
def _jitter(points: int):
    """``(delta, density, cdf)`` of the centred Tracy–Widom jitter on its nodes (:func:`tw_jitter`)."""
    delta, w = tw_jitter(points)
    dens = w / (delta[1] - delta[0])
    cdf = np.concatenate([[0.0], np.cumsum(0.5 * (dens[1:] + dens[:-1]) * np.diff(delta))])
    return delta, dens, cdf / cdf[-1]


def _below(y, v, rows, points: int) -> np.ndarray:
    """``E_delta[1{y - delta < 0} row(y - delta)]`` for each ``y`` and row (``rows``: ``k x len(v)`` on the grid
    ``v`` below the edge), the jitter's density interpolated between its nodes (``len(y) x k``)."""
    delta, dens, _ = _jitter(points)
    dv = np.gradient(v)
    dv[[0, -1]] *= 0.5                                          # the trapezoid's end weights
    P = np.interp(np.subtract.outer(np.asarray(y, float), v), delta, dens, left=0.0, right=0.0) * dv
    return P @ rows.T


def location_kernel(y, x, *, N: int, d: int, points: int = JITTER_POINTS) -> np.ndarray:
    """``K[i, k]``: the values a spike whose outlier lies ``x[k] >= 0`` Tracy–Widom scales above the edge adds above
    ``y[i]`` scales from it (module docstring), the Marchenko–Pastur spike at ``c = N / d``: below the edge the shift
    read through the jitter's density, above it ``P(y - x < delta <= y)``."""
    v_tab, tab = _shift_table(N, d)
    x = np.maximum(np.asarray(x, float), 0.0)
    xt = np.minimum(x, X_TABLE[-1])                  # beyond the table the shift below the edge is its top's
    j = np.clip(np.searchsorted(X_TABLE, xt) - 1, 0, X_TABLE.size - 2)
    f = ((xt - X_TABLE[j]) / (X_TABLE[j + 1] - X_TABLE[j]))[:, None]
    rows = tab[j] * (1 - f) + tab[j + 1] * f
    y = np.asarray(y, float)
    delta, _, cdf = _jitter(points)
    above = np.interp(y, delta, cdf, left=0.0, right=1.0)[:, None] \
        - np.interp(np.subtract.outer(y, x), delta, cdf, left=0.0, right=1.0)
    return _below(y, v_tab, rows, points) + above


def subcritical_kernel(y, q, *, N: int, d: int, points: int = JITTER_POINTS) -> np.ndarray:
    """``S[i, k]``: the values a spike of ``q[k] <= 1`` times the threshold's strength adds above ``y[i]`` scales
    from the edge: its shift below the edge read through the jitter's density (none above it)."""
    v_tab, _ = _shift_table(N, d)
    crit = 1.0 + (d / N) ** 0.5
    rows = np.array([mp_shift(qk * crit, v_tab, N=N, d=d) for qk in np.asarray(q, float)]).reshape(-1, v_tab.size)
    return _below(y, v_tab, rows, points)


def windowed_lambda(laws, bulk_top, fold: float, *, N, psi, subcritical=None):
    """``(grid, Lambda windowed, Lambda as it is, samples' part as it is, windowed, scale)`` (module docstring);
    ``subcritical``: ``(q, counts)`` of the samples left out below their threshold, or ``None``."""
    grid, lam, mu = lambda_and_samples(laws, bulk_top, fold)
    _, sig = edge_fit(bulk_top)
    n, d = int(round(N)), int(round(N / psi))
    up = grid >= fold
    s_up, mu_up = grid[up], mu[up]
    mass = np.maximum(mu_up[:-1] - mu_up[1:], 0.0)                   # the location measure above the fold
    x = (0.5 * (s_up[:-1] + s_up[1:]) - fold) / sig
    y = (grid - fold) / sig
    win = location_kernel(y, x, N=n, d=d) @ mass
    if subcritical is not None and len(subcritical[0]):
        win = win + subcritical_kernel(y, subcritical[0], N=n, d=d) @ subcritical[1]
    return grid, lam - mu + win, lam, mu, win, sig


def windowing(subcritical: bool = True, seen: dict | None = None):
    """Within the block the prediction's count reads the windowed ``Lambda`` (module docstring); ``seen`` (a dict)
    receives each count's :func:`windowed_lambda` (``"lambda"``, with the spikes of ``P`` as a seventh entry) and
    the count's laws (``"laws"``) (:func:`benchmarks.diag_count_law.replaced_count`)."""
    def counted(seen, laws, bulk_top, fold, *, N, psi):
        sub = None
        if subcritical:
            bulk = seen["bulk"]
            V, c = point_left_out_columns(*seen["point"], bulk, N=N, psi=psi)
            q = psi * (V @ (bulk.wa * bulk.tau_rows(bulk.a, bulk.x_edge * (1 + 1e-7))[0]))
            keep = (q <= 1.0) & (c > 0)
            sub = (q[keep], c[keep])
        got = windowed_lambda(laws, bulk_top, fold, N=N, psi=psi, subcritical=sub)
        seen["lambda"], seen["laws"] = got + (laws.fixed,), laws
        return poisson_count(got[0], got[1], laws.fixed, count_window(N, psi), laws=laws.laws)

    return replaced_count(counted, seen)


def part_lambda(path: str, N: int, act: str, tgt: str, a1: float, a2: float, subcritical: bool,
                draws: int = 25) -> None:
    got = lambda_at_point(windowing(subcritical), path, act, tgt, a1, a2, N, draws)
    if got is None:
        return
    S, p, seen = got
    grid, lam, as_is, mu, win, sig, fixed = seen["lambda"]
    ys = np.array([-30, -20, -15, -10, -6, -4, -2, -1, 0, 1, 2, 4, 8, 12, 20])
    s = p.bulk_edge + ys * sig
    spikes = np.array([sum(v > x for v in fixed) for x in s])
    drawn = (S[:, :, None] > s[None, None, :]).sum(1)           # per draw, for the standard error
    print(f"{act}, {tgt}, ({a1}, {a2}), N = {N}, {len(S)} draws: mean number of values above s = fold + y scale "
          f"(fold {p.bulk_edge:.4f}, scale {sig:.4g}); Lambda plus the spikes of P as it is and windowed"
          f"{'' if subcritical else ' (no subcritical samples)'}; the samples' part of each")
    print("      y        s   draws (s.e.)   as it is   windowed   samples as it is / windowed")
    for k, yk in enumerate(ys):
        a, b = np.interp(s[k], grid, as_is) + spikes[k], np.interp(s[k], grid, lam) + spikes[k]
        print(f"  {yk:5.0f} {s[k]:8.4f} {drawn[:, k].mean():7.2f} ({drawn[:, k].std(ddof=1) / np.sqrt(len(S)):.2f}) "
              f"{a:10.2f} {b:10.2f}   {np.interp(s[k], grid, mu):6.2f} / {np.interp(s[k], grid, win):.2f}")


def grid(path: str, N: int, subcritical: bool, acts=None, draws: int = 25):
    """Per point of the cache (reused): ``(act, tgt, a1, a2, as it is, windowed)``, each the page's comparison
    (:func:`benchmarks.bench_two_step_finite_n.compare_cell`) with ``"lambda_rms"``, the root mean square of its
    ``Lambda`` plus the spikes against the draws' mean count at :data:`Y_COMPARE` (``None`` without single
    samples)."""
    from .bench_two_step_finite_n import compare_cell

    for act, tgt, a1, a2, S, _ in cache_points(path, N, "reused", draws):
        if acts and act not in acts:
            continue
        cells = []
        with windowing(subcritical) as seen:
            cells.append(compare_cell(act, tgt, "reused", a1, a2, N, [{"sv": v} for v in S]))
        cells.append(compare_cell(act, tgt, "reused", a1, a2, N, [{"sv": v} for v in S]))   # as it is
        gaps = [None, None]
        if "lambda" in seen:
            g, lam, as_is, _, _, sig, fixed = seen["lambda"]
            s = cells[0]["edge_fold"] + Y_COMPARE * sig
            spikes = np.array([sum(v > x for v in fixed) for x in s])
            drawn = drawn_total(S, s)
            gaps = [float(np.sqrt(np.mean((np.interp(s, g, f) + spikes - drawn) ** 2))) for f in (as_is, lam)]
        yield act, tgt, a1, a2, dict(cells[1], lambda_rms=gaps[0]), dict(cells[0], lambda_rms=gaps[1])


def spawned_draw(N: int, target, seed: int):
    """``(W_0, a, X, y)`` of one draw at a reused point (``N = d``, ``n = 2N``), from four streams spawned from
    ``seed``: first layer, second layer, inputs, target noise (the draws of :func:`removed_counts`)."""
    from rmtfl.numerics import init_first_layer, init_second_layer, sample_inputs, sample_targets

    g_w, g_a, g_x, g_e = np.random.default_rng(seed).spawn(4)
    a = init_second_layer(N, rng=g_a)
    X = sample_inputs(2 * N, N, rng=g_x)
    return init_first_layer(N, N, rng=g_w), a, X, sample_targets(X, target=target, rng=g_e)


def removed_counts(act: str, tgt: str, a1: float, a2: float, N: int, s, removals, *, draws: int, seed: int = 777,
                   step: str = "both"):
    """``(mean, se)``, each ``len(removals) x len(s)``: the number of singular values of ``W_2`` above each ``s``
    less the same draw's with the samples of ranks ``removals[i]`` (0 the most extreme by ``|y|``) taken out of
    ``step`` (``"both"``, ``"first"`` or ``"second"``: their targets set to zero there; reused batch, ``N = d``,
    ``n = 2N``), over ``draws`` draws (seeds ``seed``, ``seed + 1``, ...)."""
    if step not in STEPS:
        raise ValueError(f"step must be one of {STEPS}, got {step!r}")
    from rmtfl.numerics import gd_steps
    from rmtfl.theory import get_activation, make_target

    sigma, target, etas = get_activation(act), make_target(tgt), (N ** a1, N ** a2)
    s = np.asarray(s, float)
    out = np.zeros((draws, len(removals), s.size))
    for k in range(draws):
        W0, a, X, y = spawned_draw(N, target, seed + k)
        order = np.argsort(-np.abs(y))

        def above(y_used):
            ys = (y_used if step != "second" else y, y_used if step != "first" else y)
            sv = np.linalg.svd(gd_steps(sigma, W0.copy(), a, [(X, ys[0]), (X, ys[1])], etas=etas), compute_uv=False)
            return (sv[:, None] > s[None, :]).sum(0)
        full = above(y)
        for i, ranks in enumerate(removals):
            y_out = y.copy()
            y_out[order[list(ranks)]] = 0.0
            out[k, i] = full - above(y_out)
    return out.mean(0), out.std(0, ddof=1) / np.sqrt(draws)


def part_remove(N: int, act: str, tgt: str, a1: float, a2: float, draws: int, step: str = "both") -> None:
    from rmtfl.theory._two_step.finite_n import extreme_ranks

    got = prediction_in(windowing(True), act, tgt, a1, a2, N)
    if got is None:
        return
    p, seen = got
    grid_s, _, _, mu, win, sig, _ = seen["lambda"]
    ys = np.array([-30.0, -15.0, -6.0, -2.0, 0.0, 2.0, 6.0])
    s = p.bulk_edge + ys * sig
    K = extreme_ranks(N=N, psi=1.0, phi=2.0, phi2=None, batch="reused")
    ks = sorted({1, 4, K, 2 * K})
    mean, se = removed_counts(act, tgt, a1, a2, N, s, [range(k) for k in ks], draws=draws, step=step)
    where = "" if step == "both" else f" (taken out of the {step} step only)"
    print(f"{act}, {tgt}, ({a1}, {a2}), N = {N}, reused, {draws} draws: values the K most extreme samples{where} "
          f"add above s = fold + y scale (fold {p.bulk_edge:.4f}, scale {sig:.4g}), measured (standard error); the "
          f"samples' part of Lambda as it is and windowed (the {K} the bulk leaves out)")
    print("       K " + " ".join(f"{y:>12.0f}" for y in ys))
    for i, k in enumerate(ks):
        print(f"  {k:6d} " + " ".join(f"{m:6.2f} ({e:.2f})" for m, e in zip(mean[i], se[i])))
    print("  as is  " + " ".join(f"{v:12.2f}" for v in np.interp(s, grid_s, mu)))
    print("  window " + " ".join(f"{v:12.2f}" for v in np.interp(s, grid_s, win)))


def part_ranks(N: int, act: str, tgt: str, a1: float, a2: float, draws: int, ranks: int = 12) -> None:
    from scipy import stats

    got = prediction_in(windowing(False), act, tgt, a1, a2, N)
    if got is None:
        return
    p, seen = got
    law, sig = seen["laws"].below, seen["lambda"][5]
    ys = np.array([0.0, 2.0, 6.0])
    s = p.bulk_edge + ys * sig
    p_s = samples_above(law, s) / law.sizes[0]            # one batch part with a reused batch
    laws = np.array([stats.binom.sf(k - 1, law.sizes[0], p_s) for k in range(1, ranks + 1)])
    mean, se = removed_counts(act, tgt, a1, a2, N, s, [[k] for k in range(ranks)], draws=draws)
    print(f"{act}, {tgt}, ({a1}, {a2}), N = {N}, reused, {draws} draws: the values the k-th most extreme sample adds "
          f"above s = fold + y scale, taken out alone (standard error), beside the law's P(S_(k) > s) (fold "
          f"{p.bulk_edge:.4f}, scale {sig:.4g})")
    print("     k " + " ".join(f"{y:>12.0f}" for y in ys) + "  | " + " ".join(f"{y:>5.0f}" for y in ys))
    for k in range(ranks):
        print(f"  {k + 1:4d} " + " ".join(f"{m:6.2f} ({e:.2f})" for m, e in zip(mean[k], se[k])) + "  | "
              + " ".join(f"{v:5.2f}" for v in laws[k]))
    print("   sum " + " ".join(f"{v:12.2f}" for v in mean.sum(0)) + "  | " + " ".join(f"{v:5.2f}" for v in laws.sum(0)))


def part_grid(path: str, N: int, subcritical: bool, acts=None, draws: int = 25) -> None:
    rows, gained, lost = {}, 0, 0

    def ok(c):
        return c["values_ok"] and c["count_ok"] and c["edge_ok"]
    print(f"N = {N}, reused: count / fitted edge as it is | windowed{'' if subcritical else ' (no subcritical)'}, "
          "the draws' median count and mean fitted edge; root mean square of Lambda against the draws near the fold")
    for act, tgt, a1, a2, old, new in grid(path, N, subcritical, acts, draws):
        t = rows.setdefault((act, tgt), [np.zeros(3, int), np.zeros(3, int), [], []])
        for k, c in enumerate((old, new)):
            t[k] += [c["count_ok"], c["edge_ok"], ok(c)]
            if c["lambda_rms"] is not None:
                t[2 + k].append(c["lambda_rms"])
        gained, lost = gained + (ok(new) and not ok(old)), lost + (ok(old) and not ok(new))
        rms = "" if old["lambda_rms"] is None else f"; Lambda {old['lambda_rms']:.2f} | {new['lambda_rms']:.2f}"
        print(f"  {act:20s} {tgt:38s} ({a1}, {a2}) draws {old['sim_count']}, {old['edge_sim']:.4f}: "
              f"{old['pred_count']}, {old['edge_pred']:.4f} | {new['pred_count']}, {new['edge_pred']:.4f}{rms}",
              flush=True)
    print("points passing the count / the edge / all three, as it is | windowed; mean root mean square of Lambda")
    for (act, tgt), (a, b, ra, rb) in rows.items():
        r = f"; {np.mean(ra):.2f} | {np.mean(rb):.2f}" if ra else ""
        print(f"  {act:20s} {tgt:38s} {a[0]}/{a[1]}/{a[2]} | {b[0]}/{b[1]}/{b[2]}{r}")
    total = [sum(t[k] for t in rows.values()) for k in (0, 1)]
    print(f"  all {total[0][0]}/{total[0][1]}/{total[0][2]} | {total[1][0]}/{total[1][1]}/{total[1][2]}; "
          f"gained {gained}, lost {lost}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", choices=("lambda", "grid", "remove", "ranks"), required=True)
    add_point_args(ap, point_parts="lambda, remove, ranks", draw_parts="remove, ranks", alphas="0.2,0.4")
    ap.add_argument("--step", choices=STEPS, default="both", help="with --part remove: the step the samples leave")
    ap.add_argument("--no-subcritical", action="store_true", help="the samples above the fold alone")
    a = ap.parse_args(argv)
    sub = not a.no_subcritical
    a1, a2 = point_args(ap, a)
    if a.part == "remove":
        part_remove(a.N, a.act, a.target, a1, a2, a.draws, a.step)
    elif a.part == "ranks":
        part_ranks(a.N, a.act, a.target, a1, a2, a.draws)
    elif a.part == "lambda":
        part_lambda(a.cache, a.N, a.act, a.target, a1, a2, sub)
    else:
        part_grid(a.cache, a.N, sub, a.acts.split(";") if a.acts else None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
