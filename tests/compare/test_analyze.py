"""rmtfl.compare.analyze: the report, planted spikes, noise, heavy tails, covariance mode, top-k path, bad input.

Tolerances come from the fluctuation scales of docs/analyze.md: outliers and overlaps ~ d^-1/2, the noise level
~ 1/d (rigidity), the edge ~ d^-2/3.  The acceptance statistics at d = 1000 are in test_analyze_stats.py (slow).
"""
import dataclasses
import json
import math
import subprocess
import sys

import numpy as np
import pytest

import rmtfl
from rmtfl.compare import SpectrumOutlier, SpectrumReport, analyze
from rmtfl.compare import _analyze as A
from rmtfl.numerics import top_singular_triplets


def planted(N, d, thetas, *, var=1.0, seed=0, noise="gauss"):
    rng = np.random.default_rng(seed)
    if noise == "gauss":
        G = rng.standard_normal((N, d)) / math.sqrt(d)
    else:
        G = rng.standard_t(3, size=(N, d)) / math.sqrt(3.0 * d)
    th = np.asarray(thetas, dtype=float)
    U, _ = np.linalg.qr(rng.standard_normal((N, max(1, th.size))))
    V, _ = np.linalg.qr(rng.standard_normal((d, max(1, th.size))))
    if th.size:
        G += (U[:, :th.size] * th) @ V[:, :th.size].T
    return math.sqrt(var) * G, U, V


def test_report_fields_and_json():
    W, _, _ = planted(300, 400, [2.5])
    rep = analyze(W)
    assert isinstance(rep, SpectrumReport) and rmtfl.analyze is analyze
    for f in ("var", "ratio", "bulk_edge", "ks", "mp_consistent", "reason", "tail_exponent", "outliers"):
        assert hasattr(rep, f)
    assert rep.ratio == pytest.approx(0.75) and rep.N == 300 and rep.d == 400
    assert rep.bulk_edge == pytest.approx(math.sqrt(rep.var) * (1 + math.sqrt(0.75)))
    o = rep.outliers[0]
    assert isinstance(o, SpectrumOutlier)
    assert o.theta_low <= o.theta <= o.theta_high and 0.0 <= o.p_value < 1e-6
    d = json.loads(json.dumps(rep.to_dict()))
    assert d["outliers"][0]["theta"] == pytest.approx(o.theta) and "singular_values" not in d
    with pytest.raises(dataclasses.FrozenInstanceError):
        rep.var = 2.0
    assert analyze(W).to_dict() | {"seconds": 0} == rep.to_dict() | {"seconds": 0}  # deterministic


@pytest.mark.parametrize("psi", [0.5, 2.0])
def test_planted_spikes_theta_interval_and_overlaps(psi):
    """Two spikes at 2 and 3 theta_c, var 2.3 unknown: both found, theta in its interval, var within 1 %,
    predicted cos^2 within 4 d^-1/2 of the realised overlaps (mean over 3 seeds)."""
    d = 300
    N = int(psi * d)
    tc = psi ** 0.25
    th = np.array([3.0, 2.0]) * tc
    dev_l, dev_r = [], []
    for seed in range(3):
        W, U, V = planted(N, d, th, var=2.3, seed=seed)
        rep = analyze(W)
        assert len(rep.outliers) == 2 and rep.mp_consistent
        assert rep.var == pytest.approx(2.3, rel=0.01)
        top = top_singular_triplets(W, 2, rng=0)
        for i, o in enumerate(rep.outliers):
            assert o.singular_value == pytest.approx(top.s[i], rel=1e-10)
            assert o.theta_low <= th[i] <= o.theta_high or abs(o.theta - th[i]) < 0.15
            dev_l.append(o.cos2_left - (top.U[:, i] @ U[:, i]) ** 2)
            dev_r.append(o.cos2_right - (top.V[:, i] @ V[:, i]) ** 2)
    assert abs(np.mean(dev_l)) < 4 / math.sqrt(d) / 2 and abs(np.mean(dev_r)) < 4 / math.sqrt(d) / 2


def test_pure_noise_scale_and_transpose():
    W, _, _ = planted(200, 400, [], var=1.0, seed=3)
    rep = analyze(W)
    assert rep.outliers == () and rep.mp_consistent and rep.var == pytest.approx(1.0, rel=0.01)
    big = analyze(1e150 * W)
    assert big.var == pytest.approx(1e300 * rep.var, rel=1e-9) and big.ks == pytest.approx(rep.ks, abs=1e-12)
    Wp, _, _ = planted(200, 400, [2.5], seed=4)
    a, b = analyze(Wp), analyze(Wp.T)
    assert [o.singular_value for o in a.outliers] == pytest.approx([o.singular_value for o in b.outliers], rel=1e-10)
    # the transpose has noise variance psi in its own convention and theta' = theta / sqrt(psi)
    assert b.var == pytest.approx(a.var * 0.5, rel=0.01)
    assert b.outliers[0].theta == pytest.approx(a.outliers[0].theta / math.sqrt(0.5), rel=1e-6)


def test_heavy_tails_are_not_mp_and_not_signal():
    W, _, _ = planted(300, 300, [], seed=5, noise="t3")
    rep = analyze(W)
    assert not rep.mp_consistent and rep.outliers == () and rep.n_above_edge > 0
    assert "heavy-tailed" in rep.reason and "not reported as signal" in rep.reason


def test_covariance_mode_data_and_matrix_agree():
    """Rows N(0, sigma^2 (I + (ell - 1) v v^T)) with ell = 4, sigma^2 = 0.5: ell within its interval, sigma^2 within 1 %."""
    rng = np.random.default_rng(7)
    n, p = 600, 300
    v = np.zeros(p)
    v[0] = 1.0
    X = rng.standard_normal((n, p)) * math.sqrt(0.5)
    X[:, 0] *= 2.0  # ell = 4
    rep = analyze(X, kind="covariance")
    assert rep.var == pytest.approx(0.5, rel=0.01) and len(rep.outliers) == 1
    o = rep.outliers[0]
    assert o.ell_low <= 4.0 <= o.ell_high
    S = X.T @ X / n
    lam = np.linalg.eigvalsh(S)[-1]
    assert o.singular_value ** 2 == pytest.approx(lam, rel=1e-9)
    rep2 = analyze(S, kind="covariance", n=n)
    assert rep2.outliers[0].ell == pytest.approx(o.ell, rel=1e-8) and rep2.var == pytest.approx(rep.var, rel=1e-8)
    with pytest.raises(ValueError, match=r"\bn\b"):
        analyze(X, n=n)


def test_top_k_path_with_sketch_agrees_with_full(monkeypatch):
    monkeypatch.setattr(A, "SKETCH_MIN", 300)
    monkeypatch.setattr(A, "SKETCH_SIZE", 200)
    W, _, _ = planted(400, 400, [3.0, 2.0], var=1.4, seed=8)
    full = analyze(W)
    top = analyze(W, top_k=8)
    assert top.sketch and top.method == "top_k" and not full.sketch
    assert len(top.outliers) == len(full.outliers) == 2
    assert top.var == pytest.approx(1.4, rel=0.01)
    for a, b in zip(top.outliers, full.outliers):
        assert a.singular_value == pytest.approx(b.singular_value, rel=1e-9)
        assert a.theta == pytest.approx(b.theta, rel=0.01)


@pytest.mark.parametrize("top_k", [1, 2, 6])
def test_top_k_complete_is_the_solvers_certificate(monkeypatch, top_k):
    """``complete`` with ``top_k``: every value above the edge margin is among the computed ones (checked against
    the full SVD), also when ``top_k`` is smaller than the number of outliers."""
    monkeypatch.setattr(A, "SKETCH_MIN", 300)
    monkeypatch.setattr(A, "SKETCH_SIZE", 200)
    W, _, _ = planted(500, 400, [4.0, 3.0, 2.5], var=0.7, seed=3)
    rep = analyze(W, top_k=top_k)
    s_all = np.linalg.svd(W, compute_uv=False)
    assert rep.complete and len(rep.outliers) == 3
    above = s_all[s_all > rep.edge_margin]
    np.testing.assert_allclose(rep.singular_values[:above.size], above, rtol=1e-9)


def test_top_k_without_certificate_is_not_complete(monkeypatch):
    """Heavy-tailed entries: no certificate is asked for (values above an edge are many), so not complete."""
    monkeypatch.setattr(A, "SKETCH_MIN", 300)
    monkeypatch.setattr(A, "SKETCH_SIZE", 200)
    W = np.random.default_rng(4).standard_t(2.5, (500, 400))
    rep = analyze(W, top_k=4)
    assert not rep.mp_consistent and not rep.complete


def test_plot_returns_axes():
    mpl = pytest.importorskip("matplotlib")
    mpl.use("Agg")
    W, _, _ = planted(200, 300, [2.5])
    ax = analyze(W).plot()
    assert ax.get_ylabel() == "density"


@pytest.mark.parametrize("bad, match", [
    (np.ones(20), "2-d"), (np.ones((0, 20)), "at least"), (np.ones((5, 40)), "at least"),
    (np.full((20, 20), np.nan), "finite"), (np.where(np.eye(20) > 0, np.inf, 1.0), "finite"),
    (np.eye(20) + 1j, "complex"), (np.zeros((20, 20)), "zero"),
])
def test_bad_matrix_is_a_value_error_naming_w(bad, match):
    with pytest.raises(ValueError, match=match) as e:
        analyze(bad)
    assert "W" in str(e.value)


@pytest.mark.parametrize("kw, name", [({"alpha": 0.0}, "alpha"), ({"alpha": 0.7}, "alpha"),
                                      ({"alpha": float("nan")}, "alpha"), ({"kind": "square"}, "kind"),
                                      ({"top_k": 0}, "top_k"), ({"ci_level": 1.0}, "ci_level"),
                                      ({"n": 10}, "n")])
def test_bad_options_name_the_parameter(kw, name):
    with pytest.raises((ValueError, TypeError), match=name):
        analyze(np.eye(20), **kw)
    with pytest.raises(TypeError):
        analyze("W.npy")


def test_import_does_not_pull_optional_packages():
    code = ("import sys, rmtfl, rmtfl.compare; rmtfl.compare.analyze; "
            "print([m for m in ('matplotlib', 'safetensors', 'torch', 'cupy') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
