"""benchmarks/diag_fresh_bulk.py: the exact matrix it compares the widened bulk with (docs/theory/two_step.md §8.2)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from benchmarks.diag_fresh_bulk import exact_bulk, exact_rows
from rmtfl.numerics import gd_steps


@pytest.mark.parametrize("batch", ["fresh", "reused"])
def test_exact_rows_are_w2_less_a_rank_three_part(batch):
    """For sigma = He1 + He2/2 two gradient steps are exact algebra: W_2 minus the rows of ``exact_rows`` is the
    low-rank part a b_1^T + a b_2^T + (a * a) b_3^T (rank 3 at most); any other sigma leaves a full-rank rest."""
    rng = np.random.default_rng(5)
    N = d = 60
    n = 90
    W0, a = rng.standard_normal((N, d)) / math.sqrt(d), rng.standard_normal(N) / math.sqrt(N)
    X1, X2 = rng.standard_normal((n, d)), rng.standard_normal((n, d))
    y1, y2 = X1[:, 0] + (X1[:, 0] ** 2 - 1) / 2, X2[:, 0] + (X2[:, 0] ** 2 - 1) / 2
    if batch == "reused":
        X2, y2 = X1, y1
    M1, M2 = (X.T @ (y[:, None] * X) / n for X, y in ((X1, y1), (X2, y2)))
    eta1, eta2 = 3.0, 5.0
    batches = [(X1, y1), (X2, y2)] if batch == "fresh" else (X1, y1)
    for act, low_rank in (("hermite(0, 1, 0.5)", True), ("tanh", False)):
        W2 = gd_steps(act, W0, a, batches, etas=[eta1, eta2])
        s = np.linalg.svd(W2 - exact_rows(W0, a, M1, M2, eta1, eta2), compute_uv=False)
        assert (s[3] < 1e-10 * s[0]) == low_rank


@pytest.mark.parametrize("quantile_rows, activation", [(False, "hermite(0, 1, 0.5)"), (True, "hermite(0, 1, 0.5)"),
                                                       (False, "tanh")])
def test_exact_bulk_returns_both_batches_with_standard_errors(quantile_rows, activation):
    sims, pred = exact_bulk(0.2, 0.2, N=120, draws=3, ranks=4, quantile_rows=quantile_rows, activation=activation)
    for kind in ("fresh", "reused"):
        m, se = sims[kind]
        assert m.shape == se.shape == (4,) and np.all(np.diff(m) <= 0) and np.all(se > 0)
        assert pred[kind].shape == (4,) and np.all(np.abs(pred[kind] / m - 1) < 0.2)


def test_projected_returns_both_batches_and_refuses_another_sigma():
    sims, pred = exact_bulk(0.3, 0.3, N=120, draws=3, ranks=4, projected=True)
    for kind in ("fresh", "reused"):
        m, se = sims[kind]
        assert m.shape == (4,) and np.all(np.diff(m) <= 0) and np.all(se > 0)
    with pytest.raises(ValueError, match="projected"):
        exact_bulk(0.3, 0.3, N=60, draws=1, ranks=2, projected=True, activation="tanh")
