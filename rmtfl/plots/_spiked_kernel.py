"""Plots of the spiked-kernel part: spectra by degree, ``Y_2`` alignment, test error versus width.

Eigenvalues are w.r.t. the input probability measure (docs/conventions.md §8); Gram
eigenvalues are those of ``K/n``.  Overlaps are squared (docs/conventions.md §1):
the alignment plot shows ``cos^2(phi_top, Y_2) = <phi_top, Y_2>^2``.

Examples
--------
>>> import numpy as np, matplotlib
>>> matplotlib.use("Agg")
>>> ax = plot_y2_alignment([0, 5, 10], [0, 0.04, 0.09], [0, 5], [0.001, 0.045], [0.001, 0.004])
>>> ax.get_xlabel(), ax.get_ylabel().startswith("squared overlap")
('spike ratio b = B/A', True)
"""
from __future__ import annotations

import numpy as np

__all__ = ["plot_degree_spectrum", "plot_y2_alignment", "plot_test_error"]


def _ax(ax, size=(4.6, 3.6)):
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=size)
    return ax


def plot_degree_spectrum(gram_k0, gram_k1, levels, *, ax=None, k1_levels=None, title: str = ""):
    """Sorted Gram eigenvalues of ``k_0`` and ``k_1`` (log scale) with predicted levels.

    Parameters
    ----------
    gram_k0, gram_k1 : array
        Top Gram eigenvalues (descending) of ``K_0/n`` and ``K_1/n``.
    levels : dict
        ``{label: value}`` horizontal lines for ``k_0`` (e.g. ``"mu_2 (N=54)"``).
    k1_levels : dict, optional
        ``{label: value}`` predicted ``k_1`` eigenvalues (dashed).

    Eigenvalues w.r.t. the input probability measure (docs/conventions.md §8).

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> ax = plot_degree_spectrum([0.17, 0.025, 0.025], [0.4, 0.15, 0.02], {"mu_0": 0.167})
    >>> ax.get_yscale(), ax.get_xlabel()
    ('log', 'eigenvalue index')
    """
    ax = _ax(ax)
    i0 = np.arange(1, len(gram_k0) + 1)
    i1 = np.arange(1, len(gram_k1) + 1)
    ax.semilogy(i0, gram_k0, "o", ms=3, color="C0", label="Gram $k_0$")
    ax.semilogy(i1, gram_k1, "s", ms=3, mfc="none", color="C3", label="Gram $k_1$")
    for j, (lab, val) in enumerate(levels.items()):
        ax.axhline(val, color="C0", lw=0.8, alpha=0.7)
        ax.text(i0[-1] * 1.01, val, lab, va="center", fontsize=7, color="C0")
    for lab, val in (k1_levels or {}).items():
        ax.axhline(val, color="C3", lw=0.8, ls="--", alpha=0.8)
        ax.text(1.5, val * 1.08, lab, fontsize=7, color="C3")
    ax.set_xlabel("eigenvalue index")
    ax.set_ylabel("eigenvalue of $K/n$")
    ax.set_title(title)
    ax.legend(fontsize=8, loc="lower left")
    return ax


def plot_y2_alignment(b_curve, y2_curve, b_points, y2_mean, y2_se, *, ax=None, first_order=None,
                      title: str = "", label_curve: str = "zonal operator"):
    """Squared overlap ``cos^2(phi_top, Y_2) = <phi_top, Y_2>^2`` versus ``b``: Gram points (mean ± s.e.
    over seeds of the squared overlap) over the operator curve ``<f, Y_2>^2``.

    ``first_order`` (optional) is the first-order curve ``sin^2 theta_mix`` with ``tan theta_mix = b eps/b``
    (docs/theory/spiked_kernel.md §5.3); overlaps squared (docs/conventions.md §1).

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> ax = plot_y2_alignment([0, 10], [0, 0.1], [10], [0.09], [0.01], first_order=[0, 0.12])
    >>> len(ax.get_lines()) >= 2
    True
    """
    ax = _ax(ax)
    ax.plot(b_curve, y2_curve, "-", color="k", lw=1.2, label=label_curve)
    if first_order is not None:
        fo = np.asarray(first_order, dtype=float)
        ax.plot(b_curve, fo, ":", color="gray", lw=1, label="first order")
    ax.errorbar(b_points, y2_mean, yerr=y2_se, fmt="o", color="C3", ms=4, capsize=2, label="Gram top eigenvector")
    ax.set_xlabel("spike ratio b = B/A")
    ax.set_ylabel(r"squared overlap $\cos^2(\varphi_{\rm top}, Y_2)$")
    # the first-order line leaves the plot once b eps/b ~ 1; scale to the curve and the points
    top = max(np.nanmax(np.asarray(y2_curve, dtype=float)),
              np.nanmax(np.asarray(y2_mean, dtype=float) + np.asarray(y2_se, dtype=float)))
    ax.set_ylim(0, 1.3 * top if top > 0 else 1.0)
    ax.set_title(title)
    ax.legend(fontsize=8)
    return ax


def plot_test_error(N, nn, nn_se, kernels: dict, *, ax=None, rf=None, rf_se=None, title: str = ""):
    """Test MSE versus width ``N`` (log x): one-step network and RF at init, KRR baselines as lines.

    ``kernels`` maps a label to ``(mean, se)`` (e.g. :class:`rmtfl.numerics.KernelBaseline`); test MSE
    against the noise-free target (docs/theory/spiked_kernel.md §7.2).

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> ax = plot_test_error([64, 256], [0.4, 0.3], [0.01, 0.01], {"k0": (0.5, 0.02)})
    >>> ax.get_xlabel()
    'width N'
    """
    ax = _ax(ax)
    N = np.asarray(N, dtype=float)
    ax.errorbar(N, nn, yerr=nn_se, fmt="o-", color="C3", ms=4, capsize=2, label="one-step NN")
    if rf is not None:
        ax.errorbar(N, rf, yerr=rf_se, fmt="s-", color="C7", ms=4, capsize=2, label="RF at init")
    styles = {"k0": ("C0", "-"), "k1_target": ("C2", "--"), "k1_hhat": ("C1", "-.")}
    names = {"k0": "KRR $k_0$", "k1_target": r"KRR $k_1(\beta^*)$", "k1_hhat": r"KRR $k_1(\hat h)$"}
    for key, (mean, se) in kernels.items():
        col, ls = styles.get(key, ("k", "-"))
        ax.axhline(mean, color=col, ls=ls, lw=1.2, label=names.get(key, key))
        ax.axhspan(mean - se, mean + se, color=col, alpha=0.12, lw=0)
    ax.set_xscale("log")
    ax.set_xlabel("width N")
    ax.set_ylabel("test MSE")
    ax.set_title(title)
    ax.legend(fontsize=8)
    return ax
