"""Gradient flow from small initialisation: loss collapse onto p(t), unit norms, |W| heat-maps.

Two-layer square net (L = 3) on the docs/theory/gradient_flow.md §14 Check 2 data (``X = I_3``, ``N = 4``, fixed ``w0``)
for several ``delta``: (F3) loss against ``t - T*(w0)/delta`` with the limiting path ``p(t)``
(``"blowup"`` convention) overlaid; (F2) per-unit norms at the smallest ``delta`` with
escape and first saddle marked; (F4) ``|[a W]|`` at escape and on the first plateau.
Square loss, summed (docs/theory/gradient_flow.md §13).

Usage: ``python figures/gradient_flow.py --out DIR [--quick]``.
"""
from __future__ import annotations

from pathlib import Path


def main(argv=None) -> int:
    from rmtfl.compare._figures import figure_args

    args = figure_args(__doc__, argv)
    import matplotlib.pyplot as plt
    import numpy as np

    from rmtfl.compare import save_figure
    from rmtfl.numerics import find_plateaus, log_time_grid, simulate_flow
    from rmtfl.plots._gradient_flow import plot_loss_collapse, plot_unit_norms, plot_weight_heatmap
    from rmtfl.theory import escape_time, first_saddle, flow_example, limiting_path

    ex = flow_example("check2")
    X, y, w0 = ex.X, ex.y, ex.w0
    kw = dict(activation="square", N=4)
    deltas = (1e-2, 1e-3) if args.quick else (1e-2, 1e-3, 1e-4)
    Tst = escape_time(X, y, delta=1.0, w0=w0, **kw).blowup_time
    sad = first_saddle(X, y, w0=w0, **kw)
    tt = np.linspace(-15.0, 40.0, 221)
    path = limiting_path(X, y, t=tt, w0=w0, **kw)
    curves = []
    for d in deltas:
        sh = Tst / d
        run = simulate_flow(X, y, delta=d, w0=w0, t_end=sh + tt[-1], t_eval=sh + tt, **kw)
        curves.append((d, tt, run.loss))
    d = deltas[-1]
    run = simulate_flow(X, y, delta=d, w0=w0, t_end=12.0 / d, t_eval=log_time_grid(12.0 / d, n=500, t_min=1.0),
                        escape_loss=0.42, stop_loss=sad.loss - 1e-3, **kw)
    plats = [q for q in find_plateaus(run.t, run.loss, tol=1e-3) if abs(q.level - sad.loss) < 1e-3]
    fig, axs = plt.subplots(2, 2, figsize=(11, 8))
    plot_loss_collapse(curves, path=path, ax=axs[0, 0], saddle_loss=sad.loss)
    axs[0, 0].set_title(f"collapse after the shift T*(w0)/δ, T* = {Tst:.7f} (path accuracy {path.accuracy:.1e})",
                        fontsize=8)
    plot_unit_norms(run.t, run.unit_norms, ax=axs[0, 1], delta=d, t_escape=run.t_escape,
                    t_saddle=plats[0].t_start if plats else None)
    h = ex.N
    k_esc = int(np.searchsorted(run.t, run.t_escape))
    k_mid = int(np.argmin(np.abs(run.t - np.sqrt(plats[0].t_start * plats[0].t_end)))) if plats else -1
    to_mat = lambda w: np.column_stack([w[:h], w[h:].reshape(h, 3)])  # noqa: E731
    plot_weight_heatmap(to_mat(run.w[k_esc]), ax=axs[1, 0], title=f"|[a W]| at escape (t={run.t[k_esc]:.4g})")
    plot_weight_heatmap(to_mat(run.w[k_mid]), ax=axs[1, 1], title=f"|[a W]| on the first plateau (t={run.t[k_mid]:.4g})")
    fig.tight_layout()
    save_figure(fig, Path(args.out) / "gradient_flow.png",
                {"example": "check2", "deltas": list(deltas), "T_star": Tst, "saddle_loss": sad.loss,
                 "convention": "p(t), blowup shift", "quick": args.quick})
    plt.close(fig)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
