"""The (alpha1, alpha2) phase diagram of two large steps (docs/theory/two_step.md §6, §7.1).

Step sizes ``eta_t = c_t N^{alpha_t}``, ``alpha_t in [0, 1/2)``.  Over a grid the
diagram gives

* ``Lambda`` = :func:`~rmtfl.theory.outlier_count` (with critical flags);
* ``effective`` = ``#{1 <= k <= Lambda : P_k != 0}`` for the given ``sigma``
  (odd ``sigma`` keeps only even ``k``);
* ``learnable``: where the directions of the target with information exponent
  ``> 1`` (``mu_1(g_r) = 0``) get a non-zero overlap, i.e. some ``k <= Lambda`` has
  ``m_k != 0``.  Fresh batches never learn them (``m_k = 0`` exactly);
  a reused batch learns an odd ``g`` (e.g. ``He_3``) from ``k = 2``, i.e. where
  ``2 alpha1 + alpha2 > 1``.

Examples
--------
>>> pd = phase_diagram([0.25, 0.3], [0.45], activation="tanh", target="he3n")
>>> pd.Lambda.tolist(), pd.learnable.tolist(), pd.k_min
([[1, 2]], [[False, True]], 2)
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rmtfl._results import Result
from rmtfl._validate import check_alpha, check_choice, check_in_range, check_int, check_positive
from .._classical.activations import get_activation
from .._classical.targets import make_target
from .outliers import outlier_count, step_size
from .spike_vectors import limit_stats, spike_setup
from .plan import MAX_STEP, MAX_WIDTH
from .two_step import EXTREME_SAMPLES, two_step_finite_n

__all__ = ["PhaseDiagram", "phase_diagram", "FiniteNMap", "finite_n_outlier_map", "GENERIC"]

#: ``activation=GENERIC`` in :func:`phase_diagram`: a generic smooth non-polynomial ``sigma``.
GENERIC = "generic"


@dataclass(frozen=True)
class PhaseDiagram(Result):
    """Theoretical maps over ``alpha1`` (columns) and ``alpha2`` (rows), shape ``(len(alpha2), len(alpha1))``.

    Attributes
    ----------
    alpha1, alpha2 : ndarray
        The grid axes.
    Lambda : ndarray of int
        :func:`~rmtfl.theory.outlier_count` (docs/theory/two_step.md §6).
    critical : ndarray of bool
        Critical lines of ``Lambda``.
    effective : ndarray of int
        ``#{1 <= k <= Lambda : P_k != 0}``.
    learnable : ndarray of bool
        Where the information-exponent-``> 1`` directions get a non-zero overlap.
    k_min : int or None
        The smallest ``k`` with ``m_k != 0`` for those directions (``None``: never learned at
        any order up to ``kmax``).
    nonzero_k : tuple of int
        The ``k`` with ``P_k != 0``.
    batch : str
    """

    alpha1: np.ndarray
    alpha2: np.ndarray
    Lambda: np.ndarray
    critical: np.ndarray
    effective: np.ndarray
    learnable: np.ndarray
    k_min: int | None
    nonzero_k: tuple
    batch: str


@dataclass(frozen=True)
class FiniteNMap(Result):
    """Predicted outliers of ``W_2`` at a finite width over an ``(alpha1, alpha2)`` grid (:func:`finite_n_outlier_map`).

    Attributes
    ----------
    alpha1, alpha2 : ndarray
        The grid axes.
    count : ndarray of int, shape ``(len(alpha2), len(alpha1))``
        Number of predicted outlier locations above ``edge``.
    edge : ndarray, same shape
        The deterministic finite-``N`` bulk edge (docs/theory/two_step.md §8.2).
    outliers : tuple
        ``outliers[i][j]``: the predicted locations at ``(alpha1[j], alpha2[i])``, largest first.
    reliable : ndarray of bool, same shape
        ``False`` where :func:`~rmtfl.theory.two_step_finite_n` flags its prediction.
    count_low, count_high : ndarray of int, same shape
        The spread of the count from batch to batch (``TwoStepPrediction.count_range``): equal to ``count``
        where no single extreme sample makes an outlier and no spike lies near the count rule's cut
        (docs/theory/two_step.md §8.3).
    """

    alpha1: np.ndarray
    alpha2: np.ndarray
    count: np.ndarray
    edge: np.ndarray
    outliers: tuple
    reliable: np.ndarray | None = None
    count_low: np.ndarray | None = None
    count_high: np.ndarray | None = None


def _grid_axes(alpha1, alpha2):
    out = []
    for name, v in (("alpha1", alpha1), ("alpha2", alpha2)):
        try:
            a = np.atleast_1d(np.asarray(v, dtype=float))
        except (TypeError, ValueError):
            raise ValueError(f"{name} must be a 1-d grid of exponents in [0, 1/2), got {v!r}") from None
        if a.ndim != 1 or a.size == 0 or a.size > 10_000:
            raise ValueError(f"{name} must be a 1-d grid of 1 to 10000 exponents in [0, 1/2), got shape {a.shape}")
        out.append(a)
    return tuple(out)


def _nonzero_k(setup, K: int, batch: str, tol: float) -> tuple:
    """The ``k <= K`` with ``P_k`` not identically zero (docs/theory/two_step.md §6, "Vanishing coefficients").

    ``P_k = sum_m C(k, m) phi^-m y^m S[k, m] M_{k-m}(mu_1 s; tau_h)`` (fresh: the ``m = 0`` term alone).  A term
    survives when its Stein moment ``S[k, m]`` does and its Gaussian moment ``M_r`` (``r = k - m``) is not identically
    zero: ``r = 0``, ``mu_1 != 0``, or ``r`` even with ``tau_h > 0``.  Distinct powers of ``y`` cannot cancel.
    """
    S, mu1, tau_h2 = setup.stein, setup.mu1, setup.tau_h2_unit

    def survives(k, m):
        r = k - m
        return abs(S[k, m]) > tol and (r == 0 or abs(mu1) > tol or (r % 2 == 0 and tau_h2 > tol))

    ms = (lambda k: (0,)) if batch == "fresh" else (lambda k: range(k + 1))
    return tuple(k for k in range(1, K + 1) if any(survives(k, m) for m in ms(k)))


def phase_diagram(alpha1, alpha2, *, activation, target, degree=None, batch="reused",
                  phi: float = 2.0, phi2: float | None = None, kmax: int = 6, tol: float = 1e-10) -> PhaseDiagram:
    """Theoretical ``Lambda`` map and learnability map over an ``(alpha1, alpha2)`` grid (docs/theory/two_step.md §6, §7.1).

    Step sizes ``eta_t = c_t N^{alpha_t}`` (docs/conventions.md §5); the maps do not depend on ``c_t``.

    Parameters
    ----------
    alpha1, alpha2 : 1-d array_like in ``[0, 1/2)``
        Grid axes (exact rational counts, see :func:`~rmtfl.theory.outlier_count`).
    activation : str, callable, Activation, or ``"generic"``
        ``sigma``.  ``"generic"`` (:data:`GENERIC`) means a generic smooth non-polynomial ``sigma``
        with every Stein moment ``E[sigma^(k+1) sigma'^m] != 0``; then ``k_min`` follows from the
        parity of the target alone (docs/theory/two_step.md §7.1: odd ``g`` -> 2, mixed -> 1, even -> never)
        and every ``k`` counts in ``effective``.
    target : target spec (links centred)
    degree : int, optional
        Polynomial degree ``L`` of ``sigma`` (taken from ``activation`` when it is a polynomial).
    batch : {"reused", "fresh"}
    phi, phi2 : float
        Batch ratios ``n/d`` and ``n_2/d`` (enter ``m_k`` only through non-zero factors).
    kmax : int
        Largest Taylor index examined.
    tol : float
        Threshold below which a Stein moment or an overlap counts as zero.

    Returns
    -------
    PhaseDiagram

    Examples
    --------
    >>> phase_diagram([0.3], [0.45], activation="generic", target="he3n", batch="fresh").learnable.tolist()
    [[False]]
    """
    check_choice("batch", batch, ("reused", "fresh"))
    kmax = check_int("kmax", kmax, lo=1, hi=12)
    phi = check_positive("phi", phi)
    if isinstance(tol, bool) or not isinstance(tol, (int, float, np.integer, np.floating)):
        raise ValueError(f"tol must be a real number in (0, 0.1], got {tol!r}")
    tol = check_in_range("tol", tol, 0.0, 0.1, lo_open=True)
    a1, a2 = _grid_axes(alpha1, alpha2)
    t = make_target(target)
    if isinstance(activation, str) and activation.strip().lower() == GENERIC:
        act = None
    elif activation is None:
        raise ValueError("activation must be given: a name, callable or Activation, or 'generic' for a generic "
                         "smooth non-polynomial sigma")
    else:
        act = get_activation(activation)
    if act is not None and act.degree is not None:
        degree = act.degree if degree is None else min(degree, act.degree)
    A1, A2 = np.meshgrid(a1, a2)
    lam = outlier_count(A1, A2, degree=degree)
    Lam = np.asarray(lam.count)
    crit = np.asarray(lam.critical)
    K = kmax if degree is None else max(min(kmax, degree - 1), 0)
    hidden = [r for r, m in enumerate(t.mu1) if abs(m) < 1e-14]
    if act is None:
        nonzero = tuple(range(1, K + 1))
        k_min = None
        if hidden and batch == "reused":
            ks = []
            for r in hidden:
                g = t.links[r]
                par = g.parity
                if par == -1:
                    ks.append(2)
                elif par == 0:
                    ks.append(1)
            k_min = min(ks) if ks and min(ks) <= K else None
    else:
        setup = spike_setup(act, t, K) if K > 0 else None
        nonzero = _nonzero_k(setup, K, batch, tol) if K > 0 else ()
        k_min = None
        if hidden and K > 0:
            st = limit_stats(setup, phi=phi, K=K, batch=batch,
                             phi2=phi2 if phi2 is not None else phi, order=None)
            m = st.m
            scale = max(1.0, float(np.max(np.abs(m))))
            for k in range(1, K + 1):
                if any(abs(m[k, r]) > tol * scale for r in hidden):
                    k_min = k
                    break
    eff = np.zeros_like(Lam)
    for k in nonzero:
        eff += (Lam >= k).astype(int)
    learn = np.zeros(Lam.shape, dtype=bool) if k_min is None else (Lam >= k_min)
    return PhaseDiagram(a1, a2, Lam, crit, eff, learn, k_min, nonzero, batch)


def finite_n_outlier_map(alpha1, alpha2, *, activation, target, psi, phi, N, c1: float = 1.0,
                         c2: float = 1.0, batch: str = "reused", phi2=None,
                         extreme_samples: str = "auto") -> FiniteNMap:
    """Predicted number of outliers of ``W_2`` at width ``N`` over an ``(alpha1, alpha2)`` grid, any smooth ``sigma``.

    ``eta_t = c_t N^{alpha_t}`` (docs/conventions.md §5).  At each point the outliers are those of
    :func:`~rmtfl.theory.two_step_finite_n` (docs/theory/two_step.md §8.2): ``sigma'`` exact in the
    first step, neurons integrated over the law of ``a``, locations from the master equation
    above the widened finite-``N`` bulk, whose edge is ``edge``.  Unlike ``1 + Lambda``
    (``N -> infinity``) this is what a simulation at this ``N`` shows (docs/theory/two_step.md §9.1).
    About 0.1 s per grid point (after a first call per target and ``phi``), up to 0.2 s.

    Parameters
    ----------
    alpha1, alpha2 : 1-d array_like in ``[0, 1/2)``
        Grid axes.
    activation : smooth activation (name, callable with derivatives, or Activation)
    target : single-index target spec (Hermite degree ``<= 4``)
    psi, phi : float > 0
        ``N/d`` and ``n/d``.
    N : int >= 2
        Width.
    c1, c2 : float > 0
        Prefactors of the step sizes.
    batch : {"reused", "fresh"}
    phi2 : float > 0, required for ``batch="fresh"``
    extreme_samples : {"auto", "single", "grouped"}
        How the batch's most extreme samples enter each point's prediction (:func:`~rmtfl.theory.two_step_finite_n`;
        docs/theory/two_step.md §8.3): each a column of its own, or the most extreme as one coupled group with the
        count read through the Poisson process; ``"auto"`` (default) groups them with a reused batch.

    Returns
    -------
    FiniteNMap
        ``reliable[i, j]`` is ``False`` where the prediction flags itself (docs/theory/two_step.md §8.2);
        ``count_low``/``count_high`` the batch-to-batch spread of the count (docs/theory/two_step.md §8.3).

    Examples
    --------
    >>> r = finite_n_outlier_map([0.3], [0.3], activation="hermite(0, 1, 0.5)", target="linear",
    ...                          psi=1.0, phi=2.0, N=400)
    >>> r.count.tolist(), round(float(r.edge[0, 0]), 2)
    ([[2]], 2.63)
    """
    a1, a2 = _grid_axes(alpha1, alpha2)
    for name, arr in (("alpha1", a1), ("alpha2", a2)):
        for v in arr:
            check_alpha(name, float(v))
    if isinstance(N, bool) or not isinstance(N, (int, np.integer)) or not 2 <= N <= MAX_WIDTH:
        raise ValueError(f"N must be an integer width in [2, {MAX_WIDTH:.0e}], got {N!r}")
    N = int(N)
    c1 = check_in_range("c1", c1, 0.0, MAX_STEP, lo_open=True)
    c2 = check_in_range("c2", c2, 0.0, MAX_STEP, lo_open=True)
    if max(c1 * N ** float(a1.max()), c2 * N ** float(a2.max())) > MAX_STEP:
        raise ValueError(f"c1, c2: the step sizes c_t N^alpha_t must stay below {MAX_STEP:.0e}")
    check_choice("extreme_samples", extreme_samples, EXTREME_SAMPLES)
    act = get_activation(activation)
    t = make_target(target)
    count = np.zeros((a2.size, a1.size), dtype=int)
    low, high = count.copy(), count.copy()
    edge = np.zeros((a2.size, a1.size))
    rel = np.ones((a2.size, a1.size), dtype=bool)
    locs = []
    for i, al2 in enumerate(a2):
        row = []
        for j, al1 in enumerate(a1):
            e1, e2 = step_size(c1, N=N, alpha=al1), step_size(c2, N=N, alpha=al2)
            try:
                p = two_step_finite_n(act, t, psi=psi, phi=phi, eta1=e1, eta2=e2, N=N, batch=batch, phi2=phi2,
                                      extreme_samples=extreme_samples)
            except RuntimeError as err:
                raise ValueError(f"c1, c2: no finite-N bulk at (alpha1, alpha2) = ({al1:g}, {al2:g}), eta = ({e1:.3g}, "
                                 f"{e2:.3g}) at N = {N}: steps far beyond the range the finite-N route handles "
                                 f"(docs/theory/two_step.md §9); lower c1, c2 or the exponents ({err})") from err
            edge[i, j] = p.bulk_edge
            out = tuple(o.singular_value for o in p.outliers)
            count[i, j] = len(out)
            low[i, j], high[i, j] = p.count_range
            rel[i, j] = p.reliable
            row.append(out)
        locs.append(tuple(row))
    return FiniteNMap(a1, a2, count, edge, tuple(locs), rel, low, high)
