"""KKT points of the constrained neural correlation function (docs/theory/gradient_flow.md §3–§5).

``max N(u)`` subject to ``|u| = 1``; KKT: ``grad N(u*) = L N(u*) u*``.  The
margin ``Delta = -lambda_max`` of the Riemannian Hessian
``B^T (grad^2 N(u*) - L N* I) B`` (``B`` an orthonormal basis of ``u*^perp``,
``grad^2 N`` by central differences of the analytic gradient).

Closed forms (docs/theory/gradient_flow.md §5): two-layer linear (``N* = |X^T ebar| / 2``), the quadratic
model (``N* = lambda_max(M)``), two-layer square (``N* = 2/(3 sqrt 3) max|lambda(M)|``),
two-layer ``L > 2`` single neuron (``N* = C_L max_|w|=1 |q(w)|``), deep linear
(``N* = K^{-K/2} s_1(Ebar^T X)``), deep ``sigma = z^p`` with ``p`` even (single
path), and plain ReLU (active-set enumeration; outside the theory).  The
numerical search (L-BFGS on ``-N(u)/|u|^L`` from the deterministic starts of
:func:`sphere_starts`, then Riemannian Newton polishing) must reach a KKT residual
below ``1e-9``; when no start does, :class:`KKTSearchError` is raised.  Everything here
is deterministic: no random numbers are drawn.

Examples
--------
>>> import numpy as np
>>> res = ncf_kkt(np.eye(3), [1.0, -0.5, -0.3], activation="square", N=2)
>>> round(res.value, 7), res.degree, round(res.margin / res.value, 6)
(0.3849002, 3, 3.0)
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np
from scipy import optimize, special
from scipy.stats import qmc

from rmtfl._results import Result
from rmtfl._validate import check_choice, check_int
from .problem import RESTARTS_MAX, FlowProblem, make_problem
from .networks import FeedForward, QuadraticModel, TwoLayer

__all__ = ["ncf_kkt", "kkt_from_problem", "KKTResult", "KKTPoint", "KKTSearchError", "kkt_closed_form",
           "ClosedFormKKT", "newton_polish", "riemannian_hessian_eigs", "single_neuron_constant",
           "sphere_starts", "tangent_basis"]

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


# ----------------------------------------------------------------- geometry
def tangent_basis(u) -> np.ndarray:
    """Orthonormal basis (columns) of ``u^perp`` via a Householder reflection.

    >>> B = tangent_basis([0.6, 0.8, 0.0])
    >>> B.shape, bool(np.allclose(B.T @ B, np.eye(2))), bool(np.allclose(np.array([0.6, 0.8, 0.0]) @ B, 0))
    ((3, 2), True, True)
    """
    u = np.asarray(u, dtype=float) / np.linalg.norm(u)
    P = u.size
    v = u.copy()
    v[0] += 1.0 if u[0] >= 0 else -1.0
    Hh = np.eye(P) - 2.0 * np.outer(v, v) / (v @ v)
    return Hh[:, 1:]


def riemannian_hessian_eigs(pb: FlowProblem, u, *, eps=None) -> np.ndarray:
    """Eigenvalues (descending) of ``B^T (grad^2 N(u) - L N(u) I) B`` at the unit vector ``u``
    (docs/theory/gradient_flow.md §4; ``grad^2 N`` by central differences with step ``eps``)."""
    u = np.asarray(u, dtype=float) / np.linalg.norm(u)
    B = tangent_basis(u)
    A = pb.ncf_hessian(u, eps) - pb.degree * pb.ncf(u) * np.eye(pb.P)
    return np.sort(np.linalg.eigvalsh(B.T @ A @ B))[::-1]


def single_neuron_constant(L: float) -> float:
    """``C_L = L^{-1/2} ((L-1)/L)^{(L-1)/2}`` of docs/theory/gradient_flow.md §5.2.

    >>> round(single_neuron_constant(3), 7)   # 2/(3 sqrt 3)
    0.3849002
    """
    return L ** -0.5 * ((L - 1) / L) ** ((L - 1) / 2)


def _margin(eigs, scale) -> float:
    lam = float(eigs[0]) if eigs.size else -np.inf
    return 0.0 if abs(lam) <= 1e-7 * max(1.0, scale) else -lam


# ---------------------------------------------------------------- sphere max
def _sphere_argmax(f, g, deg, x0, maxiter=3000):
    """Maximise the ``deg``-homogeneous ``f`` on the unit sphere from ``x0`` (L-BFGS)."""

    def obj(u):
        r2 = u @ u
        rl = r2 ** (deg / 2)
        fu = f(u)
        return -fu / rl, -(g(u) / rl - deg * fu * u / (rl * r2))

    sol = optimize.minimize(obj, x0, jac=True, method="L-BFGS-B",
                            options={"gtol": 1e-14, "ftol": 1e-16, "maxiter": maxiter, "maxcor": 30})
    return sol.x / np.linalg.norm(sol.x)


def _poly_sphere_max(X, c, m):
    """``max_{|a|=1} |sum_i c_i <a, x_i>^m|`` and the maximiser (signed value), deterministic starts."""
    d = X.shape[1]
    M = X.T @ (c[:, None] * X)
    starts = list(np.eye(d)) + [x / np.linalg.norm(x) for x in X if np.linalg.norm(x) > 0]
    starts += list(np.linalg.eigh(M)[1].T)
    for i, j in itertools.combinations(range(min(len(X), 12)), 2):
        for sgn in (1.0, -1.0):
            v = X[i] / max(np.linalg.norm(X[i]), 1e-300) + sgn * X[j] / max(np.linalg.norm(X[j]), 1e-300)
            if np.linalg.norm(v) > 1e-12:
                starts.append(v / np.linalg.norm(v))
    best = (-np.inf, None, 0.0)
    for sign in (1.0, -1.0):
        f = lambda a, s=sign: s * float(c @ (X @ a) ** m)  # noqa: E731
        g = lambda a, s=sign: s * m * X.T @ (c * (X @ a) ** (m - 1))  # noqa: E731
        for x0 in starts:
            for s0 in (1.0, -1.0):
                a = _sphere_argmax(f, g, m, s0 * x0)
                v = f(a)
                if v > best[0] + 1e-13:
                    best = (v, a, sign)
    return best[0], best[1], best[2]


def _relu_enumeration(X, c):
    """Exact single-unit ReLU NCF maximum by active/boundary-set enumeration (docs/theory/gradient_flow.md §5.4)."""
    n, d = X.shape
    if n > 14:
        return None
    best = (0.0, None, 1.0)
    idx = range(n)
    for sgn in (1.0, -1.0):
        for ks in range(1, n + 1):
            for S in itertools.combinations(idx, ks):
                rest = [i for i in idx if i not in S]
                for kb in range(0, min(d - 1, len(rest)) + 1):
                    for Bset in itertools.combinations(rest, kb):
                        v = sgn * (c[list(S)] @ X[list(S)])
                        if kb:
                            Q, _ = np.linalg.qr(X[list(Bset)].T)
                            v = v - Q @ (Q.T @ v)
                        nv = np.linalg.norm(v)
                        if nv <= best[0] * 2 + 1e-300:
                            continue
                        z = X @ (v / nv)
                        tol = 1e-10 * max(1.0, np.abs(X).max())
                        ok = all(z[i] > tol for i in S) and all(abs(z[i]) <= tol for i in Bset) and \
                            all(z[i] < -tol for i in rest if i not in Bset)
                        if ok:
                            best = (nv / 2.0, v / nv, sgn)
    return best


@dataclass(frozen=True)
class ClosedFormKKT(Result):
    """A closed-form maximal KKT point (docs/theory/gradient_flow.md §5): ``value`` = ``N*``,
    ``point`` = ``u*`` (packed), ``method`` = the case used, ``margin`` = ``Delta`` where a
    closed form exists (else ``None``)."""

    value: float
    point: np.ndarray
    method: str
    margin: float | None = None



def kkt_closed_form(pb: FlowProblem):
    """The closed-form maximal KKT point for the cases of docs/theory/gradient_flow.md §5, or ``None`` if there is none.

    >>> from rmtfl.theory import make_problem
    >>> c = kkt_closed_form(make_problem(np.eye(2), [3.0, 4.0], activation="identity", N=1))
    >>> c.method, c.value
    ('linear', 2.5)
    """
    arch, X, c = pb.arch, pb.X, pb.ebar
    if isinstance(arch, QuadraticModel):
        lam, V = np.linalg.eigh(X.T @ (c[:, None] * X))
        W = np.zeros((arch.N, arch.d))
        W[0] = V[:, -1]
        marg = 2 * (lam[-1] - lam[-2]) if (arch.N == 1 and arch.d > 1) else (0.0 if arch.d > 1 or arch.N > 1 else None)
        return ClosedFormKKT(float(lam[-1]), arch.pack(W), "quadratic_model", marg)
    if isinstance(arch, TwoLayer):
        a, W = np.zeros(arch.N), np.zeros((arch.N, arch.d))
        name = arch.act.name
        if name in ("identity", "linear"):
            m = X.T @ c
            nm = float(np.linalg.norm(m))
            a[0], W[0] = 2 ** -0.5, m / (nm * 2 ** 0.5) if nm > 0 else np.eye(arch.d)[0] / 2 ** 0.5
            return ClosedFormKKT(nm / 2, arch.pack(a, W), "linear", nm if arch.N == 1 else 0.0)
        if name == "relu":
            best = _relu_enumeration(X, c)
            if best is None or best[1] is None:
                return None
            a[0], W[0] = best[2] / 2 ** 0.5, best[1] / 2 ** 0.5
            return ClosedFormKKT(float(best[0]), arch.pack(a, W), "relu_enumeration", float("nan"))
        L = arch.degree
        CL = single_neuron_constant(L)
        if name == "square":
            lam, V = np.linalg.eigh(X.T @ (c[:, None] * X))
            k = int(np.argmax(np.abs(lam)))
            s = 1.0 if lam[k] >= 0 else -1.0
            a[0], W[0] = s / math.sqrt(3), math.sqrt(2 / 3) * V[:, k]
            others = np.delete(s * lam, k)
            lam2 = float(others.max()) if others.size else -np.inf
            ratio = 1 - lam2 / abs(lam[k]) if np.isfinite(lam2) else np.inf
            Nst = CL * abs(float(lam[k]))
            marg = 3 * Nst * (min(1.0, ratio) if arch.N >= 2 else ratio)
            return ClosedFormKKT(Nst, arch.pack(a, W), "square", marg if np.isfinite(marg) else None)
        # general p-homogeneous sigma, single active neuron (docs/theory/gradient_flow.md §5.2)
        best_v, best_w = -np.inf, None
        for sign in (1.0, -1.0):
            f = lambda w, s=sign: s * float(c @ arch.sigma(X @ w))  # noqa: E731
            g = lambda w, s=sign: s * X.T @ (c * arch.sigma_prime(X @ w))  # noqa: E731
            starts = list(np.eye(arch.d)) + list(-np.eye(arch.d)) + \
                [x / np.linalg.norm(x) for x in np.r_[X, -X] if np.linalg.norm(x) > 0]
            for x0 in starts:
                w = _sphere_argmax(f, g, arch.p, x0)
                v = f(w)
                if v > best_v + 1e-13:
                    best_v, best_w, best_s = v, w, sign
        a[0], W[0] = best_s / math.sqrt(L), math.sqrt((L - 1) / L) * best_w
        return ClosedFormKKT(CL * best_v, arch.pack(a, W), "single_neuron", None)
    if isinstance(arch, FeedForward):
        K, L = arch.K, arch.degree
        Ws = [np.zeros(s) for s in arch.shapes]
        if arch.act.name in ("identity", "linear"):
            Y = c.reshape(pb.n, arch.n_outputs)
            U, S, Vt = np.linalg.svd(Y.T @ X)
            r = K ** -0.5
            Ws[0][0] = r * Vt[0]
            for k in range(1, K - 1):
                Ws[k][0, 0] = r
            Ws[-1][:, 0] = r * U[:, 0]
            return ClosedFormKKT(float(S[0]) * K ** (-K / 2), arch.pack(*Ws), "deep_linear", None)
        p = arch.p
        if arch.n_outputs == 1 and abs(p - round(p)) < 1e-12 and int(round(p)) % 2 == 0 and \
                arch.act.name not in ("relu",) and not arch.act.name.startswith("relu^"):
            p = int(round(p))
            e = [p ** (K - 1 - k) for k in range(K)]  # exponents of layers 1..K
            val, ahat, sign = _poly_sphere_max(X, c, p ** (K - 1))
            r = [math.sqrt(ek / L) for ek in e]
            Ws[0][0] = r[0] * ahat
            for k in range(1, K - 1):
                Ws[k][0, 0] = r[k]
            Ws[-1][0, 0] = sign * r[-1]
            coef = math.prod((ek / L) ** (ek / 2) for ek in e)
            return ClosedFormKKT(coef * val, arch.pack(*Ws), "deep_single_path", None)
    return None


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
        u = _sphere_argmax(pb.ncf, pb.ncf_grad, L, x0, maxiter)
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
        pt = KKTPoint(pb.ncf(u), u, _margin(eigs, scale), pb.kkt_residual(u), _active(pb, u), hits)
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
            margin = _margin(eigs, abs(value) * L)
        return KKTResult(value, pb.arch.canonical(u), margin, L, tuple(points), pb.kkt_residual(u),
                         closed.method, search_value, eigs, pb.arch.describe(), smooth)
    best = points[0]
    eigs = riemannian_hessian_eigs(pb, best.point)
    return KKTResult(best.value, best.point, best.margin, L, tuple(points), best.residual, "search",
                     search_value, eigs, pb.arch.describe(), smooth)
