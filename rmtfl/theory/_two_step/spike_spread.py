"""How much the spikes of ``P`` move from batch to batch at width ``N`` (docs/theory/two_step.md §8.5).

The finite-``N`` prediction puts each outlier of ``P`` where the master equation of docs/theory/two_step.md §8.1
has an eigenvalue 1 with the *mean* Gram matrices of ``P``.  A draw has its own: the second layer ``a`` gives
``G_U`` its empirical moments over ``N`` rows, the batch gives ``G_V`` its empirical moments over ``n`` samples.
Both are averages of independent terms, so to first order they fluctuate by ``O(N^{-1/2})`` around the mean, with
variances that the same quadrature rules give; a He3 part in the target makes them large (the batch's
``E_n[y z*]`` carries ``z^4`` terms).  Through the eigenvalue's derivatives they move the outlier:

    delta lambda_i / lambda_i = u_i^T dG_U u_i + (R q_i)^T dG_V (R q_i) / (R q_i)^T G_V (R q_i),
    delta s_i = lambda_i (delta lambda_i / lambda_i) / |d lambda_i / ds|,

with ``q_i`` the eigenvector of ``s^2 <-tt> R G_V R`` (``R = G_U(tau)^{1/2}``) at the root and ``u_i = G_V R q_i /
(R q_i)^T G_V (R q_i)``.  The right vector ``V R q_i = X^T (w^(i)) / n`` of a batch is a weighted sum of its samples,
``w^(i) = y p^(i)(y, s)``; along ``beta*`` it is the batch mean of ``w z*``; across, a Gaussian vector of ``d``
components with variance ``E_n[w^2] / n`` each (a chi-square factor of relative variance ``2/d``).  The weights
themselves move with the batch: ``s`` is each sample's projection on the first step ``X_1^T y / n_1``, whose
alignment ``E_n1[y z*]`` and length are the first batch's own, not their means (the same batch when reused).  Given the
spike's vectors, the bulk's own resolvent fluctuates as well (:func:`resolvent_variance`, the outlier's classical
CLT): it matters near the edge, not for spikes well above it.  The correlation between spikes is left out.  The law
of a spike: the batch's samples beyond the bulk's cut one by one (a compensated compound Poisson sum; with a
heavy-tailed target they carry most of the variance and skew the law), the rest of the variance a Gaussian, by FFT
of the characteristic function.  Deterministic: no sampling, the quadrature rules of the prediction.
"""
from __future__ import annotations

import math

import numpy as np

from .right_gram import basis_gram
from .widened_bulk import WidenedBulk, master_eigs

__all__ = ["spike_spreads", "resolvent_variance"]


def spike_spreads(bulk: WidenedBulk, st, *, G_V, C, table, g, wg, G_U_w, locations, N: float, psi: float,
                  detail: list | None = None, given_top=None):
    """``(sds, law)``: the standard deviation over batches of each outlier of ``P`` at ``locations`` (module
    docstring; docs/theory/two_step.md §8.5), and ``law(i, tail)``, the law of the ``i``-th as ``(x, sf)``,
    ``P(outlier > location + x) = sf`` on an ascending grid ``x`` (``None`` where its spread is 0).

    ``st``: the :class:`~rmtfl.theory._two_step.finite_n.FiniteNSetup` of the prediction; ``G_V``, ``C``, ``table``:
    the ``d``-side Gram matrix of ``P``, its coefficients on the basis of
    :func:`~rmtfl.theory._two_step.finite_n.finite_n_grams` and the :class:`~rmtfl.theory._two_step.sigma_table.FTable`
    of that basis on the data grid of ``st`` (its weights ``F(t_q; y, s)`` and their slopes in ``s``); ``g``, ``wg``:
    the nodes of the law of ``sqrt(N) a``; ``G_U_w(tau)``: the weighted ``N``-side Gram matrix.  ``tail`` (for
    ``law``): a mask of the nodes of the data grid beyond the bulk's samples (or ``None``), whose samples enter the
    law one by one, a compound Poisson sum, and the rest as a Gaussian.  A root where the eigenvalue's derivative
    cannot be taken gets 0.  ``detail``: a list that receives, per outlier, the standard deviations each part of the
    variance alone would give (``data``: the second batch's samples; ``first``: the first batch's, fresh batches;
    both with the first step's direction moving with them; ``chi2``: the batch across ``beta*``; ``rows``: the rows'
    empirical law; ``resolvent``: the bulk's own; ``None`` where the spread is 0), with ``kappa``, the outlier's move
    per unit relative move of its eigenvalue, and ``coefficients``, the spike's right vector on the Gram basis.
    ``given_top``: ``[(weight, G_V), ...]``, ``P``'s Gram over the batches given their most extreme sample at each of
    its quantiles and sides (weights summing to 1; :mod:`~rmtfl.theory._two_step.top_sample_gram`); the part of each
    spike's variance that sample carries is then the variance over them of ``(R q)^T (G_V | top - G_V) (R q) / S``
    (``detail``'s ``top``), and ``law(i, tail, left=True)`` is the law of what is left: scaled to the variance less
    that part (docs/theory/two_step.md §8.5).
    """
    k = len(locations)
    d, n1 = N / psi, st.phi * N / psi
    n2 = (st.phi2 if st.batch == "fresh" else st.phi) * N / psi
    y, zs, w = st.y, st.zs, st.w
    Fq, dF = table.F, table.ds
    fresh = st.batch == "fresh"
    sds, parts = np.zeros(k), [None] * k
    if detail is not None:
        detail[:] = [None] * k
    for i, s in enumerate(locations):
        tq, ttm = bulk.tau_rows(g / math.sqrt(N), s * s)
        got = _slope(bulk, s, G_U_w, G_V, g, N)
        if tq is None or got is None or got[1] == 0.0:
            continue                                        # no derivative: variance 0
        F = G_U_w.factor(tq)                                # F^T F = Phi_A; F^T q = Phi_A^(1/2) q' (q' of master_eigs)
        M = s * s * ttm * (F @ G_V @ F.T)
        ev, qv = np.linalg.eigh((M + M.T) / 2)
        Rq = F.T @ qv[:, int(np.argmin(np.abs(ev - 1.0)))]
        S = float(Rq @ G_V @ Rq)
        u = G_V @ Rq / S
        omega = g**2 * (u[0] + u[1:]) ** 2                  # the spike's row weights
        h = omega * tq                                      # the row terms of u^T G_U(tau) u, relative
        h = h / float(wg @ h)
        c = C.T @ Rq                                        # the combination of the Gram basis along q
        c1 = c[0] if fresh else 0.0                         # the first batch's beta_hat_1 (fresh batches)
        cv = c[1:] if fresh else c                          # the second batch's: beta_hat(_2), v_1, ..., v_Q
        wv = y * (cv[0] + cv[1:] @ Fq)                      # the sample weights w = y p(y, s)
        A = c1 * float((y * zs) @ w) + float((wv * zs) @ w)
        T = S - A * A                                       # everything across beta*
        Ey2, Ew2 = float((y * y) @ w), float((wv * wv) @ w)
        e1, e2 = c1**2 * Ey2 / n1, Ew2 / n2                 # each batch's share of the part across
        # delta S / S per sample of each batch: 2 A delta A + T (each batch's share times its E_n[w^2] moving),
        # as (along, across) coefficients of (y z*, y^2) (first batch) and (w z*, w^2) (second)
        co = (2 * A * c1 / S, T * e1 / ((e1 + e2) * Ey2 * S), 2 * A / S,
              T * e2 / ((e1 + e2) * Ew2 * S) if e2 > 0 else 0.0)
        # and the first step's direction moving with its batch: s = mus z* + tau zeta takes the batch's own
        # E_n1[y z*] and, through E_n1[y^2], its own tau; p moves by dp/ds times that, and S by twice the Gram form
        # of the spike's vector with the move (docs/theory/two_step.md §8.5, "The first step's direction")
        ps = cv[1:] @ dF
        gram, _ = basis_gram(st, np.vstack([np.ones_like(y), Fq, ps * zs, ps * st.tau * st.zeta]))
        move = 2.0 * (c @ gram[:c.size, c.size:]) / S       # delta S / S per unit delta mus and delta tau / tau
        al = (float(move[0]), float(move[1]) / (2.0 * Ey2))   # coefficients of (y z*, y^2) of the first batch
        first = (co[0] + al[0], co[1] + al[1]) if fresh else (0.0, 0.0)
        second = (co[2], co[3]) + ((0.0, 0.0) if fresh else al)
        # over the whole law of the batch, its most extreme samples included (with a heavy-tailed target they
        # dominate these sums); the chi-square factor across beta* adds 2 / d, the rows their own part
        terms = dict(data=_var(_per_sample(second, y, zs, wv), w) / n2,
                     first=_var(_per_sample(first, y, zs), w) / n1 if fresh else 0.0,
                     chi2=2.0 * (T / S) ** 2 / d, rows=_var(h, wg) / N,
                     # and the bulk's own resolvent, given the spike's vectors (the outlier CLT; near the edge)
                     resolvent=resolvent_variance(bulk, g, wg, s, N=N, d=d, weights=omega))
        var = terms["data"] + terms["chi2"] + terms["rows"] + terms["first"] + terms["resolvent"]
        kappa = got[0] / abs(got[1])
        sds[i] = kappa * math.sqrt(max(var, 0.0))
        top = 0.0
        if given_top:
            # the spike's first-order move at each quantile and side of the top sample (their mean is near 0)
            wt = np.array([wq for wq, _ in given_top])
            dev = np.array([float(Rq @ (G - G_V) @ Rq) for _, G in given_top]) / S
            top = float(wt @ dev**2 - (wt @ dev) ** 2)
        parts[i] = (wv, first, second, var, kappa, top)
        if detail is not None:
            detail[i] = {name: kappa * math.sqrt(max(v, 0.0)) for name, v in dict(terms, top=top).items()}
            detail[i].update(kappa=kappa, coefficients=c)

    def law(i, tail, left=False):
        if parts[i] is None or sds[i] == 0.0:
            return None
        wv, first, second, var, kappa, top = parts[i]
        if left:                   # what the top sample leaves: the same shape, the variance less the top's part
            if top >= var:
                return None
            kappa *= math.sqrt((var - top) / var)
        tail = np.zeros(y.size, dtype=bool) if tail is None else tail      # no tail: the Gaussian alone
        yt, zt = y[tail], zs[tail]
        jumps, rates = [_per_sample(second, yt, zt, wv[tail]) / n2], [n2 * w[tail]]
        if fresh:
            jumps.append(_per_sample(first, yt, zt) / n1)
            rates.append(n1 * w[tail])
        return _compound_law(np.concatenate(jumps), np.concatenate(rates), var, kappa)

    return sds, law


def _per_sample(co, y, zs, wv=None):
    """A sample's term of ``delta S / S`` (times the batch size): ``co`` the coefficients of ``(w z*, w^2)`` of a
    second-batch sample, then of ``(y z*, y^2)`` (the first step's direction; reused batches); with ``wv=None``,
    those of ``(y z*, y^2)`` of a first-batch sample alone."""
    if wv is None:
        return co[0] * y * zs + co[1] * y * y
    out = co[0] * wv * zs + co[1] * wv * wv
    if len(co) > 2:
        out = out + co[2] * y * zs + co[3] * y * y
    return out


def _compound_law(jumps, rates, var, kappa, points: int = 2048, bins: int = 48):
    """``(x, sf)`` of ``kappa X``: ``X`` a centred Gaussian plus the compensated compound Poisson sum of ``jumps`` at
    ``rates`` (the tails' samples one by one), of total variance ``var`` (the Gaussian takes what the jumps leave);
    by FFT of its characteristic function.  The jumps are pooled into ``bins`` bins of ``|jump|`` (geometric) keeping
    each bin's rate and mean jump; jumps whose larger ones have a total rate below ``1e-4`` per batch are left out
    of the shape (their variance stays in the Gaussian)."""
    order = np.argsort(-np.abs(jumps))
    jumps, rates = jumps[order], rates[order]
    keep = (np.cumsum(rates) >= 1e-4) & (rates > 0)         # drop the rarest, largest jumps from the shape
    jumps, rates = jumps[keep], rates[keep]
    if jumps.size > bins:
        mag = np.log(np.abs(jumps) + 1e-300)
        edges = np.linspace(mag.min(), mag.max() + 1e-12, bins // 2 + 1)
        key = np.digitize(mag, edges) * 2 + (jumps > 0)
        _, inv = np.unique(key, return_inverse=True)
        r = np.bincount(inv, weights=rates)
        jumps, rates = np.bincount(inv, weights=rates * jumps) / r, r
    core = max(var - float(rates @ jumps**2), 0.0)
    sd = math.sqrt(var)
    lo = -(float(rates @ np.clip(jumps, 0.0, None)) + 8.0 * sd)
    hi = float(rates @ np.clip(-jumps, 0.0, None)) + 8.0 * sd + float(np.max(np.abs(jumps), initial=0.0))
    x = np.linspace(lo, hi, points)
    dx = x[1] - x[0]
    t = 2.0 * np.pi * np.fft.fftfreq(points, d=dx)
    tj = np.outer(t, jumps)
    logphi = -0.5 * core * t * t + (rates * (np.expm1(1j * tj) - 1j * tj)).sum(1)
    pdf = np.clip(np.real(np.fft.fft(np.exp(logphi - 1j * t * lo))), 0.0, None)
    pdf /= pdf.sum()
    sf = 1.0 - np.cumsum(pdf) + pdf                         # P(X >= x_j)
    return kappa * x, np.clip(sf, 0.0, 1.0)


def _var(f, w):
    """Variance over one draw of each row of ``f`` (functions on nodes with probability weights ``w``)."""
    return (f * f) @ w - (f @ w) ** 2


def resolvent_variance(bulk: WidenedBulk, g, wg, s: float, *, N: float, d: float, weights) -> float:
    """The relative variance of the master equation's eigenvalue at the outlier ``s`` from the bulk's own resolvent
    (docs/theory/two_step.md §8.5, "The bulk's resolvent"), given the spike's vectors.

    With ``G = (x - H H^T)^{-1}``, ``G~ = (x - H^T H)^{-1}`` (``x = s^2``) and a spike ``theta a b^T`` (unit ``a``,
    ``b``), the outlier solves ``(1 - theta psi_x)^2 = theta^2 phi_1 phi_2`` with ``phi_1 = s a^T G a``,
    ``phi_2 = s b^T G~ b``, ``psi_x = a^T G H b``.  To first order the eigenvalue moves by
    ``d phi_1 / phi_1 + d phi_2 / phi_2 + 2 theta psi_x``, three uncorrelated terms:

    * ``N`` side: ``a_j^2`` proportional to ``weights`` at the nodes ``g`` of the law of ``sqrt(N) a`` (weights
      ``wg``); the off-diagonal ``sum_{j != k} a_j a_k G_jk`` with ``E G_jk^2 = c_j c_k / sum_l c_l``,
      ``c_j = (G^2)_jj - G_jj^2`` (the row sums of the squares, ``(G^2)_jj = -d tau_j / dx``):
      ``2 E[w c]^2 / (N E[c] E[w tau]^2)``;
    * ``d`` side, a generic direction: ``2 ((1/d) tr G~^2 - g~^2) / (d g~^2)``, ``g~ = (1/d) tr G~ = <-tt>``;
    * the cross form, ``b`` generic: ``E psi_x^2 = a^T (x G^2 - G) a / d``, and ``theta^2 phi_1 phi_2 = 1``:
      ``4 E[w (x (G^2)_jj - G_jj)] / (d x E[w tau] g~)``.

    For a Marchenko–Pastur bulk and a generic ``a`` these are the classical terms of the outlier's CLT: the spread
    of a rank-one spike over Gaussian noise is then :func:`rmtfl.theory.bgn_outlier_sd`
    (``tests/theory/two_step/test_spike_spread.py``).  The derivatives in ``x``: the implicit function theorem on the
    profile's reduced system (:meth:`~rmtfl.theory._two_step.widened_bulk.WidenedBulk.kernel_slopes`).
    """
    x = s * s
    got = bulk.kernel_slopes(np.asarray(g, dtype=float) / math.sqrt(N), x)
    if got is None:
        return 0.0
    tau, dtau, gt, dgt = got
    w = np.asarray(weights, dtype=float)
    c = np.clip(-dtau - tau * tau, 0.0, None)
    w_tau = float(wg @ (w * tau))
    n_side = 2.0 * float(wg @ (w * c)) ** 2 / (N * float(wg @ c) * w_tau**2)
    d_side = 2.0 * max(-dgt - gt * gt, 0.0) / (d * gt * gt)
    cross = 4.0 * float(wg @ (w * np.clip(-x * dtau - tau, 0.0, None))) / (d * x * w_tau * gt)
    return n_side + d_side + cross


def _slope(bulk, s, G_U_w, G_V, g, N):
    """``(lambda, d lambda / ds)`` of the eigenvalue of the master equation nearest 1 at ``s``, at fixed Gram matrices
    (central difference; one-sided next to the edge); ``None`` where it cannot be taken."""
    h = 1e-4 * s
    mid = master_eigs(bulk, s, G_U_w, G_V, g, N)
    up = master_eigs(bulk, s + h, G_U_w, G_V, g, N)
    if mid is None or up is None:
        return None
    j = int(np.argmin(np.abs(mid - 1.0)))
    lo = master_eigs(bulk, s - h, G_U_w, G_V, g, N) if s - h > bulk.edge else None
    slope = float(up[j] - mid[j]) / h if lo is None else float(up[j] - lo[j]) / (2 * h)
    return float(mid[j]), slope

