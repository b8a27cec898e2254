"""Sphere geometry of the KKT problem (rmtfl.theory._gradient_flow.kkt_geometry): exact references."""
import numpy as np

from rmtfl.theory import make_problem
from rmtfl.theory._gradient_flow.kkt_geometry import (riemannian_hessian_eigs, sphere_argmax, tangent_basis,
                                                      tangent_margin)


def test_tangent_basis_is_an_orthonormal_complement():
    u = np.random.default_rng(0).standard_normal(7)
    B = tangent_basis(u)
    assert B.shape == (7, 6)
    np.testing.assert_allclose(B.T @ B, np.eye(6), atol=1e-14)
    np.testing.assert_allclose(u @ B, 0.0, atol=1e-14)


def test_sphere_argmax_of_a_quadratic_form_is_its_top_eigenvector():
    g = np.random.default_rng(1)
    Q, _ = np.linalg.qr(g.standard_normal((5, 5)))
    M = (Q * np.array([3.0, 2.0, 1.0, 0.5, -1.0])) @ Q.T
    u = sphere_argmax(lambda x: float(x @ M @ x), lambda x: 2 * M @ x, 2, np.ones(5))
    assert abs(abs(u @ Q[:, 0]) - 1.0) < 1e-10


def test_riemannian_hessian_of_the_linear_model():
    # two-layer linear, N = 1: N(u) = a <w, m> with m = X^T y = (3, 4), u* = (1, m/|m|)/sqrt 2, N* = |m|/2;
    # its margin is Delta = |m| (the closed form of kkt_closed_form, method "linear")
    pb = make_problem(np.eye(2), [3.0, 4.0], activation="identity", N=1)
    u = np.r_[1.0, 0.6, 0.8] / np.sqrt(2)
    eigs = riemannian_hessian_eigs(pb, u)
    assert eigs.shape == (2,) and np.all(np.diff(eigs) <= 0)
    assert tangent_margin(eigs, 5.0) == -eigs[0]
    assert abs(-eigs[0] - 5.0) < 1e-5  # the margin Delta = |m| = 5
    assert tangent_margin(np.array([1e-9]), 1.0) == 0.0
