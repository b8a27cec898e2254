"""Plots of the two-step part: W_T spectra, alignment curves, phase diagrams.

Each function takes ``ax=None`` (a new figure is made), returns the Axes and never
calls ``plt.show()``.  Normalisation: singular values of ``W`` with ``W_0`` entries
``N(0, 1/d)`` (MP singular-value law with ratio ``psi = N/d``, docs/conventions.md §1).

Examples
--------
>>> import matplotlib; matplotlib.use("Agg")
>>> import numpy as np
>>> ax = plot_spectrum(np.linspace(0.1, 2.0, 50), 1.0, predicted=[2.5])
>>> ax.get_xlabel()
'singular value'
"""
from __future__ import annotations

import numpy as np

__all__ = ["plot_spectrum", "plot_alignment_vs_eta", "plot_phase_map", "plot_phase_pair"]


def _ax(ax):
    if ax is None:
        import matplotlib.pyplot as plt

        _, ax = plt.subplots(figsize=(5.5, 4))
    return ax


def plot_spectrum(s, psi, predicted=(), *, ax=None, bins=60, measured_outliers=None, title=None):
    """Histogram of singular values ``s`` with the MP bulk density and predicted outliers (dashed).

    ``predicted``: predicted outlier locations; ``measured_outliers``: optional values to mark.
    """
    from rmtfl.theory import mp_sv_density, mp_sv_edges

    ax = _ax(ax)
    s = np.asarray(s, dtype=float)
    lo, hi = mp_sv_edges(psi)
    edge_max = max([hi] + [float(p) for p in predicted] + [float(s.max())])
    bulk = s[s <= hi * 1.5]
    ax.hist(bulk, bins=bins, density=True, alpha=0.5, color="C0", label=f"W spectrum ({s.size} values)")
    x = np.linspace(max(lo, 1e-6), hi, 400)
    # law of the min(N, d) nonzero singular values: N-side density times max(1, psi)
    dens = np.asarray(mp_sv_density(x, psi, side="N"), dtype=float) * max(1.0, psi)
    ax.plot(x, dens, "C1", lw=1.5, label="MP bulk")
    out = s[s > hi * 1.5]
    if out.size:
        ax.plot(out, np.zeros_like(out), "C0|", ms=18, mew=2, label="values beyond the bulk")
    for i, p in enumerate(predicted):
        ax.axvline(float(p), color="C3", ls="--", lw=1.2, label="predicted outlier" if i == 0 else None)
    if measured_outliers is not None:
        for v in measured_outliers:
            ax.axvline(float(v), color="k", ls=":", lw=0.8)
    ax.set_xlim(0, edge_max * 1.08)
    ax.set_xlabel("singular value")
    ax.set_ylabel("density")
    if title:
        ax.set_title(title)
    ax.legend(fontsize=8)
    return ax


def plot_alignment_vs_eta(eta_theory, curves: dict, eta_sim=None, points: dict | None = None, errors=None, *,
                          threshold=None, ax=None, title=None):
    """Theory curves ``curves[label] = values over eta_theory`` with simulated means (± stderr) over them."""
    ax = _ax(ax)
    for i, (label, vals) in enumerate(curves.items()):
        ax.plot(eta_theory, vals, color=f"C{i}", lw=1.5, label=f"{label} (theory)")
        if points is not None and label in points:
            err = None if errors is None else errors.get(label)
            ax.errorbar(eta_sim, points[label], yerr=err, fmt="o", color=f"C{i}", ms=4,
                        label=f"{label} (simulated)")
    if threshold is not None and np.isfinite(threshold):
        ax.axvline(threshold, color="gray", ls=":", label=r"BBP threshold $\eta_c$")
    ax.set_xlabel(r"step size $\eta$")
    ax.set_ylabel(r"$\cos^2$")
    ax.set_ylim(-0.02, 1.02)
    if title:
        ax.set_title(title)
    ax.legend(fontsize=7)
    return ax


def plot_phase_map(alpha1, alpha2, values, *, ax=None, title=None, boundaries=4, vmax=None, label="count"):
    """Heat map of ``values`` (shape ``(len(alpha2), len(alpha1))``) with the lines ``k a1 + a2 = k/2``."""
    ax = _ax(ax)
    a1 = np.asarray(alpha1, dtype=float)
    a2 = np.asarray(alpha2, dtype=float)
    v = np.asarray(values, dtype=float)
    im = ax.pcolormesh(a1, a2, v, shading="nearest", cmap="viridis", vmin=0, vmax=vmax)
    ax.figure.colorbar(im, ax=ax, label=label)
    xs = np.linspace(0, 0.5, 200)
    for k in range(1, boundaries + 1):
        ax.plot(xs, k * (0.5 - xs), "w--", lw=0.8)
    ax.set_xlim(a1.min() - 0.01, a1.max() + 0.01)
    ax.set_ylim(a2.min() - 0.01, a2.max() + 0.01)
    ax.set_xlabel(r"$\alpha_1$")
    ax.set_ylabel(r"$\alpha_2$")
    if title:
        ax.set_title(title)
    return ax


def plot_phase_pair(theory, empirical, *, axes=None, titles=("theory", "simulation")):
    """Theory and empirical maps side by side (same colour scale).  Returns the two Axes.

    ``theory`` and ``empirical`` are ``(alpha1, alpha2, values)`` triples.
    """
    if axes is None:
        import matplotlib.pyplot as plt

        _, axes = plt.subplots(1, 2, figsize=(11, 4))
    vmax = float(max(np.nanmax(theory[2]), np.nanmax(empirical[2]), 1))
    plot_phase_map(*theory, ax=axes[0], title=titles[0], vmax=vmax)
    plot_phase_map(*empirical, ax=axes[1], title=titles[1], vmax=vmax)
    return axes
