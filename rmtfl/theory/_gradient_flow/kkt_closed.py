"""Closed-form maximal KKT points of the constrained NCF (docs/theory/gradient_flow.md §5).

Two-layer linear (``N* = |X^T ebar| / 2``), the quadratic model (``N* = lambda_max(M)``),
two-layer square (``N* = 2/(3 sqrt 3) max|lambda(M)|``), two-layer ``L > 2`` single neuron
(``N* = C_L max_|w|=1 |q(w)|``), deep linear (``N* = K^{-K/2} s_1(Ebar^T X)``), deep
``sigma = z^p`` with ``p`` even (single path), and plain ReLU (active-set enumeration; outside
the theory).  The numerical search beside them is :mod:`rmtfl.theory._gradient_flow.kkt`.
Deterministic; parameters packed as in docs/conventions.md §9.

>>> import numpy as np
>>> from rmtfl.theory import make_problem
>>> kkt_closed_form(make_problem(np.eye(2), [3.0, 4.0], activation="identity", N=1)).value
2.5
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from rmtfl._results import Result
from .kkt_geometry import sphere_argmax
from .networks import FeedForward, QuadraticModel, TwoLayer
from .problem import FlowProblem

__all__ = ["ClosedFormKKT", "kkt_closed_form", "single_neuron_constant"]


def single_neuron_constant(L: float) -> float:
    """``C_L = L^{-1/2} ((L-1)/L)^{(L-1)/2}`` of docs/theory/gradient_flow.md §5.2.

    >>> round(single_neuron_constant(3), 7)   # 2/(3 sqrt 3)
    0.3849002
    """
    return L ** -0.5 * ((L - 1) / L) ** ((L - 1) / 2)


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
                a = sphere_argmax(f, g, m, s0 * x0)
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
                w = sphere_argmax(f, g, arch.p, x0)
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
