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
from rmtfl.theory._two_step.sample_group import beyond_cut, group_count, warm_group_count


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


def main(argv=None) -> int:
    from .diag_m_spike import add_grid_arguments

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", choices=("check", "edge", "warm"), default="check")
    ap.add_argument("--activation", default="gelu")
    ap.add_argument("--target", default="hermite(0, 1, 0.5)")
    ap.add_argument("--alphas", default="0.4,0.2", help="alpha1,alpha2")
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
    elif a.part == "warm":
        part_warm(a.activation, a.target, N=a.N, alphas=tuple(float(v) for v in a.alphas.split(",")))
    else:
        part_edge(a.activation, a.target, N=a.N, alphas=tuple(float(v) for v in a.alphas.split(",")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
