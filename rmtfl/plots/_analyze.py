"""The figure of :func:`rmtfl.compare.analyze`: the ESD with the fitted Marchenko-Pastur law, the edge with its
Tracy-Widom margin and the outliers marked with their strength (docs/analyze.md §1).

Normalisation: the x axis carries the squared singular values ``s^2`` of the analysed matrix (the eigenvalues of
the smaller Gram side; in covariance mode the eigenvalues of ``S``), the histogram is a density over them, and the
MP curve is the law of those values for the fitted ``var`` (ratio ``min(psi, 1/psi)``, scale ``var max(1, psi)``).

Examples
--------
>>> import numpy as np, matplotlib
>>> matplotlib.use("Agg")
>>> from rmtfl.compare import analyze
>>> W = np.random.default_rng(0).standard_normal((200, 100)) / 10.0
>>> ax = plot_spectrum_report(analyze(W))
>>> ax.get_xlabel()
'squared singular value s²'
"""
from __future__ import annotations

import numpy as np

from rmtfl.theory import mp_density, mp_edges

__all__ = ["plot_spectrum_report"]


def plot_spectrum_report(report, *, ax=None, bins: int = 60):
    """Histogram of the bulk, fitted MP density, edge and margin, outliers with theta (returns the Axes).

    ``report``: a :class:`rmtfl.compare.SpectrumReport` (positional); ``ax``, ``bins`` keyword-only.  Units as in
    the module notes (docs/analyze.md §1).

    >>> import matplotlib; matplotlib.use("Agg")
    >>> from rmtfl.compare import analyze
    >>> ax = plot_spectrum_report(analyze(np.eye(20) + 0.01))
    >>> ax.get_ylabel()
    'density'
    """
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(5.6, 3.8))
    psi = report.ratio
    c, kappa = min(psi, 1.0 / psi), max(1.0, psi)
    if report.kind == "covariance":  # eigenvalues of S: the MP law of X/sqrt(n), scale sigma^2 d/n per unit
        scale = report.bulk_edge ** 2 / (1.0 + np.sqrt(psi)) ** 2 * kappa
    else:
        scale = report.var * kappa
    vals = report.sketch_values if report.sketch and report.sketch_values is not None else report.singular_values
    ev = np.asarray(vals, dtype=float) ** 2
    n_out = len(report.outliers)
    bulk = ev if report.sketch else ev[n_out:]
    lo, hi = mp_edges(c, var=scale)
    top = max(float(hi), float(np.max(bulk)) if bulk.size else float(hi))
    rng = (0.0, 1.05 * top)
    ax.hist(bulk, bins=bins, range=rng, density=True, color="0.78", edgecolor="0.55", lw=0.4,
            label=f"ESD ({'sketch, ' if report.sketch else ''}{bulk.size} values)")
    x = np.linspace(float(lo), float(hi), 1500)
    ax.plot(x, mp_density(x, c, var=scale), color="C3", lw=1.5, label=f"MP fit, var = {report.var:.4g}")
    ax.axvline(report.bulk_edge ** 2, color="C0", lw=1.0, ls="--", label="bulk edge")
    ax.axvline(report.edge_margin ** 2, color="C0", lw=1.0, ls=":", label=f"TW margin (α = {report.alpha:g})")
    ymax = ax.get_ylim()[1]
    for i, o in enumerate(report.outliers):
        xo = o.singular_value ** 2
        ax.axvline(xo, color="C2", lw=1.2)
        lab = f"ℓ̂={o.ell:.3g}" if report.kind == "covariance" else f"θ̂={o.theta:.3g}"
        ax.annotate(lab, (xo, ymax * (0.9 - 0.1 * (i % 5))), fontsize=7, color="C2",
                    ha="right", rotation=90, va="top")
    if report.outliers:
        right = max(o.singular_value ** 2 for o in report.outliers)
        ax.set_xlim(0.0, 1.08 * max(right, rng[1]))
    mp = "MP" if report.mp_consistent else "not MP"
    ax.set(xlabel="squared singular value s²", ylabel="density",
           title=f"{report.N}×{report.d}: {mp}, KS = {report.ks:.3g}, {n_out} outlier{'s' if n_out != 1 else ''}")
    ax.legend(fontsize=7, frameon=False)
    return ax
