"""The extreme samples' columns back in the bulk's top values: the bulk without them and their spectral shift
(docs/theory/two_step_attempts.md §15, measured, not kept).

The widened bulk leaves out a batch's ``K`` most extreme samples (docs/theory/two_step.md §8.3) but keeps ``d``
columns, the whole law of ``M`` less its top ranks (docs/theory/two_step.md §8.2, "The bulk's columns").  In a draw
those samples' columns are there, each below its own threshold or above it.  Here the bulk keeps ``d - K`` columns
(the share of the batch beyond the cut taken off the column weights; ``--mode without``, the default) and its top
values count, below the fold, the spectral shift of the left-out columns,

    sum_b n_b m_b (arg(1 - Q_b(x + i0)) - arg(1 - Q_b(x_edge))) / pi,    Q_b(x) = psi E_j[v_bj (-t_j(x))],

over the sub-bins ``b`` of the tails (:func:`rmtfl.theory._two_step.sample_order.column_parts`, cut at each side's
share of the samples beyond the bulk's interval), ``n_b m_b`` expected samples in each; ``--mode shift`` adds the
shift to the bulk of ``d`` columns instead (``mode="kept"`` keeps the bulk as it is, for another shift's ``extra``
count alone: :mod:`benchmarks.diag_p_shift`).  ``--linear`` sets the bulk's predicted top values (ranks 3-12 below the
outliers) beside 8 simulated draws with a linear target, where no sample makes an outlier; ``--grid CACHE`` runs the
acceptance grid with the variant beside the prediction as it is (``--whole``: with the whole-law eigenvalue of ``M``
along the samples as well, docs/theory/two_step_attempts.md §4)::

    python -m benchmarks.diag_column_shift --linear
    python -m benchmarks.diag_column_shift --grid two_step_finite_n_cache/n1000.json --N 1000 --batch reused
    python -m benchmarks.diag_column_shift --grid two_step_finite_n_cache/n1000.json --N 1000 --whole

The variant changes the prediction through subclassing and wrapping inside a ``with`` block only.
"""
from __future__ import annotations

import argparse
import contextlib
import math
import sys

import numpy as np

#: The points of ``--linear``: ``(activation, alpha1, alpha2)``, linear target, N = d = 1000, n = 2000, reused.
LINEAR_POINTS = [("tanh", 0.4, 0.4), ("erf", 0.4, 0.4), ("tanh", 0.0, 0.4), ("gelu", 0.4, 0.4), ("tanh", 0.4, 0.0),
                 ("gelu", 0.0, 0.4), ("tanh", 0.3, 0.3)]


#: The levels of ``eta`` and the sweeps at each with which the shift's row kernels are solved
#: (:meth:`~rmtfl.theory._two_step.widened_bulk.WidenedBulk.resolvent_below`; :func:`converged_kernels`).
SHIFT_LEVELS, SHIFT_SWEEPS = 16, 40


def converged_kernels(bulk, x, eta):
    """The row kernels at ``x + i eta`` (ascending ``x``) solved to convergence for the shift (:data:`SHIFT_LEVELS`,
    :data:`SHIFT_SWEEPS`): near a column's threshold ``arg(1 - Q)`` turns fast, and the bulk's own eight levels of
    twelve sweeps leave it 0.1-0.2 values off at 0.01 Tracy–Widom scales from the axis
    (docs/theory/two_step_attempts.md §38)."""
    return bulk.resolvent_below(x, eta, levels=SHIFT_LEVELS, sweeps=SHIFT_SWEEPS)[0]


def shift_on(bulk, x, columns, eta):
    """:func:`left_out_shift` on any ascending grid ``x`` (zero above the fold), ``eta`` off the axis, its kernels
    solved to convergence (:func:`converged_kernels`) at the grid's points below the fold and at the fold itself,
    where it is taken as zero."""
    out = np.zeros_like(np.asarray(x, float))
    inside = x < bulk.x_edge
    if inside.any():
        xf = np.append(x[inside], bulk.x_edge)
        out[inside] = left_out_shift(bulk, xf, converged_kernels(bulk, xf, eta), columns)[:-1]
    return out


def left_out_shift(bulk, x, t, columns):
    """Expected eigenvalues above each ``x`` (ascending grid) added by ``columns = (V, counts)``: column variances
    per sub-bin and row (units of ``1/d``) and expected columns per sub-bin (module docstring); ``t`` the row kernels
    at ``x`` (:meth:`~rmtfl.theory._two_step.widened_bulk.WidenedBulk.resolvent_below`), less what they add at the
    grid's last point at or below the fold, which should be the fold itself: the shift rises steeply just below it
    (:func:`shift_on`; docs/theory/two_step_attempts.md §38).  Zero above the fold."""
    V, counts = columns
    below = x <= bulk.x_edge * (1.0 + 1e-12)
    out = np.zeros_like(x)
    if below.any():
        phase = np.angle(1.0 - bulk.red.psi * ((-t[below]) * bulk.wa) @ V.T)   # in (0, pi): Im Q < 0 off the axis
        out[below] = ((phase - phase[-1]) / np.pi) @ counts
    return out


def left_out_columns(act, target, st, bulk, *, eta1, eta2, N, psi, K):
    """``(V, counts)`` of the samples the bulk leaves out (module docstring)."""
    from rmtfl.theory._two_step.sample_order import column_parts
    from rmtfl.theory._two_step.sample_spikes import outlier_shares, second_step_move

    rho = second_step_move(act, st, eta1 * bulk.a) if st.batch == "reused" else None
    parts = column_parts(act, target, st, bulk, eta1=eta1, eta2=eta2, N=N, psi=psi, ranks=K, rho=rho)[0]
    shares = outlier_shares(target, bulk.zrange)
    V, counts = [], []
    for mass, vmean, _, n_b in parts:
        half = mass.size // 2
        for side, share in enumerate(shares):          # the side of positive y first, each from its extreme inward
            m = mass[side * half:(side + 1) * half]
            cum = np.concatenate([[0.0], np.cumsum(m)])
            V.append(vmean[side * half:(side + 1) * half])
            counts.append(n_b * np.clip(np.minimum(cum[1:], share) - cum[:-1], 0.0, None))
    return np.concatenate(V), np.concatenate(counts)


def point_left_out_columns(act, target, kw, bulk, *, N, psi):
    """:func:`left_out_columns` of the finite-``N`` prediction under way: ``act`` and ``target`` as its route resolved
    them, ``kw`` its keywords (``phi``, ``phi2``, ``batch``, ``eta1``, ``eta2``), ``bulk`` its widened bulk."""
    from rmtfl.theory._two_step.finite_n import extreme_ranks, finite_n_setup

    st = finite_n_setup(act, target, phi=kw["phi"], batch=kw["batch"], phi2=kw["phi2"])
    K = extreme_ranks(N=N, psi=psi, phi=kw["phi"], phi2=kw["phi2"], batch=kw["batch"])
    return left_out_columns(act, target, st, bulk, eta1=kw["eta1"], eta2=kw["eta2"], N=N, psi=psi, K=K)


@contextlib.contextmanager
def bulk_variant(make_bulk):
    """Within the block the route's finite-N prediction builds its bulk with the class ``make_bulk(base, point)``
    returns (``base`` the route's :class:`~rmtfl.theory._two_step.widened_bulk.WidenedBulk`), ``point`` a dict that
    holds the activation, ``psi``, ``phi``, ``phi2`` and ``batch`` of the prediction under way; both are restored on
    leaving it."""
    from rmtfl.theory._two_step import finite_n, two_step as two_step_module

    point = {}
    base_bulk, base_predict = finite_n.WidenedBulk, two_step_module.predict_finite_n

    def predict(act, target, **kw):
        point.update(act=act, psi=kw["psi"], phi=kw["phi"], phi2=kw["phi2"], batch=kw["batch"])
        return base_predict(act, target, **kw)

    finite_n.WidenedBulk, two_step_module.predict_finite_n = make_bulk(base_bulk, point), predict
    try:
        yield
    finally:
        finite_n.WidenedBulk, two_step_module.predict_finite_n = base_bulk, base_predict


def shifted_top_values(bulk, count: int, add, *, points: int = 80, levels: int = 8, sweeps: int = 12):
    """:meth:`~rmtfl.theory._two_step.widened_bulk.WidenedBulk.top_values` with ``add(x, t, eta)`` more eigenvalues
    expected above each ``x`` (``t`` the row kernels there at ``x + i eta``)."""
    N, xe = int(round(bulk.N)), bulk.x_edge
    span = min(0.95, 6.0 * (count / N) ** (2.0 / 3.0))
    for _ in range(4):
        u = np.linspace(0.0, 1.0, points)
        x = xe * (1.02 - (0.02 + span) * u**1.5)[::-1]
        eta = 0.1 * xe * span / points
        t, above = bulk.resolvent_below(x, eta, levels=levels, sweeps=sweeps)
        above = above + add(x, t, eta)
        if above[0] >= count or span >= 0.95:
            break
        span = min(0.95, 2.0 * span)
    k = np.arange(1, count + 1) - 0.5
    return np.sqrt(np.interp(-k, -above, x, left=x[0]))


def column_shift(mode: str = "without", extra=None, *, shift: bool = True):
    """A context in which the prediction's bulk is the variant of the module docstring (``mode``: ``"without"``,
    ``"shift"``, or ``"kept"``: the bulk as it is); ``extra(bulk, point, x, t, eta)``, if given, adds more expected
    eigenvalues above each ``x`` below the fold (``t`` the row kernels at ``x + i eta``).  ``shift=False`` leaves the
    left-out columns' spectral shift out (with ``"without"``: the bulk of ``d - K`` columns alone)."""
    from rmtfl.theory._two_step import widened_bulk
    from rmtfl.theory._two_step.finite_n import extreme_ranks, finite_n_setup
    from rmtfl.theory._two_step.sample_spikes import outlier_shares

    base_nodes = widened_bulk.quantile_nodes

    def make_bulk(base_bulk, point):
        class Bulk(base_bulk):
            def __init__(self, st, target, *, zrange=None, basis="second", **kw):
                self.target = target
                scale = 1.0
                if mode == "without" and zrange is not None:
                    phi_c = st.phi2 if st.batch == "fresh" and basis == "second" else st.phi
                    scale = max(1.0 - phi_c * sum(outlier_shares(target, zrange)), 0.5)
                first = [True]

                def nodes(n, ppf, *args, **kwargs):      # the first call makes the columns, the second the rows
                    x, w = base_nodes(n, ppf, *args, **kwargs)
                    columns, first[0] = first[0], False
                    return (x, w * scale) if columns else (x, w)

                widened_bulk.quantile_nodes = nodes
                try:
                    super().__init__(st, target, zrange=zrange, basis=basis, **kw)
                finally:
                    widened_bulk.quantile_nodes = base_nodes

            def top_values(self, count, *, points=80, levels=8, sweeps=12):
                if "act" not in point or (extra is None and (self.zrange is None or not shift)):
                    return super().top_values(count, points=points, levels=levels, sweeps=sweeps)
                p = point
                cols = None
                if shift and mode != "kept" and self.zrange is not None:
                    st = finite_n_setup(p["act"], self.target, phi=p["phi"], batch=p["batch"], phi2=p["phi2"])
                    K = extreme_ranks(N=self.N, psi=p["psi"], phi=p["phi"], phi2=p["phi2"], batch=p["batch"])
                    cols = left_out_columns(p["act"], self.target, st, self, eta1=self.eta1, eta2=self.eta2,
                                            N=self.N, psi=p["psi"], K=K)

                def add(x, t, eta):
                    out = np.zeros_like(x) if cols is None else shift_on(self, x, cols, eta)
                    return out if extra is None else out + extra(self, p, x, t, eta)
                return shifted_top_values(self, count, add, points=points, levels=levels, sweeps=sweeps)
        return Bulk

    return bulk_variant(make_bulk)


def linear(mode: str, draws: int = 8) -> None:
    """The bulk's predicted top values (ranks 3-12 below the outliers) against ``draws`` simulated draws, linear
    target, at :data:`LINEAR_POINTS`, as it is and with the variant (the route's ``predict_finite_n``, which the block
    wraps)."""
    from rmtfl.numerics import simulate_two_step
    from rmtfl.theory import get_activation, make_target
    from rmtfl.theory._two_step import two_step as two_step_module

    N, tgt = 1000, make_target("linear")
    print(f"linear target, N = d = {N}, n = {2 * N}, reused, {draws} draws: predicted minus simulated mean of ranks "
          f"3-12 below the outliers (standard error)")
    for act, a1, a2 in LINEAR_POINTS:
        S = np.array([np.sort(simulate_two_step(act, tgt, N=N, d=N, n=2 * N, eta1=N**a1, eta2=N**a2, k=40,
                                                rng=9000 + i).singular_values)[::-1] for i in range(draws)])
        gaps = []
        for ctx in (contextlib.nullcontext(), column_shift(mode)):
            with ctx:                            # the route's own reference, which the block wraps
                r = two_step_module.predict_finite_n(get_activation(act), tgt, psi=1.0, phi=2.0, phi2=None,
                                                     eta1=N**a1, eta2=N**a2, batch="reused", N=float(N))
            roots = len(r.locations) + len(r.samples)
            sim = S[:, roots + 2:roots + 12].mean(axis=1)
            gaps.append((float(np.mean(r.bulk_top[2:12])) - sim.mean(), sim.std(ddof=1) / math.sqrt(draws)))
        print(f"  {act:5s} ({a1}, {a2}): as is {gaps[0][0]:+.4f}, {mode} {gaps[1][0]:+.4f} (s.e. {gaps[1][1]:.4f})")


def main(argv=None) -> int:
    from .diag_m_spike import add_grid_arguments, run_grid, whole_law_eigenvalues

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mode", choices=("without", "shift", "kept"), default="without")
    ap.add_argument("--linear", action="store_true", help="the bulk's top against simulated draws, linear target")
    ap.add_argument("--N", type=int, default=1000, help="with --grid")
    ap.add_argument("--whole", action="store_true", help="with --grid: the whole-law eigenvalue of M as well")
    add_grid_arguments(ap)
    a = ap.parse_args(argv)
    if a.grid:
        @contextlib.contextmanager
        def variant(target):
            with column_shift(a.mode), (whole_law_eigenvalues(target, float(a.N)) if a.whole
                                        else contextlib.nullcontext()):
                yield
        run_grid(a.grid, N=a.N, batch=a.batch, own=a.own_seeds,
                 variant=(a.mode + (" + whole law" if a.whole else ""), variant))
    if a.linear:
        linear(a.mode)
    return 0


if __name__ == "__main__":
    sys.exit(main())
