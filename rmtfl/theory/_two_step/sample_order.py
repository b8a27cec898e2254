"""Order statistics of the outliers made by single samples (docs/theory/two_step.md §8.3).

Which samples of a batch stand out, and where, is random: the ``k``-th largest single-sample outlier is the
``k``-th largest of ``n`` independent column locations ``S_i``.  Sample ``i``'s column is an outlier beyond
``x = s^2`` when its realised strength ``psi (1/N) sum_j v_ij tau_j(x)`` exceeds 1 (``tau`` the row kernel of the
widened bulk, ``v_ij`` the column's variance in row ``j``); over the rows the strength has mean
``Q(x) = psi E_j[v tau]`` and standard deviation ``psi sqrt(Var_j(v tau) / N)``, so

    P(S > s) = sum_b mass_b * Phi((Q_b(s^2) - 1) / sd_b(s^2))

over bins ``b`` of the tail of the law of ``y`` whose mean strength is above 1 at the edge (isolated on average;
below the threshold the spread moves the edge on the Tracy-Widom scale and makes no outlier).  Then ``P(S_(k) > s) =
P(Binomial(n, P(S > s)) >= k)``; the prediction reports the mean of ``max(S_(k), edge)`` as the location and uses
the median of ``S_(k)`` for the count (a median count of simulated draws sees the ``k``-th outlier when its median
lies above the margin).  Both are taken over the outlier's rank among the spikes of ``P`` as well
(:func:`ranked_values`): where a sample can pass a spike, the two share their ranks from batch to batch.
Deterministic: no sampling, a fixed grid in ``s``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import special

from .bulk_edge import y_law
from .first_batch import carried_columns
from .sample_spikes import extreme_eigenvalues, sample_strengths, tail_bins, tail_refinement, y_law_truncated
from .widened_bulk import column_spike

__all__ = ["SampleLaw", "tail_law", "ranks_of", "order_statistics", "ranked_values", "rank_outliers", "outlier_laws",
           "sample_outliers", "column_parts", "S_GRID", "TAIL_MASS", "TAIL_BINS", "TAIL_SUB", "BAND"]

#: Points of the ``s`` grid between the edge and the largest location that matters.
S_GRID = 48

#: Fractions of batches of the band of a single-sample outlier: exceeded in 10 % and in 90 % of batches.
BAND = (0.1, 0.9)


@dataclass(frozen=True)
class SampleLaw:
    """The law of the single-sample outlier locations over batches (module docstring): ``tails[i, b] = P(S > grid[i])``
    for a sample of batch part ``b`` (``sizes[b]`` samples), on a grid in ``s`` from just above the edge.
    ``uncoupled``: where the columns are coupled to the spikes of ``P`` (:mod:`.sample_coupling`), the law of each
    column on its own (its location without ``P``), on the same grid."""

    grid: np.ndarray
    tails: np.ndarray
    sizes: tuple
    uncoupled: "SampleLaw | None" = None


def tail_law(tau, x_edge: float, x_guess: float, parts, *, N: float, psi: float, wa, shift=None) -> SampleLaw:
    """``P(S > s)`` per batch part on a grid from the edge to where it is negligible (module docstring).

    ``tau(x)``: the row kernel at ``x = s^2`` (``None`` inside the bulk); ``parts``: ``(mass, vmean, vm2, n)`` per
    batch part -- probability of each tail bin, ``E[v]`` and ``E[v^2]`` per bin and row (``bins x rows``), and the
    batch size; ``wa``: row weights; ``x_guess``: a location of the strongest bin (where the ``s`` grid starts
    looking for its top end).  One grid in ``s`` serves every part (one kernel evaluation per grid point).
    ``shift(s)``: the coupling of each bin's column to the spikes of ``P``, added to its strength
    (:func:`~rmtfl.theory._two_step.sample_coupling.law_shift`; ``None`` where it does not act); with it the law
    is the coupled one, each bin's ``P(S > s)`` made non-increasing in ``s`` (a column past the lowest spike of ``P``
    stays above every ``s`` below it), and the law without it is kept as ``uncoupled``.
    """
    s_e = math.sqrt(x_edge) * (1 + 1e-7)
    cache = {}
    # only columns isolated on average can stand out: below the BBP threshold an O(N^-1/2) spread of the strength
    # moves the edge on the Tracy-Widom scale, it does not make outliers (docs/theory/two_step.md §8.3)
    t_e = tau(s_e * s_e)
    above = [psi * (np.asarray(vmean) @ (wa * t_e)) > 1.0 if t_e is not None else np.zeros(len(m), bool)
             for m, vmean, _, _ in parts]

    def per_bin(s, coupled=False):
        """``P(S > s)`` of each bin's column, per part (``None`` inside the bulk)."""
        key = (s, coupled)
        if key not in cache:
            t = tau(s * s)
            c = shift(s) if coupled and t is not None else None
            out = None
            if t is not None:
                out = []
                wt = wa * t
                wtt = wt * t
                for ip, ((mass, vmean, vm2, _), ok) in enumerate(zip(parts, above)):
                    mq = vmean @ wt
                    var = np.maximum(vm2 @ wtt - mq**2, 0.0)
                    sd = psi * np.sqrt(var / N) + 1e-300
                    arg = psi * mq - 1.0 + (0.0 if c is None else c[ip])
                    out.append(special.ndtr(arg / sd) * ok)
            cache[key] = out
        return cache[key]

    masses = [np.asarray(m, dtype=float) for m, _, _, _ in parts]

    def tails(s):
        b = per_bin(s)
        return np.ones(len(parts)) if b is None else np.array([float(m @ v) for m, v in zip(masses, b)])

    nmax = max(p[3] for p in parts)
    s_t = max(math.sqrt(max(x_guess, x_edge)), s_e) * 1.2
    for _ in range(40):                                  # the top end: where P(S > s) is negligible
        if tails(s_t).max() * nmax < 1e-3:
            break
        s_t = s_e + 1.5 * (s_t - s_e)
    grid = s_e + (s_t - s_e) * np.linspace(0.0, 1.0, S_GRID) ** 2
    sizes = tuple(int(p[3]) for p in parts)
    law = SampleLaw(grid, np.array([tails(s) for s in grid]), sizes)
    if shift is None:
        return law
    out = np.empty_like(law.tails)
    rows = [per_bin(s, True) for s in grid]
    for ip, (mass, _, _, _) in enumerate(parts):
        sv = np.array([np.ones(len(mass)) if r is None else r[ip] for r in rows])
        sv = np.maximum.accumulate(sv[::-1], axis=0)[::-1]            # non-increasing in s, bin by bin
        out[:, ip] = sv @ np.asarray(mass, dtype=float)
    return SampleLaw(grid, out, sizes, uncoupled=law)


def _level(grid, F, p):
    """The ``s`` where the decreasing ``F`` (on ``grid``) falls to ``p``; ``None`` if it starts below ``p``."""
    if F[0] < p:
        return None
    j = min(max(int(np.searchsorted(-F, -p)), 1), grid.size - 1)   # first grid point with F <= p
    f0, f1 = F[j - 1], F[j]
    return float(grid[j - 1] + (grid[j] - grid[j - 1]) * ((f0 - p) / (f0 - f1) if f0 > f1 else 0.0))


def ranks_of(law: SampleLaw, ranks: int, *, with_bands: bool = False):
    """Per batch part, ``[(mean, median), ...]`` of the ``k``-th largest single-sample outlier, ``k = 1, 2, ...``,
    while its median lies above the edge (module docstring).

    ``with_bands``: also return, per part, ``(low, high)`` per rank -- the ``s`` exceeded by ``S_(k)`` in a
    fraction ``BAND[1]`` and ``BAND[0]`` of batches (``None`` where that is below the edge) -- while
    ``P(S_(k) > edge) >= BAND[0]``.
    """
    grid, s_e = law.grid, float(law.grid[0])
    result, bands = [], []
    for ip, n in enumerate(law.sizes):
        out, band = [], []
        for k in range(1, ranks + 1):
            F = special.bdtrc(k - 1, n, np.clip(law.tails[:, ip], 0.0, 1.0))   # P(S_(k) > s), decreasing in s
            if F[0] < BAND[0]:
                break
            band.append((_level(grid, F, BAND[1]), _level(grid, F, BAND[0])))  # (low, high) quantiles of S_(k)
            if F[0] >= 0.5:
                mean = s_e + float(np.sum(0.5 * (F[1:] + F[:-1]) * np.diff(grid)))
                out.append((mean, _level(grid, F, 0.5)))
        result.append(out)
        bands.append(band)
    return (result, bands) if with_bands else result


def order_statistics(tau, x_edge: float, x_guess: float, parts, *, N: float, psi: float, wa, ranks: int,
                     with_bands: bool = False):
    """:func:`ranks_of` the :func:`tail_law` of ``parts`` (arguments as there)."""
    return ranks_of(tail_law(tau, x_edge, x_guess, parts, N=N, psi=psi, wa=wa), ranks, with_bands=with_bands)


def ranked_values(law: SampleLaw, fixed, ranks: int, *, laws=None, spread: bool = False):
    """``[(mean, median), ...]`` of the ``r``-th largest value, ``r = 1..ranks``, of the ``fixed`` locations (the spikes
    of ``P``) together with the single-sample outliers of ``law`` (docs/theory/two_step.md §8.3, "Ranked values");
    with ``spread``, ``[(mean, median, sd), ...]``.

    Above ``s`` lie ``m(s)`` spikes and ``sum_b Binomial(n_b, P_b(S > s))`` sample outliers, so
    ``P(r-th value > s) = P(m(s) + sum_b Bin_b >= r)``; the mean is ``edge + integral of that over s > edge`` (of
    ``max(value, edge)``, as :func:`ranks_of`), the median where it falls to 1/2 (the edge when it starts below).
    Where a sample can pass a spike of ``P``, the ``r``-th value is sometimes the one and sometimes the other: this
    is what a mean over simulated draws of the ``r``-th singular value measures.  ``laws``: per spike ``None`` or its
    law over batches as ``(x, sf)``, ``P(spike > location + x) = sf`` on an ascending grid
    (docs/theory/two_step.md §8.5), the spikes independent of each other, so that ``m(s)`` is a sum of Bernoulli
    variables; by default (or where ``None``) a spike sits at its location in every batch.
    """
    fixed = np.asarray(fixed, dtype=float)
    laws = [None] * fixed.size if laws is None else list(laws)
    order = np.argsort(-fixed)
    fixed, laws = fixed[order], [laws[j] for j in order]
    s_e, top = float(law.grid[0]), float(law.grid[-1])
    moves = np.array([lw is not None for lw in laws], dtype=bool)
    still = fixed[~moves]                                              # spikes at their locations
    spread_out = [_law_points(m, lw, s_e) for m, lw in zip(fixed, laws) if lw is not None]
    end = max([top] + [float(x[-1]) for x in spread_out])
    inner = still[(still > s_e) & (still < end)]
    eps = 1e-9 * max(top, 1.0)
    grid = np.unique(np.concatenate([law.grid, inner - eps, inner + eps, *spread_out]))   # the steps of m(s) resolved
    above = _samples_above(law, grid, ranks)                          # P(q or more sample outliers above s)
    # the law of m(s): a spike at its location is above s or not; a spread one with the probability of its law
    p = (fixed[None, :] > grid[:, None]).astype(float)
    for j, lw in enumerate(laws):
        if lw is not None:
            p[:, j] = np.interp(grid - fixed[j], lw[0], lw[1], left=1.0, right=0.0)
    pm = np.zeros((grid.size, fixed.size + 1))
    pm[:, 0] = 1.0
    for j in range(fixed.size):
        pm[:, 1:] = pm[:, 1:] * (1 - p[:, j:j + 1]) + pm[:, :-1] * p[:, j:j + 1]
        pm[:, 0] *= 1 - p[:, j]
    dg = np.diff(grid)
    out = []
    for r in range(1, ranks + 1):
        # P(m + samples >= r) = sum_j P(m = j) P(samples >= r - j)
        F = sum(pm[:, j] * (above[:, r - j] if r - j > 0 else 1.0) for j in range(fixed.size + 1))
        v_r = float(still[r - 1]) if r <= still.size else -np.inf
        beyond = max(v_r - end, 0.0)                                   # spikes above the grid
        mean = s_e + float(np.sum(0.5 * (F[1:] + F[:-1]) * dg)) + beyond
        med = v_r if beyond > 0 else _level(grid, F, 0.5)
        med = s_e if med is None else med
        if not spread:
            out.append((mean, med))
            continue
        G = F * grid        # E[max(value, edge)^2] = edge^2 + integral of 2 s P(value > s)
        m2 = s_e**2 + float(np.sum((G[1:] + G[:-1]) * dg)) + (v_r**2 - end**2 if beyond > 0 else 0.0)
        out.append((mean, med, math.sqrt(max(m2 - mean * mean, 0.0))))
    return out


#: A single sample's rank within this share of the bulk's edge (its median) keeps the mean of its own law: there its
#: root in the joint problem moves by up to 1 % with how finely the tails are cut (:func:`rank_outliers`).
JOINT_MARGIN = 0.05

#: Each single sample's rank takes its mean from the joint problem where it resolves it (:func:`rank_outliers`);
#: ``False``: from the sample's own law, as before (docs/theory/two_step.md §8.3).
JOINT_SAMPLE_RANKS = True


def rank_outliers(law, locs, samples, joint_ranks=None, sds=None, laws=None, edge=None, resolved=None,
                  joint_laws=None):
    """Spikes of ``P`` and single-sample outliers at the mean and median of their rank in the sorted spectrum
    (docs/theory/two_step.md §8.3, "Ranked values"): ``(locations, spike medians, samples, spike spreads, sample
    spreads)``, the spreads the standard deviations of the ranks' values over batches.

    Each keeps the rank it has in a typical batch (spikes at their locations, samples at their medians); where a
    sample can pass a spike the values of the two ranks are shared out over batches (:func:`ranked_values`).
    ``joint_ranks``: the ranks' means from the joint problem over the most extreme sample
    (:func:`~rmtfl.theory._two_step.joint_roots.ranks_over_top_sample`); where given, each rank it holds takes its
    mean from there, a spike's always, a single sample's where ``resolved`` (per rank) says the joint problem has a
    root for it in every batch and its median lies :data:`JOINT_MARGIN` above the edge
    (docs/theory/two_step.md §8.3).  ``sds``, ``laws``: the spikes' own spreads and laws over batches
    (docs/theory/two_step.md §8.5); where spikes and samples come near each other the laws move the ranks' means, a
    rank by as much as they move it with the spikes at their locations; ``edge``: the bulk's edge.
    ``joint_laws``: where the joint ranks already average over the batches' most extreme sample (P's Gram given it),
    the spikes' laws less the part that sample carries: a rank that takes its mean from them moves by what these
    laws move it (its median and spread still come from ``laws``; docs/theory/two_step.md §8.3).
    """
    k = len(locs)
    sds = np.zeros(k) if sds is None else np.asarray(sds, dtype=float)
    if law is None or not samples:
        if k < 2:
            return list(locs), list(locs), samples, list(sds), []
        law = SampleLaw(np.array([edge, edge * (1 + 1e-9)]), np.zeros((2, 0)), ())
    items = sorted([(v, "P", i) for i, v in enumerate(locs)] + [(m, "S", i) for i, (_, _, m) in enumerate(samples)],
                   key=lambda t: -t[0])
    still = ranked_values(law, locs, len(items), spread=True)
    moving = ranked_values(law, locs, len(items), laws=laws, spread=True) if laws and any(laws) else still
    if joint_laws is None:
        left = moving
    else:
        left = ranked_values(law, locs, len(items), laws=joint_laws, spread=True) if any(joint_laws) else still
    new_locs, medians, new_samples = list(locs), list(locs), list(samples)
    spreads, sample_spreads = list(sds), [0.0] * len(samples)
    for r, ((mean0, _, _), (mean, med, sd), (mean_left, _, _), (_, kind, i)) in enumerate(zip(still, moving, left,
                                                                                               items)):
        from_joint = bool(joint_ranks) and r < len(joint_ranks)
        base = joint_ranks[r] if from_joint else mean0
        joint_ok = JOINT_SAMPLE_RANKS and resolved and r < len(resolved) and resolved[r]
        if kind == "S" and not (joint_ok and edge is not None and med > (1 + JOINT_MARGIN) * edge):
            base, from_joint = mean0, False   # a sample's rank the joint problem does not resolve, or near the edge
        move = (mean_left if from_joint else mean) - mean0
        if kind == "P":
            # a spike whose law is not needed (nothing comes near it) keeps its own spread
            new_locs[i], medians[i] = base + move, med
            spreads[i] = sd if laws and laws[i] is not None else float(sds[i])
        else:
            new_samples[i] = (base + move, samples[i][1], med)
            sample_spreads[i] = sd
    return new_locs, medians, tuple(new_samples), spreads, sample_spreads


def _law_points(location, law, s_e, points: int = 161):
    """Grid points where a spike's law (``(x, sf)``) moves, between its ``1e-7`` and ``1 - 1e-7`` quantiles, at or
    above the edge ``s_e``."""
    x, sf = law
    inside = (sf > 1e-7) & (sf < 1.0 - 1e-7)
    a, b = (float(x[inside][0]), float(x[inside][-1])) if inside.any() else (float(x[0]), float(x[-1]))
    return np.linspace(max(s_e, location + a), max(s_e, location + b), points)


def _samples_above(law: SampleLaw, grid, ranks: int):
    """``P(at least q single-sample outliers above s)`` on ``grid`` for ``q = 0..ranks`` (lumped at ``ranks``)."""
    tails = np.stack([np.interp(grid, law.grid, law.tails[:, b], right=0.0) for b in range(len(law.sizes))],
                     axis=1) if law.sizes else np.zeros((grid.size, 0))
    k = np.arange(ranks + 1)
    pmf = np.zeros((grid.size, ranks + 1))
    pmf[:, 0] = 1.0
    for b, n in enumerate(law.sizes):       # the law of the number of sample outliers above s, lumped at >= ranks
        ge = special.bdtrc(k[None, :] - 1, n, np.clip(tails[:, b], 0.0, 1.0)[:, None])   # P(Bin >= k)
        part = np.concatenate([ge[:, :-1] - ge[:, 1:], ge[:, -1:]], axis=1)
        conv = np.stack([np.einsum("gi,gi->g", pmf[:, :j + 1], part[:, j::-1]) for j in range(ranks + 1)], axis=1)
        conv[:, -1] += np.clip(1.0 - conv.sum(1), 0.0, None)
        pmf = conv
    return np.cumsum(pmf[:, ::-1], axis=1)[:, ::-1]


def sample_outliers(act, target, st, bulk, *, eta1, eta2, N, psi, ranks, rho=None, coupling=None, law_fn=None,
                    h_cache=None, eigenvalue=None):
    """Single-sample outliers (docs/theory/two_step.md §8.3): ``(((mean, theta, median), ...), isolated, band, law)``.

    Per batch part, the tails of the law of ``y`` (``TAIL_MASS`` times the extreme samples the bulk leaves out, per
    side) are binned (``TAIL_BINS`` per side), each bin's column profile computed and interpolated onto ``TAIL_SUB``
    sub-bins per bin (:func:`column_parts`), and the order statistics of the column locations over the
    batch taken (:func:`tail_law`, :func:`ranks_of`), for the ``ranks`` most extreme samples per part; ``bulk``: the
    :class:`~rmtfl.theory._two_step.widened_bulk.WidenedBulk`; ``isolated``: per part, how many ranks have their
    median above the edge; ``band``: ``(low, high)`` per rank of every part (:func:`ranks_of`), the
    locations exceeded in 90 % and in 10 % of batches (``None``: below the edge); ``law``: the :class:`SampleLaw`
    (``None`` when ``ranks`` is 0), for :func:`ranked_values`; ``rho``: the second step's move at the rows of
    ``bulk`` (:func:`~rmtfl.theory._two_step.sample_spikes.second_step_move`; computed when not given);
    ``coupling``: ``(components, make_shift)``, the columns coupled to the spikes of ``P``
    (docs/theory/two_step.md §8.3, "Single samples pushed by the spikes of P"): ``components(ys, zs, which)`` the
    components of ``P``'s right vectors along samples (:func:`~rmtfl.theory._two_step.finite_n.sample_components`)
    and ``make_shift(us)`` the shift of their strengths (:func:`~rmtfl.theory._two_step.sample_coupling.law_shift`
    with ``us`` per part); the outliers, bands and law are then the coupled ones, ``law.uncoupled`` the columns'
    own; ``law_fn``: the law of the columns' locations (default :func:`tail_law`, the columns each on its own;
    :func:`~rmtfl.theory._two_step.sample_group.grouped_tail_law` couples the most extreme into one group);
    ``h_cache``: as :func:`~rmtfl.theory._two_step.sample_spikes.sample_strengths` takes it; ``eigenvalue``: the
    eigenvalue of ``M`` along each extreme sample, as :func:`column_parts` takes it.
    """
    names = [("both", st.phi)] if st.batch == "reused" else [("first", st.phi), ("second", st.phi2)]
    k = ranks
    if k == 0:
        return (), {w: 0 for w, _ in names}, (), None
    parts, th2s, guess, us = column_parts(act, target, st, bulk, eta1=eta1, eta2=eta2, N=N, psi=psi, ranks=k,
                                          rho=rho, eigenvalue=eigenvalue,
                                          components=None if coupling is None else coupling[0], h_cache=h_cache)
    law = _columns_law(bulk, parts, guess, N=N, psi=psi, law_fn=law_fn,
                       shift=None if coupling is None else coupling[1](us))
    per_part, band_part = ranks_of(law, k, with_bands=True)
    found, isolated = [], {}
    for (which, _), (mass, _, _, n_b), th2, stats_k in zip(names, parts, th2s, per_part):
        isolated[which] = len(stats_k)
        order = np.argsort(-th2)
        cum = np.cumsum(mass[order])
        for rank, (mean, median) in enumerate(stats_k, 1):
            b = order[min(int(np.searchsorted(cum, (rank - 0.3) / (n_b + 0.4))), order.size - 1)]
            found.append((mean, math.sqrt(max(float(th2[b]), 0.0)), median))
    band = tuple(b for part in band_part for b in part)
    return tuple(sorted(found, reverse=True)), isolated, band, law


def outlier_laws(act, target, st, bulk, *, eta1, eta2, N, psi, ranks, rho=None, eigenvalue=None, law_fns=(None,),
                 h_cache=None):
    """The :class:`SampleLaw` of :func:`sample_outliers` alone (uncoupled) under each of ``law_fns`` (as
    :func:`sample_outliers` takes ``law_fn``), with the eigenvalue of ``M`` along each extreme sample from
    ``eigenvalue`` (as :func:`column_parts` takes it, with ``h_cache``); ``None`` for each when ``ranks`` is 0."""
    if ranks == 0:
        return tuple(None for _ in law_fns)
    parts, _, guess, _ = column_parts(act, target, st, bulk, eta1=eta1, eta2=eta2, N=N, psi=psi, ranks=ranks,
                                      rho=rho, eigenvalue=eigenvalue, h_cache=h_cache)
    return tuple(_columns_law(bulk, parts, guess, N=N, psi=psi, law_fn=fn) for fn in law_fns)


def _columns_law(bulk, parts, guess, *, N, psi, law_fn=None, shift=None) -> SampleLaw:
    top = column_spike(bulk, bulk.a, bulk.wa, guess[1], rtol=1e-3)   # only where the s grid starts looking
    return (law_fn or tail_law)(lambda x: bulk.tau_rows(bulk.a, x)[0], bulk.x_edge, (top or bulk.edge) ** 2, parts,
                                N=N, psi=psi, wa=bulk.wa, shift=shift)


def column_parts(act, target, st, bulk, *, eta1, eta2, N, psi, ranks, rho=None, eigenvalue=None, components=None,
                 h_cache=None):
    """The columns of the extreme samples, per batch part (docs/theory/two_step.md §8.3): ``(parts, th2s, guess,
    us)``.

    ``parts[b] = (mass, vmean, vm2, n_b)``: per sub-bin of the tails (``TAIL_SUB`` per bin of
    :func:`~rmtfl.theory._two_step.sample_spikes.tail_bins`, ``TAIL_BINS`` per side, the side of positive ``y`` first,
    each side from its most extreme sample inward) its probability, the column's variance ``E[v]`` and ``E[v^2]``
    in each row of ``bulk`` (units of ``1/d``), and the batch part's size; ``th2s[b]``: the sub-bins' strengths
    ``theta^2``; ``guess``: ``(theta^2, excess)`` of the strongest.  ``eigenvalue(ys, zs, phi_b, y_bulk, w_bulk)``: the
    eigenvalue of ``M`` along each extreme sample (default
    :func:`~rmtfl.theory._two_step.sample_spikes.extreme_eigenvalues`: the pole over the bulk's samples for those
    beyond the bulk); ``components(ys, zs, which)``: the components of ``P``'s right vectors along samples, given
    per part at the sub-bins as ``us`` (``None`` without it); ``h_cache``: as
    :func:`~rmtfl.theory._two_step.sample_spikes.sample_strengths` takes it (the tail's bins and sub-bins are kept
    there as well); the other arguments as :func:`sample_outliers`.
    """
    d = N / psi
    names = [("both", st.phi)] if st.batch == "reused" else [("first", st.phi), ("second", st.phi2)]
    r_rows = bulk.functions(bulk.a)[:, 5]
    yb, wb = y_law(target) if bulk.zrange is None else y_law_truncated(target, bulk.zrange)
    gq = bulk.a * math.sqrt(N)       # the rows of the matrix at this N (not a quadrature of the law of g:
    parts, th2s, guess, us = [], [], None, []   # a row beyond the largest |a_j| would be a spike of its own)
    tails = {}          # the tails' bins, eigenvalues and sub-bins by batch: fresh batches of one size share them
    for which, phi_b in names:
        n_b = max(int(round(phi_b * d)), 1)
        p_tail = min(0.25, TAIL_MASS * ranks / n_b)
        if (n_b, phi_b) not in tails:
            ys, zs, refined = _tail_bins(target, n_b, p_tail, h_cache)
            if eigenvalue is None:
                lams = extreme_eigenvalues(ys, zs, phi_b, yb, wb, bulk.zrange)
            else:
                lams = list(eigenvalue(ys, zs, phi_b, yb, wb))
            tails[n_b, phi_b] = ys, zs, lams, refined
        ys, zs, lams, (R, mass_f) = tails[n_b, phi_b]
        mom = []
        th2, rws = sample_strengths(act, st, ys=ys, zs=zs, eta1=eta1, eta2=eta2, N=N, d=d, g=gq, wg=bulk.wa,
                                    which=which, lams=lams, moments=mom, rho=rho, h_cache=h_cache)
        vmean = np.array([1.0 + r_rows + ex for ex in rws])
        vm2 = np.array([m4 + 6.0 * r_rows * m2 + 3.0 * r_rows**2 for m2, m4 in mom])
        if which == "first" and FIRST_BATCH_CARRIED:
            # the second step carries the column on, its M_2 part among the bulk's columns
            # (docs/theory/two_step.md §8.3, "A first-batch sample in the second step")
            vmean, vm2 = carried_columns(bulk, vmean, vm2, psi=psi)
            rws = list(vmean - 1.0 - r_rows)
            th2 = N / d * (np.asarray(rws) @ bulk.wa)
        parts.append((mass_f, R @ vmean, R @ vm2, n_b))
        th2s.append(R @ th2)
        us.append(None if components is None else np.asarray(components(ys, zs, which), dtype=float) @ R.T)
        if guess is None or th2.max() > guess[0]:
            guess = (float(th2.max()), rws[int(np.argmax(th2))])
    return parts, th2s, guess, (us if components is not None else None)


#: Whether a first-batch sample's column (fresh batches) takes the second step's part along ``M_2``
#: (:func:`~rmtfl.theory._two_step.first_batch.carried_columns`).
FIRST_BATCH_CARRIED = True


def _tail_bins(target, n_b: int, p_tail: float, cache=None):
    """``(ys, zs, (R, mass))``: the tail's bins (:func:`~rmtfl.theory._two_step.sample_spikes.tail_bins`) and their
    sub-bins (:func:`~rmtfl.theory._two_step.sample_spikes.tail_refinement`), kept in ``cache`` (a dict, or ``None``)
    for a later call with the same target and batch (as the count's laws make)."""
    key = ("tail bins", id(target), n_b, p_tail)
    got = None if cache is None else cache.get(key)
    if got is None or got[0] is not target:
        ys, zs, _ = tail_bins(target, n_b, p_tail, bins=TAIL_BINS)
        got = target, (ys, zs, tail_refinement(n_b, p_tail, bins=TAIL_BINS, sub=TAIL_SUB))
        if cache is not None:
            cache[key] = got
    return got[1]


#: The tails binned for single-sample outliers hold this many times ``SAMPLE_RANKS`` samples per side.
TAIL_MASS = 3.0

#: Tail bins per side whose samples' strengths are computed (:func:`~rmtfl.theory._two_step.sample_spikes.tail_bins`).
TAIL_BINS = 24

#: Each tail bin is cut into this many sub-bins, their strengths interpolated in the log tail probability
#: (:func:`~rmtfl.theory._two_step.sample_spikes.tail_refinement`; docs/theory/two_step.md §8.3, "A smooth tail").
TAIL_SUB = 8
