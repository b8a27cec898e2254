"""The second step's multiplier by its diagonal in ``M``'s eigenbasis, with the bulk's columns at the law of ``M``
over the samples it keeps (docs/theory/two_step_attempts.md §16, measured, not kept).

Row ``j`` of the widened bulk carries the second step's matrix ``X^T diag(y c) X / n`` (per sample ``c``,
docs/theory/two_step.md §8.2), which the profile replaces by ``e + cbar M`` from a least-squares split over the
samples.  Along an eigenvector of ``M`` with eigenvalue ``l`` that matrix has the diagonal (Hellmann-Feynman on the
weighted Marchenko-Pastur law; ``m`` its Stieltjes transform at ``l + i0``)::

    g_f(l) = E[f(y) Im(m / (1 + y m / phi))] / Im m,      f = y c,      g_f(l) = l for f = y,

which falls below the split's line at ``M``'s top columns.  Here ``g`` is fitted by a quadratic in ``l`` per node of
the first step's ``t`` (for ``y c_e`` and for ``y c``), the row polynomial ``1 + t mu2 l + eta2 a (g_e + t mu2 l g_c)``
of degree 3 is squared into column functions up to ``l^6`` (the noise keeps its slot, so the single-sample chain reads
it as before), and the columns sit at the quantiles of the law of ``M`` over the samples the bulk keeps (``--law
inside``; ``--law column``: the route's law).  Reused batches only.  ``--point`` sets the bulk's top values beside the
route's; ``--grid CACHE`` runs the acceptance grid with it, with ``--shift`` also the bulk of ``d - K`` columns and the
left-out columns' spectral shift (:mod:`benchmarks.diag_column_shift`) and ``--whole`` the whole-law eigenvalue of
``M`` along the samples (docs/theory/two_step_attempts.md §4), ``--group`` the extreme columns coupled into one group
(docs/theory/two_step_attempts.md §13)::

    python -m benchmarks.diag_hf_multiplier --point "gelu;hermite(0, 1, 0.5);0.4;0.4;2000"
    python -m benchmarks.diag_hf_multiplier --grid two_step_finite_n_cache/n1000.json --N 1000 --shift
"""
from __future__ import annotations

import argparse
import contextlib
import math
import sys

import numpy as np


def hf_diagonal(lam, y, w, phi, f, m=None):
    """``g_f`` at the eigenvalues ``lam`` of ``M = X^T diag(y) X / n`` (module docstring); ``y, w``: nodes and
    (sub-probability) weights of the samples, ``f``: the weights ``f(y)`` at those nodes; ``m``: the law's Stieltjes
    transform at ``lam + i0`` where it is already known (default: from ``(y, w)``)."""
    from rmtfl.theory._two_step.bulk_edge import weighted_mp_stieltjes

    if m is None:
        m = weighted_mp_stieltjes(np.asarray(lam, float), y, w, phi, eps=1e-7)
    kern = (m[None, :] / (1.0 + np.outer(y, m) / phi)).imag / np.maximum(m.imag, 1e-300)[None, :]
    return (w * f) @ kern


def multiplier_tables(act, st, tn, lam, wl, law):
    """Per node of ``t``: the quadratic coefficients (ascending) of ``g`` for ``y c_e`` and for ``y c``, the variance
    the fit leaves to noise and the route's own split residual (which it replaces)."""
    from rmtfl.theory._two_step.bulk_edge import weighted_mp_stieltjes
    from rmtfl.theory._two_step.finite_n import F_table

    y, w = st.y, st.w
    table = F_table(act, st, tn)
    m = weighted_mp_stieltjes(np.asarray(lam, float), *law, st.phi, eps=1e-7)      # once: it does not depend on t
    P, E1 = float(w.sum()), float(y @ w)
    yw, det = y * y * w, P * st.ey2 - E1 * E1
    out = []
    for q, t in enumerate(tn):
        c, cz = table.c[q], table.cz[q]
        ce = cz - t * st.mu2 / st.phi * y * c if table.x1 is not None else c
        fe, fc = y * ce, y * c
        pe = np.polyfit(lam, hf_diagonal(lam, y, w, st.phi, fe, m), 2, w=np.sqrt(wl))
        pc = np.polyfit(lam, hf_diagonal(lam, y, w, st.phi, fc, m), 2, w=np.sqrt(wl))
        noise = max((w @ fe**2) / st.phi + (w @ fe) ** 2 - wl @ np.polyval(pe, lam) ** 2, 0.0)
        along = (P * (ce @ yw) - E1 * (ce @ (y * w))) / det
        e = ((ce @ (y * w)) - E1 * along) / P
        out.append((pe[::-1], pc[::-1], noise, ((y * ce - e - along * y) ** 2) @ w))
    return out


def hf_multiplier(law: str = "inside"):
    """A context in which a reused batch's widened bulk is the variant of the module docstring."""
    from scipy import special

    from rmtfl.theory._two_step import widened_bulk
    from rmtfl.theory._two_step.bulk_edge import y_law
    from rmtfl.theory._two_step.sample_spikes import y_law_truncated
    from rmtfl.theory._two_step.separable_profile import SeparableProfile, fold_edge

    from .diag_column_shift import bulk_variant

    def make_bulk(base_bulk, point):
        class Bulk(base_bulk):
            def __init__(self, st, target, *, eta1, eta2, N, psi, tn, rows, second_layer, zrange=None,
                         basis="second"):
                if st.batch != "reused" or "act" not in point:
                    super().__init__(st, target, eta1=eta1, eta2=eta2, N=N, psi=psi, tn=tn, rows=rows,
                                     second_layer=second_layer, zrange=zrange, basis=basis)
                    return
                d, Nn = max(int(round(N / psi)), 1), int(round(N))
                self.basis = basis
                xg, Fm = (widened_bulk.m_law_cdf(target, st.phi, zrange) if law == "inside"
                          else widened_bulk.column_law_cdf(target, st.phi, zrange))
                lam, wl = widened_bulk.quantile_nodes(d, lambda p: np.interp(p, Fm, xg))
                a, wa = widened_bulk.quantile_nodes(Nn, lambda p: special.ndtri(p) / math.sqrt(N))
                self.a, self.wa, self.zrange = a, wa, zrange
                self.eta1, self.eta2, self.N, self.st, self.tn, self.rows = eta1, eta2, N, st, tn, rows
                laws = y_law(target) if zrange is None else y_law_truncated(target, zrange)
                self._hf = multiplier_tables(point["act"], st, tn, lam, wl, laws)
                colh = np.stack([lam**k for k in range(5)] + [np.ones_like(lam), lam**5, lam**6], axis=1)
                self._rowf = {}
                self.red = SeparableProfile(self.functions(a), colh, Nn / d, wa, wl)
                cmax = float(np.max(np.abs(self.red.rowf) @ np.abs(colh).max(0)))
                self.x_start = 4.0 * (1 + math.sqrt(Nn / d)) ** 2 * max(cmax, 1.0)
                path = []
                self.x_edge = fold_edge(self.red, self.x_start, path)
                self.edge = math.sqrt(self.x_edge)
                self._xs, self._vs = [], []
                for x, v in path:
                    if x > self.x_edge:
                        self._keep(x, v)

            def functions(self, a):
                if not hasattr(self, "_hf"):
                    return super().functions(a)
                key = np.asarray(a, dtype=float).tobytes()
                if key not in self._rowf:
                    st, t, ea = self.st, self.eta1 * a, self.eta2 * a
                    E, C, noise, resid = (np.array([h[k] for h in self._hf]) for k in range(4))

                    def at(v):
                        return np.interp(t, self.tn, v)

                    e0, e1, e2 = (at(E[:, k]) for k in range(3))
                    c0, c1, c2 = (at(C[:, k]) for k in range(3))
                    tm = t * st.mu2
                    b = [1 + ea * e0, tm + ea * (e1 + tm * c0), ea * (e2 + tm * c1), ea * tm * c2]
                    r = widened_bulk.row_coefficients(a, st, self.eta1, self.eta2, self.tn, self.rows)[4]
                    r = np.maximum(r - ea**2 * at(resid) / st.phi + ea**2 * at(noise), 0.0)
                    fk = [sum(b[i] * b[k - i] for i in range(max(0, k - 3), min(k, 3) + 1)) for k in range(7)]
                    self._rowf[key] = np.stack(fk[:5] + [r] + fk[5:], axis=1)    # the noise keeps column 5
                return self._rowf[key]
        return Bulk

    return bulk_variant(make_bulk)


def main(argv=None) -> int:
    from .diag_column_shift import column_shift
    from .diag_m_spike import add_grid_arguments, run_grid, whole_law_eigenvalues
    from .diag_sample_group import coupled_group

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--law", choices=("inside", "column"), default="inside")
    ap.add_argument("--point", default=None, help='"activation;target;alpha1;alpha2;N": the bulk\'s top values')
    ap.add_argument("--N", type=int, default=1000, help="with --grid")
    ap.add_argument("--shift", action="store_true", help="with --grid: d - K columns and the left-out columns' shift")
    ap.add_argument("--whole", action="store_true", help="with --grid: the whole-law eigenvalue of M as well")
    ap.add_argument("--group", action="store_true", help="with --grid: the extreme columns coupled into one group as "
                                                         "well (benchmarks.diag_sample_group, attempt 13)")
    add_grid_arguments(ap)
    a = ap.parse_args(argv)
    if a.point:
        from rmtfl.theory import get_activation, make_target
        from rmtfl.theory._two_step import two_step as two_step_module

        act, tgt, a1, a2, N = a.point.split(";")
        N = int(N)
        for name, ctx in (("as is", contextlib.nullcontext()), (f"multiplier, {a.law} law", hf_multiplier(a.law))):
            with ctx:
                r = two_step_module.predict_finite_n(get_activation(act), make_target(tgt), psi=1.0, phi=2.0,
                                                     phi2=None, eta1=N ** float(a1), eta2=N ** float(a2),
                                                     batch="reused", N=float(N))
            print(f"{name:24s} bulk top {np.round(r.bulk_top[:4], 4)}  fold {r.edge:.4f}")
    if a.grid:
        @contextlib.contextmanager
        def variant(target):
            with contextlib.ExitStack() as stack:
                stack.enter_context(hf_multiplier(a.law))
                if a.shift:
                    stack.enter_context(column_shift("without"))
                if a.whole:
                    stack.enter_context(whole_law_eigenvalues(target, float(a.N)))
                if a.group:
                    stack.enter_context(coupled_group())
                yield
        name = ("multiplier" + (" + shift" if a.shift else "") + (" + whole law" if a.whole else "")
                + (" + group" if a.group else ""))
        run_grid(a.grid, N=a.N, batch=a.batch, own=a.own_seeds, variant=(name, variant))
    return 0


if __name__ == "__main__":
    sys.exit(main())
