"""Tests of rmtfl.theory.rf_kernel (and kernel_from_scalars, the truncation bounds, gram_block): closed forms vs independent quadrature, Gram blocks, bad input.

Reference values: docs/theory/spiked_kernel.md §9 (relu 0.6089977810 and step 1/3 at d=3, theta=pi/3, |x'|=2).
Independent quadrature: E[s(u) s(v)] with v = c/s u + sqrt(s' - c^2/s) g2, the g2 integral done in
closed form for each activation (relu: a Phi(a/b) + b phi(a/b); step: Phi(a/b);
erf: erf(a/sqrt(1 + 2 b^2))) and the remaining 1-d Gaussian integral by scipy.integrate.quad.
"""
import math

import numpy as np
import pytest
from scipy import integrate, special

from rmtfl.theory import (SpikedGamma, arccos_kernel, dk_dB, dk_dB_relu, gram_block, kernel_from_scalars,
                          kernel_truncation_error, mehler_coefficients, rf_kernel, rf_kernel_error)


def _inner(name, a, b):
    if name == "relu":
        return a * special.ndtr(a / b) + b * math.exp(-a * a / (2 * b * b)) / math.sqrt(2 * math.pi)
    if name == "step":
        return special.ndtr(a / b)
    if name == "erf":
        return special.erf(a / math.sqrt(1 + 2 * b * b))
    raise AssertionError(name)


def _outer(name, u):
    return {"relu": max(u, 0.0), "step": float(u > 0), "erf": special.erf(u)}[name]


def quad_kernel(name, s, s2, c):
    su = math.sqrt(s)
    b = math.sqrt(s2 - c * c / s)

    def f(g):
        u = su * g
        return _outer(name, u) * _inner(name, c / s * u, b) * math.exp(-g * g / 2) / math.sqrt(2 * math.pi)

    lo, hi = (0.0, np.inf) if name in ("relu", "step") else (-np.inf, np.inf)
    return integrate.quad(f, lo, hi, epsabs=1e-14, epsrel=1e-13, limit=200)[0]


@pytest.mark.parametrize("name", ["relu", "step", "erf"])
@pytest.mark.parametrize("s,s2,c", [(1.0, 1.0, 0.3), (0.7, 2.5, -0.9), (2.0, 0.5, 0.99), (1.3, 1.1, 0.0)])
def test_closed_forms_match_independent_quadrature(name, s, s2, c):
    assert abs(float(kernel_from_scalars(name, s, s2, c)) - quad_kernel(name, s, s2, c)) < 1e-9


def test_spec_reference_values():
    x, x2 = np.array([1.0, 0, 0]), np.array([1.0, math.sqrt(3), 0])
    assert abs(rf_kernel("relu", x, x2, gamma=np.eye(3)) - 0.6089977810) < 1e-10
    assert abs(rf_kernel("step", x, x2, gamma=np.eye(3)) - 1 / 3) < 1e-14


def test_relu_squared_against_quadrature():
    # E[relu(u)^2 relu(v)^2]: closed-form inner Gaussian integral, 1-d quad outside
    s, s2, c = 1.2, 0.8, 0.5
    b = math.sqrt(s2 - c * c / s)

    def inner(a):  # E[relu(a + b g)^2] = (a^2 + b^2) Phi(a/b) + a b phi(a/b)
        return (a * a + b * b) * special.ndtr(a / b) + a * b * math.exp(-a * a / (2 * b * b)) / math.sqrt(2 * math.pi)

    f = (lambda g: (math.sqrt(s) * g) ** 2 * inner(c / math.sqrt(s) * g) * math.exp(-g * g / 2)
         / math.sqrt(2 * math.pi))
    ref = integrate.quad(f, 0, np.inf, epsabs=1e-14, epsrel=1e-13)[0]
    assert abs(float(arccos_kernel(2, s, s2, c)) - ref) < 1e-9


def test_mehler_matches_2d_gauss_hermite():
    # tanh: 2-d tensor Gauss-Hermite (order 120, analytic integrand) as the independent reference
    s, s2, c = 0.8, 1.5, 0.6
    x, w = special.roots_hermitenorm(120)
    w = w / w.sum()
    b = math.sqrt(s2 - c * c / s)
    U = math.sqrt(s) * x[:, None]
    V = c / s * U + b * x[None, :]
    ref = float(w @ (np.tanh(U) * np.tanh(V)) @ w)
    val = kernel_from_scalars("tanh", s, s2, c, kmax=60)
    err = kernel_truncation_error("tanh", s, s2, kmax=60)
    assert err < 1e-9
    assert abs(float(val) - ref) < 1e-9


def test_mehler_on_a_row_against_a_column_equals_the_pairwise_values():
    # the series keeps its coefficients in the shapes of s and s2 (a broadcast row against a column); each entry
    # must be the scalar call at its own pair, to rounding
    rng = np.random.default_rng(3)
    s, s2 = rng.uniform(0.2, 2.0, 7), rng.uniform(0.2, 2.0, 5)
    c = 0.9 * np.sqrt(s[:, None] * s2[None, :]) * rng.uniform(-1.0, 1.0, (7, 5))
    K = kernel_from_scalars("gelu", s[:, None], s2[None, :], c, kmax=30)
    assert K.shape == (7, 5)
    ref = [[float(kernel_from_scalars("gelu", a, b, c[i, j], kmax=30)) for j, b in enumerate(s2)]
           for i, a in enumerate(s)]
    assert np.allclose(K, ref, rtol=1e-13, atol=1e-15)
    assert kernel_from_scalars("tanh", 1.0, s2, 0.3).shape == (5,)


def test_mehler_truncation_bound_is_honest():
    exact = float(kernel_from_scalars("tanh", 1.0, 1.0, 0.7, kmax=80))
    for kmax in (3, 7, 15):
        val = kernel_from_scalars("tanh", 1.0, 1.0, 0.7, kmax=kmax)
        err = kernel_truncation_error("tanh", 1.0, 1.0, kmax=kmax)
        assert abs(float(val) - exact) <= err + 1e-14
    assert kernel_truncation_error("relu", 1.0, 2.0) == 0.0  # closed forms are exact


def test_rf_kernel_error_bounds_the_gram_truncation():
    rng = np.random.default_rng(5)
    X, X2 = rng.standard_normal((6, 4)), rng.standard_normal((3, 4))
    exact = rf_kernel("tanh", X, X2, gamma=0.5, kmax=80)
    for kmax in (3, 7):
        err = rf_kernel_error("tanh", X, X2, gamma=0.5, kmax=kmax)
        assert 0 < err and np.abs(rf_kernel("tanh", X, X2, gamma=0.5, kmax=kmax) - exact).max() <= err + 1e-14
    assert rf_kernel_error("erf", X, gamma=0.5) == 0.0
    # the Gram-block form: same numbers as rf_kernel, error from the diagonal scalars
    s, s2 = 0.5 * (X * X).sum(1), 0.5 * (X2 * X2).sum(1)
    K = gram_block("tanh", 0.5 * X, X2, s, s2, kmax=7)
    assert np.allclose(K, rf_kernel("tanh", X, X2, gamma=0.5, kmax=7), atol=1e-13)
    assert rf_kernel_error("tanh", X, X2, gamma=0.5, kmax=7) == pytest.approx(
        kernel_truncation_error("tanh", s[:, None], s2[None, :], kmax=7), rel=1e-12)


def test_gram_block_backend_argument():
    X = np.array([[1.0, 0.0], [0.6, 0.8]])
    ref = gram_block("relu", X, X, np.ones(2), np.ones(2))
    assert np.array_equal(gram_block("relu", X, X, np.ones(2), np.ones(2), backend=np), ref)
    assert np.array_equal(gram_block("relu", X, X, np.ones(2), np.ones(2), backend=None), ref)
    with pytest.raises(ValueError, match="backend"):
        gram_block("relu", X, X, np.ones(2), np.ones(2), backend="cupy")


def test_gram_block_matches_scalar_loop_and_dense_gamma():
    rng = np.random.default_rng(0)
    d = 7
    X, Xp = rng.standard_normal((9, d)), rng.standard_normal((5, d))
    v = rng.standard_normal(d)
    G = SpikedGamma(0.4, 1.7, v)
    for act in ("relu", "step", "erf", "tanh"):
        K = rf_kernel(act, X, Xp, gamma=(0.4, 1.7, v))
        Kd = rf_kernel(act, X, Xp, gamma=G.dense())
        ref = np.array([[kernel_from_scalars(act, x @ G.dense() @ x, y @ G.dense() @ y, x @ G.dense() @ y)
                         for y in Xp] for x in X])
        assert np.allclose(K, Kd, atol=1e-13)
        assert np.allclose(K, ref, atol=1e-12)


def test_monte_carlo_spiked_relu():
    rng = np.random.default_rng(1)
    d = 4
    v = np.array([1.0, 1.0, 0, 0]) / math.sqrt(2)
    x, xp = rng.standard_normal(d), rng.standard_normal(d)
    W = rng.standard_normal((400_000, d)) * math.sqrt(0.5)
    W += math.sqrt(2.0) * rng.standard_normal(400_000)[:, None] * v  # Gamma = 0.5 I + 2 v v^T
    f = np.maximum(W @ x, 0) * np.maximum(W @ xp, 0)
    mc, se = f.mean(), f.std() / math.sqrt(f.size)
    assert abs(rf_kernel("relu", x, xp, gamma=(0.5, 2.0, v)) - mc) < 4 * se


def test_homogeneity():
    rng = np.random.default_rng(2)
    X = rng.standard_normal((4, 5))
    v = rng.standard_normal(5)
    assert np.allclose(rf_kernel("relu", X, gamma=(3.0, 6.0, v)), 3 * rf_kernel("relu", X, X, gamma=(1.0, 2.0, v)))
    assert np.allclose(rf_kernel("step", X, X, gamma=(3.0, 6.0, v)), rf_kernel("step", X, gamma=(1.0, 2.0, v)))


def test_dk_dB_relu_matches_finite_difference():
    rng = np.random.default_rng(3)
    d = 6
    X, Xp = rng.standard_normal((5, d)), rng.standard_normal((4, d))
    v = rng.standard_normal(d)
    v /= np.linalg.norm(v)
    for A in (1.0, 0.25):
        h = 1e-5
        G = lambda B: A * np.eye(d) + B * np.outer(v, v)  # noqa: E731
        fd = (rf_kernel("relu", X, Xp, gamma=G(h)) - rf_kernel("relu", X, Xp, gamma=G(-h))) / (2 * h)
        assert np.abs(fd - dk_dB_relu(X, Xp, v)).max() < 1e-8
    # generic path (central difference) agrees with the closed form for relu-like usage via erf check
    e = dk_dB("erf", X[0], Xp[0], v)
    G = lambda B: np.eye(d) + B * np.outer(v, v)  # noqa: E731
    fd = (rf_kernel("erf", X[0], Xp[0], gamma=G(1e-6)) - rf_kernel("erf", X[0], Xp[0], gamma=G(-1e-6))) / 2e-6
    assert abs(e - fd) < 1e-7


def test_mehler_coefficients_relu_scaling():
    C, R = mehler_coefficients("relu", [1.0, 4.0], kmax=10)
    assert np.allclose(C[1], 2 * C[0])
    assert R[0] > 0
    mc = mehler_coefficients("relu", [1.0, 4.0], kmax=10)
    assert mc.coefficients is not None and np.array_equal(mc.tail, R) and mc.coefficients.shape == (2, 11)


@pytest.mark.parametrize("gamma,msg", [
    (np.array([[1.0, 0, 0], [0, -1.0, 0], [0, 0, 1.0]]), "positive semi-definite"),
    (np.eye(4), "shape"),
    ((-1.0, 0.5, np.ones(3)), "A must be >= 0"),
    ((1.0, -0.5, np.ones(3)), "B must be >= 0"),
    ((1.0, 0.5, np.ones(4)), "spike direction"),
    (np.array([[1.0, 0.5, 0], [0, 1.0, 0], [0, 0, 1.0]]), "symmetric"),
])
def test_bad_gamma(gamma, msg):
    x = np.ones((2, 3))
    with pytest.raises(ValueError, match=msg):
        rf_kernel("relu", x, x, gamma=gamma)


def test_mismatched_inputs():
    with pytest.raises(ValueError, match="same dimension"):
        rf_kernel("relu", np.ones((2, 3)), np.ones((2, 4)), gamma=1.0)


def test_dimension_below_two_is_refused():
    # issue 4 "Bad input": d < 2 raises ValueError with the reason
    with pytest.raises(ValueError, match="d must be >= 2"):
        rf_kernel("relu", np.ones((3, 1)), np.ones((2, 1)), gamma=1.0)


def test_as_gamma_bounds_d_and_never_forms_a_square_matrix():
    """A scalar gamma is A I with any unit spike direction (B = 0): O(d) memory, not the d x d identity it once took
    a row of; d beyond 1e8 is refused naming d (once numpy's "array is too big")."""
    from rmtfl.theory import as_gamma

    g = as_gamma(0.5, d=10**7)
    assert g.A == 0.5 and g.B == 0.0 and g.d == 10**7 and g.v[0] == 1.0
    with pytest.raises(ValueError, match=r"d must be an integer in \[1, 100000000\]"):
        as_gamma(0.5, d=10**12)
