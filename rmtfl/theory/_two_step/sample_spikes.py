"""Outliers of ``W_2`` made by single extreme samples (docs/theory/two_step.md §8.3).

With a heavy-tailed target (``He_3`` parts: ``y ~ z^3``) the largest ``|y_i|`` of a batch of ``n``
samples is several times its typical size, and sample ``i`` alone adds to ``W_2`` the rank-one term

    (y_i / n) u_i x_i^T,      u_ij = a_j [eta_1 (sigma'(z_j) - mu_1) + eta_2 (sigma'(z_j + t_j D_ji) - F(t_j))],

(``z_j = <w_j, x_i>``, ``t_j = eta_1 a_j``, ``D_ji`` the first-step change of neuron ``j`` on sample ``i``,
which holds the sample's own term ``y_i sigma'(z_j)/phi`` when the batch is reused; ``F`` as in
:mod:`rmtfl.theory._two_step.finite_n`).  The mean of ``sigma'`` over neurons is part of the low-rank ``P``
already (``x_i`` enters ``beta_hat`` and ``v(t)``), so only the fluctuation survives: ``u_i`` is orthogonal to
``a`` and ``x_i`` to ``beta*`` (up to ``O(d^{-1/2})``).  Its strength is

    theta_i^2 = (y_i / (phi sqrt(d)))^2 E_g[ g^2 E_{z, xi} h(g, z, xi)^2 ],    g = sqrt(N) a,

and it is an outlier when ``theta_i^2`` exceeds ``1 / D(edge)`` of the widened bulk, at the root of
``D(s) = 1 / theta_i^2`` (the D-transform of docs/theory/two_step.md §2.2, its ``N`` side weighted by the rows of
``u_i``).  The part linear in ``z`` scales with ``M``'s eigenvalue along the sample (:func:`m_spike`).  Where the
outliers of a batch lie is random: :mod:`rmtfl.theory._two_step.sample_order` takes the order statistics over the
tails of the law of ``y`` (:func:`tail_bins`); in a given batch the count and the locations fluctuate
(extreme-value statistics, not ``N^{-1/2}``).
"""
from __future__ import annotations

import functools
import math

import numpy as np

from .._classical.activation_type import PIECE, Activation
from .._classical.hermite import gauss_hermite_rule
from .._classical.targets import Target
from .relu_moments import is_relu, relu_h_moments, relu_move_covariance

__all__ = ["tail_bins", "tail_refinement", "typical_extremes", "bulk_cut", "reach_cuts", "outlier_shares", "y_tail",
           "truncated_rule", "y_law_truncated", "sample_strengths", "second_step_move", "m_spike", "extreme_eigenvalues",
           "SAMPLE_RANKS", "TAIL_START"]

#: How many of the most extreme samples of each batch are examined.
SAMPLE_RANKS = 12

#: The outermost tail bin holds the samples of tail probability below ``TAIL_START / n``.
TAIL_START = 0.05
_Z_GRID = 40001
_Z_ORDER, _XI_ORDER = 20, 6        # the Gauss-Hermite rule over (z, xi) of a column's moments, as for F


def _tail_edges(n: int, p_max: float, bins: int):
    """Tail probabilities bounding the bins of one side: 0, then geometric from ``TAIL_START / n`` to ``p_max``."""
    return np.concatenate([[0.0], np.geomspace(min(TAIL_START / n, 0.5 * p_max), p_max, bins)])


def tail_bins(target: Target, n: int, p_max: float, bins: int = 16):
    """``(y, z*, mass)``: the tails of the law of ``y`` beyond tail probability ``p_max`` on each side, cut into
    ``bins`` bins per side with edges graded geometrically from ``0.05 / n`` (docs/theory/two_step.md §8.3).

    Each bin is represented by the sample at its geometric-mean tail probability; label noise is left out of the
    tails (it is Gaussian and small beside a polynomial link's tail).
    """
    z, y, w = _dense_y(target)
    edges = _tail_edges(n, p_max, bins)
    lo, hi = edges[:-1], edges[1:]
    pm = _geometric_means(lo, hi)
    ys, zs = [], []
    for sign in (1.0, -1.0):
        order = np.argsort(-sign * y, kind="stable")           # the most extreme of this sign first
        i = order[np.minimum(np.searchsorted(np.cumsum(w[order]), pm), z.size - 1)]
        ys.append(y[i])
        zs.append(z[i])
    return np.concatenate(ys), np.concatenate(zs), np.concatenate([hi - lo, hi - lo])


def _geometric_means(lo, hi):
    """``sqrt(lo hi)`` per bin, ``hi / 2`` where ``lo`` is 0: where a bin's representative sample lies."""
    return np.where(lo > 0, np.sqrt(lo * hi), 0.5 * hi)


def tail_refinement(n: int, p_max: float, bins: int = 16, sub: int = 1):
    """``(R, mass)``: sub-bins of :func:`tail_bins` (each bin but the outermost cut into ``sub`` geometric pieces)
    and the weights ``R`` (sub-bins x bins) that interpolate a quantity known at the bins' representative samples
    linearly in the log tail probability (flat beyond the outermost representatives), per side
    (docs/theory/two_step.md §8.3).

    The strength of a column varies smoothly along the tail; one representative per bin would give every sample
    of a bin the same strength and bunch their order statistics.
    """
    edges = _tail_edges(n, p_max, bins)
    lo, hi = edges[:-1], edges[1:]
    rep = np.log(_geometric_means(lo, hi))
    # every bin's geometric cuts in one call (the same values as bin by bin); a bin from 0 is not cut
    pos = lo > 0
    geo = iter(np.geomspace(lo[pos], hi[pos], sub + 1, axis=1) if pos.any() else ())
    centres, mass = [], []
    for p, a, b in zip(pos, lo, hi):
        cuts = next(geo) if p else np.array([a, b])
        centres.append(_geometric_means(cuts[:-1], cuts[1:]))
        mass.append(np.diff(cuts))
    u = np.log(np.concatenate(centres))
    mass = np.concatenate(mass)
    R1 = np.zeros((u.size, bins))
    j = np.clip(np.searchsorted(rep, u) - 1, 0, bins - 2)
    f = np.clip((u - rep[j]) / (rep[j + 1] - rep[j]), 0.0, 1.0)
    R1[np.arange(u.size), j] = 1.0 - f
    R1[np.arange(u.size), j + 1] += f
    R = np.zeros((2 * u.size, 2 * bins))
    R[:u.size, :bins] = R1
    R[u.size:, bins:] = R1
    return R, np.concatenate([mass, mass])


def _dense_grid():
    z = np.linspace(-9.0, 9.0, _Z_GRID)
    w = np.exp(-0.5 * z * z)
    w = w / w.sum()
    z.flags.writeable = w.flags.writeable = False
    return z, w


#: The dense grid of ``z*`` and its probabilities, the same for every target (read-only).
_DENSE_Z, _DENSE_W = _dense_grid()


def _dense_y(target: Target):
    """``(z, y, w)``: the target's link on the dense grid of ``z*``, with its probabilities."""
    return _DENSE_Z, np.asarray(target.links[0](_DENSE_Z), dtype=float), _DENSE_W


def _by_reach(z, y):
    """Indices of the dense grid, most extreme sample first: a sample counts by its reach, the smallest ``|y|`` at or
    beyond its ``z*`` (away from 0), so the extreme samples are those of the two tails of ``z*``; ties (where ``|y|``
    comes back to 0 further out) go outermost first.  Where ``|y|`` grows outward this is the order of ``|y|``."""
    a = np.abs(y)
    i0 = int(np.searchsorted(z, 0.0))
    reach = np.concatenate([np.minimum.accumulate(a[:i0]), np.minimum.accumulate(a[i0:][::-1])[::-1]])
    return np.lexsort((-np.abs(z), -reach))


def typical_extremes(target: Target, n: int, K: int):
    """``(y, z*)`` of the ``K`` most extreme samples of a typical batch of ``n``: the ``(k - 1/2)/n`` quantiles,
    ``k = 1..K``, of the samples ordered as in :func:`bulk_cut` (label noise left out, as in :func:`tail_bins`)."""
    z, y, w = _dense_y(target)
    order = _by_reach(z, y)
    cum = np.cumsum(w[order])
    idx = order[np.minimum(np.searchsorted(cum, (np.arange(1, K + 1) - 0.5) / n), z.size - 1)]
    return y[idx], z[idx]


def bulk_cut(target: Target, n: int, ranks: int | None = None):
    """``(lo, hi)``: the ``z*``-interval of the samples left in the bulk — all but the ``ranks`` most extreme ``|y|``
    of a batch of ``n`` on average (``P(|y| > y_c) = ranks / n``) — or ``None`` if that leaves every sample in.

    The extreme samples are those of the two tails of ``z*``: a sample counts by the smallest ``|y|`` at or beyond its
    ``z*`` (away from 0).  Where ``|y|`` grows outward, as for the links of degree up to 3 on the acceptance grid, that
    is its own ``|y|``; a link with a deep inner extremum (He1 + He4/5: ``y = -3.03`` at ``z* = -1.91``) keeps the
    samples there in the bulk, which a plain cut in ``|y|`` would tear out of its middle."""
    ranks = SAMPLE_RANKS if ranks is None else ranks
    z, y, w = _dense_y(target)
    order = _by_reach(z, y)
    k = int(np.searchsorted(np.cumsum(w[order]), ranks / n))
    return None if k == 0 else _within(z, order, k)


def _within(z, order, k: int):
    """The ``z*``-interval of the dense grid's samples but the first ``k`` in ``order``."""
    inside = np.ones(z.size, bool)
    inside[order[:k]] = False
    return float(z[inside].min()), float(z[inside].max())


def reach_cuts(target: Target, tails, width: float = 0.25):
    """Where a batch's most extreme sample lies when the samples beyond it (ordered as in :func:`bulk_cut`) have
    probability ``p``, for each ``p`` in ``tails``: ``((lo, hi), (p_lo, p_hi))``, the ``z*``-interval of the samples
    within its reach and the probabilities that it lies at its lower and at its upper end -- the shares of the two
    tails of ``z*`` among the samples whose tail probability lies within a factor ``1 + width`` of ``p``
    (docs/theory/two_step.md §8.3, "P given the batch's most extreme sample").

    >>> from rmtfl.theory._classical.targets import make_target
    >>> (lo, hi), (p_lo, p_hi) = reach_cuts(make_target("hermite(0, 1, 0, 0.4082482904638631)"), [1e-3])[0]
    >>> round(hi, 2), round(lo + hi, 6), round(p_lo, 2)      # an odd link: |z*| = 3.29 on either side
    (3.29, 0.0, 0.5)
    """
    z, y, w = _dense_y(target)
    order = _by_reach(z, y)
    cum = np.cumsum(w[order])
    out = []
    for p in tails:
        k = int(np.searchsorted(cum, p))
        a, b = np.searchsorted(cum, [p / (1.0 + width), p * (1.0 + width)])
        near = order[a:max(b, a + 1)]
        p_hi = float(w[near] @ (z[near] > 0.0) / w[near].sum())
        out.append((_within(z, order, max(k, 1)), (1.0 - p_hi, p_hi)))
    return out


def outlier_shares(target: Target, zrange) -> tuple[float, float]:
    """``(p_plus, p_minus)``: the probability that a sample lies beyond the bulk's ``z*``-interval ``zrange`` with
    ``y > 0`` and with ``y < 0``.  A batch's samples beyond the interval make eigenvalues of ``M`` above its bulk
    (``y > 0``) and below it (``y < 0``); ``n p_plus`` and ``n p_minus`` of them on average
    (docs/theory/two_step.md §8.2, "The bulk's columns")."""
    z, y, w = _dense_y(target)
    out = (z < zrange[0]) | (z > zrange[1])
    return float(w[out & (y > 0)].sum()), float(w[out & (y < 0)].sum())


def y_tail(target: Target, t, sign: float = 1.0):
    """``P(sign * y > t)`` at each ``t`` (label noise left out, as in :func:`tail_bins`)."""
    _, y, w = _dense_y(target)
    order = np.argsort(sign * y, kind="stable")      # ties apart (none on the dense grids), the same order
    ys, tail = (sign * y)[order], np.cumsum(w[order][::-1])[::-1]
    i = np.searchsorted(ys, np.asarray(t, dtype=float), side="right")
    return np.where(i < ys.size, tail[np.minimum(i, ys.size - 1)], 0.0)


def truncated_rule(lo: float, hi: float, order: int = 24):
    """Nodes and weights of ``E[f(z) 1{lo <= z <= hi}]``, ``z ~ N(0, 1)`` (Gauss–Legendre; weights sum to ``P``)."""
    x, w = _legendre_rule(order)
    z = 0.5 * (hi - lo) * x + 0.5 * (hi + lo)
    return z, 0.5 * (hi - lo) * w * np.exp(-0.5 * z * z) / math.sqrt(2 * math.pi)


@functools.lru_cache(maxsize=8)
def _legendre_rule(order: int):
    """Gauss-Legendre nodes and weights on ``[-1, 1]`` (read-only): the same few orders serve every prediction, and
    the rule's eigenvalue problem costs as much as the rest of a truncated law."""
    x, w = np.polynomial.legendre.leggauss(order)
    x.flags.writeable = w.flags.writeable = False
    return x, w


def y_law_truncated(target: Target, zrange):
    """Nodes and (sub-probability) weights of ``y`` over the bulk samples ``z* in zrange`` (label noise included)."""
    z, w = truncated_rule(*zrange, order=60)
    y = np.asarray(target.links[0](z), dtype=float)
    if target.noise > 0:
        e, we = gauss_hermite_rule(8)
        y = (y[:, None] + target.noise * e[None, :]).ravel()
        w = (w[:, None] * we[None, :]).ravel()
    return y, w


def m_spike(y_i: float, phi: float, y_bulk, w_bulk) -> float:
    """The eigenvalue of ``M = X^T diag(y) X / n`` along an extreme sample (docs/theory/two_step.md §8.3).

    Sample ``i`` alone would put ``y_i / phi`` there; the other samples (the weighted-MP bulk, nodes ``y_bulk``
    with weights ``w_bulk``) push it out to the pole of Silverstein's equation at ``m = -phi / y_i``:
    ``lambda_i = y_i / phi + E[y / (1 - y / y_i)]``.
    """
    wb = np.asarray(w_bulk, dtype=float)       # weights: the bulk samples' share of the batch (sum <= 1)
    yb = np.asarray(y_bulk, dtype=float)
    return float(y_i / phi + wb @ (yb / (1.0 - yb / y_i)))


def extreme_eigenvalues(ys, zs, phi: float, y_bulk, w_bulk, zrange) -> list:
    """The eigenvalue of ``M`` along each of the samples ``(ys, zs)``: :func:`m_spike` for a sample beyond every
    ``|y|`` of the bulk (``y_bulk``, ``w_bulk``) and outside its ``z*``-interval ``zrange``; ``y / phi`` for the others,
    which the bulk holds.  A sample at an inner extremum of the link (He1 + He4/5 at ``z* = -1.91``) lies inside the
    bulk even where no node of its rule reaches that ``|y|``: the pole there would be a resonance with the bulk's own
    samples, not an eigenvalue of its own."""
    ymax = float(np.max(np.abs(y_bulk)))
    lo, hi = zrange if zrange is not None else (math.inf, -math.inf)
    return [m_spike(y, phi, y_bulk, w_bulk) if abs(y) > ymax and not lo <= z <= hi else y / phi
            for y, z in zip(ys, zs)]


#: Whether the sample's own term in the second step's ``D`` (reused batch) takes ``M``'s eigenvalue ``lambda_i`` along
#: the sample instead of ``y_i / phi``: exact for the quadratic sigma, whose column is ``(1 + eps_1 lambda)(1 + eps_2
#: lambda)`` there.  Off: measured and not kept (docs/theory/two_step_attempts.md §23).
OWN_TERM_EIGENVALUE = False


def sample_strengths(act: Activation, st, *, ys, zs, eta1, eta2, N, d, g, wg, which, lams=None, moments=None,
                     rho=None, h_cache=None):
    """``theta^2`` of each extreme sample and the row weights of its ``u`` at the nodes ``g``.

    ``which``: ``"both"`` (reused batch: both steps see the sample), ``"first"`` or ``"second"`` (fresh
    batches: the sample is in that batch only).  ``st`` is the :class:`~rmtfl.theory._two_step.finite_n.FiniteNSetup`.
    ``lams``: the eigenvalues of ``M`` along the samples (:func:`m_spike`); the part of ``h`` linear in ``z``
    is the ``M`` term of the profile and scales with ``lambda_i`` instead of ``y_i / phi`` (default: ``y_i / phi``).
    ``moments``: a list that receives, per sample, ``(E[A^2], E[A^4])`` at the nodes ``g`` for the column entry
    ``A`` (units of ``1/sqrt(d)``, without the flat noise ``r``), for the spread of its strength.
    ``h_cache``: a dict in which the moments of ``h`` (which do not depend on ``lams``) are kept for a later call at
    the same samples, rows and steps (as the count's laws make, with ``M``'s whole-law eigenvalue).

    The column entry's base ``W_1 x_i / |x_i|`` holds, besides ``z``, the first step's move ``t tau_h xi`` (the other
    samples' part of ``D``), the same ``xi`` the second step's ``sigma'`` sees; the part of ``h`` along ``xi``
    (``E[xi h]``) is therefore correlated with the base and adds ``2 kappa' g t tau_h E[xi h]`` to the excess
    (docs/theory/two_step.md §8.3, "The first step's move in the column").  In a reused batch the second step moves
    the base along the same ``xi`` by ``eta_2 a rho(t) tau_h`` (:func:`second_step_move`, or ``rho`` at the rows
    ``g`` when given), which joins ``t`` (docs/theory/two_step.md §8.3, "The second step's move in the column").
    """
    t = eta1 * g / math.sqrt(N)                                     # (Q,)
    phi_b = st.phi2 if which == "second" else st.phi
    ys = np.asarray(ys, dtype=float)
    lams = ys / phi_b if lams is None else np.asarray(lams, dtype=float)
    kw = dict(t=t, ys=ys, zs=zs, eta1=eta1, eta2=eta2, which=which)
    # E[z^k h^m | sample, row], (S, Q) each; relu: a step, in closed form (rmtfl/theory/_two_step/relu_moments.py)
    own = lams if OWN_TERM_EIGENVALUE and which == "both" else None
    key = None if h_cache is None or own is not None else (
        which, moments is not None, ys.tobytes(), np.asarray(zs, dtype=float).tobytes(), np.asarray(t).tobytes(),
        float(eta1), float(eta2))
    mom = None if key is None else h_cache.get(key)
    if mom is None:
        mom = (relu_h_moments(st, **kw) if is_relu(act)
               else _h_moments(act, st, fourth=moments is not None, own=own, **kw))
        if key is not None:
            h_cache[key] = mom
    eh2, ezh = mom[0, 2], mom[1, 1]
    kappa = (ys / (phi_b * math.sqrt(N)))[:, None]
    kap_lin = (lams / math.sqrt(N))[:, None]                        # the linear part sees M's eigenvalue
    ex = 2 * kap_lin * g * ezh + kap_lin**2 * g**2 * ezh**2 + kappa**2 * g**2 * (eh2 - ezh**2)   # (S, Q)
    # h's part along xi (0 for a first-batch sample) and the base's own xi part t tau_h: the linear part of h is
    # c z + b xi and scales with lambda_i; its xi part meets the base's (docs/theory/two_step.md §8.3)
    exh = mom["xi"]
    # the base's move along xi: the first step's t, and in a reused batch the second step's, eta_2 a rho(t)
    if which == "both":
        t_move = t + eta2 * g / math.sqrt(N) * (second_step_move(act, st, t) if rho is None else rho)
    else:
        t_move = t
    cross = 2 * kap_lin * g * (t_move * st.tau_h)[None, :] * exh + (kap_lin**2 - kappa**2) * g**2 * exh**2
    ex = ex + cross
    thetas = N / d * (ex @ wg)
    rows = list(ex)
    if moments is not None:
        # the entry A = z (1 + kap_lin g c) + kappa g (h - c z) = p z + q h, c = E[z h] (so E[z (h - c z)] = 0):
        # E[A^2] = (1 + kap_lin g c)^2 + (kappa g)^2 (E[h^2] - c^2); E[A^4] from the moments E[z^k h^(4-k)]
        alpha, beta = 1 + kap_lin * g * ezh, kappa * g
        pz = alpha - beta * ezh
        e4 = (beta**4 * mom[0, 4] + 4 * beta**3 * pz * mom[1, 3] + 6 * beta**2 * pz**2 * mom[2, 2]
              + 4 * beta * pz**3 * mom[3, 1] + 3.0 * pz**4)             # E z^4 = 3
        e2 = alpha**2 + beta**2 * (eh2 - ezh**2)
        # the xi cross term raises E[A^2]; E[A^4] follows at the same kurtosis (it only sets the strength's spread)
        grow = np.divide(np.maximum(e2 + cross, 0.0), e2, out=np.ones_like(e2), where=e2 > 0)
        moments.extend(zip(e2 * grow, e4 * grow**2))
    return np.asarray(thetas, dtype=float), rows


#: Chebyshev nodes in ``t`` at which :func:`_h_moments` evaluates a fresh second batch's quadrature when there are
#: more rows than this (its moments are analytic in ``t``; they are interpolated onto the rows).
T_NODES = 96


def _h_moments(act: Activation, st, *, t, ys, zs, eta1, eta2, which, fourth, own=None):
    """``E[z^k h^m]`` of :func:`sample_strengths` by Gauss–Hermite quadrature over ``(z, xi)``: a dict ``(k, m) ->
    (S, Q)`` with ``(0, 2)``, ``(1, 1)`` and, with ``fourth``, ``(0, 4)``, ``(1, 3)``, ``(2, 2)``, ``(3, 1)``; and
    ``"xi"``: ``E[xi h]``.

    For a sample of a fresh second batch with more than ``T_NODES`` rows, the quadrature runs at ``T_NODES``
    Chebyshev nodes spanning the rows' ``t`` and is interpolated onto them: its ``h`` is analytic in ``t`` on the
    scale of ``1 / tau_h``, and 96 nodes give the moments to 1e-7 (a first-batch sample's ``h`` does not depend on
    ``t``; a reused sample's own term ``y sigma'(z) / phi`` makes ``h`` vary on the scale ``phi / |y|``, too fast for
    them)."""
    t = np.asarray(t, dtype=float)
    if which != "second" or t.size <= T_NODES:
        return _h_moments_at(act, st, t=t, ys=ys, zs=zs, eta1=eta1, eta2=eta2, which=which, fourth=fourth, own=own)
    lo, hi = float(t.min()), float(t.max())
    theta = np.pi * (np.arange(T_NODES) + 0.5) / T_NODES
    mom = _h_moments_at(act, st, t=(lo + hi) / 2 + (hi - lo) / 2 * np.cos(theta), ys=ys, zs=zs, eta1=eta1,
                        eta2=eta2, which=which, fourth=fourth, own=own)
    u = np.clip((2 * t - lo - hi) / (hi - lo), -1.0, 1.0) if hi > lo else np.zeros_like(t)
    m = np.arange(T_NODES)
    coef = np.cos(np.outer(m, theta)) * np.where(m == 0, 1.0, 2.0)[:, None] / T_NODES     # values -> coefficients
    interp = np.cos(np.outer(np.arccos(u), m)) @ coef                                      # (Q, T_NODES)
    return {key: v @ interp.T for key, v in mom.items()}


def _h_moments_at(act: Activation, st, *, t, ys, zs, eta1, eta2, which, fourth, own=None):
    """:func:`_h_moments` at each ``t`` itself."""
    z, wz = gauss_hermite_rule(_Z_ORDER)
    xi, wx = gauss_hermite_rule(_XI_ORDER)
    W2 = np.outer(wz, wx).ravel()                                   # (A B,)
    zb = np.repeat(z, xi.size)                                      # z at the (A B) nodes
    sp = act.derivative(1, z)                                       # (A,)
    S, Q, AB = ys.size, t.size, W2.size
    pairs = ((0, 2), (1, 1)) + (((0, 4), (1, 3), (2, 2), (3, 1)) if fourth else ())
    weights = {(k, m): W2 * zb**k for k, m in pairs}
    weights["xi"] = W2 * np.tile(xi, z.size)
    h1 = eta1 * (np.repeat(sp, xi.size) - st.mu1) if which in ("both", "first") else None   # the first step's part
    if which == "first":                # h depends neither on the sample nor on the row: one row
        h = np.zeros((1, AB)) + h1
        h2 = h * h
        powers = {1: h, 2: h2, 3: h2 * h if fourth else None, 4: h2 * h2 if fourth else None}
        return {key: np.broadcast_to(powers[key[1] if key != "xi" else 1] @ w, (S * Q,)).reshape(S, Q)
                for key, w in weights.items()}
    # the second step sees the moved pre-activation (a first-batch sample does not)
    s = st.mus * np.asarray(zs, dtype=float)
    D = (st.mu1 * s)[:, None, None] + st.tau_h * xi[None, None, :]             # (S, 1, B)
    if which == "both":
        if own is None:
            D = D + ys[:, None, None] * sp[None, :, None] / st.phi              # (S, A, B): the sample's own term
        else:       # at M's eigenvalue along the sample (docs/theory/two_step_attempts.md §23; off)
            D = D + np.asarray(own, dtype=float)[:, None, None] * sp[None, :, None]
    out = {key: np.empty(S * Q) for key in weights}
    # h over (sample, row, z, xi) is S Q A B values: taken a block of (sample, row) pairs at a time, each block's
    # h and its powers stay in cache through their weighted sums instead of passing through memory once per
    # operation.  Every operation is per element or per pair, the blocks a multiple of 4 pairs (BLAS groups a
    # matrix-vector product's rows by 4): the values, roundings included, of the whole array at once
    rows = S * Q
    step = max(4, _H_BLOCK // AB // 4 * 4)
    zc = z[None, :, None]
    for r0 in range(0, rows, step):
        r1 = min(r0 + step, rows)
        arg = np.empty((r1 - r0, z.size, xi.size))
        for i in range(r0 // Q, (r1 - 1) // Q + 1):          # the samples in the block, each its rows t D
            a0, a1 = max(r0, i * Q), min(r1, (i + 1) * Q)
            np.multiply(t[a0 - i * Q:a1 - i * Q, None, None], D[i][None], out=arg[a0 - r0:a1 - r0])
        arg += zc
        h = act.derivative(1, arg).reshape(r1 - r0, AB)
        h -= (h @ W2)[:, None]
        h *= eta2
        if h1 is not None:
            h += h1
        h2 = h * h
        powers = {1: h, 2: h2}
        if fourth:
            powers[3], powers[4] = h2 * h, h2 * h2
        for key, w in weights.items():
            out[key][r0:r1] = powers[key[1] if key != "xi" else 1] @ w
    return {key: v.reshape(S, Q) for key, v in out.items()}


#: Values of ``h`` per block of :func:`_h_moments_at` (a sample and some of its rows): small enough for a core's cache.
_H_BLOCK = 2 * PIECE                   # as F's table blocks its data nodes (sigma_table.py)


def second_step_move(act: Activation, st, t):
    """``rho(t)``: the second step's move of a sample's column along the first step's ``xi``, per unit
    ``eta_2 a tau_h`` (reused batch; docs/theory/two_step.md §8.3, "The second step's move in the column").

    The other samples move ``W x_i`` in both steps along directions made of the same ``y_k (x_k . x_i)``; the
    second step's is the first's ``xi`` times
    ``rho(t) = E[y^2 Cov(sigma'(z), sigma'(z + t D))] / (E y^2 Var sigma')`` over the whole batch
    (``D = y sigma'(z)/phi + mu_1 s + tau_h xi``), so ``rho(0) = 1``; for ``sigma = He1 + c2 He2``,
    ``rho = 1 + 2 c2 t E[y^3] / (phi E[y^2])`` and the column is then exactly symmetric in the two steps.

    >>> from rmtfl.theory._classical.activations import get_activation
    >>> from rmtfl.theory._classical.targets import make_target
    >>> from rmtfl.theory._two_step.finite_n import finite_n_setup
    >>> st = finite_n_setup(get_activation("tanh"), make_target("hermite(0, 1, 0.5)"), phi=2.0, batch="reused",
    ...                     phi2=None)
    >>> [round(float(r), 6) for r in second_step_move(get_activation("tanh"), st, [0.0, 1.0])]
    [1.0, -0.131981]
    """
    t = np.atleast_1d(np.asarray(t, dtype=float))
    # s enters D only as mu_1 s = mu_1 mus z* + mu_1 tau zeta: zeta joins xi, and the data nodes reduce to (z*, y)
    key, inv = np.unique(np.stack([st.zs, st.y]), axis=1, return_inverse=True)
    wy = np.bincount(inv.ravel(), weights=st.w * st.y**2)
    zs, y = key
    tau_x = math.hypot(st.mu1 * st.tau, st.tau_h)
    if is_relu(act):                     # a step: Cov in closed form (relu_moments.py)
        cov = relu_move_covariance(t, y, st.mu1 * st.mus * zs, tau_x, st.phi)
        return cov @ wy / (float(wy.sum()) * (st.sp2 - st.mu1**2))
    z, wz = gauss_hermite_rule(_Z_ORDER)
    xi, wx = gauss_hermite_rule(_XI_ORDER)
    sp = act.derivative(1, z)
    spc = sp - wz @ sp                                          # sigma'(z) centred on the rule
    wc = np.outer(wz * spc, wx).ravel()
    den = float(wy.sum()) * float(wz @ spc**2)                  # the rule's own Var sigma': rho(0) = 1 exactly
    if not den > 0.0:        # sigma' constant (a linear sigma): no move to scale (tau_h = 0); rho = 1, its limit
        return np.ones_like(t)
    D = ((y / st.phi)[:, None, None] * sp[None, :, None] + (st.mu1 * st.mus * zs)[:, None, None]
         + tau_x * xi[None, None, :]).reshape(y.size, -1)
    zz = np.repeat(z, xi.size)[None, None, :]
    # at every row itself: rho falls from 1 within |t| ~ phi / max|y|, too fast for interpolation in t; a block of
    # rows at a time, each block's arguments and sigma' in cache through their sum (as in :func:`_h_moments_at`)
    cov = np.empty((t.size, y.size))                                                            # (Q, Y)
    step = max(1, _H_BLOCK // D.size)
    for q0 in range(0, t.size, step):
        cov[q0:q0 + step] = act.derivative(1, zz + t[q0:q0 + step, None, None] * D[None]) @ wc
    return cov @ wy / den
