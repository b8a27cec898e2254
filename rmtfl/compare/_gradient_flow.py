"""Verify checks of the gradient-flow part (docs/theory/gradient_flow.md; data of §14).

Predictions come from :mod:`rmtfl.theory` (KKT points, escape times, the limiting path,
the first saddle); measurements from :func:`rmtfl.numerics.simulate_flow`.  The
flows are deterministic (fixed initial directions of docs/theory/gradient_flow.md §14), so there is no sampling
error: tolerances are set by the known finite-``delta`` corrections and the integrator
accuracy, stated in each row's note.
"""
from __future__ import annotations

import math

import numpy as np

from ._core import compare, compare_bool
from ._verify import Check

__all__ = ["checks"]

PART = "gradient-flow"


# ------------------------------------------------------------------- KKT points
def _run_kkt(ctx):
    from rmtfl.theory import flow_example, ncf_kkt

    rows = []
    cases = [("check1", "linear one unit", 1.0), ("check2", "square L=3", 1.0), ("relu2", "relu^2 L=3", 1.0)]
    if ctx.level != "quick":
        cases.append(("deep", "deep [3,4,4,1] z^2 L=7", 1.0))
    for name, label, _ in cases:
        ex = flow_example(name)
        closed = ncf_kkt(ex.X, ex.y, method="closed", **ex.settings)
        found = ncf_kkt(ex.X, ex.y, method="search", restarts=ctx.pick(8, 20, 30), **ex.settings)
        rows.append(compare(PART, f"N* {label}: closed form vs search", closed.value, found.value,
                            tolerance=1e-8, note=f"closed form '{closed.method}' (docs/theory/gradient_flow.md §5) vs L-BFGS + Newton "
                            f"search from {ctx.pick(8, 20, 30)} fixed Sobol directions; acceptance 1e-8"))
        if name != "check1":
            rows.append(compare_bool(PART, f"KKT {label}: one active unit per layer", "single path/neuron",
                                     f"{found.all[0].active_units} active", found.all[0].active_units == ex.depth - 1,
                                     note="docs/theory/gradient_flow.md §5.2/§5.3 single-neuron (single-path) structure of every maximum"))
    ex = flow_example("check1")
    k = ncf_kkt(ex.X, ex.y, **ex.settings)
    rows.append(compare(PART, "N* check 1 vs reference value", 0.5632717, k.value, tolerance=5e-8,
                        note="docs/theory/gradient_flow.md §14 Check 1 (7 digits quoted)"))
    rows.append(compare(PART, "Delta check 1 = 2N* (Riemannian Hessian)", 2 * k.value, k.margin, tolerance=1e-6,
                        note="central-difference Hessian (step 1e-6), docs/theory/gradient_flow.md §5.1"))
    ex = flow_example("check2")
    k = ncf_kkt(ex.X, ex.y, **ex.settings)
    rows.append(compare(PART, "N* check 2 = 2/(3 sqrt 3) |lambda_1|", 2 / (3 * math.sqrt(3)), k.value,
                        tolerance=1e-12, note="docs/theory/gradient_flow.md §5.2 square activation, X = I_3"))
    rows.append(compare(PART, "Delta check 2 = 3N* (Riemannian Hessian)", 3 * k.value, k.margin, tolerance=1e-6,
                        note="tangent eigenvalues / N* in {-6,-4.5,-3.9,-3}"))
    rows.append(compare_bool(PART, "check 2 local maxima", "{0.3849, 0.19245}",
                             str([round(p.value, 5) for p in k.all]),
                             len(k.all) == 2 and abs(k.all[1].value - k.value / 2) < 1e-8,
                             note="docs/theory/gradient_flow.md §14 Check 2: the 20 search starts find exactly these two 1-sparse maxima"))
    return rows


# ------------------------------------------------------------------ L = 2 flow
def _run_l2(ctx):
    from rmtfl.numerics import path_distance, simulate_flow
    from rmtfl.theory import escape_time, flow_example, limiting_path, ncf_kkt

    ex = flow_example("check1")
    X, y, w0, kw = ex.X, ex.y, ex.w0, ex.settings
    rows = []
    deltas = [1e-4, 1e-6, 1e-8]
    t_esc = []
    for d in deltas:
        run = simulate_flow(X, y, delta=d, w0=w0, t_end=40.0, escape_loss=ex.escape_loss, t_eval=[0.0, 40.0], **kw)
        t_esc.append(run.t_escape)
    pred = escape_time(X, y, delta=1e-4, w0=w0, **kw)
    slope = np.polyfit(np.log(1 / np.array(deltas)), t_esc, 1)[0]
    rows.append(compare(PART, "L=2 escape slope d t_esc / d ln(1/delta)", pred.slope, slope, tolerance=1e-4,
                        note="docs/theory/gradient_flow.md §7.1: slope 1/(2N*); deltas 1e-4, 1e-6, 1e-8; reference tolerance 1e-4 (docs/theory/gradient_flow.md §14)"))
    rows.append(compare(PART, "L=2 t_esc(1e-4) vs reference value", 8.38846, t_esc[0], tolerance=2e-5,
                        note="docs/theory/gradient_flow.md §14 Check 1 (threshold midway between L(0) and L_inf)"))
    rows.append(compare(PART, "L=2 gamma(w0) = <u*, w0>", 0.571976, pred.amplitude, tolerance=1e-6,
                        note="docs/theory/gradient_flow.md §14 Check 1"))
    # trajectory error against p(t) after the shift
    k = ncf_kkt(X, y, **kw)
    Nst = k.value
    tt = np.linspace(-3.0, 6.0, ctx.pick(31, 61, 91))
    path = limiting_path(X, y, t=tt + math.log(pred.amplitude) / (2 * Nst), w0=w0, estimate_error=False, **kw)
    errs = []
    runs = []
    dl = [1e-2, 1e-3, 1e-4]
    for d in dl:
        sh = math.log(1 / d) / (2 * Nst)
        run = simulate_flow(X, y, delta=d, w0=w0, t_end=sh + 6.0, t_eval=sh + tt, **kw)
        errs.append(float(path_distance(run, path.points).max()))
        runs.append((d, tt, run.loss))
    expo = np.polyfit(np.log(dl), np.log(errs), 1)[0]
    rows.append(compare(PART, "L=2 sup|w - p| exponent in delta", 1.0, expo, tolerance=0.1,
                        note=f"docs/theory/gradient_flow.md §8: errors {', '.join(f'{e:.3g}' for e in errs)} for delta 1e-2..1e-4 "
                             f"(reference 8.12e-3, -4, -5, docs/theory/gradient_flow.md §14); acceptance: at least linear"))
    bound = k.margin / (k.margin + 8 * Nst)
    rows.append(compare_bool(PART, "L=2 rate beats the paper bound", f">= {bound:.3f}", f"{expo:.3f}",
                             expo >= bound, note="Theorem 4 exponent Delta/(Delta + 8N*) is an upper bound"))
    rows.append(compare(PART, "L=2 error at delta=1e-2 vs reference value", 8.12e-3, errs[0], tolerance=1e-4,
                        note="docs/theory/gradient_flow.md §14 Check 1 (3 digits quoted)"))
    rows.append(compare_bool(PART, "L=2 conservation a^2 - |w|^2", "drift <= 1e-10", f"{run.conserved_drift:.2e}",
                             run.conserved_drift <= 1e-10, note="docs/theory/gradient_flow.md §6 balance law; DOP853 rtol 1e-11"))
    if ctx.out is not None:
        import matplotlib.pyplot as plt

        from rmtfl.plots._gradient_flow import plot_escape_times, plot_loss_collapse

        fig, axs = plt.subplots(1, 2, figsize=(10, 4))
        plot_loss_collapse([(d, tt, lo) for d, _, lo in runs],
                           path=_shift_path(path, -math.log(pred.amplitude) / (2 * Nst)), ax=axs[0])
        plot_escape_times(deltas, t_esc, ax=axs[1], degree=2,
                          predicted=lambda d: math.log(1 / (d * pred.amplitude)) * pred.slope)
        axs[1].set_title("offset O(1) not predicted; slope 1/(2N*)", fontsize=8)
        fig.tight_layout()
        ctx.save_figure("gradient_flow_l2", fig, {"example": "check1", "deltas": deltas, "errors": errs})
    return rows


def _shift_path(path, dt):
    from dataclasses import replace

    return replace(path, t=path.t + dt)


# ------------------------------------------------------------------ L = 3 flow
def _run_l3(ctx):
    from rmtfl.numerics import find_plateaus, log_time_grid, simulate_flow
    from rmtfl.theory import escape_time, first_saddle, flow_example

    ex = flow_example("check2")
    X, y, w0, kw = ex.X, ex.y, ex.w0, ex.settings
    rows = []
    sad = first_saddle(X, y, w0=w0, **kw)
    pred = escape_time(X, y, delta=1.0, w0=w0, **kw)
    Tst = pred.blowup_time
    rows.append(compare(PART, "T*(w0) check 2 vs reference value", 2.3227165, Tst, tolerance=1e-6,
                        note="docs/theory/gradient_flow.md §7.2 NCF blow-up + analytic tail; §14 Check 2 (tolerance 1e-6)"))
    rows.append(compare(PART, "first-saddle loss check 2", 0.17, sad.loss, tolerance=1e-10,
                        note="docs/theory/gradient_flow.md §9: a = 2^(-1/3), w = 2^(1/6) e1, loss (0.5^2 + 0.3^2)/2"))
    rows.append(compare(PART, "first-saddle a = 2^(-1/3)", 2 ** (-1 / 3), abs(sad.point[0]), tolerance=1e-9,
                        note=f"stationarity residual {sad.residual:.1e}"))
    delta = ctx.pick(1e-3, 1e-4, 1e-5)
    grid = log_time_grid(12.0 / delta, n=ctx.pick(200, 400, 600), t_min=1.0)
    run = simulate_flow(X, y, delta=delta, w0=w0, t_end=12.0 / delta, t_eval=grid, escape_loss=0.42,
                        stop_loss=sad.loss - 1e-3, **kw)
    rows.append(compare(PART, f"delta*t_esc -> T*(w0) (delta={delta:g})", Tst, delta * run.t_escape,
                        tolerance=1e-3 * Tst, note="docs/theory/gradient_flow.md §7.2 acceptance: within 0.1% at delta = 1e-4 "
                        "(reference values 2.321927 / 2.322638 / 2.322709 at 1e-3 / 1e-4 / 1e-5)"))
    plats = [p for p in find_plateaus(run.t, run.loss, tol=1e-3) if abs(p.level - sad.loss) < 1e-3]
    if plats:
        t0, t1, level = plats[0]
        on = (run.t >= t0) & (run.t <= t1)
        mid = np.argmin(np.abs(run.t - math.sqrt(t0 * t1)))
        rows.append(compare(PART, "plateau loss = first-saddle loss", sad.loss, run.loss[mid], tolerance=1e-6,
                            note=f"plateau t in [{t0:.4g}, {t1:.4g}] (reference [23274, 80505] at 1e-4); O(delta^2)"))
        first_half = on & (run.t <= t0 + 0.5 * (t1 - t0))
        others = np.sort(run.unit_norms[first_half], axis=1)[:, :-1].max()
        rows.append(compare_bool(PART, "non-winning units <= 10 delta on the plateau", f"<= {10 * delta:g}",
                                 f"{others:.3g}", others <= 10 * delta,
                                 note="docs/theory/gradient_flow.md §10 sparsity preserved to the first saddle (acceptance); max over the "
                                      "first half of the plateau: the next unit escapes by its own blow-up at "
                                      "its end (>10 delta only in the last ~3% of it)"))
    else:
        rows.append(compare_bool(PART, "plateau at the first-saddle loss", "found", "not found", False,
                                 note="no plateau within 1e-3 of the first-saddle loss"))
    rows.append(compare_bool(PART, "L=3 conservation |w_j|^2 - 2a_j^2", "drift <= 1e-10",
                             f"{run.conserved_drift:.2e}", run.conserved_drift <= 1e-10,
                             note="docs/theory/gradient_flow.md §6; LSODA rtol 1e-10, atol 1e-13 delta"))
    if ctx.out is not None:
        import matplotlib.pyplot as plt

        from rmtfl.plots._gradient_flow import plot_unit_norms, plot_weight_heatmap

        fig, axs = plt.subplots(1, 3, figsize=(14, 4))
        t_sad = plats[0].t_start if plats else None
        plot_unit_norms(run.t, run.unit_norms, ax=axs[0], delta=delta, t_escape=run.t_escape, t_saddle=t_sad)
        pb_unpack = _unpack_two_layer(ex)
        k_esc = int(np.searchsorted(run.t, run.t_escape))
        k_sad = int(np.argmin(np.abs(run.t - math.sqrt(plats[0].t_start * plats[0].t_end)))) if plats else -1
        plot_weight_heatmap(pb_unpack(run.w[min(k_esc, len(run.t) - 1)]), ax=axs[1], title="|[a W]| at escape")
        plot_weight_heatmap(pb_unpack(run.w[k_sad]), ax=axs[2], title="|[a W]| on the first plateau")
        fig.tight_layout()
        ctx.save_figure("gradient_flow_l3", fig, {"example": "check2", "delta": delta})
    return rows


def _unpack_two_layer(ex):
    h, d = ex.N, ex.X.shape[1]
    return lambda w: np.column_stack([w[:h], w[h:].reshape(h, d)])


def _run_l3_path(ctx):
    from rmtfl.numerics import path_distance, simulate_flow
    from rmtfl.theory import escape_time, flow_example, limiting_path

    ex = flow_example("check2")
    X, y, w0, kw = ex.X, ex.y, ex.w0, ex.settings
    Tst = escape_time(X, y, delta=1.0, w0=w0, **kw).blowup_time
    tt = np.linspace(-10.0, 30.0, 41)
    path = limiting_path(X, y, t=tt, w0=w0, estimate_error=False, **kw)
    dl = [1e-2, 1e-3] if ctx.level == "quick" else [1e-2, 1e-3, 1e-4]
    errs = []
    for d in dl:
        sh = Tst / d
        run = simulate_flow(X, y, delta=d, w0=w0, t_end=sh + 30.0, t_eval=sh + tt, **kw)
        errs.append(float(path_distance(run, path.points).max()))
    expo = np.polyfit(np.log(dl), np.log(errs), 1)[0]
    return [compare(PART, "L=3 sup|w(t+T*/delta) - p(t)| exponent", 1.0, expo, tolerance=0.15,
                    note=f"docs/theory/gradient_flow.md §8 (measured, not from the paper): errors {', '.join(f'{e:.3g}' for e in errs)}; "
                         "non-winning units O(delta) dominate; t in [-10, 30]")]


# ------------------------------------------------------------------ outside the theory / logistic
def _run_relu(ctx):
    from rmtfl.numerics import kth_to_max_ratio, simulate_flow
    from rmtfl.theory import flow_example, make_problem, ncf_kkt

    ex = flow_example("relu")
    X, y, w0, kw = ex.X, ex.y, ex.w0, ex.settings
    k = ncf_kkt(X, y, method="closed", **kw)
    pb = make_problem(X, y, **kw)
    thr = pb.loss_at_zero() - 0.05
    ratios, nus = [], []
    for d in (1e-2, 1e-3):
        t_end = math.log(1 / d) / (2 * k.value) + 2.0
        run = simulate_flow(X, y, delta=d, w0=w0, t_end=t_end, eta=2e-3, escape_loss=thr, stop_loss=thr,
                            t_eval=np.linspace(0, t_end, 50), **kw)
        ratios.append(float(kth_to_max_ratio(run.unit_norms[-1], 3)[0]))
        u = run.w[-1] / np.linalg.norm(run.w[-1])
        nus.append(pb.ncf(u))
    note = "plain ReLU is OUTSIDE the theory (gradient not locally Lipschitz): approximate; GD eta = 2e-3"
    return [compare(PART, "relu: N(direction at escape) ~ N* (enumeration)", k.value, nus[-1],
                    tolerance=0.05 * k.value, note=note + "; 5% tolerance"),
            compare_bool(PART, "relu: nu_(3)/nu_(1) at escape shrinks with delta", "decreasing",
                         f"{ratios[0]:.3g} -> {ratios[1]:.3g}", ratios[1] < ratios[0], note=note)]


def _run_logistic(ctx):
    from rmtfl.theory import first_saddle, flow_example

    ex = flow_example("logistic")
    s = first_saddle(ex.X, ex.y, w0=ex.w0, **ex.settings)
    return [compare_bool(PART, "logistic: first saddle at infinity", "at infinity",
                         "at infinity" if s.at_infinity else "finite", s.at_infinity,
                         note="docs/theory/gradient_flow.md §9: X = diag(1.5,1,1), y = (1,-1,-1), z^2: sample 1 fitted with growing norm"),
            compare(PART, "logistic: limiting loss 2 ln 2", 2 * math.log(2.0), s.measured_loss, tolerance=1e-6,
                    note="loss levels off from above at the l(0, y) of the two unfitted samples")]


def _single_thread(fn):
    """Run ``fn`` with one BLAS thread: the matrices here are tiny (P <= 32) and a second
    thread only adds wake-up stalls on a busy machine."""
    def run(ctx):
        from rmtfl._threads import blas_threads

        with blas_threads(1):
            return fn(ctx)
    return run


def checks(ctx):
    """The list of :class:`~rmtfl.compare.Check` of this part."""
    jobs = [("KKT points vs closed forms", _run_kkt),
            ("L=2 escape and limiting path (Check 1)", _run_l2),
            ("L=3 escape, first saddle, sparsity (Check 2)", _run_l3),
            ("relu (outside the theory)", _run_relu)]
    if ctx.level != "quick":
        jobs += [("L=3 trajectory error vs delta", _run_l3_path),
                 ("logistic saddle at infinity", _run_logistic)]
    return [Check(PART, name, _single_thread(fn)) for name, fn in jobs]
