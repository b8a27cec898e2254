"""Page 2, one and two steps: the outliers of W2 beside the (α1, α2) phase map.

Two large gradient steps ``W_t = W_{t-1} + eta_t G`` with ``eta_t = N^{alpha_t}`` (``c_t = 1``,
docs/conventions.md §5), ``psi = N/d = 1`` and ``phi = n/d = 2`` (a fresh second batch of the same size,
``phi2 = n2/d = 2``).  Theory: :func:`rmtfl.theory.two_step`
at this ``N`` (the finite-N route where it applies, else N → ∞), the bulk edge, and the Λ map of
:func:`rmtfl.theory.phase_diagram` with the current point marked.  Simulation:
:func:`rmtfl.numerics.simulate_two_step` (every singular value of ``W2``).
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from ._jobs import checkpoint

__all__ = ["PATH", "TITLE", "SUMMARY", "LESSON", "N_MAX", "DEFAULTS", "ACTIVATIONS", "TARGETS", "PSI", "PHI",
           "params", "theory", "simulate", "build"]

PATH = "/steps"
TITLE = "One and two steps: the outliers of W2"
SUMMARY = "two large GD steps η_t = N^α_t: the spikes of W2 and the (α1, α2) map of Λ"
LESSON = "04_two_steps.py"
N_MAX = 1500
PSI, PHI = 1.0, 2.0
ACTIVATIONS = ["tanh", "hermite(0, 1, 0.5)", "erf", "gelu", "relu"]
TARGETS = ["hermite(0, 1, 0.7071067811865476)", "linear", "he2", "tanh"]
DEFAULTS = {"activation": "tanh", "target": "hermite(0, 1, 0.7071067811865476)", "alpha1": 0.3, "alpha2": 0.15,
            "batch": "reused", "N": 400, "seed": 0}
GRID = np.round(np.arange(0.0, 0.5, 0.02), 2)


def params(activation, target, alpha1, alpha2, batch, N, seed) -> dict:
    """The page's inputs, checked (``ValueError`` naming the control and its range)."""
    from ._page import check_float, check_int

    if activation not in ACTIVATIONS:
        raise ValueError(f"activation must be one of {ACTIVATIONS}, got {activation!r}")
    if target not in TARGETS:
        raise ValueError(f"target must be one of {TARGETS}, got {target!r}")
    if batch not in ("reused", "fresh"):
        raise ValueError(f"batch must be 'reused' or 'fresh', got {batch!r}")
    a1 = check_float("alpha1", alpha1, 0.0, 0.5, open_hi=True)
    a2 = check_float("alpha2", alpha2, 0.0, 0.5, open_hi=True)
    N = check_int("N", N, 20, N_MAX)
    seed = check_int("seed", seed, 0, 2**31 - 1)
    d = int(round(N / PSI))
    return {"activation": activation, "target": target, "alpha1": a1, "alpha2": a2, "batch": batch, "N": N,
            "d": d, "n": int(round(PHI * d)), "seed": seed,
            "eta1": float(N) ** a1, "eta2": float(N) ** a2}


@lru_cache(maxsize=16)
def _map(activation, target, batch):
    import rmtfl.theory as th

    return th.phase_diagram(GRID, GRID, activation=activation, target=target, batch=batch, phi=PHI)


@lru_cache(maxsize=256)
def _two_step(activation, target, eta1, eta2, batch, N):
    import rmtfl.theory as th

    return th.two_step(activation, target, psi=PSI, phi=PHI, eta1=eta1, eta2=eta2, batch=batch, N=N,
                       phi2=PHI if batch == "fresh" else None)


def theory(p: dict, cancel=None) -> dict:
    """Predicted outliers of W2 at ``p`` (:func:`params`) and the Λ map (deterministic).

    The finite-N route of :func:`rmtfl.theory.two_step` (relu and smooth non-quadratic σ) costs ~0.1-0.6 s per
    point; results are cached, so a point seen before redraws at once.
    """
    import rmtfl.theory as th

    pred = _two_step(p["activation"], p["target"], p["eta1"], p["eta2"], p["batch"], p["N"])
    checkpoint(cancel)
    pd = _map(p["activation"], p["target"], p["batch"])
    count = th.outlier_count(p["alpha1"], p["alpha2"])
    values = {"outliers": len(pred.outliers)}
    if pred.count_range is not None and pred.count_range[0] != pred.count_range[1]:
        # single extreme samples: the count varies from batch to batch (docs/theory/two_step.md §8.3)
        values["outliers_over_batches"] = f"{pred.count_range[0]}-{pred.count_range[1]}"
    if not pred.reliable:
        # the prediction's own verdict, with its first reason (docs/theory/two_step.md §9.3, "What the result flags")
        values["unreliable"] = pred.reasons[0].split(" (docs/")[0] if pred.reasons else "yes"
    for i, o in enumerate(pred.outliers[:4]):
        values[f"s{i + 1}"] = float(o.singular_value)
        values[f"cos2_target{i + 1}"] = float(o.cos2_target)
    values.update({"bulk_edge": float(pred.bulk_edge), "Lambda": int(count.count),
                   "eta1": p["eta1"], "eta2": p["eta2"], "mode": str(pred.mode)})
    return {"values": values, "map": np.asarray(pd.Lambda, dtype=float), "pred": pred}


def simulate(p: dict, cancel) -> dict:
    """One two-step run at ``p``: every singular value of W2 and the measured outliers."""
    import rmtfl.numerics as nm

    checkpoint(cancel)
    r = nm.simulate_two_step(p["activation"], p["target"], N=p["N"], d=p["d"], n=p["n"], eta1=p["eta1"],
                             eta2=p["eta2"], batch=p["batch"], rng=p["seed"],
                             n2=p["n"] if p["batch"] == "fresh" else None)
    checkpoint(cancel)
    s = np.sort(np.asarray(r.singular_values))[::-1]
    values = {"outliers": int(r.outlier_count), "edge": float(r.edge)}
    for i in range(min(3, s.size)):
        values[f"s{i + 1}"] = float(s[i])
    return {"values": values, "s": s}


def build(doc) -> None:
    """Fill ``doc`` with the page (a Bokeh application handler)."""
    from bokeh.models import ColumnDataSource, Select, Span, Spinner
    from bokeh.plotting import figure

    from ._jobs import Jobs
    from ._page import Page, values_html

    page = Page(doc, title=TITLE, lesson=LESSON,
                text=("Left: the singular values of W2 after two large gradient steps η_t = N^α_t (ψ = N/d = 1, "
                      "φ = n/d = 2, one sampled run) with the predicted outliers (red, dashed; at this N where the "
                      "finite-N prediction applies, else N → ∞) and the bulk edge (grey). Right: the number Λ of "
                      "extra outliers over (α1, α2) for this activation and target, with the current point. Move "
                      "α2 across ½ − α1 and watch the second spike appear: at a finite N it clears the bulk earlier "
                      "(quadratic σ) or later (tanh) than the asymptotic line, as lesson 4 shows."),
                formula=("Λ(α1, α2) = min(L − 1, ⌊α2 / (½ − α1)⌋) (docs/theory/two_step.md §6; the outliers "
                         "at a finite N: docs/theory/two_step.md §8.2)"))
    w = {"activation": Select(title="activation σ", options=ACTIVATIONS, value=DEFAULTS["activation"],
                              name="activation", width=170),
         "target": Select(title="target g", options=TARGETS, value=DEFAULTS["target"], name="target", width=250),
         "alpha1": Spinner(title="α1", low=0.0, high=0.49, step=0.05, value=DEFAULTS["alpha1"], name="alpha1",
                           width=90),
         "alpha2": Spinner(title="α2", low=0.0, high=0.49, step=0.05, value=DEFAULTS["alpha2"], name="alpha2",
                           width=90),
         "batch": Select(title="batch", options=["reused", "fresh"], value=DEFAULTS["batch"], name="batch",
                         width=100),
         "N": Spinner(title=f"N (≤ {N_MAX})", low=20, high=N_MAX, step=100, value=DEFAULTS["N"], name="N",
                      width=110),
         "seed": Spinner(title="seed", low=0, high=2**31 - 1, step=1, value=DEFAULTS["seed"], name="seed",
                         width=90)}

    hist = ColumnDataSource({"left": [], "right": [], "top": []})
    marks = ColumnDataSource({"s": [], "y": []})
    preds = ColumnDataSource({"s": [], "y0": [], "y1": []})
    img = ColumnDataSource({"image": [], "x": [], "y": [], "dw": [], "dh": []})
    point = ColumnDataSource({"a1": [], "a2": []})
    f1 = figure(width=560, height=360, title="singular values of W2", x_axis_label="s", y_axis_label="count",
                name="spectrum")
    f1.quad(left="left", right="right", top="top", bottom=0, source=hist, fill_alpha=0.4, line_alpha=0.3,
            legend_label="simulation")
    f1.scatter("s", "y", source=marks, size=10, marker="triangle", color="black", legend_label="top values")
    f1.segment(x0="s", x1="s", y0="y0", y1="y1", source=preds, color="red", line_dash="dashed", line_width=2,
               legend_label="predicted outliers")
    edge = Span(location=0, dimension="height", line_color="grey")
    f1.add_layout(edge)
    f2 = figure(width=420, height=360, title="Λ (extra outliers) over (α1, α2)", x_axis_label="α1",
                y_axis_label="α2", x_range=(0, 0.5), y_range=(0, 0.5), name="phase_map")
    f2.image(image="image", x="x", y="y", dw="dw", dh="dh", source=img, palette="Viridis256")
    f2.line([0, 0.5], [0.5, 0], color="white", line_dash="dashed")
    f2.scatter("a1", "a2", source=point, size=14, marker="star", color="red", line_color="white")

    theory_jobs = Jobs(doc, page.status("theory"), "theory")
    sim_jobs = Jobs(doc, page.status("simulation"), "simulation")
    state = {}

    def show_theory(r):
        page.prediction.text = values_html(r["values"])
        s = [o.singular_value for o in r["pred"].outliers]
        top = max(hist.data["top"]) if len(hist.data["top"]) else 10.0
        preds.data = {"s": s, "y0": [0.0] * len(s), "y1": [top] * len(s)}
        edge.location = r["values"]["bulk_edge"]
        m = r["map"]
        step = float(GRID[1] - GRID[0])
        img.data = {"image": [np.minimum(m, 6.0)], "x": [-step / 2], "y": [-step / 2],
                    "dw": [step * m.shape[1]], "dh": [step * m.shape[0]]}
        point.data = {"a1": [state["p"]["alpha1"]], "a2": [state["p"]["alpha2"]]}

    def show_sim(r):
        page.measured.text = values_html(r["values"])
        s = r["s"]
        top_s = max(float(s[0]), max(preds.data["s"], default=0.0)) * 1.05
        counts, bins = np.histogram(s, bins=80, range=(0.0, top_s))
        hist.data = {"left": bins[:-1], "right": bins[1:], "top": counts}
        k = min(3, s.size)
        marks.data = {"s": s[:k], "y": [1.0] * k}
        preds.data = dict(preds.data, y1=[float(counts.max())] * len(preds.data["s"]))

    def submit(p):
        state["p"] = p
        theory_jobs.submit(lambda cancel: theory(p, cancel), show_theory)
        sim_jobs.submit(lambda cancel: simulate(p, cancel), show_sim)

    page.run(w, params, submit, [f1, f2], [theory_jobs, sim_jobs])
