"""Page 5, your matrix: upload an ``.npy``/``.npz`` and see its spectrum analysed.

The upload is read with ``numpy.load(..., allow_pickle=False)`` (no code in a file is ever run); a
``.npz`` offers each of its 2-D arrays.  The singular values are drawn as a histogram; the analysis is
:func:`rmtfl.analyze` (``SpectrumReport``: the fitted MP bulk ``var``, ``ratio``, ``bulk_edge``, the
KS distance and verdict, and each outlier's singular value, p-value, spike strength ``theta`` and
overlaps), when this version of rmtfl has it; otherwise the page says so.
"""
from __future__ import annotations

import base64
import binascii
import io

import numpy as np

from ._jobs import checkpoint

__all__ = ["PATH", "TITLE", "SUMMARY", "LESSON", "MAX_BYTES", "MAX_ENTRIES", "MAX_SIDE", "read_upload",
           "analysis_function", "analyse", "build"]

PATH = "/matrix"
TITLE = "Your matrix: bulk fit, outliers, spike strengths"
SUMMARY = "upload a weight matrix (.npy/.npz): its singular values, the fitted MP bulk and the outliers"
LESSON = "08_analyze_your_matrix.py"
MAX_BYTES = 128 * 2**20      # upload size
MAX_ENTRIES = 16 * 10**6     # N * d
MAX_SIDE = 4000              # min(N, d): the dense SVD
NOT_AVAILABLE = "analysis not available in this version (rmtfl.analyze is missing); the spectrum alone is shown"


def read_upload(b64: str, filename: str) -> dict:
    """The 2-D real arrays of an uploaded ``.npy``/``.npz`` (base64 text), by name; ``ValueError`` otherwise."""
    name = str(filename or "")
    if not name.lower().endswith((".npy", ".npz")):
        raise ValueError(f"upload a .npy or .npz file, got {name!r}")
    try:
        raw = base64.b64decode(b64 or "", validate=False)
    except (binascii.Error, ValueError):
        raise ValueError(f"{name!r}: the upload could not be decoded") from None
    if not raw:
        raise ValueError(f"{name!r} is empty")
    if len(raw) > MAX_BYTES:
        raise ValueError(f"{name!r} has {len(raw)} bytes; the limit is {MAX_BYTES}")
    try:
        obj = np.load(io.BytesIO(raw), allow_pickle=False)
    except Exception as exc:  # not a numpy file, truncated, or an object array (pickles are refused)
        raise ValueError(f"{name!r} is not a readable .npy/.npz matrix ({type(exc).__name__}: "
                         f"{' '.join(str(exc).split())[:200]})") from None
    if isinstance(obj, np.lib.npyio.NpzFile):
        with obj:
            arrays = {k: obj[k] for k in obj.files}
    else:
        arrays = {"W": obj}
    good, why = {}, []
    for k, a in arrays.items():
        a = np.asarray(a)
        if a.ndim != 2:
            why.append(f"{k}: {a.ndim}-D")
        elif not (np.issubdtype(a.dtype, np.floating) or np.issubdtype(a.dtype, np.integer)):
            why.append(f"{k}: dtype {a.dtype}")
        elif min(a.shape) < 2:
            why.append(f"{k}: shape {a.shape}")
        elif a.size > MAX_ENTRIES or min(a.shape) > MAX_SIDE:
            why.append(f"{k}: shape {a.shape} is beyond the page's limit (N·d ≤ {MAX_ENTRIES}, min(N, d) ≤ "
                       f"{MAX_SIDE}; use rmtfl.analyze in Python)")
        elif not np.all(np.isfinite(a)):
            why.append(f"{k}: contains NaN or infinity")
        else:
            good[k] = a.astype(np.float64, copy=False)
    if not good:
        raise ValueError(f"{name!r} holds no real 2-D matrix ({'; '.join(why) or 'no arrays'})")
    return good


def analysis_function():
    """:func:`rmtfl.analyze`, or ``None`` when this version has no analysis."""
    try:
        import rmtfl

        fn = getattr(rmtfl, "analyze", None)
        if fn is None:
            from rmtfl import analyze as fn  # noqa: F811  (a lazily imported name)
    except ImportError:
        return None
    return fn if callable(fn) else None


def analyse(W: np.ndarray, alpha: float, cancel=None) -> dict:
    """The singular values of ``W`` and, where available, the :func:`rmtfl.analyze` report."""
    import rmtfl.numerics as nm

    s = np.sort(np.asarray(nm.singular_values(W)))[::-1]
    checkpoint(cancel)
    fn = analysis_function()
    out = {"s": s, "shape": tuple(W.shape), "report": None, "values": {"N": W.shape[0], "d": W.shape[1],
                                                                           "top": float(s[0])}}
    if fn is None:
        return out
    rep = fn(W, alpha=alpha)
    values = {"N": W.shape[0], "d": W.shape[1], "var": float(rep.var), "ratio": float(rep.ratio),
              "bulk_edge": float(rep.bulk_edge), "ks": float(rep.ks), "mp_consistent": bool(rep.mp_consistent),
              "outliers": len(rep.outliers)}
    for i, o in enumerate(list(rep.outliers)[:5]):
        values.update({f"s{i + 1}": float(o.singular_value), f"p{i + 1}": float(o.p_value),
                       f"theta{i + 1}": float(o.theta), f"cos2_left{i + 1}": float(o.cos2_left),
                       f"cos2_right{i + 1}": float(o.cos2_right)})
    out.update(report=rep, values=values)
    return out


def build(doc) -> None:
    """Fill ``doc`` with the page (a Bokeh application handler)."""
    from bokeh.models import ColumnDataSource, FileInput, Select, Span, Spinner
    from bokeh.plotting import figure

    from ._jobs import Jobs
    from ._page import Page, check_float, values_html

    page = Page(doc, title=TITLE, lesson=LESSON,
                text=("Upload a matrix W (N × d) as .npy or .npz (nothing in the file is executed). The histogram "
                      "shows its singular values; rmtfl.analyze fits a Marchenko–Pastur bulk (variance and aspect "
                      "ratio), tests it (KS distance), and for each outlier above the fitted edge gives a p-value "
                      "against the Tracy–Widom law, the spike strength θ that would produce it, and the predicted "
                      "overlaps. " + ("" if analysis_function() else NOT_AVAILABLE + ".")),
                formula=("θ from inverting s(θ) = √((1 + θ²)(ψ + θ²))/θ on the fitted bulk "
                         "(docs/theory/classical.md §2)"))
    upload = FileInput(accept=".npy,.npz", name="upload", title="matrix (.npy / .npz)", width=260)
    pick = Select(title="array", options=[], value="", name="array", width=160)
    alpha = Spinner(title="α (test level)", low=1e-4, high=0.5, step=0.01, value=0.05, name="alpha", width=110)
    hist = ColumnDataSource({"left": [], "right": [], "top": []})
    fit = ColumnDataSource({"s": [], "y": []})
    f1 = figure(width=700, height=360, title="singular values", x_axis_label="s", y_axis_label="density",
                name="spectrum")
    f1.quad(left="left", right="right", top="top", bottom=0, source=hist, fill_alpha=0.4, line_alpha=0.3,
            legend_label="your matrix")
    f1.line("s", "y", source=fit, color="black", line_width=2, legend_label="fitted MP bulk")
    edge = Span(location=0, dimension="height", line_color="red", line_dash="dashed", visible=False)
    f1.add_layout(edge)
    jobs = Jobs(doc, page.status("analysis"), "analysis")
    state = {"arrays": {}}
    if analysis_function() is None:
        page.prediction.text = NOT_AVAILABLE

    def show(r):
        s = r["s"]
        k = min(r["shape"])
        counts, bins = np.histogram(s[:k], bins=80, density=True)
        hist.data = {"left": bins[:-1], "right": bins[1:], "top": counts}
        rep = r["report"]
        if rep is None:
            page.prediction.text = NOT_AVAILABLE
            page.measured.text = values_html(r["values"])
            fit.data = {"s": [], "y": []}
            edge.visible = False
            return
        import rmtfl.theory as th

        page.prediction.text = values_html(r["values"])
        page.measured.text = values_html({"N": r["shape"][0], "d": r["shape"][1], "top": float(s[0])})
        grid = np.linspace(0.0, float(bins[-1]), 400)
        psi = float(rep.ratio)
        fit.data = {"s": grid, "y": th.mp_sv_density(grid, psi, var=float(rep.var)) * max(1.0, psi)}
        edge.location, edge.visible = float(rep.bulk_edge), True

    def run():
        W = state["arrays"].get(pick.value)
        if W is None:
            return
        try:
            a = check_float("alpha", alpha.value, 1e-4, 0.5)
        except ValueError as exc:
            page.bad_input(exc)
            return
        page.clear_message()
        jobs.submit(lambda cancel: analyse(W, a, cancel), show)

    def uploaded():
        state["pending"] = False
        try:
            arrays = read_upload(upload.value, upload.filename)
        except ValueError as exc:
            state["arrays"] = {}
            pick.options, pick.value = [], ""
            page.bad_input(exc)
            return
        state["arrays"] = arrays
        names = list(arrays)
        pick.options = names
        if pick.value == names[0]:
            run()
        else:
            pick.value = names[0]   # triggers run()

    def changed(attr, old, new):  # value and filename arrive together: read them once both are set
        if not state.get("pending"):
            state["pending"] = True
            doc.add_next_tick_callback(uploaded)

    upload.on_change("value", changed)
    upload.on_change("filename", changed)
    pick.on_change("value", lambda attr, old, new: run())
    alpha.on_change("value", lambda attr, old, new: run())
    doc.add_root(page.layout([upload, pick, alpha], [f1]))
    doc.on_session_destroyed(lambda ctx: jobs.shutdown())
