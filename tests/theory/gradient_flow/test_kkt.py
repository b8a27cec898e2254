"""KKT points of the constrained NCF: closed forms against the numerical search (issue 5 acceptance: 1e-8)."""
import math

import numpy as np
import pytest

from rmtfl.theory import ncf_kkt
from rmtfl.theory import flow_example
from rmtfl.theory import KKTSearchError
from rmtfl.theory._gradient_flow.kkt import sphere_starts
from rmtfl.theory._gradient_flow.kkt_closed import single_neuron_constant

EX1 = flow_example("check1")
X5, Y5 = EX1.X, EX1.y


def test_check1_linear_unit_reference():
    # docs/theory/gradient_flow.md §14 Check 1: N* = 0.5632717, u* = (0.7071068, 0.4456516, 0.5460801, 0.0564910),
    # Riemannian Hessian eigenvalues (-2.2530868, -1.1265434, -1.1265434)
    r = ncf_kkt(X5, Y5, activation="identity", N=1)
    assert r.value == pytest.approx(0.5632717, abs=5e-8)
    np.testing.assert_allclose(r.point, [0.7071068, 0.4456516, 0.5460801, 0.0564910], atol=5e-8)
    np.testing.assert_allclose(sorted(r.tangent_eigs), [-2.2530868, -1.1265434, -1.1265434], atol=1e-6)
    assert r.margin == pytest.approx(2 * r.value, rel=1e-6) and r.degree == 2


def test_check2_square_reference():
    # docs/theory/gradient_flow.md §14 Check 2: N* = 2/(3 sqrt 3), tangent eigenvalues / N* in {-6, -4.5, -3.9, -3}, maxima {0.3849, 0.19245}
    r = ncf_kkt(np.eye(3), [1.0, -0.5, -0.3], activation="square", N=4)
    assert r.value == pytest.approx(2 / (3 * math.sqrt(3)), abs=1e-14)
    assert set(np.round(r.tangent_eigs / r.value, 6)) == {-6.0, -4.5, -3.9, -3.0}
    assert r.margin == pytest.approx(3 * r.value, rel=1e-7)
    assert [round(p.value, 5) for p in r.all] == [0.3849, 0.19245]
    assert all(p.active_units == 1 for p in r.all)
    a, w = r.point[0], r.point[4:7]
    assert a == pytest.approx(3 ** -0.5) and np.allclose(w, [math.sqrt(2 / 3), 0, 0])


@pytest.mark.parametrize("act,N,depth", [
    ("identity", 1, 2), ("identity", 3, 2), ("quadratic", 2, 2), ("square", 4, 2),
    ("relu^2", 3, 2), ("relu^3", 2, 2), ("identity", 2, 3), ("square", 3, 3)])
def test_closed_form_matches_search(act, N, depth):
    closed = ncf_kkt(X5, Y5, activation=act, N=N, depth=depth, method="closed")
    found = ncf_kkt(X5, Y5, activation=act, N=N, depth=depth, method="search", restarts=20)
    assert abs(closed.value - found.value) <= 1e-8          # issue 5 acceptance
    assert closed.residual < 1e-9 and found.residual < 1e-9
    if depth == 2 and act not in ("identity", "quadratic"):
        assert all(p.active_units == 1 for p in found.all)  # docs/theory/gradient_flow.md §5.2 single active neuron (L > 2)
    if depth == 3 and act == "square":
        assert all(p.active_units == 2 for p in found.all)  # docs/theory/gradient_flow.md §5.3 one unit per hidden layer


def test_square_closed_form_constant():
    # N* = 2/(3 sqrt 3) max|lambda(M)|, M = X^T diag(y) X, largest modulus
    lam = np.linalg.eigvalsh(X5.T @ (Y5[:, None] * X5))
    r = ncf_kkt(X5, Y5, activation="square", N=2)
    assert r.value == pytest.approx(single_neuron_constant(3) * np.abs(lam).max(), rel=1e-13)
    assert single_neuron_constant(3) == pytest.approx(0.3849002, abs=1e-7)


def test_deep_single_path_layer_norms():
    # docs/theory/gradient_flow.md §5.3 [d, h, h, 1] with z^2: layer norms^2 (4/7, 2/7, 1/7), N* = 32/(343 sqrt 7) max|sum e_i <a, x_i>^4|
    r = ncf_kkt(X5, Y5, activation="square", N=4, depth=3)
    W1, W2, W3 = r.point[:12], r.point[12:28], r.point[28:]
    np.testing.assert_allclose([W1 @ W1, W2 @ W2, W3 @ W3], [4 / 7, 2 / 7, 1 / 7], atol=1e-9)
    assert r.degree == 7


def test_linear_manifold_has_zero_margin():
    r = ncf_kkt(X5, Y5, activation="identity", N=3)
    assert r.margin == 0.0 and r.value == pytest.approx(np.linalg.norm(X5.T @ Y5) / 2, rel=1e-14)


def test_logistic_ebar_halves_the_value():
    sq = ncf_kkt(X5, Y5, activation="identity", N=1)
    lg = ncf_kkt(X5, Y5, activation="identity", N=1, loss="logistic")
    assert lg.value == pytest.approx(sq.value / 2, rel=1e-14)


def test_relu_enumeration_and_flag():
    # docs/theory/gradient_flow.md §5.4: enumeration (exact) vs a dense sample of the sphere; outside the theory -> smooth False
    r = ncf_kkt(X5, Y5, activation="relu", N=1, method="closed")
    U = np.random.default_rng(0).standard_normal((200000, 3))
    U /= np.linalg.norm(U, axis=1)[:, None]
    q = np.maximum(U @ X5.T, 0) @ Y5
    assert r.value >= max(q.max(), -q.min()) / 2 - 1e-12
    assert r.value == pytest.approx(max(q.max(), -q.min()) / 2, abs=2e-4)
    assert not r.smooth


def test_search_failure_is_raised(monkeypatch):
    import rmtfl.theory._gradient_flow.kkt as kkt

    monkeypatch.setattr(kkt, "RESIDUAL_TOL", 1e-300)  # nothing can converge
    with pytest.raises(KKTSearchError, match="did not converge"):
        ncf_kkt(X5, Y5, activation="relu^2", N=2, method="search", restarts=2)


def test_search_is_deterministic():
    # theory is deterministic: no rng; the search starts from fixed Sobol directions
    a = ncf_kkt(X5, Y5, activation="relu^2", N=3, method="search")
    b = ncf_kkt(X5, Y5, activation="relu^2", N=3, method="search")
    assert np.array_equal(a.point, b.point) and len(a.all) == len(b.all)
    assert [p.hits for p in a.all] == [p.hits for p in b.all]


def test_sphere_starts_are_fixed_generic_unit_vectors():
    U = sphere_starts(16, 20)
    assert U.shape == (20, 16) and np.array_equal(U, sphere_starts(16, 20))
    np.testing.assert_allclose(np.linalg.norm(U, axis=1), 1.0, rtol=1e-14)
    assert np.all(np.isfinite(U)) and np.all(U != 0.0)          # no corner / centre point
    assert np.array_equal(sphere_starts(16, 5), U[:5])           # a prefix of the same sequence
    assert np.linalg.matrix_rank(U) == 16


@pytest.mark.parametrize("name,maxima", [
    ("square5", [0.787162158, 0.277865966]), ("relu2", [0.56715392, 0.423676984, 0.253412825]),
    ("deep", [0.07450719, 0.032516837])])
def test_search_finds_every_local_maximum(name, maxima):
    # the local maxima the former Gaussian restarts found for every seed (20 restarts), single-neuron / single-path
    ex = flow_example(name)
    r = ncf_kkt(ex.X, ex.y, method="search", **ex.settings)
    assert [round(p.value, 9) for p in r.all] == maxima
    assert all(p.residual < 1e-9 for p in r.all)


def test_theory_takes_no_rng():
    import inspect

    from rmtfl.theory import escape_time, first_saddle, limiting_path, make_problem
    for fn in (ncf_kkt, escape_time, first_saddle, limiting_path, make_problem):
        params = inspect.signature(fn).parameters
        assert "rng" not in params and "width" not in params and "N" in params, fn.__name__
