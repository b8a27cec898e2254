"""Plots of the gradient-flow part (docs/theory/gradient_flow.md §13).  Each takes ``ax=None``,
returns the Axes and never calls ``plt.show()``.

Time axes: flow time ``t`` (docs/conventions.md §9); "shifted" means ``t - T_delta(w0)``
with ``T_delta`` of docs/theory/gradient_flow.md §8 (limiting-path convention ``"blowup"``).
"""
from __future__ import annotations

import numpy as np

__all__ = ["plot_loss_collapse", "plot_unit_norms", "plot_weight_heatmap", "plot_escape_times"]


def _ax(ax):
    if ax is None:
        import matplotlib.pyplot as plt

        ax = plt.figure(figsize=(5.5, 4)).add_subplot()
    return ax


def plot_loss_collapse(runs, *, path=None, ax=None, saddle_loss=None):
    """Loss against shifted time for several ``delta`` with ``p(t)`` overlaid (docs/theory/gradient_flow.md §8).

    ``runs``: list of ``(delta, t_shifted, loss)``; ``path``: a
    :class:`~rmtfl.theory.LimitingPath` (its ``t`` and ``loss``).

    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> ax = plot_loss_collapse([(1e-2, [0.0, 1.0], [1.0, 0.5])], saddle_loss=0.5)
    >>> ax.get_xlabel()
    't − T_δ(w0)'
    """
    ax = _ax(ax)
    for delta, ts, loss in runs:
        ax.plot(ts, loss, lw=1.6, alpha=0.8, label=f"flow, δ={delta:g}")
    if path is not None:
        ax.plot(path.t, path.loss, "k--", lw=1.2, label=f"p(t) ({path.convention} shift)")
    if saddle_loss is not None:
        ax.axhline(saddle_loss, color="gray", lw=0.8, ls=":", label="first-saddle loss")
    ax.set_xlabel("t − T_δ(w0)")
    ax.set_ylabel("loss (sum)")
    ax.legend(fontsize=8)
    return ax


def plot_unit_norms(t, norms, *, ax=None, delta=None, t_escape=None, t_saddle=None):
    """Per-unit norms ``nu_j(t)`` (log–log, ``t > 0``) with ``delta``, ``10 delta`` and event markers
    (docs/theory/gradient_flow.md §11).

    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> ax = plot_unit_norms([0.0, 1.0, 10.0], [[1e-3, 1e-3], [1e-2, 1e-3], [1.0, 2e-3]], delta=1e-3)
    >>> len(ax.get_lines())       # two units, delta and 10 delta
    4
    """
    ax = _ax(ax)
    t, norms = np.asarray(t, float), np.asarray(norms)
    keep = t > 0
    t, norms = t[keep], norms[keep]
    for j in range(norms.shape[1]):
        ax.plot(t, norms[:, j], lw=1.4, label=f"unit {j + 1}")
    if delta is not None:
        ax.axhline(delta, color="gray", lw=0.7, ls=":")
        ax.axhline(10 * delta, color="gray", lw=0.7, ls="--", label="δ, 10δ")
    if t_escape is not None and np.isfinite(t_escape):
        ax.axvline(t_escape, color="C3", lw=0.8, label="escape")
    if t_saddle is not None and np.isfinite(t_saddle):
        ax.axvline(t_saddle, color="k", lw=0.8, ls="-.", label="first saddle")
    ax.set_yscale("log")
    ax.set_xscale("log")
    ax.set_xlabel("t")
    ax.set_ylabel("unit norm ν_j")
    ax.legend(fontsize=7, ncol=2)
    return ax


def plot_weight_heatmap(M, *, ax=None, title="", log=True):
    """``|M|`` as a heat-map (e.g. ``[a | W]`` with one row per hidden unit).

    ``log=True`` uses a logarithmic colour scale (floor ``1e-12``) so that ``O(delta)``
    entries stay visible next to ``O(1)`` ones; exact zeros show at the floor.  Rows follow the
    packing of docs/conventions.md §9.

    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> plot_weight_heatmap([[1.0, 0.0], [1e-4, 2.0]], title="[a W]").get_title()
    '[a W]'
    """
    ax = _ax(ax)
    A = np.abs(np.asarray(M, dtype=float))
    norm = None
    if log:
        from matplotlib.colors import LogNorm

        A = np.maximum(A, 1e-12)
        norm = LogNorm(vmin=max(A.min(), 1e-12), vmax=A.max())
    im = ax.imshow(A, cmap="magma", aspect="auto", norm=norm)
    ax.figure.colorbar(im, ax=ax, fraction=0.046)
    ax.set_title(title, fontsize=9)
    ax.set_xlabel("column (a, then inputs)")
    ax.set_ylabel("hidden unit")
    return ax


def plot_escape_times(deltas, t_esc, *, predicted=None, degree=2, ax=None):
    """Measured escape times against ``delta`` with the predicted curve.

    ``L = 2``: ``t_esc`` against ``ln(1/delta)`` (linear axis); ``L > 2``: log–log
    (docs/theory/gradient_flow.md §7).  ``predicted``: callable ``delta -> t`` (or ``None``).

    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> plot_escape_times([1e-2, 1e-3], [5.0, 7.0], degree=2).get_xlabel()
    'ln(1/δ)'
    """
    ax = _ax(ax)
    d = np.asarray(deltas, float)
    if degree == 2:
        x = np.log(1 / d)
        ax.plot(x, t_esc, "o", label="measured")
        if predicted is not None:
            xs = np.linspace(x.min() * 0.9, x.max() * 1.05, 50)
            ax.plot(xs, [predicted(np.exp(-v)) for v in xs], "k--", lw=1, label="predicted")
        ax.set_xlabel("ln(1/δ)")
    else:
        ax.loglog(d, t_esc, "o", label="measured")
        if predicted is not None:
            ds = np.geomspace(d.min() * 0.7, d.max() * 1.4, 50)
            ax.loglog(ds, [predicted(v) for v in ds], "k--", lw=1, label="T*(w0)/δ^(L−2)")
        ax.set_xlabel("δ")
    ax.set_ylabel("escape time")
    ax.legend(fontsize=8)
    return ax
