"""Spikes of P coupled to extreme-sample columns (docs/theory/two_step.md §8.3, "P and the extreme samples together").

Reference values: with no coupling the roots are the rank-one BGN location of a Marchenko–Pastur bulk,
s^2 = (1 + theta^2)(psi + theta^2) / theta^2, and the spiked-covariance (BBP) location of one column of variance
l / d, s^2 = psi l + l / (l - 1) (closed forms, docs/theory/two_step.md §2.1 and §8.3).  With coupling, the
reference is a direct simulation of the same matrix: W = Z diag(1, .., sqrt(l), ..) + theta a v^T with v
leaning on the heavy column.  The ranks averaged over the most extreme sample are checked against the same closed
forms: without coupling each draw's two values are the spike and the sample's own location, whose law is given
(and their integrals over that law, ``scipy.integrate.quad``).
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, optimize

from rmtfl.theory import two_step
from rmtfl.theory._classical.hermite import gauss_hermite_rule
from rmtfl.theory._two_step.joint_roots import (ExtremeColumns, JointProblem, bracketed_secant, ranks_over_top_sample,
                                                spike_roots, top_quantile_rule)
from rmtfl.theory._two_step.left_gram import WeightedGram
from rmtfl.theory._two_step.sample_order import SampleLaw

from .mp_bulk import mp_bulk


def _problem(bulk, N, theta, ell, c):
    """``W = H + theta a v^T`` with ``|a| = |v| = 1``, ``v`` at squared overlap ``c^2`` with one column of variance
    ``ell / d``: P's Gram matrices (one direction) and that column."""
    g, wg = gauss_hermite_rule(16)
    G_U_w = WeightedGram(np.ones((g.size, 1)), wg * g * g)      # one direction: wg @ (g^2 tau)
    cols = ExtremeColumns(V=np.full((1, bulk.a.size), ell), U=np.array([[theta * c]]))
    return JointProblem(bulk, cols, G_U_w, np.array([[theta**2]]), g, N)


def test_without_coupling_the_roots_are_the_two_closed_forms():
    N, psi, theta, ell = 2000, 1.0, 1.5, 2.5
    bulk = mp_bulk(N, psi)
    jp = _problem(bulk, N, theta, ell, 0.0)
    se = bulk.edge * (1 + 1e-7)
    roots = sorted(s for s, _ in jp.roots(se, 10.0, np.zeros(1), refine=lambda r: range(len(r))))
    column = math.sqrt(psi * ell + ell / (ell - 1))
    spike = math.sqrt((1 + theta**2) * (psi + theta**2) / theta**2)
    assert np.allclose(roots, sorted([column, spike]), rtol=1e-6), (roots, column, spike)


def test_a_root_of_J_is_a_root_of_the_coupled_master_equation():
    # Schur complement: det J = D det(I - x R (G + u u^T / (x D)) R), with G the mean-kernel part of P's Gram matrix
    N, theta, ell, c = 2000, 1.5, 2.5, 0.5
    bulk = mp_bulk(N)
    jp = _problem(bulk, N, theta, ell, c)
    se = bulk.edge * (1 + 1e-7)
    for s, _ in jp.roots(se, 10.0, np.zeros(1), refine=lambda r: range(len(r))):
        x = s * s
        tq, ttm = bulk.tau_rows(jp.g / math.sqrt(N), x)
        D = float(jp.denominators(s)[0])
        G = ttm * theta**2 * (1 - c * c) + (theta * c) ** 2 / (x * D)
        assert abs(x * float(jp.G_U_w(tq)[0, 0]) * G - 1.0) < 1e-8


def test_coupled_roots_against_simulation():
    """N = d = 800, 6 draws, squared overlap 0.3 of v with the heavy column: uncoupled, the spike of P (2.167) and the
    column (2.041) are both outliers; coupled, one outlier is pushed up and the other into the bulk, as in the
    simulation.  The top value within 3 standard errors + 1 %, and moved by more than that."""
    N, theta, ell, c = 800, 1.5, 2.5, math.sqrt(0.3)
    bulk = mp_bulk(N)
    se = bulk.edge * (1 + 1e-7)

    def roots(c):
        r = _problem(bulk, N, theta, ell, c).roots(se, 10.0, np.zeros(1), refine=lambda r: range(len(r)))
        return sorted((s for s, _ in r), reverse=True)
    pred, free = roots(c), roots(0.0)
    rng = np.random.default_rng(7)
    sims = []
    for _ in range(6):
        Z = rng.standard_normal((N, N)) / math.sqrt(N)
        Z[:, 0] *= math.sqrt(ell)
        a = rng.standard_normal(N)
        a /= np.linalg.norm(a)
        w = rng.standard_normal(N)
        w[0] = 0.0
        v = math.sqrt(1 - c * c) * w / np.linalg.norm(w)
        v[0] = c
        sims.append(np.linalg.svd(Z + theta * np.outer(a, v), compute_uv=False)[:2])
    S = np.array(sims)
    m, se_sim = S.mean(0), S.std(0, ddof=1) / math.sqrt(len(S))
    assert len(free) == 2 and len(pred) == 1
    assert abs(pred[0] - m[0]) <= 3 * se_sim[0] + 0.01 * m[0], (pred, m, se_sim)
    assert abs(pred[0] - free[0]) > 3 * se_sim[0] + 0.01 * m[0], (pred, free)
    # the second value is a bulk value: within the Tracy-Widom scale N^(-2/3) of the edge
    assert m[1] < bulk.edge + 2 * N ** (-2 / 3) * bulk.edge, m


def test_spike_roots_keep_the_spikes_of_P_and_leave_the_columns():
    N, theta, ell = 2000, 1.5, 4.0
    bulk = mp_bulk(N)
    se = bulk.edge * (1 + 1e-7)
    jp = _problem(bulk, N, theta, ell, 0.2)
    kept = spike_roots(jp, se, 10.0, np.zeros(1), 1, 1)
    assert len(kept) == 1 and kept[0][1] > 0.5
    spike = math.sqrt((1 + theta**2) * (1 + theta**2) / theta**2)
    assert abs(kept[0][0] - spike) < 0.05 * spike      # the column (at 2.64) is not taken for P's spike (2.17)


def test_coupling_gives_the_quadratic_sigma_its_second_spike():
    # quadratic sigma, He1 + He2/2, (0.1, 0.2), N = 1000: the simulated median count is 2 (6 draws, the acceptance
    # table docs/benchmarks/two_step_finite_n.md); without the coupling the second spike of P stays in the bulk
    p = two_step("hermite(0, 1, 0.5)", "hermite(0, 1, 0.5)", psi=1.0, phi=2.0, eta1=1000**0.1, eta2=1000**0.2,
                 N=1000)
    assert [o.kind for o in p.outliers] == ["spike", "spike"]


def _top_sample_law(se, n=50, p0=0.05, k=3.0):
    """One batch part of ``n`` samples, each an outlier above ``s`` with probability ``p0 exp(-k (s - se))``; the
    most extreme one's ``q``-quantile ``se - log((1 - q^(1/n)) / p0) / k`` (closed form)."""
    grid = np.linspace(se, se + 3.0, 3001)
    law = SampleLaw(grid, (p0 * np.exp(-k * (grid - se)))[:, None], (n,))
    return law, lambda q: se - math.log((1 - q ** (1 / n)) / p0) / k


def test_ranks_over_the_top_sample_without_coupling_are_the_sorted_pair():
    N, theta, ell, Q = 2000, 1.5, 2.5, 6
    bulk = mp_bulk(N)
    se = bulk.edge * (1 + 1e-7)
    law, quantile = _top_sample_law(se)
    spike = math.sqrt((1 + theta**2) * (1 + theta**2) / theta**2)
    q, w = top_quantile_rule(Q)
    locs = np.array([max(quantile(v), se) for v in q])     # at the edge in batches where no sample leaves the bulk
    assert locs.min() < spike < locs.max()          # the sample passes the spike in some batches, not in others
    got = ranks_over_top_sample(_problem(bulk, N, theta, ell, 0.0), se, 10.0, np.zeros(1), 0, law, 2, quantiles=Q)
    want = [w @ np.maximum(locs, spike), w @ np.minimum(locs, spike)]
    assert np.allclose(got, want, rtol=3e-4), (got, want)


def test_the_quantile_rule_integrates_over_the_rare_batches():
    """:func:`top_quantile_rule`: with 6 quantiles the uncoupled ranks' means lie within 0.25 % of their integrals over
    the law of the most extreme sample (``scipy.integrate.quad`` of the closed form); equally spaced quantiles, which
    stop at ``1 - 1/12``, put the top rank 0.8 % low."""
    N, theta, ell, Q = 2000, 1.5, 2.5, 6
    bulk = mp_bulk(N)
    se = bulk.edge * (1 + 1e-7)
    law, quantile = _top_sample_law(se)
    spike = math.sqrt((1 + theta**2) * (1 + theta**2) / theta**2)

    def place(v):                                   # below the edge in the batches where no sample leaves the bulk
        return max(quantile(v), se)
    exact = [integrate.quad(lambda v: f(place(v), spike), 0.0, 1.0, limit=200, points=[0.5, 0.9, 0.99])[0]
             for f in (max, min)]
    got = ranks_over_top_sample(_problem(bulk, N, theta, ell, 0.0), se, 10.0, np.zeros(1), 0, law, 2, quantiles=Q)
    assert np.allclose(got, exact, rtol=2.5e-3), (got, exact)
    midpoint = np.mean([max(place((k + 0.5) / Q), spike) for k in range(Q)])
    assert midpoint < exact[0] * (1 - 5e-3)


def test_ranks_over_the_top_sample_repel():
    # coupled, the spike and the sample push each other apart: the top rank rises, the second falls
    N, theta, ell = 2000, 1.5, 2.5
    bulk = mp_bulk(N)
    se = bulk.edge * (1 + 1e-7)
    law, _ = _top_sample_law(se)
    free = ranks_over_top_sample(_problem(bulk, N, theta, ell, 0.0), se, 10.0, np.zeros(1), 0, law, 2)
    coupled = ranks_over_top_sample(_problem(bulk, N, theta, ell, 0.4), se, 10.0, np.zeros(1), 0, law, 2)
    assert coupled[0] > free[0] + 0.01 and coupled[1] < free[1] - 0.01, (free, coupled)


def test_ranks_over_the_top_sample_say_which_ranks_have_a_root_in_every_batch():
    """Without coupling: the spike and the sample resolve ranks 1-2 at every quantile (the sample's law puts it out of
    the bulk in all but 0.5 % of batches, below the lowest quantile), a third rank has no root and
    counts at the edge; the lower ranks solved coarsely (``precise=1``) agree with the precise means to
    ``COARSE_RTOL``."""
    from rmtfl.theory._two_step.joint_roots import COARSE_RTOL

    N, theta, ell = 2000, 1.5, 2.5
    bulk = mp_bulk(N)
    se = bulk.edge * (1 + 1e-7)
    law, _ = _top_sample_law(se, p0=0.1)      # a sample out of the bulk at every quantile
    jp = _problem(bulk, N, theta, ell, 0.0)
    exact = ranks_over_top_sample(jp, se, 10.0, np.zeros(1), 0, law, 2)
    means, resolved = ranks_over_top_sample(jp, se, 10.0, np.zeros(1), 0, law, 3, resolved=True)
    assert resolved == [True, True, False] and means[2] == se
    assert np.allclose(means[:2], exact, rtol=1e-12)
    coarse = ranks_over_top_sample(jp, se, 10.0, np.zeros(1), 0, law, 2, precise=1)
    assert coarse[0] == pytest.approx(exact[0], rel=1e-12)
    assert coarse[1] == pytest.approx(exact[1], rel=2 * COARSE_RTOL)


def test_a_problem_given_another_batch_shares_the_bulk_and_averages_with_weights():
    """:meth:`JointProblem.given`: the same roots as a problem built afresh with that Gram and those components (the
    bulk's kernels shared, not recomputed); ``given_top`` averages each quantile's problems with their weights, and
    a quantile whose problems differ from ``jp`` moves the ranks."""
    N, theta, ell = 2000, 1.5, 2.5
    bulk = mp_bulk(N)
    se = bulk.edge * (1 + 1e-7)
    law, _ = _top_sample_law(se)
    jp = _problem(bulk, N, theta, ell, 0.4)
    other = _problem(bulk, N, 1.2 * theta, ell, 0.2)
    given = jp.given(other.G_V, other.cols.U)
    for a, b in zip(given.roots(se, 10.0, np.zeros(1), refine=lambda r: range(len(r))),
                    other.roots(se, 10.0, np.zeros(1), refine=lambda r: range(len(r)))):
        assert a[0] == pytest.approx(b[0], rel=1e-12) and a[1] == pytest.approx(b[1], rel=1e-9)
    assert given.blocks(1.1 * se)[2] is jp.blocks(1.1 * se)[2]         # the bulk's kernels computed once
    Q = 6
    plain = ranks_over_top_sample(jp, se, 10.0, np.zeros(1), 0, law, 2, quantiles=Q)
    same = ranks_over_top_sample(jp, se, 10.0, np.zeros(1), 0, law, 2, quantiles=Q, given_top=[[(1.0, jp)]] * Q)
    assert same == pytest.approx(plain, rel=1e-12)
    alone = ranks_over_top_sample(jp, se, 10.0, np.zeros(1), 0, law, 2, quantiles=Q, given_top=[[(1.0, given)]] * Q)
    mixed = ranks_over_top_sample(jp, se, 10.0, np.zeros(1), 0, law, 2, quantiles=Q,
                                  given_top=[[(0.25, jp), (0.75, given)]] * Q)
    assert mixed == pytest.approx([0.25 * a + 0.75 * b for a, b in zip(plain, alone)], rel=1e-4)
    assert max(abs(a / b - 1) for a, b in zip(alone, plain)) > 5e-3


def test_bracketed_secant_meets_its_tolerance_and_saves_evaluations():
    """Against Brent's method on the smooth and on a kinked increasing function (the bisection safeguard)."""
    for f, root in ((lambda s: math.tanh(3 * (s - 2.3)) + 0.1 * (s - 2.3), 2.3),
                    (lambda s: (s - 1.7) if s < 1.7 else 40 * (s - 1.7) ** 3, 1.7)):
        calls = {"secant": 0, "brent": 0}

        def counted(name):
            def g(s):
                calls[name] += 1
                return f(s)
            return g
        s = bracketed_secant(counted("secant"), 0.5, 6.0, 2.0, xtol=1e-10)
        assert abs(s - root) < 1e-10
        optimize.brentq(counted("brent"), 0.5, 6.0, xtol=1e-10)
        if root == 2.3:
            assert calls["secant"] < calls["brent"]


def test_bracketed_secant_along_a_known_slope():
    """``slope``: the first step is Newton's along it, so a guess near the root costs one evaluation when the slope
    is right; a wrong slope (10x, or 1/10) still meets the tolerance, and ``slope_out`` gives the slope at the root."""
    def f(s):
        return math.tanh(3 * (s - 2.3)) + 0.1 * (s - 2.3)
    slope = 3.1                                    # f'(2.3)
    calls = []

    def counted(s):
        calls.append(s)
        return f(s)
    out = []
    s = bracketed_secant(counted, 0.5, 6.0, 2.3 + 1e-5, xtol=1e-4, slope=slope, slope_out=out)
    assert abs(s - 2.3) < 1e-8 and len(calls) == 1 and out == [slope]
    for wrong in (10 * slope, slope / 10, -1.0, math.nan):
        out = []
        s = bracketed_secant(f, 0.5, 6.0, 2.0, xtol=1e-10, slope=wrong, slope_out=out)
        assert abs(s - 2.3) < 1e-10
        if out:
            assert out[0] == pytest.approx(slope, rel=1e-2)
