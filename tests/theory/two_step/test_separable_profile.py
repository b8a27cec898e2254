"""The separable-profile system, its Newton solver and the continuation to its fold
(rmtfl.theory._two_step.separable_profile; docs/theory/two_step.md §5.5).

Reference values: Marchenko–Pastur edges ``(1 + sqrt(psi))^2`` (closed form), roots of ``v^2 = (2, 3)`` (exact
``sqrt``) and a dense continuation of the branch (steps of 0.002 in ``log|m|``).
"""
import numpy as np
import pytest

from rmtfl.theory._two_step.separable_profile import SeparableProfile, _branch_point, _start_point, fold_edge, newton


@pytest.mark.parametrize("psi", [0.3, 1.0, 2.5])
def test_constant_profile_folds_at_the_marchenko_pastur_edge(psi):
    """One row and column function (``S = 1``): the fold is the MP edge ``(1 + sqrt(psi))^2`` to 1e-11, from any
    starting point above it, and every point on the path solves the system."""
    red = SeparableProfile(np.ones((150, 1)), np.ones((int(150 / psi), 1)), psi=psi)
    for x0 in (10.0, 1e4):
        path = []
        x = fold_edge(red, x0, path)
        assert abs(x - (1 + np.sqrt(psi)) ** 2) < 1e-11 * x
        assert all(np.abs(red.equations(v[:1], v[1:], xp)).max() < 1e-11 * xp for xp, v in path)


def test_newton_finds_the_hybrid_methods_root_and_refuses_where_there_is_none():
    """The continuation's Newton solver: the root of a smooth system to its ``xtol`` from a nearby guess (here
    ``v^2 = (2, 3)``, exact ``sqrt``), ``None`` where the residual cannot fall (``v^2 + 1 = 0`` has no real root)."""
    from scipy import optimize

    
    def fun(v):
        return v * v - np.array([2.0, 3.0])

    def jac(v):
        return np.diag(2 * v)

    v = newton(fun, jac, [1.3, 1.8], xtol=1e-13)
    assert np.allclose(v, np.sqrt([2.0, 3.0]), rtol=0, atol=1e-13)
    hybr = optimize.root(fun, [1.3, 1.8], jac=jac, method="hybr", options={"xtol": 1e-13}).x
    assert np.allclose(v, hybr, rtol=1e-13)
    assert newton(lambda v: v * v + 1.0, lambda v: np.diag(2 * v), [0.5, 0.7], xtol=1e-13) is None


#: Profiles where the edge is hard to reach (reused batch, N = 1000): gelu with He1 + He2/2, where steps of the
#: tangent predictor up to 1 in log|m| crossed the end of the branch and returned another branch's fold, 12 % too
#: high; the quadratic sigma with He1 + He3/sqrt6 at (0.1, 0.3), where the branch ends with x still falling, so the
#: edge is its last point, and at (0.2, 0.3), where it ends 0.002 in log|m| past a fold (so it did before the
#: remainder of docs/theory/two_step.md §8.2 was corrected, when an older continuation missed that fold by 1.2e-4;
#: with the old columns of the bulk, docs/theory/two_step.md §8.2, it ended before turning).  Last field: whether the
#: branch turns before it ends.
HARD_FOLDS = [("gelu", "hermite(0, 1, 0.5)", 0.2925, 0.3825, True),
              ("hermite(0, 1, 0.5)", "hermite(0, 1, 0, 0.4082482904638631)", 0.1, 0.3, False),
              ("hermite(0, 1, 0.5)", "hermite(0, 1, 0, 0.4082482904638631)", 0.2, 0.3, True)]


@pytest.mark.parametrize("act,tgt,a1,a2,turns", HARD_FOLDS)
def test_fold_edge_is_the_minimum_of_a_dense_continuation(monkeypatch, act, tgt, a1, a2, turns):
    """The edge of the finite-N bulk (the bulk without the 12 most extreme samples) against the branch followed in
    steps of 0.002 in log|m|: never above its lowest point; within 2e-5 of it where x(m) turns (the scan's own
    resolution), and within 2e-4 below it where the branch ends first (fold_edge follows it closer to its end)."""
    import rmtfl.theory._two_step.widened_bulk as wb
    from rmtfl.theory import two_step

    seen = []
    monkeypatch.setattr(wb, "fold_edge", lambda red, x0, *path: seen.append((red, x0)) or fold_edge(red, x0, *path))
    two_step(act, tgt, psi=1.0, phi=2.0, eta1=1000**a1, eta2=1000**a2, N=1000)
    red, x0 = seen[0]
    p = _start_point(red, x0)
    xs = [p[1][-1]]
    while (q := _branch_point(red, p[0] + 0.002, p)) is not None:
        p = q
        xs.append(p[1][-1])
    dense, x_fold = min(xs), fold_edge(red, x0)
    assert len(xs) > 2000 and (xs[-1] > dense) == turns
    assert dense * (1 - (2e-5 if turns else 2e-4)) < x_fold <= dense * (1 + 1e-13)


def test_fold_edge_path_holds_the_resolvent_kernels_above_the_fold():
    """Each point ``fold_edge`` hands on solves the reduced system at its ``x`` (residual below 1e-11) and lies above
    the fold; the widened bulk starts its kernel cache from them (docs/theory/two_step.md §5.5)."""

    g = np.linspace(-2.0, 2.0, 41)
    rowf = np.stack([np.ones_like(g), (1 + 0.3 * g) ** 2], axis=1)
    lam = np.linspace(0.2, 3.0, 60)
    colh = np.stack([np.ones_like(lam), lam], axis=1)
    red = SeparableProfile(rowf, colh, 0.5)
    path = []
    x_edge = fold_edge(red, 200.0, path)
    assert len(path) > 5 and all(x >= x_edge for x, _ in path)
    for x, v in path:
        assert np.abs(red.equations(v[:red.K], v[red.K:], x)).max() < 1e-11 * (1 + abs(x))
    assert fold_edge(red, 200.0) == x_edge
