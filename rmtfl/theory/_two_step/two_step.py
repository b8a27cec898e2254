"""Two large gradient steps: the spiked form of ``W_2``, its outliers and alignments (docs/theory/two_step.md §5–§8).

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
``G_U`` and ``G_Vbar``.  :func:`two_step` is deterministic: it uses the limit Gram matrices
(closed forms in ``N`` for ``G_U``; Gauss–Hermite quadrature over ``(z*, zeta, eps)`` for
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
>>> from rmtfl.theory import one_step
>>> p = two_step("tanh", "linear", psi=1.0, phi=2.0, eta1=1.5, eta2=1.5)      # N -> infinity, Lambda = 0
>>> q = one_step("tanh", "linear", psi=1.0, phi=2.0, eta=3.0)
>>> abs(p.outliers[0].singular_value - q.singular_value) < 1e-12, p.mode
(True, 'analytic')
>>> two_step("tanh", "he3n", psi=1.0, phi=2.0, eta1=3.0, eta2=3.0, batch="fresh", phi2=2.0).outliers[0].cos2_target
0.0
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
from scipy import special

from rmtfl._results import Result
from rmtfl._validate import check_choice, check_in_range, check_int, check_positive
from .._classical.activations import Activation, get_activation
from .._classical.targets import Target, make_target
from .counting import count_on_prediction, count_through_process, low_edge_note, process_note, uncounted_note
from .finite_n import MAX_TARGET_DEGREE, T_MAX_CHECKED, check_finite_n_inputs, predict_finite_n, takes_activation
from .one_step import bgn_predict
from .prediction import TwoStepOutlier, TwoStepPrediction
from .outliers import CountResult, outlier_count
from .sample_order import BAND
from .spike_vectors import BATCHES, SpikeSetup, a_power_gram, limit_stats, spike_setup

__all__ = ["TwoStepOutlier", "TwoStepPrediction", "two_step", "two_step_finite_n", "inferred_alpha", "outliers_from_gram",
           "TwoStepPlan", "plan_two_step", "SpikeGrams", "analytic_grams", "predict_from_grams"]

SECOND_LAYER_LAWS = ("gaussian", "rademacher")

#: A spike of ``P`` at the locations it exceeds in ``BAND`` of batches: its median -+ this many spreads (Gaussian).
BAND_Z = float(special.ndtri(BAND[1]))

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


# ----------------------------------------------------------------- results (TwoStepOutlier, TwoStepPrediction: prediction.py)
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
    tp = None
    if N is not None:
        ey2 = setup.ey2
        mus2 = sum(m * m for m in setup.mus)
        d2 = setup.mu1**2 * (mus2 + ey2 / plan.phi) + setup.tau_h2_unit * ey2 / plan.phi
        tp = abs(plan.eta1) * math.sqrt(2 * math.log(max(N, 2.0)) / N) * math.sqrt(d2)
        if tp > 0.5 and K > 0 and (act.degree is None or act.degree > 2):  # degree 2 is exact (docs/theory/two_step.md §5.4)
            all_notes.append(f"Taylor parameter eta1*max|a D| ~ {tp:.2f} is not small: the mean replacement "
                             "of the k >= 1 terms is unreliable here (docs/theory/two_step.md §9)")
    # a non-smooth sigma keeps only k = 0: the first step's finite-N effect is missing, by an amount not estimated
    # (relu on this route, before it had closed forms: 3-8 % high at N = 1000, docs/theory/two_step.md §8.2)
    rough = N is not None and not act.smooth
    return TwoStepPrediction(outliers=outs, spikes=spikes, mode=mode, K=K, bulk_edge=1 + math.sqrt(plan.psi),
                             batch=plan.batch, outlier_count=plan.lam, notes=tuple(all_notes),
                             taylor_parameter=tp, reliable=not rough, reasons=plan.notes if rough else ())


def two_step(activation, target, *, psi, phi, eta1, eta2, batch="reused", phi2=None, noise=0.0, N=None,
             K=None, second_layer="gaussian", order=None) -> TwoStepPrediction:
    """Predicted outliers of ``W_2`` after two steps (docs/theory/two_step.md §5–§8); deterministic.

    Normalisation: docs/conventions.md §3–§5 (``W_0`` entries ``N(0, 1/d)``, ``a ~ N(0, I/N)``,
    correlation loss with mean reduction).  The Gram matrices of the low-rank part ``P`` are
    their limits evaluated at ``N`` (docs/theory/two_step.md §8 step 5, "analytic"); the outlier
    locations use the Marchenko–Pastur bulk (docs/theory/two_step.md §2.1).  The sampled routes
    (Gram matrices of one draw; the finite-``N`` bulk of docs/theory/two_step.md §8.1) are
    :func:`rmtfl.numerics.two_step_semi_analytic`.

    Parameters
    ----------
    activation : str, callable or Activation
    target : anything :func:`~rmtfl.theory.make_target` accepts (links centred)
    psi, phi : float > 0
        ``N/d`` and ``n/d`` (``phi`` is ``phi_1`` for fresh batches).
    eta1, eta2 : float
        Step sizes as numbers (``eta = c N^alpha``: :func:`~rmtfl.theory.step_size`).
    batch : {"reused", "fresh"}
    phi2 : float > 0
        ``n_2/d`` of the fresh second batch; required for ``batch="fresh"``, must be
        ``None`` (or ``phi``) for ``"reused"``.
    noise : float >= 0
        Label-noise standard deviation (combined with the target's own: ``hypot``).
    N : int, optional
        Width.  ``None`` is the proportional limit at fixed ``eta``: every ``k >= 1``
        term vanishes (``K = 0``), so reused two steps equal one step with ``eta1 + eta2``.
        Given, the prediction is that of :func:`two_step_finite_n` (non-perturbative in
        ``t_j = eta_1 a_j``, ``mode="finite-N"``) when it applies: relu, or a smooth ``sigma`` of
        degree ``> 2`` or non-polynomial, a single-direction target of Hermite degree ``<= 4``, ``K`` and
        ``order`` not given.  Otherwise (Taylor route, ``mode="analytic"``, with a note naming the
        reason) the terms are kept at that ``N`` with ``K = min(L - 1, Lambda + 2)``
        (``Lambda`` at the exponents inferred from ``|eta_t| = N^{alpha_t}``, :func:`inferred_alpha`).
    K : int, optional
        Override the highest Taylor index (forces the Taylor route).
    second_layer : {"gaussian", "rademacher"}
        Law of ``a`` (Rademacher collapses the ``u_k`` onto ``span{a, 1}``).
    order : int, optional
        Gauss–Hermite order per dimension of the quadrature of docs/theory/two_step.md §7.2.

    Returns
    -------
    TwoStepPrediction
        Taylor route: ``mode == "analytic"``, ``bulk == "mp"``; finite-``N`` route: as
        :func:`two_step_finite_n` with ``mode == "finite-N"``.  With ``Lambda > 0`` and a non-polynomial
        ``sigma`` a note says that the limit Gram matrices are used where the mean replacement
        of docs/theory/two_step.md §5.3 is least accurate.

    Examples
    --------
    >>> p = two_step("hermite(0, 1, 0.5)", [0, 1, 1 / 2**0.5], psi=1.0, phi=4.0, eta1=5.0, eta2=5.0, N=1500)
    >>> len(p.outliers), p.mode
    (2, 'finite-N')
    """
    act, tgt = get_activation(activation), make_target(target)
    kw = dict(psi=psi, phi=phi, eta1=eta1, eta2=eta2, batch=batch, phi2=phi2, noise=noise, N=N,
              second_layer=second_layer, order=order)
    # the inputs checked once, without the Taylor tables the finite-N route does not use
    plan = plan_two_step(act, tgt, K=0 if N is not None and K is None else K, **kw)
    notes, failed = [], False
    if N is not None:
        why = _finite_n_blocker(act, tgt, N, K, order)
        if why is None:                                  # docs/theory/two_step.md §8.2: non-perturbative in t_j
            try:
                p = two_step_finite_n(act, tgt, psi=psi, phi=phi, eta1=eta1, eta2=eta2, N=N, batch=batch,
                                      phi2=phi2, noise=noise, second_layer=second_layer)
            except RuntimeError as e:                    # e.g. no finite-N bulk edge found: keep the Taylor route
                why = f"two_step_finite_n failed: {e}"
                failed = True
            else:
                return replace(p, mode="finite-N",
                               notes=("finite-N route (two_step_finite_n, docs/theory/two_step.md §8.2)",) + p.notes)
        if why is not None:
            notes.append(f"Taylor route in t_j = eta1*a_j (analytic, docs/theory/two_step.md §8): the finite-N "
                         f"route does not apply ({why})")
            if K is None:
                plan = plan_two_step(act, tgt, K=K, **kw)
    if plan.K > 0 and plan.act.degree is None and plan.lam is not None and int(plan.lam.count) > 0:
        notes.append("limit Gram matrices with Lambda > 0 and a non-polynomial sigma (docs/theory/two_step.md §8 "
                     "step 5); rmtfl.numerics.two_step_semi_analytic gives the sampled-Gram prediction")
    p = predict_from_grams(plan, analytic_grams(plan), mode="analytic", notes=notes)
    # where the finite-N route applies but found no bulk, the Taylor route is no better: say so
    return replace(p, reliable=False, reasons=p.reasons + (notes[0],)) if failed else p


def _finite_n_blocker(act: Activation, target: Target, N, K, order):
    """Why :func:`two_step` with ``N`` cannot use :func:`two_step_finite_n` (``None`` when it can)."""
    if K is not None or order is not None:
        return "K or order given"
    if not takes_activation(act):
        return f"{act.name} is not smooth"
    if target.rank != 1:
        return f"the target has rank {target.rank}"
    deg = target.links[0].degree
    if deg is not None and deg > MAX_TARGET_DEGREE:
        return f"the target has Hermite degree {deg} > {MAX_TARGET_DEGREE}"
    if N < 2:
        return "N < 2"
    return None


def two_step_finite_n(activation, target, *, psi, phi, eta1, eta2, N, batch="reused", phi2=None, noise=0.0,
                      second_layer="gaussian") -> TwoStepPrediction:
    """Outliers of ``W_2`` at width ``N``, non-perturbative in the first step (docs/theory/two_step.md §8.2); deterministic.

    Normalisation: docs/conventions.md §3–§5 (``W_0`` entries ``N(0, 1/d)``, ``a ~ N(0, I/N)``,
    correlation loss with mean reduction, ``eta_t`` as given).  ``sigma'`` is kept exact in
    ``t_j = eta_1 a_j`` (no Taylor series), the neurons are integrated over the law of ``a`` by
    quadrature, and the outliers solve the master equation above the widened finite-``N`` bulk.
    For ``N -> infinity`` at fixed ``eta`` it converges to :func:`two_step` with ``N=None``.

    Parameters
    ----------
    activation : relu or a smooth activation (name, callable with derivatives, or Activation)
    target : single-index target, polynomial links of Hermite degree ``<= 4`` (or non-polynomial)
    psi, phi : float > 0
        ``N/d`` and ``n/d`` (``phi_1`` for fresh batches).
    eta1, eta2 : float
        Step sizes (``eta = c N^alpha``: :func:`~rmtfl.theory.step_size`).
    N : int >= 2
        Width.
    batch : {"reused", "fresh"}
    phi2 : float > 0
        ``n_2/d``; required for ``batch="fresh"``.
    noise : float >= 0
        Label-noise standard deviation (combined with the target's own).
    second_layer : {"gaussian", "rademacher"}

    Returns
    -------
    TwoStepPrediction
        ``mode="analytic"``, ``bulk="finite-N"``, ``bulk_edge`` and ``bulk_top`` the finite-``N``
        bulk edge (the fold of its density), ``fitted_edge`` the edge the count rule fits to the predicted spectrum
        (docs/theory/two_step.md §8.4), ``K=-1`` (no Taylor truncation), ``reliable`` with the reason in ``notes``.
        Where it is weakest inside the checked range, measured against simulation: docs/theory/two_step.md §9.3.

    Raises
    ------
    ValueError
        Bad input (each names its parameter).
    RuntimeError
        No finite-``N`` bulk found: steps far beyond the checked range (docs/theory/two_step.md §9);
        :func:`two_step` then falls back to the Taylor route with ``reliable=False``.

    Examples
    --------
    >>> p = two_step_finite_n("tanh", "hermite(0, 1, 0.7071)", psi=1.0, phi=2.0, eta1=1000**0.4, eta2=1000**0.2,
    ...                       N=1000)
    >>> round(p.outliers[0].singular_value, 1), len(p.outliers), p.reliable    # simulated: 15.4
    (15.2, 1, True)
    """
    act, t0 = get_activation(activation), make_target(target)
    check_finite_n_inputs(act, t0, N, max_width=MAX_WIDTH)
    plan = plan_two_step(act, t0, psi=psi, phi=phi, eta1=eta1, eta2=eta2, batch=batch, phi2=phi2, noise=noise,
                         N=N, K=0, second_layer=second_layer)
    for name, ratio in (("psi", plan.psi), ("phi", plan.phi), ("phi2", plan.phi2)):
        if ratio is not None and not 2 <= (N / plan.psi) * (ratio if name != "psi" else 1.0) <= MAX_WIDTH:
            raise ValueError(f"{name}: the sizes d = N/psi, n = phi d, n2 = phi2 d must lie in [2, {MAX_WIDTH:.0e}], "
                             f"got N={N}, {name}={ratio!r}")
    r = predict_finite_n(plan.act, plan.target, psi=plan.psi, phi=plan.phi, phi2=plan.phi2, eta1=plan.eta1,
                         eta2=plan.eta2, batch=plan.batch, N=float(N), second_layer=second_layer)
    notes = list(r.notes)
    reasons = list(notes)                               # every note of predict_finite_n is a reason to doubt it
    if r.t_max > T_MAX_CHECKED:
        reasons.append(f"eta1*max|a_j| ~ {r.t_max:.2f} exceeds {T_MAX_CHECKED}, the largest value checked against "
                       "simulation (docs/theory/two_step.md §8.2)")
    if max(abs(plan.eta1), abs(plan.eta2)) >= math.sqrt(N):
        reasons.append(f"a step of at least N^(1/2) = {math.sqrt(N):.3g}: beyond the exponents alpha < 1/2 the route "
                       "was derived and checked for (docs/theory/two_step.md §8.2)")
    if plan.act.parity == 1 and (plan.eta1 != 0 or plan.eta2 != 0):
        # an even sigma (square, He2): sigma' is odd, F = 0 and P vanishes, so single samples make every outlier, a
        # regime the route falls short in (docs/theory/two_step.md §9.3, "A sigma without a linear part")
        reasons.append("the low-rank part P vanishes (sigma is even: sigma' has mean 0 at every step size), so single "
                       "samples make every outlier; for those alone the values were measured up to 37 % low at "
                       "N = 300, 1-8 % low at N = 1000 and, the top one, up to 21 % high at N = 4000 "
                       "(docs/theory/two_step.md §9.3)")
    notes += reasons[len(notes):]                      # the reasons added above are notes as well
    if second_layer == "rademacher" or batch == "fresh":
        notes.append("the widened bulk treats M_1 and M_2 (fresh) or the two-point law of a (Rademacher) "
                     "approximately (docs/theory/two_step.md §8.2)")
    outs = [TwoStepOutlier(s, th, ct, (ct,), ca, spread=float(sd)) for s, th, ct, ca, sd in
            zip(r.locations, r.thetas, r.cos2_target, r.cos2_a, r.spreads, strict=True)]
    # every outlier is reported at the mean of its rank and counted at the median (docs/theory/two_step.md §8.3)
    medians = r.spike_medians or r.locations
    seen = [(m, o) for m, o in zip(medians, outs)] + [
        (med, TwoStepOutlier(s, th, 0.0, (0.0,), 0.0, "sample", spread=float(sd)))
        for (s, th, med), sd in zip(r.samples, r.sample_spreads, strict=True)]
    seen.sort(key=lambda v: -v[0])
    rule = count_on_prediction([v for v, _ in seen], r.edge, N=N, psi=plan.psi, bulk_top=r.bulk_top)
    count, process = rule.count, None
    # with single samples the count and the fitted edge are read through the Poisson process of the mean count
    # function below the spikes (docs/theory/two_step.md §9.2)
    got = None if r.count_laws is None else count_through_process(r.count_laws, r.bulk_top, r.edge, N=N,
                                                                  psi=plan.psi)
    if got is not None:
        count, fitted, process = got
        count = min(count, len(seen))
        rule = replace(rule, count=count, edge=fitted)
        if seen[count:]:
            notes.append(process_note(seen[count:], count))
    elif seen[count:]:
        notes.append(uncounted_note(seen[count:], rule, r.edge))
    gap_note = low_edge_note(rule, r.edge)
    if gap_note:
        notes.append(gap_note)
    outs = tuple(sorted((o for _, o in seen[:count]), key=lambda o: -o.singular_value))
    wild = [o for o in outs if o.spread > o.singular_value]
    if wild and not reasons:
        # the prediction's own error estimate: a value that moves by more than itself from batch to batch is a mean
        # over rare batches, not what a typical one shows (docs/theory/two_step.md §9.3)
        reasons.append(f"outlier at {wild[0].singular_value:.4g} spreads by {wild[0].spread:.3g} over batches, more "
                       "than its value: the target's tail is too heavy for a batch of this size "
                       "(docs/theory/two_step.md §9.3)")
        notes.append(reasons[-1])
    # the count over batches: every outlier at the location it exceeds in 90 % / 10 % of batches, the single samples
    # by their order statistics, the spikes of P by their spread, counted over the cut the rule finds on the predicted
    # spectrum, so that the range is monotone in where the roots lie (docs/theory/two_step.md §8.3, "The count over
    # batches")
    if process is not None:                           # the process's own count over batches
        lo, hi = (int(np.quantile(process, q, method="inverted_cdf")) for q in BAND)
    else:
        lo, hi = (sum(int(v > rule.threshold) for v in [m + z * sd for m, sd in zip(medians, r.spreads, strict=True)]
                      + [b[i] for b in r.sample_band if b[i] is not None])
                  for i, z in ((0, -BAND_Z), (1, BAND_Z)))
    return TwoStepPrediction(outliers=outs, spikes=r.spikes, mode="analytic", K=-1, bulk_edge=r.edge, batch=batch,
                             outlier_count=plan.lam, notes=tuple(notes), taylor_parameter=None, bulk="finite-N",
                             bulk_top=r.edge, reliable=not reasons, count_range=(min(lo, count), max(hi, count)),
                             fitted_edge=float(rule.edge), reasons=tuple(reasons))
