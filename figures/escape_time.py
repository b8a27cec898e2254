"""Escape time against delta with the predicted line: L = 2 (slope 1/(2N*)) and L = 3 (T*(w0)/delta).

Left: one linear unit on the docs/theory/gradient_flow.md §14 Check 1 data, ``t_esc`` against ``ln(1/delta)`` with
``ln(1/(delta gamma))/(2N*)``.  Right: square net on the Check 2 data, ``t_esc`` against
``delta`` (log–log) with ``T*(w0)/delta``.  Escape = loss crossing the midpoint between
``L(0)`` and the first-saddle loss; square loss summed (docs/theory/gradient_flow.md §7).

Usage: ``python figures/escape_time.py --out DIR [--quick]``.
"""
from __future__ import annotations

import math
from pathlib import Path


def main(argv=None) -> int:
    from rmtfl.compare._figures import figure_args

    args = figure_args(__doc__, argv)
    import matplotlib.pyplot as plt

    from rmtfl.compare import save_figure
    from rmtfl.numerics import simulate_flow
    from rmtfl.plots._gradient_flow import plot_escape_times
    from rmtfl.theory import escape_time, flow_example

    fig, axs = plt.subplots(1, 2, figsize=(10, 4))
    ex = flow_example("check1")
    kw = dict(activation="identity", N=1)
    d2 = [1e-2, 1e-4, 1e-6] if args.quick else [1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8]
    t2 = [simulate_flow(ex.X, ex.y, delta=d, w0=ex.w0, t_end=40.0, t_eval=[0.0, 40.0],
                        escape_loss=ex.escape_loss, **kw).t_escape for d in d2]
    pr = escape_time(ex.X, ex.y, delta=1.0, w0=ex.w0, **kw)
    plot_escape_times(d2, t2, ax=axs[0], degree=2,
                      predicted=lambda d: math.log(1 / (d * pr.amplitude)) * pr.slope)
    axs[0].set_title(f"L=2 linear unit: slope 1/(2N*) = {pr.slope:.6f} (O(1) offset not predicted)",
                     fontsize=9)
    ex = flow_example("check2")
    kw = dict(activation="square", N=4)
    d3 = [1e-2, 1e-3] if args.quick else [3e-2, 1e-2, 3e-3, 1e-3, 3e-4, 1e-4, 1e-5]
    t3 = [simulate_flow(ex.X, ex.y, delta=d, w0=ex.w0, t_end=3.0 / d, t_eval=[0.0, 3.0 / d],
                        escape_loss=ex.escape_loss, stop_loss=0.3, **kw).t_escape for d in d3]
    Tst = escape_time(ex.X, ex.y, delta=1.0, w0=ex.w0, **kw).blowup_time
    plot_escape_times(d3, t3, ax=axs[1], degree=3, predicted=lambda d: Tst / d)
    axs[1].set_title(f"L=3 square net: T*(w0) = {Tst:.7f}", fontsize=9)
    fig.tight_layout()
    save_figure(fig, Path(args.out) / "escape_time.png",
                {"l2_deltas": d2, "l2_t_esc": t2, "l3_deltas": d3, "l3_t_esc": t3, "T_star": Tst,
                 "slope": pr.slope, "quick": args.quick})
    plt.close(fig)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
