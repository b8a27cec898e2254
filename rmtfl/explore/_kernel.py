"""Page 3, spiked kernel: the Funk–Hecke spectrum of k0 against the spiked k1, and the Y0/Y2 mixing.

``k0(x, x') = E_w[σ(<w,x>) σ(<w,x'>)]`` with ``w ~ N(0, I)`` on the sphere ``S^{d-1}`` (uniform probability
measure, docs/conventions.md §8) has the Funk–Hecke eigenvalues ``mu_k``; after one large step the weights
are ``N(0, Gamma)``, ``Gamma = A(I + b w* w*^T)`` with ``A = 1`` (docs/theory/spiked_kernel.md), and k1
boosts the linear eigenfunction along ``w*`` and mixes ``Y0`` with the target-aligned ``Y2`` in its top
eigenfunction.  Simulation: Gram matrices ``K/n`` of ``n`` points on the sphere
(:func:`rmtfl.numerics.gram_degree_eigenvalues` for k0, :func:`rmtfl.numerics.gram_alignment` for k1).
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from ._jobs import checkpoint

__all__ = ["PATH", "TITLE", "SUMMARY", "LESSON", "N_MAX", "DEFAULTS", "ACTIVATIONS", "params", "theory",
           "curve", "simulate", "build"]

PATH = "/kernel"
TITLE = "Spiked kernel: one step reshapes the random-features kernel"
SUMMARY = "Funk–Hecke spectrum of k0 against the spiked k1, the linear boost and the Y0/Y2 mixing"
LESSON = "05_kernels_on_sphere.py"
N_MAX = 3000
#: Even part present (an odd sigma such as tanh has no Y0/Y2 sector: its zonal top eigenvalue is 0).
ACTIVATIONS = ["relu", "gelu"]
DEFAULTS = {"activation": "relu", "d": 10, "b": 5.0, "n": 600, "seed": 0}
KMAX = 6
#: Quadrature nodes of the zonal eigenproblem per activation: at d = 8 and 10 the eigenpair agrees with
#: 80-240 nodes to 1e-12 (relu: 0.16 s instead of 1.5 s at the default 160; gelu: 0.3 s instead of 30 s).
ZONAL = {"relu": 60, "gelu": 40}
B_GRID = np.array([0.0, 1.0, 2.5, 5.0, 10.0, 20.0, 35.0, 50.0])


def params(activation, d, b, n, seed) -> dict:
    """The page's inputs, checked (``ValueError`` naming the control and its range)."""
    from ._page import check_float, check_int

    if activation not in ACTIVATIONS:
        raise ValueError(f"activation must be one of {ACTIVATIONS}, got {activation!r}")
    return {"activation": activation, "d": check_int("d", d, 3, 60), "b": check_float("b", b, 0.0, 50.0),
            "n": check_int("n", n, 50, N_MAX), "seed": check_int("seed", seed, 0, 2**31 - 1)}


@lru_cache(maxsize=64)
def _zonal(activation, d, b):
    import rmtfl.theory as th

    nodes = ZONAL[activation]
    return th.zonal_top_eigenfunction(activation, d=d, b=b, n_u=nodes, n_c=nodes)


def theory(p: dict, cancel=None) -> dict:
    """The k0 spectrum, the k1 linear sector and top eigenfunction at ``p`` (deterministic)."""
    import rmtfl.theory as th

    act, d, b = p["activation"], p["d"], p["b"]
    sp = th.sphere_eigenvalues(act, d=d, kmax=KMAX)
    ls = th.linear_sector(act, A=1.0, B=b, d=d, measure="sphere")
    checkpoint(cancel)
    z = _zonal(act, d, b)
    values = {"mu0": float(sp.mu[0]), "mu1": float(sp.mu[1]), "mu2": float(sp.mu[2]),
              "k1_top": float(z.eigenvalue), "cos2_y0": float(z.overlaps[0]), "cos2_y2": float(z.overlaps[2]),
              "linear_target": float(ls.target), "linear_orthogonal": float(ls.orthogonal), "boost": float(ls.boost)}
    return {"values": values, "mu": np.asarray(sp.mu, dtype=float)}


def curve(p: dict, cancel) -> dict:
    """cos²(top eigenfunction, Y0 and Y2) of k1 over a grid of ``b`` (the right-hand plot)."""
    y0, y2 = [], []
    for b in B_GRID:
        checkpoint(cancel)
        z = _zonal(p["activation"], p["d"], float(b))
        y0.append(float(z.overlaps[0]))
        y2.append(float(z.overlaps[2]))
    return {"b": B_GRID, "y0": np.array(y0), "y2": np.array(y2)}


def simulate(p: dict, cancel) -> dict:
    """Gram matrices of ``n`` sphere points: degree blocks of k0, the top eigenvector of k1."""
    import rmtfl.numerics as nm

    rng = np.random.default_rng(p["seed"])
    g0, g1 = rng.spawn(2)
    blocks = nm.gram_degree_eigenvalues(p["activation"], d=p["d"], n=p["n"], degrees=(0, 1, 2), rng=g0)
    checkpoint(cancel)
    g = nm.gram_alignment(p["activation"], d=p["d"], n=p["n"], b=p["b"], rng=g1)
    values = {"mu0": float(blocks.mean[0]), "mu1": float(blocks.mean[1]), "mu2": float(blocks.mean[2]),
              "k1_top": float(g.eigenvalue), "cos2_y0": float(g.cos2_y0), "cos2_y2": float(g.cos2_y2)}
    return {"values": values}


def build(doc) -> None:
    """Fill ``doc`` with the page (a Bokeh application handler)."""
    from bokeh.models import ColumnDataSource, Select, Spinner
    from bokeh.plotting import figure

    from ._jobs import Jobs
    from ._page import Page, values_html

    page = Page(doc, title=TITLE, lesson=LESSON,
                text=("Left: the Funk–Hecke eigenvalues μ_k of the isotropic kernel k0 by degree k (circles; "
                      "Gram-matrix block averages of n sphere points as crosses) and what one large step makes "
                      "of them: k1's linear eigenvalue along w* (boosted) and orthogonal to it, and k1's top "
                      "eigenvalue (diamond; the sampled Gram matrix's top eigenvalue as a cross). Right: how much "
                      "of k1's top eigenfunction lies on Y0 and on the target-aligned Y2 as the spike ratio b "
                      "grows."),
                formula=("k(x, x′) = E_w[σ(⟨w,x⟩)σ(⟨w,x′⟩)], w ~ N(0, Γ), Γ = A(I + b w*w*ᵀ), A = 1; k0: b = 0, "
                         "eigenvalues μ_k with multiplicity N(d, k) (Funk–Hecke; docs/theory/spiked_kernel.md §4, §5)"))
    w = {"activation": Select(title="activation σ", options=ACTIVATIONS, value=DEFAULTS["activation"],
                              name="activation", width=130),
         "d": Spinner(title="d", low=3, high=60, step=1, value=DEFAULTS["d"], name="d", width=90),
         "b": Spinner(title="b = B/A", low=0.0, high=50.0, step=1.0, value=DEFAULTS["b"], name="b", width=100),
         "n": Spinner(title=f"n points (≤ {N_MAX})", low=50, high=N_MAX, step=100, value=DEFAULTS["n"], name="n",
                      width=130),
         "seed": Spinner(title="seed", low=0, high=2**31 - 1, step=1, value=DEFAULTS["seed"], name="seed",
                         width=90)}

    k0 = ColumnDataSource({"k": [], "mu": []})
    k1 = ColumnDataSource({"k": [], "v": [], "what": []})
    top = ColumnDataSource({"k": [], "v": []})
    g0 = ColumnDataSource({"k": [], "mu": []})
    g1 = ColumnDataSource({"k": [], "v": []})
    mix = ColumnDataSource({"b": [], "y0": [], "y2": []})
    here = ColumnDataSource({"b": [], "y0": [], "y2": []})
    meas = ColumnDataSource({"b": [], "y0": [], "y2": []})
    f1 = figure(width=540, height=360, title="kernel eigenvalues by degree", x_axis_label="degree k",
                y_axis_label="eigenvalue", y_axis_type="log", name="spectrum")
    f1.scatter("k", "mu", source=k0, size=9, legend_label="k0: Funk–Hecke μ_k")
    f1.scatter("k", "mu", source=g0, size=12, marker="x", color="black", legend_label="k0: Gram blocks")
    f1.scatter("k", "v", source=k1, size=11, marker="triangle", color="red", legend_label="k1: linear sector")
    f1.scatter("k", "v", source=top, size=12, marker="diamond", color="darkred", legend_label="k1: top eigenvalue")
    f1.scatter("k", "v", source=g1, size=12, marker="cross", color="black", legend_label="k1: Gram top")
    f1.legend.location = "top_right"
    f2 = figure(width=480, height=360, title="top eigenfunction of k1: Y0 / Y2 mixing", x_axis_label="b",
                y_axis_label="cos²", name="mixing")
    f2.line("b", "y2", source=mix, color="red", line_width=2, legend_label="cos²(·, Y2)")
    f2.line("b", "y0", source=mix, color="#1f77b4", line_width=2, legend_label="cos²(·, Y0)")
    f2.scatter("b", "y2", source=here, size=10, color="red")
    f2.scatter("b", "y0", source=here, size=10, color="#1f77b4")
    f2.scatter("b", "y2", source=meas, size=12, marker="x", color="black", legend_label="Gram top eigenvector")
    f2.scatter("b", "y0", source=meas, size=12, marker="x", color="black")
    f2.legend.location = "center_right"

    theory_jobs = Jobs(doc, page.status("theory"), "theory")
    curve_jobs = Jobs(doc, page.status("curve"), "mixing curve")
    sim_jobs = Jobs(doc, page.status("simulation"), "simulation")
    state = {}

    def floor(v):
        return max(float(v), 1e-12)  # log axes: an exact zero (odd degrees of relu) drawn at the floor

    def show_theory(r):
        v = r["values"]
        page.prediction.text = values_html(v)
        mu = r["mu"]
        keep = mu > 1e-14
        k0.data = {"k": np.arange(mu.size)[keep], "mu": mu[keep]}
        k1.data = {"k": [1, 1], "v": [floor(v["linear_target"]), floor(v["linear_orthogonal"])],
                   "what": ["along w*", "orthogonal"]}
        top.data = {"k": [0], "v": [floor(v["k1_top"])]}
        here.data = {"b": [state["p"]["b"]], "y0": [floor(v["cos2_y0"])], "y2": [floor(v["cos2_y2"])]}

    def show_curve(r):
        mix.data = {"b": r["b"], "y0": np.maximum(r["y0"], 1e-12), "y2": np.maximum(r["y2"], 1e-12)}

    def show_sim(r):
        v = r["values"]
        page.measured.text = values_html(v)
        g0.data = {"k": [0, 1, 2], "mu": [floor(v["mu0"]), floor(v["mu1"]), floor(v["mu2"])]}
        g1.data = {"k": [0], "v": [floor(v["k1_top"])]}
        meas.data = {"b": [state["p"]["b"]], "y0": [floor(v["cos2_y0"])], "y2": [floor(v["cos2_y2"])]}

    def submit(p):
        changed = (p["activation"], p["d"]) != state.get("curve_key")
        state["p"] = p
        theory_jobs.submit(lambda cancel: theory(p, cancel), show_theory)
        if changed:
            state["curve_key"] = (p["activation"], p["d"])
            curve_jobs.submit(lambda cancel: curve(p, cancel), show_curve)
        sim_jobs.submit(lambda cancel: simulate(p, cancel), show_sim)

    page.run(w, params, submit, [f1, f2], [theory_jobs, curve_jobs, sim_jobs])
