"""The count rule applied to a predicted spectrum (docs/theory/two_step.md §9.2).

A simulation's outliers are counted by :func:`~rmtfl.theory.edge_outlier_count` on its own spectrum; a prediction
is counted by the same rule on the spectrum it predicts (its roots above the bulk's top values), so that a root too
close to the bulk to be told from it in a simulation is not counted either.
"""
from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from .._classical.edge_count import EdgeCount, edge_outlier_count, edge_positions
from .._classical.tracy_widom import largest_sv_scaling
from .poisson_count import blended, mean_count, poisson_count

__all__ = ["count_window", "count_on_prediction", "count_through_process", "uncounted_note", "process_note",
           "low_edge_note", "EDGE_GAP"]

#: The count rule's edge on the predicted spectrum this far (relative) below the fold of the bulk's density marks a
#: predicted spectrum whose shape just below its outliers is off (:func:`low_edge_note`).
EDGE_GAP = 0.04


def count_window(N, psi) -> int:
    """``J``: the number of bulk values the count rule fits at width ``N`` (docs/theory/two_step.md §9.2)."""
    return max(12, math.ceil(0.8 * math.sqrt(max(int(round(min(N, N / psi))), 2))))


def count_on_prediction(roots, edge: float, *, N, psi, bulk_top=None) -> EdgeCount:
    """The count rule :func:`~rmtfl.theory.edge_outlier_count` applied to the predicted spectrum
    (docs/theory/two_step.md §9.2): the ``roots`` (descending) above the bulk's top values, so that a root too close
    to the bulk to be told from it in a simulation is not counted either; ``count`` at most ``len(roots)``.

    ``bulk_top``: those values where the bulk's density puts them (finite-``N`` route); without it, a square-root
    edge ``edge - sigma x_j`` (``sigma`` Johnstone's Tracy–Widom scale of ``W_0`` at this size times
    ``edge / (1 + sqrt(psi))``).  The result's ``edge`` and ``threshold`` are the rule's fitted edge and cut on that
    spectrum; with a heavy-tailed target they lie well above ``edge``, the fold of the bulk's density (Section 8.3).
    """
    J = count_window(N, psi)
    if bulk_top is not None and len(bulk_top) >= J + 1:
        bulk = np.asarray(bulk_top, float)
    else:
        d = max(int(round(N / psi)), 1)
        sigma = largest_sv_scaling(int(round(N)), d).scale * edge / (1.0 + math.sqrt(psi))
        bulk = edge - sigma * edge_positions(J + 20)
    rule = edge_outlier_count(np.concatenate([np.asarray(roots, float), bulk]), window=J)
    return replace(rule, count=min(rule.count, len(roots)))


def count_through_process(laws, bulk_top, fold: float, *, N, psi):
    """``(count, fitted edge, counts)`` read through the Poisson process of the mean count function below the spikes
    (docs/theory/two_step.md §8.3, "The extreme samples as one group"): ``Lambda`` of ``laws.below`` up to the
    bulk's ``fold`` and of ``laws.above`` from 1.05 times it (:func:`~.poisson_count.blended`), each over the bulk's
    top values ``bulk_top``; the count rule's median count over the spectra of that process under the spikes
    ``laws.fixed`` (spread by ``laws.laws``), the mean of the edge it fits there, and each lattice spectrum's count
    (:func:`~.poisson_count.poisson_count`); ``None`` where those spectra are too short for the rule's window."""
    grid, lam = blended(mean_count(laws.below, bulk_top), mean_count(laws.above, bulk_top), fold)
    return poisson_count(grid, lam, laws.fixed, count_window(N, psi), laws=laws.laws)


def process_note(dropped, count: int) -> str:
    """The note on the predicted roots (``(value, outlier)`` pairs) beyond the count read through the Poisson
    process (docs/theory/two_step.md §8.3, "The extreme samples as one group")."""
    one = len(dropped) == 1
    roots = ", ".join(f"{v:#.4g} ({o.kind})" for v, o in dropped)
    return (f"{'a root' if one else 'roots'} at {roots} {'is' if one else 'are'} not counted: over spectra drawn from "
            f"the prediction's laws the count rule's median count is {count}, so a simulation at this N typically "
            f"does not tell {'it' if one else 'them'} from the bulk (docs/theory/two_step.md §8.3)")


def uncounted_note(dropped, rule: EdgeCount, fold: float) -> str:
    """The note on the predicted roots (``(value, outlier)`` pairs) below the count rule's cut
    (docs/theory/two_step.md §9.2)."""
    def fmt(v):      # as many digits as tell the value from the cut
        return f"{v:#.{next((p for p in range(4, 9) if f'{v:.{p}g}' != f'{rule.threshold:.{p}g}'), 9)}g}"
    one = len(dropped) == 1
    roots = ", ".join(f"{fmt(v)} ({o.kind})" for v, o in dropped)
    return (f"{'a root' if one else 'roots'} at {roots} {'lies' if one else 'lie'} below the count rule's cut "
            f"{rule.threshold:#.4g} on the predicted spectrum (its fitted edge {rule.edge:#.4g} plus the Tracy–Widom "
            f"margin; the bulk's fold is at {fold:#.4g}): a simulation at this N does not tell "
            f"{'it' if one else 'them'} from the bulk, so {'it is' if one else 'they are'} not counted "
            "(docs/theory/two_step.md §9.2)")


def low_edge_note(rule: EdgeCount, fold: float) -> str | None:
    """The note on a count whose fitted edge lies more than ``EDGE_GAP`` below the bulk's fold, else ``None``
    (docs/theory/two_step.md §9.3, "The edge the count rule fits").

    Such a gap marks a predicted spectrum whose shape just below the outliers is off: with the quadratic sigma it
    falls away faster than a draw's, whose samples just below their own threshold lift the top of its bulk (the count
    then one or two too many); with gelu and relu at the largest steps the fold runs high (the count too few).  The
    numbers in the note were measured on the 876 points of docs/benchmarks/two_step_finite_n.md
    (``python -m benchmarks.bench_two_step_finite_n --edge-gaps``).
    """
    gap = 1.0 - rule.edge / fold
    if not gap > EDGE_GAP:
        return None
    return (f"the count rule's edge on the predicted spectrum, {rule.edge:#.4g}, lies {100 * gap:.0f} % below the "
            f"bulk's fold {fold:#.4g}, where the predicted values just below the outliers are least certain: at the "
            "11 points of the acceptance grids with a gap above 4 %, the fitted edge was more than 3 % off the "
            "simulated one at 8 and the count off the simulated median at 9 (6 of them too many), against "
            "3 and 37 of the 664 points with a gap within 2 % (docs/theory/two_step.md §9.3)")
