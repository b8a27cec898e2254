"""The outliers push one another at finite N (docs/theory/two_step_attempts.md §36; measured, not kept).

The count's law (docs/theory/two_step.md §8.3) places each single sample's outlier against the bulk alone: the
samples are independent, and a sample's outlier adds one value above every ``s`` below it.  At finite ``N`` an
outlier also moves the other values.  Take ``W = Z + sum_k theta_k u_k v_k^T``, ``Z`` of ``N x d`` independent
``N(0, 1/d)`` entries, ``u_k``, ``v_k`` independent unit vectors.  The singular values of ``W`` are the
eigenvalues of the symmetrised matrix ``[[0, W], [W^T, 0]]`` of size ``M = N + d``, where each spike is a pair
``+-theta_k`` along ``(u_k, +-v_k) / sqrt 2``.  Second-order perturbation of spike ``i``'s root in the presence of
spike ``k``, with the off-diagonal resolvent entries' variance ``-G'(z) / M`` (``G`` the bulk's Stieltjes transform
at the symmetrised level), moves ``i``'s root by ``-1 / (M (G(z_i) - G(z_k)))``.  Over the pair ``+-theta_k``, a
value at ``s`` moves by

    p(s, z) = -(2 / M) G(s) / (G(s)^2 - G(z)^2),

``z`` the outlier's place; for ``N = d`` ``G`` is the Stieltjes transform of a semicircle of radius the edge ``e``,
``G(s) = 2 (s - sqrt(s^2 - e^2)) / e^2``, taken at the edge for a value inside the bulk.  A far outlier moves
every value near the edge down by ``e / M``; one closer moves the values below it further, and those above it up.
Near ``z = s`` the perturbation fails (two outliers within a Tracy–Widom scale); :func:`push` reads ``G``'s
difference a scale off the axis, ``D / (D^2 + eps^2)`` with ``eps`` the difference between the edge and ``cut``
scales above it, or (``hard``) drops the outliers less than ``cut`` scales above ``max(s, e)``.

With ``--structured`` the push is read through the widened bulk's own rows instead (:func:`structured_push`).  By
first-order compression (the values interlace with the matrix less a far spike's directions), a far column with
row variances ``v`` moves the values at the edge by ``(L / (N G) + 1 / (d <tt>)) / (2 s_e)``.  Here
``G = E[v tau(e)] / E[v]`` is its strength per unit of variance, ``L = E[v c] / (E[v] E[c])`` its overlap with the
edge's eigenvectors, whose row profile ``c`` is taken as ``tau(e) - tau(e (1 + 1e-4))``, and ``<tt>`` the column
kernel; a spike of ``P`` has ``v = a^2``.  Every supercritical column the bulk leaves out
(:func:`benchmarks.diag_column_shift.left_out_columns`) pushes by their mean: below the fold all of them, above it
as many as the law puts above ``s``.

* ``--part control``: that model, ``N = d``, a few outliers within 15 scales of the edge, with and without strong
  spikes (the same ``Z``); the mean move of each of the top values below the strong outliers beside ``p``
  (:func:`control_push`).
* ``--part remove``: two-step draws (reused batch, ``N = d``, ``n = 2N``), the batch's most extreme sample (by
  ``|y|``) taken out of both steps (its target set to zero); how far the values below its outlier rise, by their
  place in the point's Tracy–Widom scales from the prediction's fold, beside the rise ``p`` gives for one spike at
  the sample's outlier (the fold the edge), and each value's overlap with the sample's first-step column
  ``a sigma'(W_0 x)`` (less its mean) and with ``x`` (``N |<l, u>|^2``, ``d |<r, x>|^2``: one for a direction
  unrelated to the value) in the matrix without it (:func:`removal_rise`).
* ``--part parts``: the same sample's change of ``W_2`` taken apart: its top singular component, the rest, and a far
  spike along its first-step column and its ``x`` in place of it (:func:`removal_parts`).
* ``--part lambda``: at one point of a page cache, the draws' mean number of values above ``s`` beside ``Lambda``
  plus the spikes of ``P``, as it is and pushed: ``Lambda(s - Delta(s))``, ``Delta(s)`` the sum of ``p(s, z)`` over
  the samples' location measure above the fold and the spikes of ``P`` (:func:`pushed_lambda`).
* ``--part grid``: the page's criteria as it is and pushed at every reused point of a cache.
* ``--part profile``: ``Lambda``'s signed error against the draws from 20 scales below the fold to 12 above, as it
  is and pushed through the bulk's rows, averaged over each activation and target (:func:`lambda_errors`).

    python -m benchmarks.diag_spike_push --part control --N 1000 --draws 40
    python -m benchmarks.diag_spike_push --part remove --N 1000 --act gelu --alphas 0.4,0.2 --draws 12
    python -m benchmarks.diag_spike_push --part parts --N 1000 --act gelu --alphas 0.4,0.2 --draws 12
    python -m benchmarks.diag_spike_push --part lambda --cache CACHE/n1000.json --N 1000 --alphas 0.4,0.2
    python -m benchmarks.diag_spike_push --part grid --cache CACHE/n1000.json --N 1000 [--cut 3] [--hard]
    python -m benchmarks.diag_spike_push --part grid --cache CACHE/n1000.json --N 1000 --structured
    python -m benchmarks.diag_spike_push --part profile --cache CACHE/n1000.json --N 1000
"""
from __future__ import annotations

import argparse
import math
import sys

import numpy as np

from rmtfl.theory import largest_sv_scaling
from rmtfl.theory._two_step.counting import count_window
from rmtfl.theory._two_step.poisson_count import edge_fit, poisson_count

from .diag_column_shift import point_left_out_columns
from .diag_count_law import (add_point_args, cache_points, lambda_and_samples, lambda_at_point, point_args,
                             prediction_in, replaced_count)
from .diag_poisson_count import drawn_total
from .diag_window_count import Y_COMPARE, spawned_draw

#: Places, in the point's Tracy–Widom scales from the fold, that :func:`removal_rise` bins the values by.
BINS = (-80.0, -40.0, -20.0, -10.0, -5.0, 0.0, 5.0, 10.0, 20.0, 40.0)

#: Where ``--part lambda`` compares, in scales from the fold.
Y_SHOW = (-15.0, -6.0, -2.0, 0.0, 2.0, 6.0, 12.0)

#: Where ``--part profile`` compares ``Lambda`` with the draws, in scales from the fold.
Y_PROFILE = (-20.0, -15.0, -10.0, -6.0, -3.0, 0.0, 2.0, 4.0, 8.0, 12.0)

#: Values below the removed sample's outlier that :func:`removal_rise` follows.
MATCHED = 150

#: Points of the location measure's grid above the fold in :func:`pushed_lambda`.
FINE = 6000


def semicircle_g(x, edge: float) -> np.ndarray:
    """The Stieltjes transform ``2 (x - sqrt(x^2 - e^2)) / e^2`` of a semicircle of radius ``e = edge`` at ``x``,
    taken at the edge (``2 / e``) for ``x`` inside it."""
    x = np.maximum(np.asarray(x, float), edge)
    return 2.0 * (x - np.sqrt(x * x - edge * edge)) / (edge * edge)


def push(s, z, mass, *, edge: float, M: float, scale: float, cut: float = 1.0, hard: bool = False) -> np.ndarray:
    """``Delta(s) = sum_z mass(z) p(s, z)`` at each ``s`` (module docstring): the move of a value at ``s`` by
    outliers at ``z`` (``mass`` of them at each), ``M = N + d``; the difference of ``G`` read ``cut`` Tracy–Widom
    scales (``scale``) off the axis, or with ``hard`` the outliers less than ``cut`` scales above ``max(s, edge)``
    left out."""
    s, z, mass = (np.atleast_1d(np.asarray(v, float)) for v in (s, z, mass))
    gs, gz = semicircle_g(s, edge)[:, None], semicircle_g(z, edge)[None, :]
    D = gs**2 - gz**2
    if hard:
        far = z[None, :] - np.maximum(s, edge)[:, None] > cut * scale
        p = np.where(far, -(2.0 / M) * gs / np.where(far, D, 1.0), 0.0)
    else:
        eps = float(semicircle_g(edge, edge) ** 2 - semicircle_g(edge + cut * scale, edge) ** 2)
        p = -(2.0 / M) * gs * D / (D * D + eps * eps)
    return p @ mass


def mean_se(v) -> tuple[float, float, int]:
    """``(mean, standard error, size)`` of ``v`` (``nan`` where there are too few values)."""
    v = np.asarray(v, float)
    mean = float(v.mean()) if v.size else math.nan
    return mean, float(v.std(ddof=1) / math.sqrt(v.size)) if v.size > 1 else math.nan, int(v.size)


def control_push(strong, weak=(1.10, 1.15, 1.20, 1.30), *, N: int, draws: int, seed: int = 100, ranks: int = 8):
    """``(place, move, se, predicted)``, each of length ``ranks``, in Tracy–Widom scales of ``Z``'s top value: the
    mean place (from the edge 2) of the ``ranks`` top values of ``Z + sum_weak theta u v^T`` (``N = d``), the mean
    move of each when the ``strong`` spikes are added as well (the same draw; the strong outliers set aside) and its
    standard error, and :func:`push` of the strong outliers ``theta + 1 / theta`` at each mean place (with
    ``M = 2N``, ``cut`` 0: no outlier lies near these values)."""
    strong, weak = np.asarray(strong, float), np.asarray(weak, float)
    if np.any(strong <= 1.0) or np.any(weak <= 0.0):
        raise ValueError("strong spikes must exceed the threshold 1 and weak ones be positive")
    scale = largest_sv_scaling(N, N).scale
    theta = np.concatenate([weak, strong])
    moves, places = np.zeros((draws, ranks)), np.zeros((draws, ranks))
    for k in range(draws):
        rng = np.random.default_rng(seed + k)
        Z = rng.standard_normal((N, N)) / math.sqrt(N)
        U = rng.standard_normal((theta.size, N))
        V = rng.standard_normal((theta.size, N))
        U /= np.linalg.norm(U, axis=1, keepdims=True)
        V /= np.linalg.norm(V, axis=1, keepdims=True)
        w = weak.size
        s0 = np.linalg.svd(Z + (U[:w].T * weak) @ V[:w], compute_uv=False)
        s1 = np.linalg.svd(Z + (U.T * theta) @ V, compute_uv=False)
        moves[k] = (s1[strong.size:strong.size + ranks] - s0[:ranks]) / scale
        places[k] = (s0[:ranks] - 2.0) / scale
    place = places.mean(0)
    z = strong + 1.0 / strong
    predicted = push(2.0 + place * scale, z, np.ones(z.size), edge=2.0, M=2.0 * N, scale=scale, cut=0.0) / scale
    return place, moves.mean(0), moves.std(0, ddof=1) / math.sqrt(draws), predicted


def with_and_without(sigma, target, etas, *, N: int, seed: int):
    """``(W, B, x, u)``: one reused draw's two steps (:func:`benchmarks.diag_window_count.spawned_draw`) with and
    without its most extreme sample by ``|y|`` (its target set to zero), that sample's ``x`` and its first-step column
    ``a (sigma'(W_0 x) - mean)``, each of unit length."""
    from rmtfl.numerics import gd_steps
    from rmtfl.numerics._two_step.model import sigma_prime

    W0, a, X, y = spawned_draw(N, target, seed)
    i = int(np.argmax(np.abs(y)))
    y_out = y.copy()
    y_out[i] = 0.0
    W = gd_steps(sigma, W0.copy(), a, (X, y), etas=etas)
    B = gd_steps(sigma, W0.copy(), a, (X, y_out), etas=etas)
    sp = sigma_prime(sigma, W0 @ X[i])
    u = a * (sp - sp.mean())
    return W, B, X[i] / np.linalg.norm(X[i]), u / np.linalg.norm(u)


def removal_rise(act: str, tgt: str, a1: float, a2: float, *, N: int, fold: float, scale: float, draws: int,
                 seed: int = 777, bins=BINS) -> dict:
    """Per bin of :data:`BINS` (values' places in ``scale`` units from ``fold``): ``"rise"`` (mean, standard error,
    number of values) of the :data:`MATCHED` values below the most extreme sample's outlier when it leaves both steps
    (matched one rank down; its outlier the value whose right singular vector is closest to its ``x``), and
    ``"model"`` the mean rise :func:`push` gives for one spike at the outlier's place in that draw (the fold the
    edge, ``M = 2N``), ``"L"``, ``"R"`` the mean ``N |<l, u>|^2`` and ``d |<r, x>|^2`` in the matrix without it
    (module docstring);
    ``"outlier"``: its outlier's place in each draw.  Reused batch, ``N = d``, ``n = 2N``, seeds ``seed + k``."""
    from rmtfl.theory import get_activation, make_target

    sigma, target, etas = get_activation(act), make_target(tgt), (N ** a1, N ** a2)
    edges = np.asarray(bins, float)
    rise, model, L, R = ([[] for _ in edges[:-1]] for _ in range(4))
    outlier = []
    for k in range(draws):
        W, B, x, u = with_and_without(sigma, target, etas, N=N, seed=seed + k)
        _, s, Vt = np.linalg.svd(W)
        j = int(np.argmax(np.abs(Vt[:40] @ x)))
        U1, s1, Vt1 = np.linalg.svd(B)
        outlier.append((s[j] - fold) / scale)
        span = min(MATCHED, s.size - j - 1)
        up = (s1[j:j + span] - s[j + 1:j + span + 1]) / scale
        pos_up = (s[j + 1:j + span + 1] - fold) / scale
        # the model's rise: less the push of one spike at the outlier's place on each value where it is
        pushed = -push(s[j + 1:j + span + 1], [s[j]], [1.0], edge=fold, M=2.0 * N, scale=scale, cut=0.0) / scale
        lo, ro = N * (U1.T @ u) ** 2, N * (Vt1 @ x) ** 2
        pos = (s1 - fold) / scale
        for b in range(edges.size - 1):
            inside = (pos_up >= edges[b]) & (pos_up < edges[b + 1])
            rise[b].extend(up[inside].tolist())
            model[b].extend(pushed[inside].tolist())
            m = (pos >= edges[b]) & (pos < edges[b + 1])
            L[b].extend(lo[m].tolist())
            R[b].extend(ro[m].tolist())

    return dict(rise=[mean_se(v) for v in rise], model=[mean_se(v)[0] for v in model],
                L=[mean_se(v)[0] for v in L], R=[mean_se(v)[0] for v in R], outlier=np.array(outlier))


def removal_parts(act: str, tgt: str, a1: float, a2: float, *, N: int, fold: float, scale: float, draws: int,
                  seed: int = 777, bins=BINS) -> dict:
    """Per part of the change ``dW = W - B`` the most extreme sample makes (``B`` the draw's two steps without it,
    ``W`` with it), ``(mean, se, size)`` of how far ``B``'s values sink when that part is added, per bin of ``bins``
    (places in ``scale`` units from ``fold``; the values below the sample's outlier in ``W``, matched one rank down):
    ``"whole"`` (``W`` itself), ``"rank one"`` (``dW``'s top singular component), ``"rest"`` (``dW`` less it, no
    outlier), and ``"column, far"``: a spike of size three times the fold along the sample's first-step column
    ``a (sigma'(W_0 x) - mean)`` and its ``x``, whose outlier lies far above.  Seeds ``seed + k``."""
    from rmtfl.theory import get_activation, make_target

    sigma, target, etas = get_activation(act), make_target(tgt), (N ** a1, N ** a2)
    edges = np.asarray(bins, float)
    names = ("whole", "rank one", "rest", "column, far")
    got = {name: [[] for _ in edges[:-1]] for name in names}
    for k in range(draws):
        W, B, x, u = with_and_without(sigma, target, etas, N=N, seed=seed + k)
        j = int(np.argmax(np.abs(np.linalg.svd(W)[2][:40] @ x)))   # the sample's outlier in W
        dW = W - B
        Ud, sd, Vd = np.linalg.svd(dW)
        top = sd[0] * np.outer(Ud[:, 0], Vd[0])
        far = 3.0 * fold * np.outer(u, x)
        sB = np.linalg.svd(B, compute_uv=False)
        span = sB.size - 1
        pos = np.where(np.arange(span) >= j, (sB[:span] - fold) / scale, np.inf)   # only those below its outlier
        for name, part, out in zip(names, (dW, top, dW - top, far), (1, 1, 0, 1)):
            sink = (sB[:span] - np.linalg.svd(B + part, compute_uv=False)[out:span + out]) / scale
            for b in range(edges.size - 1):
                got[name][b].extend(sink[(pos >= edges[b]) & (pos < edges[b + 1])].tolist())
    return {name: [mean_se(v) for v in per] for name, per in got.items()}


def pushed_lambda(laws, bulk_top, fold: float, *, N, psi, cut: float = 1.0, hard: bool = False):
    """``(grid, Lambda pushed, Lambda as it is, Delta, scale)``: the count's ``Lambda`` (blended through the
    ``fold``, docs/theory/two_step.md §8.3) read at ``s - Delta(s)``, ``Delta`` :func:`push` of the samples' location
    measure above the fold and the spikes of ``P`` (``laws.fixed``); ``M = N + N / psi``, the scale fitted to
    ``bulk_top`` (only ``psi = 1`` has the semicircle's ``G``)."""
    grid, lam, mu = lambda_and_samples(laws, bulk_top, fold)
    _, scale = edge_fit(bulk_top)
    zz = np.linspace(fold, grid[-1], FINE)
    mz = np.interp(zz, grid, mu)
    z = np.concatenate([0.5 * (zz[:-1] + zz[1:]), np.asarray(laws.fixed, float)])
    mass = np.concatenate([np.maximum(mz[:-1] - mz[1:], 0.0), np.ones(len(laws.fixed))])
    delta = push(grid, z, mass, edge=fold, M=N + N / psi, scale=scale, cut=cut, hard=hard)
    return grid, np.interp(grid - delta, grid, lam, right=0.0), lam, delta, scale


def structured_push(act, target, kw, bulk, *, N, psi) -> tuple[float, float]:
    """``(per sample, per spike of P)``: the far push at the edge of the supercritical columns the widened ``bulk``
    leaves out (their mean, weighted by their counts) and of a spike of ``P``, read through the bulk's rows (module
    docstring); ``act``, ``target`` and the prediction's keywords ``kw`` as the route resolved them."""
    V, counts = point_left_out_columns(act, target, kw, bulk, N=N, psi=psi)
    x_e = bulk.x_edge * (1 + 1e-7)
    tau, tt = bulk.tau_rows(bulk.a, x_e)
    c = tau - bulk.tau_rows(bulk.a, x_e * (1 + 1e-4))[0]
    c = c / (bulk.wa @ c)

    def far(v):
        G, L = (v @ (bulk.wa * tau)) / (v @ bulk.wa), (v @ (bulk.wa * c)) / (v @ bulk.wa)
        return (L / (N * G) + psi / (N * tt)) / (2.0 * math.sqrt(x_e))
    sup = (psi * (V @ (bulk.wa * tau)) > 1.0) & (counts > 0)
    per = sum(n * far(v) for v, n in zip(V[sup], counts[sup])) / counts[sup].sum() if sup.any() else 0.0
    return float(per), float(far(bulk.a ** 2))


def pushing(cut: float = 1.0, hard: bool = False, seen: dict | None = None, structured: bool = False):
    """Within the block the prediction's count reads the pushed ``Lambda`` (:func:`pushed_lambda`, or with
    ``structured`` the push of :func:`structured_push`); ``seen`` (a dict, yielded) receives ``"lambda"``: its
    ``(grid, pushed, as it is, Delta, scale, spikes of P)``, and with ``structured`` ``"push"``: the pushes per
    sample and per spike of ``P`` (:func:`benchmarks.diag_count_law.replaced_count`)."""
    def counted(seen, laws, bulk_top, fold, *, N, psi):
        if structured:
            act, target, kw = seen["point"]
            seen["push"] = per, spike = structured_push(act, target, kw, seen["bulk"], N=N, psi=psi)
            grid, lam, mu = lambda_and_samples(laws, bulk_top, fold)
            above = np.where(grid < fold, np.interp(fold, grid, mu), mu)
            fixed = np.asarray(laws.fixed, float)
            delta = -per * above - spike * (fixed[None, :] > grid[:, None]).sum(1)
            got = (grid, np.interp(grid - delta, grid, lam, right=0.0), lam, delta, edge_fit(bulk_top)[1])
        else:
            got = pushed_lambda(laws, bulk_top, fold, N=N, psi=psi, cut=cut, hard=hard)
        seen["lambda"] = got + (laws.fixed,)
        return poisson_count(got[0], got[1], laws.fixed, count_window(N, psi), laws=laws.laws)

    return replaced_count(counted, seen)


def part_control(N: int, draws: int) -> None:
    print(f"N = d = {N}, {draws} draws: the top values of Z + near-critical spikes (theta 1.10, 1.15, 1.20, 1.30) "
          "or of Z alone, moved by strong spikes (Tracy–Widom scales); measured (s.e.) beside p(s, z)")
    for strong, weak in (((1.62,), (1.10, 1.15, 1.20, 1.30)), ((5.0,), ()),
                         ((1.62, 1.8, 2.0, 2.5, 3.0, 4.0), (1.10, 1.15, 1.20, 1.30))):
        place, move, se, pred = control_push(strong, weak, N=N, draws=draws)
        print(f"  strong {strong}, {'near-critical spikes' if weak else 'no other spikes'}:")
        for r in range(place.size):
            print(f"    rank {r + 1}: place {place[r]:6.2f}  moved {move[r]:7.3f} ({se[r]:.3f})  p {pred[r]:7.3f}")


def fold_and_scale(N: int, act: str, tgt: str, a1: float, a2: float):
    """``(fold, scale)``: the prediction's fold at one reused point and the Tracy–Widom scale fitted to its bulk's
    top values; ``None`` (said so) where its count is not read through the process."""
    got = prediction_in(pushing(), act, tgt, a1, a2, N)
    return None if got is None else (got[0].bulk_edge, got[1]["lambda"][4])


def measured_at_fold(measure, N: int, act: str, tgt: str, a1: float, a2: float, draws: int):
    """``(fold, scale, measure(act, tgt, a1, a2, N=N, fold=fold, scale=scale, draws=draws))`` at one reused point
    (:func:`fold_and_scale`); ``None`` (said so) where the count is not read through the process."""
    got = fold_and_scale(N, act, tgt, a1, a2)
    return None if got is None else (*got, measure(act, tgt, a1, a2, N=N, fold=got[0], scale=got[1], draws=draws))


def part_remove(N: int, act: str, tgt: str, a1: float, a2: float, draws: int) -> None:
    got = measured_at_fold(removal_rise, N, act, tgt, a1, a2, draws)
    if got is None:
        return
    fold, scale, r = got
    print(f"{act}, {tgt}, ({a1}, {a2}), N = {N}, {draws} draws: the most extreme sample taken out; fold "
          f"{fold:.4f}, scale {scale:.4g}, far spike's move e / M = {fold / (2 * N) / scale:.3f} scales")
    print(f"  its outlier (scales above the fold): {np.round(r['outlier'], 1).tolist()}")
    print("  values at (scales)   rise (s.e.)  model  values   N|<l,u>|^2  d|<r,x>|^2")
    for b, (m, se, n) in enumerate(r["rise"]):
        print(f"  [{BINS[b]:5.0f}, {BINS[b + 1]:5.0f})  {m:7.3f} ({se:.3f}) {r['model'][b]:6.3f}  {n:5d}   "
              f"{r['L'][b]:8.2f}  {r['R'][b]:8.2f}")


def part_parts(N: int, act: str, tgt: str, a1: float, a2: float, draws: int) -> None:
    got = measured_at_fold(removal_parts, N, act, tgt, a1, a2, draws)
    if got is None:
        return
    fold, scale, r = got
    print(f"{act}, {tgt}, ({a1}, {a2}), N = {N}, {draws} draws: how far the values sink (scales) when each part of "
          f"the most extreme sample's change is added (fold {fold:.4f}, scale {scale:.4g})")
    print("  part          " + "".join(f"  [{BINS[b]:4.0f},{BINS[b + 1]:4.0f})" for b in range(len(BINS) - 1)))
    for name, per in r.items():
        print(f"  {name:12s}" + "".join(f" {m:6.3f}({se:.3f})" if n > 1 else "      --      " for m, se, n in per))


def lambda_errors(path: str, N: int, ys, draws: int = 25, acts=None) -> dict:
    """``{(act, tgt): (as it is, pushed)}``, each ``points x len(ys)``: ``Lambda`` plus the spikes of ``P`` less the
    draws' mean count at ``s = fold + y scale`` for each ``y`` of ``ys``, as it is and pushed through the bulk's rows
    (:func:`structured_push`), at each reused point of a page cache whose count is read through the process."""
    out = {}
    ys = np.asarray(ys, float)
    for act, tgt, a1, a2, S, _ in cache_points(path, N, "reused", draws):
        if acts and act not in acts:
            continue
        got = prediction_in(pushing(structured=True), act, tgt, a1, a2, N, say=False)
        if got is None:
            continue
        p, seen = got
        grid, new, lam, _, scale, fixed = seen["lambda"]
        s = p.bulk_edge + ys * scale
        spikes = np.array([sum(v > x for v in fixed) for x in s])
        drawn = drawn_total(S, s)
        rows = out.setdefault((act, tgt), ([], []))
        rows[0].append(np.interp(s, grid, lam) + spikes - drawn)
        rows[1].append(np.interp(s, grid, new) + spikes - drawn)
    return {k: (np.array(a), np.array(b)) for k, (a, b) in out.items()}


def part_profile(path: str, N: int, acts=None) -> None:
    print(f"N = {N}, reused: Lambda plus the spikes of P less the draws' mean count at s = fold + y scale, mean over "
          "each activation and target's points read through the process, as it is | pushed through the bulk's rows")
    print("  y:" + "".join(f"{y:7.0f}" for y in Y_PROFILE))
    for (act, tgt), (old, new) in lambda_errors(path, N, Y_PROFILE, acts=acts).items():
        print(f"  {act:20s} {tgt:38s} ({len(old)} points)")
        print("    as it is" + "".join(f"{v:7.2f}" for v in old.mean(0)))
        print("    pushed  " + "".join(f"{v:7.2f}" for v in new.mean(0)))


def part_lambda(path: str, N: int, act: str, tgt: str, a1: float, a2: float, cut: float, hard: bool,
                structured: bool = False) -> None:
    got = lambda_at_point(pushing(cut, hard, structured=structured), path, act, tgt, a1, a2, N)
    if got is None:
        return
    S, p, seen = got
    grid, new, lam, delta, scale, fixed = seen["lambda"]
    s = p.bulk_edge + np.array(Y_SHOW) * scale
    spikes = np.array([sum(v > x for v in fixed) for x in s])
    drawn = (S[:, :, None] > s[None, None, :]).sum(1)
    print(f"{act}, {tgt}, ({a1}, {a2}), N = {N}, {len(S)} draws: values above s = fold + y scale (fold "
          f"{p.bulk_edge:.4f}, scale {scale:.4g}), the draws beside Lambda plus the spikes of P as it is and pushed")
    print("      y   draws (s.e.)   as it is   pushed   Delta (scales)")
    for k, yk in enumerate(Y_SHOW):
        print(f"  {yk:5.0f} {drawn[:, k].mean():7.2f} ({drawn[:, k].std(ddof=1) / np.sqrt(len(S)):.2f}) "
              f"{np.interp(s[k], grid, lam) + spikes[k]:9.2f} {np.interp(s[k], grid, new) + spikes[k]:8.2f} "
              f"{np.interp(s[k], grid, delta) / scale:9.2f}")


def part_grid(path: str, N: int, cut: float, hard: bool, acts=None, draws: int = 25, structured: bool = False) -> None:
    from .bench_two_step_finite_n import compare_cell

    def ok(c):
        return c["values_ok"] and c["count_ok"] and c["edge_ok"]
    rows, gained, lost = {}, 0, 0
    how = "through the bulk's rows" if structured else f"{'hard cut' if hard else 'read'} {cut} scales"
    print(f"N = {N}, reused: count / fitted edge as it is | pushed ({how}), "
          "the draws' median count and mean fitted edge; root mean square of Lambda plus the spikes of P against the "
          f"draws' mean count at {Y_COMPARE[0]:.0f} to {Y_COMPARE[-1]:.0f} scales from the fold")
    for act, tgt, a1, a2, S, _ in cache_points(path, N, "reused", draws):
        if acts and act not in acts:
            continue
        cells = [{"sv": v} for v in S]
        with pushing(cut, hard, structured=structured) as seen:
            new = compare_cell(act, tgt, "reused", a1, a2, N, cells)
        old = compare_cell(act, tgt, "reused", a1, a2, N, cells)
        t = rows.setdefault((act, tgt), [np.zeros(6, int), [], []])
        t[0] += [old["count_ok"], old["edge_ok"], ok(old), new["count_ok"], new["edge_ok"], ok(new)]
        gained, lost = gained + (ok(new) and not ok(old)), lost + (ok(old) and not ok(new))
        rms = ""
        if "lambda" in seen:
            grid, lam_new, lam, _, scale, fixed = seen["lambda"]
            s = new["edge_fold"] + Y_COMPARE * scale
            spikes = np.array([sum(v > x for v in fixed) for x in s])
            drawn = drawn_total(S, s)
            gaps = [float(np.sqrt(np.mean((np.interp(s, grid, f) + spikes - drawn) ** 2))) for f in (lam, lam_new)]
            t[1].append(gaps[0])
            t[2].append(gaps[1])
            rms = f"; Lambda {gaps[0]:.2f} | {gaps[1]:.2f}"
            if "push" in seen:
                rms += f"; push per sample {seen['push'][0] / scale:.3f}, per spike of P {seen['push'][1] / scale:.3f}"
        print(f"  {act:20s} {tgt:38s} ({a1}, {a2}) draws {old['sim_count']}, {old['edge_sim']:.4f}: "
              f"{old['pred_count']}, {old['edge_pred']:.4f} | {new['pred_count']}, {new['edge_pred']:.4f}{rms}",
              flush=True)
    print("points passing the count / the edge / all three, as it is | pushed; mean root mean square of Lambda")
    for (act, tgt), (t, ra, rb) in rows.items():
        r = f"; {np.mean(ra):.2f} | {np.mean(rb):.2f}" if ra else ""
        print(f"  {act:20s} {tgt:38s} {t[0]}/{t[1]}/{t[2]} | {t[3]}/{t[4]}/{t[5]}{r}")
    tot = sum(t[0] for t in rows.values())
    print(f"  all {tot[0]}/{tot[1]}/{tot[2]} | {tot[3]}/{tot[4]}/{tot[5]}; gained {gained}, lost {lost}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", choices=("control", "remove", "parts", "lambda", "grid", "profile"), required=True)
    add_point_args(ap, point_parts="remove, parts, lambda", draw_parts="control, remove, parts", alphas="0.4,0.2",
                   cache_parts="lambda, grid, profile")
    ap.add_argument("--cut", type=float, default=1.0, help="with --part lambda, grid: the scales near an outlier")
    ap.add_argument("--hard", action="store_true", help="with --part lambda, grid: drop the outliers within --cut")
    ap.add_argument("--structured", action="store_true", help="with --part lambda, grid: the push through the rows")
    a = ap.parse_args(argv)
    a1, a2 = point_args(ap, a, cache_parts=("lambda", "grid", "profile"))
    if a.N < 10:
        ap.error(f"--N must be at least 10, got {a.N}")
    if not a.cut >= 0.0:
        ap.error(f"--cut must be at least 0, got {a.cut}")
    if a.part == "control":
        part_control(a.N, a.draws)
    elif a.part == "remove":
        part_remove(a.N, a.act, a.target, a1, a2, a.draws)
    elif a.part == "parts":
        part_parts(a.N, a.act, a.target, a1, a2, a.draws)
    elif a.part == "lambda":
        part_lambda(a.cache, a.N, a.act, a.target, a1, a2, a.cut, a.hard, a.structured)
    elif a.part == "profile":
        part_profile(a.cache, a.N, a.acts.split(";") if a.acts else None)
    else:
        part_grid(a.cache, a.N, a.cut, a.hard, a.acts.split(";") if a.acts else None, structured=a.structured)
    return 0


if __name__ == "__main__":
    sys.exit(main())
