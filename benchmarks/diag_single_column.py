"""A single sample's column batch by batch: its own location, planted alone and in natural batches, the law's order
statistics built from it, and the bulk below it (docs/theory/two_step_attempts.md §26; measured, not kept).

The single-sample law of docs/theory/two_step.md §8.3 places the column of a sample ``(y, z*)`` where its strength
``psi E_j[v_j tau_j(x)]`` crosses 1 (:func:`column_location`); with the coupling to ``P``
(:mod:`rmtfl.theory._two_step.sample_coupling`, off in the prediction) the shift ``c(s)`` is added to that strength.

``--part natural`` draws natural reused batches (seeds ``--seed0`` on) and sets ``W_2``'s value on the batch's
``--rank``-th most extreme sample (the singular value whose right vector leans most on it, ``cos^2 > 0.1``) beside
the column's location at the sample's own ``(y, z*)``: uncoupled, coupled, and coupled at ``M``'s drawn eigenvalue
along the sample.  ``--part planted`` does the same for one sample planted at ``z* = --z``, every other ``|z*|`` kept
below 2.9 (``--others isolated``) or below ``|z| - 0.05`` (``natural``).  ``--part ladder`` builds the law of the
batch's top single sample from those locations over the law of the largest ``z*`` of ``n`` (``Phi(t)^n``, without
drawing) and sets it beside the prediction's own first rank.  ``--part bulk`` sets the median of cached draws'
ranks (``bench_two_step_finite_n --cache``) beside the bulk's top values: over every sample (``K = 0``), without
the batch's ``K`` most extreme (the prediction), and attempt 15's bulk of ``d - K`` columns with the left-out
columns' spectral shift.  ``--part grid`` runs the acceptance grid of cached draws with the coupling, the whole-law
eigenvalue of ``M`` (attempt 4) and attempt 15's bulk, alone and together (:func:`variants`)::

    python -m benchmarks.diag_single_column --part natural --draws 20
    python -m benchmarks.diag_single_column --part planted --z 3.66 --others isolated
    python -m benchmarks.diag_single_column --part ladder
    python -m benchmarks.diag_single_column --part bulk --N 2000 --alphas 0.4,0.4 --cache CACHE/n2000.json
    python -m benchmarks.diag_single_column --part grid --cache CACHE/n1000.json

(``CACHE``: the draws of ``bash benchmarks/two_step_finite_n_page.sh CACHE``.)
Defaults: gelu, He1 + He2/2, ``(0.1, 0.4)``, ``N = d = 1000``, ``n = 2N``, reused.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import math
import sys
from dataclasses import dataclass

import numpy as np
from scipy import optimize, special

HE2 = "hermite(0, 1, 0.5)"


@dataclass(frozen=True)
class PointModel:
    """The prediction's parts at one reused point, as :func:`rmtfl.theory._two_step.finite_n.predict_finite_n`
    builds them: the setup, the widened bulk without the ``K`` most extreme samples, the second step's move ``rho``,
    the rows' flat noise, the bulk's law of ``y``, and ``P``'s block (its Gram matrices and spikes above the edge)."""

    act: object
    target: object
    st: object
    bulk: object
    rho: np.ndarray
    r_rows: np.ndarray
    y_law: tuple
    G_U_w: object
    G_V: np.ndarray
    g: np.ndarray
    n_spikes: int
    tn: np.ndarray
    N: int
    eta1: float
    eta2: float

    @property
    def d(self) -> int:
        return self.N

    @property
    def n(self) -> int:
        return 2 * self.N


def point_model(activation, target, *, N: int, eta1: float, eta2: float) -> PointModel:
    """:class:`PointModel` at ``N = d``, ``n = 2N``, reused."""
    from rmtfl.theory import get_activation, make_target
    from rmtfl.theory._two_step import finite_n as fn
    from rmtfl.theory._two_step.bulk_edge import y_law
    from rmtfl.theory._two_step.sample_spikes import second_step_move, y_law_truncated

    act, tgt = get_activation(activation), make_target(target)
    st = fn.finite_n_setup(act, tgt, phi=2.0, batch="reused", phi2=None)
    _, G_V, _, tn, g, wg, _, _ = fn.finite_n_grams(act, st, eta1=eta1, eta2=eta2, N=float(N), bulk=False)
    K = fn.extreme_ranks(N=N, psi=1.0, phi=2.0, phi2=None, batch="reused")
    bulk = fn.bulk_without(act, tgt, st, ranks=K, eta1=eta1, eta2=eta2, N=float(N), psi=1.0, tn=tn)
    G_U_w = fn.weighted_gram_u(g, wg)
    e0 = fn.master_eigs(bulk, bulk.edge * (1 + 1e-7), G_U_w, G_V, g, float(N))
    laws = y_law(tgt) if bulk.zrange is None else y_law_truncated(tgt, bulk.zrange)
    return PointModel(act, tgt, st, bulk, second_step_move(act, st, eta1 * bulk.a), bulk.functions(bulk.a)[:, 5],
                      laws, G_U_w, G_V, g, 0 if e0 is None else int(np.sum(e0 > 1.0)), tn, N, eta1, eta2)


def column_location(m: PointModel, y: float, z: float, *, lam=None, couple: bool = False) -> float:
    """Where the column of one sample ``(y, z*)`` stands (module docstring): the root above the bulk's fold of its
    strength less 1, the fold where it stays below; ``lam``: ``M``'s eigenvalue along it (default the prediction's
    :func:`~rmtfl.theory._two_step.sample_spikes.extreme_eigenvalues`); ``couple``: with the shift of the coupling to
    ``P``."""
    from rmtfl.theory._two_step import finite_n as fn
    from rmtfl.theory._two_step.sample_coupling import law_shift
    from rmtfl.theory._two_step.sample_spikes import extreme_eigenvalues, sample_strengths

    b, N = m.bulk, float(m.N)
    ys, zs = np.array([y], float), np.array([z], float)
    lams = extreme_eigenvalues(ys, zs, 2.0, *m.y_law, b.zrange) if lam is None else [float(lam)]
    _, rws = sample_strengths(m.act, m.st, ys=ys, zs=zs, eta1=m.eta1, eta2=m.eta2, N=N, d=float(m.d),
                              g=b.a * math.sqrt(N), wg=b.wa, which="both", lams=lams, rho=m.rho)
    v = 1.0 + m.r_rows + rws[0]
    shift = None
    if couple:
        U = fn.sample_components(m.act, m.st, m.eta1, m.eta2, m.tn, ys, zs, float(m.d), "both")
        shift = law_shift(b, m.G_U_w, m.G_V, m.g, N, [U], m.n_spikes)

    def excess(s):
        c = None if shift is None else shift(s)
        return float(v @ (b.wa * b.tau_rows(b.a, s * s)[0])) - 1.0 + (0.0 if c is None else float(c[0][0]))

    lo = b.edge * (1 + 1e-7)
    if excess(lo) <= 0.0:
        return float(b.edge)
    hi = 1.5 * lo
    while excess(hi) > 0.0:
        hi *= 1.5
    return float(optimize.brentq(excess, lo, hi, xtol=1e-10))


def batch_value(activation, target, *, N: int, eta1: float, eta2: float, seed: int, rank: int = 0, planted=None,
                others: str = "isolated"):
    """One reused batch (``numpy.random.default_rng(seed)``; ``W_0 ~ N(0, 1/d)``, ``a ~ N(0, 1/N)``): ``(value, y, z,
    lam)`` of its ``rank``-th most extreme sample, or of the sample planted at ``z* = planted`` (the other ``|z*|``
    redrawn uniform on ``[-2, 2]`` beyond 2.9, ``others="isolated"``, or beyond ``|planted| - 0.05``): ``W_2``'s
    singular value leaning most on it (``nan`` where none of the top 12 has ``cos^2 > 0.1``) and ``M``'s eigenvalue
    along it."""
    from rmtfl.numerics import gd_steps, sample_targets

    d, n = N, 2 * N
    rng = np.random.default_rng(seed)
    W0 = rng.standard_normal((N, d)) / math.sqrt(d)
    a = rng.standard_normal(N) / math.sqrt(N)
    X = rng.standard_normal((n, d))
    if planted is not None:
        big = np.abs(X[:, 0]) > (2.9 if others == "isolated" else abs(planted) - 0.05)
        X[big, 0] = rng.uniform(-2.0, 2.0, int(big.sum()))
        X[0, 0] = planted
    y = np.asarray(sample_targets(X, target=target), dtype=float)
    i = 0 if planted is not None else int(np.argsort(-y)[rank])
    W = gd_steps(activation, W0, a, (X, y), etas=(eta1, eta2))
    _, S, Vt = np.linalg.svd(W, full_matrices=False)
    x = X[i] / np.linalg.norm(X[i])
    c = (Vt[:12] @ x) ** 2
    ev, vec = np.linalg.eigh(X.T @ (y[:, None] * X) / n)
    lam = float(ev[int(np.argmax((vec.T @ x) ** 2))])
    return (float(S[int(np.argmax(c))]) if c.max() > 0.1 else math.nan), float(y[i]), float(X[i, 0]), lam


def value_ratios(rows, m: PointModel) -> dict:
    """Per form of the column's location, the mean and standard error of ``value / location`` over ``rows`` of
    :func:`batch_value` (rows without a value left out)."""
    forms = {"uncoupled": {}, "coupled": {"couple": True}, "coupled, M's eigenvalue": {"couple": True, "lam": True}}
    out = {}
    for name, kw in forms.items():
        r = np.array([v / column_location(m, y, z, couple=kw.get("couple", False), lam=lam if kw.get("lam") else None)
                      for v, y, z, lam in rows if math.isfinite(v)])
        out[name] = (float(r.mean()), float(r.std(ddof=1) / math.sqrt(r.size)) if r.size > 1 else math.nan)
    return out


def ladder(m: PointModel, *, zs=None, couple: bool = False) -> dict:
    """The law of the batch's top single sample from the column locations at ``z*`` (He1 + He2/2: ``y`` grows with
    the largest ``z*``) over the law ``Phi(t)^n`` of the largest of ``n`` (module docstring): its mean, its median and
    ``P(S > s)`` on the locations' grid, without drawing."""
    zs = np.linspace(2.6, 5.2, 27) if zs is None else np.asarray(zs, dtype=float)
    ys = np.asarray(m.target.links[0](zs), dtype=float)
    loc = np.maximum.accumulate(np.array([column_location(m, y, z, couple=couple) for y, z in zip(ys, zs)]))
    F = special.ndtr(zs) ** m.n                                  # P(largest z* <= t)
    dF = np.diff(np.concatenate([[0.0], F, [1.0]]))
    mids = np.concatenate([[loc[0]], 0.5 * (loc[1:] + loc[:-1]), [loc[-1]]])
    mean = float(dF @ mids)
    median = float(np.interp(0.5, F, loc))
    return {"mean": mean, "median": median, "grid": loc, "above": 1.0 - F}


def law_first_rank(m: PointModel, *, couple: bool = False):
    """The prediction's own first single-sample rank ``(mean, median)`` at this point, from the sample's own law
    (:func:`benchmarks.diag_m_spike.as_own_laws`; uncoupled as it is, or with
    :data:`~rmtfl.theory._two_step.sample_coupling.COUPLE_SAMPLES`)."""
    from rmtfl.theory._two_step import finite_n as fn

    from .diag_m_spike import as_own_laws
    from .diag_sample_coupling import coupled_samples

    with coupled_samples() if couple else contextlib.nullcontext(), as_own_laws():
        r = fn.predict_finite_n(m.act, m.target, psi=1.0, phi=2.0, phi2=None, eta1=m.eta1, eta2=m.eta2,
                                batch="reused", N=float(m.N))
    return (r.samples[0][0], r.samples[0][2]) if r.samples else (math.nan, math.nan)


def bulk_ranks(m: PointModel, count: int) -> dict:
    """The bulk's top ``count`` values (docs/theory/two_step.md §9.2) over every sample (``K = 0``), as the prediction
    builds it (``K`` most extreme samples left out) and as attempt 15's bulk (:func:`benchmarks.diag_column_shift.
    column_shift`, ``"without"``), each under the outliers the prediction puts above it (over every sample under the
    spikes of ``P`` only; ``nan`` beyond the values the prediction places)."""
    from rmtfl.theory._two_step import finite_n as fn, two_step as two_step_module

    from .diag_column_shift import column_shift

    out, spikes = {}, None
    for name, ctx in (("as is", contextlib.nullcontext()), ("attempt 15", column_shift("without"))):
        with ctx:
            r = two_step_module.predict_finite_n(m.act, m.target, psi=1.0, phi=2.0, phi2=None, eta1=m.eta1,
                                                 eta2=m.eta2, batch="reused", N=float(m.N))
        spikes = list(r.locations) if spikes is None else spikes
        above = sorted(list(r.locations) + [s for s, _, _ in r.samples], reverse=True)
        out[name] = (above + list(r.bulk_top) + [math.nan] * count)[:count]
    whole = fn.bulk_without(m.act, m.target, m.st, ranks=0, eta1=m.eta1, eta2=m.eta2, N=float(m.N), psi=1.0, tn=m.tn)
    return {"K = 0": (sorted(spikes, reverse=True) + list(whole.top_values(count)))[:count], **out}


@contextlib.contextmanager
def _stacked(*contexts):
    with contextlib.ExitStack() as stack:
        for c in contexts:
            stack.enter_context(c)
        yield


def variants(N: int) -> dict:
    """``name -> context(target)``: the prediction as it is, with the coupling to ``P``
    (:func:`benchmarks.diag_sample_coupling.coupled_samples`), with the whole-law eigenvalue of ``M``
    (:func:`benchmarks.diag_m_spike.whole_law_eigenvalues`), both, attempt 15's bulk, and all three."""
    from .diag_column_shift import column_shift
    from .diag_m_spike import whole_law_eigenvalues
    from .diag_sample_coupling import coupled_samples

    return {"as is": lambda t: contextlib.nullcontext(),
            "coupled": lambda t: coupled_samples(),
            "whole law": lambda t: whole_law_eigenvalues(t, float(N)),
            "coupled + whole law": lambda t: _stacked(coupled_samples(), whole_law_eigenvalues(t, float(N))),
            "attempt 15's bulk": lambda t: column_shift("without"),
            "all three": lambda t: _stacked(column_shift("without"), coupled_samples(),
                                            whole_law_eigenvalues(t, float(N)))}


def grid(cache: dict, *, N: int, activations, alphas, batch: str = "reused") -> dict:
    """Per activation and target, per variant (:func:`variants`): how many of the cached points (at least 25 draws)
    pass all three criteria, the values, the counts and the edges (docs/theory/two_step.md §8.4), and at how many the
    sign test does not set the count apart."""
    from rmtfl.theory import make_target

    from . import bench_two_step_finite_n as bench

    table = {}
    for act in activations:
        for tgt in bench.TARGETS:
            row = table.setdefault((act, tgt), {})
            for a1 in alphas:
                for a2 in alphas:
                    rows = cache.get(bench.cache_key(act, tgt, batch, a1, a2, N), [])
                    if len(rows) < 25:
                        continue
                    for name, context in variants(N).items():
                        with context(make_target(tgt)):
                            r = bench.compare_cell(act, tgt, batch, a1, a2, N, rows)
                        ok = (r["values_ok"], r["count_ok"], r["edge_ok"])
                        tally = row.setdefault(name, [0] * 5)
                        row[name] = [t + v for t, v in zip(tally, (all(ok),) + ok + (r["count_p"] >= 0.05,))]
    return table


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", default="natural", choices=("natural", "planted", "ladder", "bulk", "grid"))
    ap.add_argument("--activation", default="gelu")
    ap.add_argument("--target", default=HE2)
    ap.add_argument("--alphas", default="0.1,0.4", help="alpha1,alpha2 (eta_t = N^alpha_t)")
    ap.add_argument("--N", type=int, default=1000, help="N = d, n = 2N")
    ap.add_argument("--draws", type=int, default=8)
    ap.add_argument("--seed0", type=int, default=60000)
    ap.add_argument("--rank", type=int, default=0, help="--part natural: the batch's rank-th most extreme sample")
    ap.add_argument("--z", type=float, default=3.66, help="--part planted: z* of the planted sample")
    ap.add_argument("--others", default="isolated", choices=("isolated", "natural"))
    ap.add_argument("--cache", default=None, help="--part bulk, grid: a cache of bench_two_step_finite_n")
    ap.add_argument("--activations", default="gelu", help="--part grid: ';'-separated")
    ap.add_argument("--grid-alphas", default="0,0.1,0.2,0.3,0.4", help="--part grid: the alpha grid")
    args = ap.parse_args(argv)
    a1, a2 = (float(v) for v in args.alphas.split(","))
    N = args.N
    eta1, eta2 = N ** a1, N ** a2
    if args.part in ("bulk", "grid") and args.cache is None:
        ap.error(f"--part {args.part} needs --cache")
    if args.part == "grid":
        with open(args.cache) as f:
            cache = json.load(f)
        table = grid(cache, N=N, activations=args.activations.split(";"),
                     alphas=[float(v) for v in args.grid_alphas.split(",")])
        print(f"N = {N}, reused: points passing all three / values / counts / edges / the sign test")
        for (act, tgt), row in table.items():
            print(f"  {act} {tgt}: " + "; ".join(f"{k} {'/'.join(map(str, v))}" for k, v in row.items()))
        return 0
    m = point_model(args.activation, args.target, N=N, eta1=eta1, eta2=eta2)
    print(f"{args.activation}, {args.target}, reused, N = d = {N}, ({a1}, {a2}); the bulk's fold {m.bulk.edge:.4f}, "
          f"{m.n_spikes} spike(s) of P above it")
    if args.part in ("natural", "planted"):
        rows = []
        for s in range(args.draws):
            row = batch_value(args.activation, args.target, N=N, eta1=eta1, eta2=eta2, seed=args.seed0 + s,
                              rank=args.rank, planted=args.z if args.part == "planted" else None, others=args.others)
            rows.append(row)
            print(f"  seed {args.seed0 + s}: y {row[1]:.3f}, z* {row[2]:.3f}, M's eigenvalue {row[3]:.3f}: "
                  f"W_2 {row[0]:.4f}, column {column_location(m, row[1], row[2]):.4f}", flush=True)
        for name, (mean, se) in value_ratios(rows, m).items():
            print(f"  W_2 / column location, {name}: {mean:.4f} +- {se:.4f}")
        return 0
    if args.part == "ladder":
        for couple in (False, True):
            lad, (mean, median) = ladder(m, couple=couple), law_first_rank(m, couple=couple)
            print(f"  {'coupled' if couple else 'uncoupled'}: from the column locations mean {lad['mean']:.4f}, "
                  f"median {lad['median']:.4f}; the prediction's first rank mean {mean:.4f}, median {median:.4f}")
        return 0
    from . import bench_two_step_finite_n as bench

    with open(args.cache) as f:
        rows = json.load(f)[bench.cache_key(args.activation, args.target, "reused", a1, a2, N)]
    S = np.median(np.array([r["sv"] for r in rows]), axis=0)
    count = min(S.size, 50)
    ranks = bulk_ranks(m, count)
    print(f"  rank  draws' median ({len(rows)} draws)  " + "  ".join(ranks))
    for k in (1, 2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 24, 32, 40, 50):
        if k <= count:
            print(f"  {k:4d}  {S[k - 1]:.4f}  " + "  ".join(f"{v[k - 1]:.4f} ({100 * (S[k - 1] / v[k - 1] - 1):+.2f} %)"
                                                        for v in ranks.values()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
