"""The extreme columns' strengths in draws against the single-sample law (docs/theory/two_step_attempts.md §30;
measured, not kept).

For the quadratic ``sigma = He1 + He2/2`` the matrix ``H = W_2 - P`` is exactly ``W_0 (I + e_1 M)(I + e_2 M)``
(row ``j`` with ``e_t = eta_t a_j``), so its column along an eigenvector ``u`` of ``M`` (eigenvalue ``lambda``) is
``(W_0 u)_j (1 + e_1j lambda)(1 + e_2j lambda)``.  With ``C`` the ``K = 12`` columns of ``M``'s most extreme
eigenvectors and ``H_b`` the rest, ``T(x) = C^T (x - H_b H_b^T)^{-1} C`` counts ``H``'s values above ``x = s^2``
beyond ``H_b``'s at every ``x`` (Haynsworth's inertia additivity: ``N_H(x) = N_{H_b}(x) + #{eig T(x) > 1}``).

``--part columns`` takes the single-sample law apart, draw by draw, at ``s`` a little above the predicted fold:

* the draws' ``#{eig T > 1}``, ``#{T_ii > 1}`` (the columns on their own) and the couplings' rms, beside the
  coupled group of attempt 13 (:func:`benchmarks.diag_sample_group.group_count`) and its columns alone;
* the diagonal of ``T`` by rank; the same columns through the prediction's deterministic row kernel ``tau_j(x)``
  at the draw's own rows (``psi/N sum_j C_ji^2 tau_j``); the columns' mean strength at the draw's eigenvalues
  ``lambda_i`` and rows (``psi/N sum_j (1 + e_1j lambda_i)^2 (1 + e_2j lambda_i)^2 tau_j``); and the law's
  ranks (where its expected number of group columns above a strength is ``k - 1/2``).

``--part fold``: from 0.85 to 1.1 times the fold, the draws' mean number of values above ``s`` of ``H``, of
``H_b`` and of ``W_2`` less the two spikes of ``P``, beside the prediction's ``Lambda`` (``--mode`` of
:func:`benchmarks.diag_poisson_count.variant`, with the soft edge): its single samples' count ``mu`` (held at its
fold value below the fold) and the bulk's.

``--part steps``: the number of the group's columns standing out (eigenvalues above 1) at ``s`` from the fold to
1.1 times it, step by step from the law to the draws: the law's group on its own without and with its spread, and
coupled (attempt 13); then, averaged over the draws, the columns' mean strengths at the draws' eigenvalues of
``M`` over the prediction's rows, their expected number above 1 with the rows random (each column's ``P(S > 1)``
by :func:`strength_sf`, Gaussian rows out to 4.5 standard deviations and ``chi^2_1`` factors as in a batch), the
same over the draw's own rows, the draw's columns through the row kernel
(``T~ = C^T diag(tau) C``: its diagonal, then the whole), and ``T`` itself.  ``--lift whole``: the law with
attempt 4's whole-law eigenvalues of ``M``.

``--part pole``: the rows whose own value lies above ``s``: the row kernel ``tau(a, x)`` has a pole at the row
``|a|`` whose column of ``H^T`` alone stands out at ``x``; the expected number of such rows in a batch
(``2 N Phi(-z_pole)``, ``z_pole`` in standard deviations of ``a``) beside the draws' values of ``H_b`` above ``s``.

``--part rows``: one column's ``P(S > 1)`` at a given ``lambda`` with the rows random, as they are in a draw (``S``
a sum of ``N`` independent rows, each a row type of the prediction's row quadrature times a chi-square of one
degree; :func:`strength_sf`, exact by inversion of its characteristic function), beside the law's Gaussian of the
same mean and variance.

    python -m benchmarks.diag_column_law --part columns --alphas 0.2,0.2 --draws 8
    python -m benchmarks.diag_column_law --part rows --alphas 0.2,0.2 --lams 3.4,3.7,4.0,4.5
    python -m benchmarks.diag_column_law --part fold --alphas 0.3,0.3 --draws 40 --mode group
    python -m benchmarks.diag_column_law --part steps --alphas 0.3,0.3 --draws 40 --lift whole
    python -m benchmarks.diag_column_law --part pole --alphas 0.3,0.3 --draws 40
"""
from __future__ import annotations

import argparse
import contextlib
import math
import sys

import numpy as np
from scipy import integrate, special

#: The quadratic sigma (and, by default, the target) of every part.
QUADRATIC = "hermite(0, 1, 0.5)"

#: The extreme columns taken out of the bulk (the prediction's ``K``).
K = 12

#: ``s`` over the predicted fold where ``--part columns`` compares.
RATIOS = (1.03, 1.06, 1.1, 1.2)


def strength_sf(vmean, vm2, t, wa, *, psi: float, N: int) -> np.ndarray:
    """``P(S > 1)`` per row of ``vmean``: ``S = psi/N sum_j c_j^2 t_j`` over ``N`` independent rows, row ``j`` of type
    ``r`` with probability ``wa[r]``, ``c_j^2`` a gamma variable of mean ``vmean[r]`` and second moment ``vm2[r]``
    (Gil-Pelaez inversion of ``phi_S = phi_X^N`` by Simpson's rule in ``w``, ``t = 40 w^2 / sd``; a bin more than
    7 standard deviations from 1 by its normal law)."""
    v, m2, t, wa = (np.atleast_1d(np.asarray(a, dtype=float)) for a in (vmean, vm2, t, wa))
    v, m2 = np.atleast_2d(v), np.atleast_2d(m2)
    var = np.clip(m2 - v * v, 1e-300, None)
    shape = v * v / var
    scale = var / np.maximum(v, 1e-300) * psi * t[None, :] / N
    mean = psi * (v @ (wa * t))
    sd = psi * np.sqrt(np.clip(m2 @ (wa * t * t) - (v @ (wa * t)) ** 2, 1e-300, None) / N)
    out = np.empty(v.shape[0])
    for b in range(v.shape[0]):
        z0 = (1.0 - mean[b]) / sd[b]
        if abs(z0) > 7.0:
            out[b] = special.ndtr(-z0)
            continue
        w = np.linspace(0.0, 1.0, 2 * int(600 + 200 * abs(z0)) + 1)
        tt = 40.0 * w * w / sd[b]                    # t = 40 w^2 / sd: smooth in w, so Simpson's rule converges fast
        with np.errstate(divide="ignore", invalid="ignore"):
            log_phi = np.log((wa[None, :] * (1.0 - 1j * scale[b][None, :] * tt[:, None]) ** (-shape[b][None, :]))
                             .sum(1))
            f = np.imag(np.exp(int(round(N)) * log_phi - 1j * tt)) / tt
        f[0] = mean[b] - 1.0
        out[b] = 0.5 + integrate.simpson(f * 80.0 * w / sd[b], x=w) / math.pi
    return np.clip(out, 0.0, 1.0)


@contextlib.contextmanager
def law_arguments():
    """Within the block, ``seen`` (yielded) holds the single-sample law's arguments of the last prediction
    (:func:`rmtfl.theory._two_step.sample_order.tail_law`: ``tau``, ``x_edge``, ``parts``, ``psi``, ``wa``) and the
    widened bulk whose row kernel ``tau`` is (``bulk``)."""
    from rmtfl.theory._two_step import sample_order

    seen, kept = {}, sample_order.tail_law

    def spy(tau, x_edge, x_guess, parts, *, N, psi, wa, shift=None):
        cells = [c.cell_contents for c in (tau.__closure__ or ())]
        seen.update(tau=tau, x_edge=x_edge, parts=parts, psi=psi, wa=np.asarray(wa, dtype=float),
                    bulk=next((c for c in cells if hasattr(c, "tau_rows")), None))
        return kept(tau, x_edge, x_guess, parts, N=N, psi=psi, wa=wa, shift=shift)
    sample_order.tail_law = spy
    try:
        yield seen
    finally:
        sample_order.tail_law = kept


def predicted_law(tgt: str, N: int, alphas, lift: str | None = None):
    """The single-sample law's arguments (:func:`law_arguments`) of the quadratic sigma's prediction at one point
    (``lift="whole"``: with attempt 4's whole-law eigenvalues of ``M``)."""
    from rmtfl.theory import make_target, two_step

    from .diag_m_spike import whole_law_eigenvalues

    lifted = whole_law_eigenvalues(make_target(tgt), float(N)) if lift == "whole" else contextlib.nullcontext()
    with lifted, law_arguments() as seen:
        two_step(QUADRATIC, tgt, psi=1.0, phi=2.0, eta1=N ** alphas[0], eta2=N ** alphas[1], N=N)
    if "tau" not in seen:
        raise SystemExit("the prediction has no single samples at this point")
    return seen


def group_at(seen, s: float):
    """``(count coupled, count alone, couplings' rms, law's strengths of ranks 1-8, count alone without spread)`` of
    attempt 13's group at ``s`` (``None`` where the row kernel is not defined)."""
    from .diag_sample_coupling import beyond_cut
    from .diag_sample_group import edge_strengths, group_count, group_parts

    tau, parts, psi, wa = seen["tau"], seen["parts"], seen["psi"], seen["wa"]
    strengths = edge_strengths(tau, seen["x_edge"], parts, psi=psi, wa=wa)
    t = tau(s * s)
    if strengths is None or t is None:
        return None
    masks = [beyond_cut(p[0], np.argsort(-st)) for p, st in zip(parts, strengths)]
    q, sd, w, e2, _ = group_parts(parts, t, N=seen["N"], psi=psi, wa=wa, masks=masks)
    W = np.outer(w, w)
    np.fill_diagonal(W, 0.0)
    vs = np.linspace(0.1, 3.0, 3000)
    above = (w[None, :] * special.ndtr((q[None, :] - vs[:, None]) / np.maximum(sd, 1e-12)[None, :])).sum(1)
    ranks = np.array([np.interp(-(k - 0.5), -above, vs) for k in range(1, 9)])
    return (float(group_count(q, sd, w, e2).sum()), float(group_count(q, sd, w, 0 * e2).sum()),
            math.sqrt(float((W * e2).sum() / W.sum())), ranks, float(w @ (q > 1)))


def draw_columns(tgt: str, N: int, alphas, seed: int, n: int | None = None):
    """One draw's ``(H, its columns along M's K most extreme eigenvectors C, their eigenvalues, H_b, a, W_2)``."""
    from .diag_sample_collective import simulated_draw

    n = n or 2 * N
    _, W0, a, X, y, W2, _, _ = simulated_draw(QUADRATIC, N ** alphas[0], N ** alphas[1], N=N, n=n, seed=seed,
                                             target=tgt)
    M = (X.T * y) @ X / n
    e1, e2 = N ** alphas[0] * a, N ** alphas[1] * a
    WM = W0 @ M
    H = W0 + (e1 + e2)[:, None] * WM + (e1 * e2)[:, None] * (WM @ M)
    lam, U = np.linalg.eigh(M)
    order = np.argsort(-np.abs(lam))
    Hr = H @ U[:, order]
    return H, Hr[:, :K], lam[order][:K], Hr[:, K:], a, W2


def draw_measures(H, C, lam, Hb, a, W2, s_values, *, alphas, N: int, kernel, rows):
    """Per ``s``: ``(#{eig T > 1}, #{T_ii > 1}, couplings' rms, N_H - N_{H_b}, diag of T by rank, the columns
    through ``kernel(a, x)`` by rank, the mean strengths at ``lam`` by rank, the same over the row quadrature
    ``rows = (a, weights)``, ``W_2``'s values above ``s`` less the two of ``P``, ``N_H``)`` of one draw (module
    docstring)."""
    ev, Q = np.linalg.eigh(Hb @ Hb.T)
    CQ = Q.T @ C
    sv, sw = np.linalg.svd(H, compute_uv=False), np.linalg.svd(W2, compute_uv=False)
    e1, e2 = N ** alphas[0] * a, N ** alphas[1] * a
    out = []
    for s in s_values:
        x = s * s
        T = CQ.T @ (CQ / (x - ev)[:, None])
        off = T - np.diag(np.diag(T))
        t = kernel(a, x)
        through = np.full(K, np.nan) if t is None else (C**2 * t[:, None]).sum(0)
        mean, quad = np.full(K, np.nan), np.full(K, np.nan)
        if t is not None:
            mean = ((1 + np.outer(e1, lam)) ** 2 * (1 + np.outer(e2, lam)) ** 2 * t[:, None]).sum(0) / N
            ra, rw = rows
            f = (1 + N ** alphas[0] * np.outer(ra, lam)) ** 2 * (1 + N ** alphas[1] * np.outer(ra, lam)) ** 2
            quad = (rw * kernel(ra, x)) @ f
        out.append((int((np.linalg.eigvalsh(T) > 1).sum()), int((np.diag(T) > 1).sum()),
                    math.sqrt(float((off**2).sum()) / (K * (K - 1))), int((sv > s).sum() - (ev > x).sum()),
                    -np.sort(-np.diag(T)), -np.sort(-through), -np.sort(-mean), -np.sort(-quad),
                    int((sw > s).sum()) - 2, int((sv > s).sum())))
    return out


def part_columns(tgt: str, N: int, alphas, draws: int, seed: int) -> None:
    seen = predicted_law(tgt, N, alphas)
    seen["N"] = N
    bulk, fold = seen["bulk"], math.sqrt(seen["x_edge"])
    s_values = [fold * r for r in RATIOS]
    draws_ = [draw_columns(tgt, N, alphas, seed + i) for i in range(draws)]
    lams = [d[2] for d in draws_]
    rows = [draw_measures(*d, s_values, alphas=alphas, N=N,
                          kernel=lambda a, x: bulk.tau_rows(a, x)[0], rows=(bulk.a, seen["wa"]))
            for d in draws_]
    print(f"quadratic sigma, target {tgt}, ({alphas[0]}, {alphas[1]}), N = d = {N}, n = {2 * N}, {draws} draws "
          f"(seeds {seed}-{seed + draws - 1}); predicted fold {fold:.4f}")
    lam = np.mean([np.sort(np.abs(r))[::-1] for r in lams], 0)
    print("  M's most extreme eigenvalues (mean over the draws): " + " ".join(f"{v:.3f}" for v in lam[:8]))
    print("  s/fold  draws: N_H - N_Hb = #T>1  #Tii>1  rms     N_H  N_W2 - 2 | group: coupled alone rms")
    groups = [group_at(seen, s) for s in s_values]
    for j, (r, g) in enumerate(zip(RATIOS, groups)):
        d = np.array([[row[j][k] for k in (0, 1, 2, 9, 8)] for row in rows]).mean(0)
        tail = "  (no row kernel)" if g is None else f"{g[0]:6.2f} {g[1]:5.2f} {g[2]:.4f}"
        print(f"  {r:5.2f}  {d[0]:23.2f} {d[1]:7.2f} {d[2]:.4f} {d[3]:6.2f} {d[4]:8.2f} | {tail}")
    for j, (r, g) in enumerate(zip(RATIOS, groups)):
        print(f"  s/fold {r}: strengths of ranks 1-8")
        for name, k in (("diagonal of T", 4), ("the columns through tau", 5), ("mean at the draw's lambda", 6),
                        ("  over the row quadrature", 7)):
            print(f"    {name:28s}" + " ".join(f"{v:6.3f}" for v in np.mean([row[j][k][:8] for row in rows], 0)))
        if g is not None:
            print(f"    {'the law (k - 1/2)':28s}" + " ".join(f"{v:6.3f}" for v in g[3]))


def part_fold(tgt: str, N: int, alphas, draws: int, seed: int, mode: str) -> None:
    from rmtfl.theory import two_step
    from rmtfl.theory._two_step.poisson_count import samples_above

    from .diag_count_law import captured
    from .diag_poisson_count import predicted_lambda, variant

    with variant(mode, QUADRATIC, tgt, N) or contextlib.nullcontext(), captured() as seen:
        two_step(QUADRATIC, tgt, psi=1.0, phi=2.0, eta1=N ** alphas[0], eta2=N ** alphas[1], N=N)
    got = predicted_lambda(seen, airy=True)
    if got is None:
        raise SystemExit("the prediction has no single samples at this point")
    law, fold = seen["ranked"][0], seen["result"].edge
    ratios = np.array([0.85, 0.9, 0.95, 0.98, 1.0, 1.02, 1.05, 1.1])
    s_values = fold * ratios
    mu = samples_above(law, s_values)
    lam = np.interp(s_values, got[2], got[3])
    counts = []
    for i in range(draws):
        H, _, _, Hb, _, W2 = draw_columns(tgt, N, alphas, seed + i)
        svs = [np.linalg.svd(A, compute_uv=False) for A in (H, Hb, W2)]
        counts.append([[int((sv > s).sum()) for s in s_values] for sv in svs])
    c = np.mean(counts, 0)
    print(f"quadratic sigma, target {tgt}, ({alphas[0]}, {alphas[1]}), N = d = {N}, n = {2 * N}, {draws} draws (seeds "
          f"{seed}-{seed + draws - 1}); mode {mode}, fold {fold:.4f}: mean number of values above s")
    print("  s/fold      s | draws: H     H_b  W_2 - 2 | prediction: mu  bulk  Lambda")
    for j, r in enumerate(ratios):
        print(f"  {r:5.2f} {s_values[j]:7.3f} | {c[0, j]:9.2f} {c[1, j]:6.2f} {c[2, j] - 2:8.2f} | {mu[j]:14.2f} "
              f"{lam[j] - mu[j]:5.2f} {lam[j]:7.2f}")


def part_steps(tgt: str, N: int, alphas, draws: int, seed: int, lift: str | None, zmax: float = 4.5) -> None:
    seen = predicted_law(tgt, N, alphas, lift)
    seen["N"] = N
    bulk, fold, wa = seen["bulk"], math.sqrt(seen["x_edge"]), seen["wa"]
    ratios = (1.0001, 1.01, 1.02, 1.05, 1.1)
    z = np.linspace(-zmax, zmax, 601)
    z_rows, wz = z / math.sqrt(N), np.exp(-0.5 * z * z) / np.exp(-0.5 * z * z).sum()
    counts = []
    for i in range(draws):
        _, C, lam, Hb, a, _ = draw_columns(tgt, N, alphas, seed + i)
        ev, Q = np.linalg.eigh(Hb @ Hb.T)
        CQ = Q.T @ C
        row = []
        for r in ratios:
            x = (fold * r) ** 2
            t, tq = bulk.tau_rows(a, x)[0], bulk.tau_rows(bulk.a, x)[0]
            profile = [(1 + N ** alphas[0] * np.outer(rows, lam)) ** 2 * (1 + N ** alphas[1] * np.outer(rows, lam)) ** 2
                       for rows in (bulk.a, a)]
            Tt = C.T @ (C * t[:, None])
            T = CQ.T @ (CQ / (x - ev)[:, None])
            tz = bulk.tau_rows(z_rows, x)[0]                        # Gaussian rows (the law of a), not its quantiles
            v = ((1 + N ** alphas[0] * np.outer(z_rows, lam)) ** 2
                 * (1 + N ** alphas[1] * np.outer(z_rows, lam)) ** 2).T
            random_rows = float(strength_sf(v, 3 * v * v, tz, wz, psi=seen["psi"], N=N).sum())
            row.append([((wa * tq) @ profile[0] > 1).sum(), (t @ profile[1] / N > 1).sum(), (np.diag(Tt) > 1).sum(),
                        (np.linalg.eigvalsh(Tt) > 1).sum(), (np.linalg.eigvalsh(T) > 1).sum(), random_rows])
        counts.append(row)
    c, se = np.mean(counts, 0), np.std(counts, 0) / math.sqrt(draws)
    print(f"quadratic sigma, target {tgt}, ({alphas[0]}, {alphas[1]}), N = d = {N}, n = {2 * N}, {draws} draws (seeds "
          f"{seed}-{seed + draws - 1}); the law {'with whole-law eigenvalues' if lift else 'as it is'}, fold "
          f"{fold:.4f}: the group's columns standing out")
    print("  s/fold | the law: no spread  spread  coupled | draws' lambda: prediction's rows  rows random  own rows | "
          "T~: diagonal  whole | T")
    for j, r in enumerate(ratios):
        g = group_at(seen, fold * r)
        print(f"  {r:6.4f} | {g[4]:18.2f} {g[1]:7.2f} {g[0]:8.2f} | {c[j, 0]:33.2f} {c[j, 5]:12.2f} {c[j, 1]:9.2f} | "
              f"{c[j, 2]:12.2f} {c[j, 3]:6.2f} | {c[j, 4]:4.2f}")
    print("  standard errors over the draws, own rows / T: " + ", ".join(f"{a:.2f} / {b:.2f}"
                                                                      for a, b in zip(se[:, 1], se[:, 4])))


def pole_rows(bulk, x: float, N: int, zmax: float = 8.0) -> float:
    """The expected number of rows of a batch beyond the row kernel's pole at ``x`` (module docstring): where
    ``tau(a, x)`` first stops being positive and finite on a fine grid of ``|a|``."""
    from scipy import special

    z = np.linspace(0.0, zmax, 16001)
    t = bulk.tau_rows(z / math.sqrt(N), x)[0]
    bad = np.flatnonzero(~(t > 0) | ~np.isfinite(t))
    return 0.0 if not bad.size else float(2 * N * special.ndtr(-z[bad[0]]))


def part_pole(tgt: str, N: int, alphas, draws: int, seed: int) -> None:
    seen = predicted_law(tgt, N, alphas)
    bulk, fold = seen["bulk"], math.sqrt(seen["x_edge"])
    ratios = (1.0001, 1.02, 1.05, 1.1)
    counts = []
    for i in range(draws):
        sv = np.linalg.svd(draw_columns(tgt, N, alphas, seed + i)[3], compute_uv=False)
        counts.append([int((sv > fold * r).sum()) for r in ratios])
    c = np.mean(counts, 0)
    print(f"quadratic sigma, target {tgt}, ({alphas[0]}, {alphas[1]}), N = d = {N}, n = {2 * N}, {draws} draws (seeds "
          f"{seed}-{seed + draws - 1}), fold {fold:.4f}: rows beyond the row kernel's pole, against H_b's values "
          "above s")
    for j, r in enumerate(ratios):
        print(f"  s/fold {r:6.4f}: rows {pole_rows(bulk, (fold * r) ** 2, N):.3f}, draws {c[j]:.2f}")


def part_rows(tgt: str, N: int, alphas, lams, ratio: float, zmax: float = 4.5) -> None:
    seen = predicted_law(tgt, N, alphas)
    bulk, psi = seen["bulk"], seen["psi"]
    x = (math.sqrt(seen["x_edge"]) * ratio) ** 2
    z = np.linspace(-zmax, zmax, 901)                       # Gaussian rows out to zmax standard deviations
    wz = np.exp(-0.5 * z * z)
    laws = {"the prediction's rows (N quantiles)": (bulk.a, seen["wa"]),
            f"Gaussian rows to {zmax} sd": (z / math.sqrt(N), wz / wz.sum())}
    print(f"quadratic sigma, target {tgt}, ({alphas[0]}, {alphas[1]}), N = {N}, s = {ratio} x fold: one column's "
          "mean strength and P(S > 1), rows random (exact) against the law's Gaussian")
    for name, (a, wa) in laws.items():
        t = bulk.tau_rows(a, x)[0]
        print(f"  {name}" + ("" if np.all(t > 0) else " (the row kernel changes sign on these rows)"))
        for lam in lams:
            v = (1 + N ** alphas[0] * a * lam) ** 2 * (1 + N ** alphas[1] * a * lam) ** 2
            mean = psi * float(v @ (wa * t))
            sd = psi * math.sqrt(float(3 * v**2 @ (wa * t * t) - (v @ (wa * t)) ** 2) / N)
            exact = strength_sf(v, 3 * v**2, t, wa, psi=psi, N=N)[0]
            print(f"    lambda {lam:5.2f}: mean {mean:.3f}, sd {sd:.3f}; rows random {exact:.4f}, Gaussian "
                  f"{special.ndtr((mean - 1) / sd):.4f}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", choices=("columns", "rows", "fold", "steps", "pole"), default="columns")
    ap.add_argument("--lift", choices=("whole",), default=None, help="with --part steps: the law with attempt 4's "
                    "whole-law eigenvalues of M")
    ap.add_argument("--mode", default="kept", help="with --part fold: the prediction's variant "
                    "(benchmarks.diag_poisson_count.variant)")
    ap.add_argument("--target", default=QUADRATIC)
    ap.add_argument("--alphas", default="0.2,0.2", help="alpha1,alpha2")
    ap.add_argument("--N", type=int, default=1000)
    ap.add_argument("--draws", type=int, default=8)
    ap.add_argument("--seed", type=int, default=60000)
    ap.add_argument("--lams", default="3.4,3.7,4.0,4.5", help="with --part rows: eigenvalues of M")
    ap.add_argument("--ratio", type=float, default=1.06, help="with --part rows: s over the predicted fold")
    a = ap.parse_args(argv)
    try:
        alphas = tuple(float(v) for v in a.alphas.split(","))
        lams = [float(v) for v in a.lams.split(",")]
    except ValueError:
        ap.error("--alphas and --lams take numbers separated by commas")
    if len(alphas) != 2 or not all(0 <= v < 0.5 for v in alphas):
        ap.error(f"--alphas must be two exponents in [0, 0.5), got {a.alphas!r}")
    if a.N < 50 or a.draws < 1 or a.ratio <= 1.0:
        ap.error("--N must be at least 50, --draws at least 1 and --ratio above 1")
    if a.part == "columns":
        part_columns(a.target, a.N, alphas, a.draws, a.seed)
    elif a.part == "fold":
        from .diag_poisson_count import variant
        try:
            variant(a.mode, QUADRATIC, a.target, a.N)
        except ValueError as e:
            ap.error(f"--mode: {e}")
        part_fold(a.target, a.N, alphas, a.draws, a.seed, a.mode)
    elif a.part == "pole":
        part_pole(a.target, a.N, alphas, a.draws, a.seed)
    elif a.part == "steps":
        part_steps(a.target, a.N, alphas, a.draws, a.seed, a.lift)
    else:
        part_rows(a.target, a.N, alphas, lams, a.ratio)
    return 0


if __name__ == "__main__":
    sys.exit(main())
