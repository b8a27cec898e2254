"""The weighted ``N``-side Gram of ``P`` and its factor (docs/theory/two_step.md §8.1, §8.3).

References: the Gram matrix written out entry by entry, and the joint problem's matrix ``J`` built with the symmetric
square root of that Gram (``scipy.linalg.sqrtm``), whose eigenvalues the factor must keep.
"""
import math

import numpy as np
from scipy import linalg

from rmtfl.theory._two_step.joint_roots import ExtremeColumns, JointProblem
from rmtfl.theory._two_step.left_gram import weighted_gram_u

from .mp_bulk import mp_bulk


def test_the_gram_is_the_arrowhead_and_the_factor_its_square_root():
    rng = np.random.default_rng(3)
    g, wg, tau = rng.standard_normal(5), rng.uniform(0.1, 1.0, 5), rng.uniform(0.5, 2.0, 5)
    G = weighted_gram_u(g, wg)
    w = wg * g**2 * tau
    ref = np.zeros((6, 6))
    ref[0, 0] = w.sum()
    ref[0, 1:] = ref[1:, 0] = w
    ref[1:, 1:] = np.diag(w)
    np.testing.assert_allclose(G(tau), ref, rtol=1e-14, atol=1e-15)
    F = G.factor(tau)
    assert F.shape == (5, 6)
    np.testing.assert_allclose(F.T @ F, ref, rtol=1e-14, atol=1e-15)


def test_the_joint_problem_with_the_factor_keeps_the_eigenvalues_of_J():
    """``J`` built with ``F = diag(sqrt(w)) C`` has the eigenvalues of ``J`` built with ``R = G^{1/2}`` but one: the
    ``1`` of ``G``'s null direction (module docstring of :mod:`~rmtfl.theory._two_step.joint_roots`)."""
    N, Q, K = 2000, 4, 3
    bulk = mp_bulk(N)
    rng = np.random.default_rng(7)
    g, wg = np.array([-1.6, -0.5, 0.5, 1.6]), np.array([0.15, 0.35, 0.35, 0.15])
    X = rng.standard_normal((Q + 1, Q + 1))
    G_V = X @ X.T / (Q + 1)
    U = 0.3 * rng.standard_normal((Q + 1, K))
    cols = ExtremeColumns(V=rng.uniform(1.0, 3.0, (K, bulk.a.size)), U=U)
    G_U_w = weighted_gram_u(g, wg)
    jp = JointProblem(bulk, cols, G_U_w, G_V, g, N)
    shift = np.array([0.1, -0.2, 0.0])
    for s in (bulk.edge * 1.05, bulk.edge * 1.5, 4.0):
        x = s * s
        tq, ttm = bulk.tau_rows(g / math.sqrt(N), x)
        R = np.real(linalg.sqrtm(G_U_w(tq)))
        R = (R + R.T) / 2
        D = jp.denominators(s)
        J = np.block([[np.eye(Q + 1) - x * ttm * (R @ (G_V - U @ U.T) @ R), R @ U],
                      [(R @ U).T, np.diag(D - shift)]])
        ref = np.linalg.eigvalsh((J + J.T) / 2)
        got = np.sort(np.concatenate([jp.eig(s, shift), [1.0]]))
        np.testing.assert_allclose(got, ref, atol=1e-7)       # sqrtm of a singular matrix: good to ~1e-8
