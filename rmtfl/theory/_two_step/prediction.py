"""The result objects of the two-step predictions (docs/theory/two_step.md §8): one outlier, one prediction."""
from __future__ import annotations

from dataclasses import dataclass, field

from rmtfl._results import Result
from .outliers import CountResult

__all__ = ["TwoStepOutlier", "TwoStepPrediction"]


@dataclass(frozen=True)
class TwoStepOutlier(Result):
    """One predicted outlier of ``W_2`` (docs/theory/two_step.md §8 step 4).

    ``theta`` is the singular value of the low-rank part ``P``; ``singular_value``
    is ``s_psi(theta)``; ``cos2_target`` is the squared norm of the projection of the
    right singular vector on the target subspace (per direction in ``cos2_targets``);
    ``cos2_second_layer`` is ``cos^2`` of the left singular vector with ``a``.  ``kind`` is ``"spike"``
    (a singular value of ``P``), ``"sample"`` (one extreme sample of a heavy-tailed target, finite-``N``
    route only, docs/theory/two_step.md §8.3: ``theta`` its strength, overlaps ``O(1/d)``) or ``"tail"`` (a top
    value of the bulk's thin tail that the count rule counts, finite-``N`` route with the extreme samples grouped,
    docs/theory/two_step.md §8.3, "The bulk's top tail": ``theta`` and the overlaps 0).  Where the finite-``N``
    route predicts single-sample outliers, ``singular_value`` is the mean over batches of the singular value of
    this outlier's rank (docs/theory/two_step.md §8.3, "Ranked values").  ``spread`` (finite-``N`` route; ``None``
    on the others): the predicted standard deviation of that value from one draw of ``W_0``, ``a`` and the batch to
    the next, at this ``N`` (docs/theory/two_step.md §8.5) -- what one simulated seed may differ by.
    """

    singular_value: float
    theta: float
    cos2_target: float
    cos2_targets: tuple
    cos2_second_layer: float
    kind: str = "spike"
    spread: float | None = None


@dataclass(frozen=True)
class TwoStepPrediction(Result):
    """Result of :func:`two_step` (and of :func:`rmtfl.numerics.two_step_semi_analytic`).

    Attributes
    ----------
    outliers : tuple of TwoStepOutlier
        Outliers above the BGN threshold ``psi^{1/4}``, largest first.
    spikes : tuple of float
        All singular values of the low-rank part ``P`` (largest first).
    mode : str
        Which route was used: ``"analytic"`` (the deterministic limit Gram matrices of the Taylor
        route), ``"finite-N"`` (:func:`two_step` with ``N`` where :func:`two_step_finite_n` applies,
        docs/theory/two_step.md §8.2) or ``"semi-analytic"`` (sampled,
        :func:`rmtfl.numerics.two_step_semi_analytic`).
    K : int
        Highest Taylor index kept on the Taylor routes; ``-1`` on the finite-``N`` route, which keeps ``sigma'``
        exact and truncates nothing (docs/theory/two_step.md §8.2).
    bulk_edge : float
        Top of the bulk's support: ``1 + sqrt(psi)`` (Marchenko–Pastur) on the asymptotic routes; on the
        finite-``N`` route the fold of the widened bulk's density (docs/theory/two_step.md §8.2).
    batch : str
        ``"reused"`` or ``"fresh"``.
    outlier_count : CountResult or None
        :func:`~rmtfl.theory.outlier_count` at the exponents inferred
        from ``eta_t = N^{alpha_t}`` (``None`` when ``N`` is not given).
    notes : tuple of str
    taylor_parameter : float or None
        ``eta_1 sqrt(2 ln N / N) sqrt(E D^2)``, an estimate of ``eta_1 max_j |a_j D_ji|``; the
        Taylor expansion and the mean replacement need it ``<< 1`` (docs/theory/two_step.md §9).  Where it
        exceeds 0.5 (non-polynomial ``sigma``: the truncated series is then not a reliable prediction) a note
        says so and ``reliable`` is ``False``.
    bulk : str
        ``"mp"`` (BGN closed form, Marchenko–Pastur bulk; always for :func:`two_step`) or
        ``"finite-N"`` (outlier locations from the master equation with a sampled bulk
        ``W_2 - P``, docs/theory/two_step.md §8.1, :func:`rmtfl.numerics.two_step_semi_analytic`).
    bulk_top : float or None
        ``"finite-N"``: the top of the finite-``N`` bulk (the mean over sampled bulks for
        :func:`rmtfl.numerics.two_step_semi_analytic`; the deterministic edge for
        :func:`two_step_finite_n`); else ``None``.
    reliable : bool
        ``False`` where the route's own checks say the numbers cannot be trusted (the reasons in
        ``reasons``): :func:`two_step_finite_n`'s checks; on the Taylor route at finite ``N`` a Taylor parameter
        above 0.5, a ``sigma`` that is not smooth, or a target part of Hermite degree 3 or 4 with ``K >= 2``; and
        :func:`two_step` when the finite-``N`` route applies but finds no bulk (the Taylor fallback is no better
        there).  ``True`` at ``N = None``.
    reasons : tuple of str
        The notes that make ``reliable`` ``False``, in order (a subset of ``notes``); empty when ``reliable``.
    fitted_edge : float or None
        Finite-``N`` route: the edge the count rule of docs/theory/two_step.md §9.2 fits to the predicted spectrum
        (the predicted outliers above the bulk's top values), the quantity
        :func:`~rmtfl.theory.edge_outlier_count` ``(...).edge`` measures on a simulated spectrum.  Where the bulk's
        density ends in a thin tail (heavy-tailed targets, large first steps) it can lie well away from
        ``bulk_edge``, the fold, near which no single draw has a value (docs/theory/two_step.md §8.4).  ``None`` on
        the other routes.
    count_range : tuple of int or None
        Finite-``N`` route: ``(low, high)``, the outliers above the count rule's cut on the predicted spectrum with
        every outlier at the location it exceeds in 90 % and in 10 % of batches, single samples by their order
        statistics and spikes of ``P`` by their ``spread`` (docs/theory/two_step.md §8.3): the spread of the count
        from batch to batch (``len(outliers)`` is the count at the medians).  ``None`` on the other routes.
    """

    outliers: tuple
    spikes: tuple
    mode: str
    K: int
    bulk_edge: float
    batch: str
    outlier_count: CountResult | None = None
    notes: tuple = field(default=())
    taylor_parameter: float | None = None
    bulk: str = "mp"
    bulk_top: float | None = None
    reliable: bool = True
    count_range: tuple | None = None
    fitted_edge: float | None = None
    reasons: tuple = field(default=())
