"""The quadratic sigma's single-sample outliers taken apart: the bulk ``H`` alone, and the push of ``P`` on them
(docs/theory/two_step_attempts.md §23; measured).

For ``sigma = He1 + He2/2`` and a reused batch, ``W_2 = H + P`` exactly (docs/theory/two_step.md §5.4):
``H = W_0 (I + eps_1 M)(I + eps_2 M)`` row by row (``eps_t = eta_t a_j``,
:func:`benchmarks.diag_fresh_sample.quadratic_h`) and
``P = (eta_1 + eta_2) a beta_hat^T + eta_1 eta_2 a^{⊙2} (M beta_hat)^T``.  Along the eigenvectors of ``M`` the
columns of ``H`` are independent Gaussian columns with the row profile ``(1 + eps_1 lambda)(1 + eps_2 lambda)``, so a
single sample's outlier of ``H`` is its column alone: ``M``'s eigenvalue along it and the row kernel of the bulk
set it.  ``P`` then moves it, through the components of ``beta_hat`` and ``M beta_hat`` along that eigenvector,
and through the rest of the matrix (``--part resolvent``).

``--part draws`` draws natural batches (seeds 20000, 20001, ...; ``W_0 ~ N(0, 1/d)``, ``a ~ N(0, 1/N)``, as
:func:`rmtfl.numerics.simulate_two_step` draws them) and prints, rank by rank, the single-sample values of ``H``
(ranks 1, 2, ... of ``H``) and of ``W_2`` (ranks 3, 4, ..., below the two spikes of ``P``), their paired
difference, and the prediction's means and medians of the single-sample ranks in four forms: the eigenvalue of
``M`` along the sample over the bulk's samples (the prediction) or over the whole law (attempt 4), each with the
sample's own term in the second step at ``y_i / phi`` (the prediction) or at that eigenvalue
(:data:`rmtfl.theory._two_step.sample_spikes.OWN_TERM_EIGENVALUE`)::

    python -m benchmarks.diag_quadratic_parts --alphas 0.4,0.4 --draws 80

``--part resolvent`` takes away the component of ``P``'s right vectors along the top column of ``H`` (``M``'s top
eigenvector), so that ``P`` meets that column only through the rest of the matrix, and compares the column's mean
self-energy ``sum_j v_j G_jj`` at its root ``x = s^2`` in ``H + P`` with and without ``P`` in the rest: exactly
(Woodbury) and by the deterministic form :func:`resolvent_shift` states, which a prediction could compute::

    python -m benchmarks.diag_quadratic_parts --part resolvent --alphas 0.4,0.4 --draws 6

``--part joint`` solves the joint problem of :mod:`rmtfl.theory._two_step.joint_roots` over a typical batch with the
columns uncoupled, coupled to ``P`` by their components (the prediction's coupling) and with ``P``'s update of the row
kernel along its left vectors as well (:func:`left_route_problem`)::

    python -m benchmarks.diag_quadratic_parts --part joint --alphas 0.4,0.4
"""
from __future__ import annotations

import argparse
import contextlib
import math
import sys

import numpy as np

QUADRATIC = "hermite(0, 1, 0.5)"


def paired_draw(tgt, *, N: int, d: int, n: int, eta1: float, eta2: float, seed: int, k: int = 8):
    """``(top k singular values of W_2, of H, the batch's largest y)`` of one natural batch (module docstring)."""
    from rmtfl.numerics import sample_targets

    from .diag_fresh_sample import quadratic_h

    rng = np.random.default_rng(seed)
    W0 = rng.standard_normal((N, d)) / math.sqrt(d)
    a = rng.standard_normal(N) / math.sqrt(N)
    X = rng.standard_normal((n, d))
    y = np.asarray(sample_targets(X, target=tgt), dtype=float)
    H = quadratic_h(W0, a, X, y, eta1, eta2)
    beta_hat = X.T @ y / n
    m_beta = X.T @ (y * (X @ beta_hat)) / n
    W2 = H + (eta1 + eta2) * np.outer(a, beta_hat) + eta1 * eta2 * np.outer(a * a, m_beta)
    sv = lambda A: np.linalg.svd(A, compute_uv=False)[:k]         # noqa: E731
    return sv(W2), sv(H), float(y.max())


def row_profile(a, lam, eta1: float, eta2: float) -> np.ndarray:
    """``p_jk = (1 + eta1 a_j lambda_k)(1 + eta2 a_j lambda_k)``: the row profile of ``H``'s columns along ``M``'s
    eigenvectors (module docstring)."""
    return (1 + eta1 * a[:, None] * lam[None, :]) * (1 + eta2 * a[:, None] * lam[None, :])


@contextlib.contextmanager
def prediction_form(tgt, N: int, *, whole: bool, own: bool):
    """Within the block the prediction takes the whole-law eigenvalue of ``M`` (``whole``, attempt 4) and the second
    step's own term at it (``own``, :data:`rmtfl.theory._two_step.sample_spikes.OWN_TERM_EIGENVALUE`)."""
    from rmtfl.theory._two_step import sample_spikes

    from .diag_m_spike import whole_law_eigenvalues

    kept = sample_spikes.OWN_TERM_EIGENVALUE
    sample_spikes.OWN_TERM_EIGENVALUE = own
    try:
        with whole_law_eigenvalues(tgt, float(N)) if whole else contextlib.nullcontext():
            yield
    finally:
        sample_spikes.OWN_TERM_EIGENVALUE = kept


def eigenbasis_draw(tgt, *, N: int, d: int, n: int, eta1: float, eta2: float, seed: int):
    """``(G * p, lambda, b, a)``: ``H`` in the eigenbasis of ``M`` (independent Gaussian columns with the row profile
    ``p``), ``M``'s eigenvalues and the components ``b = U^T beta_hat``; ``P`` there is
    ``(eta1 + eta2) a b^T + eta1 eta2 a^2 (lambda b)^T`` (module docstring)."""
    from rmtfl.numerics import sample_targets

    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = np.asarray(sample_targets(X, target=tgt), dtype=float)
    lam, U = np.linalg.eigh(X.T @ (y[:, None] * X) / n)
    b = U.T @ (X.T @ y / n)
    a = rng.standard_normal(N) / math.sqrt(N)
    return rng.standard_normal((N, d)) / math.sqrt(d) * row_profile(a, lam, eta1, eta2), lam, b, a


def resolvent_shift(H, lam, b, a, eta1: float, eta2: float):
    """How ``P`` moves the top column of ``H`` through the rest of the matrix (module docstring, ``--part
    resolvent``): ``(top value of H, the column's value s in H + P, exact, DE, its L part, its V part)``, the last four
    the relative change of the column's mean self-energy ``sum_j v_j G_jj`` at ``x = s^2`` when ``P`` (with no
    component along the column) joins the rest ``B0`` of ``H``.

    Exact: ``G_B - G_0`` from the two inverses, ``B = B0 + L V^T``.  DE: Woodbury's update
    ``G_B = G_0 - G_0 Y K Y^T G_0`` (``Y = [L, B0 V]``, ``K = (C^{-1} + Y^T G_0 Y)^{-1}``) with its diagonal's mean,
    ``-(m_j^2 L_j^T K_LL L_j + sum_k v_jk mt_k^2 V_k^T K_VV V_k)``, ``m``, ``mt`` the bulk's row and column kernels (the
    part along ``B0 V`` by its row variance; the cross terms, of mean zero, left out)."""
    N, d = H.shape
    k = int(np.argmax(lam))
    L = np.stack([a, a * a], 1)
    V = np.stack([(eta1 + eta2) * b, eta1 * eta2 * lam * b], 1)
    V[k] = 0.0
    B0 = H.copy()
    B0[:, k] = 0.0
    _, S, Vt = np.linalg.svd(B0 + L @ V.T + np.outer(H[:, k], np.eye(d)[k]))
    s = float(S[int(np.argmax(Vt[:, k] ** 2))])
    x = s * s
    G0 = np.linalg.inv(B0 @ B0.T - x * np.eye(N))
    mt = np.diag(np.linalg.inv(B0.T @ B0 - x * np.eye(d)))
    B = B0 + L @ V.T
    GB = np.linalg.inv(B @ B.T - x * np.eye(N))
    prof = row_profile(a, lam, eta1, eta2) ** 2 / d
    v = prof[:, k].copy()                       # the column's profile (the variances of its entries)
    prof[:, k] = 0.0
    base = float(v @ np.diag(G0))
    Y = np.hstack([L, B0 @ V])
    C = np.block([[V.T @ V, np.eye(2)], [np.eye(2), np.zeros((2, 2))]])
    K = np.linalg.inv(np.linalg.inv(C) + Y.T @ G0 @ Y)
    m = np.diag(G0)
    d_l = -v @ (m ** 2 * np.einsum("ja,ab,jb->j", L, K[:2, :2], L))
    d_v = -v @ (prof @ (mt ** 2 * np.einsum("ka,ab,kb->k", V, K[2:, 2:], V)))
    exact = float(v @ (np.diag(GB) - np.diag(G0)))
    top = float(np.linalg.svd(H, compute_uv=False)[0])
    return top, s, exact / base, (d_l + d_v) / base, d_l / base, d_v / base


def left_route_problem(base_cls):
    """A :class:`~rmtfl.theory._two_step.joint_roots.JointProblem` whose column denominators also see ``P``'s update
    of the bulk's row kernel along ``P``'s left vectors (the L part of :func:`resolvent_shift`, in the prediction's
    units): ``D_i -= (psi / N) E_g[v_i(g) tau(g)^2 u(g)^T K_LL u(g)]`` over ``P``'s nodes ``g`` (weights ``wg``),
    ``u(g)`` the left basis of ``G_U``, ``K_LL = R^{-1} S (I - S)^{-1} R^{-1}`` with ``I - S`` the joint problem's
    block ``A`` and ``R^2 = G_U(tau)`` (:func:`left_route_kernel`); ``Vg``: the columns' profiles at the nodes."""
    class Pushed(base_cls):
        def __init__(self, *args, Vg, wg, **kw):
            super().__init__(*args, **kw)
            self.Vg, self.wg = Vg, wg

        def blocks(self, s):
            b = super().blocks(s)
            if b is None:
                return b
            A, B, D = b
            tq, quad = left_route_kernel(self.bulk, self.G_U_w, self.g, self.N, A, s)
            dD = -(self.bulk.red.psi / self.N) * (self.Vg * (tq**2 * quad * self.wg)[None, :]).sum(1)
            return A, B, D + dD
    return Pushed


def left_route_kernel(bulk, G_U_w, g, N, A, s):
    """``(tau, u^T K_LL u)`` at ``P``'s nodes ``g`` at ``x = s^2`` (:func:`left_route_problem`): the row kernel and
    the quadratic form of ``K_LL = F^+ S (I - S)^{-1} F^{+T}`` (``I - S = A``, ``P``'s block of the joint problem in
    the basis of its factor ``F``, ``F^T F = G_U(tau)``, ``F^+`` its pseudo-inverse; with the symmetric root ``R`` in
    place of ``F`` the same form) in the left basis ``u(g)`` of ``P``'s Gram ``G_U``."""
    tq, _ = bulk.tau_rows(g / math.sqrt(N), s * s)
    Fp = np.linalg.pinv(G_U_w.factor(tq), rcond=1e-12)
    K_ll = Fp @ (np.eye(A.shape[0]) - A) @ np.linalg.solve(A, Fp.T)
    Q = g.size
    U = np.zeros((Q + 1, Q))
    U[0] = g
    U[1 + np.arange(Q), np.arange(Q)] = g
    return tq, np.einsum("aq,ab,bq->q", U, K_ll, U)


def left_route_shift(bulk, G_U_w, G_V, g, N, s, V, wg):
    """The change of the strengths of columns with profiles ``V`` (rows: columns, at ``P``'s nodes ``g``, weights
    ``wg``) at ``s`` by ``P``'s update of the bulk's row kernel along its left vectors, ``(psi / N) E_g[v tau^2 u^T
    K_LL u]`` (:func:`left_route_kernel`, with ``P``'s block ``A`` of the joint problem at ``s``)."""
    x = s * s
    tq, ttm = bulk.tau_rows(g / math.sqrt(N), x)
    F = G_U_w.factor(tq)
    A = np.eye(F.shape[0]) - x * ttm * (F @ G_V @ F.T)
    tq, quad = left_route_kernel(bulk, G_U_w, g, N, (A + A.T) / 2, s)
    return (bulk.red.psi / N) * (np.asarray(V) @ (tq**2 * quad * wg))


def node_profiles(act, st, bulk, *, ys, zs, lams, g, wg, eta1: float, eta2: float, N: float, which: str):
    """The column profiles ``1 + r + excess`` (units of ``1/d``) of the samples ``(ys, zs)`` at ``P``'s nodes ``g``
    (weights ``wg``), as the prediction computes them at the bulk's rows
    (:func:`rmtfl.theory._two_step.sample_spikes.sample_strengths`; a reused batch with the second step's move at
    the nodes)."""
    from rmtfl.theory._two_step import sample_spikes

    rho = sample_spikes.second_step_move(act, st, eta1 * g / math.sqrt(N)) if which == "both" else None
    _, rws = sample_spikes.sample_strengths(act, st, ys=ys, zs=zs, eta1=eta1, eta2=eta2, N=N, d=N / bulk.red.psi,
                                            g=g, wg=wg, which=which, lams=lams, rho=rho)
    return np.array([1.0 + bulk.functions(g / math.sqrt(N))[:, 5] + ex for ex in rws])


def joint_push(act, tgt, *, N: int, eta1: float, eta2: float, whole: bool, own: bool):
    """The joint problem's roots over a typical batch (``(spikes, first three single samples)``) with the columns
    uncoupled, coupled to ``P`` by their components (the prediction's), and with ``P``'s update of the row kernel as
    well (:func:`left_route_problem`); ``whole`` / ``own`` as for :func:`predicted_samples`."""
    from rmtfl.theory._two_step import finite_n, joint_roots, sample_spikes

    seen = {}
    base, extreme = finite_n.JointProblem, finite_n.extreme_columns

    class Seen(base):
        def __init__(self, *args, **kw):
            super().__init__(*args, **kw)
            seen["jp"] = self

    def columns(*args, **kw):
        seen["args"], seen["kw"] = args, kw
        return extreme(*args, **kw)

    finite_n.JointProblem, finite_n.extreme_columns = Seen, columns
    try:
        with prediction_form(tgt, N, whole=whole, own=own):
            r = finite_n.predict_finite_n(act, tgt, psi=1.0, phi=2.0, phi2=None, eta1=eta1, eta2=eta2,
                                          batch="reused", N=float(N))
            jp, (st, bulk) = seen["jp"], seen["args"][2:4]
            g = jp.g
            wg = finite_n.finite_n_grams(act, st, eta1=eta1, eta2=eta2, N=float(N), bulk=False)[5]
            yb, wb = sample_spikes.y_law_truncated(tgt, bulk.zrange)
            K = jp.cols.U.shape[1]
            ys, zs = sample_spikes.typical_extremes(tgt, 2 * N, K)
            lams = joint_roots.extreme_eigenvalues(ys, zs, 2.0, yb, wb, bulk.zrange)
            Vg = node_profiles(act, st, bulk, ys=ys, zs=zs, lams=lams, g=g, wg=wg, eta1=eta1, eta2=eta2, N=float(N),
                               which="both")
            pushed = left_route_problem(base)
            edge = r.edge * (1 + 1e-6)
            out = {}
            for name, U, extra in (("uncoupled", 0 * jp.cols.U, None), ("coupled", jp.cols.U, None),
                                   ("coupled + row kernel", jp.cols.U, (Vg, wg))):
                cols = joint_roots.ExtremeColumns(jp.cols.V, U)
                j = (base(jp.bulk, cols, jp.G_U_w, jp.G_V, g, jp.N) if extra is None else
                     pushed(jp.bulk, cols, jp.G_U_w, jp.G_V, g, jp.N, Vg=extra[0], wg=extra[1]))
                roots = j.roots(edge, 400.0, np.zeros(K), refine=lambda o: range(len(o)))
                out[name] = ([s for s, w in roots if w >= 0.5], [s for s, w in roots if w < 0.5][:3])
    finally:
        finite_n.JointProblem, finite_n.extreme_columns = base, extreme
    return out


def predicted_samples(act, tgt, *, N: int, eta1: float, eta2: float, whole: bool, own: bool):
    """``[(mean, median), ...]`` of the prediction's single-sample ranks, in the form ``whole`` / ``own`` (module
    docstring)."""
    from rmtfl.theory._two_step.finite_n import predict_finite_n

    with prediction_form(tgt, N, whole=whole, own=own):
        r = predict_finite_n(act, tgt, psi=1.0, phi=2.0, phi2=None, eta1=eta1, eta2=eta2, batch="reused",
                             N=float(N))
    return [(float(m), float(med)) for m, _, med in r.samples]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--N", type=int, default=1000, help="N = d, n = 2 N")
    ap.add_argument("--alphas", default="0.4,0.4", help="alpha1,alpha2 (eta_t = N^alpha_t)")
    ap.add_argument("--target", default=QUADRATIC)
    ap.add_argument("--draws", type=int, default=40)
    ap.add_argument("--ranks", type=int, default=4, help="single-sample ranks to print")
    ap.add_argument("--part", choices=("draws", "resolvent", "joint"), default="draws")
    ap.add_argument("--seed0", type=int, default=20000, help="--part draws: the first batch's seed")
    args = ap.parse_args(argv)
    from rmtfl.theory import get_activation, make_target

    act, tgt = get_activation(QUADRATIC), make_target(args.target)
    N, K = args.N, args.ranks
    a1, a2 = (float(v) for v in args.alphas.split(","))
    eta1, eta2 = N ** a1, N ** a2
    if args.part == "joint":
        print(f"quadratic sigma, {args.target}, reused, N = d = {N}, ({a1}, {a2}): the joint problem over a typical "
              "batch, the whole-law eigenvalue and the own term at it")
        for name, (spikes, samples) in joint_push(act, tgt, N=N, eta1=eta1, eta2=eta2, whole=True, own=True).items():
            print(f"  {name:22s} spikes {[round(v, 3) for v in spikes]}, "
                  f"single samples {[round(v, 3) for v in samples]}")
        return 0
    if args.part == "resolvent":
        rows = np.array([resolvent_shift(*eigenbasis_draw(tgt, N=N, d=N, n=2 * N, eta1=eta1, eta2=eta2,
                                                          seed=30000 + s), eta1, eta2) for s in range(args.draws)])
        print(f"quadratic sigma, {args.target}, N = d = {N}, ({a1}, {a2}), {args.draws} draws (seeds 30000 on), "
              "P without its component along H's top column")
        diff = rows[:, 1] - rows[:, 0]
        med = np.median(rows[:, 2:], axis=0)
        print(f"  top value of H {rows[:, 0].mean():.3f}, the top column's in H + P {rows[:, 1].mean():.3f} (paired "
              f"{diff.mean():+.3f} +- {diff.std(ddof=1) / math.sqrt(len(rows)):.3f})")
        print("  its mean self-energy at that root moved by P, per draw: exact / DE / DE's L part / DE's V part")
        for r in rows:
            print(f"    {r[2]:+.4f}  {r[3]:+.4f}  {r[4]:+.4f}  {r[5]:+.4f}")
        print(f"  medians: {med[0]:+.4f}  {med[1]:+.4f}  {med[2]:+.4f}  {med[3]:+.4f}")
        return 0
    rows = [paired_draw(tgt, N=N, d=N, n=2 * N, eta1=eta1, eta2=eta2, seed=args.seed0 + s, k=K + 2)
            for s in range(args.draws)]
    W2 = np.array([r[0] for r in rows])[:, 2:2 + K]
    H = np.array([r[1] for r in rows])[:, :K]
    se = lambda v: v.std(0, ddof=1) / math.sqrt(v.shape[0])       # noqa: E731
    print(f"quadratic sigma, {args.target}, reused, N = d = {N}, n = {2 * N}, (alpha1, alpha2) = ({a1}, {a2}), "
          f"{args.draws} draws (seeds {args.seed0} on)")
    print(f"  H, ranks 1-{K}:      mean {np.round(H.mean(0), 3)} +- {np.round(se(H), 3)}, "
          f"median {np.round(np.median(H, 0), 3)}")
    print(f"  W_2, ranks 3-{K + 2}:  mean {np.round(W2.mean(0), 3)} +- {np.round(se(W2), 3)}, "
          f"median {np.round(np.median(W2, 0), 3)}")
    print(f"  W_2 - H (paired):   {np.round((W2 - H).mean(0), 3)} +- {np.round(se(W2 - H), 3)}")
    for whole in (False, True):
        for own in (False, True):
            pred = predicted_samples(act, tgt, N=N, eta1=eta1, eta2=eta2, whole=whole, own=own)[:K]
            name = ("whole law" if whole else "bulk's samples") + (", own term at lambda" if own else "")
            print(f"  predicted ({name}): means {[round(m, 3) for m, _ in pred]}, "
                  f"medians {[round(m, 3) for _, m in pred]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
