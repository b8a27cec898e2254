"""KKT points of the constrained neural correlation function (docs/theory/gradient_flow.md §3–§5).

``max N(u)`` subject to ``|u| = 1``; KKT: ``grad N(u*) = L N(u*) u*``.  The
margin ``Delta = -lambda_max`` of the Riemannian Hessian
``B^T (grad^2 N(u*) - L N* I) B`` (``B`` an orthonormal basis of ``u*^perp``,
``grad^2 N`` by central differences of the analytic gradient).

The closed forms of docs/theory/gradient_flow.md §5 live in
:mod:`rmtfl.theory._gradient_flow.kkt_closed` and the sphere geometry (tangent basis,
Riemannian Hessian, sphere maximisation) in :mod:`rmtfl.theory._gradient_flow.kkt_geometry`;
this module is the numerical search (L-BFGS on ``-N(u)/|u|^L`` from the deterministic starts
of :func:`sphere_starts`, then Riemannian Newton polishing), which must reach a KKT residual
below ``1e-9``; when no start does, :class:`KKTSearchError` is raised.  :func:`ncf_kkt`
combines both.  Everything here is deterministic: no random numbers are drawn.

Examples
--------
>>> import numpy as np
>>> res = ncf_kkt(np.eye(3), [1.0, -0.5, -0.3], activation="square", N=2)
>>> round(res.value, 7), res.degree, round(res.margin / res.value, 6)
(0.3849002, 3, 3.0)
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import special

from rmtfl._results import Result
from rmtfl._validate import check_choice, check_int
from .kkt_closed import kkt_closed_form
from .kkt_geometry import riemannian_hessian_eigs, sphere_argmax, tangent_basis, tangent_margin
from .problem import RESTARTS_MAX, FlowProblem, make_problem

__all__ = ["ncf_kkt", "kkt_from_problem", "KKTResult", "KKTPoint", "KKTSearchError", "newton_polish",
           "sphere_starts"]

RESIDUAL_TOL = 1e-9


class KKTSearchError(RuntimeError):
    """The numerical KKT search did not reach the residual tolerance."""


@dataclass(frozen=True)
class KKTPoint(Result):
    """One local maximum of ``N`` on the sphere (docs/theory/gradient_flow.md §3).

    ``value`` = ``N(u)``; ``point`` = the unit vector ``u`` (packed as in docs/conventions.md §9,
    canonical representative); ``margin`` = ``Delta``; ``residual`` = ``|grad N(u) - L N(u) u|``;
    ``active_units`` = units with norm above ``1e-6``; ``hits`` = search starts that ended here.
    """

    value: float
    point: np.ndarray
    margin: float
    residual: float
    active_units: int
    hits: int = 1


@dataclass(frozen=True)
class KKTResult(Result):
    """The maximal KKT point of the constrained NCF and what was found around it
    (docs/theory/gradient_flow.md §3–§5).

    ``value`` = ``N(u*)``; ``point`` = ``u*`` (packed as in docs/conventions.md §9, ``|u*| = 1``,
    canonical representative); ``margin`` = ``Delta``; ``degree`` = ``L``; ``all`` = the
    distinct local maxima found by the search (:class:`KKTPoint`, canonicalised, by decreasing
    value); ``residual`` = ``|grad N(u*) - L N* u*|``; ``method`` names the closed form used, or
    ``"search"``; ``search_value`` is the best value the numerical search found (``nan`` if
    no search ran); ``tangent_eigs`` the Riemannian Hessian eigenvalues (descending);
    ``smooth`` is False for plain ReLU (outside the theory: no locally Lipschitz gradient).
    """

    value: float
    point: np.ndarray
    margin: float
    degree: int
    all: tuple
    residual: float
    method: str
    search_value: float
    tangent_eigs: np.ndarray
    architecture: str
    smooth: bool = True

    @property
    def positive(self) -> bool:
        """``N* > 0``: the flow escapes from the origin along ``u*``."""
        return self.value > 0


# ------------------------------------------------------------------- search
SOBOL_MAX_DIM = 21201  # scipy's table of Sobol direction numbers
SOBOL_FIRST = 16       # first Sobol point used (see sphere_starts)


def sphere_starts(P: int, count: int) -> np.ndarray:
    """``count`` fixed starting directions on the unit sphere of ``R^P`` (rows), for the KKT search.

    Points ``16, 17, ..., 15 + count`` of the unscrambled Sobol sequence in ``[0, 1]^P``
    (``scipy.stats.qmc.Sobol(P, scramble=False)``), mapped to ``R^P`` coordinate-wise by the
    inverse normal CDF and normalised: the image of a uniform point is a Gaussian one, so the
    directions spread over the sphere like Gaussian restarts but are the same on every call.
    The first 16 points are skipped: point 0 (the corner, mapped to ``-inf``) and point 1 (the
    centre ``(1/2, ..., 1/2)``, mapped to the zero vector) are degenerate, and in points
    ``2^m .. 2^(m+1) - 1`` every coordinate is an odd multiple of ``2^-(m+1)``, so points 2 to 15
    take at most 8 distinct values (points 2 and 3 are the sign vectors ``+-0.674 (1, ..., 1)``);
    their ties put several units at equal norms, a symmetric set that ends on saddles.  On
    the package's checks (data of docs/theory/gradient_flow.md §14 and random data) these starts
    find the local maxima as often as Gaussian restarts.  Above ``P = 21201`` (beyond scipy's
    Sobol table) the unscrambled Halton sequence is used, from point 1.
    (docs/theory/gradient_flow.md §3, "Computing KKT points").

    >>> U = sphere_starts(4, 3)
    >>> U.shape, bool(np.allclose(np.linalg.norm(U, axis=1), 1.0))
    ((3, 4), True)
    >>> bool(np.array_equal(U, sphere_starts(4, 3)))       # deterministic
    True
    """
    from scipy.stats import qmc          # scipy.stats takes a third of a second to import: only when needed

    P = check_int("P", P, 1)
    count = check_int("count", count, 1)
    if P <= SOBOL_MAX_DIM:
        m = max(1, math.ceil(math.log2(count + SOBOL_FIRST)))
        pts = qmc.Sobol(P, scramble=False).random_base2(m)[SOBOL_FIRST:SOBOL_FIRST + count]
    else:
        pts = qmc.Halton(P, scramble=False).random(count + 1)[1:]
    V = special.ndtri(pts)
    return V / np.linalg.norm(V, axis=1, keepdims=True)


def newton_polish(pb: FlowProblem, u, *, iters=8):
    """Riemannian Newton steps on the KKT equation ``grad N(u) = L N(u) u`` on the unit sphere
    (docs/theory/gradient_flow.md §3), stopped when the residual no longer decreases.

    Returns the polished unit vector.

    >>> from rmtfl.theory import make_problem
    >>> pb = make_problem(np.eye(2), [3.0, 4.0], activation="identity", N=1)
    >>> u = newton_polish(pb, np.array([0.7, 0.5, 0.6]))
    >>> pb.kkt_residual(u) < 1e-12
    True
    """
    u = np.asarray(u, dtype=float)
    u = u / np.linalg.norm(u)
    L = pb.degree
    for _ in range(iters):
        r = pb.ncf_grad(u) - L * pb.ncf(u) * u
        if np.linalg.norm(r) < 1e-14 * max(1.0, abs(pb.ncf(u))):
            break
        B = tangent_basis(u)
        A = B.T @ (pb.ncf_hessian(u) - L * pb.ncf(u) * np.eye(pb.P)) @ B
        step = np.linalg.lstsq(A, -(B.T @ r), rcond=1e-10)[0]
        un = u + B @ step
        un /= np.linalg.norm(un)
        if pb.kkt_residual(un) >= pb.kkt_residual(u):
            break
        u = un
    return u


def _same(pb, u1, v1, u2, v2):
    scale = max(1.0, abs(v1))
    if abs(v1 - v2) > 1e-7 * scale:
        return False
    f1, f2 = pb.arch.forward(pb.X, u1), pb.arch.forward(pb.X, u2)
    return np.linalg.norm(f1 - f2) <= 1e-6 * max(1.0, np.linalg.norm(f1))


def _active(pb, u, tol=1e-6):
    return int(np.sum(pb.arch.unit_norms(u) > tol))


def _search(pb: FlowProblem, restarts: int):
    L = pb.degree
    act = getattr(pb.arch, "act", None)
    maxiter = 300 if (act is not None and act.name == "relu") else 3000  # non-smooth: stalls at kinks
    raw = []
    for x0 in sphere_starts(pb.P, restarts):
        u = sphere_argmax(pb.ncf, pb.ncf_grad, L, x0, maxiter)
        raw.append((pb.ncf(u), u))
    clusters = []
    for v, u in sorted(raw, key=lambda t: -t[0]):
        for cl in clusters:
            if _same(pb, cl[1], cl[0], u, v):
                cl[2] += 1
                break
        else:
            clusters.append([v, u, 1])
    points = []
    scale = max(1e-300, max(abs(c[0]) for c in clusters)) * L
    for v, u, hits in clusters:
        u = newton_polish(pb, u)
        res = pb.kkt_residual(u)
        if not res < RESIDUAL_TOL * max(1.0, scale) or abs(pb.ncf(u)) <= 1e-12 * scale:
            continue  # not converged, or a trivial N = 0 point (dead units)
        eigs = riemannian_hessian_eigs(pb, u)
        if eigs.size and eigs[0] > 1e-7 * max(1.0, scale):
            continue  # a saddle of N on the sphere, not a local maximum
        u = pb.arch.canonical(u)
        pt = KKTPoint(pb.ncf(u), u, tangent_margin(eigs, scale), pb.kkt_residual(u), _active(pb, u), hits)
        if not any(_same(pb, q.point, q.value, pt.point, pt.value) for q in points):
            points.append(pt)
    return sorted(points, key=lambda q: -q.value), len(clusters)


def ncf_kkt(X, y, *, activation, N, loss="square", depth=2, restarts=20, method="auto", reduction="sum",
            logistic_scale=1.0) -> KKTResult:
    """Maximal non-negative KKT point of ``max N(u) s.t. |u| = 1`` (docs/theory/gradient_flow.md §3–§5).

    ``N(u) = sum_i ebar_i H(x_i; u)`` is the neural correlation function of docs/conventions.md §9
    (losses summed; ``ebar = y`` for the square loss).  Deterministic: the numerical search
    starts from the fixed directions of :func:`sphere_starts`.

    Parameters
    ----------
    X : array (n, d)
        Data, one row per sample.
    y : array (n,)
        Targets.
    activation : str or Activation
        Homogeneous activation (identity, square, relu, relu^p, ...) or ``"quadratic"`` for the
        quadratic model ``sum_j <w_j, x>^2``.
    N : int
        Hidden width; ``depth`` = number of weight layers (2 = two-layer).
    loss : ``"square"`` or ``"logistic"`` (``ebar`` of docs/conventions.md §9).
    restarts : int
        Number of starting directions of the numerical search (the first ``restarts`` of
        :func:`sphere_starts`).
    method : ``"auto"`` (closed form if one exists, and the search beside it), ``"search"``, ``"closed"``.
    reduction, logistic_scale : as in :func:`~rmtfl.theory.make_problem`.

    Returns
    -------
    KKTResult
        ``.value``, ``.point`` (packed: two-layer ``(a, W)``), ``.margin`` (Delta),
        ``.degree`` (L), ``.all`` (distinct local maxima found, canonicalised).

    Raises
    ------
    KKTSearchError
        When no start reaches a KKT residual below ``1e-9`` (and no closed form applies).

    Examples
    --------
    >>> r = ncf_kkt([[1.0, 0.0], [0.0, 1.0]], [3.0, 4.0], activation="identity", N=1)
    >>> round(r.value, 12), r.method
    (2.5, 'linear')
    """
    check_choice("method", method, ("auto", "search", "closed"))
    restarts = check_int("restarts", restarts, 1, RESTARTS_MAX)
    pb = make_problem(X, y, activation=activation, N=N, loss=loss, depth=depth,
                      reduction=reduction, logistic_scale=logistic_scale)
    return kkt_from_problem(pb, restarts=restarts, method=method)


def kkt_from_problem(pb: FlowProblem, *, restarts=20, method="auto") -> KKTResult:
    """:func:`ncf_kkt` on an already-built :class:`~rmtfl.theory.FlowProblem` (docs/theory/gradient_flow.md §3–§5)."""
    check_choice("method", method, ("auto", "search", "closed"))
    restarts = check_int("restarts", restarts, 1, RESTARTS_MAX)
    act = getattr(pb.arch, "act", None)
    smooth = act is None or act.name != "relu"  # locally Lipschitz gradient (inside the theory)
    closed = kkt_closed_form(pb) if method in ("auto", "closed") else None
    if method == "closed" and closed is None:
        raise ValueError(f"method='closed' but no closed form exists for {pb.arch.describe()}")
    points, nclusters = ([], 0)
    if method != "closed":
        points, nclusters = _search(pb, restarts)
    if closed is None and not points:
        raise KKTSearchError(
            f"KKT search did not converge for {pb.arch.describe()}: none of {restarts} starts reached a "
            f"residual |grad N - L N u| < {RESIDUAL_TOL:g}; no point is returned")
    search_value = points[0].value if points else float("nan")
    L = pb.degree
    if closed is not None:
        u = closed.point
        if closed.method in ("single_neuron", "deep_single_path"):
            u = newton_polish(pb, u)  # the d-dimensional maximiser is numerical: refine it
        value = pb.ncf(u)
        if not smooth:
            eigs = np.full(pb.P - 1, np.nan)
            margin = float("nan")
        else:
            eigs = riemannian_hessian_eigs(pb, u)
            margin = tangent_margin(eigs, abs(value) * L)
        return KKTResult(value, pb.arch.canonical(u), margin, L, tuple(points), pb.kkt_residual(u),
                         closed.method, search_value, eigs, pb.arch.describe(), smooth)
    best = points[0]
    eigs = riemannian_hessian_eigs(pb, best.point)
    return KKTResult(best.value, best.point, best.margin, L, tuple(points), best.residual, "search",
                     search_value, eigs, pb.arch.describe(), smooth)
