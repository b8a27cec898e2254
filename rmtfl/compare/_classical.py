"""Verify checks of the classical part: MP bulk, top edge, BGN outliers and overlaps.

Sizes by level (``N`` rows, ``psi = N/d`` in {0.5, 2}; seeds = independent draws):
quick ``N = 200``, 4 seeds; default ``N = 800``, 5 seeds; full ``N = 1600``, 8 seeds.
The MP-law and top-edge rows share the same noise draws.

Tolerances (fluctuation scales, never fitted to the outcome):

* **MP law** — KS distance between the ``N`` eigenvalues of ``W W^T`` and
  :func:`~rmtfl.theory.mp_cdf`.  Eigenvalues are not iid: rigidity makes the KS
  distance ``O(log N / N)``, not ``N^{-1/2}``.  Measured ``KS N / log N`` is
  0.3–0.75 over 60 draws at N = 400–2000, so the tolerance on the seed-mean is
  ``1.5 log N / N`` (0.0125 at N = 800, vs the iid scale ``0.87/sqrt(N) = 0.031``);
  a 10 % error in the variance exceeds it.
* **Top edge** — seed-mean of ``s_1`` against ``1 + sqrt(psi)`` with tolerance
  ``4 x`` the TW scale (:func:`~rmtfl.theory.largest_sv_scaling`, ~``N^{-2/3}``)
  ``+ 3 stderr``; and against the TW-corrected mean ``center + E[TW_1] scale``
  with tolerance ``3 max(stderr, sd(TW_1) scale / sqrt(k)) + 0.3 scale``
  (Johnstone's centring is accurate to ``O(N^{-1/3})`` TW units).
* **BGN** — ``theta / theta_c`` in {0.5, 1.5, 2.5} at both values of ``psi``.  Above the
  threshold: ``|mean - limit| <= 1.0 N^{-1/2} + 3 stderr`` for ``s``,
  ``cos2_left``, ``cos2_right`` (finite-N bias is O(1/N), fluctuations
  O(N^{-1/2}); at N = 1000 the measured deviations are <= 0.7 N^{-1/2}).
  Below: ``s`` against the edge with the top-edge tolerance, overlaps against 0
  with ``1.0 N^{-1/2} + 3 stderr``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from rmtfl._results import Result
from rmtfl.numerics import gaussian_matrix, measure_spiked, spiked_matrix
from rmtfl.numerics import eigenvalues_of_gram, ks_distance_mp
from rmtfl.theory import bgn_outlier, bgn_threshold, largest_sv_scaling
from rmtfl.theory import mp_sv_edges
from rmtfl.theory._classical.tracy_widom import TW_MEAN, TW_STD
from ._core import compare, mean_stderr
from ._verify import Check

__all__ = ["checks", "simulate_bbp", "BBPSimulation", "PSIS", "THETA_FACTORS"]

PART = "classical"
PSIS = (0.5, 2.0)
THETA_FACTORS = (0.5, 1.5, 2.5)
C_SQRT = 1.0  # constant of the N^{-1/2} term in the BGN tolerances


def _size(ctx):
    return ctx.pick(200, 800, 1600), ctx.pick(4, 5, 8)


def _dims(N, psi):
    return N, int(round(N / psi))


def _spectra(ctx, N, psi, k, name):
    d = _dims(N, psi)[1]
    return [eigenvalues_of_gram(gaussian_matrix(N, d, rng=r, backend=ctx.backend), backend=ctx.backend)
            for r in ctx.seeds(name, k)]


def _check_mp(ctx):
    N, k = _size(ctx)
    rows, samples = [], {}
    for psi in PSIS:
        N_, d = _dims(N, psi)
        eigs = _spectra(ctx, N_, psi, k, f"mp-law-{psi}")
        samples[psi] = eigs[0]
        ks_mean, ks_se = mean_stderr([ks_distance_mp(e, psi) for e in eigs])
        tol = 1.5 * math.log(N_) / N_
        rows.append(compare(PART, f"MP law KS distance psi={psi:g} N={N_}", 0.0, ks_mean, ks_se, tolerance=tol,
                            note="KS of N eigenvalues of WW^T to mp_cdf (atom incl.); tol 1.5 log N/N "
                                 "(rigidity scale; measured KS N/log N = 0.3-0.75)"))
        rows.extend(_edge_rows(N_, d, psi, [math.sqrt(e[0]) for e in eigs]))
    if ctx.figure_path("mp_histogram") is not None:
        import matplotlib.pyplot as plt

        from rmtfl.plots._classical import plot_mp_histogram

        fig, axes = plt.subplots(1, 2, figsize=(9.2, 3.6), constrained_layout=True)
        for ax, psi in zip(axes, PSIS):
            plot_mp_histogram(samples[psi], psi, ax=ax, bins=50)
        ctx.save_figure("mp_histogram", fig, {"N": N, "psi": list(PSIS), "seed": ctx.seed, "level": ctx.level})
    return rows


def _edge_rows(N_, d, psi, s1):
    m, se = mean_stderr(s1)
    center, scale = largest_sv_scaling(N_, d)
    edge = mp_sv_edges(psi).upper
    se_th = max(se, TW_STD[1] * scale / math.sqrt(len(s1)))
    return [
        compare(PART, f"top edge s1 psi={psi:g} N={N_}", edge, m, se, tolerance=4 * scale + 3 * se,
                note=f"limit 1+sqrt(psi); tol 4 x TW scale ({scale:.2e}) + 3 stderr"),
        compare(PART, f"top edge s1 TW-corrected psi={psi:g}", center + TW_MEAN[1] * scale, m, se,
                tolerance=3 * se_th + 0.3 * scale,
                note="Johnstone centre + E[TW1] x scale; tol 3 max(stderr, sd_TW scale/sqrt k) + 0.3 scale"),
    ]


@dataclass(frozen=True)
class BBPSimulation(Result):
    """Seed-means and standard errors of the top triplet of rank-one spiked matrices, one entry per ``theta``.

    ``singular_value``, ``cos2_left`` (N side), ``cos2_right`` (d side) are the means over the draws
    and ``*_se`` their standard errors (docs/theory/two_step.md §2.1 gives the limits); ``N``, ``d``
    the matrix shape (``d = round(N / psi)``).
    """

    theta: np.ndarray
    singular_value: np.ndarray
    singular_value_se: np.ndarray
    cos2_left: np.ndarray
    cos2_left_se: np.ndarray
    cos2_right: np.ndarray
    cos2_right_se: np.ndarray
    N: int
    d: int


def simulate_bbp(theta, *, N: int, psi: float, rngs, backend="numpy") -> BBPSimulation:
    """Seed-means and stderrs of ``(s_1, cos2_left, cos2_right)`` of rank-one spiked matrices ``W0 + theta u v^T``.

    Normalisation: docs/theory/two_step.md §2 (``W0`` ``N x d``, entries ``N(0, 1/d)``, ``d = round(N/psi)``).
    ``theta`` (a sequence of strengths) positional, the rest keyword-only; ``rngs`` is a list of
    generators (one draw per generator and ``theta``).
    """
    N_, d = _dims(N, psi)
    thetas = np.atleast_1d(np.asarray(theta, float))
    out = {key: [] for key in ("singular_value", "cos2_left", "cos2_right")}
    out.update({key + "_se": [] for key in list(out)})
    for th in thetas:
        meas = [measure_spiked(spiked_matrix(N_, d, th, rng=r, backend=backend), rng=r, backend=backend)
                for r in (g.spawn(1)[0] for g in rngs)]
        for key, vals in (("singular_value", [m.singular_values[0] for m in meas]),
                          ("cos2_left", [m.cos2_left[0] for m in meas]),
                          ("cos2_right", [m.cos2_right[0] for m in meas])):
            mu, se = mean_stderr(vals)
            out[key].append(mu)
            out[key + "_se"].append(se)
    return BBPSimulation(theta=thetas, N=N_, d=d, **{key: np.array(v) for key, v in out.items()})


def _check_bgn(ctx):
    N, k = _size(ctx)
    rows, sims = [], {}
    for psi in PSIS:
        tc = bgn_threshold(psi)
        thetas = [f * tc for f in THETA_FACTORS]
        sim = simulate_bbp(thetas, N=N, psi=psi, rngs=ctx.seeds(f"bgn-{psi}", k), backend=ctx.backend)
        sims[psi] = sim
        N_, d = sim.N, sim.d
        _, scale = largest_sv_scaling(N_, d)
        tol_sqrt = C_SQRT / math.sqrt(N_)
        for i, (f, th) in enumerate(zip(THETA_FACTORS, thetas)):
            pred = bgn_outlier(th, psi)
            tag = f"psi={psi:g} theta={f:g}theta_c"
            se_s = sim.singular_value_se[i]
            if f > 1:
                tol_s, note_s = tol_sqrt + 3 * se_s, "outlier; tol 1.0 N^-1/2 + 3 stderr"
            else:
                tol_s, note_s = 4 * scale + 3 * se_s, "below threshold: edge; tol 4 TW scale + 3 stderr"
            rows.append(compare(PART, f"BGN s1 {tag}", pred.singular_value, sim.singular_value[i], se_s,
                                tolerance=tol_s, note=note_s))
            for name in ("cos2_left", "cos2_right"):
                se = getattr(sim, name + "_se")[i]
                rows.append(compare(PART, f"BGN {name} {tag}", getattr(pred, name), getattr(sim, name)[i], se,
                                    tolerance=tol_sqrt + 3 * se, note="tol 1.0 N^-1/2 + 3 stderr"))
    if ctx.figure_path("bbp") is not None:
        import matplotlib.pyplot as plt

        from rmtfl.plots._classical import plot_bbp_outlier, plot_bbp_overlaps

        fig, axes = plt.subplots(2, 2, figsize=(9.2, 7.0), constrained_layout=True)
        for j, psi in enumerate(PSIS):
            sim = sims[psi]
            plot_bbp_outlier(sim.theta, sim.singular_value, sim.singular_value_se, psi=psi, ax=axes[0, j])
            plot_bbp_overlaps(sim.theta, sim.cos2_left, sim.cos2_left_se, sim.cos2_right, sim.cos2_right_se,
                              psi=psi, ax=axes[1, j])
        ctx.save_figure("bbp", fig, {"N": N, "seeds": k, "psi": list(PSIS), "theta_factors": list(THETA_FACTORS),
                                "seed": ctx.seed, "level": ctx.level})
    return rows


def checks(ctx):
    """The list of :class:`~rmtfl.compare.Check` of this part.

    Predictions of docs/theory/classical.md §1–§6; tolerances in the module notes.
    """
    return [Check(PART, "MP law and top edge", _check_mp), Check(PART, "BGN outliers", _check_bgn)]
