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
master equation with that profile (``N``-side weights ``-t(a)``), not the MP BGN formula.  The bulk leaves the
most extreme samples of a typical batch out; their columns and the spikes of ``P`` are one problem
(:mod:`rmtfl.theory._two_step.joint_roots`, docs/theory/two_step.md §8.3).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import NamedTuple

import numpy as np
from scipy import optimize, special

from rmtfl._results import Result
from .._classical.activations import Activation
from .._classical.hermite import gauss_hermite_rule, gaussian_moment, hermite_coeff
from .._classical.targets import Target
from . import sample_spikes
from .counting import count_window
from .joint_roots import TOP_QUANTILES, JointProblem, extreme_columns, ranks_over_top_sample, spike_roots
from .left_gram import weighted_gram_u
from .relu_moments import is_relu
from .right_gram import basis_gram
from .sample_coupling import single_samples
from .sample_group import grouped_tail_law
from .sample_order import outlier_laws, rank_outliers
from .sample_spikes import bulk_cut, truncated_rule
from .sigma_table import F_table
from .spike_spread import spike_spreads
from .top_sample_gram import grams_given_top, weighted_grams
from .whole_law import whole_law_eigenvalues
from .widened_bulk import WidenedBulk, bulk_rows, column_spike, master_eigs, psd_sqrt

__all__ = ["FiniteNSetup", "finite_n_setup", "finite_n_grams", "F_table", "MAX_TARGET_DEGREE", "FiniteNResult",
           "extreme_ranks", "bulk_without", "predict_finite_n", "master_eigs",
           "column_spike", "WidenedBulk", "weighted_gram_u", "sample_components", "vbar_coefficients",
           "prediction_bulk"]

#: Highest Hermite degree of a polynomial target link that the quadrature orders below integrate.
MAX_TARGET_DEGREE = 4

_ZS_ORDER, _ZETA_ORDER, _EPS_ORDER = 24, 16, 6   # data grid (z*, zeta[, eps])

_G_ORDER = 16                                      # law of g = sqrt(N) a

#: M's eigenvalue along each extreme sample over the whole law of ``y``, where the batch's other extreme samples are
#: in the problem with it: the joint problem with ``P`` and the grouped law (docs/theory/two_step.md §8.3); a column
#: on its own keeps the pole over the bulk's samples.  ``False``: the pole there too, as before the single samples'
#: ranks came from the joint problem (the count's laws take the whole law either way).
WHOLE_LAW_EIGENVALUE = True

#: The ranks' means over the batch's most extreme sample take, at each quantile of it, ``P``'s Gram over the batches
#: given that sample (reused batches; :mod:`~rmtfl.theory._two_step.top_sample_gram`, docs/theory/two_step.md §8.3);
#: ``False``: the population law's Gram at every quantile.  The spikes and the count keep the population law.
TOP_SAMPLE_GRAM = True

#: Ranks averaged over P's Gram given the batch's most extreme sample carry how that sample moves the spikes: the
#: spikes' laws move them by the rest of their variance only (docs/theory/two_step.md §8.3); ``False``: by all of it.
TOP_SAMPLE_SPREAD = True


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
    mu2 = hermite_coeff(act, 2) if act.smooth or is_relu(act) else 0.0
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


def finite_n_grams(act: Activation, st: FiniteNSetup, *, eta1, eta2, N, second_layer="gaussian", bulk=True):
    """``(G_U, G_V, Mbar, t_nodes, g_nodes, g_weights, rows, table)`` of ``P`` at width ``N`` (module docstring):
    ``rows`` the widened bulk's row functions (with ``bulk``), ``table`` the :class:`FTable` at the ``t_nodes``
    (``table.F``: the weights ``F(t_q; y, s)`` of the ``v_q`` on the data grid).

    ``U = [a, a ⊙ 1_{bin 1}, ..., a ⊙ 1_{bin Q}]`` (so column 0 is ``a`` itself),
    ``Vbar = [eta_1 mu_1 beta_hat_1, eta_2 v(t_1), ..., eta_2 v(t_Q)]``.
    """
    g, wg = _g_rule(second_layer)
    t = eta1 * g / math.sqrt(N)
    table = F_table(act, st, t, bulk=bulk)
    Q = g.size
    G_U = np.zeros((Q + 1, Q + 1))
    G_U[0, 0] = float(wg @ g**2)
    G_U[0, 1:] = G_U[1:, 0] = wg * g**2
    G_U[1:, 1:] = np.diag(wg * g**2)
    Pw = np.vstack([np.ones_like(st.y), table.F])         # weights of [beta_hat(_2), v_1..v_Q]
    gram, m = basis_gram(st, Pw)
    if st.batch == "reused":
        basis_t = m.copy()
        if st.mus == 0.0:
            basis_t[0] = 0.0
    else:  # basis [beta_hat_1, beta_hat_2, v_1..v_Q]
        basis_t = np.concatenate([[st.mus], m])
    C = vbar_coefficients(st, eta1, eta2, Q)
    G_V = C @ gram @ C.T
    Mbar = (C @ basis_t)[:, None]
    rows = bulk_rows(st, t, table) if bulk else None
    return G_U, G_V, Mbar, t, g, wg, rows, table


def _g_rule(second_layer):
    """The nodes and weights of ``g = sqrt(N) a`` (Gauss–Hermite, or Rademacher's two points)."""
    if second_layer == "gaussian":
        return gauss_hermite_rule(_G_ORDER)
    return np.array([-1.0, 1.0]), np.array([0.5, 0.5])


def vbar_coefficients(st: FiniteNSetup, eta1, eta2, Q):
    """``C``: ``Vbar = C @ basis``, the right vectors of ``P`` in the basis of the Gram matrix ``[beta_hat(_1),
    (beta_hat_2,) v_1, ..., v_Q]`` -- ``vbar_0 = eta1 mu1 beta_hat_1``, ``vbar_q = eta2 v_q``."""
    nb = Q + (2 if st.batch == "fresh" else 1)
    C = np.zeros((Q + 1, nb))
    C[0, 0] = eta1 * st.mu1
    C[np.arange(1, Q + 1), nb - Q + np.arange(Q)] = eta2
    return C


@dataclass(frozen=True)
class FiniteNResult(Result):
    """Finite-``N`` two-step prediction (docs/theory/two_step.md §8.2): internal carrier for :func:`two_step`.

    ``spikes``: singular values of ``P``; ``locations``/``cos2_target``/``cos2_a``/``thetas``: per
    outlier above the widened bulk; ``edge``: its top; ``t_max``: ``eta_1 max_j |a_j|`` at the
    quantile rows; ``notes``; ``samples``: ``(mean, theta, median)`` of the single-sample outliers;
    ``sample_band``: ``(low, high)`` per rank of them (docs/theory/two_step.md §8.3); ``bulk_top``: the bulk's
    largest singular values where its density puts them (the count rule's window, docs/theory/two_step.md §9.2);
    ``spike_medians``: the median of each spike's rank (its location unless a single sample can pass it);
    ``spreads``, ``sample_spreads``: the standard deviation over batches of each one's rank
    (docs/theory/two_step.md §8.5); ``count_laws``: the laws the count is read from (:class:`CountLaws`; ``None``
    without single samples, and with the extreme samples each on its own).  Where single-sample outliers are predicted, ``locations`` and the samples'
    means and medians are those of their ranks in the sorted spectrum (docs/theory/two_step.md §8.3, "Ranked
    values").
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
    sample_band: tuple = ()
    bulk_top: tuple = ()
    spike_medians: tuple = ()
    spreads: tuple = ()
    sample_spreads: tuple = ()
    count_laws: "CountLaws | None" = None


class CountLaws(NamedTuple):
    """What the count through the Poisson process reads (docs/theory/two_step.md §8.3): the single samples' law with
    ``M``'s whole-law eigenvalue, the columns each on their own (``below`` the fold) and the most extreme as one
    group (``above`` it), and the spikes of ``P`` at their locations (``fixed``) with their laws over batches
    (``laws``, ``None`` where none is needed)."""

    below: object
    above: object
    fixed: tuple
    laws: tuple | None


def extreme_ranks(*, N, psi, phi, phi2, batch) -> int:
    """How many of a typical batch's most extreme samples leave the bulk and are tested as columns of their own
    (docs/theory/two_step.md §8.3): ``SAMPLE_RANKS``, but a tiny batch keeps at least three quarters of its samples in
    the bulk."""
    return min(sample_spikes.SAMPLE_RANKS, min(_bulk_batch(N, psi, phi, phi2, batch), int(round(phi * N / psi))) // 4)


def _bulk_batch(N, psi, phi, phi2, batch) -> int:
    """The size of the batch whose samples make the bulk's columns (the second one of fresh batches)."""
    return max(int(round((phi2 if batch == "fresh" else phi) * N / psi)), 1)


def bulk_without(act: Activation, target: Target, st: FiniteNSetup, *, ranks, eta1, eta2, N, psi, tn,
                 second_layer="gaussian") -> WidenedBulk:
    """The widened bulk over every sample but the ``ranks`` most extreme ``|y|`` of a typical batch
    (docs/theory/two_step.md §8.3); ``tn``: the first step's ``t`` at the nodes of the law of ``g``
    (:func:`finite_n_grams`)."""
    phi, phi2, batch = st.phi, st.phi2, st.batch
    order = np.argsort(tn)
    zr = bulk_cut(target, _bulk_batch(N, psi, phi, phi2, batch), ranks=ranks) if ranks else None
    st_b = st if zr is None else finite_n_setup(act, target, phi=phi, batch=batch, phi2=phi2,
                                                zs_rule=truncated_rule(*zr), ey2_ref=st.ey2)
    rows = finite_n_grams(act, st_b, eta1=eta1, eta2=eta2, N=N, second_layer=second_layer, bulk=True)[6]
    bulks = [WidenedBulk(st_b, target, eta1=eta1, eta2=eta2, N=N, psi=psi, tn=tn[order],
                         rows=tuple(r[order] for r in rows), second_layer=second_layer, zrange=zr, basis=b)
             for b in (("second", "first") if batch == "fresh" else ("second",))]
    # fresh batches: each basis keeps one M's direction structure and averages the other, so each edge
    # falls short of the true one; the larger is kept (docs/theory/two_step.md §8.2)
    return max(bulks, key=lambda b: b.edge)


def prediction_bulk(act: Activation, target: Target, *, psi, phi, phi2, eta1, eta2, batch, N,
                    second_layer="gaussian") -> tuple[FiniteNSetup, WidenedBulk]:
    """``(st, bulk)``: the data grid and the widened bulk that :func:`predict_finite_n` builds at these arguments (the
    same objects, without the rest of the prediction), for checks of the bulk on its own.

    >>> from rmtfl.theory._classical.activations import get_activation
    >>> from rmtfl.theory._classical.targets import make_target
    >>> st, bulk = prediction_bulk(get_activation("tanh"), make_target("hermite(0, 1, 0.5)"), psi=1.0, phi=2.0,
    ...                            phi2=None, eta1=1.0, eta2=1.0, batch="reused", N=1000)
    >>> from rmtfl.theory import two_step
    >>> bulk.edge == two_step("tanh", "hermite(0, 1, 0.5)", psi=1.0, phi=2.0, eta1=1.0, eta2=1.0, N=1000).bulk_edge
    True
    """
    st = finite_n_setup(act, target, phi=phi, batch=batch, phi2=phi2)
    tn = eta1 * _g_rule(second_layer)[0] / math.sqrt(N)
    K = extreme_ranks(N=N, psi=psi, phi=phi, phi2=phi2, batch=batch)
    return st, bulk_without(act, target, st, ranks=K, eta1=eta1, eta2=eta2, N=N, psi=psi, tn=tn,
                            second_layer=second_layer)


def predict_finite_n(act: Activation, target: Target, *, psi, phi, phi2, eta1, eta2, batch, N,
                     second_layer="gaussian", extreme_samples="single",
                     spread_detail: list | None = None) -> FiniteNResult:
    """Outliers of ``W_2`` at width ``N`` above the widened bulk (module docstring; docs/theory/two_step.md §8.2).

    ``extreme_samples``: ``"single"``, each of the batch's most extreme samples a column of its own
    (docs/theory/two_step.md §8.3), or ``"grouped"``, the most extreme as one coupled group
    (:func:`~rmtfl.theory._two_step.sample_group.grouped_tail_law`), with the laws the count is then read from
    (``count_laws``, docs/theory/two_step.md §8.3).  ``spread_detail``: a list that receives the parts of each spike's
    spread (``detail`` of :func:`~rmtfl.theory._two_step.spike_spread.spike_spreads`), the spikes in the order of
    their locations."""
    grouped = extreme_samples == "grouped"
    st = finite_n_setup(act, target, phi=phi, batch=batch, phi2=phi2)
    G_U, G_V, Mbar, tn, g, wg, _, table = finite_n_grams(act, st, eta1=eta1, eta2=eta2, N=N,
                                                         second_layer=second_layer, bulk=False)
    Rm = psd_sqrt(G_U)
    ev, qv = np.linalg.eigh(Rm @ G_V @ Rm)
    idx = np.argsort(ev)[::-1]
    ev, qv = np.clip(ev[idx], 0.0, None), qv[:, idx]
    spikes = np.sqrt(ev)
    keep = spikes > 1e-9 * max(spikes[0], 1.0)
    notes = []
    # the most extreme samples of a typical batch leave the bulk and are tested as columns of their own
    # (docs/theory/two_step.md §8.3); a tiny batch keeps at least three quarters of its samples in the bulk
    K = extreme_ranks(N=N, psi=psi, phi=phi, phi2=phi2, batch=batch)
    bulk = bulk_without(act, target, st, ranks=K, eta1=eta1, eta2=eta2, N=N, psi=psi, tn=tn, second_layer=second_layer)
    # the second step's move of a reused sample's column along the first step's (docs/theory/two_step.md §8.3)
    rho = sample_spikes.second_step_move(act, st, eta1 * bulk.a) if batch == "reused" and K else None
    GUw = weighted_gram_u(g, wg)
    se = bulk.edge * (1 + 1e-7)
    e0 = master_eigs(bulk, se, GUw, G_V, g, N)
    count = 0 if e0 is None else int(np.sum(e0 > 1.0))

    def components(ys, zs, which):
        return sample_components(act, st, eta1, eta2, tn, ys, zs, N / psi, which)
    # M's eigenvalue along each extreme sample over the whole law of y, with the batch's other extreme samples: in
    # the joint problem, the grouped law and the count's laws; a column on its own (the single law) keeps the pole
    # over the bulk's samples (docs/theory/two_step.md §8.3)
    whole = whole_law_eigenvalues(target, N / psi)

    def eig(ys, zs, phi_b, yb, wb):
        return whole(ys, zs, phi_b, yb, wb, bulk.zrange)
    eig_sample = eig if WHOLE_LAW_EIGENVALUE else None
    # ``own``: the columns' own mean locations, which the joint problem below couples to P itself
    h_cache = {}                   # the columns' h moments and tail bins, shared with the count's laws below
    samples, isolated, band, law, own = single_samples(act, target, st, bulk, eta1=eta1, eta2=eta2, N=N, psi=psi,
                                                       rho=rho, ranks=K, components=components,
                                                       p_block=(GUw, G_V, g, count),
                                                       law_fn=grouped_tail_law if grouped else None,
                                                       h_cache=h_cache,
                                                       eigenvalue=eig_sample if grouped else None)
    if K and max(isolated.values()) >= K:
        notes.append(f"all {K} most extreme samples of a batch give outliers; less extreme ones may "
                     "too (docs/theory/two_step.md §8.3)")
    t_max = abs(eta1) * float(special.ndtri(1 - 0.5 / max(N, 2))) / math.sqrt(N)
    # the spikes of P lean on the batch's most extreme samples: P and their columns as one problem
    # (docs/theory/two_step.md §8.3)
    joint, joint_ranks, resolved, tops = None, None, None, None
    cols = extreme_columns(act, target, st, bulk, eta1=eta1, eta2=eta2, N=N, psi=psi, K=K, rho=rho,
                           coupling=components, eigenvalue=eig_sample)
    jp = JointProblem(bulk, cols, GUw, G_V, g, N) if cols is not None else None
    if jp is not None and jp.coupling(se) > COUPLING_TOL:
        # each column at the mean location of its rank's single-sample outlier, or at most at the edge
        d_e = jp.denominators(se)
        rank_of = np.argsort(d_e)
        shift = np.minimum(d_e, 0.0)
        for k, m in enumerate(own[:len(rank_of)]):
            shift[rank_of[k]] = jp.denominators(max(m, se))[rank_of[k]]
        s_hi = max(2 * se, se + 2 * spikes[0])
        joint = spike_roots(jp, se, s_hi, shift, count, int(np.sum(keep)))
        count = len(joint)
        if law is not None and samples and joint:
            # every rank of the spikes and the single samples averaged over the batch's most extreme sample, which
            # the spikes repel and which pushes the other samples (docs/theory/two_step.md §8.3)
            lowest = min(v for v, _ in joint)      # the ranks down to the lowest spike's in a typical batch, precise
            given = None
            if TOP_SAMPLE_GRAM and batch == "reused":
                # P's Gram over the batches given that sample, at each quantile where the problem places it
                # (docs/theory/two_step.md §8.3, "P given the batch's most extreme sample")
                tops = grams_given_top(act, target, st, table.F, tn, vbar_coefficients(st, eta1, eta2, g.size),
                                       n=_bulk_batch(N, psi, phi, phi2, batch), quantiles=TOP_QUANTILES,
                                       grid=lambda rule: finite_n_setup(act, target, phi=phi, batch=batch, phi2=phi2,
                                                                        zs_rule=rule, ey2_ref=st.ey2))
                given = [[(top.weight, jp.given(top.G_V)) for top in sides] for sides in tops]
            joint_ranks, resolved = ranks_over_top_sample(jp, se, s_hi, shift, int(rank_of[0]),
                                                          law if law.uncoupled is None else law.uncoupled,
                                                          len(joint) + len(samples), resolved=True,
                                                          precise=len(joint) + sum(smp[2] > lowest for smp in samples),
                                                          given_top=given)
            if any(m > CARRY_LIMIT * v for m, (v, _) in zip(joint_ranks, joint)):
                notes.append("the batch's most extreme sample carries a spike's rank past twice its location: the "
                             "sample's tail is beyond the range checked (docs/theory/two_step.md §9.3)")
    locs, c2t, c2a, th = [], [], [], []
    for i in range(count):
        if joint is not None:
            s = joint[i][0]
        else:
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
    # how far each spike moves from batch to batch (docs/theory/two_step.md §8.5)
    sds, spike_law = spike_spreads(bulk, st, G_V=G_V, C=vbar_coefficients(st, eta1, eta2, g.size), table=table, g=g,
                                   wg=wg, G_U_w=GUw, locations=locs, N=N, psi=psi, detail=spread_detail,
                                   given_top=None if tops is None else weighted_grams(tops))
    # a spike's law matters where another outlier comes within its spread: there the ranks share out their values
    others = list(locs) + [m for _, _, m in samples]
    near = [any(abs(v - x) < 6.0 * sd for j, x in enumerate(others) if j != i)
            for i, (v, sd) in enumerate(zip(locs, sds))]
    tail = None if bulk.zrange is None else (st.zs < bulk.zrange[0]) | (st.zs > bulk.zrange[1])
    # the law is the first-order response to the batch's samples: it cannot move a spike by more than its value (a
    # singular value grows more slowly than a sample's weight); beyond, the target's tail is too heavy for the batch
    wild = [i for i, (v, sd) in enumerate(zip(locs, sds)) if sd > v]
    if wild:
        notes.append(f"the spike at {locs[wild[0]]:.4g} spreads by {sds[wild[0]]:.3g} over batches, more than its "
                     "value: the target's tail is too heavy for a batch of this size (docs/theory/two_step.md §9.3)")
    laws = [spike_law(i, tail) if near[i] and i not in wild else None for i in range(len(locs))]
    # where the joint ranks averaged over the top sample's Grams, the laws move them by the part it leaves
    joint_laws = (None if tops is None or not TOP_SAMPLE_SPREAD else
                  [lw and spike_law(i, tail, left=True) for i, lw in enumerate(laws)])
    counted = None
    if grouped and law is not None and law.sizes and samples:
        # the count's laws: the columns each on its own (below the fold) and as one group (above it), with the
        # spikes at their locations and laws (docs/theory/two_step.md §8.3)
        # above it the law the single samples' ranks came from, where that took the whole law of y as well
        same = eig_sample is eig
        below, *above = outlier_laws(act, target, st, bulk, eta1=eta1, eta2=eta2, N=N, psi=psi, ranks=K, rho=rho,
                                     eigenvalue=eig, law_fns=(None,) if same else (None, grouped_tail_law),
                                     h_cache=h_cache)
        above = (law if law.uncoupled is None else law.uncoupled) if same else above[0]
        counted = CountLaws(below, above, tuple(locs), tuple(laws) if any(lw is not None for lw in laws) else None)
    locs, spike_medians, samples, spreads, sample_spreads = rank_outliers(law, locs, samples, joint_ranks, sds=sds,
                                                                          laws=laws, edge=bulk.edge,
                                                                          resolved=resolved, joint_laws=joint_laws)
    return FiniteNResult(tuple(float(x) for x in spikes[keep]), tuple(th), tuple(locs), tuple(c2t), tuple(c2a),
                         float(bulk.edge), t_max, tuple(notes), samples, band,
                         tuple(float(v) for v in bulk.top_values(count_window(N, psi) + 20)), tuple(spike_medians),
                         tuple(spreads), tuple(sample_spreads), counted)


def sample_components(act, st, eta1, eta2, tn, ys, zs, d, which):
    """``U``: the components of the right vectors of ``P`` along the samples ``(ys, zs)``
    (docs/theory/two_step.md §8.3).

    Sample ``i`` enters ``beta_hat = X^T y / n`` with weight ``y_i`` and ``v(t) = X^T (y F(t)) / n`` with weight
    ``y_i F(t; y_i, s_i)``, and ``<x_i, x_i / |x_i|> = sqrt(d)``.  Fresh batches: a sample of the first batch is in
    ``beta_hat_1`` only, one of the second in ``beta_hat_2`` and the ``v(t)`` only.
    """
    ys, zs = np.asarray(ys, dtype=float), np.asarray(zs, dtype=float)
    K = ys.size
    C = vbar_coefficients(st, eta1, eta2, np.size(tn))
    phi_b = st.phi2 if which == "second" else st.phi
    if which == "first":
        vec = np.zeros((C.shape[1], K))
        vec[0] = 1.0
    else:
        sti = replace(st, y=ys, s=st.mus * zs, zs=zs, zeta=np.zeros(K), w=np.full(K, 1.0 / K))
        Fq = F_table(act, sti, tn, bulk=False).F
        vec = np.vstack(([np.zeros(K)] if which == "second" else []) + [np.ones(K), Fq])
    return C @ (vec * ys[None, :]) * (math.sqrt(d) / (phi_b * d))


#: Below this ``sum_i |R u_i|^2 / D_i`` at the edge the extreme samples cannot move the spikes of ``P`` (skipped).
COUPLING_TOL = 1e-3

#: A spike's rank averaged over the batch's most extreme sample beyond this factor of its location marks the result
#: unreliable (the sample's tail beyond the range checked): at most 1.61 on the acceptance grids (the quadratic sigma
#: with He1 + He3/sqrt(6), fresh, N = 1000, eta_t = N^(0.4, 0); docs/theory/two_step.md §9.3).
CARRY_LIMIT = 2.0
