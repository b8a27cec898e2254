"""Two large steps at finite width, non-perturbative in the first step (docs/theory/two_step.md §8.2).

Normalisation (docs/conventions.md §3–§5): ``W_0`` entries ``N(0, 1/d)``, ``a ~ N(0, I_N/N)``
(fixed), ``x ~ N(0, I_d)``, correlation loss with mean reduction, ``eta_t`` as given,
``psi = N/d``, ``phi = n/d`` (``phi2 = n_2/d`` for a fresh second batch).  Links are centred.

Neuron ``j`` sees, in the second step, the pre-activation ``z + t_j D`` with ``t_j = eta_1 a_j``
and ``D ≈ y sigma'(z)/phi + mu_1 s~ + xi`` (reused) or ``mu_1 s + xi`` (fresh), docs/theory/two_step.md §5.2.
Instead of Taylor-expanding ``sigma'`` in ``t_j`` (docs/theory/two_step.md §5.3) we keep it exact:

    F(t; y, s) = E_{z, xi} sigma'(z + t D),     c(t; y, s) = E_{z, xi} z sigma'(z + t D),

by Gauss–Hermite quadrature over ``(z, xi)``.  The low-rank part is

    P = eta_1 mu_1 a beta_hat_1^T + eta_2 sum_j a_j e_j v(t_j)^T,   v(t) = X_2^T (y_2 ⊙ F(t; y_2, s)) / n_2,

and the sum over neurons becomes a quadrature over the law of ``g = sqrt(N) a`` (Gauss–Hermite
nodes ``g_q``, weights ``w_q``): ``P^T P ≈ sum_q w_q g_q^2 p_q p_q^T``.  The nonzero singular
values of ``P`` are those of a ``(Q + 1)``-dimensional Gram problem; the ``d``-side Gram matrix
of ``{beta_hat, v(t_q)}`` is the limit formula of docs/theory/two_step.md §7.2 with the
weights ``P_k`` replaced by ``F(t_q; ., .)``.  For ``t -> 0``, ``F = sum_k t^k P_k / k!``: the
Taylor terms of docs/theory/two_step.md §5.3 are recovered.

The bulk ``W_2 - P`` (docs/theory/two_step.md §8.2) has rows ``w_j^T (I + p_j M + q_j M^2)`` plus
independent noise of relative variance ``r_j``, with ``p_j, q_j, r_j`` functions of ``a_j`` from
``c`` and the remainder variance; its edge is the fold of a separable variance-profile equation
(:func:`rmtfl.theory._two_step.bulk_edge.separable_profile`), and the outliers solve the
master equation with that profile (``N``-side weights ``-t(a)``), not the MP BGN formula.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
from scipy import optimize, special

from rmtfl._results import Result
from .._classical.activations import Activation
from .._classical.hermite import gauss_hermite_rule, gaussian_moment, hermite_coeff
from .._classical.targets import Target
from .bulk_edge import SeparableProfile, fold_edge, quantile_nodes, weighted_mp_stieltjes, y_law
from . import sample_spikes
from .sample_order import order_statistics
from .sample_spikes import bulk_cut, m_spike, sample_strengths, tail_bins, truncated_rule, y_law_truncated

__all__ = ["FiniteNSetup", "finite_n_setup", "finite_n_grams", "F_table", "MAX_TARGET_DEGREE", "FiniteNResult",
           "predict_finite_n", "check_finite_n_inputs", "T_MAX_CHECKED", "master_eigs", "column_spike"]

#: Highest Hermite degree of a polynomial target link that the quadrature orders below integrate.
MAX_TARGET_DEGREE = 4

_ZS_ORDER, _ZETA_ORDER, _EPS_ORDER = 24, 16, 6   # data grid (z*, zeta[, eps])
_Z_ORDER, _XI_ORDER = 20, 6                        # inner (z, xi) for F and c
_G_ORDER = 16                                      # law of g = sqrt(N) a
_M_GRID = 600


@dataclass(frozen=True)
class FiniteNSetup(Result):
    """The data grid and the per-sample quantities that every finite-``N`` evaluation shares.

    ``y, s, zs, zeta, w``: nodes and weights of the law of ``(y, s~ or s, z*, zeta)``;
    ``tau = sqrt(E y^2 / phi_1)``, ``tau_h`` the neuron-fluctuation scale (docs/theory/two_step.md §5.2).
    """

    y: np.ndarray
    s: np.ndarray
    zs: np.ndarray
    zeta: np.ndarray
    w: np.ndarray
    mu1: float
    mu2: float
    mus: float
    ey2: float
    tau: float
    tau_h: float
    phi: float
    phi2: float | None
    batch: str
    sp2: float   # E[sigma'^2]
    ey1: float = 0.0   # E[y] over the whole batch


def finite_n_setup(act: Activation, target: Target, *, phi, batch, phi2, zs_rule=None, ey2_ref=None) -> FiniteNSetup:
    """Data grid of the finite-``N`` route (single-index target, label noise included).

    ``zs_rule``: nodes and weights of ``z*`` replacing the Gauss–Hermite rule (the bulk samples only,
    docs/theory/two_step.md §8.3; ``ey2`` is then their share of ``E y^2``); ``ey2_ref``: the ``E y^2`` that sets
    ``tau`` and ``tau_h`` (the whole batch).
    """
    zs1, wz = gauss_hermite_rule(_ZS_ORDER) if zs_rule is None else zs_rule
    ze1, wze = gauss_hermite_rule(_ZETA_ORDER)
    ZS, ZE = np.meshgrid(zs1, ze1, indexing="ij")
    W = np.outer(wz, wze)
    y = np.asarray(target.links[0](ZS), dtype=float)
    if target.noise > 0:
        e1, we = gauss_hermite_rule(_EPS_ORDER)
        y = y[..., None] + target.noise * e1
        ZS, ZE = (np.broadcast_to(A[..., None], y.shape) for A in (ZS, ZE))
        W = W[..., None] * we
    y, ZS, ZE, W = (np.ascontiguousarray(A).ravel() for A in (y, ZS, ZE, W))
    mu1 = hermite_coeff(act, 1)
    mu1 = 0.0 if abs(mu1) < 1e-14 else mu1
    mu2 = hermite_coeff(act, 2) if act.smooth else 0.0
    mus = float(target.mu1[0])
    mus = 0.0 if abs(mus) < 1e-14 else mus
    ey2 = float(target.second_moment) if zs_rule is None else float(W @ (y * y))
    ey2_t = ey2 if ey2_ref is None else float(ey2_ref)
    tau = math.sqrt(ey2_t / phi)
    sp2 = gaussian_moment(act, 1, 1)
    tau_h = math.sqrt(max(sp2 - mu1**2, 0.0) * ey2_t / phi)
    s = mus * ZS + tau * ZE
    return FiniteNSetup(y, s, ZS, ZE, W, mu1, mu2, mus, ey2, tau, tau_h, phi, phi2, batch, sp2,
                        float(target.mu0[0]))


def F_table(act: Activation, st: FiniteNSetup, t, *, bulk=True):
    """``F(t_q; y_i, s_i)``, ``c(t_q; y_i, s_i)`` and ``E sigma'(.)^2`` on the data grid: arrays ``(Q, I)``.

    ``F = E_{z,xi} sigma'(z + t D)``, ``c = E_{z,xi} sigma''(z + t D)`` (the coefficient of the
    part of ``sigma'`` linear in ``w_j``, Stein; only with ``bulk``) with
    ``D = y sigma'(z)/phi + mu_1 s + xi`` (reused) or ``mu_1 s + xi`` (fresh), ``xi ~ N(0, tau_h^2)``.
    """
    t = np.atleast_1d(np.asarray(t, dtype=float))
    z, wz = gauss_hermite_rule(_Z_ORDER)
    xi, wx = gauss_hermite_rule(_XI_ORDER)
    sp_z = act.derivative(1, z)                                   # (A,)
    base = st.mu1 * st.s[:, None, None] + st.tau_h * xi[None, None, :]          # (I, 1, B)
    if st.batch == "reused":
        base = base + (st.y[:, None] / st.phi * sp_z[None, :])[:, :, None]      # (I, A, B)
    Fo = np.empty((t.size, st.y.size))
    Co = np.empty_like(Fo)
    So = np.empty_like(Fo)
    wzx = np.outer(wz, wx)
    f0 = float(wz @ sp_z)                                   # quadrature mu_1: F(0) = mu_1 exactly
    c0 = float(wz @ act.derivative(2, z)) if bulk else 0.0
    for q, tq in enumerate(t):
        u = z[None, :, None] + tq * base
        v = act.derivative(1, u)
        Fo[q] = np.einsum("iab,ab->i", v, wzx) - f0 + st.mu1
        if bulk:
            Co[q] = np.einsum("iab,ab->i", act.derivative(2, u), wzx) - c0 + st.mu2
            So[q] = np.einsum("iab,ab->i", v * v, wzx)
    return Fo, Co, So


def finite_n_grams(act: Activation, st: FiniteNSetup, *, eta1, eta2, N, second_layer="gaussian", bulk=True):
    """``(G_U, G_V, Mbar, t_nodes, g_nodes, g_weights)`` of ``P`` at width ``N`` (module docstring).

    ``U = [a, a ⊙ 1_{bin 1}, ..., a ⊙ 1_{bin Q}]`` (so column 0 is ``a`` itself),
    ``Vbar = [eta_1 mu_1 beta_hat_1, eta_2 v(t_1), ..., eta_2 v(t_Q)]``.
    """
    if second_layer == "gaussian":
        g, wg = gauss_hermite_rule(_G_ORDER)
    else:
        g, wg = np.array([-1.0, 1.0]), np.array([0.5, 0.5])
    t = eta1 * g / math.sqrt(N)
    Fq, Cq, Sq = F_table(act, st, t, bulk=bulk)
    Q = g.size
    G_U = np.zeros((Q + 1, Q + 1))
    G_U[0, 0] = float(wg @ g**2)
    G_U[0, 1:] = G_U[1:, 0] = wg * g**2
    G_U[1:, 1:] = np.diag(wg * g**2)
    w, y = st.w, st.y
    E = lambda f: f @ w  # noqa: E731
    Pw = np.vstack([np.ones_like(y), Fq])                 # weights of [beta_hat(_2), v_1..v_Q]
    m = E((st.zs * y)[None, :] * Pw)
    if st.batch == "reused":
        b = E(((y / st.phi + st.tau * st.zeta) * y)[None, :] * Pw) / st.tau
        ey2P = E((y * y)[None, :] * Pw)
        G2 = (Pw * (y * y * w)) @ Pw.T
        gram = np.outer(m, m) + np.outer(b, b) + (G2 - np.outer(ey2P, ey2P) / st.ey2) / st.phi
        if st.mus == 0.0:
            m[0] = 0.0
        basis_t = m
    else:  # basis [beta_hat_1, beta_hat_2, v_1..v_Q]
        if st.mus == 0.0:
            m[:] = 0.0
        b = E((st.zeta * y)[None, :] * Pw)
        Gw = np.outer(m, m) + np.outer(b, b) + ((Pw * (y * y * w)) @ Pw.T) / st.phi2
        cross = m * st.mus + st.tau * b
        gram = np.zeros((Q + 2, Q + 2))
        gram[0, 0] = st.mus**2 + st.tau**2
        gram[0, 1:] = gram[1:, 0] = cross
        gram[1:, 1:] = Gw
        basis_t = np.concatenate([[st.mus], m])
    # coefficients: vbar_0 = eta1 mu1 beta_hat_1 (+ fresh: nothing else), vbar_q = eta2 v_q
    nb = gram.shape[0]
    C = np.zeros((Q + 1, nb))
    C[0, 0] = eta1 * st.mu1
    off = nb - Q
    for q in range(Q):
        C[q + 1, off + q] = eta2
    G_V = C @ gram @ C.T
    Mbar = (C @ basis_t)[:, None]
    rows = None
    if bulk:   # y^2-weighted means over the data of c and of the remainder variance (docs/theory/two_step.md §8.2)
        yw = y * y * w
        lin = 1.0 + (t**2 * st.mu2**2 * st.ey2 / st.phi)[:, None]   # variance of the w_j-linear part
        rows = (Cq @ yw / st.ey2, np.clip((Sq - Fq**2 - Cq**2 * lin) @ yw, 0.0, None) / st.ey2,
                Cq @ (y * w))     # E[y c]: the part of X^T diag(y c) X / n along the identity (docs/theory/two_step.md §8.2)
    return G_U, G_V, Mbar, t, g, wg, rows


# ----------------------------------------------------------------- the widened bulk
def _m_cdf(target: Target, phi: float, zrange=None):
    """Grid and CDF of the weighted Marchenko–Pastur law of ``M = X^T diag(y) X / n`` (cached by the law of ``y``);
    with ``zrange`` the samples ``z* in zrange`` only (docs/theory/two_step.md §8.3)."""
    y, w = y_law(target) if zrange is None else y_law_truncated(target, zrange)
    return _m_cdf_of(y.tobytes(), w.tobytes(), float(phi))


@functools.lru_cache(maxsize=64)
def _m_cdf_of(yb: bytes, wb: bytes, phi: float):
    y, w = np.frombuffer(yb), np.frombuffer(wb)
    c = 1.0 / phi
    top = (1.0 + math.sqrt(c)) ** 2
    x = np.linspace(top * min(y.min(), 0.0) - 1.0, top * max(y.max(), 0.0) + 1.0, _M_GRID // 4)
    for n_grid in (_M_GRID // 2, _M_GRID):   # find the numerical support, then resolve it
        rho = np.maximum(weighted_mp_stieltjes(x, y, w, phi).imag, 0.0) / np.pi
        keep = np.nonzero(rho > 1e-10 * rho.max())[0]
        x = np.linspace(x[max(keep[0] - 1, 0)], x[min(keep[-1] + 1, len(x) - 1)], n_grid)
    rho = np.maximum(weighted_mp_stieltjes(x, y, w, phi).imag, 0.0) / np.pi
    F = np.concatenate([[0.0], np.cumsum((rho[1:] + rho[:-1]) / 2 * np.diff(x))])
    return x, F / F[-1]


def _row_functions(a, st: FiniteNSetup, eta1, eta2, tn, rows, basis="second"):
    """``f_k`` of the separable profile at the rows ``a`` (docs/theory/two_step.md §8.2).

    Fresh batches: ``basis`` names the batch whose ``M`` gives the columns (its eigenvectors); the other ``M`` is
    averaged over directions."""
    cbar = np.interp(eta1 * a, tn, rows[0]) if tn.size > 1 else np.full_like(a, rows[0][0])
    rem = np.interp(eta1 * a, tn, rows[1]) if tn.size > 1 else np.full_like(a, rows[1][0])
    ey_c = np.interp(eta1 * a, tn, rows[2]) if tn.size > 1 else np.full_like(a, rows[2][0])
    phi2 = st.phi2 if st.batch == "fresh" else st.phi
    # row j is w_j (I + eta1 a mu2 M_1)((1 + e) I + eta2 a cbar M_2)
    e = eta2 * a * ey_c
    one = 1 + e
    p1, p2 = one * eta1 * a * st.mu2, eta2 * a * cbar
    q = eta1 * eta2 * a * a * st.mu2 * cbar
    r = (eta1 * a) ** 2 * st.ey2 * max(st.sp2 - st.mu1**2 - st.mu2**2, 0.0) / st.phi \
        + (eta2 * a) ** 2 * st.ey2 * rem / phi2
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


class _Bulk:
    """The separable profile of ``W_2 - P`` at width ``N``: edge and resolvent kernels above it."""

    def __init__(self, st, target, *, eta1, eta2, N, psi, tn, rows, second_layer, zrange=None, basis="second"):
        d = max(int(round(N / psi)), 1)
        Nn = int(round(N))
        self.basis = basis
        xg, Fm = _m_cdf(target, st.phi2 if st.batch == "fresh" and basis == "second" else st.phi, zrange)
        lam, wl = quantile_nodes(d, lambda p: np.interp(p, Fm, xg))
        if second_layer == "gaussian":
            a, wa = quantile_nodes(Nn, lambda p: special.ndtri(p) / math.sqrt(N))
        else:
            a, wa = np.array([-1.0, 1.0]) / math.sqrt(N), np.full(2, 0.5)
        self.a, self.wa, self.zrange = a, wa, zrange
        self.eta1, self.eta2, self.N, self.st, self.tn, self.rows = eta1, eta2, N, st, tn, rows
        colh = np.stack([lam**k for k in range(5)] + [np.ones_like(lam)], axis=1)
        self.red = SeparableProfile(_row_functions(a, st, eta1, eta2, tn, rows, basis), colh, Nn / d, wa, wl)
        cmax = float(np.max(np.abs(self.red.rowf) @ np.abs(colh).max(0)))
        self.x_start = 4.0 * (1 + math.sqrt(Nn / d)) ** 2 * max(cmax, 1.0)
        self.x_edge = fold_edge(self.red, self.x_start)
        self.edge = math.sqrt(self.x_edge)
        self._path = []   # (x, A, B) solved above the edge, x decreasing

    def _solve_x(self, x, guess):
        red, K = self.red, self.red.K

        def res(v):
            A, B = v[:K], v[K:]
            _, _, t, tt = red.parts(A, B, x)
            return np.concatenate([A - red.psi * (red.Pa.T @ t), B - red.Pl.T @ tt])

        sol = optimize.root(res, guess, method="hybr", options={"xtol": 1e-12})
        return sol.x if np.abs(res(sol.x)).max() < 1e-9 else None

    def kernels(self, x):
        """``(A, B)`` of the profile at ``x > x_edge``, by continuation from ``x_start``."""
        if not self._path or x > self._path[0][0]:
            xs = max(self.x_start, x)
            v0 = np.concatenate([-self.red.psi * self.red.Pa.sum(0) / xs, -self.red.Pl.sum(0) / xs])
            v = self._solve_x(xs, v0)
            if v is None:
                return None
            self._path.insert(0, (xs, v))
        best = min((p for p in self._path if p[0] >= x), key=lambda p: p[0])
        xc, v = best
        while xc > x:
            xn = max(x, xc / 1.3, self.x_edge + 0.5 * (xc - self.x_edge))
            if xc - x < 1e-12 * x:
                xn = x
            u = self._solve_x(xn, v)
            if u is None:
                return None
            xc, v = xn, u
            self._path.append((xc, v))
        return v

    def tau_rows(self, a, x):
        """``-t(a)`` at rows ``a`` and ``<-tt>`` at ``x`` (docs/theory/two_step.md §8.2)."""
        v = self.kernels(x)
        if v is None:
            return None, None
        K = self.red.K
        A, B = v[:K], v[K:]
        f = _row_functions(a, self.st, self.eta1, self.eta2, self.tn, self.rows, self.basis)
        _, Dtt, _, _ = self.red.parts(A, B, x)
        return 1.0 / (x * (1.0 + f @ B)), float(self.red.Pl[:, 0] @ (1.0 / (x * Dtt)))


def column_spike(bulk: _Bulk, a, wa, excess):
    """Singular value of the isolated column with per-row excess variance ``excess`` (docs/theory/two_step.md §8.3).

    The column (a direction of the input space) has variance ``1 + r(a_j) + excess_j`` in row ``j`` (units of
    ``1/d``); its isolated eigenvalue ``x = s^2`` of ``W^T W`` solves ``psi E_j[v_j (-t_j(x))] = 1`` above the edge
    (the column denominator of the variance-profile equations).  ``None`` when it stays inside the bulk.
    """
    v = 1.0 + _row_functions(a, bulk.st, bulk.eta1, bulk.eta2, bulk.tn, bulk.rows, bulk.basis)[:, 5] + excess
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
    return math.sqrt(optimize.brentq(f, xe, hi, xtol=1e-12 * hi))


def master_eigs(bulk: _Bulk, s, G_U_w, G_V, g, N):
    """Eigenvalues of ``Phi_A(s) Phi_B(s)`` (the master equation of docs/theory/two_step.md §8.1, with the profile).

    ``G_U_w(tau)`` builds the ``N``-side Gram matrix with row weights ``tau`` at the nodes ``g``.
    """
    tq, ttm = bulk.tau_rows(g / math.sqrt(N), s * s)
    if tq is None:
        return None
    GA = G_U_w(tq)
    lu, Qu = np.linalg.eigh((GA + GA.T) / 2)
    R = (Qu * np.sqrt(np.clip(lu, 0.0, None))) @ Qu.T
    M = s * s * ttm * (R @ G_V @ R)
    return np.sort(np.linalg.eigvalsh((M + M.T) / 2))[::-1]


@dataclass(frozen=True)
class FiniteNResult(Result):
    """Finite-``N`` two-step prediction (docs/theory/two_step.md §8.2): internal carrier for :func:`two_step`.

    ``spikes``: singular values of ``P``; ``locations``/``cos2_target``/``cos2_a``/``thetas``: per
    outlier above the widened bulk; ``edge``: its top; ``t_max``: ``eta_1 max_j |a_j|`` at the
    quantile rows; ``notes``.
    """

    spikes: tuple
    thetas: tuple
    locations: tuple
    cos2_target: tuple
    cos2_a: tuple
    edge: float
    t_max: float
    notes: tuple
    samples: tuple = ()


def _G_U_weighted(g, wg):
    def build(tau):
        Q = g.size
        G = np.zeros((Q + 1, Q + 1))
        ww = wg * g**2 * tau
        G[0, 0] = ww.sum()
        G[0, 1:] = G[1:, 0] = ww
        G[1:, 1:] = np.diag(ww)
        return G
    return build


def predict_finite_n(act: Activation, target: Target, *, psi, phi, phi2, eta1, eta2, batch, N,
                     second_layer="gaussian") -> FiniteNResult:
    """Outliers of ``W_2`` at width ``N`` above the widened bulk (module docstring; docs/theory/two_step.md §8.2)."""
    st = finite_n_setup(act, target, phi=phi, batch=batch, phi2=phi2)
    G_U, G_V, Mbar, tn, g, wg, _ = finite_n_grams(act, st, eta1=eta1, eta2=eta2, N=N, second_layer=second_layer,
                                                  bulk=False)
    order = np.argsort(tn)
    tn_s = tn[order]
    n_bulk = max(int(round((phi2 if batch == "fresh" else phi) * N / psi)), 1)

    def bulk_without(ranks):
        """The widened bulk over every sample but the ``ranks`` most extreme |y| of a typical batch (docs/theory/two_step.md §8.3)."""
        zr = bulk_cut(target, n_bulk, ranks=ranks) if ranks else None
        st_b = st if zr is None else finite_n_setup(act, target, phi=phi, batch=batch, phi2=phi2,
                                                    zs_rule=truncated_rule(*zr), ey2_ref=st.ey2)
        rows = finite_n_grams(act, st_b, eta1=eta1, eta2=eta2, N=N, second_layer=second_layer, bulk=True)[6]
        bulks = [_Bulk(st_b, target, eta1=eta1, eta2=eta2, N=N, psi=psi, tn=tn_s, rows=tuple(r[order] for r in rows),
                       second_layer=second_layer, zrange=zr, basis=b)
                 for b in (("second", "first") if batch == "fresh" else ("second",))]
        # fresh batches: each basis keeps one M's direction structure and averages the other, so each edge
        # falls short of the true one; the larger is kept (docs/theory/two_step.md §8.2)
        return max(bulks, key=lambda b: b.edge)
    lu, Qu = np.linalg.eigh(G_U)
    Rm = (Qu * np.sqrt(np.clip(lu, 0.0, None))) @ Qu.T
    ev, qv = np.linalg.eigh(Rm @ G_V @ Rm)
    idx = np.argsort(ev)[::-1]
    ev, qv = np.clip(ev[idx], 0.0, None), qv[:, idx]
    spikes = np.sqrt(ev)
    keep = spikes > 1e-9 * max(spikes[0], 1.0)
    notes = []
    # the most extreme samples of a typical batch leave the bulk and are tested as columns of their own (docs/theory/two_step.md §8.3)
    bulk = bulk_without(sample_spikes.SAMPLE_RANKS)
    samples, isolated = _sample_spike_locations(act, target, st, bulk, eta1=eta1, eta2=eta2, N=N, psi=psi)
    if sample_spikes.SAMPLE_RANKS and max(isolated.values()) >= sample_spikes.SAMPLE_RANKS:
        notes.append(f"all {sample_spikes.SAMPLE_RANKS} most extreme samples of a batch give outliers; less extreme ones may "
                     "too (docs/theory/two_step.md §8.3)")
    t_max = abs(eta1) * float(special.ndtri(1 - 0.5 / max(N, 2))) / math.sqrt(N)
    GUw = _G_U_weighted(g, wg)
    se = bulk.edge * (1 + 1e-7)
    e0 = master_eigs(bulk, se, GUw, G_V, g, N)
    count = 0 if e0 is None else int(np.sum(e0 > 1.0))
    locs, c2t, c2a, th = [], [], [], []
    for i in range(count):
        def f(s, i=i):
            e = master_eigs(bulk, s, GUw, G_V, g, N)
            return (e[i] if e is not None else 2.0) - 1.0
        hi = max(2 * se, se + 2 * spikes[i])
        while f(hi) > 0 and hi < 1e8:
            hi *= 2
        try:
            s = optimize.brentq(f, se, hi, xtol=1e-10 * hi)
        except ValueError:
            notes.append(f"outlier {i + 1}: no root of the master equation found")
            break
        # overlaps: the D-transform of the profile's bulk (docs/theory/two_step.md §2.2) at the root
        def Dfun(z):
            tq, ttm = bulk.tau_rows(bulk.a, z * z)
            p, pt = z * float(bulk.wa @ tq), z * ttm
            return p * pt, p, pt
        D, p, pt = Dfun(s)
        h = 1e-5 * s
        dD = (Dfun(s + h)[0] - Dfun(s - h)[0]) / (2 * h) if s - h > bulk.edge else (Dfun(s + h)[0] - D) / h
        th2 = 1.0 / D
        wN, wd = min(max(-2 * p / (th2 * dD), 0.0), 1.0), min(max(-2 * pt / (th2 * dD), 0.0), 1.0)
        Rq = Rm @ qv[:, i]
        theta = float(spikes[i])
        locs.append(float(s))
        th.append(theta)
        c2t.append(float(wd * (Mbar[:, 0] @ Rq) ** 2 / theta**2))
        c2a.append(float(wN * Rq[0] ** 2 / G_U[0, 0]))
    return FiniteNResult(tuple(float(x) for x in spikes[keep]), tuple(th), tuple(locs), tuple(c2t), tuple(c2a),
                         float(bulk.edge), t_max, tuple(notes), samples)


def _sample_spike_locations(act, target, st, bulk, *, eta1, eta2, N, psi):
    """Single-sample outliers (docs/theory/two_step.md §8.3): ``(((mean, theta, median), ...), isolated)``.

    Per batch part, the tails of the law of ``y`` (``TAIL_MASS`` times the extreme samples the bulk leaves out, per
    side) are binned, each bin's column profile computed, and the order statistics of the column locations over the
    batch taken (:func:`~rmtfl.theory._two_step.sample_order.order_statistics`); ``isolated``: per part, how many
    ranks have their median above the edge.
    """
    d = N / psi
    names = [("both", st.phi)] if st.batch == "reused" else [("first", st.phi), ("second", st.phi2)]
    k = sample_spikes.SAMPLE_RANKS
    if k == 0:
        return (), {w: 0 for w, _ in names}
    r_rows = _row_functions(bulk.a, bulk.st, bulk.eta1, bulk.eta2, bulk.tn, bulk.rows, bulk.basis)[:, 5]
    yb, wb = y_law(target) if bulk.zrange is None else y_law_truncated(target, bulk.zrange)
    ymax = float(np.max(np.abs(yb)))
    gq = bulk.a * math.sqrt(N)       # the rows of the matrix at this N (not a quadrature of the law of g:
    parts, th2s, guess = [], [], None   # a row beyond the largest |a_j| would be a spike of its own)
    for which, phi_b in names:
        n_b = max(int(round(phi_b * d)), 1)
        ys, zs, mass = tail_bins(target, n_b, min(0.25, TAIL_MASS * k / n_b))
        lams = [m_spike(y, phi_b, yb, wb) if abs(y) > ymax else y / phi_b for y in ys]
        mom = []
        th2, rws = sample_strengths(act, st, ys=ys, zs=zs, eta1=eta1, eta2=eta2, N=N, d=d, g=gq, wg=bulk.wa,
                                    which=which, lams=lams, moments=mom)
        vmean = np.array([1.0 + r_rows + ex for ex in rws])
        vm2 = np.array([m4 + 6.0 * r_rows * m2 + 3.0 * r_rows**2 for m2, m4 in mom])
        parts.append((mass, vmean, vm2, n_b))
        th2s.append(th2)
        if guess is None or th2.max() > guess[0]:
            guess = (float(th2.max()), rws[int(np.argmax(th2))])
    top = column_spike(bulk, bulk.a, bulk.wa, guess[1])
    per_part = order_statistics(lambda x: bulk.tau_rows(bulk.a, x)[0], bulk.x_edge, (top or bulk.edge) ** 2,
                                parts, N=N, psi=psi, wa=bulk.wa, ranks=k)
    found, isolated = [], {}
    for (which, _), (mass, _, _, n_b), th2, stats_k in zip(names, parts, th2s, per_part):
        isolated[which] = len(stats_k)
        order = np.argsort(-th2)
        cum = np.cumsum(mass[order])
        for rank, (mean, median) in enumerate(stats_k, 1):
            b = order[min(int(np.searchsorted(cum, (rank - 0.3) / (n_b + 0.4))), order.size - 1)]
            found.append((mean, math.sqrt(max(float(th2[b]), 0.0)), median))
    return tuple(sorted(found, reverse=True)), isolated


#: The tails binned for single-sample outliers hold this many times ``SAMPLE_RANKS`` samples per side.
TAIL_MASS = 3.0


def check_finite_n_inputs(act: Activation, target: Target, N, max_width: int = 10**9):
    """Bad-input errors of the finite-``N`` route (each names its parameter)."""
    if isinstance(N, bool) or not isinstance(N, (int, float, np.integer, np.floating)) or not 2 <= N <= max_width \
            or N != int(N):
        raise ValueError(f"N must be an integer width in [2, {max_width:.0e}], got {N!r}")
    if not act.smooth or act.deriv is None:
        raise ValueError(f"activation must be smooth with known derivatives for the finite-N route (sigma'' enters "
                         f"the widened bulk), got {act.name!r}")
    if target.rank != 1:
        raise ValueError(f"target must be single-index (rank 1) for the finite-N route, got rank {target.rank}")
    deg = target.links[0].degree
    if deg is not None and deg > MAX_TARGET_DEGREE:
        raise ValueError(f"target must have Hermite degree <= {MAX_TARGET_DEGREE} for the finite-N quadrature, "
                         f"got degree {deg}")


#: ``eta_1 max_j |a_j|`` beyond which the finite-N route is flagged unreliable (largest value checked).
T_MAX_CHECKED = 3.0
