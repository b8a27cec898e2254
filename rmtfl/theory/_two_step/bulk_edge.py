"""Deterministic top edge of the bulk of ``W_2`` for a quadratic ``sigma`` (docs/theory/two_step.md §5.4).

Normalisation (docs/conventions.md): ``W_0`` entries ``N(0, 1/d)``, ``a ~ N(0, I_N/N)``,
``x ~ N(0, I_d)``, ``n = phi d``, ``N = psi d``, ``y = g(<beta*, x>) + noise``; two
correlation-loss steps on the **same** batch, ``eta_t`` as given.  Returned: the top
*singular value* edge of the bulk of ``W_2`` (of ``H`` below), on the scale where the
``eta = 0`` answer is the Marchenko–Pastur edge ``1 + sqrt(psi)``.

Equations (derived here, checked by simulation)
-----------------------------------------------
For ``sigma = c0 + He1 + c2 He2`` (so ``sigma' = 1 + 2 c2 z`` and ``mu1 = 1``) and
``M = X^T diag(y) X / n``, ``beta_hat = X^T y / n``, two reused steps give exactly

    W_2 = H + (eta1 + eta2) a beta_hat^T + 2 c2 eta1 eta2 a^{⊙2} (M beta_hat)^T,
    H   = W_0 + s1 diag(a) W_0 M + s2 diag(a^{⊙2}) W_0 M^2,
    s1  = 2 c2 (eta1 + eta2),   s2 = 4 c2^2 eta1 eta2

(``c2 = 1/2`` gives docs/theory/two_step.md §5.4; checked to rounding on samples).  Row ``j`` of ``H``
is ``w_j^T C_j`` with ``C_j = I + a_j s1 M + a_j^2 s2 M^2``, so in the eigenbasis of ``M``
(eigenvalues ``lambda_l``) ``H U`` has, given ``(a, M)``, independent centred Gaussian
entries with variance profile ``S_jl = c(a_j lambda_l)^2 / d``, ``c(u) = 1 + s1 u + s2 u^2``.
The deterministic equivalent of ``H H^T`` is the Hachem–Loubaton–Najim system of a separable profile
(:mod:`~rmtfl.theory._two_step.separable_profile`; constant profile: Marchenko–Pastur, edge
``(1 + sqrt psi)^2``).  Since ``S`` depends on ``u = a lambda`` only, ``c(u)^2 = sum_k e_k u^k`` (``k <= 4``)
reduces it to ten unknowns ``A_k = psi <a^k t>_a`` and ``B_k = <lambda^k tt>_lambda``.

The eigenvalues of ``M`` off the target direction follow the weighted Marchenko–Pastur law
(Silverstein): its Stieltjes transform solves ``m_M = 1 / (-z + E[y / (1 + y m_M / phi)])``
(the one spike of ``M`` along ``beta*`` does not move the bulk and is left out).

Finite ``N``: the nodes
-----------------------
The answer depends on ``N`` through ``a = g / sqrt(N)`` and on the extremes of the row and
column laws: with the Gaussian law of ``a`` itself the support is unbounded (rows with
arbitrarily large ``|a|``), so the edge of the *law* is not the finite-``N`` edge.  The
rows and columns are therefore represented by their quantiles, ``a_j = Phi^{-1}((j - 1/2)/N)
/ sqrt(N)`` (``j = 1..N``) and ``lambda_l = F_M^{-1}((l - 1/2)/d)`` (``l = 1..d``): a
deterministic "typical sample" (``nodes="quantile"``, the only choice).  The edge is the
fold of the real branch of the reduced system, followed from ``x = +inf`` by continuation
in ``log|m|`` (``x(m)`` is smooth and has its minimum at the edge; :func:`fold_edge`).

Agreement (N = d = 800, n = 1600, 20 seeds, mean of the top singular value of ``H``): linear
target, ``alpha`` in {(0.1,0.1), (0.3,0.1), (0.3,0.3), (0.4,0.4)}: differences -0.36, +0.15,
+0.61, +1.17 units of ``N^{-2/3} * edge`` (the -0.36 is the Tracy–Widom shift, -0.43 at
``eta = 0``); ``z + He2/sqrt2``: +0.15, -1.9, -2.5, -2.4 units, each within 1 standard error.
For large ``eta`` the top singular value is driven by the few rows with the largest ``|a_j|``
(and, for ``He2`` targets, by the largest ``y_i``) and fluctuates by O(1) between samples
(not Tracy–Widom); the prediction is then one for the mean only.

Examples
--------
>>> sigma = "hermite(0, 1, 0.5)"                  # He1 + He2/2
>>> round(two_step_bulk_edge(sigma, "linear", psi=1.0, phi=2.0, eta1=0.0, eta2=0.0, N=200), 4)   # MP: 1 + sqrt(psi)
2.0
>>> e = two_step_bulk_edge(sigma, "linear", psi=1.0, phi=2.0, eta1=200 ** 0.3, eta2=200 ** 0.1, N=200)
>>> round(e, 2)                                   # simulation: 2.38 +- 0.04 (20 seeds)
2.35
"""
from __future__ import annotations

import math

import numpy as np
from scipy import special

from rmtfl._validate import check_choice, check_in_range, check_int, check_positive
from .._classical.activations import get_activation
from .._classical.hermite import gauss_hermite_rule
from .._classical.targets import Target, make_target
from .separable_profile import SeparableProfile, fold_edge

__all__ = ["two_step_bulk_edge", "weighted_mp_stieltjes", "weighted_mp_cdf", "weighted_mp_quantiles", "quadratic_c2",
           "quantile_nodes", "KEEP_EXTREMES", "MIDDLE_BINS", "y_law"]

_Y_ORDER = 60       # Gauss–Hermite order for the law of z* in y = g(z*)
_NOISE_ORDER = 8    # Gauss–Hermite order for the label noise (y-law: 60 x 8 nodes)
_GRID = 1500        # grid for the density of M
#: Grid points :func:`weighted_mp_cdf` puts between the 0.5 % and 99.5 % points of the law of ``M`` at the least.
MIN_BULK_POINTS = 100
_MP_HEIGHTS = 10    # heights Im z = 1 ... eps of weighted_mp_stieltjes (tenfold apart at eps = 1e-9)


def quadratic_c2(activation) -> float:
    """``c2`` of ``sigma = c0 + He1 + c2 He2``; ``ValueError`` for any other ``sigma`` (the exact
    two-step algebra of the module docstring needs ``mu1 = 1`` and degree ``<= 2``).

    >>> quadratic_c2("hermite(0, 1, 0.5)")
    0.5
    """
    act = get_activation(activation)
    c = None if act.herme is None else list(act.herme) + [0.0, 0.0, 0.0]
    if c is None or act.degree is None or act.degree > 2 or abs(c[1] - 1.0) > 1e-12:
        raise ValueError("activation must be c0 + He1 + c2 He2 (a polynomial of degree <= 2 with mu1 = 1, the "
                         f"He1 coefficient), got {act.name!r}")
    return float(c[2])


#: Quantile grids of a law over ``n`` rows or columns: the extreme ones kept exactly, the middle ones in bins.
KEEP_EXTREMES, MIDDLE_BINS = 24, 40


def quantile_nodes(n: int, ppf, exact_below: int = 10**6):
    """:func:`_compress` of the ``n`` quantiles ``ppf((i + 1/2)/n)``, without forming them all when ``n`` is large.

    Above ``exact_below`` each middle bin is represented by the mean over 4096 of its evenly spaced quantiles.
    """
    if n <= exact_below:
        return _compress(ppf((np.arange(n) + 0.5) / n))
    idx = lambda i: ppf((np.asarray(i, dtype=float) + 0.5) / n)   # noqa: E731
    lo, hi = idx(np.arange(KEEP_EXTREMES)), idx(np.arange(n - KEEP_EXTREMES, n))
    edges = np.linspace(KEEP_EXTREMES, n - KEEP_EXTREMES, MIDDLE_BINS + 1).round().astype(np.int64)
    mid = [idx(np.linspace(b0, b1 - 1, 4096)).mean() for b0, b1 in zip(edges[:-1], edges[1:])]
    w = np.concatenate([np.ones(KEEP_EXTREMES), np.diff(edges), np.ones(KEEP_EXTREMES)]) / n
    return np.concatenate([lo, mid, hi]), w


def _compress(v):
    """Sorted nodes ``v`` (uniform weights) -> the ``KEEP_EXTREMES`` extremes on each side exactly, the middle in bins."""
    n = v.size
    if n <= 2 * KEEP_EXTREMES + MIDDLE_BINS:
        return v, np.full(n, 1.0 / n)
    mid = np.array_split(v[KEEP_EXTREMES:n - KEEP_EXTREMES], MIDDLE_BINS)
    nodes = np.concatenate([v[:KEEP_EXTREMES], [b.mean() for b in mid], v[n - KEEP_EXTREMES:]])
    w = np.concatenate([np.full(KEEP_EXTREMES, 1.0), [b.size for b in mid], np.full(KEEP_EXTREMES, 1.0)]) / n
    return nodes, w


def y_law(t: Target):
    """Nodes and weights of the law of ``y`` (single-index :class:`Target`, its label noise included)."""
    if t.rank != 1:
        raise ValueError(f"target must be single-index (rank 1), got rank {t.rank}")
    z, w = gauss_hermite_rule(_Y_ORDER)
    y = np.asarray(t.links[0](z), dtype=float)
    if t.noise > 0:
        e, we = gauss_hermite_rule(_NOISE_ORDER)
        y = (y[:, None] + t.noise * e[None, :]).ravel()
        w = (w[:, None] * we[None, :]).ravel()
    return y, w


def weighted_mp_stieltjes(x, y, w, phi, *, eps=1e-9):
    """Stieltjes transform of the law of ``M = (1/n) sum_i y_i x_i x_i^T`` at ``x + i eps``.

    ``y, w``: nodes and weights of the law of the weights ``y_i``; ``x_i ~ N(0, I_d)``,
    ``d / n = 1 / phi``.  Solves ``m = 1 / (-z + E[y / (1 + y m / phi)])`` (Silverstein;
    ``y = 1`` gives Marchenko–Pastur with ratio ``1/phi``), by fixed-point iteration at
    ``Im z = 1`` and Newton while ``Im z`` decreases tenfold per height to ``eps``: to a step of
    ``1e-8`` relative at each height on the way (quadratic convergence leaves an error near
    ``1e-16``), to ``1e-14`` at ``eps``.  Convention ``m(z) = int dmu(l) / (l - z)``.

    >>> m = weighted_mp_stieltjes(np.array([1.0]), np.array([1.0]), np.array([1.0]), 2.0)
    >>> round(float(m[0].imag) / np.pi, 5)          # MP density, ratio 1/2, at 1: sqrt(7/4)/pi
    0.42108
    """
    x = np.asarray(x, dtype=float)
    y, w = np.asarray(y, float), np.asarray(w, float)
    keep = w > 1e-16 * w.max()          # Gauss–Hermite tails below double precision change nothing
    y, w = y[keep], w[keep]
    c = 1.0 / check_positive("phi", phi)
    z = x + 1j
    m = -1.0 / z
    cy, wy, wcy2 = c * y, w * y, w * c * y * y
    for it in range(25):
        m_new = 1.0 / (-z + (1.0 / (1.0 + cy * m[:, None])) @ wy)
        done = it >= 4 and np.all(np.abs(m_new - m) <= 1e-9 * np.abs(m_new))   # Newton takes it from here
        m = m_new
        if done:
            break
    heights = np.geomspace(1.0, eps, _MP_HEIGHTS)
    for k, eta in enumerate(heights):
        zz = x + 1j * eta
        act = np.arange(x.size)
        last = k == heights.size - 1
        tol = 1e-14 if last else 1e-8
        for _ in range(12 if last else 6):   # Newton, on the points not yet converged at this height
            mm, z = m[act], zz[act]
            iD = 1.0 / (1.0 + cy * mm[:, None])
            S = iD @ wy
            step = (mm * (S - z) - 1.0) / ((S - z) - mm * ((iD * iD) @ wcy2))
            m[act] = mm - step
            act = act[np.abs(step) > tol * np.abs(m[act])]
            if act.size == 0:
                break
    return m


def weighted_mp_cdf(y, w, phi, *, grids=(_GRID, _GRID, _GRID), floor: float = 1e-12):
    """Grid and CDF of the law of ``M`` (above): the density on a wide grid of ``grids[0]`` points, then twice on the
    numerical support (where it exceeds ``floor`` times its largest value, and one point beyond) with ``grids[1]``
    and ``grids[2]`` points; the CDF by the trapezoid rule, normalised.  A coarse first grid with a high ``floor``
    can miss the thin tail a heavy-tailed ``y`` gives ``M``: the defaults keep it to the quantiles
    ``1 - 1/(2d)`` (docs/theory/two_step.md §5.5)."""
    c = 1.0 / phi
    s = (1.0 + math.sqrt(c)) ** 2
    x = np.linspace(s * min(y.min(), 0.0) - 1.0, s * max(y.max(), 0.0) + 1.0, grids[0])
    for n_grid in grids[1:]:  # a wide grid, then the numerical support
        rho = np.maximum(weighted_mp_stieltjes(x, y, w, phi).imag, 0.0) / np.pi
        keep = np.nonzero(rho > floor * rho.max())[0]
        x = np.linspace(x[max(keep[0] - 1, 0)], x[min(keep[-1] + 1, len(x) - 1)], n_grid)
    F = _cdf_on(x, y, w, phi)
    if np.count_nonzero((F > 0.005) & (F < 0.995)) < MIN_BULK_POINTS:
        # a link of degree 4 spreads islands of M's law far out, and a linear grid over them leaves the bulk
        # unresolved: a grid uniform in asinh((x - centre) / h), as fine as h / 50 at the bulk and geometric
        # towards the far islands (docs/theory/two_step.md §5.5)
        lo, mid, hi = np.interp([0.005, 0.5, 0.995], F, x)
        h = max(hi - lo, 1e-12 * max(abs(x[0]), abs(x[-1]), 1.0)) / 50.0
        u = np.linspace(math.asinh((x[0] - mid) / h), math.asinh((x[-1] - mid) / h), 2 * grids[-1])
        x = mid + h * np.sinh(u)
        F = _cdf_on(x, y, w, phi)
    return x, F


def _cdf_on(x, y, w, phi):
    """The CDF of the law of ``M`` on the grid ``x`` (the density by the trapezoid rule, normalised on it)."""
    rho = np.maximum(weighted_mp_stieltjes(x, y, w, phi).imag, 0.0) / np.pi
    F = np.concatenate([[0.0], np.cumsum((rho[1:] + rho[:-1]) / 2 * np.diff(x))])
    return F / F[-1]


def weighted_mp_quantiles(y, w, phi, count):
    """The ``count`` quantiles ``F^{-1}((l - 1/2)/count)`` of the law of ``M`` (see above; :func:`weighted_mp_cdf`).

    >>> q = weighted_mp_quantiles(np.array([1.0]), np.array([1.0]), 1.0, 4)
    >>> bool(0 < q[0] < q[-1] < 4)                  # MP ratio 1 on [0, 4]
    True
    """
    count = check_int("count", count, lo=1)
    x, F = weighted_mp_cdf(y, w, phi)
    return np.interp((np.arange(count) + 0.5) / count, F, x)


class _Reduced(SeparableProfile):
    """The ten-unknown reduction of the HLN system at real ``x`` (module docstring)."""

    def __init__(self, s1, s2, psi, a, lam):
        e = np.array([1.0, 2 * s1, s1 ** 2 + 2 * s2, 2 * s1 * s2, s2 ** 2])
        k = np.arange(5)
        super().__init__(a[:, None] ** k * e, lam[:, None] ** k, psi)


def two_step_bulk_edge(activation, target, *, psi, phi, eta1, eta2, N, noise=0.0, nodes="quantile") -> float:
    """Top singular-value edge of the bulk of ``W_2`` (reused batch, quadratic ``sigma``), finite ``N``.

    Normalisation: docs/conventions.md §3–§5 and the module docstring (docs/theory/two_step.md §5.5):
    ``1 + sqrt(psi)`` at ``eta = 0``.

    Parameters
    ----------
    activation : ``c0 + He1 + c2 He2`` (``mu1 = 1``; name, callable or Activation)
        Any other ``sigma`` is a ``ValueError`` (the exact algebra needs degree ``<= 2``),
        e.g. ``"hermite(0, 1, 0.5)"`` for ``He1 + He2/2``.
    target : target spec (see :func:`rmtfl.theory.make_target`), single-index.
    psi, phi : float > 0
        ``N / d`` and ``n / d``.
    eta1, eta2 : float >= 0
        The two learning rates (``eta = c N^alpha``, :func:`rmtfl.theory.step_size`).
    N : int >= 2
        Width; ``d = round(N / psi)``.
    noise : float >= 0
        Label-noise standard deviation (combined with the target's own: ``hypot``).
    nodes : {"quantile"}
        Rows and columns represented by the quantiles of their laws (module docstring).

    Returns
    -------
    float
        ``sqrt`` of the right edge of the deterministic equivalent of the spectrum of
        ``H H^T`` (normalisation of the module docstring: ``1 + sqrt(psi)`` at ``eta = 0``).

    Examples
    --------
    >>> round(two_step_bulk_edge("hermite(0, 1, 0.5)", "linear", psi=0.5, phi=2.0, eta1=0.0, eta2=0.0,
    ...                          N=100), 4)   # 1 + sqrt(0.5)
    1.7071
    """
    psi = check_in_range("psi", psi, 0.0, 1e4, lo_open=True)
    phi = check_in_range("phi", phi, 0.0, 1e4, lo_open=True)
    eta1 = check_in_range("eta1", eta1, 0.0, 1e6)
    eta2 = check_in_range("eta2", eta2, 0.0, 1e6)
    N = check_int("N", N, lo=2, hi=10**6)
    if N / psi > 10**6:
        raise ValueError(f"psi: d = N/psi must be at most 1e6 here, got N={N}, psi={psi!r}")
    noise = check_in_range("noise", noise, 0.0, 1e3)
    check_choice("nodes", nodes, ("quantile",))
    c2 = quadratic_c2(get_activation(activation))
    t = make_target(target)
    if noise:
        t = make_target(t, noise=math.hypot(noise, t.noise))
    s1, s2 = 2 * c2 * (eta1 + eta2), 4 * c2 ** 2 * eta1 * eta2
    d = max(int(round(N / psi)), 1)
    a = special.ndtri((np.arange(N) + 0.5) / N) / math.sqrt(N)
    if s1 == 0 and s2 == 0:
        lam = np.zeros(1)
    else:
        y, w = y_law(t)
        lam = weighted_mp_quantiles(y, w, phi, d)
    red = _Reduced(s1, s2, N / d, a, lam)
    prods = np.outer([a.min(), a.max()], [lam.min(), lam.max()])
    u_lo, u_hi = float(prods.min()), float(prods.max())
    us = [u_lo, u_hi] + ([-s1 / (2 * s2)] if s2 and u_lo < -s1 / (2 * s2) < u_hi else [])
    cmax2 = max((1 + s1 * u + s2 * u * u) ** 2 for u in us)      # the largest profile entry (quadratic in u)
    x_start = 4.0 * (1 + math.sqrt(N / d)) ** 2 * max(cmax2, 1.0)
    return math.sqrt(fold_edge(red, x_start))
