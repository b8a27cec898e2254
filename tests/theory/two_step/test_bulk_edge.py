"""Deterministic bulk edge of W_2 for sigma = He1 + c2 He2, reused batch (rmtfl.theory._two_step.bulk_edge).

Reference values: Marchenko–Pastur edges ``1 + sqrt(psi)`` (closed form); the second moment of the
weighted MP law ``E l^2 = E y^2 / phi + (E y)^2`` (trace expansion of tr M^2 / d); everything else is
checked against direct simulation of ``H = W_0 + s1 diag(a) W_0 M + s2 diag(a^2) W_0 M^2`` with
tolerances from the fluctuation scale (Tracy–Widom: ``N^{-2/3}`` times the edge, plus 3 s.e. over seeds).
"""
import math

import numpy as np
import pytest

from rmtfl.theory import make_target, mp_stieltjes, two_step_bulk_edge
from rmtfl.theory._two_step.bulk_edge import y_law, weighted_mp_quantiles, weighted_mp_stieltjes

HE2_T = [0.0, 1.0, 2 ** -0.5]          # z + He2 / sqrt 2
QUAD = "hermite(0, 1, 0.5)"            # He1 + He2/2


def _edge(target, psi, phi, eta1, eta2, N, activation=QUAD, **kw):
    return two_step_bulk_edge(activation, target, psi=psi, phi=phi, eta1=eta1, eta2=eta2, N=N, **kw)


def _g(spec):
    return (lambda z: z) if spec == "linear" else (lambda z: z + (z ** 2 - 1) / math.sqrt(2))


def _sim_tops(spec, N, d, n, eta1, eta2, seeds, c2=0.5):
    g = _g(spec)
    s1, s2 = 2 * c2 * (eta1 + eta2), 4 * c2 ** 2 * eta1 * eta2
    tops = []
    for seed in seeds:
        r = np.random.default_rng(seed)
        W0 = r.standard_normal((N, d)) / math.sqrt(d)
        a = r.standard_normal(N) / math.sqrt(N)
        X = r.standard_normal((n, d))
        M = (X.T * g(X[:, 0])) @ X / n
        WM = W0 @ M
        H = W0 + s1 * a[:, None] * WM + s2 * (a ** 2)[:, None] * (WM @ M)
        tops.append(np.linalg.norm(H, 2))
    tops = np.array(tops)
    return tops.mean(), tops.std(ddof=1) / math.sqrt(len(tops))


@pytest.mark.parametrize("c2", [0.5, 0.3])
def test_two_step_algebra_exact(c2):
    # W_2 = H + (eta1+eta2) a bh^T + 2 c2 eta1 eta2 a^2 (M bh)^T, to rounding
    r = np.random.default_rng(0)
    N, d, n, e1, e2 = 30, 25, 50, 3.0, 5.0
    W0 = r.standard_normal((N, d)) / math.sqrt(d)
    a = r.standard_normal(N) / math.sqrt(N)
    X = r.standard_normal((n, d))
    y = X[:, 0] + 0.3 * (X[:, 0] ** 2 - 1)
    W = W0.copy()
    for eta in (e1, e2):   # correlation loss, sigma' = 1 + 2 c2 z
        W = W + eta * a[:, None] * (((1 + 2 * c2 * (W @ X.T)) * y[None, :]) @ X) / n
    M, bh = (X.T * y) @ X / n, X.T @ y / n
    s1, s2 = 2 * c2 * (e1 + e2), 4 * c2 ** 2 * e1 * e2
    H = W0 + s1 * a[:, None] * (W0 @ M) + s2 * (a ** 2)[:, None] * (W0 @ M @ M)
    low = (e1 + e2) * np.outer(a, bh) + 2 * c2 * e1 * e2 * np.outer(a ** 2, M @ bh)
    assert np.abs(W - low - H).max() < 1e-12


@pytest.mark.parametrize("psi", [0.5, 1.0, 2.0])
def test_constant_profile_is_marchenko_pastur(psi):
    # eta = 0 (or c2 = 0): H = W_0, edge 1 + sqrt(psi) exactly
    assert _edge("linear", psi, 2.0, 0.0, 0.0, 300) == pytest.approx(1 + math.sqrt(psi), abs=1e-9)
    assert _edge("linear", psi, 2.0, 5.0, 5.0, 300, activation="he1") == pytest.approx(1 + math.sqrt(psi), abs=1e-9)


def test_weighted_mp_reduces_to_mp():
    x = np.linspace(0.2, 2.8, 7)
    m = weighted_mp_stieltjes(x, np.array([1.0]), np.array([1.0]), 2.0)
    ref = -mp_stieltjes(x + 1e-9j, 0.5)           # opposite sign convention in rmtfl.theory._classical.mp
    assert np.allclose(m, ref, atol=1e-6)


@pytest.mark.parametrize("spec,noise", [("linear", 0.0), (HE2_T, 0.0), (HE2_T, 0.5), ([0.0, 1.0, 0.0, 0.4], 0.0)])
@pytest.mark.parametrize("phi", [0.3, 2.0, 8.0])
def test_weighted_mp_stieltjes_solves_its_equation_on_the_physical_branch(spec, noise, phi):
    """At ``z = x + 1e-9 i`` across and around the support, the returned ``m`` solves
    ``m (-z + E[y / (1 + y m / phi)]) = 1`` to 1e-12 and has ``Im m >= 0``: the one solution of a Stieltjes transform
    (Silverstein–Choi), whatever path the solver took to it."""
    y, w = y_law(make_target(spec, noise=noise))
    s = (1 + phi ** -0.5) ** 2
    sd = math.sqrt(w @ y ** 2)
    x = np.concatenate([np.linspace(s * min(y.min(), 0.0) - 1.0, s * max(y.max(), 0.0) + 1.0, 300),
                        np.linspace(-4 * s * sd, 4 * s * sd, 300)])       # everywhere, and finely where most mass is
    m = weighted_mp_stieltjes(x, y, w, phi)
    keep = w > 1e-16 * w.max()
    S = (1.0 / (1.0 + np.outer(m, y[keep]) / phi)) @ (w[keep] * y[keep])
    assert np.abs(m * (-(x + 1e-9j) + S) - 1).max() < 1e-12
    assert m.imag.min() >= 0
    assert (m.imag > 1e-6).sum() > 30                 # the grid does cross the support


@pytest.mark.parametrize("spec", ["linear", HE2_T])
def test_weighted_mp_law_against_sampled_eigenvalues(spec):
    d, n = 400, 800
    y, w = y_law(make_target(spec))
    q = weighted_mp_quantiles(y, w, n / d, d)
    # exact moments of the density: mass 1, E l = E y, E l^2 = E y^2 / phi + (E y)^2
    ey, ey2 = float(w @ y), float(w @ y ** 2)
    x = np.linspace(-6.0, 30.0, 8000)
    rho = weighted_mp_stieltjes(x, y, w, n / d).imag / np.pi
    mom = [np.trapezoid(x ** k * rho, x) for k in (0, 1, 2)]
    assert mom == pytest.approx([1.0, ey, ey2 * d / n + ey ** 2], abs=1e-4)
    g = _g(spec)
    ks = []
    for seed in range(3):
        r = np.random.default_rng(seed)
        X = r.standard_normal((n, d))
        ev = np.sort(np.linalg.eigvalsh((X[:, 1:].T * g(X[:, 0])) @ X[:, 1:] / n))  # spike direction removed
        F = np.interp(ev, q, (np.arange(d) + 0.5) / d)
        ks.append(np.max(np.abs(F - (np.arange(d - 1) + 0.5) / (d - 1))))
    # the ESD of M fluctuates at O(n^{-1/2}) (through the empirical law of y): KS <= 2 / sqrt(n) = 0.071
    assert np.mean(ks) < 2 / math.sqrt(n), ks


@pytest.mark.parametrize("spec", ["hermite(0, 1, 0, 0, 0.2)", "hermite(0, 0, 0, 0, 1)"])
def test_weighted_mp_law_of_a_degree_four_link(spec):
    """A link of degree 4 spreads islands of the law of M out to ``(1 + phi^-1/2)^2 max y``, about 2e4 here: on a
    linear grid over them (the default's 1500 points) the bulk got under 25 points and the 0.5 % to 99.5 % points
    were off by up to 3 units.  Against a fine linear grid over the bulk (up to the 99.999 % point) the
    quantiles agree to 2e-3, and the eigenvalues of a sampled M follow the tabulated law (KS distance as above)."""
    from rmtfl.theory._two_step.bulk_edge import MIN_BULK_POINTS, weighted_mp_cdf

    phi, d = 2.0, 400
    y, w = y_law(make_target(spec))
    x, F = weighted_mp_cdf(y, w, phi)
    assert np.count_nonzero((F > 0.005) & (F < 0.995)) >= MIN_BULK_POINTS
    ps = np.array([0.01, 0.5, 0.99, 0.999])
    q = np.interp(ps, F, x)
    xr = np.linspace(x[0], np.interp(0.99999, F, x), 40001)
    rho = np.maximum(weighted_mp_stieltjes(xr, y, w, phi).imag, 0.0) / np.pi
    Fr = np.concatenate([[0.0], np.cumsum((rho[1:] + rho[:-1]) / 2 * np.diff(xr))])
    assert Fr[-1] == pytest.approx(1.0, abs=1e-4)
    assert np.all(np.abs(q - np.interp(ps, Fr, xr)) <= 2e-3 * (1 + np.abs(q))), (q, np.interp(ps, Fr, xr))
    g = make_target(spec).links[0]
    r = np.random.default_rng(3)
    X = r.standard_normal((int(phi * d), d))
    ev = np.sort(np.linalg.eigvalsh((X[:, 1:].T * g(X[:, 0])) @ X[:, 1:] / X.shape[0]))
    Fe = np.interp(ev, x, F)
    assert np.max(np.abs(Fe - (np.arange(d - 1) + 0.5) / (d - 1))) < 2 / math.sqrt(phi * d)


def test_edge_against_simulation_small():
    N = d = 400
    n = 800
    e1, e2 = N ** 0.3, N ** 0.1
    pred = _edge("linear", 1.0, 2.0, e1, e2, N)
    mean, se = _sim_tops("linear", N, d, n, e1, e2, range(8))
    assert abs(mean - pred) < 3 * se + 1.5 * N ** (-2 / 3) * pred, (pred, mean, se)


@pytest.mark.slow
@pytest.mark.parametrize("spec,alphas", [("linear", (0.3, 0.3)), ("linear", (0.4, 0.4)),
                                         (HE2_T, (0.1, 0.1))])
def test_edge_against_simulation_800(spec, alphas):
    # N = d = 800, n = 1600; 20-seed table in the module report: |diff| <= 1.2 N^{-2/3} edge
    N = d = 800
    e1, e2 = N ** alphas[0], N ** alphas[1]
    pred = _edge(spec, 1.0, 2.0, e1, e2, N)
    mean, se = _sim_tops(spec, N, d, 2 * d, e1, e2, range(100, 110))
    assert abs(mean - pred) < 3 * se + 1.5 * N ** (-2 / 3) * pred, (pred, mean, se)


@pytest.mark.parametrize("kw,name", [({"activation": "tanh"}, "activation"),
                                     ({"activation": "he3"}, "activation"),
                                     ({"activation": "hermite(0, 2, 0.5)"}, "mu1"),
                                     ({"nodes": "gauss-hermite"}, "nodes"),
                                     ({"noise": -1.0}, "noise")])
def test_bad_input(kw, name):
    with pytest.raises(ValueError, match=name):
        _edge("linear", 1.0, 2.0, 2.0, 2.0, 100, **kw)


def test_bad_target_and_params():
    with pytest.raises(ValueError, match="target"):
        _edge(["linear", "he2n"], 1.0, 2.0, 2.0, 2.0, 100)
    with pytest.raises(ValueError, match="psi"):
        _edge("linear", 0.0, 2.0, 2.0, 2.0, 100)
    with pytest.raises(ValueError, match="N"):
        _edge("linear", 1.0, 2.0, 2.0, 2.0, 1.5)
    with pytest.raises(TypeError):
        two_step_bulk_edge("linear", 1.0, 2.0, 2.0, 2.0, 100)   # activation first, the rest keyword-only


def test_noise_is_combined_with_the_targets_own():
    # label noise enters through the law of y only: an explicit noise equals the same noise in the target
    a = _edge("linear", 1.0, 2.0, 3.0, 3.0, 200, noise=0.5)
    b = _edge(make_target("linear", noise=0.5), 1.0, 2.0, 3.0, 3.0, 200)
    c = _edge(make_target("linear", noise=0.3), 1.0, 2.0, 3.0, 3.0, 200, noise=0.4)   # hypot(0.3, 0.4) = 0.5
    assert a == pytest.approx(b, rel=1e-12) and c == pytest.approx(a, rel=1e-9)
    assert a > _edge("linear", 1.0, 2.0, 3.0, 3.0, 200)


def test_widened_bulk_kernels_stay_on_the_physical_branch(monkeypatch):
    """After a whole prediction (gelu, He1 + He2/2, reused, (0.2925, 0.3825), N = 1000: a hard fold), every resolvent
    kernel the widened bulk solved or took from the fold's path solves the reduced system at its ``x``, and
    ``m(x) = A_0 / psi`` rises with ``x`` above the edge, as a Stieltjes transform does (a root of another branch
    would break that order)."""
    import rmtfl.theory._two_step.widened_bulk as wb
    from rmtfl.theory import two_step

    bulks = []
    init = wb.WidenedBulk.__init__
    monkeypatch.setattr(wb.WidenedBulk, "__init__", lambda self, *a, **k: init(self, *a, **k) or bulks.append(self))
    two_step("gelu", "hermite(0, 1, 0.5)", psi=1.0, phi=2.0, eta1=1000**0.2925, eta2=1000**0.3825, N=1000)
    for b in bulks:
        xs, A0 = np.array(b._xs), np.array([v[0] for v in b._vs])
        assert len(xs) > 20 and xs.min() > b.x_edge
        assert np.all(np.diff(A0)[np.diff(xs) > 0] > 0)
        for x, v in zip(b._xs, b._vs):
            assert np.abs(b.red.equations(v[:b.red.K], v[b.red.K:], x)).max() < 1e-9
