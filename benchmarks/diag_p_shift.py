"""The bulk's top values under the spikes of ``P``: ``P``'s spectral shift below the fold
(docs/theory/two_step_attempts.md §28; measured, not kept).

The prediction's spectrum puts the bulk's top values straight under the outliers: the ``k``-th value of ``W_2``
below its ``r`` outliers is the bulk's ``k``-th, as if ``P`` added its outliers to the count above every ``x`` below
the fold and took nothing from the bulk.  A low-rank part does not: with the bulk's kernels continued to
``x + i eta`` (:meth:`~rmtfl.theory._two_step.widened_bulk.WidenedBulk.resolvent_below`) the count that ``P`` adds
above ``x`` is its spectral shift

    xi_P(x) = r(x_edge) + (arg det(I - x tt(x) G_U(tau(x)) G_V) - arg det(...)(x_edge)) / pi,

the master equation of docs/theory/two_step.md §8.1 (:func:`rmtfl.theory._two_step.widened_bulk.master_eigs`) at
complex ``x``, its phase unwrapped from the fold down; ``r(x_edge)`` is its count of roots above the fold.

``--part draws`` (the quadratic sigma with He1 + He2/2, reused, ``N = d``, ``n = 2N``, where ``W_2 = H + P``
exactly; batches drawn in ``M``'s eigenbasis as :func:`benchmarks.diag_quadratic_parts.eigenbasis_draw` draws
them, seeds 50000 on) counts the values above each ``s`` of ``H``, of ``H_b`` (``H`` without the columns of the
batch's ``K`` most extreme samples), of ``W_2`` and of ``W_b = W_2`` without those columns, and sets
``N(W_b) - N(H_b)`` beside ``xi_P``, and the extreme columns' ``N(H) - N(H_b)`` beside their spectral shift
(docs/theory/two_step_attempts.md §15, :func:`benchmarks.diag_column_shift.left_out_shift`)::

    python -m benchmarks.diag_p_shift --part draws --alphas 0.4,0.4 --draws 30

``--grid CACHE`` runs the acceptance grid (:func:`benchmarks.diag_m_spike.run_grid`) with the bulk's top values
shifted by ``xi_P - r`` (``--mode kept``) and with the extreme columns' shift of attempt 15 as well (``--mode
without``)::

    python -m benchmarks.diag_p_shift --grid CACHE/n1000.json --N 1000 --mode kept
"""
from __future__ import annotations

import argparse
import contextlib
import math
import sys

import numpy as np


def p_parts(act, target, *, phi: float, phi2, batch: str, eta1: float, eta2: float, N: float):
    """``(G_V, g, wg)``: the ``d``-side Gram matrix of ``P`` and its row nodes and weights
    (:func:`rmtfl.theory._two_step.finite_n.finite_n_grams`)."""
    from rmtfl.theory._two_step import finite_n as fn

    st = fn.finite_n_setup(act, target, phi=phi, batch=batch, phi2=phi2)
    _, G_V, _, _, g, wg, _, _ = fn.finite_n_grams(act, st, eta1=eta1, eta2=eta2, N=N, bulk=False)
    return G_V, g, wg


def p_phase(bulk, G_V, g, wg, N: float, z, t):
    """``det(I - z tt(z) G_U(tau(z)) G_V)`` at each complex ``z`` from the row kernels ``t`` there (one row per
    ``z``, at the bulk's rows, as :meth:`~rmtfl.theory._two_step.widened_bulk.WidenedBulk.resolvent_below` returns
    them): the reduced system's ``A``, ``B`` from ``t``, then ``tau`` at ``P``'s nodes ``g`` and the mean column
    kernel ``tt``."""
    red = bulk.red
    A = red.psi * t @ red.Pa
    tt = -1.0 / (z[:, None] * (1.0 + A @ red.colh.T))
    B = tt @ red.Pl
    f = bulk.functions(g / math.sqrt(N))
    tau = 1.0 / (z[:, None] * (1.0 + B @ f.T))
    ttm = -(tt @ red.Pl[:, 0])
    ww = (wg * g**2)[None, :] * tau
    Q = g.size
    G = np.zeros((z.size, Q + 1, Q + 1), complex)
    G[:, 0, 0] = ww.sum(axis=1)
    G[:, 0, 1:] = G[:, 1:, 0] = ww
    G[:, np.arange(1, Q + 1), np.arange(1, Q + 1)] = ww
    Mm = (z * ttm)[:, None, None] * (G @ G_V)
    return np.linalg.det(np.eye(Q + 1)[None] - Mm)


def p_shift(bulk, G_V, g, wg, N: float, x, t, eta: float):
    """``xi_P(x) - r(x_edge)`` on the ascending grid ``x`` (module docstring): zero at and above the fold,
    negative where ``P`` takes values from the bulk's top."""
    z = np.asarray(x, float) + 1j * eta
    below = np.asarray(x) < bulk.x_edge
    out = np.zeros(np.size(x))
    if below.any():
        det = p_phase(bulk, G_V, g, wg, N, z, t)
        i_top = int(np.argmax(~below)) if (~below).any() else len(out) - 1
        ph = np.unwrap(np.angle(det[:i_top + 1])[::-1])[::-1]
        out[:i_top + 1] = (ph - ph[-1]) / np.pi
    return out


def p_extra():
    """``extra`` for :func:`benchmarks.diag_column_shift.column_shift`: the bulk's count above ``x`` shifted by
    ``xi_P - r`` of the prediction under way."""
    cache = {}

    def extra(bulk, point, x, t, eta):
        key = (point["act"].name, bulk.target.name, point["batch"], point["phi"], point["phi2"], bulk.eta1,
               bulk.eta2, bulk.N)
        if key not in cache:
            cache[key] = p_parts(point["act"], bulk.target, phi=point["phi"], phi2=point["phi2"],
                                 batch=point["batch"], eta1=bulk.eta1, eta2=bulk.eta2, N=bulk.N)
        return p_shift(bulk, *cache[key], bulk.N, x, t, eta)
    return extra


def count_draws(*, N: int, eta1: float, eta2: float, draws: int, grid, K: int = 12, seed0: int = 50000):
    """Per draw (module docstring, ``--part draws``) the number of values above each ``s`` of ``grid``:
    ``(H, H_b, W_2, W_b)``, each ``draws x len(grid)``."""
    from rmtfl.theory import make_target

    from .diag_quadratic_parts import QUADRATIC, eigenbasis_draw

    tgt, out = make_target(QUADRATIC), [[], [], [], []]
    for i in range(draws):
        Hm, lam, b, a = eigenbasis_draw(tgt, N=N, d=N, n=2 * N, eta1=eta1, eta2=eta2, seed=seed0 + i)
        W = Hm + (eta1 + eta2) * np.outer(a, b) + eta1 * eta2 * np.outer(a**2, lam * b)
        rest = np.argsort(lam)[::-1][K:]
        for c, m in zip(out, (Hm, Hm[:, rest], W, W[:, rest])):
            sv = np.linalg.svd(m, compute_uv=False)
            c.append([(sv > s).sum() for s in grid])
    return tuple(np.array(c, float) for c in out)


def predicted_shifts(*, N: int, eta1: float, eta2: float, grid, K: int = 12):
    """``(bulk count, columns' shift, xi_P)`` above each ``s`` of ``grid`` for the quadratic sigma with
    He1 + He2/2 (reused, ``N = d``): the bulk without the ``K`` extreme samples, their spectral shift
    (attempt 15, each above its threshold counted as one) and ``P``'s spectral shift (``r`` above the fold)."""
    from rmtfl.theory import get_activation, make_target
    from rmtfl.theory._two_step.finite_n import finite_n_setup, weighted_gram_u
    from rmtfl.theory._two_step.widened_bulk import master_eigs

    from .diag_block import quadratic_bulk
    from .diag_column_shift import left_out_columns, shift_on
    from .diag_quadratic_parts import QUADRATIC

    act, tgt = get_activation(QUADRATIC), make_target(QUADRATIC)
    bulk = quadratic_bulk(N, eta1, eta2, K)
    st = finite_n_setup(act, tgt, phi=2.0, batch="reused", phi2=None)
    fine = np.linspace(min(grid) ** 2, 1.02 * max(max(grid) ** 2, bulk.x_edge), 400)
    eta = 1e-3 * bulk.x_edge
    t, above = bulk.resolvent_below(fine, eta, levels=10, sweeps=20)
    cols = left_out_columns(act, tgt, st, bulk, eta1=eta1, eta2=eta2, N=float(N), psi=1.0, K=K)
    G_V, g, wg = p_parts(act, tgt, phi=2.0, phi2=None, batch="reused", eta1=eta1, eta2=eta2, N=float(N))
    e = master_eigs(bulk, math.sqrt(bulk.x_edge) * (1 + 1e-7), weighted_gram_u(g, wg), G_V, g, N)
    r = 0 if e is None else int(np.sum(e > 1.0))
    xs = np.asarray(grid, float) ** 2
    return (np.interp(xs, fine, above), np.interp(xs, fine, shift_on(bulk, fine, cols, eta)),
            r + np.interp(xs, fine, p_shift(bulk, G_V, g, wg, float(N), fine, t, eta)))


def part_draws(N: int, a1: float, a2: float, draws: int) -> None:
    """``--part draws`` (module docstring) on a grid of ``s`` from 0.55 to 1.2 times the bulk's fold."""
    from .diag_block import quadratic_bulk

    eta1, eta2 = N ** a1, N ** a2
    fold = math.sqrt(quadratic_bulk(N, eta1, eta2, 12).x_edge)
    grid = np.round(fold * np.linspace(0.55, 1.2, 10), 3)
    cH, cB, cW, cWb = count_draws(N=N, eta1=eta1, eta2=eta2, draws=draws, grid=grid)
    bulk, cols, xi = predicted_shifts(N=N, eta1=eta1, eta2=eta2, grid=grid)
    se = lambda c: c.std(axis=0, ddof=1) / math.sqrt(draws)            # noqa: E731
    print(f"quadratic sigma, He1 + He2/2, reused, N = d = {N}, ({a1}, {a2}), {draws} draws; fold {fold:.3f}")
    rows = [("s", grid), ("N(H_b)", cB.mean(0)), ("bulk's count", bulk), ("N(W_b) - N(H_b)", (cWb - cB).mean(0)),
            ("  s.e.", se(cWb - cB)), ("xi_P", xi), ("N(H) - N(H_b)", (cH - cB).mean(0)), ("  s.e.", se(cH - cB)),
            ("columns' shift below the fold", cols), ("N(W_2) - N(H)", (cW - cH).mean(0))]
    for name, v in rows:
        print(f"  {name:30s} " + " ".join(f"{x:6.2f}" for x in v))


def main(argv=None) -> int:
    from .diag_column_shift import column_shift
    from .diag_m_spike import add_grid_arguments, run_grid

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", choices=("draws",), default=None)
    ap.add_argument("--N", type=int, default=1000)
    ap.add_argument("--alphas", default="0.4,0.4")
    ap.add_argument("--draws", type=int, default=30)
    ap.add_argument("--mode", choices=("kept", "without"), default="kept",
                    help="with --grid: the bulk as it is, or attempt 15's bulk, each shifted by xi_P")
    add_grid_arguments(ap)
    a = ap.parse_args(argv)
    if a.part == "draws":
        a1, a2 = (float(v) for v in a.alphas.split(","))
        part_draws(a.N, a1, a2, a.draws)
    if a.grid:
        @contextlib.contextmanager
        def variant(target):
            with column_shift(a.mode, extra=p_extra()):
                yield
        run_grid(a.grid, N=a.N, batch=a.batch, own=a.own_seeds, variant=(f"{a.mode} + xi_P", variant))
    return 0


if __name__ == "__main__":
    sys.exit(main())
