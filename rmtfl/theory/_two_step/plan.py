"""The plan of a two-step prediction: the inputs checked once, the spiked form of ``W_2`` and its limit Gram
matrices, and the outliers they give (docs/theory/two_step.md §5–§8).

Normalisation (docs/conventions.md §3–§5): ``W_0`` entries ``N(0, 1/d)``, ``a ~ N(0, I_N/N)``
(fixed), ``x ~ N(0, I_d)``, correlation loss with mean reduction,
``W_t = W_{t-1} + eta_t G(W_{t-1}; X_t, y_t)``, ratios ``psi = N/d``,
``phi = n/d`` (``phi = phi_1`` and ``phi2 = n_2/d`` for fresh batches).  Links are
centred (:mod:`rmtfl.theory._classical.targets`).

To leading order (docs/theory/two_step.md §5.3)

    W_2 ≈ W_0 + U Vbar^T,   u_k = a^{⊙(k+1)},
    vbar_0 = mu_1 (eta_1 beta_hat_1 + eta_2 beta_hat_2),  vbar_k = eta_2 eta_1^k / k! v_k,
    v_k = X_2^T (y_2 ⊙ P_k) / n_2,

with the sample weights ``P_k`` of :func:`~rmtfl.theory._two_step.spike_vectors.P_k`.  The outliers are BGN applied to
the singular values of ``U Vbar^T`` (docs/theory/two_step.md §8), obtained from the Gram matrices
``G_U`` and ``G_Vbar``.  :func:`~rmtfl.theory.two_step` (the Taylor route) is deterministic: it uses the limit Gram
matrices (closed forms in ``N`` for ``G_U``; Gauss–Hermite quadrature over ``(z*, zeta, eps)`` for
``G_Vbar``), evaluated at the given ``N`` so the powers ``N^{-k/2}`` are kept
(docs/theory/two_step.md §8 step 5, "analytic").  The semi-analytic route (Gram matrices of
sampled ``a``, ``X``, ``y``, and the sampled finite-``N`` bulk of docs/theory/two_step.md §8.1) is
:func:`rmtfl.numerics.two_step_semi_analytic`, built on the same pieces:

* :func:`plan_two_step` validates the inputs once (objects, not names) and fixes ``K``, the
  coefficients ``C`` with ``vbar_k = sum_j C[k, j] basis_j`` and the :class:`SpikeSetup`;
* :func:`analytic_grams` gives the limit :class:`SpikeGrams`;
* :func:`predict_from_grams` turns any :class:`SpikeGrams` into a :class:`TwoStepPrediction`.

Examples
--------
>>> from rmtfl.theory import get_activation, make_target
>>> plan = plan_two_step(get_activation("tanh"), make_target("linear"), psi=1.0, phi=2.0, eta1=1.5, eta2=1.5)
>>> plan.K, plan.batch, predict_from_grams(plan, analytic_grams(plan)).mode
(0, 'reused', 'analytic')
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from rmtfl._results import Result
from rmtfl._validate import check_choice, check_in_range, check_int, check_positive
from .._classical.activations import Activation
from .._classical.targets import Target, make_target
from .one_step import bgn_predict
from .outliers import CountResult, outlier_count
from .prediction import TwoStepOutlier, TwoStepPrediction
from .spike_vectors import BATCHES, SpikeSetup, a_power_gram, limit_stats, spike_setup

__all__ = ["inferred_alpha", "outliers_from_gram", "TwoStepPlan", "plan_two_step", "SpikeGrams", "analytic_grams",
           "predict_from_grams", "SECOND_LAYER_LAWS", "MAX_RATIO", "MAX_STEP", "MAX_NOISE", "MAX_WIDTH", "MAX_DEFAULT_K"]

SECOND_LAYER_LAWS = ("gaussian", "rademacher")

#: Ranges of the two-step inputs (docs/reliability.md): aspect ratios, |eta|, label noise, the width N.
MAX_RATIO, MAX_STEP, MAX_NOISE, MAX_WIDTH = 1e4, 1e6, 1e3, 10**9


def inferred_alpha(eta: float, N: float) -> float:
    """``alpha`` with ``|eta| = N^alpha`` (i.e. ``c = 1``), clipped to ``[0, 1/2)``; used to choose ``K``.

    >>> inferred_alpha(10.0, 10_000.0), inferred_alpha(0.5, 10_000.0), inferred_alpha(1e3, 100.0)
    (0.25, 0.0, 0.4999)
    """
    if N is None or abs(eta) <= 1.0:
        return 0.0
    return float(min(max(math.log(abs(eta)) / math.log(N), 0.0), 0.4999))


@dataclass(frozen=True)
class SpikeGrams(Result):
    """Gram matrices of ``P = U Vbar^T`` (docs/theory/two_step.md §8 steps 2–3).

    ``G_U = U^T U`` and ``G_V = Vbar^T Vbar`` (both ``(K+1) x (K+1)``), ``Mbar = Vbar^T B*``
    (``(K+1) x R``, the target overlaps).
    """

    G_U: np.ndarray
    G_V: np.ndarray
    Mbar: np.ndarray


@dataclass(frozen=True)
class TwoStepPlan(Result):
    """Validated inputs of a two-step prediction (:func:`plan_two_step`); every route starts from one.

    ``act`` and ``target`` are the resolved objects (``target`` with the label noise combined);
    ``N`` is a float or ``None``; ``C`` has ``vbar_k = sum_j C[k, j] basis_j`` with the basis
    ``[beta_hat, v_1..v_K]`` (reused) or ``[beta_hat_1, beta_hat_2, v_1..v_K]`` (fresh);
    ``lam`` is the inferred :func:`~rmtfl.theory.outlier_count` (``None`` without ``N``);
    ``notes`` are the caveats known before any Gram matrix is formed (each one a reason to doubt the result).
    """

    act: Activation
    target: Target
    psi: float
    phi: float
    phi2: float | None
    eta1: float
    eta2: float
    batch: str
    N: float | None
    K: int
    lam: CountResult | None
    setup: SpikeSetup
    C: np.ndarray
    second_layer: str
    order: int | None
    notes: tuple


def outliers_from_gram(G_U, G_V, Mbar, psi: float):
    """BGN on the singular values of ``P = U Vbar^T`` from its Gram matrices (docs/theory/two_step.md §8 step 3–4).

    ``G_U = U^T U``, ``G_V = Vbar^T Vbar`` (both ``(K+1) x (K+1)``), ``Mbar = Vbar^T B*``
    (``(K+1) x R``, the target overlaps).  Returns ``(spikes, outliers)`` (internal helper).

    >>> sp, out = outliers_from_gram(np.eye(1), np.array([[4.0]]), np.array([[2.0]]), 1.0)
    >>> sp, round(out[0].singular_value, 12), round(out[0].cos2_target, 12)   # theta = 2, psi = 1
    ((2.0,), 2.5, 0.75)
    """
    G_U = np.asarray(G_U, dtype=float)
    lu, Qu = np.linalg.eigh((G_U + G_U.T) / 2)
    lu = np.clip(lu, 0.0, None)
    Rm = (Qu * np.sqrt(lu)) @ Qu.T
    M = Rm @ np.asarray(G_V, dtype=float) @ Rm
    ev, q = np.linalg.eigh((M + M.T) / 2)
    order = np.argsort(ev)[::-1]
    ev, q = np.clip(ev[order], 0.0, None), q[:, order]
    thr = psi**0.25
    spikes, outs = [], []
    for i in range(ev.size):
        s = math.sqrt(ev[i])
        if s <= 1e-12 * max(1.0, math.sqrt(ev[0])):
            continue
        spikes.append(s)
        if s <= thr:
            continue
        sv, wn, wd = bgn_predict(s, psi)
        Rq = Rm @ q[:, i]
        per = tuple(float(wd * (Mbar[:, r] @ Rq) ** 2 / s**2) for r in range(Mbar.shape[1]))
        ca = float(wn * Rq[0] ** 2 / G_U[0, 0]) if G_U[0, 0] > 0 else 0.0
        outs.append(TwoStepOutlier(float(sv), s, float(sum(per)), per, ca))
    return tuple(spikes), tuple(outs)


def _coefficients(K, batch, mu1, eta1, eta2):
    """Matrix ``C`` with ``vbar_k = sum_j C[k, j] basis_j`` (docs/theory/two_step.md §8 step 1)."""
    nb = K + 2 if batch == "fresh" else K + 1
    C = np.zeros((K + 1, nb))
    off = 1 if batch == "fresh" else 0
    if batch == "fresh":
        C[0, 0], C[0, 1] = mu1 * eta1, mu1 * eta2
    else:
        C[0, 0] = mu1 * (eta1 + eta2)
    for k in range(1, K + 1):
        C[k, k + off] = eta2 * eta1**k / math.factorial(k)
    return C


#: The largest Taylor index chosen by default: ``Lambda + 2 <= 11`` for every ``alpha <= 0.45``; steps closer to
#: ``N^(1/2)`` are beyond the Taylor route anyway (its ``taylor_parameter`` says so).
MAX_DEFAULT_K = 12


def _default_K(act, eta1, eta2, N):
    if N is None:
        return 0, None
    lam = outlier_count(inferred_alpha(eta1, N), inferred_alpha(eta2, N),
                        degree=act.degree if act.degree is not None else None)
    K = min(int(lam.count) + 2, MAX_DEFAULT_K)
    if act.degree is not None:
        K = min(K, act.degree - 1)
    if not act.smooth:
        K = 0
    return max(K, 0), lam


def plan_two_step(act: Activation, target: Target, *, psi, phi, eta1, eta2, batch="reused", phi2=None,
                  noise=0.0, N=None, K=None, second_layer="gaussian", order=None) -> TwoStepPlan:
    """Validate the inputs of a two-step prediction once; ``act`` and ``target`` are resolved objects.

    Parameters as for :func:`two_step` (which resolves names and calls this); the bad-input
    errors of every two-step route come from here.

    >>> from rmtfl.theory import get_activation, make_target
    >>> pl = plan_two_step(get_activation("hermite(0, 1, 0.5)"), make_target("linear"), psi=1.0, phi=2.0,
    ...                    eta1=4.0, eta2=4.0, N=400)
    >>> pl.K, pl.C.tolist()                     # reused: vbar_0 = (eta1 + eta2) beta_hat, vbar_1 = eta2 eta1 v_1
    (1, [[8.0, 0.0], [0.0, 16.0]])
    """
    if not isinstance(act, Activation):
        raise TypeError(f"act must be an Activation (resolve names with get_activation), got {act!r}")
    if not isinstance(target, Target):
        raise TypeError(f"target must be a Target (resolve names with make_target), got {target!r}")
    psi = check_in_range("psi", psi, 0.0, MAX_RATIO, lo_open=True)
    phi = check_in_range("phi", phi, 0.0, MAX_RATIO, lo_open=True)
    eta1 = check_in_range("eta1", eta1, -MAX_STEP, MAX_STEP)
    eta2 = check_in_range("eta2", eta2, -MAX_STEP, MAX_STEP)
    check_choice("batch", batch, BATCHES)
    check_choice("second_layer", second_layer, SECOND_LAYER_LAWS)
    noise = check_in_range("noise", noise, 0.0, MAX_NOISE)
    if batch == "fresh":
        if phi2 is None:
            raise ValueError("phi2 (the fresh batch ratio n2/d) must be given (> 0) for batch='fresh'")
        phi2 = check_in_range("phi2", phi2, 0.0, MAX_RATIO, lo_open=True)
    elif phi2 is not None and check_positive("phi2", phi2) != phi:
        raise ValueError(f"phi2 must be None (or equal phi) for batch='reused', got {phi2!r}")
    if N is not None:
        N = check_in_range("N", N, 2.0, float(MAX_WIDTH))
    t = make_target(target, noise=math.hypot(noise, target.noise)) if noise else target
    K0, lam = _default_K(act, eta1, eta2, N)
    if K is not None:
        K0 = check_int("K", K, lo=0)
        if N is None and K0 > 0:
            raise ValueError("K > 0 needs the width N (the k >= 1 terms scale like N^{-k/2})")
    notes = []
    if not act.smooth and N is not None:
        notes.append(f"{act.name} is not smooth: only the k = 0 term is kept, so the first step's finite-N effect, "
                     "the widened bulk and the single-sample outliers are missing (not checked against simulation, "
                     "docs/theory/two_step.md §8.2)")
    setup = spike_setup(act, t, K0)
    C = _coefficients(K0, batch, setup.mu1, eta1, eta2)
    return TwoStepPlan(act, t, psi, phi, phi2, eta1, eta2, batch, N, K0, lam, setup, C, second_layer, order,
                       tuple(notes))


def analytic_grams(plan: TwoStepPlan) -> SpikeGrams:
    """The limit Gram matrices of ``P`` at the plan's ``N`` (docs/theory/two_step.md §7.2, §8 step 2)."""
    st = limit_stats(plan.setup, phi=plan.phi, K=plan.K, batch=plan.batch, phi2=plan.phi2, order=plan.order)
    G_U = a_power_gram(plan.K, plan.N if plan.N is not None else 1.0, plan.second_layer)
    return SpikeGrams(G_U, plan.C @ st.gram @ plan.C.T, plan.C @ st.basis_targets)


def predict_from_grams(plan: TwoStepPlan, grams: SpikeGrams, *, mode: str = "analytic",
                       notes=()) -> TwoStepPrediction:
    """BGN predictions (docs/theory/two_step.md §8 steps 3–4) from Gram matrices of ``P``, with the Taylor check of §9.

    ``mode`` names where ``grams`` came from (``"analytic"`` or ``"semi-analytic"``); ``notes`` are
    added after the plan's own.
    """
    check_choice("mode", mode, ("analytic", "semi-analytic"))
    spikes, outs = outliers_from_gram(grams.G_U, grams.G_V, grams.Mbar, plan.psi)
    all_notes = list(plan.notes) + list(notes)
    setup, N, K, act = plan.setup, plan.N, plan.K, plan.act
    tp, shaky = None, []
    if N is not None:
        ey2 = setup.ey2
        mus2 = sum(m * m for m in setup.mus)
        d2 = setup.mu1**2 * (mus2 + ey2 / plan.phi) + setup.tau_h2_unit * ey2 / plan.phi
        tp = abs(plan.eta1) * math.sqrt(2 * math.log(max(N, 2.0)) / N) * math.sqrt(d2)
        if tp > 0.5 and K > 0 and (act.degree is None or act.degree > 2):  # degree 2 is exact (docs/theory/two_step.md §5.4)
            shaky.append(f"Taylor parameter eta1*max|a D| ~ {tp:.2f} is not small: the mean replacement "
                         "of the k >= 1 terms is unreliable here (docs/theory/two_step.md §9)")
            all_notes += shaky
    # a non-smooth sigma keeps only k = 0: the first step's finite-N effect is missing, by an amount not estimated
    # (relu on this route, before it had closed forms: 3-8 % high at N = 1000, docs/theory/two_step.md §8.2)
    rough = N is not None and not act.smooth
    # the route's own error estimate makes the result unreliable, as the finite-N route's do
    reasons = (tuple(plan.notes) if rough else ()) + tuple(shaky)
    return TwoStepPrediction(outliers=outs, spikes=spikes, mode=mode, K=K, bulk_edge=1 + math.sqrt(plan.psi),
                             batch=plan.batch, outlier_count=plan.lam, notes=tuple(all_notes),
                             taylor_parameter=tp, reliable=not reasons, reasons=reasons)
