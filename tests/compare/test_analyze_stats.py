"""Acceptance statistics of rmtfl.analyze at d = 1000 (slow; docs/analyze.md §9).

Planted matrices W = sqrt(var)(G + sum theta_i u_i v_i^T), var = 1.7 unknown to the method, N/d in {0.5, 1, 2}.
Fewer draws than benchmarks/bench_analyze_peer.py (which gives the full numbers); every bound is the target
minus two binomial standard errors of the number of draws used here.
"""
import math

import numpy as np
import pytest

from rmtfl.compare import analyze

pytestmark = pytest.mark.slow
D, VAR, PSIS = 1000, 1.7, (0.5, 1.0, 2.0)


def draw(psi, thetas, seed, noise="gauss"):
    N = int(psi * D)
    rng = np.random.default_rng([seed, int(100 * psi), len(thetas)])
    if noise == "gauss":
        G = rng.standard_normal((N, D)) / math.sqrt(D)
    else:
        G = rng.standard_t(3, size=(N, D)) / math.sqrt(3.0 * D)
    th = np.sort(np.asarray(thetas, dtype=float))[::-1]
    if th.size:
        U, _ = np.linalg.qr(rng.standard_normal((N, th.size)))
        V, _ = np.linalg.qr(rng.standard_normal((D, th.size)))
        G += (U * th) @ V.T
    return math.sqrt(VAR) * G, th


def band(p, n):
    return 2.0 * math.sqrt(p * (1.0 - p) / n)


def test_pure_noise_false_alarms_at_alpha_and_var_within_one_percent():
    alpha, k = 0.05, 0
    draws = 100
    for psi in PSIS:
        for s in range(draws):
            W, _ = draw(psi, [], 100 + s)
            rep = analyze(W, alpha=alpha)
            assert rep.mp_consistent
            assert abs(rep.var / VAR - 1.0) < 0.01
            k += len(rep.outliers) > 0
    n = draws * len(PSIS)
    assert abs(k / n - alpha) <= band(alpha, n), k / n


def test_count_exact_above_one_and_a_half_threshold_and_theta_coverage():
    exact = total = covered = outl = 0
    for psi in PSIS:
        tc = psi ** 0.25
        for mult in ((1.5,), (1.5, 1.875, 2.25)):
            for s in range(10):
                W, th = draw(psi, [m * tc for m in mult], s)
                rep = analyze(W)
                total += 1
                exact += len(rep.outliers) == th.size
                for o, t in zip(rep.outliers, th):
                    outl += 1
                    covered += o.theta_low <= t <= o.theta_high
    assert exact / total >= 0.95 - band(0.95, total), exact / total
    assert covered / outl >= 0.90 - band(0.90, outl), covered / outl


def test_most_spikes_found_at_one_point_two_threshold():
    found = n = 0
    for psi in PSIS:
        for s in range(15):
            W, th = draw(psi, [1.2 * psi ** 0.25], 50 + s)
            found += min(len(analyze(W).outliers), 1)
            n += 1
    assert found / n >= 0.80 - band(0.80, n), found / n


def test_student_t3_is_not_mp_and_reports_no_pile_of_outliers():
    for psi in PSIS:
        W, _ = draw(psi, [], 7, noise="t3")
        rep = analyze(W)
        assert not rep.mp_consistent and rep.outliers == ()
