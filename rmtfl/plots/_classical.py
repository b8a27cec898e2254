"""Plots of the classical part: MP histogram against the density, BBP transition panels.

Normalisation: eigenvalues are those of ``W W^T`` with ``W`` ``N x d``, entries
``N(0, var/d)``; the histogram is normalised by the total number of
eigenvalues (atom excluded from the bars), so it matches :func:`rmtfl.theory.mp_density`
(docs/theory/two_step.md §1.1); BGN curves as in docs/theory/two_step.md §2.1.

Signatures: the data (eigenvalues; or ``theta`` and the measured means and errors) are
positional, everything else (``psi``, ``var``, ``ax``, ...) keyword-only -- except
:func:`plot_mp_histogram`, whose ``psi`` follows the eigenvalues as in
:func:`rmtfl.numerics.ks_distance_mp`.

Examples
--------
>>> import numpy as np, matplotlib
>>> matplotlib.use("Agg")
>>> ax = plot_bbp_outlier([1.0, 2.0], [1.6, 2.4], [0.01, 0.02], psi=0.5)
>>> ax.get_xlabel()
'spike strength θ'
"""
from __future__ import annotations

import numpy as np

from rmtfl.theory import bgn_outlier, bgn_threshold
from rmtfl.theory import mp_atom, mp_density, mp_edges, mp_sv_edges

__all__ = ["plot_mp_histogram", "plot_bbp_outlier", "plot_bbp_overlaps"]


def _ax(ax, size=(4.6, 3.6)):
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=size)
    return ax


def plot_mp_histogram(eigs, psi: float, *, var: float = 1.0, ax=None, bins: int = 60, title: str = ""):
    """Histogram of the eigenvalues of ``W W^T`` (atom left out) with the MP density (docs/theory/two_step.md §1.1).

    >>> import matplotlib; matplotlib.use("Agg")
    >>> ax = plot_mp_histogram(np.linspace(0.1, 2.9, 100), 0.5)
    >>> ax.get_ylabel()
    'density'
    """
    from rmtfl.numerics import empirical_spectral_density

    ax = _ax(ax)
    lo, hi = mp_edges(psi, var=var)
    esd = empirical_spectral_density(eigs, bins=bins, range=(max(0.0, lo - 0.05 * hi), 1.05 * hi))
    ax.bar(esd.centers, esd.density, width=np.diff(esd.edges), color="0.75", edgecolor="0.5", lw=0.4,
           label=f"ESD (N={esd.n})")
    x = np.linspace(lo, hi, 2000)
    ax.plot(x, mp_density(x, psi, var=var), color="C3", lw=1.6, label="MP density")
    atom = mp_atom(psi)
    ttl = title or f"ψ = N/d = {psi:g}" + (f", atom {atom:.2f} at 0 (not shown)" if atom > 0 else "")
    ax.set(xlabel="eigenvalue of W Wᵀ", ylabel="density", title=ttl)
    ax.legend(fontsize=8, frameon=False)
    return ax


def plot_bbp_outlier(theta, s_mean, s_err, *, psi: float, var: float = 1.0, ax=None, title: str = ""):
    """Top singular value versus ``theta``: BGN curve, bulk edge, threshold and simulated points.

    Normalisation: docs/theory/two_step.md §2.1 (``W0`` entries ``N(0, var/d)``, ``psi = N/d``).

    >>> import matplotlib; matplotlib.use("Agg")
    >>> ax = plot_bbp_outlier([2.0], [2.37], [0.01], psi=0.5)
    >>> len(ax.lines) >= 2
    True
    """
    ax = _ax(ax)
    theta = np.asarray(theta, float)
    grid = np.linspace(0.0, max(1.1 * theta.max(), 2 * bgn_threshold(psi, var=var)), 400)
    ax.plot(grid, bgn_outlier(grid, psi, var=var).singular_value, color="C0", lw=1.5, label="BGN limit")
    ax.axhline(mp_sv_edges(psi, var=var).upper, color="0.5", ls=":", lw=1, label="bulk edge")
    ax.axvline(bgn_threshold(psi, var=var), color="0.5", ls="--", lw=1, label="threshold ψ^¼")
    ax.errorbar(theta, s_mean, yerr=s_err, fmt="o", ms=4, color="C3", capsize=2, label="simulation")
    ax.set(xlabel="spike strength θ", ylabel="top singular value", title=title or f"ψ = {psi:g}")
    ax.legend(fontsize=8, frameon=False)
    return ax


def plot_bbp_overlaps(theta, left, left_err, right, right_err, *, psi: float, var: float = 1.0, ax=None,
                      title: str = ""):
    """Squared overlaps (N side = left, d side = right) versus ``theta``: BGN curves and simulated points.

    Normalisation: docs/theory/two_step.md §2.1; overlaps squared (docs/conventions.md §1).

    >>> import matplotlib; matplotlib.use("Agg")
    >>> ax = plot_bbp_overlaps([2.0], [0.86], [0.01], [0.77], [0.01], psi=0.5)
    >>> bool(ax.get_ylim()[1] >= 1.0)
    True
    """
    ax = _ax(ax)
    theta = np.asarray(theta, float)
    grid = np.linspace(0.0, max(1.1 * theta.max(), 2 * bgn_threshold(psi, var=var)), 400)
    r = bgn_outlier(grid, psi, var=var)
    ax.plot(grid, r.cos2_left, color="C0", lw=1.5, label="BGN cos² left (N side)")
    ax.plot(grid, r.cos2_right, color="C2", lw=1.5, label="BGN cos² right (d side)")
    ax.errorbar(theta, left, yerr=left_err, fmt="o", ms=4, color="C0", mfc="white", capsize=2, label="sim left")
    ax.errorbar(theta, right, yerr=right_err, fmt="s", ms=4, color="C2", mfc="white", capsize=2, label="sim right")
    ax.axvline(bgn_threshold(psi, var=var), color="0.5", ls="--", lw=1)
    ax.set(xlabel="spike strength θ", ylabel="squared overlap", ylim=(-0.02, 1.02), title=title or f"ψ = {psi:g}")
    ax.legend(fontsize=7, frameon=False, loc="lower right")
    return ax
