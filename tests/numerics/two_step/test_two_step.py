"""Simulations of one and two steps against the theory (docs/theory/two_step.md §3, §5, §9).

Fluctuation scale: the top singular value has s.d. ~1.8/sqrt(N) per seed (||a|| and ||beta_hat||),
overlaps ~1/sqrt(N).  Acceptance tests of issue 3 are marked slow.
"""
import numpy as np
import pytest

from rmtfl.numerics._two_step.two_step import (empirical_phase_diagram, simulate_one_step, simulate_two_step,
                                     taylor_term_weights)
from rmtfl.numerics import init_first_layer, sample_inputs, sample_targets, two_step_semi_analytic
from rmtfl.theory import one_step, two_step
from rmtfl.theory import gaussian_moment, hermite_coeff
from rmtfl.theory._two_step.spike_vectors import P_k, stein_table

KW = dict(N=300, d=300, n=600)


def _sim2(**kw):
    return simulate_two_step("tanh", "linear", **KW, **kw)


def _sim1(**kw):
    return simulate_one_step("tanh", "linear", **KW, **kw)


def test_same_rng_same_output():
    a = _sim2(eta1=1.5, eta2=1.5, rng=11, k=5)
    b = _sim2(eta1=1.5, eta2=1.5, rng=11, k=5)
    assert np.array_equal(a.singular_values, b.singular_values)
    assert np.array_equal(a.cos2_target, b.cos2_target)
    c = _sim2(eta1=1.5, eta2=1.5, rng=12, k=5)
    d = a.to_dict()                                     # shared Result.to_dict: JSON-ready
    assert d["singular_values"] == a.singular_values.tolist() and d["params"]["batch"] == "reused"
    assert not np.array_equal(a.singular_values, c.singular_values)


def test_full_and_topk_agree_and_complete():
    full = _sim2(eta1=1.5, eta2=1.5, rng=3)
    top = _sim2(eta1=1.5, eta2=1.5, rng=3, k=4)
    assert full.singular_values.size == 300 and top.complete
    assert np.allclose(full.singular_values[:4], top.singular_values[:4], rtol=1e-8)
    assert full.outlier_count == top.outlier_count == 1


def test_float32_option():
    r = _sim2(eta1=1.5, eta2=1.5, rng=3, k=4, dtype="float32")
    f = _sim2(eta1=1.5, eta2=1.5, rng=3, k=4)
    assert abs(r.singular_values[0] - f.singular_values[0]) < 1e-3


def test_one_step_prediction_small():
    p = one_step("tanh", "linear", psi=1.0, phi=2.0, eta=3.0)
    s = [_sim1(eta=3.0, rng=g, k=3).singular_values[0] for g in range(3)]
    assert abs(np.mean(s) - p.singular_value) < 3 * 2.0 / np.sqrt(300 * 3)


def test_fresh_requires_n2_and_bad_inputs():
    with pytest.raises(ValueError, match="n2"):
        _sim2(eta1=1.0, eta2=1.0, batch="fresh")
    with pytest.raises(ValueError, match="n2"):
        _sim2(eta1=1.0, eta2=1.0, n2=100)
    with pytest.raises(ValueError, match="batch"):
        _sim2(eta1=1.0, eta2=1.0, batch="both")
    with pytest.raises(TypeError):
        simulate_two_step("tanh", "linear", 10, 10, 10, 1.0, 1.0)     # sizes and steps are keyword-only
    with pytest.raises(ValueError, match=r"\bN\b"):
        simulate_two_step("tanh", "linear", N=0, d=10, n=10, eta1=1.0, eta2=1.0)
    with pytest.raises(ValueError, match="activation"):
        simulate_two_step("nope", "linear", N=10, d=10, n=10, eta1=1.0, eta2=1.0)
    with pytest.raises(ValueError, match="target"):
        simulate_two_step("tanh", "nope", N=10, d=10, n=10, eta1=1.0, eta2=1.0)


def test_taylor_weights_match_P2():
    """docs/theory/two_step.md §5.3 mean replacement (reconstruction): exact N-averaged Taylor weights vs P_2 on the samples."""
    N, n, phi = 400, 800, 2.0
    g = np.random.default_rng(0)
    W0 = init_first_layer(N, N, rng=g)
    X = sample_inputs(n, N, rng=g)
    y = sample_targets(X, target="linear")
    w = taylor_term_weights("tanh", W0, X, y, kmax=2)
    assert np.array_equal(w, taylor_term_weights("tanh", W0, X, y, X2=X, y2=y, kmax=2))
    s = X @ (X.T @ y / n) - y * np.einsum("ij,ij->i", X, X) / n
    mu1 = hermite_coeff("tanh", 1)
    tau_h = np.sqrt((gaussian_moment("tanh", 1, 1) - mu1**2) / phi)
    th = P_k(2, "reused", y=y, s=s, stein=stein_table("tanh", 2), mu1=mu1, tau_h=tau_h, phi=phi)
    assert np.corrcoef(w[1], th)[0, 1] > 0.98
    assert np.abs(w[0]).max() < 0.05 * np.abs(w[1]).max()     # odd sigma: k = 1 term vanishes


def test_empirical_phase_diagram_shape():
    r = empirical_phase_diagram("tanh", "linear", N=100, d=100, n=200, alpha1=[0.0, 0.2], alpha2=[0.0], c1=2.0,
                                c2=2.0, seeds=2, k=4, rng=0)
    assert r.mean_count.shape == (1, 2) and r.stderr.shape == (1, 2) and r.mean_separated.shape == (1, 2)
    assert np.array_equal(r.extra, r.mean_count - 1) and r.seeds == 2 and r.to_dict()["N"] == 100


# ------------------------------------------------------------------ acceptance (issue 3)
@pytest.mark.slow
def test_acceptance_one_step():
    p = one_step("tanh", "linear", psi=1.0, phi=2.0, eta=3.0)
    rs = [simulate_one_step("tanh", "linear", N=1000, d=1000, n=2000, eta=3.0, k=4, rng=s) for s in range(3)]
    assert abs(np.mean([r.singular_values[0] for r in rs]) / p.singular_value - 1) < 0.02
    assert abs(np.mean([r.cos2_target[0, 0] for r in rs]) - p.cos2_target) < 0.03


@pytest.mark.slow
@pytest.mark.parametrize("batch", ["reused", "fresh"])
def test_acceptance_two_step(batch):
    p = two_step("tanh", "linear", psi=1.0, phi=2.0, eta1=1.5, eta2=1.5, batch=batch,
                 phi2=2.0 if batch == "fresh" else None, N=1000)
    rs = [simulate_two_step("tanh", "linear", N=1000, d=1000, n=2000, eta1=1.5, eta2=1.5, batch=batch,
                            n2=2000 if batch == "fresh" else None, k=4, rng=s) for s in range(3)]
    o = p.outliers[0]
    assert abs(np.mean([r.singular_values[0] for r in rs]) / o.singular_value - 1) < 0.02
    assert abs(np.mean([r.cos2_target[0, 0] for r in rs]) - o.cos2_target) < 0.03


@pytest.mark.slow
def test_acceptance_quadratic_two_outliers():
    # issue 3 acceptance, literally: means over 3 seeds at N = d = 1500 within 5% of both predicted outliers.
    # The prediction uses the finite-N bulk (the prediction's own draws from rng=12345, independent of the
    # simulation's): with the MP bulk outlier 2 is under-predicted by ~4% (4.53 vs 4.74 +- 0.09 over 16 seeds), see
    # rmtfl.numerics._two_step.finite_bulk; the finite-N prediction is 21.2 and 4.75 (16-seed means 21.23, 4.74).
    sig, tgt = "hermite(0, 1, 0.5)", [0.0, 1.0, 2**-0.5]
    p = two_step_semi_analytic(sig, tgt, N=1500, psi=1.0, phi=4.0, eta1=8.0, eta2=8.0, grams="analytic",
                               bulk="finite-N", rng=12345)
    assert len(p.outliers) == 2 and p.bulk == "finite-N"
    rs = [simulate_two_step(sig, tgt, N=1500, d=1500, n=6000, eta1=8.0, eta2=8.0, k=6, rng=s) for s in range(3)]
    for i in range(2):
        mean = np.mean([r.singular_values[i] for r in rs])
        assert abs(mean / p.outliers[i].singular_value - 1) < 0.05, (i, mean, p.outliers[i].singular_value)


def test_quadratic_bulk_is_w2_minus_its_exact_low_rank_part():
    """quadratic_bulk removes P = (eta1+eta2) a beta_hat^T + 2 c2 eta1 eta2 a^2 (M beta_hat)^T from W2 built by
    real gradient steps; what is left must be H = W0 + s1 D_a W0 M + s2 D_a^2 W0 M^2 (docs/theory/two_step.md §5.4,
    s1 = 2 c2 (eta1+eta2), s2 = 4 c2^2 eta1 eta2), rebuilt here from the same draws (rng children in the
    order W0, a, X1, X2, noise, solver)."""
    from rmtfl.numerics import init_first_layer, init_second_layer, sample_inputs, sample_targets
    from rmtfl.numerics import quadratic_bulk

    N, d, n, e1, e2, c2 = 60, 50, 80, 2.5, 1.5, 0.3
    act = f"hermite(0.2, 1, {c2})"
    s = quadratic_bulk(act, "tanh", N=N, d=d, n=n, eta1=e1, eta2=e2, k=10, rng=7)
    g_w, g_a, g_x1, _, g_eps, _ = np.random.default_rng(7).spawn(6)
    a = init_second_layer(N, law="gaussian", rng=g_a)
    X = sample_inputs(n, d, rng=g_x1)
    y = sample_targets(X, target="tanh", rng=g_eps.spawn(2)[0])
    W0 = init_first_layer(N, d, law="gaussian", rng=g_w)
    M = X.T @ (y[:, None] * X) / n
    s1, s2 = 2 * c2 * (e1 + e2), 4 * c2**2 * e1 * e2
    H = W0 + s1 * a[:, None] * (W0 @ M) + s2 * (a * a)[:, None] * (W0 @ M @ M)
    np.testing.assert_allclose(s, np.linalg.svd(H, compute_uv=False)[:10], rtol=1e-10)
    # no steps: the bulk is W0 itself
    s0 = quadratic_bulk(act, "tanh", N=N, d=d, n=n, eta1=0.0, eta2=0.0, k=3, rng=7)
    np.testing.assert_allclose(s0, np.linalg.svd(W0, compute_uv=False)[:3], rtol=1e-12)
    with pytest.raises(ValueError, match="activation must be c0 \\+ He1 \\+ c2 He2"):
        quadratic_bulk("tanh", "linear", N=N, d=d, n=n, eta1=1.0, eta2=1.0, rng=0)
    with pytest.raises(ValueError, match="activation must be"):
        quadratic_bulk("hermite(0, 2, 0.5)", "linear", N=N, d=d, n=n, eta1=1.0, eta2=1.0)

