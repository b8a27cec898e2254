"""The batch's extreme columns as one coupled group (docs/theory/two_step_attempts.md §13; measured, not kept).

The single-sample law of docs/theory/two_step.md §8.3 treats each of the ``K`` columns the bulk leaves out (the
batch's most extreme samples, ``K = 12``) on its own: sample ``i`` stands out beyond ``x = s^2`` when its strength
``T_ii(x)`` exceeds 1.  In a draw the outliers are where an eigenvalue of the whole ``K x K`` matrix
``T(x) = C^T (x - H_b H_b^T)^{-1} C`` is 1 (``--part samples`` of :mod:`benchmarks.diag_sample_collective`), and
its off-diagonal entries, random with ``E[T_ik^2] = psi^2 E_j[v_ij v_kj tau_j(x)^2] / N``, lift its top eigenvalues.

Here ``T = D + E``: ``D`` the columns' strengths (each bin of the tail at its mean strength with its ``O(N^-1/2)``
Gaussian spread, weighted by its expected number of samples), ``E`` a Wigner matrix with that variance profile.  The
deterministic equivalent of ``D + E`` (the vector Dyson equation ``g_b = E_xi[1 / (q_b + sd_b xi - z - S_b)]``,
``S_b = sum_k w_k eps^2_bk g_k``, at ``z = 1 + i0``) gives its number of eigenvalues above 1 through the
log-determinant ``L = sum_b w_b E log(q_b + sd_b xi - z - S_b) + 1/2 sum_b w_b g_b S_b``: ``#(> 1) = K + Im L / pi``
(:func:`group_count`, checked against sampled ``D + E`` by ``--part check`` and
``tests/theory/two_step/test_sample_group.py``).  The solver is the theory's
(:mod:`rmtfl.theory._two_step.sample_group`, docs/theory/two_step.md §8.3, "The extreme samples as one group";
:func:`group_count` and :func:`warm_group_count` here are its functions).  :func:`coupled_group` puts that count into
the single-sample law in place of the group's columns on their own, each fixed point along the law's grid of ``s``
started from the one before (:func:`warm_group_count`); unlike the theory's
:func:`~rmtfl.theory._two_step.sample_group.grouped_tail_law` it takes another ``count`` and the coupling to ``P``
on the group as well, solves the group at every ``s`` of the grid, and works over whatever single-sample law is in
place.

    python -m benchmarks.diag_sample_group --part check
    python -m benchmarks.diag_sample_group --part edge --activation gelu --alphas 0.4,0.2
    python -m benchmarks.diag_sample_group --part warm --activation "hermite(0, 1, 0.5)" --alphas 0.4,0.2
    python -m benchmarks.diag_sample_group --part batches --activation "gelu;hermite(0, 1, 0.5)" \
        --target "hermite(0, 1, 0, 0.4082482904638631);hermite(0, 1, 0.5)" --alphas "0.4,0.4;0.4,0.2"
    python -m benchmarks.diag_sample_group --grid two_step_finite_n_cache/n1000.json     # about 5 minutes
    python -m benchmarks.diag_sample_group --grid two_step_finite_n_cache/n1000.json --lift whole
    python -m benchmarks.diag_sample_group --grid two_step_finite_n_cache/n1000.json --lift whole --ranks 24
"""
from __future__ import annotations

import argparse
import contextlib
import math
import sys

import numpy as np

# the group's solver, the theory's (other diagnostics and tests import it from here)
from rmtfl.theory._two_step import sample_group
from rmtfl.theory._two_step.sample_group import beyond_cut, coupling_matrix, group_count, warm_group_count


def _group_masks(parts, strength_at_edge):
    """Per batch part, the bins of the samples beyond the bulk's cut, the strongest at the edge first
    (:func:`rmtfl.theory._two_step.sample_group.beyond_cut`)."""
    return [beyond_cut(mass, np.argsort(-st)) for (mass, _, _, _), st in zip(parts, strength_at_edge)]


def edge_strengths(tau, x_edge, parts, *, psi, wa):
    """Each sub-bin's column strength just above the bulk's edge, per batch part (``None`` where the row kernel is
    not defined there)."""
    t_e = tau(x_edge * (1 + 2e-7))
    return None if t_e is None else [psi * (np.asarray(v) @ (wa * t_e)) for _, v, _, _ in parts]


def group_parts(parts, t, *, N, psi, wa, masks):
    """``(q, sd, w, e2, part)`` of the group at the row kernel ``t`` (module docstring); ``part`` the batch part of
    each bin."""
    q, sd, w, V, part = [], [], [], [], []
    for ip, ((mass, vmean, vm2, n_b), m) in enumerate(zip(parts, masks)):
        vmean, vm2 = np.asarray(vmean)[m], np.asarray(vm2)[m]
        mq = vmean @ (wa * t)
        q.append(psi * mq)
        sd.append(psi * np.sqrt(np.clip(vm2 @ (wa * t * t) - mq**2, 0.0, None) / N))
        w.append(np.asarray(mass, dtype=float)[m] * n_b)
        V.append(vmean)
        part.append(np.full(int(m.sum()), ip))
    V = np.vstack(V)
    e2 = np.clip(psi**2 * ((V * (wa * t * t)[None, :]) @ V.T) / N, 0.0, None)
    return np.concatenate(q), np.concatenate(sd), np.concatenate(w), e2, np.concatenate(part)


@contextlib.contextmanager
def coupled_group(count=None, *, shifted: bool = False, own_group: bool = True):
    """The single-sample law (:func:`rmtfl.theory._two_step.sample_order.tail_law`) with the group's columns coupled:
    the law of the other bins as it is, plus the group's expected number above each ``s`` per batch part
    (``count``, default :func:`warm_group_count` along the law's grid) over the part's size.  The coupling to ``P``
    (``shift``) applies to the group's strengths only with ``shifted`` (docs/theory/two_step_attempts.md §24); the
    law without it (``uncoupled``, where the columns of the spikes' joint problem are placed) holds the group
    unshifted, or with ``own_group=False`` leaves it out (the spikes of ``P`` then fall)."""
    from rmtfl.theory._two_step import sample_order

    kept = sample_order.tail_law

    def tail_law(tau, x_edge, x_guess, parts, *, N, psi, wa, shift=None):
        strengths = edge_strengths(tau, x_edge, parts, psi=psi, wa=wa)
        if strengths is None:
            return kept(tau, x_edge, x_guess, parts, N=N, psi=psi, wa=wa, shift=shift)
        masks = _group_masks(parts, strengths)
        rest = [(np.asarray(mass, dtype=float) * ~m, v, v2, n) for (mass, v, v2, n), m in zip(parts, masks)]
        law = kept(tau, x_edge, 2.0 * max(x_guess, x_edge), rest, N=N, psi=psi, wa=wa, shift=shift)

        def with_group(base, push):
            tails = np.array(base, dtype=float)
            counter = count or warm_group_count()      # along the grid of s, each solve from the last one's
            for i, s in enumerate(law.grid):
                t = tau(s * s)
                if t is None:
                    continue
                q, sd, w, e2, part = group_parts(parts, t, N=N, psi=psi, wa=wa, masks=masks)
                c = push(s) if push is not None else None
                if c is not None:          # a column repelled below (-inf) stays far below 1
                    c = np.concatenate([np.asarray(ci, dtype=float)[m] for ci, m in zip(c, masks)])
                    q = q + np.where(np.isfinite(c), c, -10.0 - q)
                above = np.clip(counter(q, sd, w, e2), 0.0, None)
                for ip in range(len(parts)):
                    tails[i, ip] += above[part == ip].sum() / law.sizes[ip]
            # the group's count is non-increasing in s as a law must be
            return np.maximum.accumulate(tails[::-1], axis=0)[::-1]
        if law.uncoupled is None:
            return sample_order.SampleLaw(law.grid, with_group(law.tails, None), law.sizes)
        own = (sample_order.SampleLaw(law.grid, with_group(law.uncoupled.tails, None), law.sizes) if own_group
               else law.uncoupled)
        return sample_order.SampleLaw(law.grid, with_group(law.tails, shift if shifted else None), law.sizes,
                                      uncoupled=own)

    sample_order.tail_law = tail_law
    try:
        yield
    finally:
        sample_order.tail_law = kept


def part_check(draws: int = 4000, seed: int = 0):
    """The deterministic equivalent's count against sampled ``D + E`` (12 columns, uniform couplings)."""
    rng = np.random.default_rng(seed)
    cases = [("near-degenerate, below 1", np.array([0.95, 0.9, 0.88, 0.85, 0.8, 0.8, 0.75, 0.7, 0.7, 0.65, 0.6, 0.55]),
              0.044),
             ("spread out", np.array([3.0, 2.0, 1.5, 1.2, 1.05, 0.9, 0.8, 0.7, 0.6, 0.5, 0.5, 0.4]), 0.088)]
    for name, q, eps in cases:
        K, sd = q.size, np.full(q.size, 0.03)
        e2 = np.full((K, K), eps * eps)
        counts = []
        for _ in range(draws):
            E = np.triu(rng.normal(0.0, eps, (K, K)), 1)
            counts.append(int((np.linalg.eigvalsh(np.diag(q + sd * rng.standard_normal(K)) + E + E.T) > 1).sum()))
        print(f"{name}: deterministic equivalent {group_count(q, sd, np.ones(K), e2).sum():.3f}, "
              f"{draws} draws {np.mean(counts):.3f} ± {np.std(counts) / math.sqrt(draws):.3f}, "
              f"columns alone {group_count(q, sd, np.ones(K), 0 * e2).sum():.3f}")


def part_edge(act: str, tgt: str, *, N: int, alphas):
    """The group at the bulk's edge of one prediction: its strengths by rank, the couplings' rms, and its count above
    1 with and without the couplings."""
    from rmtfl.theory import two_step

    seen = []

    def spy(q, sd, w, e2):
        seen.append((q, sd, w, e2))
        return group_count(q, sd, w, e2)
    with coupled_group(spy):
        p = two_step(act, tgt, psi=1.0, phi=2.0, eta1=N ** alphas[0], eta2=N ** alphas[1], N=N)
    q, sd, w, e2 = max(seen, key=lambda r: float(np.max(r[0])))
    W = np.outer(w, w)
    np.fill_diagonal(W, 0.0)
    rms = math.sqrt(float((W * e2).sum() / W.sum()))
    order = np.argsort(-q)
    ranks = [q[order][min(int(np.searchsorted(np.cumsum(w[order]), k - 0.5)), q.size - 1)] for k in range(1, 13)]
    print(f"{act}, {tgt}, {alphas}, N = {N}: group of {w.sum():.2f} columns, strengths at the edge by rank "
          f"{np.round(ranks, 3).tolist()}, spread {float(w @ sd / w.sum()):.3f}, couplings rms {rms:.4f} "
          f"(2 rms sqrt K = {2 * rms * math.sqrt(w.sum()):.3f}); above 1: "
          f"{group_count(q, sd, w, e2).sum():.2f} coupled, {group_count(q, sd, w, 0 * e2).sum():.2f} alone")
    print(f"  outliers {[round(o.singular_value, 3) for o in p.outliers]}, fitted edge {p.fitted_edge:.3f}")


def part_warm(act: str, tgt: str, *, N: int, alphas):
    """:func:`group_count` and :func:`warm_group_count` on the groups one prediction solves along its law's grid of
    ``s``: the time of each (the faster of three runs) and the largest difference of their counts."""
    import time

    from rmtfl.theory import two_step

    seen = []
    with coupled_group(lambda q, sd, w, e2: seen.append((q, sd, w, np.array(e2))) or group_count(q, sd, w, e2)):
        two_step(act, tgt, psi=1.0, phi=2.0, eta1=N ** alphas[0], eta2=N ** alphas[1], N=N)
    times, counts = {}, {}
    for name in ("cold", "warm"):
        best = math.inf
        for _ in range(3):
            count = warm_group_count() if name == "warm" else group_count
            t0 = time.perf_counter()
            got = [count(*c) for c in seen]
            best = min(best, time.perf_counter() - t0)
        times[name], counts[name] = best, got
    diff = max(float(np.abs(a - b).max()) for a, b in zip(counts["cold"], counts["warm"]))
    print(f"{act}, {tgt}, {alphas}, N = {N}: {len(seen)} groups of {seen[0][0].size} bins; cold "
          f"{times['cold']:.3f} s, warm {times['warm']:.3f} s ({times['cold'] / times['warm']:.1f} x); counts apart "
          f"by at most {diff:.1e}")


@contextlib.contextmanager
def spied_groups():
    """The groups the theory's :func:`~rmtfl.theory._two_step.sample_group.grouped_tail_law` solves, as
    :func:`part_edge` spies on its counts: a list that receives, per law (each its own :func:`warm_group_count`), a
    list of ``(q, sd, w, e2, count)``, ``e2`` the ``B x B`` matrix and ``count`` the group's total above 1."""
    runs, kept = [], sample_group.warm_group_count

    def spy():
        count, seen = kept(), []
        runs.append(seen)

        def spied(q, sd, w, e2, **kw):
            got = count(q, sd, w, e2, **kw)
            seen.append((np.array(q, float), np.array(sd, float), np.array(w, float), coupling_matrix(e2),
                         float(np.sum(got))))
            return got
        return spied
    sample_group.warm_group_count = spy
    try:
        yield runs
    finally:
        sample_group.warm_group_count = kept


def pick_groups(totals, k: int, lo: float = 0.3, hi: float = 4.0):
    """Indices of up to ``k`` of a law's groups, the one nearest (within a factor 1.4) each of ``k`` counts spread
    evenly in log from ``lo`` to ``hi``."""
    totals = np.log(np.maximum(np.asarray(totals, float), 1e-9))
    out = []
    for t in np.log(np.geomspace(lo, hi, k)):
        j = int(np.argmin(np.abs(totals - t)))
        if abs(totals[j] - t) < 0.35 and j not in out:
            out.append(j)
    return out


def batch_counts(q, sd, w, e2, *, draws: int, rng, dyson_draws: int = 0):
    """``(counts, dyson)``: over ``draws`` simulated batches of the group, the number of eigenvalues of ``D + E``
    above 1 (``n_b ~ Poisson(w_b)`` columns of bin ``b``, each of strength ``q_b + sd_b xi``; off-diagonal entries
    Gaussian with variance ``e2[b, k]``, columns of the same bin coupled with ``e2[b, b]``, none to itself), and over
    the first ``dyson_draws`` of them :func:`group_count` at the drawn integer weights ``n_b``."""
    q, sd, w, e2 = (np.asarray(v, float) for v in (q, sd, w, e2))
    E = np.sqrt(np.clip(e2, 0.0, None))
    counts, dyson = np.zeros(draws), np.zeros(min(dyson_draws, draws))
    for k in range(draws):
        n = rng.poisson(w)
        idx = np.repeat(np.arange(q.size), n)
        if idx.size == 0:
            continue
        M = np.triu(rng.standard_normal((idx.size, idx.size)) * E[np.ix_(idx, idx)], 1)
        M += M.T
        M[np.diag_indices(idx.size)] = q[idx] + sd[idx] * rng.standard_normal(idx.size)
        counts[k] = int((np.linalg.eigvalsh(M) > 1.0).sum())
        if k < dyson.size:
            b = np.flatnonzero(n)
            dyson[k] = group_count(q[b], sd[b], n[b].astype(float), e2[np.ix_(b, b)]).sum()
    return counts, dyson


def coupling_lift(q, sd, w, e2, scales=(0.5, 1.0, 2.0)) -> np.ndarray:
    """The group's count above 1 at each of ``scales`` times the couplings ``e2`` less its count without them."""
    e2 = np.asarray(e2, float)
    alone = group_count(q, sd, w, 0.0 * e2).sum()
    return np.array([group_count(q, sd, w, c * e2).sum() - alone for c in scales])


#: The count ranges the part's averages are taken over (Dyson count at the mean weights).
RANGES = ((0.2, 1.0), (1.0, 2.2), (2.2, 5.0))


def part_batches(acts, tgts, *, N: int, alphas, draws: int = 4000, groups: int = 6, seed: int = 0):
    """The groups one prediction solves against simulated batches (:func:`batch_counts`): per law (the samples' law,
    then the count's law above the fold, docs/theory/two_step.md §8.3) ``groups`` of them over counts 0.3 to 4, the
    Dyson count at the bins' mean weights against the batches' mean and the Dyson count averaged over the drawn
    integer weights (paired with the batches), then how much the couplings lift the count (:func:`coupling_lift`),
    averaged by target and count range."""
    from rmtfl.theory import two_step

    rng = np.random.default_rng(seed)
    rows = []
    print(f"per group: the law, Dyson count at the mean weights (D), {draws} batches' mean (MC), Dyson count over the "
          "drawn weights (D(n)), differences (D(n) - MC paired)")
    for act in acts:
        for tgt in tgts:
            for a1, a2 in alphas:
                with spied_groups() as runs:
                    two_step(act, tgt, psi=1.0, phi=2.0, eta1=N ** a1, eta2=N ** a2, N=N, batch="reused")
                print(f"{act}, {tgt}, ({a1}, {a2}), N = {N}: {len(runs)} laws, groups of {runs[0][0][0].size} bins, "
                      f"{runs[0][0][2].sum():.2f} columns")
                for name, seen in zip(("law", "count"), runs):
                    for j in pick_groups([r[4] for r in seen], groups):
                        q, sd, w, e2, tot = seen[j]
                        mc, dy = batch_counts(q, sd, w, e2, draws=draws, rng=rng, dyson_draws=draws)
                        se, pair = mc.std() / math.sqrt(draws), dy - mc
                        rows.append((tgt, tot, tot - mc.mean(), se, pair.mean(), pair.std() / math.sqrt(draws),
                                     *coupling_lift(q, sd, w, e2)))
                        print(f"  {name:<5}  D {tot:6.3f}   MC {mc.mean():6.3f} ± {se:.3f}   D(n) {dy.mean():6.3f} ± "
                              f"{dy.std() / math.sqrt(draws):.3f}   D - MC {tot - mc.mean():+.3f}   D(n) - MC "
                              f"{rows[-1][4]:+.3f} ± {rows[-1][5]:.3f}", flush=True)
    print(f"\n{'target':<40} {'counts':<10} {'groups':>6} {'mean D - MC':>15} {'max |D - MC|':>12} "
          f"{'mean D(n) - MC':>16}")
    for tgt in tgts:
        for lo, hi in RANGES:
            r = np.array([x[1:6] for x in rows if x[0] == tgt and lo <= x[1] < hi]).reshape(-1, 5)
            if len(r):
                se, pair_se = (math.sqrt((r[:, i] ** 2).sum()) / len(r) for i in (2, 4))
                print(f"{tgt:<40} [{lo}, {hi}) {len(r):>6} {r[:, 1].mean():+8.4f} ± {se:.4f} "
                      f"{np.abs(r[:, 1]).max():12.3f} {r[:, 3].mean():+8.4f} ± {pair_se:.4f}")
    print(f"\nthe couplings' lift (count at c e2 less at 0), mean over groups\n{'target':<40} {'counts':<10} "
          f"{'groups':>6} {'count at 0':>10} {'c = 0.5':>8} {'c = 1':>8} {'c = 2':>8}")
    for tgt in tgts:
        for lo, hi in RANGES:
            r = np.array([(x[1], *x[6:]) for x in rows if x[0] == tgt and lo <= x[1] < hi]).reshape(-1, 4)
            if len(r):
                print(f"{tgt:<40} [{lo}, {hi}) {len(r):>6} {(r[:, 0] - r[:, 2]).mean():10.3f} "
                      + " ".join(f"{v:8.3f}" for v in r[:, 1:].mean(axis=0)))


def main(argv=None) -> int:
    from .diag_m_spike import add_grid_arguments

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", choices=("check", "edge", "warm", "batches"), default="check")
    ap.add_argument("--activation", default="gelu")
    ap.add_argument("--target", default="hermite(0, 1, 0.5)")
    ap.add_argument("--alphas", default="0.4,0.2", help="alpha1,alpha2 (--part batches: ';' between points; "
                    "';' between activations and targets as well)")
    ap.add_argument("--draws", type=int, default=4000, help="--part batches: batches per group")
    ap.add_argument("--groups", type=int, default=6, help="--part batches: groups per law, over counts 0.3 to 4")
    ap.add_argument("--seed", type=int, default=0, help="--part batches")
    ap.add_argument("--N", type=int, default=1000)
    add_grid_arguments(ap)
    ap.add_argument("--lift", choices=("whole", "collective"), default=None,
                    help="with --grid: the eigenvalue of M along the samples lifted as well "
                         "(benchmarks.diag_sample_coupling.coupled_with, without the coupling to P)")
    ap.add_argument("--ranks", default=None, help="with --grid: this many extreme samples out of the bulk in place of "
                    "12 (benchmarks.diag_count_statistic.extreme_ranks; docs/theory/two_step_attempts.md §18)")
    a = ap.parse_args(argv)
    if a.grid:
        from .diag_count_statistic import extreme_ranks
        from .diag_m_spike import run_grid
        from .diag_sample_coupling import coupled_with

        @contextlib.contextmanager
        def variant(target):
            with contextlib.ExitStack() as st:
                if a.ranks:
                    st.enter_context(extreme_ranks(a.ranks))
                st.enter_context(coupled_group())
                st.enter_context(coupled_with(a.lift, target, float(a.N), couple=False))
                yield
        name = "coupled group" + (f" + {a.lift}" if a.lift else "") + (f", {a.ranks} ranks" if a.ranks else "")
        run_grid(a.grid, N=a.N, batch=a.batch, own=a.own_seeds, variant=(name, variant))
    elif a.part == "check":
        part_check()
    elif a.part == "batches":
        part_batches(a.activation.split(";"), a.target.split(";"), N=a.N, draws=a.draws, groups=a.groups, seed=a.seed,
                     alphas=[tuple(float(v) for v in p.split(",")) for p in a.alphas.split(";")])
    elif a.part == "warm":
        part_warm(a.activation, a.target, N=a.N, alphas=tuple(float(v) for v in a.alphas.split(",")))
    else:
        part_edge(a.activation, a.target, N=a.N, alphas=tuple(float(v) for v in a.alphas.split(",")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
