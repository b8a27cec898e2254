"""A spike just past its threshold at finite N: how many values it adds above ``s`` near the bulk's edge
(docs/theory/two_step.md §9.3; measured, not in the prediction).

The count through the Poisson process (docs/theory/two_step.md §8.3) adds one value above ``s`` for each single
sample whose outlier lies above ``s`` (its strength spread over batches).  At finite ``N`` an outlier within a few
Tracy–Widom scales of the edge does not stand apart from the bulk: in the critical window of the BBP transition
(Baik, Ben Arous, Péché) the top of the spectrum takes the spike in, and the values it adds above ``s`` fall short
of one.  This diagnostic measures that on the simplest real model, a sample covariance with one spike:
``W = Z diag(sqrt(ell), 1, ..., 1)``, ``Z`` of ``N x d`` independent ``N(0, 1/d)`` entries, the singular values
of ``W`` against those of ``Z``.  With ``gamma = N / d`` the spike's outlier lies at ``sqrt(ell (gamma + 1 / (ell -
1)))`` above the threshold ``ell = 1 + 1 / sqrt(gamma)`` (the edge ``1 + sqrt(gamma)``).
Each spike strength is set by where its outlier would lie, ``x`` Tracy–Widom scales of the top singular value above
the edge (:func:`rmtfl.theory.largest_sv_scaling`); for each ``s = edge + y scale`` the table gives the draws' mean
number of singular values above ``s`` with the spike less that without it, beside the one value above ``s`` that a
count of outliers at their locations adds where ``x > y``, and then the spike's spectral shift as ``N -> infinity``
at the same ``x`` and ``y`` (:func:`shift_extra`) and a deterministic model of the finite-``N`` window
(:func:`window_model`).

    python -m benchmarks.diag_critical_window --N 500 --draws 400
"""
from __future__ import annotations

import argparse
import functools
import math
import sys

import numpy as np
from scipy import optimize, special

from rmtfl.theory import largest_sv_scaling, mp_stieltjes, spiked_covariance_sd, tracy_widom_pdf

X_GRID = (-2.0, 0.0, 1.0, 2.0, 4.0, 8.0)
Y_GRID = (-16.0, -8.0, -4.0, -2.0, -1.0, 0.0, 1.0, 2.0, 4.0)


def spike_strength(x: float, N: int, d: int) -> float:
    """``ell``: the spike whose outlier (the top singular value) lies ``x`` Tracy–Widom scales above the edge
    ``1 + sqrt(N / d)`` (below the threshold ``1 + 1 / sqrt(N / d)`` for ``x <= 0``: the threshold less the distance
    from it to the spike of an outlier ``|x|`` scales up)."""
    g = N / d
    edge, scale = 1.0 + math.sqrt(g), largest_sv_scaling(N, d).scale
    crit = 1.0 + 1.0 / math.sqrt(g)

    def location(ell):
        return math.sqrt(ell * (g + 1.0 / (ell - 1.0)))
    if x == 0:
        return crit
    target = edge + abs(x) * scale
    hi = crit + 1.0
    while location(hi) < target:
        hi = crit + 2.0 * (hi - crit)
    # the location rises from the edge at the threshold; the edge itself is a root there (no sign change), so the
    # bracket starts just above it
    ell = optimize.brentq(lambda e: location(e) - target, crit * (1.0 + 1e-12), hi, xtol=1e-15, rtol=1e-15)
    return ell if x > 0 else crit - (ell - crit)


def shift_extra(x_grid, y_grid, *, N: int, d: int) -> np.ndarray:
    """The same as :func:`extra_counts` as ``N -> infinity`` at fixed Tracy–Widom units: the spectral shift of the
    spike, ``(arg(1 + ell c m) - arg(1 + c m)) / pi`` at ``lambda = s^2`` (``c = N / d``, ``m = tr (A - z)^(-1) / N``
    just above the real axis, ``-``:func:`rmtfl.theory.mp_stieltjes`; the Gram matrix is the one without the spiked
    column plus
    ``ell z_0 z_0^T``, ``1 + ell c m = 0`` at the outlier), one between the edge and the outlier."""
    y = np.asarray(y_grid, float)
    out = np.zeros((len(x_grid), y.size))
    for i, x in enumerate(x_grid):
        out[i] = np.where(y >= 0, (0 <= y) & (y < x), mp_shift(spike_strength(x, N, d), y, N=N, d=d))
    return out


def mp_shift(ell: float, y, *, N: int, d: int) -> np.ndarray:
    """``(arg(1 + ell c m) - arg(1 + c m)) / pi`` at ``lambda = s^2``, ``s = edge + y scale`` for each ``y < 0``
    (below the edge; :func:`shift_extra`): the number of values a spike ``ell`` adds above ``s`` as ``N -> infinity``
    (``c = N / d``, ``m = -``:func:`rmtfl.theory.mp_stieltjes` just above the real axis); 0 where ``y >= 0``."""
    c = N / d
    edge, scale = 1.0 + math.sqrt(c), largest_sv_scaling(N, d).scale
    y = np.asarray(y, float)
    m = -mp_stieltjes((edge + np.minimum(y, 0.0) * scale) ** 2 + 1e-14j, c)
    return np.where(y < 0, (np.angle(1 + ell * c * m) - np.angle(1 + c * m)) / math.pi, 0.0)


@functools.lru_cache(maxsize=4)
def tw_jitter(points: int = 281) -> tuple[np.ndarray, np.ndarray]:
    """``(delta, weight)``: ``points`` nodes of the centred Tracy–Widom law (``beta = 1``) on ``[-8, 6]`` less its
    mean, with their weights (the density normalised over the nodes): how far the edge a finite matrix's spectrum
    ends at moves, in Tracy–Widom units (:func:`window_model`)."""
    t = np.linspace(-8.0, 6.0, points)
    w = np.array([tracy_widom_pdf(v, beta=1) for v in t])
    w /= w.sum()
    return t - float(t @ w), w


def window_model(x_grid, y_grid, *, N: int, d: int, points: int = 281) -> np.ndarray:
    """A deterministic model of :func:`extra_counts`: the spectral shift of :func:`shift_extra` read from an edge that
    moves by the largest eigenvalue's Tracy–Widom fluctuation (``beta = 1``, centred), with the outlier above the
    edge at its place spread by its own Gaussian standard deviation (Paul 2007,
    :func:`rmtfl.theory.spiked_covariance_sd`; none at or below the threshold)::

        extra(y) = E_delta[ shift(y - delta) if y - delta < 0 else P(outlier > y - delta) ]

    in Tracy–Widom units of the top singular value; ``points`` nodes of the Tracy–Widom density on ``[-8, 6]`` (the
    printed values move by less than 0.005 from 281 to 1401)."""
    c = N / d
    edge, scale = 1.0 + math.sqrt(c), largest_sv_scaling(N, d).scale
    delta, w = tw_jitter(points)
    out = np.zeros((len(x_grid), len(y_grid)))
    for i, x in enumerate(x_grid):
        fine = np.linspace(min(y_grid) - 10.0, 0.0, 400)
        shift = shift_extra([x], list(fine[:-1]), N=N, d=d)[0]
        sd = 0.0
        if x > 0:
            ell = spike_strength(x, N, d)
            sd = c * spiked_covariance_sd(ell, c, n=N) / (2.0 * (edge + x * scale)) / scale
        for j, y in enumerate(y_grid):
            v = y - delta
            inside = np.interp(np.minimum(v, fine[-2]), fine[:-1], shift)
            above = special.ndtr((x - v) / sd) if sd > 0 else np.zeros_like(v)
            out[i, j] = float(w @ np.where(v < 0, inside, above))
    return out


def extra_counts(x_grid, y_grid, *, N: int, d: int, draws: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """``(extra, se)`` of shape ``(len(x_grid), len(y_grid))``: the mean number of singular values above
    ``edge + y scale`` with the spike of :func:`spike_strength` ``x`` less the same matrix's without it (the same
    ``Z``), and its standard error over ``draws``."""
    edge, scale = 1.0 + math.sqrt(N / d), largest_sv_scaling(N, d).scale
    s = edge + scale * np.asarray(y_grid, float)
    ells = [spike_strength(x, N, d) for x in x_grid]
    diff = np.zeros((draws, len(x_grid), len(y_grid)))
    for k in range(draws):
        Z = rng.standard_normal((N, d)) / math.sqrt(d)
        G = Z.T @ Z                                          # d x d Gram: singular values of Z squared
        base = np.sqrt(np.clip(np.linalg.eigvalsh(G), 0.0, None))
        n0 = (base[:, None] > s[None, :]).sum(0)
        for i, ell in enumerate(ells):
            root = math.sqrt(ell)
            Gs = G.copy()                                    # column 0 of Z scaled by sqrt(ell)
            Gs[0, :] *= root
            Gs[:, 0] *= root
            sv = np.sqrt(np.clip(np.linalg.eigvalsh(Gs), 0.0, None))
            diff[k, i] = (sv[:, None] > s[None, :]).sum(0) - n0
    return diff.mean(0), diff.std(0, ddof=1) / math.sqrt(draws)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--N", type=int, default=500)
    ap.add_argument("--d", type=int, default=None, help="columns (default N)")
    ap.add_argument("--draws", type=int, default=400)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    if args.N < 10 or args.draws < 2:
        ap.error("--N must be at least 10 and --draws at least 2")
    d = args.d or args.N
    extra, se = extra_counts(X_GRID, Y_GRID, N=args.N, d=d, draws=args.draws, rng=np.random.default_rng(args.seed))
    print(f"N = {args.N}, d = {d}, {args.draws} draws: values the spike adds above edge + y scale (Tracy–Widom scale "
          f"{largest_sv_scaling(args.N, d).scale:.4g}), its outlier x scales above the edge; in brackets what a count "
          "of outliers at their locations adds")
    shift = shift_extra(X_GRID, Y_GRID, N=args.N, d=d)
    print("  x \\ y   " + " ".join(f"{y:>13.0f}" for y in Y_GRID))
    for i, x in enumerate(X_GRID):
        cells = [f"{extra[i, j]:5.2f}±{se[i, j]:.2f} ({int(x > y)})" for j, y in enumerate(Y_GRID)]
        print(f"  {x:5.1f}   " + " ".join(cells))
    print("the spectral shift as N -> infinity at the same x and y (below the edge the arg of 1 + ell c m less the "
          "null's, over pi):")
    for i, x in enumerate(X_GRID):
        print(f"  {x:5.1f}   " + " ".join(f"{v:13.2f}" for v in shift[i]))
    model = window_model(X_GRID, Y_GRID, N=args.N, d=d)
    print("a model of the window (window_model): that shift read from an edge moved by the Tracy–Widom fluctuation, "
          "the outlier spread by its own Gaussian standard deviation:")
    for i, x in enumerate(X_GRID):
        print(f"  {x:5.1f}   " + " ".join(f"{v:13.2f}" for v in model[i]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
