"""The d-side Gram matrix of the right vectors of P (rmtfl/theory/_two_step/right_gram.py): exact for the first
step's own vector, and against sampled batches for a weight that depends on each sample's projection on the first
step (docs/theory/two_step.md §7.2 and §8.2)."""
import math

import numpy as np
import pytest

from rmtfl.theory import get_activation, make_target
from rmtfl.theory._two_step.finite_n import finite_n_setup
from rmtfl.theory._two_step.right_gram import basis_gram

TANH, TARGET = get_activation("tanh"), make_target("hermite(0, 1, 0.5)")


@pytest.mark.parametrize("batch", ["reused", "fresh"])
def test_first_step_vector_is_exact(batch):
    """``beta_hat = X^T y / n``: ``|beta_hat|^2 = mus^2 + E y^2 / phi`` and, fresh, ``beta_hat_1 . beta_hat_2 =
    mus^2``, to rounding (the data grid integrates the polynomial link exactly)."""
    st = finite_n_setup(TANH, TARGET, phi=2.0, batch=batch, phi2=3.0 if batch == "fresh" else None)
    gram, m = basis_gram(st, np.ones((1, st.y.size)))
    ey2 = float(TARGET.second_moment)
    assert m[0] == pytest.approx(st.mus, abs=1e-12)
    if batch == "reused":
        assert gram[0, 0] == pytest.approx(st.mus**2 + ey2 / 2.0, abs=1e-12)
    else:
        np.testing.assert_allclose(gram, [[st.mus**2 + ey2 / 2.0, st.mus**2], [st.mus**2, st.mus**2 + ey2 / 3.0]],
                                   atol=1e-12)


@pytest.mark.parametrize("batch", ["reused", "fresh"])
def test_against_sampled_batches(batch):
    """A weight ``p = tanh(s)`` of each sample's projection ``s`` on the first step (its own term left out of a reused
    sample's): the Gram matrix of ``[beta_hat(_1), (beta_hat_2,) X^T (y p) / n]`` over 40 batches at ``d = 1000``,
    ``n = 2000`` (fresh: ``n_2 = 3000``), each entry within 4 standard errors of the draws' mean plus ``1 / d`` (the
    finite-``d`` terms the limit leaves out).  Measured: at most 3.0 standard errors; with ``s`` reduced to its part
    along ``beta*`` (``zeta`` dropped) the entries of the vector miss by 4.6-6.8 (reused) and 11.5 (fresh)."""
    d, phi, phi2 = 1000, 2.0, 3.0
    st = finite_n_setup(TANH, TARGET, phi=phi, batch=batch, phi2=phi2 if batch == "fresh" else None)
    p = np.tanh
    gram, _ = basis_gram(st, np.vstack([np.ones_like(st.y), p(st.s)]))
    rng = np.random.default_rng(20261204)
    draws = []
    for _ in range(40):
        X1 = rng.standard_normal((int(phi * d), d))
        y1 = np.asarray(TARGET.links[0](X1[:, 0]), dtype=float)
        r = X1.T @ y1 / X1.shape[0]
        if batch == "reused":
            s = X1 @ r - y1 * (X1 * X1).sum(1) / X1.shape[0]
            V = np.stack([r, X1.T @ (y1 * p(s)) / X1.shape[0]])
        else:
            X2 = rng.standard_normal((int(phi2 * d), d))
            y2 = np.asarray(TARGET.links[0](X2[:, 0]), dtype=float)
            V = np.stack([r, X2.T @ y2 / X2.shape[0], X2.T @ (y2 * p(X2 @ r)) / X2.shape[0]])
        draws.append(V @ V.T)
    draws = np.array(draws)
    mean, se = draws.mean(0), draws.std(0, ddof=1) / math.sqrt(len(draws))
    assert np.all(np.abs(gram - mean) <= 4 * se + 1.0 / d), (gram, mean, se)
