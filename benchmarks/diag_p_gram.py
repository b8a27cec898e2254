"""The spikes of ``P`` over a typical batch, its most extreme sample over its own law
(docs/theory/two_step_attempts.md §21; measured, not kept).

The prediction forms the Gram matrix ``G_V`` of the right vectors of ``P`` from the population law of ``y``
(docs/theory/two_step.md §8.2).  With a heavy-tailed target its entries hold moments such as ``E[y^4]`` that a
batch's few most extreme samples set, so over batches ``G_V`` is skewed: its typical value lies below its mean, and
the spikes of ``P`` with it.  Here ``G_V`` is formed over a typical batch instead: the samples the widened bulk keeps
by its quadrature, the next ``K - 1`` most extreme at the quantiles the prediction's own extreme columns use
(:func:`rmtfl.theory._two_step.sample_spikes.typical_extremes`), and the most extreme at each of ``Q`` quantiles of
its own law (``P(max |z*| <= u) = (1 - 2 Phi(-u))^n``), on either side; the prediction's values are averaged over
those ``2 Q`` batches.  A second form keeps the Gram's mean over batches: the law given the most extreme sample
(:func:`conditional_rule`), averaged over the same quantiles.

``--part draws``: the quadratic sigma with a reused batch, where ``P = W_2 - H`` exactly
(:func:`benchmarks.diag_fresh_sample.quadratic_h`): the singular values of ``P`` over simulated draws beside the
prediction's and the typical batches'.  ``--part grid``: the values criterion of the acceptance page on a cached grid
of reused batches (:mod:`benchmarks.bench_two_step_finite_n`), as it is and averaged over the typical batches::

    python -m benchmarks.diag_p_gram --part draws --N 500 --alphas 0.2,0.3
    python -m benchmarks.diag_p_gram --part grid --grid two_step_finite_n_cache/n500own.json --N 500
    python -m benchmarks.diag_p_gram --part grid --grid two_step_finite_n_cache/n1000own.json --N 1000 --couple
"""
from __future__ import annotations

import argparse
import contextlib
import math
import sys

import numpy as np
from scipy import special

HE3 = "hermite(0, 1, 0, 0.4082482904638631)"
QUADRATIC = "hermite(0, 1, 0.5)"


def typical_rule(target, n: int, K: int, zmax: float | None = None):
    """Nodes and weights of ``z*`` over a typical batch of ``n`` (module docstring): the bulk's interval by quadrature,
    the ``K`` most extreme samples at their quantiles, the most extreme at ``zmax`` when given; ``None`` where the
    bulk keeps every sample."""
    from rmtfl.theory._two_step.sample_spikes import bulk_cut, truncated_rule, typical_extremes

    zr = bulk_cut(target, n, ranks=K)
    if zr is None:
        return None
    zb, wb = truncated_rule(*zr, order=48)
    _, ze = typical_extremes(target, n, K)
    if zmax is not None:
        ze = np.concatenate([[zmax], ze[1:]])
    return np.concatenate([zb, ze]), np.concatenate([wb, np.full(ze.size, 1.0 / n)])


def conditional_rule(n: int, zmax: float, order: int = 64):
    """Nodes and weights of ``z*`` over a batch of ``n`` given its most extreme sample at ``zmax``: the other ``n - 1``
    from the law of ``z*`` on ``|z*| < |zmax|``, and ``zmax`` with weight ``1/n``.  Its mean over the law of
    ``zmax`` is the population law itself, so the Gram matrices' means over batches are kept."""
    from rmtfl.theory._two_step.sample_spikes import truncated_rule

    u = abs(zmax)
    zb, wb = truncated_rule(-u, u, order=order)
    wb = wb * (n - 1) / (n * wb.sum())
    return np.concatenate([zb, [zmax]]), np.concatenate([wb, [1.0 / n]])


def max_nodes(n: int, Q: int) -> np.ndarray:
    """``|z*|`` of a batch's most extreme sample at the ``(k - 1/2)/Q`` quantiles of its law."""
    levels = (np.arange(Q) + 0.5) / Q
    return -special.ndtri((1.0 - levels ** (1.0 / n)) / 2.0)


@contextlib.contextmanager
def typical_gram(target, rule):
    """Within the block the prediction takes ``G_V`` over the data grid ``rule`` (:func:`typical_rule`); its other
    pieces keep the population law."""
    from rmtfl.theory._two_step import finite_n as fn

    kept = fn.finite_n_grams

    def grams(act, st, *, eta1, eta2, N, second_layer="gaussian", bulk=True):
        out = list(kept(act, st, eta1=eta1, eta2=eta2, N=N, second_layer=second_layer, bulk=bulk))
        if not bulk and rule is not None:
            st_t = fn.finite_n_setup(act, target, phi=st.phi, batch=st.batch, phi2=st.phi2, zs_rule=rule,
                                     ey2_ref=st.ey2)
            out[1] = kept(act, st_t, eta1=eta1, eta2=eta2, N=N, second_layer=second_layer, bulk=False)[1]
        return tuple(out)
    fn.finite_n_grams = grams
    try:
        yield
    finally:
        fn.finite_n_grams = kept


def over_typical_batches(act: str, tgt: str, *, N: int, alphas, Q: int = 4, K: int = 12, given_max: bool = False):
    """``(prediction as it is, spikes of P per typical batch, outlier values averaged over the typical batches)`` at
    ``psi = 1``, ``phi = 2``, a reused batch; a rank a typical batch lacks is left out of its mean.  ``given_max``: each batch is the law given its most extreme
    sample (:func:`conditional_rule`) instead of :func:`typical_rule`."""
    from rmtfl.theory import make_target, two_step

    target = make_target(tgt)
    kw = dict(psi=1.0, phi=2.0, eta1=N ** alphas[0], eta2=N ** alphas[1], N=N, batch="reused")
    p0 = two_step(act, tgt, **kw)
    R = max(len(p0.outliers), 1)
    spikes, values = [], []
    for u in max_nodes(2 * N, Q):
        for side in (1.0, -1.0):
            rule = conditional_rule(2 * N, side * u) if given_max else typical_rule(target, 2 * N, K, side * u)
            with typical_gram(target, rule):
                p = two_step(act, tgt, **kw)
            spikes.append(list(p.spikes[:2]) + [0.0] * (2 - len(p.spikes[:2])))
            v = [o.singular_value for o in p.outliers][:R]
            values.append(v + [np.nan] * (R - len(v)))
    return p0, np.array(spikes), np.nanmean(np.array(values), axis=0)


def part_draws(N: int, alphas, draws: int, tgt: str = HE3, Q: int = 4):
    """The singular values of ``P = W_2 - H`` (quadratic sigma, reused) over draws (seeds 9000, 9001, ...) beside the
    prediction's ``P`` and the typical batches'."""
    from rmtfl.numerics._two_step.model import gd_steps, sample_targets
    from rmtfl.theory import get_activation, make_target

    from .diag_fresh_sample import quadratic_h

    act, target = get_activation(QUADRATIC), make_target(tgt)
    eta1, eta2 = N ** alphas[0], N ** alphas[1]
    P = []
    for s in range(draws):
        rng = np.random.default_rng(9000 + s)
        W0 = rng.standard_normal((N, N)) / math.sqrt(N)
        a = rng.standard_normal(N) / math.sqrt(N)
        X = rng.standard_normal((2 * N, N))
        y = sample_targets(X, target=target)
        W2 = gd_steps(act, W0, a, (X, y), etas=(eta1, eta2))
        P.append(np.linalg.svd(W2 - quadratic_h(W0, a, X, y, eta1, eta2), compute_uv=False)[:2])
    P = np.array(P)
    p0, sp, _ = over_typical_batches(QUADRATIC, tgt, N=N, alphas=alphas, Q=Q)
    _, sc, _ = over_typical_batches(QUADRATIC, tgt, N=N, alphas=alphas, Q=Q, given_max=True)
    print(f"quadratic sigma, {tgt}, N = d = {N}, n = {2 * N}, (alpha1, alpha2) = {tuple(alphas)}: singular values of P")
    print(f"  {draws} draws: mean {np.round(P.mean(0), 3).tolist()} +- {np.round(P.std(0, ddof=1) / math.sqrt(draws), 3).tolist()}, "
          f"median {np.round(np.median(P, 0), 3).tolist()}")
    print(f"  the prediction's (population law): {np.round(p0.spikes[:2], 3).tolist()}")
    print(f"  typical batches, the most extreme sample over {Q} quantiles on either side: mean "
          f"{np.round(sp.mean(0), 3).tolist()}, median {np.round(np.median(sp, 0), 3).tolist()}")
    print(f"  the law given its most extreme sample, over the same quantiles: mean {np.round(sc.mean(0), 3).tolist()}, "
          f"median {np.round(np.median(sc, 0), 3).tolist()}")


def part_grid(path: str, N: int, acts, tgt: str = HE3, Q: int = 4, draws: int = 25, couple=False,
              whole=False, given_max=False):
    """The values criterion of the acceptance page at the points of ``acts`` and ``tgt`` of a cached grid, with ``P``
    over the population law (the prediction as it is) and averaged over the typical batches; ``couple``: both with the single samples coupled to ``P`` (attempt 10,
    :func:`benchmarks.diag_sample_coupling.coupled_samples`), ``whole``: with the whole-law eigenvalue of ``M``
    along them (attempt 4); ``given_max``: the batches of :func:`conditional_rule`."""
    from rmtfl.theory import make_target

    from .bench_two_step_finite_n import middle_counts, values_within
    from .diag_count_law import cache_points
    from .diag_m_spike import whole_law_eigenvalues
    from .diag_sample_coupling import coupled_samples

    tot = dict(points=0, population=0, typical=0)
    for act, t, a1, a2, S, counts in cache_points(path, N, "reused", draws):
        if act not in acts or t != tgt:
            continue
        with contextlib.ExitStack() as st:
            if couple:
                st.enter_context(coupled_samples())
            if whole:
                st.enter_context(whole_law_eigenvalues(make_target(t), float(N)))
            p0, _, v1 = over_typical_batches(act, t, N=N, alphas=(a1, a2), Q=Q, given_max=given_max)
        v0 = [o.singular_value for o in p0.outliers]
        m = middle_counts(counts)[0]
        good0, good1 = values_within(v0, S, m)[0], values_within(list(v1), S, m)[0]
        tot["points"] += 1
        tot["population"] += good0
        tot["typical"] += good1
        print(f"  {act}, ({a1}, {a2}): draws {np.round(S[:, :4].mean(0), 3).tolist()}; P over the population "
              f"{np.round(v0[:4], 3).tolist()} {'pass' if good0 else 'fail'}; typical batches "
              f"{np.round(v1[:4], 3).tolist()} {'pass' if good1 else 'fail'}", flush=True)
    variant = (" with the coupling to P" * couple + " with the whole-law eigenvalue" * whole
               + ", the batches given their most extreme sample" * given_max)
    print(f"N = {N}, reused, {tgt}{variant}: values pass {tot}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", choices=("draws", "grid"), default="draws")
    ap.add_argument("--N", type=int, default=500)
    ap.add_argument("--alphas", default="0.2,0.3", help="with --part draws: alpha1,alpha2")
    ap.add_argument("--draws", type=int, default=12, help="with --part draws")
    ap.add_argument("--target", default=HE3)
    ap.add_argument("--Q", type=int, default=4, help="quantiles of the most extreme sample's law, on either side")
    ap.add_argument("--grid", default=None, metavar="CACHE", help="with --part grid: the acceptance grid's draws")
    ap.add_argument("--activations", default=f"{QUADRATIC};gelu", help="with --part grid: ';'-separated")
    ap.add_argument("--couple", action="store_true", help="with --part grid: the single samples coupled to P")
    ap.add_argument("--whole", action="store_true", help="with --part grid: the whole-law eigenvalue of M")
    ap.add_argument("--given-max", action="store_true", help="with --part grid: the batches given their most extreme "
                    "sample (conditional_rule) in place of the typical ones")
    a = ap.parse_args(argv)
    if a.part == "draws":
        part_draws(a.N, [float(v) for v in a.alphas.split(",")], a.draws, a.target, a.Q)
    else:
        if not a.grid:
            ap.error("--part grid needs --grid CACHE")
        part_grid(a.grid, a.N, a.activations.split(";"), a.target, a.Q, couple=a.couple, whole=a.whole,
                  given_max=a.given_max)
    return 0


if __name__ == "__main__":
    sys.exit(main())
