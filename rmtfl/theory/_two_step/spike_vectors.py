"""Spike vectors of the two-step update: sample weights, overlaps and Gram matrices (docs/theory/two_step.md §5.3, §7, §8).

Normalisation (docs/conventions.md §3–§5): ``W_0`` entries ``N(0, 1/d)``, ``a ~ N(0, I_N/N)``
(fixed), ``x ~ N(0, I_d)``, correlation loss with mean reduction,
``W_t = W_{t-1} + eta_t G(W_{t-1}; X_t, y_t)``, ratios ``psi = N/d``,
``phi = n/d`` (``phi = phi_1`` and ``phi2 = n_2/d`` for fresh batches).  Links are
centred (:mod:`rmtfl.theory._classical.targets`).

The spiked form ``W_2 ≈ W_0 + U Vbar^T`` of :func:`rmtfl.theory.two_step` has left
vectors ``u_k = a^{⊙(k+1)}`` and right vectors built from ``beta_hat_t`` and
``v_k = X_2^T (y_2 ⊙ P_k) / n_2``.  This module provides their ingredients:

* primitives: Gaussian moments :func:`gauss_moment_M`, the Stein table
  :func:`stein_table`, the sample weights :func:`P_k`;
* the limit Gram matrix of the ``u_k`` (:func:`a_power_gram`, closed form in ``N``);
* the limit overlaps and Gram matrix of the right basis vectors
  (:func:`spike_vector_stats`, Gauss–Hermite quadrature over ``(z*, zeta, eps)``).

Deterministic: the Gram matrices of *sampled* ``a``, ``X``, ``y`` (the semi-analytic route)
are computed in :mod:`rmtfl.numerics` (``two_step_semi_analytic``) from the same
:class:`SpikeSetup`.  Internal helpers take the resolved :class:`~rmtfl.theory.Activation`
and :class:`~rmtfl.theory.Target` objects (:func:`spike_setup`); the two boundary functions
:func:`stein_table` and :func:`spike_vector_stats` also accept names.

Examples
--------
>>> G = a_power_gram(2, 100.0)                      # <a^(p+1), a^(q+1)>, a ~ N(0, I/N)
>>> float(G[0, 0]), float(G[1, 1]), float(G[0, 1])  # 1, 3/N, 0
(1.0, 0.03, 0.0)
>>> float(P_k(0, "fresh", s=0.3, stein=stein_table("tanh", 0), mu1=0.6, tau_h=0.1, phi=2.0))   # P_0 = mu_1
0.6
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from rmtfl._results import Result
from rmtfl._validate import check_choice, check_int, check_positive
from .._classical.activations import Activation, double_factorial, get_activation
from .._classical.hermite import gauss_hermite_rule, gaussian_moment, hermite_coeff
from .._classical.targets import Target, make_target

__all__ = ["gauss_moment_M", "stein_table", "P_k", "a_power_gram", "SpikeSetup", "spike_setup",
           "SpikeVectorStats", "limit_stats", "spike_vector_stats"]

BATCHES = ("reused", "fresh")


# ------------------------------------------------------------------ primitives
def gauss_moment_M(r: int, b, tau_h: float):
    """``M_r(b; tau_h) = E (b + xi)^r``, ``xi ~ N(0, tau_h^2)`` (docs/theory/two_step.md §5.3).

    ``= sum_{q even <= r} C(r, q) b^{r-q} tau_h^q (q-1)!!``; vectorised over ``b``.

    >>> float(gauss_moment_M(2, 1.0, 0.5))     # 1 + 0.25
    1.25
    >>> float(gauss_moment_M(3, 0.0, 2.0))     # odd moment of a centred Gaussian
    0.0
    """
    r = check_int("r", r, lo=0)
    b = np.asarray(b, dtype=float)
    out = np.zeros_like(b)
    for q in range(0, r + 1, 2):
        out = out + math.comb(r, q) * b ** (r - q) * tau_h**q * double_factorial(q - 1)
    return out



def stein_table(activation, K: int) -> np.ndarray:
    """``S[k, m] = E[sigma^(k+1)(z) sigma'(z)^m]`` for ``0 <= m <= k <= K`` (zeros above the diagonal).

    ``S[k, 0] = mu_{k+1}`` (Stein).  Non-smooth ``sigma`` only allows ``K = 0``.

    >>> stein_table("hermite(0, 1, 0.5)", 1).tolist()     # sigma' = 1 + z, sigma'' = 1
    [[1.0, 0.0], [1.0, 1.0]]
    """
    act = get_activation(activation)
    K = check_int("K", K, lo=0)
    S = np.zeros((K + 1, K + 1))
    for k in range(K + 1):
        for m in range(k + 1):
            if act.degree is not None and k + 1 > act.degree:
                continue
            S[k, m] = gaussian_moment(act, k + 1, m)
    return S


def P_k(k: int, batch: str, *, y=None, s=None, stein=None, mu1: float, tau_h: float, phi: float):
    """Sample weights ``P_k`` of the spiked form (docs/theory/two_step.md §5.3), vectorised over samples.

    reused: ``P_k(y, s~) = sum_m C(k, m) phi^-m y^m E[sigma^(k+1) sigma'^m] M_{k-m}(mu_1 s~; tau_h)``;
    fresh:  ``P_k(s) = mu_{k+1} M_k(mu_1 s; tau_h)``.  ``P_0 = mu_1`` (both).
    ``stein`` is :func:`stein_table` with at least ``k + 1`` rows.

    >>> S = stein_table("hermite(0, 1, 0.5)", 1)
    >>> float(P_k(1, "reused", y=2.0, s=0.5, stein=S, mu1=1.0, tau_h=0.0, phi=2.0))   # s + y/phi
    1.5
    """
    check_choice("batch", batch, BATCHES)
    s = np.asarray(s, dtype=float)
    if k == 0:
        return np.full_like(s, mu1)
    if batch == "fresh":
        return stein[k, 0] * gauss_moment_M(k, mu1 * s, tau_h)
    y = np.asarray(y, dtype=float)
    out = np.zeros(np.broadcast(y, s).shape)
    for m in range(k + 1):
        if stein[k, m] != 0.0:
            out = out + math.comb(k, m) * phi ** (-m) * y**m * stein[k, m] * gauss_moment_M(k - m, mu1 * s, tau_h)
    return out


def a_power_gram(K: int, N, law: str = "gaussian") -> np.ndarray:
    """Limit Gram matrix ``<a^{⊙(p+1)}, a^{⊙(q+1)}>`` for ``p, q = 0..K`` (docs/theory/two_step.md §8 step 2).

    Gaussian ``a ~ N(0, I/N)``: ``N^{-(p+q)/2} (p+q+1)!!`` for even ``p+q``, else 0.
    Rademacher ``±1/sqrt(N)``: ``N^{-(p+q)/2}`` for even ``p+q`` (rank 2).

    >>> round(float(a_power_gram(2, 1.0)[0, 2] / math.sqrt(a_power_gram(2, 1.0)[2, 2])), 12)   # 3/sqrt(15)
    0.774596669241
    """
    K = check_int("K", K, lo=0)
    N = check_positive("N", N)
    check_choice("law", law, ("gaussian", "rademacher"))
    G = np.zeros((K + 1, K + 1))
    for p in range(K + 1):
        for q in range(K + 1):
            if (p + q) % 2 == 0:
                G[p, q] = N ** (-(p + q) / 2) * (double_factorial(p + q + 1) if law == "gaussian" else 1.0)
    return G


# ---------------------------------------------------------------- quadrature
def _grid(R: int, noise: bool, order: int):
    """Tensor Gauss–Hermite grid over ``(z_1..z_R, zeta[, eps])``: arrays and weights."""
    x, w = gauss_hermite_rule(order)
    dims = R + 1 + (1 if noise else 0)
    mesh = np.meshgrid(*([x] * dims), indexing="ij")
    wm = np.meshgrid(*([w] * dims), indexing="ij")
    W = np.prod(np.stack([m.ravel() for m in wm]), axis=0)
    pts = [m.ravel() for m in mesh]
    z = np.stack(pts[:R])
    zeta = pts[R]
    eps = pts[R + 1] if noise else np.zeros_like(zeta)
    return z, zeta, eps, W


@dataclass(frozen=True)
class SpikeSetup(Result):
    """The resolved model behind the spike vectors (docs/theory/two_step.md §5.3): built once by :func:`spike_setup`.

    Attributes
    ----------
    act : Activation
        ``sigma``.
    target : Target
        The target (links centred, label noise included).
    mu1 : float
        ``mu_1(sigma)`` (exact zero below ``1e-14``).
    mus : tuple of float
        ``mu_1(g_r)`` per target direction (exact zeros below ``1e-14``).
    ey2 : float
        ``E[y^2]``.
    stein : ndarray
        :func:`stein_table` up to ``K``.
    tau_h2_unit : float
        ``E[(sigma' - mu_1)^2]`` (``tau_h^2 = tau_h2_unit E[y^2] / phi``).
    """

    act: Activation
    target: Target
    mu1: float
    mus: tuple
    ey2: float
    stein: np.ndarray
    tau_h2_unit: float


@dataclass(frozen=True)
class SpikeVectorStats(Result):
    """Limit overlaps and Gram matrix of the spike vectors (docs/theory/two_step.md §7).

    Attributes
    ----------
    m : ndarray (K+1, R)
        ``m_k = lim <v_k, beta*_r>`` (``m[0] = mu_1(g_r)``).
    b : ndarray (K+1,)
        ``b_k``, the overlap with the noise direction of ``beta_hat`` (docs/theory/two_step.md §7.2).
    gram : ndarray
        Gram matrix of the basis vectors: reused ``[beta_hat, v_1..v_K]``; fresh
        ``[beta_hat_1, beta_hat_2, v_1..v_K]``.
    basis_targets : ndarray
        ``<basis_j, beta*_r>``.
    tau, tau_h : float
        ``sqrt(E y^2 / phi)`` and ``sqrt(tau_h2_unit E y^2 / phi)``.
    """

    m: np.ndarray
    b: np.ndarray
    gram: np.ndarray
    basis_targets: np.ndarray
    tau: float
    tau_h: float


def spike_vector_stats(activation, target, *, phi, K, batch="reused", phi2=None, order=None) -> SpikeVectorStats:
    """Limit overlaps of the spike vectors (docs/theory/two_step.md §7): ``m_k``, ``b_k`` and the basis Gram matrix.

    Parameters
    ----------
    activation, target
        ``sigma`` and the target (names or objects; links centred).
    phi : float > 0
        ``n/d`` (``phi_1`` for fresh batches).
    K : int >= 0
        Highest Taylor index.
    batch : {"reused", "fresh"}
    phi2 : float > 0
        ``n_2/d`` of the fresh second batch (``batch="fresh"`` only).
    order : int, optional
        Gauss–Hermite order per dimension (default 80, 40, 22 for 2, 3, 4 dimensions).

    Returns
    -------
    SpikeVectorStats
        Fresh batches give ``m_k = 0`` exactly for links with ``mu_1(g_r) = 0``.

    Examples
    --------
    >>> st = spike_vector_stats("tanh", "he3n", phi=2.0, K=2)
    >>> bool(abs(st.m[1, 0]) < 1e-12), bool(st.m[2, 0] != 0)      # reuse: first overlap at k = 2
    (True, True)
    """
    K = check_int("K", K, lo=0)
    check_choice("batch", batch, BATCHES)
    setup = spike_setup(get_activation(activation), make_target(target), K)
    return limit_stats(setup, phi=check_positive("phi", phi), K=K, batch=batch, phi2=phi2, order=order)


def spike_setup(act: Activation, target: Target, K: int) -> SpikeSetup:
    """:class:`SpikeSetup` of resolved objects (internal helpers take objects, never names).

    >>> from rmtfl.theory import get_activation, make_target
    >>> spike_setup(get_activation("hermite(0, 1, 0.5)"), make_target("linear"), 1).stein.tolist()
    [[1.0, 0.0], [1.0, 1.0]]
    """
    if not isinstance(act, Activation):
        raise TypeError(f"act must be an Activation (resolve names with get_activation), got {act!r}")
    if not isinstance(target, Target):
        raise TypeError(f"target must be a Target (resolve names with make_target), got {target!r}")
    mu1 = hermite_coeff(act, 1)
    mu1 = 0.0 if abs(mu1) < 1e-14 else mu1
    mus = tuple(0.0 if abs(m) < 1e-14 else m for m in target.mu1)
    if K > 0 and not act.smooth:
        raise ValueError(f"activation {act.name!r} is not smooth: the two-step Taylor terms k >= 1 "
                         "(E[sigma^(k+1) sigma'^m]) are undefined; use a smooth activation or Lambda = 0")
    stein = stein_table(act, K)
    tau_h2_unit = max(gaussian_moment(act, 1, 1) - mu1**2, 0.0) if act.smooth else 0.0
    return SpikeSetup(act, target, mu1, mus, target.second_moment, stein, tau_h2_unit)


def limit_stats(st: SpikeSetup, *, phi, K, batch, phi2, order) -> SpikeVectorStats:
    """:class:`SpikeVectorStats` of a :class:`SpikeSetup` by Gauss–Hermite quadrature (docs/theory/two_step.md §7.2)."""
    t = st.target
    R = t.rank
    noise = t.noise > 0
    dims = R + 1 + int(noise)
    if order is None:
        order = {2: 80, 3: 40, 4: 22}.get(dims, 0)
    if order == 0:
        raise ValueError(f"target must have at most 3 directions (2 with label noise) for the quadrature of the "
                         f"analytic Gram matrices; got {R}: use rmtfl.numerics.two_step_semi_analytic (sampled Grams)")
    z, zeta, eps, w = _grid(R, noise, order)
    y = sum(np.asarray(g(z[r]), dtype=float) for r, g in enumerate(t.links)) + t.noise * eps
    ey2 = st.ey2
    phi1 = phi
    tau = math.sqrt(ey2 / phi1)
    tau_h = math.sqrt(st.tau_h2_unit * ey2 / phi1)
    s = sum(st.mus[r] * z[r] for r in range(R)) + tau * zeta
    P = [np.ones_like(s)] + [P_k(k, batch, y=y, s=s, stein=st.stein, mu1=st.mu1, tau_h=tau_h, phi=phi1)
                             for k in range(1, K + 1)]
    E = lambda f: float(w @ f)  # noqa: E731
    m = np.array([[E(z[r] * y * P[k]) for r in range(R)] for k in range(K + 1)])
    m[0] = st.mus  # <beta_hat, beta*_r> -> mu_1(g_r) exactly (zero for information exponent > 1)
    if batch == "fresh":
        for r in range(R):
            if st.mus[r] == 0.0:
                m[:, r] = 0.0  # s independent of z_r: m_k = mu_1(g_r) E[P_k] = 0 exactly (docs/theory/two_step.md §7.1)
        b = np.array([E(zeta * y * P[k]) for k in range(K + 1)])
        Gw = np.array([[E(y * y * P[p] * P[q]) / phi2 for q in range(K + 1)] for p in range(K + 1)])
        Gw += m @ m.T + np.outer(b, b)
        mus = np.array(st.mus)
        cross = m @ mus + tau * b  # <beta_hat_1, w_q>
        gram = np.zeros((K + 2, K + 2))
        gram[0, 0] = mus @ mus + tau**2
        gram[0, 1:] = gram[1:, 0] = cross
        gram[1:, 1:] = Gw
        targets = np.vstack([mus[None, :], m])
    else:
        b = np.array([E((y / phi1 + tau * zeta) * y * P[k]) for k in range(K + 1)]) / tau
        ey2P = np.array([E(y * y * P[k]) for k in range(K + 1)])
        G = np.array([[E(y * y * P[p] * P[q]) for q in range(K + 1)] for p in range(K + 1)])
        gram = m @ m.T + np.outer(b, b) + (G - np.outer(ey2P, ey2P) / ey2) / phi1
        targets = m
    return SpikeVectorStats(m, b, gram, targets, tau, tau_h)
