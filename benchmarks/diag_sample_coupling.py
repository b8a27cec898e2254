"""The single-sample outliers of the quadratic sigma taken apart: the columns on their own (``H = W_2 - P``) and
their coupling to the spikes of ``P`` (docs/theory/two_step.md §8.4, "The columns and P taken apart"; measured, not
kept).

For ``sigma = He1 + He2/2`` and one reused batch, ``W_2 = H + P`` exactly (``P`` of rank two,
:func:`benchmarks.diag_fresh_sample.quadratic_h`), and along each eigenvector ``e`` of ``M = X^T diag(y) X / n``
(eigenvalue ``lambda``) ``H e = (W_0 e) * c``, ``c_j = (1 + eta_1 a_j lambda)(1 + eta_2 a_j lambda)``, with ``W_0 e``
independent of the rest of ``H``.  Four parts, and a grid:

``--part exact`` plants the batch's most extreme sample (as :func:`benchmarks.diag_fresh_sample.coupling_to_p`)
and writes ``W_2 = Y_b + l e^T + P`` (``l = (W_0 e) * c``, ``Y_b e = 0``).  By the Schur complement on the column
the outliers are where ``D'(x) - B^T A(x)^{-1} B`` vanishes, with ``D' = 1 - l^T (x - Y_b Y_b^T)^{-1} l``, ``A`` the
block of ``P`` without the sample's share and ``B`` its load on the sample, each from the draw's own resolvents (the
cross terms, zero on average, left out: :class:`DrawPieces`; with them the determinant vanishes exactly at the
draw's singular values, which a test checks).  Beside it the same pieces of the prediction's joint problem
with that one column (:mod:`rmtfl.theory._two_step.joint_roots`)::

    python -m benchmarks.diag_sample_coupling --part exact --alphas 0.2,0.4 --z -3.6621 --draws 8

``--part law`` sets the top values of ``H`` and of ``W_2`` over draws (seeds of their own) beside the prediction's law
of the columns on their own and its outliers, as it is, with the coupling (:func:`coupled_samples`) and with ``M``'s
collective eigenvalues along the extreme samples (:func:`collective_eigenvalues`)::

    python -m benchmarks.diag_sample_coupling --part law --target "hermite(0, 1, 0.5)" --alphas 0.4,0.4 --draws 60

``--part profile`` draws ``H`` from its exact variance profile (``W_0`` fresh, ``M``'s spectrum of the draw) with ``a``
as drawn and at its quantiles, and each of the 12 heaviest columns alone against the rest::

    python -m benchmarks.diag_sample_coupling --part profile --target "hermite(0, 1, 0.5)" --alphas 0.4,0.4

``--part repulsion`` lifts the typical batch's most extreme column by the other extreme columns to second order
(:func:`part_repulsion`), an estimate of the repulsion the columns' law lacks::

    python -m benchmarks.diag_sample_coupling --part repulsion --target "hermite(0, 1, 0.5)" --alphas 0.4,0.4

``--grid CACHE`` puts the coupling into the prediction and sets it beside the prediction as it is on the acceptance
grid whose draws ``CACHE`` holds (as ``benchmarks.diag_m_spike --grid``)::

    python -m benchmarks.diag_sample_coupling --grid two_step_finite_n_cache/n1000own.json --own-seeds
    python -m benchmarks.diag_sample_coupling --grid two_step_finite_n_cache/n1000own.json --own-seeds --lift whole

(``--lift``: with the eigenvalue of ``M`` along the samples lifted as well, :func:`coupled_with`; ``--repulsion``:
with the columns' repulsion in the law, :func:`repelled_columns`; ``--no-coupling``: without the coupling.)
"""
from __future__ import annotations

import argparse
import contextlib
import math
import sys

import numpy as np
from scipy import optimize, special

# the tail bins beyond the bulk's cut, the theory's (other diagnostics import it from here)
from rmtfl.theory._two_step.sample_group import beyond_cut

QUADRATIC = "hermite(0, 1, 0.5)"
HE3 = "hermite(0, 1, 0, 0.4082482904638631)"


@contextlib.contextmanager
def coupled_samples():
    """Within the block, the prediction couples the single samples' columns to the spikes of ``P`` in the law of
    their locations (:mod:`rmtfl.theory._two_step.sample_coupling`)."""
    from rmtfl.theory._two_step import sample_coupling

    kept = sample_coupling.COUPLE_SAMPLES
    sample_coupling.COUPLE_SAMPLES = True
    try:
        yield
    finally:
        sample_coupling.COUPLE_SAMPLES = kept


def collective_lift(target, n: int, d: float, poles=None, extremes: int = 36):
    """Per sign of ``y``: ``(poles, lifts)``, ascending.  ``poles``: the eigenvalue of ``M`` along each of the
    ``extremes`` most extreme samples of a typical batch of ``n`` alone, ``poles(ys, zs)`` (default: the pole over
    the samples inside their cut, :func:`~rmtfl.theory._two_step.sample_spikes.extreme_eigenvalues`; the prediction
    passes its own, over its bulk's samples); ``lifts``: how far the typical batch's ``k``-th eigenvalue of that sign
    lies beyond the ``k``-th pole (Silverstein's equation with the law of ``y`` inside the cut and the extremes as
    ``n``-th parts; the ``k``-th value where ``k - 1/2`` eigenvalues are expected beyond it; ``k`` up to 12)."""
    from rmtfl.theory._two_step import sample_spikes as ss
    from rmtfl.theory._two_step.bulk_edge import weighted_mp_stieltjes

    cut = ss.bulk_cut(target, n, extremes)
    yt, wt = ss.y_law_truncated(target, cut)
    ye, ze = ss.typical_extremes(target, n, extremes)
    y = np.concatenate([yt, ye])
    w = np.concatenate([wt * (1 - extremes / n) / wt.sum(), np.full(extremes, 1.0 / n)])
    lam = np.asarray(poles(ye, ze) if poles else ss.extreme_eigenvalues(ye, ze, n / d, yt, wt, cut), dtype=float)
    out = {}
    for sign in (1.0, -1.0):
        ps = np.sort(np.abs(lam[np.sign(lam) == sign]))[::-1][:12]
        if ps.size < 3:
            continue
        x = sign * np.linspace(0.5 * ps[-1], 1.3 * ps[0] + 0.5, 1200)
        rho = np.maximum(weighted_mp_stieltjes(x, y, w, n / d, eps=1e-3).imag, 0.0) / np.pi
        ax = np.abs(x)
        beyond = d * np.concatenate([np.cumsum(((rho[1:] + rho[:-1]) / 2 * np.diff(ax))[::-1])[::-1], [0.0]])
        lc = np.array([np.interp(-(k - 0.5), -beyond, ax) for k in range(1, ps.size + 1)])
        out[sign] = (ps[::-1], (lc - ps)[::-1])
    return out


@contextlib.contextmanager
def collective_eigenvalues(target, d: float):
    """Within the block, the prediction lifts the eigenvalue of ``M`` along each extreme sample by
    :func:`collective_lift` (interpolated in the pole; beyond the typical top by the top's lift times the gap
    between the top two poles over the pole's distance from the second, as a second-order shift decays)."""
    from rmtfl.theory._two_step import joint_roots, sample_order, sample_spikes

    kept, tables = sample_spikes.extreme_eigenvalues, {}

    def lifted(ys, zs, phi, y_bulk, w_bulk, zrange):
        lam = np.asarray(kept(ys, zs, phi, y_bulk, w_bulk, zrange), dtype=float)
        n = int(round(phi * d))
        key = (n, None if zrange is None else tuple(zrange))
        if key not in tables:
            tables[key] = collective_lift(target, n, d, lambda y, z: kept(y, z, phi, y_bulk, w_bulk, zrange))
        tab = tables[key]
        out = []
        for v in lam:
            ps, dl = tab.get(float(np.sign(v)), (None, None))
            if ps is None:
                out.append(float(v))
                continue
            a = abs(v)
            lift = float(np.interp(a, ps, dl)) if a <= ps[-1] else dl[-1] * (ps[-1] - ps[-2]) / (a - ps[-2])
            out.append(float(v + np.sign(v) * lift))
        return out

    sample_order.extreme_eigenvalues = joint_roots.extreme_eigenvalues = lifted
    try:
        yield
    finally:
        sample_order.extreme_eigenvalues = joint_roots.extreme_eigenvalues = kept


@contextlib.contextmanager
def repelled_columns():
    """Within the block, each bin's column strength in the single samples' law is lifted by the columns of the
    samples beyond the bulk (the ``K / n`` most extreme of the law's tail, by their strength at the edge): for each
    such column ``b'``, weighted by its expected number ``n mass_b'``, the shift of the eigenvalue of the ``2 x 2``
    block ``[[Q_b, eps], [eps, Q_b']]`` that belongs to ``b``, ``sign(Q_b - Q_b') (sqrt(D^2/4 + eps^2) - |D|/2)`` with
    ``D = Q_b - Q_b'`` and ``eps^2 = psi^2 E_j[v_b v_b' tau_j^2] / N`` (second order for ``|D| >> eps``, bounded by
    ``eps`` where they are degenerate).  A mean field of :func:`part_repulsion` over the law."""
    from rmtfl.theory._two_step import sample_order

    kept = sample_order.tail_law

    def tail_law(tau, x_edge, x_guess, parts, *, N, psi, wa, shift=None):
        t_e = tau(x_edge * (1 + 1e-6))
        weights = []
        for mass, vmean, _, n_b in parts:
            mass = np.asarray(mass, dtype=float)
            order = np.argsort(-(vmean @ (wa * t_e))) if t_e is not None else np.arange(mass.size)
            weights.append(beyond_cut(mass, order) * mass * n_b)

        def lifted(s):
            t = tau(s * s)
            c = shift(s) if shift is not None else None
            if t is None:
                return c
            out = []
            for (_, vmean, _, _), w in zip(parts, weights):
                Q = psi * (vmean @ (wa * t))
                e2 = np.clip(psi**2 * ((vmean * (wa * t * t)[None, :]) @ vmean.T) / N, 0.0, None)
                D = Q[:, None] - Q[None, :]
                out.append((np.sign(D) * (np.sqrt(D * D / 4 + e2) - np.abs(D) / 2)) @ w)
            return out if c is None else [a + b for a, b in zip(out, c)]
        return kept(tau, x_edge, x_guess, parts, N=N, psi=psi, wa=wa, shift=lifted)

    sample_order.tail_law = tail_law
    try:
        yield
    finally:
        sample_order.tail_law = kept


@contextlib.contextmanager
def coupled_with(lift, target, d: float, couple: bool = True):
    """:func:`coupled_samples` (``couple``), with the eigenvalue of ``M`` along the extreme samples lifted: ``lift``
    ``"whole"`` (:func:`benchmarks.diag_m_spike.whole_law_eigenvalues`), ``"collective"``
    (:func:`collective_eigenvalues`) or ``None``."""
    from .diag_m_spike import whole_law_eigenvalues

    inner = {"whole": lambda: whole_law_eigenvalues(target, d), "collective": lambda: collective_eigenvalues(target, d),
             None: contextlib.nullcontext}[lift]
    with coupled_samples() if couple else contextlib.nullcontext(), inner():
        yield


def planted_draw(tgt, *, N, alphas, z, seed):
    """One reused batch of the quadratic sigma with its most extreme sample planted at ``z* = z`` (as
    :func:`benchmarks.diag_fresh_sample.coupling_to_p`): ``(W_2, H, e, lam, l)``, ``e`` the eigenvector of ``M``
    that leans most on the sample, ``lam`` its eigenvalue, ``l = (W_0 e) * c`` its column of ``H``."""
    from rmtfl.numerics._two_step.model import gd_steps
    from rmtfl.theory import get_activation

    from .diag_fresh_sample import planted_batch, quadratic_h

    d, n = N, 2 * N
    eta1, eta2 = N ** alphas[0], N ** alphas[1]
    W0, a, X, y = planted_batch(tgt, N=N, d=d, n=n, z=z, seed=seed)
    W2 = gd_steps(get_activation(QUADRATIC), W0, a, (X, y), etas=(eta1, eta2))
    H = quadratic_h(W0, a, X, y, eta1, eta2)
    lm, E = np.linalg.eigh(X.T @ (y[:, None] * X) / n)
    k = int(np.argmax((E.T @ X[0]) ** 2))
    e, lam = E[:, k], float(lm[k])
    return W2, H, e, lam, (W0 @ e) * (1 + eta1 * a * lam) * (1 + eta2 * a * lam)


class DrawPieces:
    """``D'(s)``, ``B^T A^{-1} B`` and ``|B|^2`` of one planted draw (module docstring), from the resolvents of
    ``Y_b = H - l e^T`` (whose null vector is ``e``) and the rank-two ``P = W_2 - H``, the cross terms
    ``L^T (x - Y_b Y_b^T)^{-1} Y_b R`` left out (zero on average, by ``W_0 -> -W_0``; a few per cent of the value
    draw by draw at ``N = 1000``); :meth:`determinant` keeps them and vanishes exactly at the draw's singular
    values."""

    def __init__(self, W2, H, e, ell):
        self.e, self.ell = e, ell
        Up, Sp, Vpt = np.linalg.svd(W2 - H, full_matrices=False)
        self.L, self.R = Up[:, :2] * Sp[:2], Vpt[:2].T
        self.Pb, self.sb, self.Qbt = np.linalg.svd(H - np.outer(ell, e))

    def __call__(self, s):
        x = s * s
        gn = 1.0 / (x - self.sb**2)
        pl = self.Pb.T @ self.ell
        Dp = 1.0 - pl @ (gn * pl)
        U = self.R.T @ self.e
        Rq = self.Qbt @ (self.R - np.outer(self.e, U))
        PL = self.Pb.T @ self.L
        w, V = np.linalg.eigh(PL.T @ (gn[:, None] * PL))
        Rs = V @ np.diag(np.sqrt(np.clip(w, 0.0, None))) @ V.T
        A = np.eye(2) - x * Rs @ (Rq.T @ (gn[:, None] * Rq)) @ Rs
        B = Rs @ U
        return float(Dp), float(B @ np.linalg.solve(A, B)), float(B @ B)

    def determinant(self, s):
        """``det(K - W^T (s - Z)^{-1} W)`` of the Hermitian dilation ``Z`` of ``Y_b`` and the rank-three perturbation
        ``[l, L] [e, R]^T`` (``K`` the exchange matrix): zero where ``s`` is a singular value of ``W_2``."""
        x = s * s
        gn = 1.0 / (x - self.sb**2)
        PL = self.Pb.T @ np.column_stack([self.ell, self.L])
        QR = self.Qbt @ np.column_stack([self.e, self.R])
        a, b = s * PL.T @ (gn[:, None] * PL), s * QR.T @ (gn[:, None] * QR)
        c = PL.T @ ((self.sb * gn)[:, None] * QR)
        k = a.shape[0]
        K = np.block([[np.zeros((k, k)), np.eye(k)], [np.eye(k), np.zeros((k, k))]])
        return float(np.linalg.det(K - np.block([[a, c], [c.T, b]])))

    def complement(self, s):
        """``D' - B^T A^{-1} B`` at ``s``: the column's denominator coupled to ``P``."""
        Dp, c, _ = self(s)
        return Dp - c

    def root(self, s_hi, points=80):
        """The lowest ``s`` above ``Y_b``'s top where :meth:`complement` turns positive (``nan``: none)."""
        grid = np.linspace(self.sb[0] * (1 + 1e-6), s_hi, points)
        return first_rise(self.complement, grid, refine=True)


def first_rise(f, grid, refine=False):
    """The first ``s`` of ``grid`` after which ``f`` goes from negative to non-negative (its root there, with
    ``refine``); ``nan``: none."""
    v = [f(s) for s in grid]
    for i in range(len(grid) - 1):
        if v[i] < 0 <= v[i + 1]:
            return float(optimize.brentq(f, grid[i], grid[i + 1])) if refine else float(grid[i])
    return math.nan


def prediction_parts(tgt, *, N, alphas):
    """The quadratic sigma's finite-``N`` pieces at one point (reused batch, ``psi = 1``, ``phi = 2``): ``(act, st,
    G_V, tn, g, wg, K, bulk, rho)``, as :func:`rmtfl.theory._two_step.finite_n.predict_finite_n` builds them."""
    from rmtfl.theory import get_activation
    from rmtfl.theory._two_step import finite_n as fn
    from rmtfl.theory._two_step import sample_spikes

    act = get_activation(QUADRATIC)
    eta1 = N ** alphas[0]
    eta2 = N ** alphas[1]
    st = fn.finite_n_setup(act, tgt, phi=2.0, batch="reused", phi2=None)
    _, G_V, _, tn, g, wg, _, _ = fn.finite_n_grams(act, st, eta1=eta1, eta2=eta2, N=float(N), bulk=False)
    K = fn.extreme_ranks(N=N, psi=1.0, phi=2.0, phi2=None, batch="reused")
    bulk = fn.bulk_without(act, tgt, st, ranks=K, eta1=eta1, eta2=eta2, N=float(N), psi=1.0, tn=tn)
    return act, st, G_V, tn, g, wg, K, bulk, sample_spikes.second_step_move(act, st, eta1 * bulk.a)


def prediction_column(tgt, *, N, alphas, z):
    """The prediction's joint problem with the one typical extreme column nearest ``z``: ``s -> (D, B^T A^{-1} B,
    |B|^2)`` and the column's ``z*``."""
    from rmtfl.theory._two_step import finite_n as fn
    from rmtfl.theory._two_step import sample_spikes
    from rmtfl.theory._two_step.joint_roots import ExtremeColumns, JointProblem, extreme_columns

    eta1, eta2 = N ** alphas[0], N ** alphas[1]
    act, st, G_V, tn, g, wg, K, bulk, rho = prediction_parts(tgt, N=N, alphas=alphas)
    cols = extreme_columns(act, tgt, st, bulk, eta1=eta1, eta2=eta2, N=float(N), psi=1.0, K=K, rho=rho,
                           coupling=lambda ys, zs, w: fn.sample_components(act, st, eta1, eta2, tn, ys, zs, N, w))
    zs = sample_spikes.typical_extremes(tgt, 2 * N, K)[1]
    i = int(np.argmin(np.abs(zs - z)))
    jp = JointProblem(bulk, ExtremeColumns(cols.V[[i]], cols.U[:, [i]]), fn.weighted_gram_u(g, wg), G_V, g, float(N))

    def pieces(s):
        A, B, D = jp.blocks(s)
        return float(D[0]), float(B[:, 0] @ np.linalg.solve(A, B[:, 0])), float(B[:, 0] @ B[:, 0])
    return pieces, float(zs[i]), float(bulk.edge)


def part_exact(tgt, *, N, alphas, z, draws, at=12.0):
    pred, zp, edge = prediction_column(tgt, N=N, alphas=alphas, z=z)
    grid = np.linspace(edge * 1.01, 60.0, 600)
    own = first_rise(lambda s: pred(s)[0], grid)
    coupled = first_rise(lambda s: pred(s)[0] - pred(s)[1], grid)
    print(f"prediction, column z* = {zp:.4f}: own root {own:.3f}, coupled to P {coupled:.3f}")
    rows = []
    for k in range(draws):
        W2, H, e, lam, ell = planted_draw(tgt, N=N, alphas=alphas, z=z, seed=7000 + k)
        ex = DrawPieces(W2, H, e, ell)
        sw = np.linalg.svd(W2, compute_uv=False)[:4]
        r = ex.root(3.0 * np.linalg.norm(ell) + 10.0)
        s_at = max(at, ex.sb[0] * 1.01)
        Dp, c, bb = ex(s_at)
        Dq, cq, bq = pred(s_at)
        print(f"  draw {k}: W_2 top {np.round(sw, 3)}  coupled root {r:.3f}  lambda {lam:.3f}  "
              f"at s = {s_at:.2f}: D' {Dp:.3f} coupling {c:.3f} |B|^2 {bb:.3f} "
              f"(prediction {Dq:.3f}, {cq:.3f}, {bq:.3f})")
        rows.append(r)
    print(f"  coupled roots (cross terms left out): mean {np.nanmean(rows):.3f}, median {np.nanmedian(rows):.3f}")


def part_law(tgt, *, N, alphas, draws, seed0=33000):
    from rmtfl.numerics import quadratic_bulk, simulate_two_step
    from rmtfl.theory import get_activation, two_step

    act = get_activation(QUADRATIC)
    eta1, eta2 = N ** alphas[0], N ** alphas[1]
    Hs, Ws = [], []
    for s in range(draws):
        Hs.append(quadratic_bulk(act, tgt, N=N, d=N, n=2 * N, eta1=eta1, eta2=eta2, k=4, rng=seed0 + s))
        Ws.append(simulate_two_step(act, tgt, N=N, d=N, n=2 * N, eta1=eta1, eta2=eta2, rng=seed0 + s)
                  .singular_values[:6])
    Hs, Ws = np.array(Hs), np.array(Ws)
    se = lambda A: np.round(A.std(0, ddof=1) / math.sqrt(len(A)), 3)  # noqa: E731
    print(f"  H   top 4 over {draws} draws: mean {np.round(Hs.mean(0), 3)} (se {se(Hs)})")
    print(f"  W_2 top 6 over {draws} draws: mean {np.round(Ws.mean(0), 3)} (se {se(Ws)})")
    out = {}
    for name, ctx in (("as is", contextlib.nullcontext), ("coupled", coupled_samples),
                      ("M's collective eigenvalues", lambda: collective_eigenvalues(tgt, float(N)))):
        with ctx():
            r = two_step(act, tgt, psi=1.0, phi=2.0, eta1=eta1, eta2=eta2, N=N)
            law = columns_alone(act, tgt, N=N, alphas=alphas)
        out[name] = [o.singular_value for o in r.outliers]
        own = [o.singular_value for o in r.outliers if o.kind == "sample"]
        print(f"  prediction, {name}: outliers {np.round(out[name][:6], 3)}; single samples {np.round(own[:4], 3)}; "
              f"the columns' own law, rank means {np.round(law[:4], 3)}")
    return Hs, Ws, out


def columns_alone(act, tgt, *, N, alphas):
    """The means of the ranks of the single-sample columns on their own (no ``P``): the prediction of ``H``'s top."""
    from rmtfl.theory._two_step.sample_order import sample_outliers

    eta1, eta2 = N ** alphas[0], N ** alphas[1]
    _, st, _, _, _, _, K, bulk, rho = prediction_parts(tgt, N=N, alphas=alphas)
    samples = sample_outliers(act, tgt, st, bulk, eta1=eta1, eta2=eta2, N=float(N), psi=1.0, rho=rho, ranks=K)[0]
    return [m for m, _, _ in samples]


def part_profile(tgt, *, N, alphas, draws, seed0=50000):
    from rmtfl.numerics._two_step.model import sample_targets

    d, n = N, 2 * N
    e1, e2 = N ** alphas[0], N ** alphas[1]
    aq = special.ndtri((np.arange(N) + 0.5) / N) / math.sqrt(N)
    res = {"a as drawn": [], "a at its quantiles": [], "each column alone": []}
    for s in range(draws):
        rng = np.random.default_rng(seed0 + s)
        X = rng.standard_normal((n, d))
        lam = np.linalg.eigvalsh((X.T * sample_targets(X, target=tgt)) @ X / n)
        a = rng.standard_normal(N) / math.sqrt(N)
        G = rng.standard_normal((N, d)) / math.sqrt(d)
        for name, aa in (("a as drawn", a), ("a at its quantiles", aq)):
            Hm = G * ((1 + e1 * aa[:, None] * lam) * (1 + e2 * aa[:, None] * lam))
            res[name].append(np.linalg.svd(Hm, compute_uv=False)[:3])
            if name == "a as drawn":
                heavy = np.argsort(-np.abs(lam))[:12]
                ev, Q = np.linalg.eigh(Hm[:, np.setdiff1d(np.arange(d), heavy)] @
                                       Hm[:, np.setdiff1d(np.arange(d), heavy)].T)
                roots = []
                for k in heavy:
                    cq = Q.T @ Hm[:, k]
                    f = lambda x: 1.0 - np.sum(cq**2 / (x - ev))  # noqa: E731
                    lo = ev[-1] * (1 + 1e-6)
                    roots.append(math.sqrt(optimize.brentq(f, lo, 4 * lo + 4 * cq @ cq)) if f(lo) < 0
                                 else math.sqrt(ev[-1]))
                res["each column alone"].append(np.sort(roots)[::-1][:3])
    for k, v in res.items():
        v = np.array(v)
        se = np.round(v.std(0, ddof=1) / math.sqrt(len(v)), 3)
        print(f"  {k:20s} top 3: mean {np.round(v.mean(0), 3)} (se {se})")


def part_repulsion(tgt, *, N, alphas):
    """The typical batch's most extreme column against the other extreme columns, to second order: its strength
    ``Q_1(x)`` lifted by ``sum_k E[T_1k^2] / (Q_1 - Q_k)``, ``E[T_1k^2] = psi^2 E_j[v_1j v_kj tau_j(x)^2] / N`` (the
    off-diagonal entries of ``T(x) = C^T (x - H_b H_b^T)^{-1} C`` for columns with independent entries); its root
    alone and lifted."""
    from rmtfl.theory._two_step.joint_roots import extreme_columns

    eta1, eta2 = N ** alphas[0], N ** alphas[1]
    act, st, G_V, _, _, _, K, bulk, rho = prediction_parts(tgt, N=N, alphas=alphas)
    V = extreme_columns(act, tgt, st, bulk, eta1=eta1, eta2=eta2, N=float(N), psi=1.0, K=K, rho=rho,
                        coupling=lambda ys, zs, w: np.zeros((G_V.shape[0], len(ys)))).V

    def strengths(s):
        t = bulk.tau_rows(bulk.a, s * s)[0]
        q = V @ (bulk.wa * t)
        i = int(np.argmax(q))
        e2 = ((V * V[i][None, :]) @ (bulk.wa * t * t)) / N
        return q[i], sum(e2[k] / (q[i] - q[k]) for k in range(q.size) if k != i and q[i] - q[k] > 1e-9), q

    se = bulk.edge * (1 + 1e-4)
    hi = 2.0 * se
    while strengths(hi)[0] > 1.0:
        hi *= 1.5
    alone = optimize.brentq(lambda s: strengths(s)[0] - 1.0, se, hi)
    lifted = optimize.brentq(lambda s: sum(strengths(s)[:2]) - 1.0, se, 1.5 * hi)
    q = np.sort(strengths(alone)[2])[::-1]
    print(f"  the top column alone {alone:.3f}; lifted by the other {K - 1} to second order {lifted:.3f} "
          f"(+{100 * (lifted / alone - 1):.1f} %); the others' strengths at its root {np.round(q[1:5], 3)}")
    return alone, lifted


def main(argv=None) -> int:
    from rmtfl.theory import make_target

    from .diag_m_spike import add_grid_arguments

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", choices=("exact", "law", "profile", "repulsion"), default="exact")
    ap.add_argument("--target", default=HE3)
    ap.add_argument("--N", type=int, default=1000)
    ap.add_argument("--alphas", default="0.2,0.4", help="alpha1,alpha2")
    ap.add_argument("--z", type=float, default=-3.6621, help="--part exact: z* of the planted sample")
    ap.add_argument("--draws", type=int, default=8)
    ap.add_argument("--at", type=float, default=12.0, help="--part exact: the s where the pieces are printed "
                                                           "(at least just above the rest's top)")
    ap.add_argument("--seed", type=int, default=33000, help="--part law: the first seed of its draws")
    add_grid_arguments(ap)
    ap.add_argument("--lift", choices=("whole", "collective"), default=None,
                    help="with --grid: the eigenvalue of M along the samples over the whole law of y "
                         "(benchmarks.diag_m_spike) or a typical batch's collective one, with the coupling")
    ap.add_argument("--repulsion", action="store_true", help="with --grid: the columns' repulsion as well "
                                                             "(repelled_columns)")
    ap.add_argument("--no-coupling", action="store_true", help="with --grid: without the coupling to P")
    a = ap.parse_args(argv)
    if a.grid:
        from .diag_m_spike import run_grid

        name = ("coupled" if not a.no_coupling else "as is") + (f" + {a.lift}" if a.lift else "") \
            + (" + repulsion" if a.repulsion else "")

        @contextlib.contextmanager
        def variant(target):
            with repelled_columns() if a.repulsion else contextlib.nullcontext(), \
                    coupled_with(a.lift, target, float(a.N), couple=not a.no_coupling):
                yield
        run_grid(a.grid, N=a.N, batch=a.batch, own=a.own_seeds, variant=(name, variant))
        return 0
    tgt = make_target(a.target)
    alphas = tuple(float(v) for v in a.alphas.split(","))
    print(f"quadratic sigma, {a.target}, reused, N = d = {a.N}, n = 2N, alphas {alphas}")
    if a.part == "exact":
        part_exact(tgt, N=a.N, alphas=alphas, z=a.z, draws=a.draws, at=a.at)
    elif a.part == "law":
        part_law(tgt, N=a.N, alphas=alphas, draws=a.draws, seed0=a.seed)
    elif a.part == "profile":
        part_profile(tgt, N=a.N, alphas=alphas, draws=a.draws)
    else:
        part_repulsion(tgt, N=a.N, alphas=alphas)
    return 0


if __name__ == "__main__":
    sys.exit(main())
