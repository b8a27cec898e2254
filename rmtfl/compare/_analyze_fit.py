"""The fits behind :func:`rmtfl.compare.analyze`: robust noise level, KS distance of the bulk, the sequential
Tracy-Widom test, the theta interval and the power-law tail (docs/analyze.md §2-§4, §6).

Conventions (docs/analyze.md §1): ``W`` is ``N x d``; the ``p = min(N, d)`` eigenvalues of the smaller Gram
side of pure noise ``sqrt(var) G`` (``G`` iid ``N(0, 1/d)``) follow the Marchenko-Pastur law with ratio
``c = min(psi, 1/psi)`` and scale ``var * kappa``, ``kappa = max(1, psi)`` (no atom).
"""
from __future__ import annotations

import math

import numpy as np
from scipy import optimize, special

from rmtfl.theory import (bgn_inverse, bgn_outlier, bgn_outlier_sd, largest_sv_scaling, mp_cdf, mp_quantile,
                          tracy_widom_cdf, tracy_widom_quantile)

__all__ = ["bulk_law", "fit_var", "ks_bulk", "ks_threshold", "tw_pvalue", "sequential_test", "theta_interval",
           "tail_fit", "entry_scan", "heavy_count", "tw_statistic", "tw_threshold", "normal_quantile", "LEVELS", "KS_CONSTANT"]

#: Quantile levels of the robust noise fit (docs/analyze.md §2): from 5 % to 97 % of the bulk.
LEVELS = np.linspace(0.05, 0.97, 93)
#: ``mp_consistent`` requires ``KS <= KS_CONSTANT * log(p) / p`` (calibrated on Gaussian noise, docs/analyze.md §6).
KS_CONSTANT = 1.0

_QCACHE: dict = {}


def bulk_law(N: int, d: int) -> tuple[float, float]:
    """``(c, kappa)``: the MP ratio and scale of the ``min(N, d)`` Gram eigenvalues of unit-``var`` noise."""
    psi = N / d
    return min(psi, 1.0 / psi), max(1.0, psi)


def _mp_q(c: float, levels: np.ndarray) -> np.ndarray:
    key = (round(c, 15), levels.size, float(levels[0]), float(levels[-1]))
    if key not in _QCACHE:
        _QCACHE[key] = np.asarray(mp_quantile(levels, c), dtype=np.float64)
    return _QCACHE[key]


def fit_var(ev_asc: np.ndarray, k: int, N: int, d: int) -> float:
    """Robust noise level from the central quantiles of the bulk (docs/analyze.md §2).

    ``ev_asc``: the ``p`` Gram eigenvalues, ascending; the top ``k`` (outliers) are left out and the other
    ``m = p - k`` are fitted as the eigenvalues of the deflated ``(N - k) x (d - k)`` noise (entries still
    ``N(0, var/d)``): the empirical quantile at level ``u`` is the value at ascending position ``u m + 1/2``, and
    ``var' = sum_j e_j q_j / (kappa' sum_j q_j^2)`` with ``q_j`` the MP(``c'``) quantiles, ``var = var' d/(d - k)``.
    """
    m = ev_asc.size - k
    c, kappa = bulk_law(N - k, d - k)
    q = _mp_q(c, LEVELS)
    e = np.interp(LEVELS * m - 0.5, np.arange(m), ev_asc[:m])
    return float(np.dot(e, q) / (kappa * np.dot(q, q))) * d / (d - k)


def ks_bulk(ev_asc: np.ndarray, k: int, N: int, d: int, var: float) -> float:
    """KS distance between the bulk (all but the top ``k`` values) and the MP law of the deflated
    ``(N - k) x (d - k)`` noise with entries ``N(0, var/d)`` (docs/analyze.md §6)."""
    m = ev_asc.size - k
    c, kappa = bulk_law(N - k, d - k)
    b = ev_asc[:m]
    F = np.asarray(mp_cdf(np.clip(b, 0.0, None), c, var=var * (d - k) / d * kappa), dtype=np.float64)
    i = np.arange(1, m + 1)
    return float(max(np.max(i / m - F), np.max(F - (i - 1) / m), 0.0))


def ks_threshold(p: int) -> float:
    """The KS level of ``mp_consistent``: ``KS_CONSTANT log(p) / p`` (at least 0.02 below ``p = 200``)."""
    return max(KS_CONSTANT * math.log(max(p, 3)) / p, 0.02 if p < 200 else 0.0)


def _tw_sf(x: float) -> float:
    """``1 - F_1(x)``: the Tracy-Widom (beta = 1) upper tail, with its asymptotic form beyond ``x = 8``."""
    if x <= 8.0:
        return float(min(1.0, max(0.0, 1.0 - tracy_widom_cdf(x, beta=1))))
    x0 = 8.0
    s0 = 1.0 - tracy_widom_cdf(x0, beta=1)

    def asym(z):
        return math.exp(-2.0 / 3.0 * z ** 1.5) / (4.0 * math.sqrt(math.pi) * z ** 1.5)

    return float(s0 * asym(x) / asym(x0))


def tw_pvalue(s: float, N: int, d: int, var: float, k: int = 0) -> tuple[float, float]:
    """``(p_value, tw_statistic)`` of a singular value ``s`` against the largest of the ``(N - k) x (d - k)``
    pure-noise problem (Johnstone's centring and scale on the eigenvalue, docs/theory/classical.md §4)."""
    n1, d1 = N - k, d - k
    center, scale = largest_sv_scaling(n1, d1, var=var * d1 / d)
    mu = center * center * d / var
    sigma = scale * 2.0 * d * center / var
    x = (s * s * d / var - mu) / sigma
    return _tw_sf(x), float(x)


def sequential_test(s_desc: np.ndarray, N: int, d: int, var: float, alpha: float, kmax: int, *,
                    pvalues: bool = True):
    """The sequential Tracy-Widom test (docs/analyze.md §3): ``[(s, p_value, tw)]`` of the rejected values,
    then ``(s, p_value, tw)`` of the first value not rejected (``None`` when every value tested was rejected).

    A value is rejected when its TW statistic exceeds the ``1 - alpha`` quantile of ``TW_1`` (the same as
    ``p_value <= alpha``); ``pvalues=False`` skips the p-values (``nan``) for the inner iterations of the fit.
    """
    q = _tw_crit(alpha)
    out = []
    for k in range(min(kmax, s_desc.size, min(N, d) - 1)):
        x = tw_statistic(float(s_desc[k]), N, d, var, k)
        pv = _tw_sf(x) if pvalues else math.nan
        if x <= q:
            return out, (float(s_desc[k]), pv, x)
        out.append((float(s_desc[k]), pv, x))
    return out, None


_CRIT: dict = {}


def _tw_crit(alpha: float) -> float:
    if alpha not in _CRIT:
        _CRIT[alpha] = float(tracy_widom_quantile(1.0 - alpha, beta=1))
    return _CRIT[alpha]


def tw_statistic(s: float, N: int, d: int, var: float, k: int = 0) -> float:
    """The TW-scaled statistic of :func:`tw_pvalue` alone."""
    n1, d1 = N - k, d - k
    center, scale = largest_sv_scaling(n1, d1, var=var * d1 / d)
    mu = center * center * d / var
    sigma = scale * 2.0 * d * center / var
    return float((s * s * d / var - mu) / sigma)


def tw_threshold(N: int, d: int, var: float, alpha: float, k: int = 0) -> float:
    """The singular value at which step ``k`` of :func:`sequential_test` rejects: ``tw_statistic = TW_1``'s
    ``1 - alpha`` quantile (the inverse of :func:`tw_statistic`)."""
    n1, d1 = N - k, d - k
    center, scale = largest_sv_scaling(n1, d1, var=var * d1 / d)
    mu = center * center * d / var
    sigma = scale * 2.0 * d * center / var
    return math.sqrt(var / d * max(mu + _tw_crit(alpha) * sigma, 0.0))


def theta_interval(s1: float, psi: float, d: int, *, z: float, edge_scale: float, gaussian_u: bool = False):
    """``(theta_hat, low, high)`` for a unit-variance outlier ``s1`` (docs/analyze.md §4.3).

    The interval is the set of strengths ``t`` with ``|s1 - s(t)| <= z sd(t)``, ``sd(t)^2 =`` the Gaussian
    outlier variance (:func:`rmtfl.theory.bgn_outlier_sd`) plus the squared Tracy-Widom scale of the edge
    ``edge_scale`` (which takes over at the threshold).  Far above the threshold it is the delta-method interval
    ``theta_hat +- z sd / s'(theta_hat)``; the low end is 0 when ``s1`` is within ``z sd`` of the edge.
    """
    tc = psi ** 0.25
    th = float(bgn_inverse(s1, psi).theta)

    def sd(t):
        return math.hypot(float(bgn_outlier_sd(t, psi, d=d, gaussian_u=gaussian_u)), edge_scale)

    def loc(t):
        return float(bgn_outlier(t, psi).singular_value)

    def f_hi(t):
        return loc(t) - z * sd(t) - s1

    def f_lo(t):
        return loc(t) + z * sd(t) - s1

    t_top = max(2.0 * th, tc) + 1.0
    while f_hi(t_top) < 0.0:
        t_top *= 2.0
    t0 = tc * (1.0 + 1e-12)
    hi = optimize.brentq(f_hi, t0, t_top, xtol=1e-12) if f_hi(t0) < 0.0 else tc
    if f_lo(t0) >= 0.0:
        lo = 0.0
    else:
        lo = optimize.brentq(f_lo, t0, max(th, t0 * (1 + 1e-9)) + 1e-9, xtol=1e-12) if f_lo(max(th, t0)) >= 0 \
            else optimize.brentq(f_lo, t0, t_top, xtol=1e-12)
    return th, lo, max(hi, th)


def tail_fit(ev_desc: np.ndarray, *, min_tail: int = 10):
    """Power-law fit of the upper tail of the eigenvalues (docs/analyze.md §6): ``(alpha, xmin, n_tail, llr)``.

    The density exponent ``alpha`` (``rho(l) ~ l^-alpha`` for ``l >= xmin``, the WeightWatcher convention) by
    maximum likelihood, ``xmin`` among the upper half of the values minimising the KS distance of the fit
    (Clauset, Shalizi & Newman 2009); ``llr``: the log-likelihood ratio of the power law against an exponential
    tail on the same values, per value (``> 0``: the power law fits better).
    """
    x = np.sort(ev_desc[ev_desc > 0])[::-1]
    n = x.size
    if n < 2 * min_tail:
        return math.nan, math.nan, 0, math.nan
    cands = np.unique(np.linspace(min_tail, n // 2, 40).astype(int))
    best = None
    for m in cands:
        xm = x[m - 1]
        tail = x[:m]
        lg = np.log(tail / xm)
        S = lg.sum()
        if S <= 0:
            continue
        a = 1.0 + m / S
        emp = np.arange(m, 0, -1) / m  # survival at the sorted (descending) values, inclusive
        fit = (tail / xm) ** (1.0 - a)
        ks = float(np.max(np.abs(emp - fit)))
        if best is None or ks < best[0]:
            best = (ks, a, xm, m, S)
    if best is None:
        return math.nan, math.nan, 0, math.nan
    _, a, xm, m, S = best
    tail = x[:m]
    ll_pl = m * math.log(a - 1.0) - m * math.log(xm) - a * S
    mean_excess = float(np.mean(tail - xm))
    if mean_excess <= 0:
        return a, float(xm), int(m), math.inf
    lam = 1.0 / mean_excess
    ll_exp = m * math.log(lam) - lam * float(np.sum(tail - xm))
    return float(a), float(xm), int(m), float((ll_pl - ll_exp) / m)


def entry_scan(A, xp, rng) -> dict:
    """One pass over the entries of ``A`` by blocks of rows (no copy of ``A``): ``sumsq`` (the sum of squares in
    units of ``unit**2``), ``unit``, the median ``med`` of a random sample of entries, and ``tail``: every
    ``|w - med| / unit`` above ``floor = 4`` (float32), for :func:`heavy_count` (docs/analyze.md §6)."""
    N, d = A.shape
    idx = rng.integers(0, N * d, size=min(N * d, 100_000))
    sample = xp.asarray(A).reshape(-1)[xp.asarray(idx)].astype(xp.float64)
    med = float(xp.median(sample))
    unit = float(xp.median(xp.abs(sample - med))) * 1.4826
    if not unit > 0.0:
        unit = float(xp.abs(sample).max()) or 1.0
    sumsq = 0.0
    tails = []
    step = max(1, int(2**22 // max(1, d)))
    for i in range(0, N, step):
        B = A[i:i + step].astype(xp.float64) / unit
        sumsq += float((B * B).sum())
        B = xp.abs(B - med / unit)
        t = B[B > 4.0]
        if t.size:
            tails.append(t.astype(xp.float32))
    tail = np.concatenate([np.asarray(t.get() if hasattr(t, "get") else t) for t in tails]) if tails else np.zeros(0)
    return {"sumsq": sumsq, "unit": unit, "med": med, "tail": tail, "floor": 4.0, "A": A, "xp": xp}


def heavy_count(scan: dict, sigma: float, N: int, d: int) -> tuple[int, float, int]:
    """``(count, z, allowed)``: entries farther than ``z sigma`` from their median, ``z = max(6, sqrt(2 ln(N d)) +
    1.5)``, ``sigma = sqrt(var/d)`` the fitted entry scale (docs/analyze.md §6).  Gaussian noise puts fewer than 0.1
    entries there on average; ``allowed = max(20, 5e-5 N d)`` leaves room for localised spikes."""
    z = max(6.0, math.sqrt(2.0 * math.log(N * d)) + 1.5)
    thr = z * sigma / scan["unit"]
    allowed = int(max(20, 5e-5 * N * d))
    if thr >= scan["floor"]:
        return int(np.count_nonzero(scan["tail"] > thr)), z, allowed
    A, xp, med = scan["A"], scan["xp"], scan["med"]  # a threshold below the scan's floor: count again
    count, step = 0, max(1, int(2**22 // max(1, d)))
    for i in range(0, N, step):
        count += int((xp.abs(A[i:i + step].astype(xp.float64) - med) > z * sigma).sum())
    return count, z, allowed


def normal_quantile(level: float) -> float:
    """Two-sided standard normal quantile ``z`` with ``P(|Z| <= z) = level``."""
    return float(-special.ndtri((1.0 - level) / 2.0))
