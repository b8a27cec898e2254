"""Two large gradient steps: the outliers of ``W_2`` and their alignments (docs/theory/two_step.md §5–§8).

Normalisation (docs/conventions.md §3–§5): ``W_0`` entries ``N(0, 1/d)``, ``a ~ N(0, I_N/N)``
(fixed), ``x ~ N(0, I_d)``, correlation loss with mean reduction,
``W_t = W_{t-1} + eta_t G(W_{t-1}; X_t, y_t)``, ratios ``psi = N/d``,
``phi = n/d`` (``phi = phi_1`` and ``phi2 = n_2/d`` for fresh batches).  Links are
centred (:mod:`rmtfl.theory._classical.targets`).

:func:`two_step` takes one of two routes: the Taylor route in ``t_j = eta_1 a_j`` over the limit Gram matrices of the
spiked form of ``W_2`` (:mod:`rmtfl.theory._two_step.plan`, docs/theory/two_step.md §5–§8), or, with ``N`` given,
:func:`two_step_finite_n`, non-perturbative in ``t_j`` above the widened finite-``N`` bulk
(docs/theory/two_step.md §8.2).  Both are deterministic.

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
from dataclasses import replace

import numpy as np
from scipy import special

from rmtfl._validate import check_choice
from .._classical.activations import Activation, get_activation
from .._classical.targets import Target, make_target
from .._classical.tracy_widom import TW_STD
from .counting import count_on_prediction, count_through_process, low_edge_note, process_note, uncounted_note
from .finite_n import MAX_TARGET_DEGREE, predict_finite_n
from .finite_n_inputs import T_MAX_CHECKED, check_finite_n_inputs, takes_activation
from .poisson_count import edge_fit
from .plan import MAX_WIDTH, analytic_grams, plan_two_step, predict_from_grams
from .prediction import TwoStepOutlier, TwoStepPrediction
from .sample_order import BAND

__all__ = ["TwoStepOutlier", "TwoStepPrediction", "two_step", "two_step_finite_n", "EXTREME_SAMPLES",
           "extreme_samples_for", "SPREAD_NOTE", "wide_spread_note"]

#: How the finite-N route takes the batch's most extreme samples: ``"single"``, each a column of its own;
#: ``"grouped"``, the most extreme as one coupled group with the count read through the Poisson process; ``"auto"``
#: (the default), grouped with a reused batch and single with a fresh one, where each counts right at more of the
#: checked points (docs/theory/two_step.md §8.3).
EXTREME_SAMPLES = ("auto", "single", "grouped")


def extreme_samples_for(extreme_samples: str, batch: str) -> str:
    """The way (``"single"`` or ``"grouped"``) an ``extreme_samples`` choice of :data:`EXTREME_SAMPLES` takes with
    ``batch``: ``"auto"`` groups a reused batch's extreme samples, not a fresh pair's (docs/theory/two_step.md §8.3).

    Examples
    --------
    >>> extreme_samples_for("auto", "reused"), extreme_samples_for("auto", "fresh")
    ('grouped', 'single')
    """
    check_choice("extreme_samples", extreme_samples, EXTREME_SAMPLES)
    if extreme_samples != "auto":
        return extreme_samples
    return "grouped" if batch == "reused" else "single"


#: A spike of ``P`` at the locations it exceeds in ``BAND`` of batches: its median -+ this many spreads (Gaussian).
BAND_Z = float(special.ndtri(BAND[1]))

#: Grouped extreme samples: where the count read through the Poisson process exceeds the predicted roots, the ranks
#: beyond them are the bulk's top values, outliers of kind ``"tail"`` (docs/theory/two_step.md §8.3, "The bulk's top
#: tail"); ``False``: the count stops at the roots.
TAIL_COUNT = True

#: An outlier whose spread over batches (docs/theory/two_step.md §8.5) reaches this share of its value marks a
#: prediction whose values are least certain (:func:`wide_spread_note`).
SPREAD_NOTE = 0.25


def wide_spread_note(outliers) -> str | None:
    """The note on outliers whose ``spread`` over batches reaches :data:`SPREAD_NOTE` of their value, else ``None``
    (docs/theory/two_step.md §9.3, "What the result flags").

    Such a spread comes from the batch's few most extreme samples, and where one is predicted the mean of each rank
    is least certain: mostly the quadratic sigma with a heavy-tailed target, where a spike of ``P`` and the first
    single samples share ranks.  The numbers in the note were measured on the rows of
    docs/benchmarks/two_step_finite_n.md (``python -m benchmarks.bench_two_step_finite_n --spread-errors``).

    Examples
    --------
    >>> from rmtfl.theory import TwoStepOutlier
    >>> wide_spread_note([TwoStepOutlier(10.0, 1.0, 0.5, (0.5,), 0.1, spread=1.0)]) is None
    True
    >>> wide_spread_note([TwoStepOutlier(10.0, 1.0, 0.0, (0.0,), 0.0, "sample", spread=4.0)])[:32]
    'an outlier at 10.00 (sample, spr'
    """
    wide = [o for o in outliers if o.spread is not None and o.spread >= SPREAD_NOTE * o.singular_value]
    if not wide:
        return None
    one = len(wide) == 1
    at = ", ".join(f"{o.singular_value:#.4g} ({o.kind}, spread {o.spread:#.3g})" for o in wide)
    return (f"{'an outlier' if one else 'outliers'} at {at} {'spreads' if one else 'spread'} over batches by at least "
            f"a quarter of {'its' if one else 'their'} value, where the values are least certain: at the 56 points "
            "of the acceptance grids with such an outlier the worst value was off the simulated mean of its rank by "
            "4.8 % at the median point (up to 11.3 %, above 5 % at 26, the prediction high at 29), against 1.1 % "
            "(up to 13.4 %) at the 812 others (docs/theory/two_step.md §9.3)")


def two_step(activation, target, *, psi, phi, eta1, eta2, batch="reused", phi2=None, noise=0.0, N=None,
             K=None, second_layer="gaussian", order=None, extreme_samples="auto") -> TwoStepPrediction:
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
        With ``N`` given, polynomial links of Hermite degree ``<= 4`` (or non-polynomial): a higher degree is a
        ``ValueError`` (the Taylor route's terms in ``t_j`` grow with it, docs/theory/two_step.md §8.2).
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
        degree ``> 2`` or non-polynomial, a single-direction target, ``K`` and ``order`` not given.
        Otherwise (Taylor route, ``mode="analytic"``, with a note naming the reason) the terms are kept at
        that ``N`` with ``K = min(L - 1, Lambda + 2)``
        (``Lambda`` at the exponents inferred from ``|eta_t| = N^{alpha_t}``, :func:`inferred_alpha`).
    K : int, optional
        Override the highest Taylor index (forces the Taylor route).
    second_layer : {"gaussian", "rademacher"}
        Law of ``a`` (Rademacher collapses the ``u_k`` onto ``span{a, 1}``).
    order : int, optional
        Gauss–Hermite order per dimension of the quadrature of docs/theory/two_step.md §7.2.
    extreme_samples : {"auto", "single", "grouped"}
        Finite-``N`` route only: the batch's most extreme samples each a column of its own (``"single"``), or the
        most extreme as one coupled group, and the count read through the Poisson process of their mean count
        function (``"grouped"``, which the other routes refuse); ``"auto"`` (default) groups them with a reused
        batch (see :func:`two_step_finite_n`; docs/theory/two_step.md §8.3).

    Returns
    -------
    TwoStepPrediction
        Taylor route: ``mode == "analytic"``, ``bulk == "mp"``; finite-``N`` route: as
        :func:`two_step_finite_n` with ``mode == "finite-N"``.  With ``Lambda > 0`` and a non-polynomial
        ``sigma`` a note says that the limit Gram matrices are used where the mean replacement
        of docs/theory/two_step.md §5.3 is least accurate.

    Examples
    --------
    >>> p = two_step("hermite(0, 1, 0.5)", "hermite(0, 1, 0.5)", psi=1.0, phi=2.0, eta1=1000**0.4, eta2=1000**0.4,
    ...              N=1000)
    >>> len(p.outliers), p.mode       # 25 simulated draws: 4 (docs/benchmarks/two_step_finite_n.md)
    (4, 'finite-N')
    """
    act, tgt = get_activation(activation), make_target(target)
    check_choice("extreme_samples", extreme_samples, EXTREME_SAMPLES)
    if N is not None:
        _check_target_degree(tgt)
    kw = dict(psi=psi, phi=phi, eta1=eta1, eta2=eta2, batch=batch, phi2=phi2, noise=noise, N=N,
              second_layer=second_layer, order=order)
    # the inputs checked once, without the Taylor tables the finite-N route does not use
    plan = plan_two_step(act, tgt, K=0 if N is not None and K is None else K, **kw)
    notes, failed = [], False
    if N is None and extreme_samples == "grouped":
        raise ValueError(f"extreme_samples: {extreme_samples!r} needs the finite-N route (give N); the N -> infinity "
                         "prediction has no single-sample outliers")
    if N is not None:
        why = _finite_n_blocker(act, tgt, N, K, order)
        if why is not None and extreme_samples == "grouped":
            raise ValueError(f"extreme_samples: {extreme_samples!r} needs the finite-N route, which does not apply "
                             f"here ({why})")
        if why is None:                                  # docs/theory/two_step.md §8.2: non-perturbative in t_j
            try:
                p = two_step_finite_n(act, tgt, psi=psi, phi=phi, eta1=eta1, eta2=eta2, N=N, batch=batch,
                                      phi2=phi2, noise=noise, second_layer=second_layer,
                                      extreme_samples=extreme_samples)
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
    deg = _top_degree(tgt)
    if N is not None and plan.K >= 2 and deg is not None and deg >= 3:
        heavy = (f"the target has a part of Hermite degree {deg} (heavy-tailed labels): the Taylor "
                 "route's k >= 2 terms replace its extreme samples by their mean, which fails at every feasible N "
                 "(tanh with He1 + He4/5 at eta_t = N^0.2, N = 1000: 22.2 with K = 2 where four draws have 6.33; "
                 "docs/theory/two_step.md §9)")
        p = replace(p, reliable=False, reasons=p.reasons + (heavy,), notes=p.notes + (heavy,))
    # where the finite-N route applies but found no bulk, the Taylor route is no better: say so
    return replace(p, reliable=False, reasons=p.reasons + (notes[0],)) if failed else p


def _top_degree(target: Target):
    """The highest Hermite degree of the target's links (``None`` where none is polynomial)."""
    return max((g.degree for g in target.links if g.degree is not None), default=None)


def _check_target_degree(target: Target):
    """A target of Hermite degree above :data:`MAX_TARGET_DEGREE` has no prediction at finite ``N``: the finite-``N``
    route's quadrature stops there, and the Taylor route's terms in ``t_j`` grow with the degree (He1 + He5/10 with
    tanh at ``eta_1 = eta_2 = 1``, ``N = 1000``: its top value at 4.98 with ``K = 2``, where draws have 2.19;
    docs/theory/two_step.md §8.2)."""
    deg = _top_degree(target)
    if deg is not None and deg > MAX_TARGET_DEGREE:
        raise ValueError(f"target must have Hermite degree <= {MAX_TARGET_DEGREE} for a prediction at finite N, got "
                         f"degree {deg}; N=None gives the N -> infinity prediction (docs/theory/two_step.md §8.2)")


def _finite_n_blocker(act: Activation, target: Target, N, K, order):
    """Why :func:`two_step` with ``N`` cannot use :func:`two_step_finite_n` (``None`` when it can)."""
    if K is not None or order is not None:
        return "K or order given"
    if not takes_activation(act):
        return f"{act.name} is not smooth"
    if target.rank != 1:
        return f"the target has rank {target.rank}"
    if N < 2:
        return "N < 2"
    return None


def two_step_finite_n(activation, target, *, psi, phi, eta1, eta2, N, batch="reused", phi2=None, noise=0.0,
                      second_layer="gaussian", extreme_samples="auto") -> TwoStepPrediction:
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
    extreme_samples : {"auto", "single", "grouped"}
        How the batch's most extreme samples, whose columns leave the bulk, enter (docs/theory/two_step.md §8.3).
        ``"single"``: each a column of its own, and the count read on the predicted spectrum
        (docs/theory/two_step.md §9.2).  ``"grouped"``: the most extreme as one group of columns coupled through the
        matrix between them, which lifts the values where a dozen columns sit near their threshold; the count, its
        range and the fitted edge are read through the Poisson process of the mean count function below the spikes
        (docs/theory/two_step.md §8.3, "The extreme samples as one group"); about 1.5 times as long.  ``"auto"``
        (default): grouped with a reused batch, single with fresh batches, where each counts right at more of the
        checked points (docs/theory/two_step.md §9.3).

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
    check_choice("extreme_samples", extreme_samples, EXTREME_SAMPLES)
    plan = plan_two_step(act, t0, psi=psi, phi=phi, eta1=eta1, eta2=eta2, batch=batch, phi2=phi2, noise=noise,
                         N=N, K=0, second_layer=second_layer)
    way = extreme_samples_for(extreme_samples, plan.batch)        # "single" or "grouped", resolved once
    for name, ratio in (("psi", plan.psi), ("phi", plan.phi), ("phi2", plan.phi2)):
        if ratio is not None and not 2 <= (N / plan.psi) * (ratio if name != "psi" else 1.0) <= MAX_WIDTH:
            raise ValueError(f"{name}: the sizes d = N/psi, n = phi d, n2 = phi2 d must lie in [2, {MAX_WIDTH:.0e}], "
                             f"got N={N}, {name}={ratio!r}")
    r = predict_finite_n(plan.act, plan.target, psi=plan.psi, phi=plan.phi, phi2=plan.phi2, eta1=plan.eta1,
                         eta2=plan.eta2, batch=plan.batch, N=float(N), second_layer=second_layer,
                         extreme_samples=way)
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
    if way == "grouped":                               # how it was computed, on the result itself
        notes.append(f"extreme_samples={extreme_samples!r}: the batch's most extreme samples as one group, the count "
                     "read through the Poisson process of the prediction's laws (docs/theory/two_step.md §8.3)")
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
    # grouped extreme samples: the count and the fitted edge are read through the Poisson process of the mean count
    # function below the spikes (docs/theory/two_step.md §8.3)
    got = None if r.count_laws is None else count_through_process(r.count_laws, r.bulk_top, r.edge, N=N,
                                                                  psi=plan.psi)
    if got is not None:
        count, fitted, process = got
        if TAIL_COUNT:
            # the process counts the bulk's own top values as well where they stand above the edge the rule fits to
            # the bulk below them (a thin top tail, at large N): those ranks are the bulk's top values
            # (docs/theory/two_step.md §8.3, "The bulk's top tail")
            sd = TW_STD[1] * edge_fit(r.bulk_top)[1]
            seen += [(v, TwoStepOutlier(float(v), 0.0, 0.0, (0.0,), 0.0, "tail", spread=sd))
                     for v in r.bulk_top[:max(count - len(seen), 0)]]
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
    elif not wild and (spread_note := wide_spread_note(outs)):
        notes.append(spread_note)               # a milder spread: a note, not a reason
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
