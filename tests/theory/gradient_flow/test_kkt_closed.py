"""Closed-form KKT points (rmtfl.theory._gradient_flow.kkt_closed) against their formulas
(docs/theory/gradient_flow.md §5) and the KKT equation."""
import math

import numpy as np

from rmtfl.theory import make_problem
from rmtfl.theory._gradient_flow.kkt_closed import kkt_closed_form, single_neuron_constant


def test_linear_closed_form():
    X = np.array([[1.0, 2.0], [0.5, -1.0], [2.0, 0.0]])
    y = np.array([1.0, -2.0, 0.5])
    c = kkt_closed_form(make_problem(X, y, activation="identity", N=2))
    assert c.method == "linear"
    assert math.isclose(c.value, np.linalg.norm(X.T @ y) / 2, rel_tol=1e-14)


def test_square_closed_form_satisfies_kkt():
    X = np.eye(3)
    y = np.array([1.0, -0.5, -0.3])
    pb = make_problem(X, y, activation="square", N=2)
    c = kkt_closed_form(pb)
    assert c.method == "square"
    assert math.isclose(c.value, 2 / (3 * math.sqrt(3)) * 1.0, rel_tol=1e-14)  # C_3 max|lambda(X^T diag(y) X)|
    assert pb.kkt_residual(c.point) < 1e-12
    assert math.isclose(single_neuron_constant(2), 0.5, rel_tol=1e-15)


def test_quadratic_model_closed_form():
    X = np.diag([2.0, 1.0])
    c = kkt_closed_form(make_problem(X, [1.0, 1.0], activation="quadratic", N=1))
    assert c.method == "quadratic_model" and math.isclose(c.value, 4.0, rel_tol=1e-14)
    assert math.isclose(c.margin, 2 * (4.0 - 1.0), rel_tol=1e-14)
