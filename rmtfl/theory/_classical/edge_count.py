"""Count outliers above a spectrum's own soft edge, with a Tracy–Widom margin (docs/theory/two_step.md §9.2).

The count rule of rmtfl's empirical phase diagrams (``rmtfl.numerics`` applies it to simulated spectra,
``rmtfl.theory.two_step`` to a predicted one, so that both count alike).  It needs no prediction: the bulk's top edge
``e`` and its Tracy–Widom scale ``sigma`` are fitted to the sample's own top bulk values, and a value
counts as an outlier when it lies above ``e + sigma * q_p`` (``q_p`` the ``p``-quantile of TW₁).

Near a square-root edge the ``j``-th bulk value from the top sits, on average, at
``e - sigma * x_j`` with ``x_j = (3 pi (j - c) / 2)^(2/3)`` (the semiclassical count
``#{values above e - sigma x} ≈ (2/(3 pi)) x^(3/2)`` of the Airy kernel), ``c = 0.72`` chosen so that
``x_1`` is minus the mean of TW₁ (``-1.2065``).  ``e`` and ``sigma`` come from a least-squares fit over
``j = 1 .. J``, ``J = max(12, ceil(0.8 sqrt(min(N, d))))`` — the range where the square-root law holds
to a fraction of ``sigma`` — after removing the values counted so far; the fit and the count are
iterated to a fixed point.  The rule holds for any bulk with a square-root top edge (Marchenko–Pastur,
the widened bulks of large steps, variance profiles), which is why it is used for ``W_2``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from rmtfl._results import Result
from rmtfl._validate import check_array, check_in_range, check_int
from .tracy_widom import tracy_widom_quantile

__all__ = ["EdgeCount", "edge_outlier_count", "edge_positions", "EDGE_C"]

#: Offset of the semiclassical edge positions so that the first one is the mean of TW₁.
EDGE_C = 0.72
_TW1_MEAN = -1.2065335745820


@dataclass(frozen=True)
class EdgeCount(Result):
    """Outliers above a spectrum's own fitted soft edge (:func:`edge_outlier_count`).

    ``count``: values above ``threshold = edge + scale * q_p``; ``edge``, ``scale``: fitted top edge
    and Tracy–Widom scale of the bulk; ``window``: number of bulk values used in the fit; ``p``: level.
    """

    count: int
    edge: float
    scale: float
    threshold: float
    window: int
    p: float


def edge_positions(J: int) -> np.ndarray:
    """``x_j``, ``j = 1..J``: mean distance of the ``j``-th value below a soft edge, in Tracy–Widom scales."""
    return (1.5 * math.pi * (np.arange(1, J + 1) - EDGE_C)) ** (2.0 / 3.0)


def edge_outlier_count(s, *, p: float = 0.99, window: int | None = None, max_outliers: int | None = None
                       ) -> EdgeCount:
    """Number of values above the bulk's own top edge plus a Tracy–Widom margin (module docstring).

    Parameters
    ----------
    s : array_like, 1-D
        Top singular values (or eigenvalues) of one matrix, at least ``window + max_outliers`` of
        them; any order.
    p : float
        Level of the margin: a bulk value exceeds the threshold with probability about ``1 - p``
        (default 0.99).
    window : int, optional
        Number of bulk values in the edge fit (default ``max(12, ceil(0.8 sqrt(len(s))))`` capped by
        what is available; pass ``ceil(0.8 sqrt(min(N, d)))`` when ``s`` holds only the top values).
    max_outliers : int, optional
        Largest count considered (default ``len(s) - window``).

    Returns
    -------
    EdgeCount

    Examples
    --------
    >>> import numpy as np
    >>> bulk = 2.0 - 0.01 * edge_positions(60)           # mean top values of a bulk: edge 2, TW scale 0.01
    >>> r = edge_outlier_count(np.concatenate([[2.5, 2.015], bulk]))
    >>> r.count, round(r.edge, 6), round(r.scale, 6)      # 2.015 is inside the margin 2 + 0.01 * 2.02
    (1, 2.0, 0.01)
    """
    v = np.sort(check_array("s", s, ndim=1, min_size=4))[::-1]
    p = check_in_range("p", p, 0.0, 1.0, lo_open=True, hi_open=True)
    n = v.size
    J = window if window is not None else max(12, math.ceil(0.8 * math.sqrt(n)))
    J = check_int("window", J, lo=3, hi=max(3, n - 1))
    rmax = n - J if max_outliers is None else check_int("max_outliers", max_outliers, lo=0, hi=n - J)
    x = edge_positions(J)
    A = np.stack([np.ones(J), -x], axis=1)
    q = float(tracy_widom_quantile(p, beta=1))
    r, seen = 0, set()
    while True:
        (e, sig), *_ = np.linalg.lstsq(A, v[r:r + J], rcond=None)
        sig = max(float(sig), 0.0)
        thr = float(e) + sig * q
        rn = min(int(np.sum(v > thr)), rmax)
        if rn == r or rn in seen:
            break
        seen.add(r)
        r = rn
    return EdgeCount(int(r), float(e), sig, thr, int(J), float(p))
