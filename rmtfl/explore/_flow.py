"""Page 4, gradient flow: trajectories from small initialisation collapse under the predicted time shift.

A homogeneous network trained by gradient flow from ``w(0) = delta w0/|w0|`` (summed loss,
docs/conventions.md §9) sits on a plateau, then escapes after the time predicted by
:func:`rmtfl.theory.escape_time` (``T*(w0)/delta^(L-2)`` for ``L > 2``, ``ln(1/(delta gamma))/(2N*)``
for ``L = 2``; docs/theory/gradient_flow.md §7).  Simulation: :func:`rmtfl.numerics.simulate_flow` at
``delta`` and at ``delta/10``; shifting each loss curve by its predicted time collapses them.
"""
from __future__ import annotations

import numpy as np

from ._jobs import checkpoint

__all__ = ["PATH", "TITLE", "SUMMARY", "LESSON", "DEFAULTS", "EXAMPLES", "params", "theory", "simulate", "build"]

PATH = "/flow"
TITLE = "Gradient flow from small initialisation: escape and collapse"
SUMMARY = "loss curves at several δ collapse under the predicted time shift; the predicted escape time"
LESSON = "06_gradient_flow.py"
EXAMPLES = ["check2", "check1", "square5", "relu2", "deep", "logistic"]
DEFAULTS = {"example": "check2", "delta": 1e-3}
WINDOW = (-15.0, 40.0)   # t - shift shown on the collapse plot
T_END_MAX = 1e8          # longest horizon rmtfl.numerics.simulate_flow accepts


def params(example, delta) -> dict:
    """The page's inputs, checked (``ValueError`` naming the control and its range)."""
    from ._page import check_float

    if example not in EXAMPLES:
        raise ValueError(f"example must be one of {EXAMPLES}, got {example!r}")
    delta = check_float("delta", delta, 1e-5, 0.3)
    return {"example": example, "delta": delta}


def _spec(name):
    import rmtfl.theory as th

    ex = th.flow_example(name)
    return ex, {"activation": ex.activation, "N": ex.N, "depth": ex.depth, "loss": ex.loss}


def theory(p: dict, cancel=None) -> dict:
    """Predicted escape times at ``delta`` and ``delta/10`` (deterministic)."""
    import rmtfl.theory as th

    ex, kw = _spec(p["example"])
    e = th.escape_time(ex.X, ex.y, delta=p["delta"], w0=ex.w0, **kw)
    checkpoint(cancel)
    e10 = th.escape_time(ex.X, ex.y, delta=p["delta"] / 10, w0=ex.w0, **kw)
    values = {"escape_time": float(e.time), "escape_time_delta_over_10": float(e10.time), "degree": int(e.degree),
              "ncf_value": float(e.ncf_value)}
    if e.degree > 2:
        values["T_star"] = float(e.blowup_time)
    else:
        values["slope"] = float(e.slope)
    for t in (e.time, e10.time):
        if t + WINDOW[1] > T_END_MAX:
            raise ValueError(f"delta = {p['delta']:g} gives an escape time {t:.3g} beyond the simulated horizon "
                             f"{T_END_MAX:g} for example {p['example']!r} (degree L = {e.degree}): raise delta")
    return {"values": values, "shifts": (float(e.time), float(e10.time)), "convention": e.convention}


def simulate(p: dict, cancel) -> dict:
    """The flow at ``delta`` and ``delta/10``, sampled around each predicted escape time."""
    import rmtfl.numerics as nm
    import rmtfl.theory as th

    ex, kw = _spec(p["example"])
    curves = []
    values = {}
    for key, delta in (("", p["delta"]), ("_delta_over_10", p["delta"] / 10)):
        checkpoint(cancel)
        shift = float(th.escape_time(ex.X, ex.y, delta=delta, w0=ex.w0, **kw).time)
        if shift + WINDOW[1] > T_END_MAX:
            raise ValueError(f"delta = {delta:g} gives an escape time {shift:.3g} beyond the simulated horizon")
        lo = max(WINDOW[0], -0.95 * shift)
        early = np.geomspace(max(1e-3, 1e-3 * shift), shift + lo, 60)[:-1]   # the plateau, for the log-t plot
        t_eval = np.concatenate([early, shift + np.linspace(lo, WINDOW[1], 240)])
        level = ex.escape_loss
        run = nm.simulate_flow(ex.X, ex.y, delta=delta, w0=ex.w0, t_end=float(t_eval[-1]), t_eval=t_eval,
                               escape_loss=level, **kw)
        curves.append({"delta": delta, "t": np.asarray(run.t), "shift": shift, "loss": np.asarray(run.loss),
                       "window": np.asarray(run.t) >= shift + lo})
        values[f"escape_time{key}"] = float(run.t_escape) if level is not None else float("nan")
        values[f"final_loss{key}"] = float(run.loss[-1])
    values["escape_loss"] = float(ex.escape_loss) if ex.escape_loss is not None else float("nan")
    return {"values": values, "curves": curves}


def build(doc) -> None:
    """Fill ``doc`` with the page (a Bokeh application handler)."""
    from bokeh.models import ColumnDataSource, Select, Span, Spinner
    from bokeh.plotting import figure

    from ._jobs import Jobs
    from ._page import Page, values_html

    page = Page(doc, title=TITLE, lesson=LESSON,
                text=("The loss of gradient flow started at δ·w0 (w0 fixed per example; docs/theory/gradient_flow.md "
                      "lists the data) for δ and δ/10. Left, against t: the plateaus end at times orders of "
                      "magnitude apart. Right, against t minus the predicted escape time: the curves fall on one "
                      "δ-independent path. The black line marks the escape loss where the example defines one."),
                formula=("t_esc = T*(w0)/δ^(L−2) for L > 2, t_esc = ln(1/(δγ(w0)))/(2N*) + O(1) for L = 2 "
                         "(L the homogeneity degree, N* the value of the neural correlation function at its KKT point; "
                         "docs/theory/gradient_flow.md §7)"))
    w = {"example": Select(title="example", options=EXAMPLES, value=DEFAULTS["example"], name="example", width=130),
         "delta": Spinner(title="δ (initial scale)", low=1e-5, high=0.3, step=1e-3, value=DEFAULTS["delta"],
                          name="delta", width=130, format="0.[00000]")}
    srcs = [ColumnDataSource({"t": [], "loss": []}) for _ in range(2)]
    raw = [ColumnDataSource({"t": [], "loss": []}) for _ in range(2)]
    f0 = figure(width=500, height=380, title="loss against t (no shift)", x_axis_label="t", x_axis_type="log",
                y_axis_label="loss", name="raw")
    f1 = figure(width=540, height=380, title="loss against t − t_esc(δ)", x_axis_label="t − predicted escape time",
                y_axis_label="loss", name="collapse")
    for k, (color, dash, label) in enumerate(zip(("#1f77b4", "red"), ("solid", "dashed"), ("δ", "δ/10"))):
        f0.line("t", "loss", source=raw[k], color=color, line_dash=dash, line_width=2, legend_label=label)
        f1.line("t", "loss", source=srcs[k], color=color, line_dash=dash, line_width=2, legend_label=label)
    f0.legend.location = "bottom_left"
    zero = Span(location=0.0, dimension="height", line_color="grey", line_dash="dotted")
    level = Span(location=0.0, dimension="width", line_color="black", line_alpha=0.5)
    f1.add_layout(zero)
    f1.add_layout(level)
    f1.legend.location = "top_right"

    theory_jobs = Jobs(doc, page.status("theory"), "theory")
    sim_jobs = Jobs(doc, page.status("simulation"), "simulation")

    def show_theory(r):
        page.prediction.text = values_html(r["values"])

    def show_sim(r):
        page.measured.text = values_html(r["values"])
        for src, src_raw, c in zip(srcs, raw, r["curves"]):
            w = c["window"]
            src.data = {"t": c["t"][w] - c["shift"], "loss": c["loss"][w]}
            src_raw.data = {"t": c["t"], "loss": c["loss"]}
        lv = r["values"]["escape_loss"]
        level.visible = bool(np.isfinite(lv))
        level.location = lv if np.isfinite(lv) else 0.0

    def submit(p):
        theory_jobs.submit(lambda cancel: theory(p, cancel), show_theory)
        sim_jobs.submit(lambda cancel: simulate(p, cancel), show_sim)

    page.run(w, params, submit, [f0, f1], [theory_jobs, sim_jobs])
