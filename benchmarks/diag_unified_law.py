"""The single samples' law with every piece measured so far at once: the lift and the push together
(docs/theory/two_step_attempts.md §24; measured, not kept).

Attempts 4, 10, 13 and 23 each added one piece to the law of the single-sample outliers
(docs/theory/two_step.md §8.3) and each broke what the others' absence had balanced.  Here they act together:

- the eigenvalue of ``M`` along a sample over the whole law of ``y`` (attempt 4) and the second step's own term at
  it (attempt 23, :data:`rmtfl.theory._two_step.sample_spikes.OWN_TERM_EIGENVALUE`);
- the columns pushed by the spikes of ``P`` through their components (attempt 10,
  :data:`rmtfl.theory._two_step.sample_coupling.COUPLE_SAMPLES`) and through ``P``'s update of the bulk's row kernel
  along its left vectors (attempt 23's row-kernel route, :func:`benchmarks.diag_quadratic_parts.left_route_kernel`),
  added to each sub-bin's strength inside the law;
- the batch's extreme columns coupled into one group (attempt 13), the push on the group's strengths as well, and
  the group, unpushed, in the law the spikes' joint problem places its columns by (:func:`unified_law`).

``--part forms`` prints the spikes and the first single-sample ranks of the prediction with the pieces added one by
one; ``--part grid`` the acceptance grid's reading (all three criteria / values / counts / edges / the sign test) as
it is and with every piece; ``--part uncoupled`` the spikes of ``P`` with and without the group in the law without
the push (left out there, the spikes of the quadratic sigma with He1 + He3/√6 at (0.4, 0.4) fall from 122 to 80);
``--part rows`` where the top singular vectors of the quadratic sigma's ``H`` lie: on single rows of large ``a_j``
and on single columns of ``M``'s eigenbasis::

    python -m benchmarks.diag_unified_law --part forms --alphas 0.4,0.4
    python -m benchmarks.diag_unified_law --part grid --cache two_step_finite_n_cache/n1000.json   # ~15 minutes
    python -m benchmarks.diag_unified_law --part uncoupled --target "hermite(0, 1, 0, 0.4082482904638631)"
    python -m benchmarks.diag_unified_law --part rows --draws 6
"""
from __future__ import annotations

import argparse
import contextlib
import math
import sys

import numpy as np

from .diag_quadratic_parts import QUADRATIC

#: The forms of ``--part forms``: the pieces of :func:`unified_law` each one has.
FORMS = (("as it is", None), ("whole law + own term", dict(push=False, left=False, group=False)),
         ("+ group", dict(push=False, left=False)), ("+ push (components)", dict(left=False, group=False)),
         ("+ push (both routes)", dict(group=False)), ("all", {}))


def _law_profiles(act, target, st, bulk, *, eta1, eta2, N, psi, ranks):
    """``(g, wg, [V per batch part])``: the sub-bins' column profiles of
    :func:`rmtfl.theory._two_step.sample_order.column_parts` at ``P``'s nodes ``g`` (weights ``wg``)."""
    from rmtfl.theory._two_step import finite_n, sample_order, sample_spikes
    from rmtfl.theory._two_step.bulk_edge import y_law

    from .diag_quadratic_parts import node_profiles

    d = N / psi
    g, wg = finite_n.finite_n_grams(act, st, eta1=eta1, eta2=eta2, N=N, bulk=False)[4:6]
    yb, wb = y_law(target) if bulk.zrange is None else sample_spikes.y_law_truncated(target, bulk.zrange)
    names = [("both", st.phi)] if st.batch == "reused" else [("first", st.phi), ("second", st.phi2)]
    out = []
    for which, phi_b in names:
        n_b = max(int(round(phi_b * d)), 1)
        p_tail = min(0.25, sample_order.TAIL_MASS * ranks / n_b)
        ys, zs, _ = sample_spikes.tail_bins(target, n_b, p_tail, bins=sample_order.TAIL_BINS)
        # the module's own name: within the whole law's block it is the whole law's eigenvalue
        lams = sample_order.extreme_eigenvalues(ys, zs, phi_b, yb, wb, bulk.zrange)
        R, _ = sample_spikes.tail_refinement(n_b, p_tail, bins=sample_order.TAIL_BINS, sub=sample_order.TAIL_SUB)
        out.append(R @ node_profiles(act, st, bulk, ys=ys, zs=zs, lams=lams, g=g, wg=wg, eta1=eta1, eta2=eta2, N=N,
                                     which=which))
    return g, wg, out


@contextlib.contextmanager
def unified_law(target, N: int, *, whole: bool = True, own: bool = True, push: bool = True, left: bool = True,
                group: bool = True, own_group: bool = True):
    """Within the block the prediction's single-sample law has the pieces named (module docstring): ``whole`` and
    ``own`` as :func:`benchmarks.diag_quadratic_parts.prediction_form`, ``push`` the components' coupling,
    ``left`` (with ``push``) the row-kernel route added to it, ``group`` the coupled group with the push on it;
    ``own_group=False`` leaves the group out of the law without the push (the spikes of ``P`` then fall)."""
    from rmtfl.theory._two_step import sample_coupling, sample_order

    from .diag_quadratic_parts import left_route_shift, prediction_form
    from .diag_sample_group import coupled_group

    kept_parts, kept_shift, kept_couple = sample_order.column_parts, sample_coupling.law_shift, \
        sample_coupling.COUPLE_SAMPLES
    profiles = {}

    def column_parts(act, target_, st, bulk, **kw):
        out = kept_parts(act, target_, st, bulk, **kw)
        profiles["nodes"] = _law_profiles(act, target_, st, bulk, eta1=kw["eta1"], eta2=kw["eta2"], N=kw["N"],
                                          psi=kw["psi"], ranks=kw["ranks"])
        return out

    def law_shift(bulk, G_U_w, G_V, g, N_, components, n_spikes):
        base = kept_shift(bulk, G_U_w, G_V, g, N_, components, n_spikes)
        g_n, wg, V = profiles["nodes"]
        if not np.allclose(g_n, g):
            raise RuntimeError("the column profiles were taken at other nodes than P's")

        def shift(s):
            c = base(s)
            if c is None:
                return None
            # P's update of the row kernel lowers each column's strength by (psi / N) E_g[v tau^2 u^T K_LL u]
            return [ci + left_route_shift(bulk, G_U_w, G_V, g, N_, s, Vb, wg) for ci, Vb in zip(c, V)]
        return shift

    sample_coupling.COUPLE_SAMPLES = push
    if push and left:
        sample_order.column_parts, sample_coupling.law_shift = column_parts, law_shift
    try:
        with prediction_form(target, N, whole=whole, own=own), \
                (coupled_group(shifted=True, own_group=own_group) if group else contextlib.nullcontext()):
            yield
    finally:
        sample_order.column_parts, sample_coupling.law_shift = kept_parts, kept_shift
        sample_coupling.COUPLE_SAMPLES = kept_couple


def predict_in_form(act, target, *, N: int, eta1: float, eta2: float, form):
    """:func:`rmtfl.theory._two_step.finite_n.predict_finite_n` (reused batch, ``psi = 1``, ``phi = 2``) within
    :func:`unified_law` with the pieces ``form`` (``None``: as it is), each single sample's rank at the mean of its
    own law (:func:`benchmarks.diag_m_spike.as_own_laws`, as the law was measured)."""
    from rmtfl.theory._two_step.finite_n import predict_finite_n

    from .diag_m_spike import as_own_laws

    with contextlib.nullcontext() if form is None else unified_law(target, N, **form), as_own_laws():
        return predict_finite_n(act, target, psi=1.0, phi=2.0, phi2=None, eta1=eta1, eta2=eta2, batch="reused",
                                N=float(N))


def top_vectors(tgt, *, N: int, eta1: float, eta2: float, seed: int, k: int = 6):
    """Where the top ``k`` singular vectors of the quadratic sigma's ``H`` (in ``M``'s eigenbasis,
    :func:`benchmarks.diag_quadratic_parts.eigenbasis_draw`, ``d = N``, ``n = 2N``) lie: per value
    ``(s, g of the row with the left vector's largest weight, that weight, rank of M's eigenvalue of the column with the
    right vector's largest weight, that weight)``, ``g = sqrt(N) a``."""
    from .diag_quadratic_parts import eigenbasis_draw

    H, lam, _, a = eigenbasis_draw(tgt, N=N, d=N, n=2 * N, eta1=eta1, eta2=eta2, seed=seed)
    U, S, Vt = np.linalg.svd(H, full_matrices=False)
    rank = np.empty(lam.size, int)
    rank[np.argsort(-lam)] = np.arange(1, lam.size + 1)
    out = []
    for i in range(k):
        j, c = int(np.argmax(U[:, i] ** 2)), int(np.argmax(Vt[i] ** 2))
        out.append((float(S[i]), float(a[j] * math.sqrt(N)), float(U[j, i] ** 2), int(rank[c]), float(Vt[i, c] ** 2)))
    return out


def main(argv=None) -> int:
    from rmtfl.theory import get_activation, make_target

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", default="forms", choices=("forms", "grid", "uncoupled", "rows"))
    ap.add_argument("--N", type=int, default=1000, help="N = d, n = 2 N")
    ap.add_argument("--alphas", default="0.4,0.4", help="alpha1,alpha2 (eta_t = N^alpha_t)")
    ap.add_argument("--activation", default=QUADRATIC)
    ap.add_argument("--target", default=QUADRATIC)
    ap.add_argument("--cache", default=None, help="--part grid: a cache of bench_two_step_finite_n (--cache)")
    ap.add_argument("--own-seeds", action="store_true", help="--part grid: a cache of --own-seeds")
    ap.add_argument("--draws", type=int, default=6, help="--part rows: batches (seeds 20000, 20001, ...)")
    args = ap.parse_args(argv)
    a1, a2 = (float(v) for v in args.alphas.split(","))
    eta1, eta2, N = args.N ** a1, args.N ** a2, args.N
    act, tgt = get_activation(args.activation), make_target(args.target)
    if args.part == "grid":
        if args.cache is None:
            ap.error("--part grid needs --cache")
        from .diag_m_spike import run_grid
        run_grid(args.cache, N=N, batch="reused", own=args.own_seeds,
                 variant=("every piece", lambda target: unified_law(target, N)))
        return 0
    print(f"{args.activation}, {args.target}, reused, N = d = {N}, ({a1}, {a2})")
    if args.part == "forms":
        for name, form in FORMS:
            r = predict_in_form(act, tgt, N=N, eta1=eta1, eta2=eta2, form=form)
            print(f"  {name:22s} spikes {' '.join(f'{v:.3f}' for v in r.locations)}   single samples "
                  f"{' '.join(f'{m:.3f}' for m, _, _ in r.samples[:6])}")
    elif args.part == "uncoupled":
        asis = predict_in_form(act, tgt, N=N, eta1=eta1, eta2=eta2, form=None)
        print(f"  as it is                               spikes {' '.join(f'{v:.3f}' for v in asis.locations)}")
        for own_group in (True, False):
            r = predict_in_form(act, tgt, N=N, eta1=eta1, eta2=eta2, form=dict(own_group=own_group))
            name = "every piece, the group in the own law" if own_group else "every piece, the group left out there"
            print(f"  {name:38s} spikes {' '.join(f'{v:.3f}' for v in r.locations)}")
    else:
        for s in range(args.draws):
            row = top_vectors(tgt, N=N, eta1=eta1, eta2=eta2, seed=20000 + s)
            print(f"  seed {20000 + s}: " + "  ".join(f"{v:.2f} [row g={g:+.2f} {wu:.2f}, column {c} {wv:.2f}]"
                                                  for v, g, wu, c, wv in row))
    return 0


if __name__ == "__main__":
    sys.exit(main())
