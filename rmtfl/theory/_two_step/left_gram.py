"""The ``N``-side Gram matrix of ``P`` at finite width, weighted by the row kernel of the widened bulk
(docs/theory/two_step.md §8.1): the ``Phi_A`` of the master equation, and the factor
:class:`~rmtfl.theory._two_step.joint_roots.JointProblem` builds its blocks from.  Deterministic.
"""
from __future__ import annotations

import numpy as np

__all__ = ["WeightedGram", "weighted_gram_u"]


class WeightedGram:
    """``tau -> G(tau) = C^T diag(c tau) C``: a Gram matrix over quadrature nodes (``C``: ``Q x r``, one row per
    node; ``c``: the nodes' weights), each node weighted by a kernel ``tau`` at it.

    :meth:`factor` is ``F = diag(sqrt(c tau)) C``, a square root (``F^T F = G``) that needs no eigensolver.

    >>> import numpy as np
    >>> G = weighted_gram_u(np.array([-1.0, 1.0]), np.array([0.5, 0.5]))
    >>> G(np.array([2.0, 1.0]))
    array([[1.5, 1. , 0.5],
           [1. , 1. , 0. ],
           [0.5, 0. , 0.5]])
    >>> F = G.factor(np.array([2.0, 1.0]))
    >>> bool(np.allclose(F.T @ F, G(np.array([2.0, 1.0]))))
    True
    """

    def __init__(self, C, c):
        self.C = np.asarray(C, dtype=float)
        self.c = np.asarray(c, dtype=float)

    def weights(self, tau):
        """``c tau`` at the nodes (clipped at 0: the kernels are positive above the bulk)."""
        return np.maximum(self.c * tau, 0.0)

    def factor(self, tau):
        """``F`` (``Q x r``) with ``F^T F = G(tau)``."""
        return np.sqrt(self.weights(tau))[:, None] * self.C

    def __call__(self, tau):
        """``G(tau)`` (``r x r``)."""
        return (self.C.T * (self.c * tau)) @ self.C


def weighted_gram_u(g, wg) -> WeightedGram:
    """``Phi_A``: the ``N``-side Gram matrix of ``P`` (:func:`~rmtfl.theory._two_step.finite_n.finite_n_grams`) with
    the rows at the nodes ``g`` of ``sqrt(N) a`` (weights ``wg``) weighted by the row kernel ``tau`` (the master
    equation, docs/theory/two_step.md §8.1): node ``q`` holds ``wg g^2 tau`` in the spike's first coordinate and in its
    own, ``C = [1 | I]``."""
    g = np.asarray(g, dtype=float)
    return WeightedGram(np.hstack([np.ones((g.size, 1)), np.eye(g.size)]), np.asarray(wg, dtype=float) * g**2)
