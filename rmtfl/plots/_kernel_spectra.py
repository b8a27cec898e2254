"""Conjugate-kernel spectra: the sampled ESD beside the predicted density and outliers (docs/theory/kernel_spectra.md §1–4).

Matplotlib is imported inside the function (``import rmtfl`` never imports it).
"""
from __future__ import annotations

import numpy as np

__all__ = ["plot_ck_spectrum"]


def plot_ck_spectrum(eigenvalues, law, *, outliers=(), after=None, after_outliers=(), bins: int = 80, ax=None):
    """Histogram of ``eigenvalues`` (bulk part) with ``law.density`` and the predicted outliers as lines.

    Parameters
    ----------
    eigenvalues : array
        Sampled eigenvalues of ``K = F F^T / N`` (docs/theory/kernel_spectra.md §1).
    law : CKSpectrum
        :func:`rmtfl.theory.ck_spectrum`; its density is scaled to the bulk mass, the atom is left out.
    outliers : sequence of float, keyword-only
        Predicted outlier locations (dashed lines; drawn clipped to the axis, value in the legend).
    after, after_outliers : keyword-only
        Eigenvalues after one step and their predicted outliers (second histogram, dotted lines).
    bins : int, keyword-only
    ax : matplotlib Axes, keyword-only

    Returns
    -------
    matplotlib.axes.Axes

    >>> import matplotlib; matplotlib.use("Agg")
    >>> from rmtfl.theory import ck_spectrum
    >>> ax = plot_ck_spectrum(np.linspace(0.1, 1.5, 50), ck_spectrum("tanh", psi=1.0, phi=1.0))
    >>> ax.get_xlabel()
    'eigenvalue of K'
    """
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(6, 4))
    ev = np.asarray(eigenvalues, dtype=float)
    hi = law.edges.upper
    xmax = 1.25 * hi
    near = [o for o in list(outliers) + list(after_outliers) if np.isfinite(o) and o <= 3 * hi]
    if near:
        xmax = max(xmax, 1.1 * max(near))
    zero = np.abs(ev) <= 1e-9 * max(1.0, float(np.max(np.abs(ev))) if ev.size else 1.0)
    bulk = ev[~zero & (ev <= xmax)]
    w = np.full(bulk.size, 1.0 / max(ev.size, 1))
    h1 = ax.hist(bulk, bins=bins, range=(0, xmax), weights=w * bins / xmax, alpha=0.45, label="sampled (before)")[0]
    heights = [float(np.max(h1)) if h1.size else 1e-12]
    if after is not None:
        av = np.asarray(after, dtype=float)
        az = np.abs(av) <= 1e-9 * max(1.0, float(np.max(np.abs(av))))
        ab = av[~az & (av <= xmax)]
        h2 = ax.hist(ab, bins=bins, range=(0, xmax), weights=np.full(ab.size, bins / xmax / av.size), alpha=0.35,
                     histtype="stepfilled", label="sampled (after one step)")[0]
        heights.append(float(np.max(h2)) if h2.size else 1e-12)
    ymax = max(heights) * 1.3
    x = np.linspace(1e-6 * hi, xmax, 800)
    ax.plot(x, law.density(x), color="k", lw=1.4, label="predicted density")
    for vals, style, what in ((outliers, dict(color="C3", ls="--", lw=1.2), "predicted outlier"),
                              (after_outliers, dict(color="C2", ls=":", lw=1.6), "predicted step spike")):
        for o in vals:
            if not np.isfinite(o):
                continue
            if o <= xmax:
                ax.axvline(o, label=f"{what} {o:.4g}", **style)
            else:  # far outlier: an arrow at the right edge
                ax.annotate(f"{what} at {o:.4g} →", xy=(xmax, 0.8 * ymax), xytext=(0.55 * xmax, 0.8 * ymax),
                            fontsize=7, color=style["color"], arrowprops=dict(arrowstyle="->", color=style["color"]))
    # sampled eigenvalues beyond the predicted edge: markers (a lone eigenvalue is invisible in a histogram)
    for vals, color, what in ((ev, "C0", "sampled outliers (before)"),
                              (None if after is None else np.asarray(after, float), "C1", "sampled outliers (after)")):
        if vals is None:
            continue
        far = vals[(vals > 1.02 * hi) & (vals <= xmax)]
        if far.size:
            ax.plot(far, np.full(far.size, 0.04 * ymax), "v", color=color, ms=7, label=what)
    ax.set_ylim(0, ymax)
    ax.set_xlabel("eigenvalue of K")
    ax.set_ylabel("density")
    ax.set_xlim(0, xmax)
    ax.legend(fontsize=7)
    return ax
