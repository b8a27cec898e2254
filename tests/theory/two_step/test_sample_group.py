"""The coupled group's count (rmtfl/theory/_two_step/sample_group.py; docs/theory/two_step.md §8.3)."""
import math

import numpy as np

from rmtfl.theory._two_step.sample_group import (Coupling, ScaledCoupling, coupling_matrix, group_count,
                                                 warm_group_count)


def _drawn(q, sd, eps, draws, seed):
    rng = np.random.default_rng(seed)
    K, counts = q.size, []
    for _ in range(draws):
        E = np.triu(rng.normal(0.0, eps, (K, K)), 1)
        counts.append(int((np.linalg.eigvalsh(np.diag(q + sd * rng.standard_normal(K)) + E + E.T) > 1).sum()))
    return np.mean(counts), np.std(counts) / math.sqrt(draws)


def test_the_deterministic_equivalent_counts_the_eigenvalues_of_d_plus_e_above_one():
    """Twelve columns just below their threshold, coupled with rms 0.044 (gelu, He1 + He2/2, (0.4, 0.2), N = 1000 at
    the bulk's edge: 0.045): on their own almost none is above 1, together 1.5 eigenvalues are.  Measured
    (`python -m benchmarks.diag_sample_group --part check`): 1.532 against 1.532 ± 0.009 over 4000 draws; spread-out
    strengths: 5.252 against 5.241 ± 0.007.  Here 2000 draws each, within four standard errors."""
    q = np.array([0.95, 0.9, 0.88, 0.85, 0.8, 0.8, 0.75, 0.7, 0.7, 0.65, 0.6, 0.55])
    sd, w = np.full(12, 0.03), np.ones(12)
    e2 = np.full((12, 12), 0.044**2)
    mean, se = _drawn(q, sd, 0.044, 2000, 1)
    assert abs(group_count(q, sd, w, e2).sum() - mean) < 4 * se + 0.01
    assert group_count(q, sd, w, 0 * e2).sum() < 0.1
    q2 = np.array([3.0, 2.0, 1.5, 1.2, 1.05, 0.9, 0.8, 0.7, 0.6, 0.5, 0.5, 0.4])
    mean, se = _drawn(q2, sd, 0.088, 2000, 2)
    assert abs(group_count(q2, sd, w, 4 * e2).sum() - mean) < 4 * se + 0.01


def test_the_three_forms_of_the_coupling_hold_one_matrix_and_count_alike():
    """The coupling variances as a matrix, as their factor ``U`` (``U U^T``) and as rows and row weights
    (``V diag(c2) V^T``, the form held along a law's grid): one matrix, and the same count from each."""
    rng = np.random.default_rng(5)
    V, c2 = rng.normal(0.0, 0.03, (9, 4)), rng.uniform(0.5, 2.0, 4)
    e2 = (V * c2) @ V.T
    forms = [e2, Coupling(V * np.sqrt(c2)), ScaledCoupling(V, V * V, c2)]
    for form in forms:
        assert np.allclose(coupling_matrix(form), e2, rtol=1e-13, atol=1e-16)
    q, sd, w = np.linspace(1.3, 0.6, 9), np.full(9, 0.03), np.ones(9)
    counts = [group_count(q, sd, w, form) for form in forms]
    assert all(np.allclose(c, counts[0], rtol=0, atol=1e-9) for c in counts[1:])


def test_weights_count_columns():
    """Two bins of three identical columns each count as six columns."""
    q, sd = np.array([0.9, 0.7]), np.array([0.02, 0.02])
    e2 = np.full((2, 2), 0.05**2)
    six = group_count(np.repeat(q, 3), np.repeat(sd, 3), np.ones(6), np.full((6, 6), 0.05**2)).sum()
    assert abs(group_count(q, sd, np.array([3.0, 3.0]), e2).sum() - six) < 0.05


def _damped_count(q, sd, w, e2, z=1.0, eta_min=1e-5):
    """group_count's model solved the plain way: the damped iteration g <- (g + F(g)) / 2 to a step below 1e-13 at
    each eta of the same continuation, and the same log-determinant (16 Gauss-Hermite nodes, as the module)."""
    xi, wxi = np.polynomial.hermite_e.hermegauss(16)
    wxi = wxi / wxi.sum()
    e2 = np.array(e2, dtype=float)
    e2[np.diag_indices_from(e2)] *= np.clip(1.0 - 1.0 / w, 0.0, None)
    x = q[:, None] + sd[:, None] * xi[None, :]
    g = np.zeros(q.size, complex)
    for eta in np.geomspace(1.0, eta_min, 10):
        for _ in range(20000):
            new = (wxi / (x - (z + 1j * eta + e2 @ (w * g))[:, None])).sum(1)
            done = np.abs(new - g).max() < 1e-13
            g = 0.5 * (g + new)
            if done:
                break
    S = e2 @ (w * g)
    L = (wxi * np.log(x - (z + 1j * eta_min + S)[:, None])).sum(1) + 0.5 * g * S
    return w + w * L.imag / math.pi


def test_the_mixed_fixed_point_is_the_damped_one():
    """group_count reaches its fixed points by Anderson mixing; on a group of 60 bins with uneven weights, strengths
    and couplings its counts are those of the plain damped iteration to 1e-8."""
    rng = np.random.default_rng(5)
    B = 60
    q, sd, w = np.sort(rng.uniform(0.3, 1.4, B))[::-1], rng.uniform(0.01, 0.05, B), rng.uniform(0.05, 1.0, B)
    e2 = rng.uniform(0.5, 1.5, (B, B)) * 0.05**2 * 12 / B
    e2 = (e2 + e2.T) / 2
    ref = _damped_count(q, sd, w, e2)
    assert np.abs(group_count(q, sd, w, e2) - ref).max() < 1e-8
    assert 1.0 < ref.sum() < B - 1.0                   # a count in the coupled range, not a trivial 0 or B


def test_the_warm_start_along_s_gives_the_cold_counts():
    """warm_group_count, each solve started from the last one's fixed point, gives group_count's counts along a run
    of 48 groups whose strengths fall as s rises (as along the law's grid), to 1e-8 (the fixed points' tolerance),
    and after a far group (a poor start) as well."""
    rng = np.random.default_rng(7)
    B = 40
    q0, sd, w = np.sort(rng.uniform(0.6, 1.6, B))[::-1], rng.uniform(0.01, 0.05, B), rng.uniform(0.05, 1.0, B)
    e2 = rng.uniform(0.5, 1.5, (B, B)) * 0.05**2 * 12 / B
    e2 = (e2 + e2.T) / 2
    warm = warm_group_count()
    for f in np.linspace(1.0, 0.6, 48):
        cold = group_count(q0 * f, sd, w, e2 * f)
        assert np.abs(warm(q0 * f, sd, w, e2 * f) - cold).max() < 1e-8
    wrong = warm_group_count()
    wrong(q0 * 0.2, sd, w, e2 * 0.04)                  # a far group first: its fixed point is a poor start
    assert np.abs(wrong(q0, sd, w, e2) - group_count(q0, sd, w, e2)).max() < 1e-8
