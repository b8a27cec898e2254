"""The eigenvalue of ``M = X^T diag(y) X / n`` along one extreme sample over the whole law of ``y``
(docs/theory/two_step.md §8.3, "The extreme samples as one group", where the count takes it).

:func:`~rmtfl.theory._two_step.sample_spikes.extreme_eigenvalues` puts a sample's eigenvalue at the pole of
Silverstein's equation over the samples the widened bulk keeps.  In a batch the other extreme samples are there too;
over the whole law of ``y`` -- a principal value where they come near ``y_i`` -- and with ``|x_i|^2 = d - 1 + z_i^2``::

    lambda_i = (y_i / phi) (1 + (z_i^2 - 1) / d) + y_i (y_i PV E[1 / (y_i - y)] - 1).

A sample planted in drawn batches has this eigenvalue within a few tenths of a standard error (``d = 300`` to
``1000``; ``tests/theory/two_step/test_whole_law.py`` checks the principal value against scipy's Cauchy quadrature).
"""
from __future__ import annotations

import math

import numpy as np

from .._classical.hermite import gauss_hermite_rule
from .sample_spikes import extreme_eigenvalues

__all__ = ["whole_law_eigenvalue", "pv_inverse", "whole_law_eigenvalues"]

#: Grid of ``z`` for the principal value of :func:`pv_inverse` (step ``2 PV_Z_MAX / (PV_Z_GRID - 1)``).
PV_Z_GRID, PV_Z_MAX = 2001, 10.0

#: Width (in ``z``) of the window around each pole whose singular part is subtracted in :func:`pv_inverse`.
PV_WINDOW = 0.25


def whole_law_eigenvalue(target, ys, zs, phi: float, d: float) -> np.ndarray:
    """``lambda_i`` of the module docstring at each extreme sample ``(y_i, z*_i)`` of a batch of ``n = phi d``
    (label noise averaged over by Gauss-Hermite nodes); ``NaN`` where ``y_i`` is at an extremum of the link (not
    resolved)."""
    ys = np.atleast_1d(np.asarray(ys, dtype=float))
    zs = np.atleast_1d(np.asarray(zs, dtype=float))
    if target.noise > 0:
        e, we = gauss_hermite_rule(8)
        pv = pv_inverse(target, (ys[:, None] - target.noise * e[None, :]).ravel()).reshape(ys.size, e.size) @ we
    else:
        pv = pv_inverse(target, ys)
    return ys / phi * (1.0 + (zs * zs - 1.0) / d) + ys * (ys * pv - 1.0)


def pv_inverse(target, vs) -> np.ndarray:
    """``PV E[1 / (v - g(z))]``, ``z ~ N(0, 1)``, ``g`` the target's link, at each ``v`` of ``vs``.

    Near a root ``z_r`` of ``g(z) = v`` the integrand is ``A_r / (z - z_r)``, ``A_r = -phi(z_r) / g'(z_r)``; the term
    ``A_r exp(-(z - z_r)^2 / (2 w^2)) / (z - z_r)`` has principal value 0 and is subtracted, which leaves a smooth
    integrand for the trapezoidal rule on a fine grid (exponentially accurate for it).
    """
    g = target.links[0]
    z = np.linspace(-PV_Z_MAX, PV_Z_MAX, PV_Z_GRID)
    h = z[1] - z[0]
    dens = np.exp(-0.5 * z * z) / math.sqrt(2.0 * math.pi)
    G = np.asarray(g(z), dtype=float)
    vs = np.asarray(vs, dtype=float)
    D = vs[:, None] - G[None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        F = dens[None, :] / D
        row, k = np.nonzero((D[:, :-1] >= 0) != (D[:, 1:] >= 0))      # a root of g(z) = v in [z_k, z_k+1]
        zr = z[k] + h * D[row, k] / (D[row, k] - D[row, k + 1])
        for _ in range(3):                                          # Newton's method on the interpolated root
            eps = 1e-6 * (1.0 + np.abs(zr))
            gp = (np.asarray(g(zr + eps), dtype=float) - np.asarray(g(zr - eps), dtype=float)) / (2 * eps)
            zr = np.clip(zr - (np.asarray(g(zr), dtype=float) - vs[row]) / gp, z[k], z[k + 1])
        A = -np.exp(-0.5 * zr * zr) / math.sqrt(2.0 * math.pi) / gp
        u = z[None, :] - zr[:, None]
        sing = A[:, None] * np.exp(-0.5 * (u / PV_WINDOW) ** 2) / u
        # as np.add.at(F, row, -sing): the roots of one v (row is sorted) taken off in their order, the first of
        # each row at once, then the second, ...
        nth = np.arange(row.size) - np.searchsorted(row, row)
        for j in range(int(nth.max(initial=-1)) + 1):
            at = nth == j
            F[row[at]] -= sing[at]
        # a grid point on a root: the integrand's limit there, phi(z_r) (z_r / g' + g'' / (2 g'^2))
        kn = np.clip(np.rint((zr - z[0]) / h).astype(int), 0, z.size - 1)
        on = np.abs(z[kn] - zr) < 1e-3 * h
        if on.any():
            e2 = 1e-4 * (1.0 + np.abs(zr[on]))
            gpp = (np.asarray(g(zr[on] + e2), dtype=float) - 2.0 * np.asarray(g(zr[on]), dtype=float)
                   + np.asarray(g(zr[on] - e2), dtype=float)) / e2**2
            F[row[on], kn[on]] = -A[on] * gp[on] * (zr[on] / gp[on] + gpp / (2.0 * gp[on] ** 2))
    pv = h * F.sum(axis=1)
    # ``v`` at (or next to) an extremum of the link -- two roots within a few grid steps, or a double one the
    # sign changes miss -- is not resolved here (NaN)
    close = (row[1:] == row[:-1]) & (np.diff(zr) < 4 * h)
    pv[row[1:][close]] = np.nan
    turn = np.nonzero(np.diff(np.sign(np.diff(G))) != 0)[0] + 1
    if turn.size:
        near = np.abs(vs[:, None] - G[turn][None, :]) < 1e-3 * (1.0 + np.abs(vs[:, None]))
        pv[near.any(axis=1)] = np.nan
    return pv


def whole_law_eigenvalues(target, d: float):
    """A function with the arguments of :func:`~rmtfl.theory._two_step.sample_spikes.extreme_eigenvalues` that gives
    :func:`whole_law_eigenvalue` for each sample beyond every ``|y|`` of the bulk (where it is resolved) and the pole
    over the bulk's samples for the others."""
    def eigenvalues(ys, zs, phi, y_bulk, w_bulk, zrange) -> list:
        base = extreme_eigenvalues(ys, zs, phi, y_bulk, w_bulk, zrange)
        beyond = float(np.max(np.abs(y_bulk)))
        lam = whole_law_eigenvalue(target, np.asarray(ys, float), np.asarray(zs, float), phi, d)
        return [float(w) if abs(y) > beyond and np.isfinite(w) else b for y, w, b in zip(ys, lam, base)]
    return eigenvalues
