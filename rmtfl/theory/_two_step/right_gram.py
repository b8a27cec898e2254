"""The ``d``-side Gram matrix of the right vectors of ``P`` at finite width (docs/theory/two_step.md §7.2, §8.2).

Each right vector is a weighted sum of a batch's samples, ``X^T (y p(y, s)) / n``, with ``p = 1`` for the first
step's ``beta_hat`` and ``p = F(t_q; y, s)`` for ``v(t_q)``.  Over a batch such sums have a part along ``beta*`` (the
batch mean of ``y p z*``), a coherent part along the first step's own direction across ``beta*`` (its ``zeta``, and
with a reused batch each sample's own term ``y / phi``), and an incoherent rest of ``d`` Gaussian components.
:func:`basis_gram` gives their inner products for any weights ``p`` on the data grid, so that the same form serves
the basis of ``P`` and the directions a batch moves it in (:mod:`~rmtfl.theory._two_step.spike_spread`).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = ["basis_gram", "GramMoments", "reused_moments", "reused_gram"]


class GramMoments(NamedTuple):
    """The moments of a reused batch that its Gram matrix (:func:`basis_gram`) is made of, each linear in the law of
    the batch's samples: ``m`` the components along ``beta*``, ``b`` those along the first step's own direction across
    it, ``ey2P = E[y^2 p_k]``, ``G2 = E[y^2 p_k p_l]`` and ``ey2 = E[y^2]`` (a leading axis: several laws at once)."""

    m: np.ndarray
    b: np.ndarray
    ey2P: np.ndarray
    G2: np.ndarray
    ey2: np.ndarray


def reused_moments(st, Pw, W) -> GramMoments:
    """:class:`GramMoments` of the weight rows ``Pw`` (``(K, I)`` on the data grid of ``st``) under the law ``W`` of
    the data grid: ``(I,)``, or ``(L, I)`` for ``L`` laws at once (each moment then has a leading axis ``L``)."""
    y = st.y
    W = np.asarray(W, dtype=float)
    m = W @ ((st.zs * y)[None, :] * Pw).T
    b = W @ (((y / st.phi + st.tau * st.zeta) * y)[None, :] * Pw).T / st.tau
    ey2P = W @ ((y * y)[None, :] * Pw).T
    G2 = ((W * (y * y))[..., None, :] * Pw) @ Pw.T        # one product per law (a tenth of the einsum's time)
    G2 = (G2 + np.swapaxes(G2, -1, -2)) / 2
    return GramMoments(m, b, ey2P, G2, W @ (y * y))


def reused_gram(mom: GramMoments, phi: float) -> np.ndarray:
    """The Gram matrix of a reused batch's vectors from its :class:`GramMoments` (one law, or a leading axis)."""
    def outer(v):
        return v[..., :, None] * v[..., None, :]
    ey2 = np.asarray(mom.ey2, dtype=float)[..., None, None]
    return outer(mom.m) + outer(mom.b) + (mom.G2 - outer(mom.ey2P) / ey2) / phi


def basis_gram(st, Pw):
    """``(gram, m)``: the Gram matrix of the vectors ``X^T (y Pw[k]) / n`` and each one's component ``m`` along
    ``beta*``, for weight rows ``Pw`` (``(K, I)`` on the data grid of ``st``, a
    :class:`~rmtfl.theory._two_step.finite_n.FiniteNSetup`).

    Reused batch: the basis is the rows themselves.  Fresh batches: ``beta_hat_1`` of the first batch comes first
    (``gram`` is ``K + 1`` square) and the rows are sums over the second batch; ``m`` is zero where the target has no
    linear part (``beta_hat_1`` then carries no component along ``beta*`` that the second batch's vectors share).

    >>> from rmtfl.theory._classical.activations import get_activation
    >>> from rmtfl.theory._classical.targets import make_target
    >>> from rmtfl.theory._two_step.finite_n import finite_n_setup
    >>> st = finite_n_setup(get_activation("tanh"), make_target("hermite(0, 1)"), phi=2.0, batch="reused", phi2=None)
    >>> gram, m = basis_gram(st, np.ones((1, st.y.size)))      # beta_hat = X^T y / n: |beta_hat|^2 = 1 + 1 / phi
    >>> round(float(gram[0, 0]), 12), round(float(m[0]), 12)
    (1.5, 1.0)
    """
    w, y = st.w, st.y
    if st.batch == "reused":
        mom = reused_moments(st, Pw, w)
        return reused_gram(mom._replace(ey2=st.ey2), st.phi), mom.m
    m = ((st.zs * y)[None, :] * Pw) @ w
    if st.mus == 0.0:
        m = np.zeros_like(m)
    b = ((st.zeta * y)[None, :] * Pw) @ w
    Gw = np.outer(m, m) + np.outer(b, b) + ((Pw * (y * y * w)) @ Pw.T) / st.phi2
    cross = m * st.mus + st.tau * b
    gram = np.zeros((Pw.shape[0] + 1,) * 2)
    gram[0, 0] = st.mus**2 + st.tau**2
    gram[0, 1:] = gram[1:, 0] = cross
    gram[1:, 1:] = Gw
    return gram, m
