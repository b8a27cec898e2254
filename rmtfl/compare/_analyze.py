"""``analyze``: a calibrated Marchenko-Pastur / BBP analysis of a user's matrix (docs/analyze.md).

Model (docs/analyze.md §1): ``W = sqrt(var) (G + sum_i theta_i u_i v_i^T)`` with ``G`` ``N x d`` iid ``N(0, 1/d)``,
unit ``u_i`` (N side) and ``v_i`` (d side); ``psi = N/d``.  :func:`analyze` estimates ``var`` robustly, tests the top
singular values one by one against Tracy-Widom (the sequential test of docs/analyze.md §3), inverts the BGN map for
each outlier (``theta``, its interval and both predicted squared overlaps, docs/analyze.md §4) and says whether the
bulk is Marchenko-Pastur at all (docs/analyze.md §6).  ``kind="covariance"``: the spiked covariance model
(Johnstone) of a data matrix ``X`` (``n x d``, samples in rows) or of ``S = X^T X / n`` (docs/analyze.md §5).

Examples
--------
>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> W = rng.standard_normal((400, 800)) / np.sqrt(800)
>>> W += 2.0 * np.outer(np.eye(400)[0], np.eye(800)[0])
>>> rep = analyze(W)
>>> len(rep.outliers), rep.mp_consistent, abs(rep.var - 1.0) < 0.02
(1, True, True)
>>> o = rep.outliers[0]
>>> o.theta_low < 2.0 < o.theta_high
True
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from rmtfl._results import Result
from rmtfl._validate import check_choice, check_in_range, check_int, check_rng
from rmtfl.theory import bgn_inverse, largest_sv_scaling
from ._analyze_fit import (entry_scan, fit_var, heavy_count, ks_bulk, ks_threshold, normal_quantile, sequential_test,
                           tail_fit, theta_interval, tw_threshold)

__all__ = ["SpectrumOutlier", "SpectrumReport", "analyze", "SKETCH_MIN", "AUTO_TOP_K_ABOVE", "SKETCH_SIZE"]

#: With ``top_k`` the bulk comes from a random ``SKETCH_SIZE``-sized submatrix only when ``min(N, d)`` exceeds
#: ``SKETCH_MIN`` (below, the full spectrum is cheap and is used instead).
SKETCH_MIN = 2000
SKETCH_SIZE = 1000
#: ``top_k=None`` computes the full spectrum up to this ``min(N, d)``; above it ``top_k=AUTO_TOP_K``.
AUTO_TOP_K_ABOVE = 8000
AUTO_TOP_K = 20
_MIN_SIDE = 10
#: The certificate's edge sits at the sketch's noise level less ``CERT_TOL / min(sketch)`` relative (docs/analyze.md §7).
CERT_TOL = 3.0


@dataclass(frozen=True)
class SpectrumOutlier(Result):
    """One outlier of :func:`analyze` (docs/analyze.md §3-§5), in the model ``W = sqrt(var)(G + theta u v^T)``.

    ``singular_value``: the value (of ``W``; of ``X / sqrt(n)`` in covariance mode, so that its square is the
    eigenvalue of ``S``); ``p_value``: its sequential Tracy-Widom p-value, ``tw_statistic`` the TW-scaled value;
    ``theta``: the BGN strength (units of ``sqrt(var)``), ``theta_low``/``theta_high`` its confidence interval at
    the report's ``ci_level``; ``cos2_left``/``cos2_right``: predicted squared overlaps of the left (N side) and
    right (d side) singular vectors with ``u`` and ``v``; ``ell``, ``ell_low``, ``ell_high``: in covariance mode
    the population spike (eigenvalue of the population covariance in units of the bulk variance) and its
    interval, ``nan`` otherwise.
    """

    singular_value: float
    p_value: float
    tw_statistic: float
    theta: float
    theta_low: float
    theta_high: float
    cos2_left: float
    cos2_right: float
    ell: float = math.nan
    ell_low: float = math.nan
    ell_high: float = math.nan


@dataclass(frozen=True)
class SpectrumReport(Result):
    """What :func:`analyze` found (docs/analyze.md).

    ``kind``, ``N``, ``d``; ``ratio = N/d``; ``var``: the noise level (entries of the noise ``N(0, var/d)``;
    covariance mode: the bulk population variance ``sigma^2`` of one coordinate); ``bulk_edge``: the MP edge
    ``sqrt(var)(1 + sqrt(ratio))`` (a singular value; covariance mode: of ``X/sqrt(n)``); ``edge_margin``: the
    value the first test rejects above, at level ``alpha``; ``ks`` and ``ks_threshold``: KS distance of the bulk
    to the fitted MP law and the level ``mp_consistent`` requires; ``mp_consistent`` and ``reason``;
    ``tail_exponent``: the power-law exponent of the upper ESD tail (``rho(l) ~ l^-alpha``) where a power law fits
    it better than an exponential, else ``None``; ``outliers``: largest first (empty when the bulk is not MP:
    then ``n_above_edge`` says how many values the test would have flagged); ``next_p_value``: p-value of the
    first value not rejected; ``alpha``, ``ci_level``; ``method`` (``"full"`` or ``"top_k"``), ``sketch``
    (the bulk fit used a random submatrix), ``complete`` (every value the test could reject was computed: the
    full spectrum, or with ``top_k`` the top-k solver's certificate at an edge below every threshold the test
    used, docs/analyze.md §7; ``False`` when the sketch's bulk is not MP, so no certificate was asked for);
    ``seconds``.  ``singular_values`` (not in ``to_dict``): the values the fit saw, descending (the top values
    and, with a sketch, ``sketch_values`` rescaled to the full matrix).
    """

    kind: str
    N: int
    d: int
    ratio: float
    var: float
    bulk_edge: float
    edge_margin: float
    ks: float
    ks_threshold: float
    mp_consistent: bool
    reason: str
    tail_exponent: float | None
    outliers: tuple
    n_above_edge: int
    next_p_value: float
    alpha: float
    ci_level: float
    method: str
    sketch: bool
    complete: bool
    seconds: float
    singular_values: np.ndarray = field(repr=False, compare=False, default=None)
    sketch_values: np.ndarray = field(repr=False, compare=False, default=None)

    def plot(self, ax=None):
        """The ESD with the fitted MP law, the edge and its margin, the outliers marked with theta (returns the Axes)."""
        from rmtfl.plots import plot_spectrum_report

        return plot_spectrum_report(self, ax=ax)

    def table_row(self) -> str:
        """One line: shape, var, KS, MP or not, outliers with theta."""
        if self.kind == "covariance":
            o = ", ".join(f"λ={x.singular_value ** 2:.4g}(ℓ={x.ell:.3g})" for x in self.outliers) or "-"
        else:
            o = ", ".join(f"{x.singular_value:.4g}(θ={x.theta:.3g})" for x in self.outliers) or "-"
        mp = "MP" if self.mp_consistent else "not MP"
        return (f"{self.N}x{self.d}  var={self.var:.5g}  edge={self.bulk_edge:.5g}  KS={self.ks:.4f}  {mp}  "
                f"outliers={len(self.outliers)}: {o}")


# ------------------------------------------------------------------------------------------ input
def _check_matrix(W, backend):
    from rmtfl.numerics import get_backend

    be = get_backend(backend)
    if isinstance(W, (str, bytes)) or W is None:
        raise TypeError(f"W must be a 2-d real array, got {type(W).__name__}")
    try:
        A = be.asarray(W)
    except (ValueError, TypeError) as exc:
        raise TypeError(f"W must be a 2-d real numeric array: {exc}") from None
    kind = np.dtype(A.dtype).kind
    if kind == "c":
        raise ValueError(f"W must be real: complex values are not supported (dtype {A.dtype})")
    if kind not in "fiub":
        raise TypeError(f"W must be a numeric array, got dtype {A.dtype}")
    if A.ndim != 2:
        raise ValueError(f"W must be a 2-d array, got shape {tuple(A.shape)}")
    if min(A.shape) < _MIN_SIDE:
        raise ValueError(f"W must have at least {_MIN_SIDE} rows and columns for a spectral analysis, "
                         f"got shape {tuple(A.shape)}")
    if A.dtype not in (np.float32, np.float64):
        A = A.astype(np.float64 if kind in "iub" or A.dtype.itemsize > 4 else np.float32)
    if not bool(be.xp.isfinite(A).all()):
        raise ValueError("W must contain only finite values (found NaN or inf)")
    return A, be


# ------------------------------------------------------------------------------------------ analysis
def analyze(W, *, alpha: float = 0.05, kind: str = "rectangular", top_k: int | None = None, n: int | None = None,
            ci_level: float = 0.95, rng=0, backend="numpy") -> SpectrumReport:
    """Calibrated MP/BBP analysis of a matrix: noise level, outliers with p-values, BGN strengths (docs/analyze.md).

    Model and normalisation (docs/analyze.md §1): ``W = sqrt(var)(G + sum_i theta_i u_i v_i^T)``, ``G`` iid
    ``N(0, 1/d)`` (``d`` the number of columns), unit ``u_i, v_i``, ``psi = N/d``; the BBP threshold is
    ``theta_c = psi**0.25``.

    Parameters
    ----------
    W : 2-d real array (numpy, or cupy with ``backend="cupy"``), at least 10 x 10.  ``kind="covariance"``: a data
        matrix ``X`` (samples in rows), or a symmetric PSD ``S = X^T X / n`` together with ``n=``.
    alpha : level of each step of the sequential Tracy-Widom test (docs/analyze.md §3), in (0, 0.5).
    kind : ``"rectangular"`` (default) or ``"covariance"`` (spiked covariance, docs/analyze.md §5).
    top_k : compute only the ``top_k`` largest singular values (certified top-k solvers; more when more lie above
        the certificate's edge, docs/analyze.md §7) and fit the bulk on a
        random ``1000``-sized submatrix when ``min(N, d) > 2000`` (``sketch=True``).  Default: the full spectrum up
        to ``min(N, d) = 8000``, ``top_k = 20`` above.
    n : the number of samples behind a covariance matrix ``S`` (``kind="covariance"`` with a square PSD input).
    ci_level : level of the theta intervals (docs/analyze.md §4.3), in (0, 1).
    rng : seed of the sketch's submatrix and of the top-k start vectors (default 0: deterministic).
    backend : ``"numpy"`` or ``"cupy"``.

    Returns
    -------
    SpectrumReport

    >>> import numpy as np
    >>> W = np.random.default_rng(1).standard_normal((300, 300)) * 0.1
    >>> rep = analyze(W)
    >>> rep.outliers, rep.mp_consistent, round(rep.var / (0.01 * 300), 2)
    ((), True, 1.0)
    """
    t0 = time.perf_counter()
    alpha = check_in_range("alpha", alpha, 0.0, 0.5, lo_open=True, hi_open=True)
    ci_level = check_in_range("ci_level", ci_level, 0.0, 1.0, lo_open=True, hi_open=True)
    check_choice("kind", kind, ("rectangular", "covariance"))
    if top_k is not None:
        top_k = check_int("top_k", top_k, 1)
    if n is not None:
        n = check_int("n", n, 1)
        if kind != "covariance":
            raise ValueError("n applies only with kind='covariance' (the samples behind a covariance matrix)")
    rng = check_rng(rng)
    A, be = _check_matrix(W, backend)
    from rmtfl.numerics import singular_values, to_numpy, top_singular_triplets

    cov_psd = False
    if kind == "covariance" and A.shape[0] == A.shape[1] and n is not None:
        cov_psd = True
    elif kind == "covariance" and n is not None:
        raise ValueError(f"n is only used with a square covariance matrix S; W has shape {tuple(A.shape)} "
                         "(a data matrix: leave n out)")
    if cov_psd:
        S = to_numpy(A).astype(np.float64)
        if not np.allclose(S, S.T, rtol=1e-6, atol=1e-8 * max(1.0, float(np.abs(S).max()))):
            raise ValueError("W must be symmetric when n is given (a covariance matrix S = X^T X / n)")
        ev = np.linalg.eigvalsh(S)[::-1]
        if ev[-1] < -1e-8 * max(ev[0], 1e-300):
            raise ValueError(f"W must be positive semidefinite (smallest eigenvalue {ev[-1]:.3g})")
        p_feat = S.shape[0]
        Nn, dd = n, p_feat
        m = min(Nn, dd)
        s_all = np.sqrt(np.clip(ev[:m], 0.0, None) * n)  # singular values of the (virtual) n x p data matrix
        if m < _MIN_SIDE:
            raise ValueError(f"n and the size of W must both be at least {_MIN_SIDE}, got n={n}, size {p_feat}")
        return _finish(s_all, None, Nn, dd, alpha, ci_level, kind, "full", False, True, t0, n_samples=n)
    Nn, dd = A.shape
    m = min(Nn, dd)
    if top_k is None and m > AUTO_TOP_K_ABOVE:
        top_k = AUTO_TOP_K
    if top_k is not None:
        top_k = min(top_k, m - 1)
    n_samples = Nn if kind == "covariance" else None
    if top_k is None or m <= SKETCH_MIN:
        s_all = singular_values(A, backend=be.name)
        if not s_all.size or s_all[0] <= 0.0:
            raise ValueError("W is zero: there is no spectrum to analyse")
        return _finish(s_all, None, Nn, dd, alpha, ci_level, kind, "full", False, True, t0, n_samples=n_samples,
                       entries=entry_scan(A, be.xp, rng))
    # ---- top-k path: certified top values, noise level from the spike-corrected second moment, bulk from a sketch
    scan = entry_scan(A, be.xp, rng)
    unit = scan["unit"]
    ns = max(_MIN_SIDE, int(round(SKETCH_SIZE * Nn / m)))
    ds = max(_MIN_SIDE, int(round(SKETCH_SIZE * dd / m)))
    rows = np.sort(rng.choice(Nn, size=ns, replace=False))
    cols = np.sort(rng.choice(dd, size=ds, replace=False))
    if be.name == "numpy":
        sub = np.asarray(A[np.ix_(rows, cols)], dtype=np.float64)
    else:
        sub = to_numpy(A[be.xp.asarray(rows)][:, be.xp.asarray(cols)]).astype(np.float64)
    s_sketch = singular_values(sub) * math.sqrt(dd / ds)  # the sketch's values on the scale of the full matrix
    del sub
    cert = _certificate_edge(s_sketch, (ns, ds), Nn, dd, alpha, scan)
    top = top_singular_triplets(A, top_k, rng=rng, edge=cert, backend=be.name)
    s_top = np.asarray(top.s, dtype=np.float64)
    if s_top[0] <= 0.0:
        raise ValueError("W is zero: there is no spectrum to analyse")
    fro = scan["sumsq"] * (unit / float(s_top[0])) ** 2  # ||W||_F^2 / s_1^2
    certified = (cert, bool(top.complete)) if cert is not None else None
    rep = _finish(s_top, s_sketch, Nn, dd, alpha, ci_level, kind, "top_k", True, certified, t0,
                  n_samples=n_samples, fro=fro, sketch_shape=(ns, ds), entries=scan)
    if cert is None or rep.complete or not rep.mp_consistent:
        return rep
    # the sketch's noise level was too high for the certificate (rare): certify again at the test's last threshold
    k = rep.n_above_edge
    edge2 = (rep.edge_margin * _cov_scale(n_samples, kind == "covariance") * (1.0 - 1e-9)
             * tw_threshold(Nn, dd, 1.0, alpha, k) / tw_threshold(Nn, dd, 1.0, alpha, 0))
    top = top_singular_triplets(A, max(top_k, k + 1), rng=rng, edge=edge2, backend=be.name)
    s_top = np.asarray(top.s, dtype=np.float64)
    fro = scan["sumsq"] * (unit / float(s_top[0])) ** 2
    return _finish(s_top, s_sketch, Nn, dd, alpha, ci_level, kind, "top_k", True, (edge2, bool(top.complete)), t0,
                   n_samples=n_samples, fro=fro, sketch_shape=(ns, ds), entries=scan)


def _certificate_edge(s_sketch, sketch_shape, N, d, alpha, scan):
    """The edge handed to the top-k solver, so that ``complete`` is its certificate (docs/analyze.md §7).

    The first test's threshold at a lower bound of the noise level: the sketch's robust fit less ``CERT_TOL /
    min(sketch)`` relative (the fit's error is about ``1 / min(sketch)``).  Too high a bound cannot make
    ``complete`` lie, only fail: :func:`_finish` checks the edge against the test's last threshold.  ``None`` (no
    certificate asked for) when the sketch already shows a bulk that is not MP or the entries are heavy-tailed:
    there, values above an edge may number in the hundreds, and the report is "not MP" whatever they are."""
    ns, ds = sketch_shape
    c = float(s_sketch[0])
    if not c > 0.0:
        return None
    ev = ((s_sketch / c) ** 2)[::-1]
    v = fit_var(ev, 0, ns, ds)
    if not v > 0.0 or ks_bulk(ev, 0, ns, ds, v) > ks_threshold(min(ns, ds)):
        return None
    cnt, _, allowed = heavy_count(scan, math.sqrt(v / d) * c, N, d)
    if cnt > allowed:
        return None
    return tw_threshold(N, d, v * (1.0 - CERT_TOL / min(ns, ds)), alpha) * c


def _finish(s_top, s_sketch, N, d, alpha, ci_level, kind, method, sketch, certified, t0, *, n_samples=None, fro=None,
            sketch_shape=None, entries=None):
    """The fits on the values at hand (docs/analyze.md §2-§6)."""
    psi = N / d
    p = min(N, d)
    s0 = float(s_top[0])
    u = s_top / s0  # unit-free: every fit below runs on values of order one
    pile = max(1, min(p // 4, 200))  # this many outliers in a row is no low-rank signal
    kmax = min(pile, u.size if sketch else p - 1)
    if not sketch:
        ev_asc = (u * u)[::-1]
        k = 0
        for _ in range(10):
            v = fit_var(ev_asc, k, N, d)
            rej, nxt = sequential_test(u, N, d, v, alpha, kmax, pvalues=False)
            if len(rej) == k:
                break
            k = len(rej)
        ks = ks_bulk(ev_asc, k, N, d, v)
        ks_thr = ks_threshold(p)
        var_robust = v
        tail_ev = u * u
    else:
        ps = min(sketch_shape)
        ns, ds = sketch_shape
        sk = s_sketch / s0  # rescaled by sqrt(d / ds): the sketch's law is that of an ns x ds matrix, entries var/ds
        ev_sk = (sk * sk)[::-1]
        var_robust = fit_var(ev_sk, 0, ns, ds)
        ks = ks_bulk(ev_sk, 0, ns, ds, var_robust)
        ks_thr = ks_threshold(ps)
        f2 = fro  # ||W||_F^2 in units of s_1^2
        v = f2 / N
        k = 0
        for _ in range(20):
            rej, nxt = sequential_test(u, N, d, v, alpha, kmax, pvalues=False)
            th = [bgn_inverse(x[0] / math.sqrt(v), psi).theta for x in rej]
            v_new = f2 / (N + sum(t * t for t in th))
            if abs(v_new - v) <= 1e-13 * v and len(rej) == k:
                break
            v, k = v_new, len(rej)
        tail_ev = ev_sk[::-1]
    rej, nxt = sequential_test(u, N, d, v, alpha, kmax)  # the final p-values
    tw_edge = _edge_margin(N, d, v, alpha)
    if not sketch:  # the whole spectrum was seen
        complete = True
    else:  # the solver certified every value above its edge; the test's last threshold must lie above that edge
        complete = (certified is not None and certified[1]
                    and certified[0] <= tw_threshold(N, d, v, alpha, len(rej)) * s0)
    # ---- is the bulk Marchenko-Pastur?
    reasons = []
    mp_ok = True
    if ks > ks_thr:
        mp_ok = False
        reasons.append(f"the bulk is not Marchenko-Pastur: KS distance {ks:.4g} > {ks_thr:.4g} (Gaussian noise "
                       f"of this size stays below)")
    if len(rej) >= pile:
        mp_ok = False
        reasons.append(f"{len(rej)} values above the edge: no low-rank signal plus MP noise")
    if entries is not None:
        cnt, zz, allowed = heavy_count(entries, math.sqrt(v / d) * s0, N, d)
        if cnt > allowed:
            mp_ok = False
            reasons.append(f"the entries are heavy-tailed: {cnt} lie more than {zz:.3g} noise s.d. from their "
                           f"median, where Gaussian noise puts none on average")
    if sketch:
        tol = 10.0 / min(sketch_shape)
        if abs(var_robust / v - 1.0) > tol:
            mp_ok = False
            reasons.append(f"the sketch's robust noise level differs from the second moment by "
                           f"{100 * (var_robust / v - 1):+.2f} % (more than {100 * tol:.2f} %)")
    a_tail, _, _, llr = tail_fit(tail_ev[::-1] if not sketch else np.sort(tail_ev)[::-1])
    tail = float(a_tail) if (math.isfinite(llr) and llr > 0 and math.isfinite(a_tail)) else None
    if not mp_ok and tail is not None:
        reasons.append(f"the upper tail fits a power law better than an exponential (alpha = {tail:.3g})")
    if mp_ok:
        reason = (f"bulk consistent with Marchenko-Pastur (KS {ks:.4g} <= {ks_thr:.4g}); "
                  f"{len(rej)} outlier{'s' if len(rej) != 1 else ''} at level {alpha:g} per step")
        if sketch and not complete:
            reason += (f"; all {u.size} computed values are outliers: raise top_k to see more" if nxt is None else
                       "; not certified that every value above the edge was computed")
    else:
        reason = "; ".join(reasons) + f"; the {len(rej)} values above the edge are not reported as signal"
    # ---- outliers: BGN inversion and intervals
    z = normal_quantile(ci_level)
    scale1 = largest_sv_scaling(N, d).scale  # TW scale of the edge, unit variance
    cov = kind == "covariance"
    outs = []
    if mp_ok:
        for sv, pv, x in rej:
            s1 = sv / math.sqrt(v)
            inv = bgn_inverse(s1, psi)
            th, lo, hi = theta_interval(s1, psi, d, z=z, edge_scale=scale1, gaussian_u=cov)
            if cov:
                ell, el_lo, el_hi = (1.0 + th * th / psi, 1.0 + lo * lo / psi, 1.0 + hi * hi / psi)
            else:
                ell = el_lo = el_hi = math.nan
            outs.append(SpectrumOutlier(sv * s0 / _cov_scale(n_samples, cov), pv, x, th, lo, hi,
                                        float(inv.cos2_left), float(inv.cos2_right), ell, el_lo, el_hi))
    # ---- report, back in the units of the input
    units = s0 / _cov_scale(n_samples, cov)
    # covariance mode: sigma^2 of one coordinate (the entries of X are N(0, var/d) in W's convention)
    var_out = v * s0 * s0 / d if cov else v * units * units
    if not math.isfinite(var_out) or var_out <= 0.0:
        raise ValueError(f"W is too large or too small to report its noise level in float64 (largest singular "
                         f"value {s0:.3g})")
    edge_out = math.sqrt(v) * (1.0 + math.sqrt(psi)) * units
    s_shown = s_top * (1.0 / _cov_scale(n_samples, cov))
    sk_shown = None if s_sketch is None else s_sketch / _cov_scale(n_samples, cov)
    return SpectrumReport(
        kind=kind, N=int(N), d=int(d), ratio=float(psi), var=float(var_out), bulk_edge=float(edge_out),
        edge_margin=float(tw_edge * units), ks=float(ks), ks_threshold=float(ks_thr), mp_consistent=bool(mp_ok),
        reason=reason, tail_exponent=tail, outliers=tuple(outs), n_above_edge=len(rej),
        next_p_value=float(nxt[1]) if nxt is not None else math.nan, alpha=float(alpha), ci_level=float(ci_level),
        method=method, sketch=bool(sketch), complete=bool(complete), seconds=time.perf_counter() - t0,
        singular_values=np.asarray(s_shown, dtype=np.float64),
        sketch_values=None if sk_shown is None else np.asarray(sk_shown, dtype=np.float64))


def _cov_scale(n_samples, cov: bool) -> float:
    """Covariance mode reports singular values of ``X / sqrt(n)`` (their squares are eigenvalues of ``S``)."""
    return math.sqrt(n_samples) if cov else 1.0


def _edge_margin(N: int, d: int, var: float, alpha: float) -> float:
    """The singular value above which the first step rejects at level ``alpha`` (docs/analyze.md §3)."""
    from rmtfl.theory import edge_margin

    return float(edge_margin(N, d, var=var, p=1.0 - alpha))
