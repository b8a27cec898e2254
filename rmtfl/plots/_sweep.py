"""Plots of sweep results: (alpha1, alpha2) phase maps and the two-step phase boundaries.

Axes are the step-size exponents of ``eta_t = c_t N^{alpha_t}`` (docs/conventions.md §5);
colour is an outlier count (docs/theory/two_step.md §6), theoretical or the mean over seeds.
Maps have shape ``(len(alpha2), len(alpha1))`` (rows ``alpha2``), as :class:`rmtfl.theory.PhaseDiagram`.

Examples
--------
>>> import numpy as np, matplotlib
>>> matplotlib.use("Agg")
>>> a = np.linspace(0, 0.45, 4)
>>> ax = plot_count_map(a, a[:2], np.zeros((2, 4)), title="demo")
>>> ax.get_title()
'demo'
>>> cell_edges([0.0, 0.1, 0.3]).tolist()
[-0.05, 0.05, 0.2, 0.4]
"""
from __future__ import annotations

import numpy as np

__all__ = ["plot_count_map", "plot_phase_boundaries", "cell_edges"]


def cell_edges(v) -> np.ndarray:
    """Cell boundaries around the grid values ``v`` (midpoints inside, mirrored half-steps at the ends)."""
    v = np.asarray(v, dtype=float)
    if v.size == 1:
        return np.array([v[0] - 0.025, v[0] + 0.025])
    mid = (v[1:] + v[:-1]) / 2
    return np.concatenate([[v[0] - (mid[0] - v[0])], mid, [v[-1] + (v[-1] - mid[-1])]])


def plot_count_map(alpha1, alpha2, values, *, ax=None, title: str = "", vmax=None, cmap="viridis",
                   label: str = "outliers beyond the first", annotate: bool = False, uncertain=None, unreliable=None):
    """Colour map of ``values[i, j]`` at ``(alpha1[j], alpha2[i])`` (``alpha1`` on x, ``alpha2`` on y).

    ``values`` has shape ``(len(alpha2), len(alpha1))``; NaN cells stay blank; the colour bar
    extends when a value exceeds ``vmax``.  ``annotate`` writes each cell's value (for coarse
    empirical grids).  ``uncertain``: a boolean mask of the same shape; those cells are hatched (for a
    finite-``N`` map: the count varies from batch to batch, docs/theory/two_step.md §8.3).  ``unreliable``: a
    boolean mask of the same shape; those cells carry a "?" (for a finite-``N`` map: the prediction marks itself
    unreliable there, ``FiniteNMap.reliable``, docs/theory/two_step.md §9.3).
    """
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(4.2, 3.6))
    a1, a2 = np.asarray(alpha1, float), np.asarray(alpha2, float)
    V = np.asarray(values, float)
    if V.shape != (a2.size, a1.size):
        raise ValueError(f"values must have shape (len(alpha2), len(alpha1)) = {(a2.size, a1.size)}, got {V.shape}")
    vmax = np.nanmax(V) if vmax is None else vmax
    vmax = max(float(vmax) if np.isfinite(vmax) else 1.0, 1.0)
    mesh = ax.pcolormesh(cell_edges(a1), cell_edges(a2), V, cmap=cmap, vmin=0, vmax=vmax, shading="flat")
    over = bool(np.any(V[np.isfinite(V)] > vmax))
    ax.figure.colorbar(mesh, ax=ax, label=label, extend="max" if over else "neither")
    if uncertain is not None:
        from matplotlib.patches import Rectangle

        mask = np.asarray(uncertain, bool)
        if mask.shape != V.shape:
            raise ValueError(f"uncertain must have the shape of values {V.shape}, got {mask.shape}")
        c1, c2 = cell_edges(a1), cell_edges(a2)
        for i, j in zip(*np.nonzero(mask)):
            ax.add_patch(Rectangle((c1[j], c2[i]), c1[j + 1] - c1[j], c2[i + 1] - c2[i], fill=False, hatch="///",
                                   edgecolor="white", linewidth=0.0, alpha=0.7))
    shaky = np.zeros(V.shape, bool) if unreliable is None else np.asarray(unreliable, bool)
    if shaky.shape != V.shape:
        raise ValueError(f"unreliable must have the shape of values {V.shape}, got {shaky.shape}")
    for i, y in enumerate(a2):
        for j, x in enumerate(a1):
            text = (f"{V[i, j]:.2g}" if annotate and np.isfinite(V[i, j]) else "") + ("?" if shaky[i, j] else "")
            if text:
                ax.text(x, y, text, ha="center", va="center", fontsize=7, color="w")
    ax.set_xlabel(r"$\alpha_1$")
    ax.set_ylabel(r"$\alpha_2$")
    if title:
        ax.set_title(title)
    return ax


def plot_phase_boundaries(kmax: int = 6, *, ax=None, alpha_max: float = 0.5, **line_kw):
    """Draw the lines ``k alpha1 + alpha2 = k/2`` for ``k = 1..kmax`` (docs/theory/two_step.md §6)."""
    import matplotlib.pyplot as plt

    from rmtfl.theory import phase_boundary

    if ax is None:
        _, ax = plt.subplots()
    had_data = ax.has_data()
    xlim, ylim = ax.get_xlim(), ax.get_ylim()
    a1 = np.linspace(0.0, alpha_max - 1e-9, 200)
    kw = {"color": "w", "lw": 0.8, "ls": "--", **line_kw}
    for k in range(1, kmax + 1):
        a2 = phase_boundary(k, a1)
        keep = a2 <= alpha_max
        if np.any(keep):
            ax.plot(a1[keep], a2[keep], **kw)
            i = int(np.argmax(keep))
            ax.annotate(f"k={k}", (a1[i], a2[i]), fontsize=6, color=kw["color"],
                        xytext=(2, -8), textcoords="offset points")
    if had_data:  # keep the map's extent
        ax.set_xlim(xlim)
        ax.set_ylim(ylim)
    else:
        ax.set_xlim(0, alpha_max)
        ax.set_ylim(0, alpha_max)
    return ax
