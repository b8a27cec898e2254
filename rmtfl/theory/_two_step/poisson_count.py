"""The count and the fitted edge read through the Poisson process of the mean count function below the spikes
(docs/theory/two_step.md §8.3, "The extreme samples as one group").

``Lambda(s)``, the mean number of values above ``s`` below the spikes of ``P``, is the single samples' mean count
above the bulk's fold (held at its fold value below it) plus the bulk's count from its top values, with a finite real
matrix's soft edge (:func:`soft_edge_count`).  The ``k``-th value below the spikes lies above ``s`` when a Poisson
variable of mean ``Lambda(s)`` is at least ``k`` (:func:`rank_laws`), for the top :data:`TOP_RANKS` ranks below the
spikes (more where the count reaches them, :func:`poisson_count`); deeper ranks sit at the bulk's top values (rigid:
where ``k - c`` are expected above them, the mean place of a real matrix's ``k``-th value at a soft edge,
:data:`~.widened_bulk.TOP_VALUE_OFFSET`, and below the last of them on the bulk's square-root law); the spikes at
their places or spread by their laws.  The count rule's median count over those spectra on a fixed Sobol lattice,
and the mean of the edge it fits there, are the prediction's count and fitted edge (:func:`poisson_count`).
Deterministic: the lattice is the same at every call.
"""
from __future__ import annotations

import functools

import numpy as np
from scipy import special
from scipy.integrate import cumulative_trapezoid

from .._classical.edge_count import edge_positions
from .._classical.tracy_widom import tracy_widom_quantile
from .sample_order import BAND, SampleLaw
from .widened_bulk import TOP_VALUE_OFFSET

__all__ = ["TOP_RANKS", "MAX_RANKS", "LATTICE_POINTS", "soft_edge_count", "edge_fit", "samples_above", "mean_count",
           "blended", "rank_laws", "lattice_rule", "poisson_count"]

#: Ranks below the spikes drawn from the Poisson process (the rest rigid).
TOP_RANKS = 12

#: The most ranks drawn where the counts reach the rigid ranks (:func:`poisson_count`).
MAX_RANKS = 200

#: Points of the Sobol lattice the count rule is read over.
LATTICE_POINTS = 2048

#: The count through the fold: the Lambda below it up to the fold, the one above it from ``1 + BLEND_WIDTH`` times
#: the fold, linear in ``s`` between (:func:`blended`).
BLEND_WIDTH = 0.05


@functools.lru_cache(maxsize=1)
def _soft_edge_table():
    t = np.linspace(-40.0, 10.0, 40001)
    ai, aip, _, _ = special.airy(t)
    tail_ai = -cumulative_trapezoid(ai[::-1], t[::-1], initial=0.0)[::-1]
    rho = aip**2 - t * ai**2 + 0.5 * ai * (1.0 - tail_ai)
    count = -cumulative_trapezoid(rho[::-1], t[::-1], initial=0.0)[::-1]
    return t, count - 2.0 / (3.0 * np.pi) * np.maximum(-t, 0.0) ** 1.5


def soft_edge_count(x):
    """``E[#{t > x}]`` of the real (beta = 1) soft edge in Tracy–Widom units, less its semiclassical part
    ``(2/3 pi) max(-x, 0)^(3/2)``: the integral of the one-point density
    ``Ai'(t)^2 - t Ai(t)^2 + Ai(t) (1 - int_t^inf Ai) / 2`` above ``x`` (0.17 at the edge, 1/4 deep below it)."""
    t, excess = _soft_edge_table()
    return np.interp(x, t, excess, left=excess[0], right=0.0)


def edge_fit(bulk_top) -> tuple[float, float]:
    """``(edge, scale)``: the soft edge's place and Tracy–Widom scale fitted to the bulk's first ten top values
    (descending), where the density counts ``k - c`` at ``edge - scale (3 pi (k - c) / 2)^(2/3)`` (``c``:
    :data:`~.widened_bulk.TOP_VALUE_OFFSET`, where :meth:`~.widened_bulk.WidenedBulk.top_values` puts them)."""
    pos = (1.5 * np.pi * (np.arange(1, 11) - TOP_VALUE_OFFSET)) ** (2.0 / 3.0)
    (e, sig), *_ = np.linalg.lstsq(np.stack([np.ones(10), -pos], 1), np.asarray(bulk_top, float)[:10], rcond=None)
    return float(e), float(sig)


def samples_above(law: SampleLaw, grid):
    """``sum_b n_b P_b(S > s)`` at each ``s`` of ``grid``: the single samples' mean count above ``s`` (held at its
    value at the law's first point below it, none beyond its last)."""
    return sum(n * np.interp(grid, law.grid, law.tails[:, b], left=law.tails[0, b], right=0.0)
               for b, n in enumerate(law.sizes))


def mean_count(law: SampleLaw, bulk_top):
    """``(grid, Lambda)``: the mean number of values above ``s`` below the spikes (module docstring), from the
    single samples' ``law`` and the bulk's top values ``bulk_top`` (descending), the bulk's count near its fold that
    of a finite matrix (the density's count plus :func:`soft_edge_count`, at the edge and scale fitted to its first
    ten top values)."""
    bt = np.asarray(bulk_top, float)
    c = TOP_VALUE_OFFSET                                                     # the bulk's count: k - c at v_k
    xs = np.concatenate([[bt[0] + (1.0 - c) * (bt[0] - bt[1])], bt])[::-1]
    ns = np.concatenate([[0.0], np.arange(1, bt.size + 1) - c])[::-1]
    e, sig = edge_fit(bt)
    lo, hi = bt[-1], max(xs[-1], law.grid[-1], e + 4.0 * sig)
    grid = np.unique(np.concatenate([np.linspace(lo, hi, 1200), xs, law.grid]))
    mu = samples_above(law, grid)
    return grid, mu + np.interp(grid, xs, ns, left=ns[0], right=0.0) + soft_edge_count((grid - e) / sig)


def blended(below, above, fold: float, width: float = BLEND_WIDTH):
    """``(grid, Lambda)``: ``below`` (a ``(grid, Lambda)`` pair) up to the ``fold``, ``above`` from ``(1 + width)``
    times the fold up, and between them the two mixed linearly in ``s / fold``, on the union of their grids (each
    taken as 0 beyond its own grid's top)."""
    grid = np.unique(np.concatenate([below[0], above[0]]))
    lo = np.interp(grid, below[0], below[1], right=0.0)
    hi = np.interp(grid, above[0], above[1], right=0.0)
    w = np.clip((grid / fold - 1.0) / width, 0.0, 1.0)
    return grid, (1.0 - w) * lo + w * hi


def rank_laws(law: SampleLaw, fixed, ranks: int, laws=None, gamma: float = 1.0):
    """``(grid, F)``: ``F[:, r - 1] = P(r-th value > s)`` on ``grid`` (from the law's edge up), ``r = 1..ranks``, for
    the spikes ``fixed`` of ``P`` (each at its location, or spread by its law ``(x, sf)`` of
    docs/theory/two_step.md §8.5) over the points of a Poisson process of mean count ``law``'s above each ``s``.
    ``gamma``: the points' rigidity, the ``q``-th point above ``s`` where a Gamma variable of shape ``q gamma`` and
    mean ``q`` is at most the mean count (1, the prediction's: a Poisson process; larger is more rigid, measured in
    docs/theory/two_step_attempts.md §29)."""
    fixed = np.asarray(fixed, float)
    laws = [None] * fixed.size if laws is None else list(laws)
    s_e = float(law.grid[0])
    pieces = [law.grid] + [np.clip(m + lw[0], s_e, None) for m, lw in zip(fixed, laws) if lw is not None]
    inner = fixed[fixed > s_e]
    grid = np.unique(np.concatenate(pieces + [inner * (1 - 1e-9), inner * (1 + 1e-9)]))
    mu = samples_above(law, grid)
    q = np.arange(ranks + 1)
    # P(at least q points above s): the q-th point of the process lies above s
    above = np.ones((grid.size, ranks + 1))
    above[:, 1:] = special.gammainc(q[None, 1:] * gamma, gamma * mu[:, None])
    p = np.array([(m > grid).astype(float) if lw is None else np.interp(grid - m, lw[0], lw[1], left=1.0, right=0.0)
                  for m, lw in zip(fixed, laws)]).reshape(fixed.size, grid.size)
    pm = np.zeros((grid.size, fixed.size + 1))     # the law of the number of spikes above s (Poisson binomial)
    pm[:, 0] = 1.0
    for pj in p:
        pm = pm * (1 - pj[:, None]) + np.concatenate([np.zeros((grid.size, 1)), pm[:, :-1]], 1) * pj[:, None]
    # F[:, r - 1] = sum_{j <= r} P(j spikes) P(r - j points or more) + P(more than r spikes), the terms in that order
    F = pm[:, :1] * above[:, 1:]
    for j in range(1, min(ranks, fixed.size) + 1):
        F[:, j - 1:] += pm[:, j:j + 1] * above[:, :ranks + 1 - j]
    for r in range(1, min(ranks, fixed.size - 1) + 1):
        F[:, r - 1] += pm[:, r + 1:].sum(1)
    return grid, np.minimum.accumulate(F, axis=0)


@functools.lru_cache(maxsize=8)
def _rule(J: int):
    """The count rule's least-squares fit as rows, ``(edge, scale) = P @ window``, and its margin (TW1's 0.99
    quantile; :func:`~rmtfl.theory.edge_outlier_count`)."""
    P = np.linalg.pinv(np.stack([np.ones(J), -edge_positions(J)], axis=1))
    return P, float(tracy_widom_quantile(0.99, beta=1))


@functools.lru_cache(maxsize=8)
def _lattice(R: int, points: int):
    from scipy.stats import qmc                      # not at import: scipy.stats is slow to load

    return (qmc.Sobol(d=R, scramble=False).random(points) + 0.5 / points) % 1.0


@functools.lru_cache(maxsize=8)
def _lattice_order(R: int, points: int):
    """Per rank, the points of :func:`_lattice` by their coordinate, largest first (``R x points``): searched for
    in that order, each search starts where the last one ended."""
    return np.argsort(-_lattice(R, points).T, axis=1, kind="stable")


def lattice_rule(grid, F, bulk_top, J: int, points: int = LATTICE_POINTS):
    """``(counts, edges)`` of the count rule over spectra whose top ranks are drawn independently from ``F``
    (:func:`rank_laws`) by inversion at the points of a fixed Sobol lattice (a rank's mass below ``grid[0]`` dropped;
    above the grid its value is the grid's top), the ``bulk_top`` values below them: each spectrum's count (its
    first fixed point of the rule) and the edge the rule fits there; ``None`` where the spectra hold no more than
    ``J`` values."""
    R = F.shape[1]
    u, order = _lattice(R, points), _lattice_order(R, points)
    negF = np.ascontiguousarray(-F.T)                       # per rank, -F ascending
    vals = np.full((R, points), -np.inf)
    for k in range(R):
        Fk, at = F[:, k], order[k]
        uk = u[at, k]                                       # descending
        ok = uk < Fk[0]
        uk, at = uk[ok], at[ok]
        idx = np.clip(np.searchsorted(negF[k], -uk), 1, grid.size - 1)     # the first grid point with F <= u
        f0, f1 = Fk[idx - 1], Fk[idx]
        w = np.where(f0 > f1, (f0 - uk) / np.maximum(f0 - f1, 1e-300), 0.0)
        vals[k, at] = grid[idx - 1] + w * (grid[idx] - grid[idx - 1])
    S = -np.sort(-np.concatenate([vals.T, np.tile(np.asarray(bulk_top, float), (points, 1))], 1), axis=1)
    S = S[:, :R + len(bulk_top)]
    S = S[:, np.isfinite(S).all(0)]
    if S.shape[1] <= J:
        return None                                          # no window of J values below any count
    P, q = _rule(J)
    K = S.shape[1] - J
    events = np.ones((points, K + 1), bool)
    for r in range(K):
        win = S[:, r:r + J]
        thr = win @ P[0] + q * np.maximum(win @ P[1], 0.0)
        above = S[:, r - 1] > thr if r else np.ones(points, bool)
        events[:, r] = (S[:, r] <= thr) & above
    counts = np.argmax(events, 1)                            # at most S.shape[1] - J: a full window below
    windows = S[np.arange(points)[:, None], counts[:, None] + np.arange(J)[None, :]]   # each point's fit window
    return counts, windows @ P[0]


def _rigid_values(grid, lam, ks):
    """The rigid ranks' values: where ``Lambda = k`` for each ``k`` of ``ks``; beyond the grid's bottom, along the
    bulk's square-root law ``s = e - scale (3 pi k / 2)^(2/3)`` through the grid's bottom and the place where
    ``Lambda`` is three quarters of it (a deep rank is the bulk's, rigid at the scale of the count)."""
    lam_up, s_down = lam[::-1], np.asarray(grid, float)[::-1]
    v = np.interp(ks, lam_up, s_down)
    inside = v > s_down[-1]
    k1 = float(lam_up[-1])                          # Lambda at the grid's bottom
    if k1 <= 2.0:                                   # too few values below the tail to continue the bulk's law
        return v[inside]
    deep = ks > k1
    s1, s0 = float(s_down[-1]), float(np.interp(0.75 * k1, lam_up, s_down))
    p0, p1 = (1.125 * np.pi * k1) ** (2.0 / 3.0), (1.5 * np.pi * k1) ** (2.0 / 3.0)
    scale = (s0 - s1) / (p1 - p0)
    v[deep] = s0 + scale * (p0 - (1.5 * np.pi * ks[deep]) ** (2.0 / 3.0))
    return v[inside | deep]


def poisson_count(grid, lam, fixed, J: int, *, laws=None, ranks: int = TOP_RANKS):
    """``(count, fitted edge, counts)``: the count rule's median count (the lower middle one) over the lattice
    spectra whose top ``ranks`` values below the spikes ``fixed`` are the points of a Poisson process of mean count
    ``lam`` above each ``s`` of the ascending ``grid`` (module docstring), the mean of the edge it fits there, and
    every lattice spectrum's count (``None`` where the process holds no more than ``J`` values); ``laws``: the
    spikes' laws as :func:`rank_laws` takes them.

    Where a tenth of the lattice spectra count into the rigid ranks below the drawn ones (a thin top tail of the
    bulk at large ``N`` holds more values above the fitted edge than ``ranks``), the ranks drawn grow to that count
    plus ``ranks`` and the lattice is read again: a count among the rigid ranks would be the same on every spectrum,
    its spread over batches lost.  The rigid ranks run ``J + 30`` deep, continued below the grid's bottom by the
    bulk's square-root law, so that no count stops short for want of values (docs/theory/two_step.md §8.3, "A count
    deeper than the drawn ranks")."""
    lam = np.asarray(lam, float)
    big = 10**9                                      # one part of 10^9 samples: the Poisson limit of the binomial
    law = SampleLaw(np.asarray(grid, float), (lam / big)[:, None], (big,))
    fixed = list(fixed)
    drawn = ranks
    while True:
        g, F = rank_laws(law, fixed, drawn + len(fixed), laws)
        got = lattice_rule(g, F, _rigid_values(grid, lam, np.arange(drawn, drawn + J + 30) + 0.5), J)
        if got is None:
            return None
        counts, edges = got
        high = int(np.quantile(counts, BAND[1], method="inverted_cdf"))
        if high < drawn + len(fixed) - 1 or drawn >= MAX_RANKS:
            break
        drawn = min(int(counts.max()) + ranks, MAX_RANKS)
    c = np.sort(counts)
    return int(c[(c.size - 1) // 2]), float(edges.mean()), counts
