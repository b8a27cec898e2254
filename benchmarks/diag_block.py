"""The quadratic sigma's top values of ``H`` as one block of heavy rows and extreme columns
(docs/theory/two_step_attempts.md §25; measured, not kept).

For ``sigma = He1 + He2/2`` and a reused batch, ``H = W_2 - P`` in ``M``'s eigenbasis has independent Gaussian entries
of standard deviation ``p(g_j, lambda_k) / sqrt(d)``, ``p = (1 + eps_1 lambda)(1 + eps_2 lambda)``, ``eps_t = eta_t
a_j``, ``g = sqrt(N) a`` (:func:`benchmarks.diag_quadratic_parts.eigenbasis_draw`).  Take out its ``r`` heaviest rows
``R`` and the ``K`` columns of ``M``'s largest eigenvalues ``C``; the rest is a bulk ``H_b``.  By the Schur complement
``s`` is a singular value of ``H`` (above ``H_b``'s) exactly where the ``(r + K)``-square matrix

    [[I - rho(x),  B(x) / s], [B(x)^T / s,  I - q(x)]],   x = s^2,

is singular: ``rho`` the rows' and ``q`` the columns' strengths against the bulk (``h (x - H_b^T H_b)^{-1} h^T`` and
``h^T (x - H_b H_b^T)^{-1} h``, with their cross terms), ``B`` the block ``H[R, C]`` plus its path through the bulk.
Without the cross terms (the diagonals of ``rho`` and ``q`` only, ``B = H[R, C]``) the self-energies are sums that
the finite-``N`` bulk's kernels give (:meth:`rmtfl.theory._two_step.widened_bulk.WidenedBulk.tau_rows`,
:meth:`~rmtfl.theory._two_step.widened_bulk.WidenedBulk.tau_columns`).

``--part draws`` compares, draw by draw (seeds 20000, 20001, ...), ``H``'s top values with the block's roots exactly,
without the cross terms, and with the bulk's kernels; ``--part laws`` puts the block over the laws of its parts
(Monte Carlo, a diagnostic: the rows ``g ~ N(0, 1)`` and the heaviest ``r`` of them, the columns at the whole-law
eigenvalue of the batch's top ``K`` samples (attempt 4) or at ``M``'s drawn top eigenvalues (``--columns drawn``),
the block's entries Gaussian, the self-energies from the kernels, no cross terms) for ``r`` heavy rows (``r = 0``: the
columns alone)::

    python -m benchmarks.diag_block --part draws --draws 12
    python -m benchmarks.diag_block --part laws --draws 200
    python -m benchmarks.diag_block --part laws --draws 200 --columns drawn

``--part deterministic`` puts the same block over the same laws without drawing: attempt 13's group count with the
heavy rows' tail bins among its members (:func:`deterministic_block`)::

    python -m benchmarks.diag_block --part deterministic

``--part columns`` sets ``M``'s top eigenvalues beside the whole law's eigenvalue at each of the batch's top samples
(natural batches, ``d = N``); ``--part mgroup`` computes them without drawing, the batch's most extreme samples as a
group against the rest of ``M`` (:func:`m_group`)::

    python -m benchmarks.diag_block --part columns --draws 30
    python -m benchmarks.diag_block --part columns --draws 150 --seed0 30000
    python -m benchmarks.diag_block --part mgroup
"""
from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass

import numpy as np
from scipy import optimize

from .diag_quadratic_parts import QUADRATIC

#: ``H``'s first six single-sample values at (0.4, 0.4), ``N = 1000``: the 80 draws of attempt 23.
H_DRAWS = (13.584, 10.625, 9.480, 8.683, 8.082, 7.592)


def quadratic_bulk(N: int, eta1: float, eta2: float, ranks: int = 12):
    """The finite-``N`` bulk of the quadratic sigma with He1 + He2/2 (``d = N``, ``n = 2N``, reused) without the
    batch's ``ranks`` most extreme samples, as the prediction builds it."""
    from rmtfl.theory import get_activation, make_target
    from rmtfl.theory._two_step import finite_n

    act, tgt = get_activation(QUADRATIC), make_target(QUADRATIC)
    st = finite_n.finite_n_setup(act, tgt, phi=2.0, batch="reused", phi2=None)
    tn = finite_n.finite_n_grams(act, st, eta1=eta1, eta2=eta2, N=float(N), bulk=False)[3]
    return finite_n.bulk_without(act, tgt, st, ranks=ranks, eta1=eta1, eta2=eta2, N=float(N), psi=1.0, tn=tn)


@dataclass(frozen=True)
class Block:
    """One draw's block (module docstring): rows ``R``, columns ``C``, ``B = H[R, C]``; the heavy rows on the bulk's
    columns and the extreme columns on the bulk's rows, ``hr``, ``hc``, and both in the bulk's singular bases,
    ``pr``, ``pc``, with the bulk's singular values ``sb``."""

    R: np.ndarray
    C: np.ndarray
    B: np.ndarray
    hr: np.ndarray
    hc: np.ndarray
    pr: np.ndarray
    pc: np.ndarray
    sb: np.ndarray


def split(H, lam, r: int, K: int) -> Block:
    """The block of the ``K`` columns of the largest ``lam`` and the ``r`` rows heaviest on them."""
    C = np.argsort(-lam)[:K]
    R = np.argsort(-(H[:, C] ** 2).sum(1))[:r]
    Rb, Cb = np.setdiff1d(np.arange(H.shape[0]), R), np.setdiff1d(np.arange(H.shape[1]), C)
    ub, sb, vbt = np.linalg.svd(H[np.ix_(Rb, Cb)], full_matrices=False)
    hr, hc = H[np.ix_(R, Cb)], H[np.ix_(Rb, C)]
    return Block(R, C, H[np.ix_(R, C)], hr, hc, hr @ vbt.T, ub.T @ hc, sb)


def small_matrix(rows, cols, B, s):
    """``[[diag-or-matrix rows, B / s], [B^T / s, cols]]`` (module docstring); 1-d ``rows``/``cols`` are diagonals."""
    r, K = B.shape
    A = np.zeros((r + K, r + K))
    A[:r, :r] = np.diag(rows) if np.ndim(rows) == 1 else rows
    A[r:, r:] = np.diag(cols) if np.ndim(cols) == 1 else cols
    A[:r, r:], A[r:, :r] = B / s, B.T / s
    return A


def exact_small(b: Block, *, cross: bool):
    """``s -> `` the block's matrix from the draw itself, with or without the cross terms."""
    # the parts of hr and hc outside the bulk's singular vectors see (x - 0)^-1
    null_r, null_c = b.hr @ b.hr.T - b.pr @ b.pr.T, b.hc.T @ b.hc - b.pc.T @ b.pc

    def at(s):
        x = s * s
        w = 1.0 / (x - b.sb**2)
        rows = np.eye(b.R.size) - (b.pr * w) @ b.pr.T - null_r / x
        cols = np.eye(b.C.size) - (b.pc.T * w) @ b.pc - null_c / x
        if cross:
            return small_matrix(rows, cols, b.B + (b.pr * (b.sb * w)) @ b.pc, s)
        return small_matrix(np.diag(rows), np.diag(cols), b.B, s)
    return at


def kernel_small(b: Block, bulk, a, lam):
    """``s -> `` the block's matrix without the cross terms, its self-energies from the bulk's kernels at the draw's
    rows ``a`` and columns ``lam`` (``None`` where the kernels are not found)."""
    Rb, Cb = np.setdiff1d(np.arange(a.size), b.R), np.setdiff1d(np.arange(lam.size), b.C)

    def at(s):
        x = s * s
        tr, _ = bulk.tau_rows(a[Rb], x)
        tc = bulk.tau_columns(lam[Cb], x)
        if tr is None or tc is None:
            return None
        return small_matrix(1 - (b.hr * b.hr) @ tc, 1 - tr @ (b.hc * b.hc), b.B, s)
    return at


def root_grid(lo: float, hi: float, points: int = 240):
    """A grid from just above ``lo`` to ``hi``, quadratic in ``s - lo`` (dense near the bulk)."""
    return lo * (1 + 1e-6) + (hi - lo) * np.linspace(0.0, 1.0, points) ** 2


def ranked_roots(small, grid, *, solve: bool = True):
    """The ``s`` on the ascending ``grid`` where an eigenvalue of ``small(s)`` (``small(i, s)`` without ``solve``: the
    grid point's index as well) crosses zero, negative below each root, largest first: bracketed on the grid, then by
    Brent (``solve``) or linear interpolation."""
    ev = [small(s) if solve else small(i, s) for i, s in enumerate(grid)]
    keep = [i for i, m in enumerate(ev) if m is not None]
    grid = grid[keep]
    ev = np.array([np.linalg.eigvalsh(ev[i]) for i in keep])
    found = []
    for k in range(ev.shape[1]):
        neg = np.nonzero(ev[:, k] < 0)[0]
        if neg.size == 0 or neg[-1] + 1 == grid.size:
            continue
        j = neg[-1]
        if solve:
            found.append(optimize.brentq(lambda s, k=k: np.linalg.eigvalsh(small(s))[k], grid[j], grid[j + 1],
                                         xtol=1e-9 * grid[j]))
        else:
            e0, e1 = ev[j, k], ev[j + 1, k]
            found.append(grid[j] + (grid[j + 1] - grid[j]) * e0 / (e0 - e1))
    return sorted(found, reverse=True)


def part_draws(*, N: int, eta1: float, eta2: float, draws: int, r: int, K: int, ranks: int = 6):
    """Per draw: ``H``'s top values and the block's roots exactly, without the cross terms and with the bulk's
    kernels (those above the bulk's fold only); ``(rows, fold)``."""
    from rmtfl.theory import make_target

    from .diag_quadratic_parts import eigenbasis_draw

    bulk = quadratic_bulk(N, eta1, eta2)
    out = []
    for seed in range(20000, 20000 + draws):
        H, lam, _, a = eigenbasis_draw(make_target(QUADRATIC), N=N, d=N, n=2 * N, eta1=eta1, eta2=eta2, seed=seed)
        sv = np.linalg.svd(H, compute_uv=False)[:ranks]
        b = split(H, lam, r, K)
        hi = 1.5 * float(sv[0])
        lo = max(bulk.edge, float(b.sb[0]))
        rows = [sv] + [ranked_roots(f, root_grid(lo, hi))[:ranks] for f in (exact_small(b, cross=True),
                                                                   exact_small(b, cross=False),
                                                                   kernel_small(b, bulk, a, lam))]
        out.append((seed, rows, float(b.sb[0])))
    return out, bulk.edge


def whole_law_columns(ys, zs, *, d: int, n: int):
    """The whole law's eigenvalue of ``M`` (attempt 4) along samples ``(ys, zs)`` of He1 + He2/2, ``y / phi`` where
    it is not resolved."""
    from rmtfl.theory import make_target

    from .diag_m_spike import m_spike_whole_law

    lam = m_spike_whole_law(make_target(QUADRATIC), ys, zs, n / d, float(d))
    return np.where(np.isfinite(lam), lam, np.asarray(ys, dtype=float) * d / n)


def entry_variances(g, lam, *, N: int, eta1: float, eta2: float):
    """``p(g, lambda)^2`` on rows ``g = sqrt(N) a`` by columns ``lam``: ``d`` times the variances of ``H``'s entries
    (:func:`benchmarks.diag_quadratic_parts.row_profile`)."""
    from .diag_quadratic_parts import row_profile

    return row_profile(np.asarray(g, dtype=float) / math.sqrt(N), np.asarray(lam, dtype=float), eta1, eta2) ** 2


def law_tables(bulk, N: int, s_grid, g_grid):
    """On ``s_grid`` (rows) and a grid of ``g = sqrt(N) a`` (columns): the row kernel ``tau`` and a row's strength
    over the bulk's columns, ``E_l[S(g, lambda_l) tau~(lambda_l)]`` (the bulk's column nodes and weights)."""
    lam, wl = bulk.red.colh[:, 1], bulk.red.Pl[:, 0]
    S = bulk.functions(g_grid / math.sqrt(N)) @ bulk.red.colh.T
    tau, rho = [], []
    for s in s_grid:
        tau.append(bulk.tau_rows(g_grid / math.sqrt(N), s * s)[0])
        rho.append(S @ (wl * bulk.tau_columns(lam, s * s)) / wl.sum())
    return np.array(tau), np.array(rho)


def law_draw(rng, bulk, tables, s_grid, g_grid, *, N: int, eta1: float, eta2: float, K: int, rs, columns: str,
             ranks: int = 6):
    """One draw of the block over its laws (module docstring): per number of heavy rows ``r`` in ``rs``, the top
    ``ranks`` roots (at the bulk's fold where fewer)."""
    d, n = N, 2 * N
    g = rng.standard_normal(N)
    if columns == "drawn":
        X = rng.standard_normal((n, d))
        y = X[:, 0] + (X[:, 0] ** 2 - 1) / 2
        lam = np.linalg.eigvalsh(X.T @ (y[:, None] * X) / n)[::-1][:K]
    else:
        z = rng.standard_normal(n)
        y = z + (z * z - 1) / 2
        top = np.argsort(-y)[:K]
        lam = whole_law_columns(y[top], z[top], d=d, n=n)
    p2 = entry_variances(g, lam, N=N, eta1=eta1, eta2=eta2)                            # (N, K)
    xi = rng.standard_normal((N, K))
    tau_g = np.array([np.interp(g, g_grid, t) for t in tables[0]])                     # (S, N)
    out = {}
    for r in rs:
        R = np.argsort(-p2.sum(1))[:r]
        rest = np.ones(N, bool)
        rest[R] = False
        q = tau_g[:, rest] @ (p2[rest] * xi[rest] ** 2) / d                              # (S, K)
        rho = np.array([np.interp(g[R], g_grid, row) for row in tables[1]])             # (S, r)
        B = np.sqrt(p2[R]) * xi[R] / math.sqrt(d)
        roots = ranked_roots(lambda i, s: small_matrix(1 - rho[i], 1 - q[i], B, s), s_grid, solve=False)
        out[r] = (roots + [bulk.edge] * ranks)[:ranks]
    return out


def law_grid(fold: float, points: int = 160):
    """The ``s`` grid of :func:`law_draw`: from the bulk's fold to 3.2 times it."""
    return root_grid(fold, 3.2 * fold, points)


def deterministic_block(bulk, *, N: int, eta1: float, eta2: float, K: float, rows: float, bins: int = 12,
                        ranks: int = 6, cross: bool = False):
    """:func:`block_count`'s first ``ranks`` values, the ranks' laws those of a Poisson count: ``(means, expected
    count above the fold)``."""
    s_grid, count = block_count(bulk, N=N, eta1=eta1, eta2=eta2, K=K, rows=rows, bins=bins, cross=cross)
    return poisson_rank_means(s_grid, count, ranks), float(count[0])


def block_count(bulk, *, N: int, eta1: float, eta2: float, K: float, rows: float, bins: int = 12, cross: bool = False,
                shift=None, points: int = 120):
    """The block over the laws of its parts without drawing (docs/theory/two_step_attempts.md §25): the expected
    number of its values above each ``s`` by attempt 13's group count, its members the tail bins of the batch's top
    ``K`` samples (expected; the whole-law eigenvalue) and of the ``rows`` rows of largest ``|g|`` (expected, both
    sides), the block's entries the couplings between a row and a column (variance ``p^2 / (d x)``), each column's
    strength over the rows below the heavy ones with its spread (no cross terms, as ``--part laws``; with ``cross``
    the columns coupled to each other through those rows, variance ``sum_j p_i^2 p_k^2 tau_j^2 / d^2``, and the rows
    through the bulk's columns, ``sum_l S_a S_b tau~_l^2 / d^2``); ``rows = 0``
    cuts the rows at the top quantile row, as the law does.  ``shift(s, ys, zs)``: added to the columns' strengths
    at ``s`` (the push of ``P``, docs/theory/two_step_attempts.md §27; ``None`` where it does not act).  ``(s_grid,
    count)``: the grid from the bulk's fold to 3.2 times it and the expected count above each point (made
    non-increasing)."""
    from scipy import special

    from rmtfl.theory import make_target
    from rmtfl.theory._two_step import sample_spikes

    from .diag_sample_group import group_count

    d, n = N, 2 * N
    tgt = make_target(QUADRATIC)
    s_grid, g_grid = law_grid(bulk.edge, points), np.linspace(-7.0, 7.0, 1401)
    tau, rho_g = law_tables(bulk, N, s_grid, g_grid)
    dens = np.exp(-g_grid**2 / 2) / math.sqrt(2 * math.pi) * (g_grid[1] - g_grid[0])
    ys, zs, mass = sample_spikes.tail_bins(tgt, n, K / n, bins=bins)
    ys, zs, mass = ys[ys > 0], zs[ys > 0], mass[ys > 0]
    lam = whole_law_columns(ys, zs, d=d, n=n)
    if rows > 0:                                   # the heavy rows' tail bins: those of g ~ N(0, 1), as the samples'
        g_rows, _, mass_rows = sample_spikes.tail_bins(make_target("hermite(0, 1)"), N, rows / (2 * N), bins=bins)
        w_rows = N * mass_rows
        cut = special.ndtri(1 - rows / (2 * N))
    else:
        g_rows, w_rows, cut = np.zeros(0), np.zeros(0), special.ndtri(1 - 0.5 / N)
    pc = entry_variances(g_grid, lam, N=N, eta1=eta1, eta2=eta2) * (np.abs(g_grid) < cut)[:, None]
    pr = entry_variances(g_rows, lam, N=N, eta1=eta1, eta2=eta2)
    r = g_rows.size
    lam_b, wl = bulk.red.colh[:, 1], bulk.red.Pl[:, 0]
    S_rows = bulk.functions(g_rows / math.sqrt(N)) @ bulk.red.colh.T            # the heavy rows over the bulk's columns
    count = []
    for i, s in enumerate(s_grid):
        q = (N / d) * ((dens * tau[i]) @ pc)
        sd = np.sqrt(np.clip((N / d**2) * ((dens * tau[i] ** 2) @ (3 * pc**2)) - q**2 / N, 0.0, None))
        c = None if shift is None else shift(s, ys, zs)          # the push moves the strength, not its spread
        q = q if c is None else q + c
        e2 = np.zeros((r + lam.size, r + lam.size))
        e2[:r, r:] = pr / (d * s * s)
        e2[r:, :r] = e2[:r, r:].T
        if cross:
            e2[r:, r:] = (N / d**2) * (pc.T @ ((dens * tau[i] ** 2)[:, None] * pc))
            if r:
                tt = bulk.tau_columns(lam_b, s * s)
                e2[:r, :r] = (S_rows * (wl * tt * tt)) @ S_rows.T / (d * wl.sum())
        strength = np.concatenate([np.interp(g_rows, g_grid, rho_g[i]), q])
        spread = np.concatenate([np.full(r, 1e-12), sd + 1e-12])
        count.append(float(np.clip(group_count(strength, spread, np.concatenate([w_rows, n * mass]), e2), 0.0,
                                   None).sum()))
    return s_grid, np.maximum.accumulate(np.array(count)[::-1])[::-1]


def poisson_rank_means(grid, count, ranks: int):
    """The means of the first ``ranks`` values above ``grid[0]`` (a value below counts there) when the number above
    each ``grid`` point is Poisson with mean ``count`` (made non-increasing): ``grid[0] + integral of P(Poisson >=
    k)``."""
    from scipy import special

    count = np.maximum.accumulate(np.asarray(count, dtype=float)[::-1])[::-1]
    return [float(grid[0] + np.sum(0.5 * (F[1:] + F[:-1]) * np.diff(grid)))
            for F in (special.gammainc(k, count) for k in range(1, ranks + 1))]   # P(Poisson(mu) >= k)


def m_group(*, d: int, n: int, K: int = 30, ranks: int = 8):
    """``M``'s top eigenvalues without drawing (He1 + He2/2; docs/theory/two_step_attempts.md §25): ``(alone,
    coupled)`` rank means (Poisson ranks of the expected count above each ``lambda``).  Each of the batch's ``K`` most
    extreme samples (tail bins) meets the rest of ``M`` through ``t_i(lambda) = (y_i / n)((d - 1) m + z_i^2 R_bb)``,
    ``m`` the rest's Stieltjes transform (``m = 1 / (lambda - E[y / (1 - y m / phi)])`` over the samples inside the
    cut), ``R_bb = 1 / (lambda - E[y z^2 / (1 - y m / phi)])`` along ``beta*``, with the spread ``y_i sqrt(2 d m2) / n``
    (``m2 = -dm/dlambda``); coupled, the samples' off-diagonal entries have the variance ``y_i y_l m2 / (phi^2 d)``
    (attempt 13's group count)."""
    from scipy import optimize, special

    from rmtfl.theory import make_target
    from rmtfl.theory._two_step import sample_spikes

    from .diag_sample_group import group_count

    tgt, phi = make_target(QUADRATIC), n / d
    zq, wq = sample_spikes.truncated_rule(*sample_spikes.bulk_cut(tgt, n, K), order=80)
    yq = np.asarray(tgt.links[0](zq), dtype=float)
    ys, zs, mass = sample_spikes.tail_bins(tgt, n, K / n, bins=24)
    ys, zs, w = ys[ys > 0], zs[ys > 0], n * mass[ys > 0]
    grid, alone, coupled = [], [], []
    for lam in np.linspace(2.0, 7.5, 440):
        f = lambda m: m - 1.0 / (lam - wq @ (yq / (1 - yq * m / phi)))          # noqa: E731
        hi = 0.999999 * phi / yq.max()
        if not (f(1e-9) < 0 < f(hi)):
            continue                                   # inside the rest's spectrum
        m = optimize.brentq(f, 1e-9, hi)
        den = 1 - yq * m / phi
        m2 = m * m / (1 - (wq @ (yq * yq / den**2)) * m * m / phi)
        if not 0 < m2 < np.inf:
            continue
        t = ys / n * ((d - 1) * m + zs * zs / (lam - wq @ (yq * zq * zq / den)))
        sd = ys * np.sqrt(2 * d * m2) / n
        grid.append(lam)
        alone.append(float(np.sum(w * special.ndtr((t - 1) / sd))))
        coupled.append(float(np.clip(group_count(t, sd, w, np.outer(ys, ys) * m2 / (phi**2 * d)), 0.0, None).sum()))
    grid = np.array(grid)
    return poisson_rank_means(grid, alone, ranks), poisson_rank_means(grid, coupled, ranks)


def column_ranks(*, d: int, draws: int, K: int = 8, seed0: int = 20000):
    """Over natural batches (seeds ``seed0``, ...; ``n = 2d``, He1 + He2/2): ``M``'s top ``K`` eigenvalues, the
    eigenvalue whose eigenvector leans most on the batch's ``k``-th largest sample, and the whole law's eigenvalue at
    that sample's own ``(y, z)`` (attempt 4), each ``(draws, K)``."""
    from rmtfl.numerics import sample_targets
    from rmtfl.theory import make_target

    tgt, n = make_target(QUADRATIC), 2 * d
    top, along, whole = [], [], []
    for seed in range(seed0, seed0 + draws):
        X = np.random.default_rng(seed).standard_normal((n, d))
        y = np.asarray(sample_targets(X, target=tgt), dtype=float)
        lam, V = np.linalg.eigh(X.T @ (y[:, None] * X) / n)
        order = np.argsort(-y)[:K]
        top.append(lam[::-1][:K])
        along.append([lam[int(np.argmax((V.T @ X[i]) ** 2))] for i in order])
        whole.append(whole_law_columns(y[order], X[order, 0], d=d, n=n))
    return np.array(top), np.array(along), np.array(whole)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", default="draws", choices=("draws", "laws", "columns", "deterministic", "mgroup"))
    ap.add_argument("--N", type=int, default=1000, help="N = d, n = 2 N")
    ap.add_argument("--alphas", default="0.4,0.4", help="alpha1,alpha2 (eta_t = N^alpha_t)")
    ap.add_argument("--draws", type=int, default=12)
    ap.add_argument("--rows", default="0,2,4,8", help="heavy rows r (--part draws: the first)")
    ap.add_argument("--K", type=int, default=8, help="extreme columns")
    ap.add_argument("--columns", default="whole", choices=("whole", "drawn"), help="--part laws")
    ap.add_argument("--seed0", type=int, default=20000, help="--part columns: the first batch's seed")
    args = ap.parse_args(argv)
    a1, a2 = (float(v) for v in args.alphas.split(","))
    N, eta1, eta2 = args.N, args.N ** a1, args.N ** a2
    rs = [int(v) for v in args.rows.split(",")]
    fmt = lambda v: " ".join(f"{x:.3f}" for x in v)                   # noqa: E731
    print(f"quadratic sigma, He1 + He2/2, reused, N = d = {N}, ({a1}, {a2}), K = {args.K}")
    if args.part == "draws":
        rows, fold = part_draws(N=N, eta1=eta1, eta2=eta2, draws=args.draws, r=rs[0], K=args.K)
        print(f"  {rs[0]} heavy rows; the bulk's fold {fold:.3f}; roots above it and above the block's bulk")
        for seed, (sv, ex, nc, th), top in rows:
            print(f"  seed {seed}: H {fmt(sv[:5])} | exact {fmt(ex[:5])} | no cross terms {fmt(nc[:5])} | "
                  f"kernels {fmt(th[:5])} | the block's bulk {top:.3f}")
        for name, i in (("exact", 1), ("no cross terms", 2), ("kernels", 3)):
            rel = [[v / h - 1 for v, h in zip(r[1][i][:3], r[1][0])] for r in rows]
            by_rank = [[x[k] for x in rel if len(x) > k] for k in range(3)]
            print(f"  {name}: against H, ranks 1-3, mean " + ", ".join(
                f"{100 * np.mean(v):+.2f} % ({len(v)} draws)" for v in by_rank if v))
        return 0
    if args.part == "columns":
        top, along, whole = column_ranks(d=N, draws=args.draws, K=args.K, seed0=args.seed0)
        se = lambda v: fmt(v.std(0, ddof=1) / math.sqrt(len(v)))     # noqa: E731
        print(f"  over {args.draws} batches (seeds {args.seed0} on), by rank")
        print(f"  M's top eigenvalues:                            {fmt(top.mean(0))}")
        print(f"  the eigenvalue along the k-th largest sample:   {fmt(along.mean(0))}")
        print(f"  the whole law at that sample's own (y, z):      {fmt(whole.mean(0))}")
        print(f"  the top eigenvalues less the whole law, paired: {fmt((top - whole).mean(0))}")
        print(f"                                               +- {se(top - whole)}")
        print(f"  the eigenvalue along it less the whole law:     {fmt((along - whole).mean(0))}")
        print(f"                                               +- {se(along - whole)}")
        return 0
    if args.part == "mgroup":
        for K in (15, 30, 60):
            alone, coupled = m_group(d=N, n=2 * N, K=K)
            print(f"  M's top eigenvalues, the batch's {K} most extreme samples alone: {fmt(alone)}")
            print(f"                                               coupled: {fmt(coupled)}")
        return 0
    bulk = quadratic_bulk(N, eta1, eta2)
    if args.part == "deterministic":
        print(f"  the bulk's fold {bulk.edge:.3f}; the batch's top {args.K} samples' columns (whole law)")
        for r in rs:
            for cross in (False, True):
                means, above = deterministic_block(bulk, N=N, eta1=eta1, eta2=eta2, K=args.K, rows=r, cross=cross)
                print(f"  {r} heavy rows (expected){', cross terms' if cross else ''}: {fmt(means)}  "
                      f"({above:.2f} expected above the fold)")
        return 0
    s_grid, g_grid = law_grid(bulk.edge), np.linspace(-6.5, 6.5, 651)
    tables = law_tables(bulk, N, s_grid, g_grid)
    rng = np.random.default_rng(11)
    runs = [law_draw(rng, bulk, tables, s_grid, g_grid, N=N, eta1=eta1, eta2=eta2, K=args.K, rs=rs,
                     columns=args.columns) for _ in range(args.draws)]
    print(f"  columns: {args.columns}; {args.draws} draws; the bulk's fold {bulk.edge:.3f}")
    for r in rs:
        v = np.array([run[r] for run in runs])
        print(f"  {r} heavy rows: {fmt(v.mean(0))}  (+- {fmt(v.std(0, ddof=1) / math.sqrt(len(v)))})")
    if (a1, a2, N) == (0.4, 0.4, 1000):
        print(f"  H over 80 draws (attempt 23): {fmt(H_DRAWS)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
