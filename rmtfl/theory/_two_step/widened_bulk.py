"""The widened bulk of ``W_2 - P`` at finite width: a separable variance profile (docs/theory/two_step.md §8.2).

Row ``j`` of the bulk is ``w_j^T ((1 + e_j) I + p_j M + q_j M^2)`` plus independent noise of relative variance ``r_j``
(one batch; fresh batches: docs/theory/two_step.md §8.2, "Fresh batches"), with ``M = X^T diag(y) X / n``.  In the
eigenbasis of ``M`` the profile ``S_jl = sum_k f_k(a_j) lambda_l^k`` is separable; the Hachem-Loubaton-Najim
system then reduces to a few unknowns (:class:`~rmtfl.theory._two_step.separable_profile.SeparableProfile`), its
fold is the edge, and its resolvent kernels give outlier locations (:func:`column_spike`, :func:`master_eigs`).
Rows are the ``N`` quantiles of the law of ``a``, columns the ``d`` quantiles of the weighted Marchenko-Pastur law
of ``M`` less the ranks its extreme samples' eigenvalues take (:func:`column_law_cdf`).
Normalisation (docs/conventions.md §3-§5): ``W_0`` entries ``N(0, 1/d)``, ``a ~ N(0, I_N/N)``, ``psi = N/d``.
"""
from __future__ import annotations

import bisect
import functools
import math

import numpy as np
from scipy import optimize, special

from .._classical.edge_count import EDGE_C
from .._classical.targets import Target
from .bulk_edge import quantile_nodes, weighted_mp_cdf, y_law
from .separable_profile import SeparableProfile, fold_edge, solve_near
from .sample_spikes import outlier_shares, y_law_truncated, y_tail

__all__ = ["WidenedBulk", "bulk_rows", "row_functions", "row_coefficients", "column_functions", "m_law_cdf",
           "column_law_cdf", "column_spike", "master_eigs", "psd_sqrt", "M_GRID", "MAX_OUTLIER_SHARE",
           "TOP_VALUE_OFFSET"]

#: Grid points of the tabulated law of ``M``.
M_GRID = 600

#: :meth:`WidenedBulk.top_values` puts the ``k``-th value where ``k - TOP_VALUE_OFFSET`` values are expected above
#: it: the mean place of a real matrix's ``k``-th value at a soft edge, as the count rule takes it
#: (``EDGE_C``, docs/theory/two_step.md §9.2).
TOP_VALUE_OFFSET = EDGE_C

#: Above this share of ``M``'s eigenvalues made by the extreme samples (a batch many times the width) the bulk's
#: columns keep the law of ``M`` over the samples inside the cut (:func:`column_law_cdf`).
MAX_OUTLIER_SHARE = 0.25

#: A grid step of the whole law of ``M`` whose mass is below this fraction of the largest step's is a gap
#: (:func:`column_law_cdf`).
GAP_DENSITY = 1e-8

#: Less mass than this beyond a flat stretch of the whole law of ``M`` is no band: the flat grid beyond the law's
#: support, not a gap inside it (He1 + He2/2 below its support: 2e-10) (:func:`_band_gap`).
BAND_MASS = 1e-6

#: Shorter continuation steps tried when one step of :meth:`WidenedBulk.kernels` fails (each a quarter of the last).
KERNEL_RETRIES = 6


def m_law_cdf(target: Target, phi: float, zrange=None):
    """Grid and CDF of the weighted Marchenko–Pastur law of ``M = X^T diag(y) X / n`` (cached by the law of ``y``);
    with ``zrange`` the samples ``z* in zrange`` only (docs/theory/two_step.md §8.3).

    The whole law of a heavy-tailed ``y`` gives ``M`` a thin tail that a coarse grid misses (He1 + He2/2: its top
    quantile at ``d = 1000`` 2 % low): it is tabulated as in docs/theory/two_step.md §5.5.  The law without the
    extreme samples has no such tail and is tabulated on ``M_GRID`` points."""
    y, w = y_law(target) if zrange is None else y_law_truncated(target, zrange)
    return _m_cdf_of(y.tobytes(), w.tobytes(), float(phi), zrange is None)


def column_law_cdf(target: Target, phi: float, zrange=None):
    """Grid and CDF of the eigenvalues of ``M`` along the bulk's columns (docs/theory/two_step.md §8.2, "The bulk's
    columns").

    The bulk leaves out the samples beyond ``zrange``, but its columns lie along the eigenvectors of the whole ``M``
    other than the ones those samples make.  Their eigenvalues are the whole law's quantiles (:func:`m_law_cdf`
    without ``zrange``) less its top ``phi * p_plus`` and bottom ``phi * p_minus`` (:func:`outlier_shares`;
    ``n p`` eigenvalues out of ``d``), not the law of ``M`` over the samples inside ``zrange``, whose top lies higher
    (He1 + He2/2, ``d = 1000``, ``n = 2000``: rank 13 of ``M`` at ``2.88``, the whole law's ``2.90``, the law over
    the samples inside ``3.15``).  Where those shares exceed :data:`MAX_OUTLIER_SHARE` the law inside ``zrange`` is
    kept.  Where the whole law ends in a band of its own beyond a gap (a target heavy-tailed on that side), the
    band's columns beyond the outliers sit at ``y / phi`` of their samples (:func:`_band_gap`), where a draw has them
    (its ranks descend without a gap), not at the band's quantiles.
    """
    if zrange is None:
        return m_law_cdf(target, phi)
    p_plus, p_minus = outlier_shares(target, zrange)
    top, bottom = phi * p_plus, phi * p_minus
    if top + bottom > MAX_OUTLIER_SHARE:
        return m_law_cdf(target, phi, zrange)
    xg, F = m_law_cdf(target, phi)
    xg, G = np.asarray(xg, dtype=float), np.array(F, dtype=float)
    for sign, share in ((1.0, top), (-1.0, bottom)):
        gap = _band_gap(xg, G, sign)
        if gap is None:
            continue
        i, band = gap
        if band <= share:
            continue
        # the band's columns beyond the outliers at the places of their samples, y / phi (the eigenvalue of M along a
        # sample that is not isolated); those whose y / phi falls inside the bulk stay at the gap's edge
        rest = np.clip(phi * y_tail(target, sign * phi * xg, sign) - share, 0.0, band - share)
        if sign > 0:
            G[i:] = (1.0 - share) - rest[i:]
        else:
            G[:i + 1] = share + rest[:i + 1]
    return xg, np.clip((G - bottom) / (1.0 - top - bottom), 0.0, 1.0)


def _band_gap(xg, F, sign):
    """``(i, mass)``: the whole law's first gap past its median on the side ``sign`` (``i`` the grid index of the
    bulk's end on that side) and the mass beyond it, a band of the most extreme samples; ``None`` without a gap (a
    flat stretch with less than :data:`BAND_MASS` beyond it lies outside the law's support)."""
    dF = np.diff(F)
    mid = int(np.searchsorted(F, 0.5))
    flat = np.flatnonzero(dF < GAP_DENSITY * np.max(dF))
    if sign > 0:
        flat = flat[(flat >= mid) & (1.0 - F[flat] > BAND_MASS)]
        return None if flat.size == 0 else (int(flat[0]), float(1.0 - F[flat[0]]))
    flat = flat[(flat < mid) & (F[flat + 1] > BAND_MASS)]
    return None if flat.size == 0 else (int(flat[-1]) + 1, float(F[flat[-1] + 1]))


@functools.lru_cache(maxsize=64)
def _m_cdf_of(yb: bytes, wb: bytes, phi: float, whole: bool):
    y, w = np.frombuffer(yb), np.frombuffer(wb)
    if whole:
        return weighted_mp_cdf(y, w, phi)
    return weighted_mp_cdf(y, w, phi, grids=(M_GRID // 4, M_GRID // 2, M_GRID), floor=1e-10)


def bulk_rows(st, t, table):
    """``(cbar, rem, ident, cross, ident_c)`` over the first step's ``t`` (:func:`row_coefficients`;
    docs/theory/two_step.md §8.2, "Widened bulk"): ``y c_e`` split into an identity part ``ident`` (``e P``) and a part
    ``cbar`` along ``M`` by least squares over the data the bulk holds, the variance ``rem`` of what the profile does
    not hold (relative to ``E y^2``), ``cross``, the covariance of the two steps' remainders on a reused batch, and
    ``ident_c``, the identity part of the same split of ``y c`` (the second step's response to the first step's
    remainder).  ``st``: the setup of the bulk's samples; ``table``: :func:`~rmtfl.theory._two_step.sigma_table.F_table`
    at ``t``."""
    Fq, Cq, Sq, Zq = table.F, table.c, table.sq, table.cz
    w, y = st.w, st.y
    yw = y * y * w
    # the coefficient of the part of sigma' linear in w_j: c_z, the sample's own term in D included, less what
    # the first step's move along M already holds through the diagonal of M^2 (reused;
    # docs/theory/two_step.md §8.2, "The sample's own term and the two remainders"); relu's table keeps c
    own = st.batch == "reused" and table.x1 is not None
    ce = Zq - (t * st.mu2 / st.phi)[:, None] * (y[None, :] * Cq) if own else Cq
    # least squares of y c on (1, y) over the data the bulk holds (weights summing to its share P of the batch,
    # not centred when it leaves extreme samples out): X^T diag(y c) X / n ~ e P I + cbar M, M's own mean in M;
    # what the fit leaves, X^T diag(rho) X / n w_j, is noise of variance E rho^2 / phi
    P, E1 = float(w.sum()), float(y @ w)
    det = P * st.ey2 - E1 * E1

    def split(c):        # (identity part, part along M) of y c
        along = (P * (c @ yw) - E1 * (c @ (y * w))) / det
        return ((c @ (y * w)) - E1 * along) / P, along

    e, cbar = split(ce)
    resid = ((y[None, :] * ce - e[:, None] - cbar[:, None] * y[None, :]) ** 2) @ w
    # the w_j-linear part of sigma': z with coefficient c_z (its own term in D included) and the first step's move
    # along M with c t mu_2 (over the whole first batch: tau^2 = E y^2 / phi_1); the profile holds its variance
    lin = Zq**2 + Cq**2 * (t**2 * st.mu2**2 * st.tau**2)[:, None]
    # a reused batch: the two steps' remainders come from the same samples and are correlated
    cross = (table.x1 @ yw) / st.ey2 if table.x1 is not None else np.zeros_like(t)
    # the second step responds to the first step's remainder, a move along the other samples, with c, not c_z
    # (docs/theory/two_step.md §8.2, "The second step's response to the first step's remainder")
    ec = e if ce is Cq else split(Cq)[0]
    return (cbar, (np.clip((Sq - Fq**2 - lin) @ yw, 0.0, None) + resid) / st.ey2, e * P, cross, ec * P)


def row_coefficients(a, st, eta1, eta2, tn, rows):
    """``(e, p1, p2, q, r)`` at the rows ``a`` (docs/theory/two_step.md §8.2): row ``j`` of the bulk is
    ``w_j (I + eta1 a mu2 M_1)((1 + e) I + eta2 a cbar M_2)`` plus noise of variance ``r``, that is
    ``w_j ((1 + e) I + p1 M_1 + p2 M_2 + q M_1 M_2)``; ``rows``: the tables ``(cbar, rem, ident, cross, ident_c)``
    over the nodes ``tn`` of ``t`` (:func:`bulk_rows`): the split of ``y c``, the remainder's variance, the
    covariance of the two steps' remainders (zero for fresh batches) and the identity part of the second step's
    response to the first step's remainder."""
    def at(k):           # table k at the rows' t
        return np.interp(eta1 * a, tn, rows[k]) if tn.size > 1 else np.full_like(a, rows[k][0])

    cbar, rem, ident, cross, ident_c = (at(k) for k in range(5))
    phi2 = st.phi2 if st.batch == "fresh" else st.phi
    e = eta2 * a * ident
    p1, p2 = (1 + e) * eta1 * a * st.mu2, eta2 * a * cbar
    q = eta1 * eta2 * a * a * st.mu2 * cbar
    # the two steps' remainders (variances r_1, r_2) and, on a reused batch, their covariance; the first step's
    # remainder t rho_1 is carried by the second step's identity response to it, (1 + eta2 a ident_c) t rho_1
    # (docs/theory/two_step.md §8.2, "The second step's response to the first step's remainder")
    r1 = (1 + eta2 * a * ident_c) ** 2 * (eta1 * a) ** 2 * st.ey2 * max(st.sp2 - st.mu1**2 - st.mu2**2, 0.0) / st.phi
    r = r1 + (eta2 * a) ** 2 * st.ey2 * rem / phi2 + 2 * (1 + e) * eta1 * eta2 * a * a * st.ey2 * cross / st.phi
    r = np.maximum(r, 0.0)        # a variance, whatever the quadrature makes of a covariance that cancels it
    return e, p1, p2, q, r


def row_functions(a, st, eta1, eta2, tn, rows, basis="second"):
    """``f_k`` of the separable profile at the rows ``a`` (docs/theory/two_step.md §8.2), from
    :func:`row_coefficients`.

    Fresh batches: ``basis`` names the batch whose ``M`` gives the columns (its eigenvectors); the other ``M`` is
    averaged over directions."""
    e, p1, p2, q, r = row_coefficients(a, st, eta1, eta2, tn, rows)
    one = 1 + e
    if st.batch != "fresh":   # one batch: M_1 = M_2 = M, so w_j ((1 + e) + p M + q M^2)
        p = p1 + p2
        return np.stack([one * one, 2 * one * p, p * p + 2 * one * q, 2 * p * q, q * q, r], axis=1)
    zero = np.zeros_like(a)
    m1 = st.ey1
    if basis == "second":
        # columns along the eigenvectors u of M_2 (eigenvalue l): C u = (1 + e + p2 l) u + (p1 + q l) M_1 u, with
        # u^T M_1 u -> E y and |M_1 u|^2 -> E y^2 / phi_1 + (E y)^2 (docs/theory/two_step.md §8.2)
        m2 = st.tau**2 + m1**2
        return np.stack([one * one + p1 * p1 * m2 + 2 * one * p1 * m1,
                         2 * one * p2 + 2 * p1 * q * m2 + 2 * (one * q + p1 * p2) * m1,
                         p2 * p2 + q * q * m2 + 2 * p2 * q * m1, zero, zero, r], axis=1)
    # columns along the eigenvectors of M_1 (eigenvalue l), M_2 averaged: (1 + al)^2 (b^2 + 2 b g E y)
    # + g^2 |M_2 u|^2 (1 + 2 al E y + al^2 |M_1 u|^2) with al = eta1 a mu2, b = 1 + e, g = p2
    al = eta1 * a * st.mu2
    m2_2 = st.tau**2 * st.phi / st.phi2 + m1**2
    B = one * one + 2 * one * p2 * m1
    C = p2 * p2 * m2_2 * (1 + 2 * al * m1 + al * al * (st.tau**2 + m1**2))
    return np.stack([B + C, 2 * al * B, al * al * B, zero, zero, r], axis=1)


def column_functions(lam):
    """The profile's column functions at ``M``-eigenvalues ``lam``: ``lambda^0 .. lambda^4`` and the constant of the
    noise ``r`` (docs/theory/two_step.md §8.2), one row per column."""
    lam = np.asarray(lam, dtype=float)
    return np.stack([lam**k for k in range(5)] + [np.ones_like(lam)], axis=-1)


class WidenedBulk:
    """The separable profile of ``W_2 - P`` at width ``N``: edge and resolvent kernels above it."""

    def __init__(self, st, target, *, eta1, eta2, N, psi, tn, rows, second_layer, zrange=None, basis="second"):
        d = max(int(round(N / psi)), 1)
        Nn = int(round(N))
        self.basis = basis
        xg, Fm = column_law_cdf(target, st.phi2 if st.batch == "fresh" and basis == "second" else st.phi, zrange)
        lam, wl = quantile_nodes(d, lambda p: np.interp(p, Fm, xg))
        if second_layer == "gaussian":
            a, wa = quantile_nodes(Nn, lambda p: special.ndtri(p) / math.sqrt(N))
        else:
            a, wa = np.array([-1.0, 1.0]) / math.sqrt(N), np.full(2, 0.5)
        self.a, self.wa, self.zrange = a, wa, zrange
        self.eta1, self.eta2, self.N, self.st, self.tn, self.rows = eta1, eta2, N, st, tn, rows
        colh = column_functions(lam)
        rowf = row_functions(a, st, eta1, eta2, tn, rows, basis)
        self._rowf = {np.asarray(a, dtype=float).tobytes(): rowf}   # row functions by rows (:meth:`functions`)
        self.red = SeparableProfile(rowf, colh, Nn / d, wa, wl)
        cmax = float(np.max(np.abs(self.red.rowf) @ np.abs(colh).max(0)))
        self.x_start = 4.0 * (1 + math.sqrt(Nn / d)) ** 2 * max(cmax, 1.0)
        path = []
        self.x_edge = fold_edge(self.red, self.x_start, path)
        self.edge = math.sqrt(self.x_edge)
        self._xs, self._vs = [], []   # points solved above the edge: x ascending, and the unknowns there
        for x, v in path:             # the fold's continuation solved the kernels on its way down
            if x > self.x_edge:
                self._keep(x, v)

    def _solve_x(self, x, guess):
        red = self.red

        last = [None, None]          # Newton's last residual, which the acceptance test asks for again

        def res(v):
            if last[0] is not v:
                last[0], last[1] = v, red.stacked_equations(v, x)
            return last[1]

        def jac(v):
            return red.stacked_derivatives(v, x, slope=False)

        return solve_near(res, jac, guess, xtol=1e-12, accept=lambda v: bool(np.abs(res(v)).max() < 1e-9))

    def kernels(self, x):
        """``(A, B)`` of the profile at ``x > x_edge``, by continuation from ``x_start``; ``None`` below the edge
        (inside the bulk no real solution continues the one above, and the continuation's steps would only creep
        toward the edge)."""
        if x < self.x_edge * (1.0 - 1e-9):
            return None
        if not self._xs or x > self._xs[-1]:
            xs = max(self.x_start, x)
            v0 = np.concatenate([-self.red.psi * self.red.Pa.sum(0) / xs, -self.red.Pl.sum(0) / xs])
            v = self._solve_x(xs, v0)
            if v is None:
                return None
            self._keep(xs, v)
        i = bisect.bisect_left(self._xs, x)        # the nearest point solved at or above x
        xc, v = self._xs[i], self._vs[i]
        if xc > x and i > 0:
            # between two solved points: the parabola through them and the next nearest is the first guess
            u = self._solve_x(x, self._between(i, x))
            if u is not None:
                self._keep(x, u)
                return u
        while xc > x:
            xn = max(x, xc / 1.3, self.x_edge + 0.5 * (xc - self.x_edge))
            if xc - x < 1e-12 * x:
                xn = x
            u = self._solve_x(xn, v)
            for _ in range(KERNEL_RETRIES):      # a failed step near the fold: shorter steps from the same point
                if u is not None:
                    break
                xn = xc - 0.25 * (xc - xn)
                u = self._solve_x(xn, v)
            if u is None:
                return None
            xc, v = xn, u
            self._keep(xc, v)
        return v

    def _between(self, i, x):
        """The unknowns at ``x`` between the solved points ``i - 1`` and ``i``, interpolated through them and the
        nearer of their outer neighbours (the chord where there is none)."""
        xs, vs = self._xs, self._vs
        j = [i - 1, i]
        outer = [k for k in (i - 2, i + 1) if 0 <= k < len(xs) and xs[k] not in (xs[i - 1], xs[i])]
        if outer:
            j.append(min(outer, key=lambda k: abs(xs[k] - x)))
        out = 0.0
        for a in j:
            w = 1.0
            for b in j:
                if b != a:
                    w *= (x - xs[b]) / (xs[a] - xs[b])
            out = out + w * vs[a]
        return out

    def _keep(self, x, v):
        i = bisect.bisect_right(self._xs, x)       # after any point at the same x: the first one solved is used
        self._xs.insert(i, x)
        self._vs.insert(i, v)

    def top_values(self, count: int, *, points: int = 80, levels: int = 8, sweeps: int = 12):
        """The ``count`` largest singular values of the bulk where its density puts them
        (docs/theory/two_step.md §9.2).

        The ``k``-th lies where ``k - c`` eigenvalues of ``H H^T`` are expected above it (``c =``
        :data:`TOP_VALUE_OFFSET`, the count rule's ``EDGE_C``: at a real matrix's soft edge the ``k``-th value's mean
        sits there, not at ``k - 1/2``; docs/theory/two_step.md §9.2), from the density ``Im m(x + i eta) / pi`` of
        the profile's Stieltjes transform (the reduced system at complex ``x``, damped fixed point from ``eta ~ x``
        down to a fortieth of the grid step) on a grid below the edge.  A long thin tail (heavy-tailed ``y``: the
        extreme samples left in the bulk) puts these values far below the edge.
        Accuracy (measured, 2026-12-07): against Gaussian matrices of the bulk's own profile (tanh and gelu, He1 +
        He3/sqrt(6), ``(0.4, 0.4)``, ``N = 1000``: ranks 1-3 within 2 s.e. of 64 draws) and, on the grid, against
        1280 points (the quadratic sigma, He1 + He2/2, ``(0.4, 0.4)``: ranks 1, 11 and 31 ``7.170, 4.656, 3.388``
        here, ``7.157, 4.635, 3.367`` there).  In that thin tail of single heavy rows they lie 1-2 % above the
        draws of the same profile (``tests/theory/two_step/test_widened_bulk.py``).
        """
        N, xe = int(round(self.N)), self.x_edge
        span = min(0.95, 6.0 * (count / N) ** (2.0 / 3.0))
        for _ in range(4):                              # widen the window until it holds ``count`` values
            u = np.linspace(0.0, 1.0, points)
            x = xe * (1.02 - (0.02 + span) * u**1.5)[::-1]
            _, above = self.resolvent_below(x, 0.025 * xe * span / points, levels=levels, sweeps=sweeps)
            if above[0] >= count or span >= 0.95:
                break
            span = min(0.95, 2.0 * span)
        k = np.arange(1, count + 1) - TOP_VALUE_OFFSET
        return np.sqrt(np.interp(-k, -above, x, left=x[0]))

    def resolvent_below(self, x, eta_min, *, levels: int = 8, sweeps: int = 12):
        """``(t, above)`` on the ascending grid ``x`` (of ``x = s^2``), near the real axis
        (docs/theory/two_step.md §9.2): ``t`` the row kernels ``t_j(x + i eta_min)`` at the bulk's rows (``len(x) x
        N``; ``-t`` is the row kernel ``tau`` of the column equations, continued below the edge), ``above`` the
        expected number of eigenvalues of ``H H^T`` above each ``x``.

        The reduced system at complex ``x``: a damped fixed point from ``eta ~ x`` down to ``eta_min``.
        """
        red, N = self.red, int(round(self.N))
        x = np.asarray(x, dtype=float)
        z = x + 1j * np.max(x)
        A = np.zeros((x.size, red.K), complex)
        B = np.zeros((x.size, red.K), complex)
        A[:, 0], B[:, 0] = -red.psi / z, -red.Pl[:, 0].sum() / z
        # the sweep's four products in real arithmetic (half the time of numpy's complex-times-real ones): a complex
        # array viewed as (re, im) pairs times kron(M, I_2) is its product with M.  z (1 + B f^T) is [z B, z] times
        # [f^T; 1], and the damping's 0.7 and psi are in the column means' matrices
        rows, cols = (np.kron(np.vstack([f.T, np.ones(len(f))]), np.eye(2)) for f in (red.rowf, red.colh))
        mean_a, mean_l = (np.kron(0.7 * P, np.eye(2)) for P in (red.psi * red.Pa, red.Pl))

        def kernel(z, U, F):          # -1 / (z (1 + U f^T)) at the rows (F: rows) or the columns (F: cols)
            out = (np.concatenate([z * U, z], axis=1).view(float) @ F).view(complex)
            return np.divide(-1.0, out, out=out)

        for eta in np.geomspace(float(np.max(x)), eta_min, levels):
            z = (x + 1j * eta)[:, None]
            for _ in range(sweeps):
                t, tt = kernel(z, B, rows), kernel(z, A, cols)
                A = (t.view(float) @ mean_a).view(complex) + 0.3 * A
                B = (tt.view(float) @ mean_l).view(complex) + 0.3 * B
        # the density of H H^T is Im <t_j> / pi over the rows, not Im A_0 / (psi pi): A_0 = psi <f_0 t> weights the rows
        # by f_0 = (1 + e_j)^2, which is not 1 once the second step has an identity part (docs/theory/two_step.md §9.2)
        rho = np.maximum((t @ self.wa).imag, 0.0) / np.pi
        above = N * np.concatenate([np.cumsum(((rho[1:] + rho[:-1]) / 2 * np.diff(x))[::-1])[::-1], [0.0]])
        return t, above

    def tau_rows(self, a, x):
        """``-t(a)`` at rows ``a`` and ``<-tt>`` at ``x`` (docs/theory/two_step.md §8.2)."""
        v = self.kernels(x)
        if v is None:
            return None, None
        K = self.red.K
        A, B = v[:K], v[K:]
        f = self.functions(a)
        Dtt = 1.0 + self.red.colh @ A          # the column denominators of :meth:`SeparableProfile.parts`
        return 1.0 / (x * (1.0 + f @ B)), float(self.red.Pl[:, 0] @ (1.0 / (x * Dtt)))

    def tau_columns(self, lam, x):
        """``-tt`` at columns of ``M``-eigenvalues ``lam`` at ``x``: the column kernel, the counterpart of
        :meth:`tau_rows` (its mean over the bulk's columns is ``<-tt>``).  A row of profile ``S(a, lambda)`` has the
        strength ``E_l[S(a, lambda_l) tau~(lambda_l)]`` over the bulk's columns (docs/theory/two_step.md §8.2;
        docs/theory/two_step_attempts.md §25); ``None`` where the kernels are not found."""
        v = self.kernels(x)
        if v is None:
            return None
        return 1.0 / (x * (1.0 + column_functions(lam) @ v[:self.red.K]))

    def functions(self, a):
        """The profile's row functions (:func:`row_functions`) at rows ``a``; they do not depend on ``x``: one
        evaluation per set of rows (the array is shared: not to be written to)."""
        key = np.asarray(a, dtype=float).tobytes()
        f = self._rowf.get(key)
        if f is None:
            f = self._rowf[key] = row_functions(a, self.st, self.eta1, self.eta2, self.tn, self.rows, self.basis)
        return f

    def kernel_slopes(self, a, x):
        """``(tau, dtau/dx, g, dg/dx)``: the row kernel ``tau = -t(a)`` at rows ``a`` and ``g = <-tt>`` at ``x``
        (as :meth:`tau_rows`) with their derivatives in ``x``, by the implicit function theorem on the reduced
        system (one linear solve at the kernels already solved there); ``None`` where the kernels are not found
        (docs/theory/two_step.md §8.5)."""
        v = self.kernels(x)
        if v is None:
            return None
        red, K = self.red, self.red.K
        A, B = v[:K], v[K:]
        J, dx = red.derivatives(A, B, x)
        try:
            dv = -np.linalg.solve(J, dx)
        except np.linalg.LinAlgError:
            return None
        dA, dB = dv[:K], dv[K:]
        f = self.functions(a)
        tau = 1.0 / (x * (1.0 + f @ B))
        dtau = -tau / x - x * tau * tau * (f @ dB)
        Dtt = 1.0 + red.colh @ A
        w = red.Pl[:, 0]
        g = float(w @ (1.0 / (x * Dtt)))
        dg = -float(w @ (1.0 / (x * x * Dtt) + (red.colh @ dA) / (x * Dtt * Dtt)))
        return tau, dtau, g, dg


def column_spike(bulk: WidenedBulk, a, wa, excess, *, rtol: float = 1e-12):
    """Singular value of the isolated column with per-row excess variance ``excess`` (docs/theory/two_step.md §8.3).

    The column (a direction of the input space) has variance ``1 + r(a_j) + excess_j`` in row ``j`` (units of
    ``1/d``); its isolated eigenvalue ``x = s^2`` of ``W^T W`` solves ``psi E_j[v_j (-t_j(x))] = 1`` above the edge
    (the column denominator of the variance-profile equations).  ``None`` when it stays inside the bulk.
    ``rtol``: relative accuracy of ``x``.
    """
    v = 1.0 + bulk.functions(a)[:, 5] + excess
    psi = bulk.red.psi

    def f(x):
        tq, _ = bulk.tau_rows(a, x)
        return psi * float(wa @ (v * tq)) - 1.0 if tq is not None else -1.0

    xe = bulk.x_edge * (1 + 1e-7)
    if f(xe) <= 0:
        return None
    hi = 2 * xe
    while f(hi) > 0 and hi < 1e12:
        hi *= 2
    if f(hi) > 0:
        raise RuntimeError(f"a column of the finite-N bulk has no outlier location below x = {hi:.3g}")
    return math.sqrt(optimize.brentq(f, xe, hi, xtol=rtol * hi))


def psd_sqrt(G):
    """The symmetric square root of a positive semi-definite matrix (negative rounding clipped)."""
    lu, Qu = np.linalg.eigh((G + G.T) / 2)
    return (Qu * np.sqrt(np.maximum(lu, 0.0))) @ Qu.T           # maximum: clip's values, a fraction of its time


def master_eigs(bulk: WidenedBulk, s, G_U_w, G_V, g, N):
    """Eigenvalues of ``Phi_A(s) Phi_B(s)`` (the master equation of docs/theory/two_step.md §8.1, with the profile).

    ``G_U_w``: the ``N``-side Gram matrix with row weights ``tau`` at the nodes ``g``
    (:class:`~rmtfl.theory._two_step.left_gram.WeightedGram`).  Taken as ``F G_V F^T`` with its factor ``F``
    (``F^T F = Phi_A``): the same nonzero eigenvalues as ``Phi_A^(1/2) G_V Phi_A^(1/2)``, one per node.
    """
    tq, ttm = bulk.tau_rows(g / math.sqrt(N), s * s)
    if tq is None:
        return None
    F = G_U_w.factor(tq)
    M = s * s * ttm * (F @ G_V @ F.T)
    return np.sort(np.linalg.eigvalsh((M + M.T) / 2))[::-1]


