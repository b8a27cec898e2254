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
components with variance ``E_n[w^2] / n`` each (a chi-square factor of relative variance ``2/d``).  The bulk's own
``O(N^{-1/2})`` fluctuation of the resolvent is left out: it matters near the edge, not for spikes well above it;
and so is the correlation between spikes.  Deterministic: no sampling, the quadrature rules of the prediction.
"""
from __future__ import annotations

import math

import numpy as np

from .widened_bulk import WidenedBulk, master_eigs, psd_sqrt

__all__ = ["spike_spreads"]


def spike_spreads(bulk: WidenedBulk, st, *, G_V, C, Fq, g, wg, G_U_w, locations, N: float,
                  psi: float) -> np.ndarray:
    """Standard deviation over batches of each outlier of ``P`` at ``locations`` (module docstring;
    docs/theory/two_step.md §8.5).

    ``st``: the :class:`~rmtfl.theory._two_step.finite_n.FiniteNSetup` of the prediction; ``G_V``, ``C``, ``Fq``:
    the ``d``-side Gram matrix of ``P``, its coefficients on the basis of
    :func:`~rmtfl.theory._two_step.finite_n.finite_n_grams` and the weights ``F(t_q; y, s)`` of that basis on the data
    grid of ``st``; ``g``, ``wg``: the nodes of the law of ``sqrt(N) a``; ``G_U_w(tau)``: the weighted ``N``-side
    Gram matrix.  A root where the eigenvalue's derivative cannot be taken gets 0.
    """
    k = len(locations)
    if k == 0:
        return np.zeros(0)
    d, n1 = N / psi, st.phi * N / psi
    n2 = (st.phi2 if st.batch == "fresh" else st.phi) * N / psi
    y, zs, w = st.y, st.zs, st.w
    fresh = st.batch == "fresh"
    kappa, across = np.zeros(k), np.zeros(k)
    hu = np.zeros((k, g.size))
    f1, f2 = np.zeros((k, y.size)), np.zeros((k, y.size))   # delta S / S per sample of the first / second batch
    for i, s in enumerate(locations):
        tq, ttm = bulk.tau_rows(g / math.sqrt(N), s * s)
        got = _slope(bulk, s, G_U_w, G_V, g, N)
        if tq is None or got is None or got[1] == 0.0:
            continue                                        # no derivative: variance 0
        R = psd_sqrt(G_U_w(tq))
        M = s * s * ttm * (R @ G_V @ R)
        ev, qv = np.linalg.eigh((M + M.T) / 2)
        Rq = R @ qv[:, int(np.argmin(np.abs(ev - 1.0)))]
        S = float(Rq @ G_V @ Rq)
        u = G_V @ Rq / S
        h = g**2 * tq * (u[0] + u[1:]) ** 2                  # the row terms of u^T G_U(tau) u, relative
        hu[i] = h / float(wg @ h)
        kappa[i] = got[0] / abs(got[1])
        c = C.T @ Rq                                        # the combination of the Gram basis along q
        c1 = c[0] if fresh else 0.0                         # the first batch's beta_hat_1 (fresh batches)
        wv = y * (c[1] + c[2:] @ Fq) if fresh else y * (c[0] + c[1:] @ Fq)
        A = c1 * float((y * zs) @ w) + float((wv * zs) @ w)
        T = S - A * A                                       # everything across beta*
        Ey2, Ew2 = float((y * y) @ w), float((wv * wv) @ w)
        e1, e2 = c1**2 * Ey2 / n1, Ew2 / n2                 # each batch's share of the part across
        # delta S = 2 A delta A + T (each batch's share times its E_n[w^2] moving) + the chi-square factor below
        f1[i] = (2 * A * c1 * y * zs + (T * e1 / (e1 + e2)) * y * y / Ey2) / S
        f2[i] = (2 * A * wv * zs + (T * e2 / (e1 + e2) * wv * wv / Ew2 if e2 > 0 else 0.0)) / S
        across[i] = T / S
    # over the whole law of the batch, its most extreme samples included: with a heavy-tailed target they dominate
    # these sums, and the Gaussian of this variance is what the prediction uses (docs/theory/two_step.md §8.5);
    # the chi-square factor of the Gaussian vectors of d components across beta* adds 2 / d to the relative variance
    var_v = _var(f2, w) / n2 + (_var(f1, w) / n1 if fresh else 0.0) + 2.0 * across**2 / d
    return kappa * np.sqrt(np.clip(_var(hu, wg) / N + var_v, 0.0, None))


def _var(f, w):
    """Variance over one draw of each row of ``f`` (functions on nodes with probability weights ``w``)."""
    return (f * f) @ w - (f @ w) ** 2


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

