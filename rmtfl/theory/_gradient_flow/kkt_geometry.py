"""Geometry of the constrained NCF problem on the unit sphere (docs/theory/gradient_flow.md §3–§4).

A tangent basis of ``u^perp``, the Riemannian Hessian ``B^T (grad^2 N(u) - L N(u) I) B`` whose
largest eigenvalue gives the margin ``Delta = -lambda_max``, and the L-BFGS maximisation of a
homogeneous function on the sphere used by both the closed forms and the numerical search.
Deterministic; normalisation of docs/conventions.md §9 (packed parameters).

>>> import numpy as np
>>> u = sphere_argmax(lambda x: float(x @ np.diag([1.0, 3.0]) @ x), lambda x: 2 * np.diag([1.0, 3.0]) @ x, 2,
...                   np.array([1.0, 1.0]))
>>> bool(np.allclose(np.abs(u), [0.0, 1.0], atol=1e-6))
True
"""
from __future__ import annotations

import numpy as np
from scipy import optimize

from .problem import FlowProblem

__all__ = ["tangent_basis", "riemannian_hessian_eigs", "tangent_margin", "sphere_argmax"]


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


def tangent_margin(eigs, scale) -> float:
    """``Delta = -lambda_max`` of the Riemannian Hessian eigenvalues ``eigs`` (0 when ``|lambda_max| <= 1e-7 scale``)."""
    lam = float(eigs[0]) if eigs.size else -np.inf
    return 0.0 if abs(lam) <= 1e-7 * max(1.0, scale) else -lam


def sphere_argmax(f, g, deg, x0, maxiter=3000):
    """Maximise the ``deg``-homogeneous ``f`` on the unit sphere from ``x0`` (L-BFGS)."""

    def obj(u):
        r2 = u @ u
        rl = r2 ** (deg / 2)
        fu = f(u)
        return -fu / rl, -(g(u) / rl - deg * fu * u / (rl * r2))

    sol = optimize.minimize(obj, x0, jac=True, method="L-BFGS-B",
                            options={"gtol": 1e-14, "ftol": 1e-16, "maxiter": maxiter, "maxcor": 30})
    return sol.x / np.linalg.norm(sol.x)
