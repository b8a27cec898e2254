"""Measuring a simulated ``W_T`` (:func:`~rmtfl.numerics.simulate_two_step`, docs/theory/two_step.md §9): its singular
values, the top vectors' alignments with the target directions and with the powers of ``a``, and how many top vectors
the default measures.
"""
from __future__ import annotations

import numpy as np

from rmtfl.theory import edge_margin, edge_outlier_count
from .._backend import to_numpy
from .._classical.spectra import dense_spectrum_and_top, singular_values, top_singular_triplets

__all__ = ["measure_step", "default_vectors", "DEFAULT_VECTORS"]


#: The default ``n_vectors`` of :func:`~rmtfl.numerics.simulate_two_step` measures the vectors of every value above
#: ``edge`` up to this many, beyond it of the count rule's outliers alone (plus one either way).
DEFAULT_VECTORS = 32


def default_vectors(s, n_out: int, k) -> int:
    """How many top vectors the default ``n_vectors`` measures: the values above the Marchenko–Pastur ``edge`` plus
    one, at most ``DEFAULT_VECTORS`` of them or, where the whole spectrum is known (``k=None``), the outliers the count
    rule finds above the bulk's own edge if there are more (:func:`rmtfl.theory.edge_outlier_count`,
    docs/theory/two_step.md §9.2): above that edge a widened bulk has hundreds of values, whose vectors cost a solve
    of hundreds of triplets."""
    count = edge_outlier_count(s).count if k is None and len(s) >= 16 else n_out
    return min(n_out, max(count, DEFAULT_VECTORS)) + 1


def measure_step(W, a, target, N, d, k, rng, be, n_vectors, a_powers, p_margin=0.99):
    """``(singular values, cos2 target, cos2 a-powers, values above edge, edge, complete)`` of ``W`` (module
    docstring): every value (``k=None``) or the top ``k`` certified at ``edge`` (the Marchenko–Pastur edge plus the
    Tracy–Widom margin at ``p_margin``), and the alignments of the top ``n_vectors`` vectors, or with
    ``n_vectors=None`` of at least three and of as many as :func:`default_vectors` asks for once the values are
    known: one solve for the vectors a draw."""
    edge = float(edge_margin(N, d, p=p_margin))
    m = min(N, d)
    least = 3 if n_vectors is None else n_vectors

    def wanted(s):
        if n_vectors is not None:
            return n_vectors
        return min(max(least, default_vectors(s, int(np.count_nonzero(np.asarray(s) > edge)), k)), m)

    # k = None: every value from the dense spectrum, and the vectors of the top n_vec alone (the values above the
    # edge of a widened bulk can number in the hundreds: their vectors are not measured)
    if k is None and be.name != "numpy":  # device: one Gram product and one dense eigh for everything
        first = min(m, max(least, DEFAULT_VECTORS + 1) if n_vectors is None else least)
        s_all, _, U, V = dense_spectrum_and_top(W, first, backend=be)
        n_vec = wanted(s_all)
        if n_vec > first:   # more outliers than the cap: every vector is in the same eigh
            s_all, _, U, V = dense_spectrum_and_top(W, n_vec, backend=be)
        s, complete = s_all, True
    elif k is None:
        s = singular_values(W, backend=be)
        n_vec = wanted(s)
        top = top_singular_triplets(W, n_vec, rng=rng, backend=be)
        U, V, complete = top.U, top.V, True
    else:  # top k (the solver is chosen by top_singular_triplets: mixed precision up to m = 2000)
        top = top_singular_triplets(W, min(max(k, least), m), rng=rng, edge=edge, backend=be)
        n_vec = wanted(top.s)
        if n_vec > top.U.shape[1]:   # every value of the top k is an outlier: the vectors of one more
            top = top_singular_triplets(W, min(max(k, n_vec), m), rng=rng, edge=edge, backend=be)
        s, U, V, complete = top.s, top.U, top.V, top.complete
    U = U[:, :n_vec]
    V = V[:, :n_vec]
    R = target.rank
    B = target.direction_matrix(d)
    if target.directions is None:
        cos_t = (V[:R, :].T) ** 2 / np.sum(V**2, axis=0)[:, None]
    else:
        cos_t = (V.T @ B.T) ** 2 / np.sum(V**2, axis=0)[:, None]
    a_h = to_numpy(a).astype(np.float64)
    Apow = np.stack([a_h ** (j + 1) for j in range(a_powers)], axis=1)
    Apow /= np.linalg.norm(Apow, axis=0)
    cos_a = (U.T.astype(np.float64) @ Apow) ** 2 / np.sum(U.astype(np.float64) ** 2, axis=0)[:, None]
    return (np.asarray(s, dtype=np.float64), cos_t.astype(np.float64), cos_a,
            int(np.count_nonzero(np.asarray(s) > edge)), edge, bool(complete))
