"""Page 1, MP and BBP: the singular values of a spiked Gaussian matrix beside the Marchenko–Pastur law.

``W = W0 + theta u v^T`` (``N x d``, entries of ``W0`` ``N(0, 1/d)``, ``psi = N/d``).  Theory: the MP
singular-value density (bulk edge ``1 + sqrt(psi)``), the BGN outlier ``s(theta)`` and both squared
overlaps above the threshold ``theta_c = psi^(1/4)``, and the finite-N Tracy–Widom margin
``edge_margin(N, d)`` (docs/theory/classical.md §5).  Simulation: one sampled matrix, its singular
values, top singular triplet and overlaps.
"""
from __future__ import annotations

import numpy as np

from ._jobs import checkpoint

__all__ = ["PATH", "TITLE", "SUMMARY", "LESSON", "N_MAX", "D_MAX", "DEFAULTS", "params", "theory", "simulate",
           "build"]

PATH = "/mp_bbp"
TITLE = "MP and BBP: an outlier leaves the bulk"
SUMMARY = "singular values of W0 + θ u vᵀ, the Marchenko–Pastur law, the BGN outlier and its threshold θ = ψ^¼"
LESSON = "02_bbp.py"
N_MAX, D_MAX = 2000, 4000
DEFAULTS = {"psi": 0.5, "theta": 2.0, "N": 500, "seed": 0}


def params(psi, theta, N, seed) -> dict:
    """The page's inputs, checked (``ValueError`` naming the control and its range)."""
    from ._page import check_float, check_int

    psi = check_float("psi", psi, 0.05, 4.0)
    theta = check_float("theta", theta, 0.0, 20.0)
    N = check_int("N", N, 10, N_MAX)
    seed = check_int("seed", seed, 0, 2**31 - 1)
    d = max(1, int(round(N / psi)))
    if d > D_MAX:
        raise ValueError(f"d = N/psi = {d} exceeds {D_MAX}: lower N or raise psi")
    return {"psi": psi, "theta": theta, "N": N, "d": d, "seed": seed}


def theory(p: dict, cancel=None) -> dict:
    """Predicted numbers and curves for the inputs ``p`` of :func:`params` (deterministic)."""
    import rmtfl.theory as th

    psi, theta = p["psi"], p["theta"]
    out = th.bgn_outlier(theta, psi)
    thr = th.bgn_threshold(psi)
    edges = th.mp_sv_edges(psi)
    margin = th.edge_margin(p["N"], p["d"])
    top = max(edges.upper, float(out.singular_value)) * 1.15
    s = np.linspace(0.0, top, 400)
    dens = th.mp_sv_density(s, psi) * max(1.0, psi)    # law of the min(N, d) nonzero singular values
    thetas = np.linspace(0.0, max(3.0, 1.3 * theta), 300)
    curve = th.bgn_outlier(thetas, psi)
    values = {"outlier": float(out.singular_value), "cos2_left": float(out.cos2_left),
              "cos2_right": float(out.cos2_right), "threshold": float(thr), "edge": float(edges.upper),
              "tw_margin": float(margin), "separated": int(theta > thr)}
    return {"values": values, "s": s, "density": dens, "thetas": thetas, "curve": curve}


def simulate(p: dict, cancel) -> dict:
    """One sampled spiked matrix at the inputs ``p``: its singular values and top triplet's overlaps."""
    import rmtfl.numerics as nm

    sp = nm.spiked_matrix(p["N"], p["d"], p["theta"], rng=p["seed"])
    checkpoint(cancel)
    s = np.sort(np.asarray(nm.singular_values(sp.W)))[::-1]
    checkpoint(cancel)
    top = nm.top_singular_triplets(sp.W, 1, rng=p["seed"])
    cos_l = float(nm.squared_overlaps(top.U, sp.U)[0, 0])
    cos_r = float(nm.squared_overlaps(top.V, sp.V)[0, 0])
    count = int(nm.count_outliers(s, N=p["N"], d=p["d"]))
    values = {"top": float(s[0]), "second": float(s[1]) if s.size > 1 else float("nan"),
              "cos2_left": cos_l, "cos2_right": cos_r, "outliers": count, "N": p["N"], "d": p["d"]}
    return {"values": values, "s": s[: min(p["N"], p["d"])]}


def build(doc) -> None:
    """Fill ``doc`` with the page (a Bokeh application handler)."""
    from bokeh.models import ColumnDataSource, Range1d, Span, Spinner
    from bokeh.plotting import figure

    from ._jobs import Jobs
    from ._page import Page, values_html

    page = Page(doc, title=TITLE, lesson=LESSON,
                text=("Left: the histogram of the singular values of one sampled W = W0 + θ u vᵀ (N × d, "
                      "W0 entries N(0, 1/d), ψ = N/d) against the Marchenko–Pastur density (black), the "
                      "bulk edge 1 + √ψ, the Tracy–Widom margin at this N (dotted: a bulk value exceeds it "
                      "with probability 1 %) and the predicted outlier (red). Right: the BGN curves against θ, "
                      "with the threshold θ_c = ψ^¼ and this draw marked."),
                formula=("s(θ) = √((1 + θ²)(ψ + θ²))/θ for θ > ψ^¼; cos²(û, u) = 1 − ψ(1 + θ²)/(θ²(θ² + ψ)), "
                         "cos²(v̂, v) = 1 − (ψ + θ²)/(θ²(θ² + 1)) (docs/theory/classical.md §2, margin §5)"))
    w = {"psi": Spinner(title="ψ = N/d", low=0.05, high=4.0, step=0.05, value=DEFAULTS["psi"], name="psi",
                        width=110),
         "theta": Spinner(title="θ (spike)", low=0.0, high=20.0, step=0.1, value=DEFAULTS["theta"], name="theta",
                          width=110),
         "N": Spinner(title=f"N (≤ {N_MAX})", low=10, high=N_MAX, step=50, value=DEFAULTS["N"], name="N",
                      width=110),
         "seed": Spinner(title="seed", low=0, high=2**31 - 1, step=1, value=DEFAULTS["seed"], name="seed",
                         width=110)}

    hist = ColumnDataSource({"left": [], "right": [], "top": []})
    dens = ColumnDataSource({"s": [], "y": []})
    curves = ColumnDataSource({"theta": [], "s": [], "cl": [], "cr": []})
    point = ColumnDataSource({"theta": [], "s": [], "cl": [], "cr": []})
    meas = ColumnDataSource({"theta": [], "s": [], "cl": [], "cr": []})
    f1 = figure(width=560, height=360, title="singular values", x_axis_label="s", y_axis_label="density",
                x_range=Range1d(0, 3), y_range=Range1d(0, 1), name="spectrum")
    f1.quad(left="left", right="right", top="top", bottom=0, source=hist, fill_alpha=0.4, line_alpha=0.3,
            legend_label="simulation")
    f1.line("s", "y", source=dens, color="black", line_width=2, legend_label="Marchenko–Pastur")
    edge = Span(location=0, dimension="height", line_color="grey")
    margin = Span(location=0, dimension="height", line_color="grey", line_dash="dotted")
    outl = Span(location=0, dimension="height", line_color="red", line_dash="dashed", line_width=2)
    for span in (edge, margin, outl):
        f1.add_layout(span)
    tops = ColumnDataSource({"s": [], "y": []})
    f1.scatter("s", "y", source=tops, size=10, marker="triangle", color="black", legend_label="top value (this draw)")
    f1.legend.location = "top_right"
    f2 = figure(width=500, height=360, title="BGN: outlier and squared overlaps", x_axis_label="θ",
                name="bgn")
    f2.line("theta", "s", source=curves, color="red", line_width=2, legend_label="s(θ)")
    f2.line("theta", "cl", source=curves, color="#1f77b4", line_width=2, legend_label="cos² left")
    f2.line("theta", "cr", source=curves, color="#1f77b4", line_dash="dashed", line_width=2,
            legend_label="cos² right")
    f2.scatter("theta", "s", source=point, size=9, color="red", marker="circle")
    f2.scatter("theta", "s", source=meas, size=11, color="black", marker="x", legend_label="this draw")
    f2.scatter("theta", "cl", source=meas, size=11, color="black", marker="x")
    f2.scatter("theta", "cr", source=meas, size=11, color="black", marker="cross")
    thr = Span(location=0, dimension="height", line_color="grey", line_dash="dotted")
    f2.add_layout(thr)
    f2.legend.location = "top_left"

    theory_jobs = Jobs(doc, page.status("theory"), "theory")
    sim_jobs = Jobs(doc, page.status("simulation"), "simulation")
    state = {}

    def show_theory(r):
        v = r["values"]
        page.prediction.text = values_html(v)
        dens.data = {"s": r["s"], "y": r["density"]}
        curves.data = {"theta": r["thetas"], "s": np.asarray(r["curve"].singular_value),
                       "cl": np.asarray(r["curve"].cos2_left), "cr": np.asarray(r["curve"].cos2_right)}
        point.data = {"theta": [state["p"]["theta"]], "s": [v["outlier"]], "cl": [v["cos2_left"]],
                      "cr": [v["cos2_right"]]}
        edge.location, margin.location, outl.location = v["edge"], v["tw_margin"], v["outlier"]
        outl.visible = bool(v["separated"])
        thr.location = v["threshold"]
        f1.y_range.end = 1.25 * float(np.max(r["density"]))
        f1.x_range.end = max(float(r["s"][-1]), float(tops.data["s"][0]) * 1.05 if len(tops.data["s"]) else 0.0)

    def show_sim(r):
        v = r["values"]
        page.measured.text = values_html(v)
        top = max(float(r["s"][0]) * 1.05, dens.data["s"][-1] if len(dens.data["s"]) else 0.0)
        counts, bins = np.histogram(r["s"], bins=60, range=(0.0, top), density=True)
        hist.data = {"left": bins[:-1], "right": bins[1:], "top": counts}
        tops.data = {"s": [v["top"]], "y": [0.03 * f1.y_range.end]}
        f1.x_range.end = max(f1.x_range.end, top)
        th_ = state["p"]["theta"]
        meas.data = {"theta": [th_], "s": [v["top"]], "cl": [v["cos2_left"]], "cr": [v["cos2_right"]]}

    def submit(p):
        state["p"] = p
        theory_jobs.submit(lambda cancel: theory(p, cancel), show_theory)
        sim_jobs.submit(lambda cancel: simulate(p, cancel), show_sim)

    page.run(w, params, submit, [f1, f2], [theory_jobs, sim_jobs])
