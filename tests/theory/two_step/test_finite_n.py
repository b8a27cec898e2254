"""Finite-N two-step route, non-perturbative in the first step (docs/theory/two_step.md §8.2)."""
import json
import math
import pathlib

import numpy as np
import pytest

from rmtfl.theory import get_activation, make_target, two_step, two_step_bulk_edge, two_step_finite_n
from rmtfl.theory._classical.hermite import gauss_hermite_rule
from rmtfl.theory._two_step.finite_n import F_table, finite_n_grams, finite_n_setup
from rmtfl.theory._two_step.plan import outliers_from_gram

QUAD = "hermite(0, 1, 0.5)"
HE2 = "hermite(0, 1, 0.7071067811865476)"


def _p_spikes(act, tg, N, eta1, eta2, batch="reused"):
    A, T = get_activation(act), make_target(tg)
    st = finite_n_setup(A, T, phi=2.0, batch=batch, phi2=2.0 if batch == "fresh" else None)
    G_U, G_V, Mb, *_ = finite_n_grams(A, st, eta1=eta1, eta2=eta2, N=N, bulk=False)
    return outliers_from_gram(G_U, G_V, Mb, 1.0)


@pytest.mark.parametrize("batch", ["reused", "fresh"])
def test_t_to_zero_is_the_leading_order_form(batch):
    """N -> infinity at fixed eta: t_j -> 0, F -> mu_1, P -> the k = 0 spiked form of two_step(N=None)."""
    kw = dict(psi=1.0, phi=2.0, eta1=3.0, eta2=3.0, batch=batch, phi2=2.0 if batch == "fresh" else None)
    ref = two_step("tanh", HE2, **kw).outliers[0]
    _, out = _p_spikes("tanh", HE2, 1e14, 3.0, 3.0, batch)
    assert abs(out[0].singular_value - ref.singular_value) < 1e-6 * ref.singular_value
    assert abs(out[0].cos2_target - ref.cos2_target) < 1e-6


def _flagged(p, why: str) -> bool:
    """``p`` is marked unreliable, ``why`` is among its reasons, and the reasons are notes (``reasons`` is the
    structured part of ``notes`` that ``reliable`` rests on)."""
    assert set(p.reasons) <= set(p.notes)
    return not p.reliable and any(why in r for r in p.reasons)


def test_converges_to_the_asymptotic_prediction():
    """The full route (widened bulk, master equation) approaches two_step(N=None) as N grows at fixed eta, like 1/N
    (measured gaps -0.88, -0.23, -0.031, -0.0032, -0.00032 at N = 1e2..1e6; limit 5.334)."""
    ref = two_step("tanh", HE2, psi=1.0, phi=2.0, eta1=3.0, eta2=3.0).outliers[0].singular_value
    errs = [abs(two_step_finite_n("tanh", HE2, psi=1.0, phi=2.0, eta1=3.0, eta2=3.0, N=N).outliers[0].singular_value
                - ref) for N in (10**4, 10**5, 10**6)]
    assert 5 < errs[0] / errs[1] < 20 and 5 < errs[1] / errs[2] < 20 and errs[2] < 1e-4 * ref


def test_quadratic_sigma_spikes_equal_the_exact_route():
    """sigma = He1 + He2/2: sigma' is linear, the Taylor series stops at k = 1, so P equals the existing route."""
    for a1, a2 in [(0.3, 0.3), (0.4, 0.4)]:
        e1, e2 = 1000**a1, 1000**a2
        _, out = _p_spikes(QUAD, HE2, 1000, e1, e2)
        old = two_step(QUAD, HE2, psi=1.0, phi=2.0, eta1=e1, eta2=e2, N=1000, K=1).outliers   # the Taylor route
        assert len(out) == len(old) == 2
        for o, q in zip(out, old):
            assert abs(o.singular_value - q.singular_value) < 1e-6 * q.singular_value


@pytest.mark.parametrize("tg", [HE2, "hermite(0, 1, 0, 0.4082482904638631)"])
def test_quadratic_sigma_prediction_is_symmetric_in_the_steps(tg):
    """For sigma = He1 + He2/2, W_2 depends on the steps only through eta_1 + eta_2 and eta_1 eta_2
    (docs/theory/two_step.md §5.4), so swapping them changes nothing: every outlier, its overlaps, the count range and
    the edges agree to rounding.  Before the second step's move of a sample's column joined the first's
    (docs/theory/two_step.md §8.3) the single-sample outliers, and the spikes solved with them, differed by up to
    4e-4 (z + He2/sqrt2: 5.1273 against 5.1295, the fourth value)."""
    kw = dict(psi=1.0, phi=2.0, N=1000)
    a = two_step(QUAD, tg, eta1=1000**0.2, eta2=1000**0.4, **kw)
    b = two_step(QUAD, tg, eta1=1000**0.4, eta2=1000**0.2, **kw)
    assert a.mode == "finite-N" and len(a.outliers) == len(b.outliers) >= 3 and a.count_range == b.count_range
    for o, p in zip(a.outliers, b.outliers):
        assert o.kind == p.kind and abs(o.singular_value - p.singular_value) < 1e-10 * o.singular_value
        assert abs(o.cos2_target - p.cos2_target) < 1e-10 and abs(o.cos2_second_layer - p.cos2_second_layer) < 1e-10
    assert abs(a.bulk_edge - b.bulk_edge) < 1e-10 and abs(a.fitted_edge - b.fitted_edge) < 1e-10


def test_quadratic_sigma_bulk_edge_equals_the_exact_variance_profile(monkeypatch):
    """For quadratic sigma the remainder variance and the identity part vanish and the profile is that of
    docs/theory/two_step.md §5.5: with no extreme sample taken out of the bulk (§8.3) the edge is two_step_bulk_edge
    to 0.3 % (the nodes of the widened bulk are binned), at unequal steps as at equal ones (measured: 4.836 against
    4.842, 5.297 against 5.304 both ways round; before the remainder's own-sample term was corrected, 5.336 and
    5.258)."""
    import rmtfl.theory._two_step.sample_spikes as ss

    monkeypatch.setattr(ss, "SAMPLE_RANKS", 0)
    for a1, a2 in [(0.3, 0.3), (0.2, 0.4), (0.4, 0.2)]:
        e1, e2 = 1000**a1, 1000**a2
        p = two_step_finite_n(QUAD, QUAD, psi=1.0, phi=2.0, eta1=e1, eta2=e2, N=1000)
        ref = two_step_bulk_edge(QUAD, QUAD, psi=1.0, phi=2.0, eta1=e1, eta2=e2, N=1000)
        assert abs(p.bulk_edge - ref) < 0.003 * ref
        assert not any(o.kind == "sample" for o in p.outliers)


@pytest.mark.parametrize("ranks", [0, 12])
def test_quadratic_sigma_rows_are_the_exact_structure(monkeypatch, ranks):
    """The rows of the widened bulk for sigma = He1 + He2/2 are those of the exact algebra
    (docs/theory/two_step.md §5.4): ``c(u)^2 = (1 + s1 u + s2 u^2)^2`` with ``s1 = eta1 + eta2``,
    ``s2 = eta1 eta2``, no identity part and no remainder, with the whole batch in the bulk and without its 12 most
    extreme samples (whose mean of ``y`` is not zero); so the bulk depends on the steps only through ``s1, s2`` and is
    the same with them swapped."""
    import rmtfl.theory._two_step.sample_spikes as ss
    import rmtfl.theory._two_step.widened_bulk as wb

    monkeypatch.setattr(ss, "SAMPLE_RANKS", ranks)
    bulks = []
    init = wb.WidenedBulk.__init__
    monkeypatch.setattr(wb.WidenedBulk, "__init__", lambda self, *a, **k: init(self, *a, **k) or bulks.append(self))
    edges = []
    for a1, a2 in [(0.2, 0.4), (0.4, 0.2)]:
        e1, e2 = 1000**a1, 1000**a2
        two_step_finite_n(QUAD, QUAD, psi=1.0, phi=2.0, eta1=e1, eta2=e2, N=1000)
        b = bulks[-1]
        assert (b.zrange is None) == (ranks == 0)
        a, s1, s2 = b.a, e1 + e2, e1 * e2
        exact = np.stack([np.ones_like(a), 2 * s1 * a, (s1**2 + 2 * s2) * a**2, 2 * s1 * s2 * a**3, s2**2 * a**4,
                          np.zeros_like(a)], axis=1)
        np.testing.assert_allclose(b.red.rowf, exact, rtol=1e-9, atol=1e-9 * np.abs(exact).max())
        edges.append(b.edge)
    assert edges[0] == pytest.approx(edges[1], rel=1e-9)


@pytest.mark.parametrize("act", ["tanh", "gelu", QUAD])
def test_reused_F_table_coefficient_of_z_is_steins(act):
    """``c_z`` of a reused batch is ``E[z sigma'(z + t D)]`` with the sample's own term ``y sigma'(z)/phi`` in ``D``
    (Stein: ``c`` times ``1 + t y sigma''(z)/phi`` on average; docs/theory/two_step.md §8.2): for the quadratic sigma
    exactly ``1 + t y / phi``; otherwise against the product rule at 120 x 40 nodes, to 2e-3 at the data points with
    ``|y| < 2`` (measured: 1.2e-3 for tanh, 1.3e-4 for gelu, at ``t`` up to 1.5; ``c`` itself is within 4.8e-3 and
    2.2e-4 there; at larger ``|y|`` the sample's own term makes the integrand sharp and both lose accuracy)."""
    A, T = get_activation(act), make_target("hermite(0, 1, 0.5)")
    st = finite_n_setup(A, T, phi=2.0, batch="reused", phi2=None)
    t = 1000**0.4 * np.linspace(-3, 3, 7) / math.sqrt(1000)
    cz = F_table(A, st, t)[3]
    keep = st.w > 1e-8
    if act == QUAD:
        np.testing.assert_allclose(cz[:, keep], 1 + np.outer(t, st.y[keep]) / st.phi, atol=1e-12)
    keep &= np.abs(st.y) < 2
    z, wz = gauss_hermite_rule(120)
    xi, wx = gauss_hermite_rule(40)
    W = np.outer(wz, wx)
    z0 = float(wz @ (z * A.derivative(1, z)))
    for q, tq in enumerate(t):
        D = (st.y[keep, None, None] * A.derivative(1, z)[None, :, None] / st.phi + st.mu1 * st.s[keep, None, None]
             + st.tau_h * xi[None, None, :])
        ref = np.einsum("iab,ab->i", z[None, :, None] * A.derivative(1, z[None, :, None] + tq * D), W) - z0 + st.mu2
        np.testing.assert_allclose(cz[q, keep], ref, atol=2e-3)


@pytest.mark.parametrize("act", ["tanh", "gelu", QUAD])
def test_reused_F_table_remainder_covariance(act):
    """``x1 = E[zeta_1(z) sigma'(z + t D)]``, ``zeta_1 = sigma' - mu_1 - mu_2 z`` the first step's remainder, whose
    covariance with the second step's makes the reused batch's noise (docs/theory/two_step.md §8.2, "The sample's own
    term and the two remainders"): at ``t = 0`` the remainder's variance ``E sigma'^2 - mu_1^2 - mu_2^2`` (both steps
    see the same samples; to the accuracy of the table's rule in ``z``), zero for the quadratic sigma (no remainder),
    and against the 120 x 40 product rule at the data points with ``|y| < 2`` (as ``c_z`` in the test above)."""
    A, T = get_activation(act), make_target("hermite(0, 1, 0.5)")
    st = finite_n_setup(A, T, phi=2.0, batch="reused", phi2=None)
    t = 1000**0.4 * np.linspace(-3, 3, 7) / math.sqrt(1000)
    x1 = F_table(A, st, np.concatenate([[0.0], t])).x1
    z, wz = gauss_hermite_rule(120)
    mu1, mu2 = float(wz @ A.derivative(1, z)), float(wz @ (z * A.derivative(1, z)))
    zeta1 = A.derivative(1, z) - mu1 - mu2 * z
    keep = st.w > 1e-8
    # the table's 20-node rule in z against 120 nodes: 7.7e-4 for tanh, 1.6e-6 for gelu (measured)
    np.testing.assert_allclose(x1[0, keep], float(wz @ zeta1**2), atol=1e-3)
    if act == QUAD:
        np.testing.assert_allclose(x1, 0.0, atol=1e-12)
        return
    keep &= np.abs(st.y) < 2
    xi, wx = gauss_hermite_rule(40)
    W = np.outer(wz, wx)
    for q, tq in enumerate(t):
        D = (st.y[keep, None, None] * A.derivative(1, z)[None, :, None] / st.phi + st.mu1 * st.s[keep, None, None]
             + st.tau_h * xi[None, None, :])
        ref = np.einsum("iab,ab->i", zeta1[None, :, None] * A.derivative(1, z[None, :, None] + tq * D), W)
        np.testing.assert_allclose(x1[q + 1, keep], ref, atol=2e-3)


def test_quadratic_sigma_own_term_is_held_by_m_squared():
    """The part of ``sigma'`` linear in ``w_j`` has the coefficient ``c_z``, the sample's own term included; the
    first step's move along ``M`` holds ``t mu_2 y c / phi`` of it through the diagonal of ``M^2``
    (docs/theory/two_step.md §8.2).  For the quadratic sigma that is all of it: the split's coefficient ``c_z -
    t mu_2 y c / phi`` is ``c = 1`` exactly, and the rows keep the exact structure (test above)."""
    A, T = get_activation(QUAD), make_target("hermite(0, 1, 0, 0.4082482904638631)")
    st = finite_n_setup(A, T, phi=2.0, batch="reused", phi2=None)
    t = np.linspace(-1.5, 1.5, 7)
    tab = F_table(A, st, t)
    keep = st.w > 1e-8
    np.testing.assert_allclose((tab.cz - (t * st.mu2 / st.phi)[:, None] * st.y[None, :] * tab.c)[:, keep], 1.0,
                               atol=1e-12)


@pytest.mark.parametrize("act", ["tanh", "erf", "gelu", "hermite(0, 1, 0.5)"])
@pytest.mark.parametrize("batch", ["reused", "fresh"])
def test_F_slope_in_s_is_t_mu1_times_the_mean_of_sigma_second(act, batch):
    """``dF/ds = t mu_1 E sigma''(z + t D)``, which ``F_table`` takes from its own values of ``sigma'`` by Stein's lemma
    (docs/theory/two_step.md §8.5, "The first step's direction"): against the product rule at 120 x 40 nodes, at
    ``eta_1 = N^0.4``, ``N = 1000``, rows up to |g| = 3, the data points with ``|y| < 2`` of weight above 1e-8.  A
    fresh batch's one Gaussian is exact to 1e-7; a reused batch's 20 x 6 rule to 6e-3 (measured: 4.6e-3 tanh,
    4.7e-3 erf, 1.7e-4 gelu, of values up to 0.36; the accuracy of ``c`` on that rule), the quadratic sigma exactly."""
    A, T = get_activation(act), make_target("hermite(0, 1, 0.5)")
    st = finite_n_setup(A, T, phi=2.0, batch=batch, phi2=2.0 if batch == "fresh" else None)
    t = 1000**0.4 * np.linspace(-3, 3, 7) / math.sqrt(1000)
    ds = F_table(A, st, t).ds
    keep = (st.w > 1e-8) & (np.abs(st.y) < 2)
    z, wz = gauss_hermite_rule(120)
    xi, wx = gauss_hermite_rule(40)
    W = np.outer(wz, wx)
    tol = 6e-3 if batch == "reused" and act != "hermite(0, 1, 0.5)" else 1e-7
    for q, tq in enumerate(t):
        D = st.mu1 * st.s[keep, None, None] + st.tau_h * xi[None, None, :]
        if batch == "reused":
            D = D + st.y[keep, None, None] * A.derivative(1, z)[None, :, None] / st.phi
        ref = tq * st.mu1 * np.einsum("iab,ab->i", A.derivative(2, z[None, :, None] + tq * D), W)
        np.testing.assert_allclose(ds[q, keep], ref, atol=tol)


@pytest.mark.parametrize("eta1, eta2", [(30.0, 1e-7), (1e-7, 30.0)])
def test_fresh_bulk_with_one_step_equals_the_one_batch_profile(eta1, eta2):
    """With one of the two steps switched off, a fresh batch's bulk is that of one batch (one matrix M, exact
    profile for the quadratic sigma): the fresh route's basis of that step's M must reproduce it
    (docs/theory/two_step.md §8.2, fresh batches)."""
    kw = dict(psi=1.0, phi=2.0, eta1=eta1, eta2=eta2, N=1000)
    one = two_step("hermite(0, 1, 0.5)", "hermite(0, 1, 0.5)", batch="reused", **kw).bulk_edge
    fresh = two_step("hermite(0, 1, 0.5)", "hermite(0, 1, 0.5)", batch="fresh", phi2=2.0, **kw).bulk_edge
    assert one > 3.5 and abs(fresh - one) < 1e-6 * one


def test_the_issue_case_is_no_longer_explosive():
    """tanh, z + He2/sqrt2, N = d = 1000, n = 2000, reused: simulation 15.4 (0.4, 0.2) and 11.7 (0.3, 0.3) with one
    outlier; the Taylor route gave 294.9 and spurious second outliers.  The bulk of a saturating sigma narrows
    (docs/theory/two_step.md §8.2): simulated fitted edges 1.96-2.00 at such points."""
    for (a1, a2), sim in [((0.4, 0.2), 15.4), ((0.3, 0.3), 11.7)]:
        p = two_step_finite_n("tanh", HE2, psi=1.0, phi=2.0, eta1=1000**a1, eta2=1000**a2, N=1000)
        assert len(p.outliers) == 1 and p.reliable and p.bulk == "finite-N"
        assert abs(p.outliers[0].singular_value - sim) < 0.03 * sim
        assert 1.9 < p.bulk_edge < 2.05


def test_deterministic_and_bad_input():
    kw = dict(psi=1.0, phi=2.0, eta1=5.0, eta2=5.0)
    a = two_step_finite_n("erf", "linear", N=500, **kw)
    b = two_step_finite_n("erf", "linear", N=500, **kw)
    assert a == b
    with pytest.raises(ValueError, match="N must"):
        two_step_finite_n("erf", "linear", N=1, **kw)
    with pytest.raises(ValueError, match="target must have Hermite degree"):
        two_step_finite_n("erf", "hermite(0, 1, 0, 0, 0, 1)", N=500, **kw)
    with pytest.raises(ValueError, match="target must be single-index"):
        two_step_finite_n("erf", ["linear", "he2n"], N=500, **kw)
    with pytest.raises(ValueError, match="activation must be relu or smooth"):
        two_step_finite_n("step", "linear", N=500, **kw)
    big = two_step_finite_n("tanh", "linear", psi=1.0, phi=2.0, eta1=200.0, eta2=5.0, N=1000)
    assert _flagged(big, "exceeds")


def test_a_spread_beyond_the_value_marks_the_prediction_unreliable(monkeypatch):
    """A target too heavy-tailed for its batch (docs/theory/two_step.md §9.3, "Off the grid").

    The quadratic sigma with He1 + He4/5 at N = 1500, psi = 2, phi = 1 (n = 750), eta_t = N^(0.28, 0.14): the spikes
    of P rest on moments of y up to z^16 that a batch of 750 does not realise; a spike at 29 spreads by 207 over
    batches (simulated top value about 18: 17.52 +- 0.77 over 4 draws).  The result says so.

    At N = d = 1000, n = 2000, eta_t = N^(0.01, 0.33) the top spike sits near (simulated 15.46 +- 0.27, 40 draws of
    simulate_two_step, float32, seeds 5000-5039), but the second spike's first-order law spread by 26 around 6.04
    and, sharing ranks, carried the top value to 21.76.  That law is no longer used: the top value is within 6 %
    (16.31; 15.67 with the most extreme sample at equally spaced quantiles, which leave out the rare batches of so
    heavy a tail) and the result is marked unreliable.  On every grid of the acceptance page the largest spread is
    0.58 of its value (the quadratic sigma with He1 + He3/sqrt(6) at N = 500), and those predictions stay reliable."""
    from rmtfl.theory._two_step import finite_n as fn

    quad, he4 = "hermite(0, 1, 0.5)", "hermite(0, 1, 0, 0, 0.2)"
    p = two_step_finite_n(quad, he4, psi=2.0, phi=1.0, eta1=1500**0.28, eta2=1500**0.14, N=1500)
    assert _flagged(p, "too heavy")
    q = two_step_finite_n(quad, he4, psi=1.0, phi=2.0, eta1=1000**0.01, eta2=1000**0.33, N=1000)
    assert _flagged(q, "too heavy")
    assert abs(q.outliers[0].singular_value - 15.46) < 0.06 * 15.46
    # the batch's most extreme sample, averaged over its law, carries the top spike's rank from 30.4 to 72.7, where 4
    # draws have 25.35 +- 0.29 (probe_two_step_accuracy --wide --seed 14, point 37; 61.0 with equally spaced
    # quantiles of that sample, 78.7 and 82.6 with P's population Gram): a factor 2.39, beyond CARRY_LIMIT (on the
    # acceptance grids at most 1.61); the result is unreliable for that and for its 12 extreme samples all giving
    # outliers, and would not say the first at a limit of 2.5
    r = two_step_finite_n(quad, he4, psi=2.0, phi=1.0, eta1=1500**0.24, eta2=1500**0.31, N=1500)
    assert _flagged(r, "all 12 most extreme samples") and _flagged(r, "most extreme sample carries")
    ok = two_step_finite_n(quad, "hermite(0, 1, 0, 0.4082482904638631)", psi=1.0, phi=2.0, eta1=500**0.4,
                           eta2=500**0.4, N=500)
    assert ok.reliable and not ok.reasons and 0.5 < max(o.spread / o.singular_value for o in ok.outliers) < 1.0
    monkeypatch.setattr(fn, "CARRY_LIMIT", 2.5)
    r = two_step_finite_n(quad, he4, psi=2.0, phi=1.0, eta1=1500**0.24, eta2=1500**0.31, N=1500)
    assert not _flagged(r, "most extreme sample carries")


def test_a_wide_spread_is_noted_not_marked_unreliable():
    """An outlier spreading over batches by a quarter of its value or more puts a note on the result, not a reason
    (docs/theory/two_step.md §9.3, "What the result flags"): the quadratic sigma with He1 + He3/sqrt(6) at N = 1000,
    eta_t = N^(0.2, 0.4), whose third value is a single sample with a spread of 5.6, carries it and names exactly the
    outliers past the share; tanh there does not.  Its values against 200 draws:
    :func:`test_p_given_the_most_extreme_sample_against_200_draws`.  The numbers the note quotes are checked against
    the acceptance page in tests/test_bench_two_step_finite_n.py."""
    from rmtfl.theory._two_step.two_step import SPREAD_NOTE

    quad, he3 = "hermite(0, 1, 0.5)", "hermite(0, 1, 0, 0.4082482904638631)"
    p = two_step_finite_n(quad, he3, psi=1.0, phi=2.0, eta1=1000**0.2, eta2=1000**0.4, N=1000)
    notes = [n for n in p.notes if "by at least a quarter" in n]
    assert p.reliable and not p.reasons and len(notes) == 1
    wide = [o for o in p.outliers if o.spread >= SPREAD_NOTE * o.singular_value]
    assert 1 <= len(wide) < len(p.outliers) and p.outliers[2].kind == "sample"
    assert all(f"{o.singular_value:#.4g} ({o.kind}, spread {o.spread:#.3g})" in notes[0] for o in wide)
    assert notes[0].count(", spread ") == len(wide)
    q = two_step_finite_n("tanh", he3, psi=1.0, phi=2.0, eta1=1000**0.2, eta2=1000**0.4, N=1000)
    assert not any("by at least a quarter" in n for n in q.notes)


#: Means and standard deviations of the top values over 200 draws of two reused points (source: its "_source" key).
TOP_SAMPLE_REFERENCE = json.loads((pathlib.Path(__file__).parent / "top_sample_reference.json").read_text())


@pytest.mark.parametrize("point", [k for k in TOP_SAMPLE_REFERENCE if k != "_source"])
def test_p_given_the_most_extreme_sample_against_200_draws(monkeypatch, point):
    """The ranks the spikes of P share with the batch's most extreme sample, with P's Gram given that sample at each
    of its quantiles (docs/theory/two_step.md §8.3, "P given the batch's most extreme sample"), against 200 draws of
    the quadratic sigma with He1 + He3/sqrt(6), N = 1000, reused, at eta_t = N^(0.2, 0.4) and N^(0.3, 0.2).

    At (0.2, 0.4) the second value, a spike of P, is within 3 standard errors of the draws (P's population Gram puts
    it 12.6 % and 9 standard errors high); the top two values of both points, the spikes, are within 5 % of the
    draws' means, the third within 7.5 %.  That is the accuracy stated in docs/theory/two_step.md §9.3, not the 3
    standard errors of 200 draws: the third value of both points, a single sample, is 7.2 % and 7.1 % high (3.5 and
    3.9 standard errors), and at (0.3, 0.2) the second spike 4.5 % high (2.9).  (With the most extreme sample at
    equally spaced quantiles, which leave out the rare batches where it lifts those ranks, the third values were
    6.5 % and 3.5 % high: docs/theory/two_step.md §8.3, "The quantiles of the most extreme sample".)  Were the
    spikes' laws to move the ranks by their whole variance, the part the most extreme sample carries counted twice,
    they would part the two spikes further at (0.3, 0.2): the top one 7.2 % high."""
    from rmtfl.theory._two_step import finite_n as fn

    act, tgt, batch, a1, a2 = point.split("|")
    ref = TOP_SAMPLE_REFERENCE[point]

    def predict():
        p = two_step_finite_n(act, tgt, psi=1.0, phi=2.0, eta1=1000 ** float(a1), eta2=1000 ** float(a2), N=1000,
                              batch=batch)
        return [o.singular_value for o in p.outliers[:3]]
    now = predict()
    errors = [v / m - 1 for v, m in zip(now, ref["mean"])]
    assert max(abs(e) for e in errors[:2]) < 0.05 and abs(errors[2]) < 0.075, errors
    if point.endswith("0.2|0.4"):
        assert abs(now[1] - ref["mean"][1]) < 3 * ref["sd"][1] / math.sqrt(ref["draws"])
        monkeypatch.setattr(fn, "TOP_SAMPLE_GRAM", False)
        assert predict()[1] / ref["mean"][1] - 1 > 0.1
    else:
        monkeypatch.setattr(fn, "TOP_SAMPLE_SPREAD", False)
        assert predict()[0] / ref["mean"][0] - 1 > 0.06


#: Means and standard deviations of the top values over 200 draws (100 at N = 2000) at points whose values missed
#: against 25 or 49 draws of the acceptance page (source: its "_source" key; keys end with N).
OWN_SEED_MISSES = json.loads((pathlib.Path(__file__).parent / "own_seed_misses_reference.json").read_text())


#: The values of those points that miss their 200 draws, with the error they stay within (docs/theory/two_step.md §8.4,
#: "The misses against 200 draws"): single samples just below the spikes of P, which the rare batches of the most
#: extreme sample lift (measured: +6.9 %, +5.5 %, and +8.9 %, +5.4 % at N = 500).
KNOWN_MISSES = {
    "hermite(0, 1, 0.5)|hermite(0, 1, 0, 0.4082482904638631)|reused|0.1|0.4|1000": {3: 0.075},
    "hermite(0, 1, 0.5)|hermite(0, 1, 0, 0.4082482904638631)|reused|0.0|0.4|1000": {3: 0.065},
    "hermite(0, 1, 0.5)|hermite(0, 1, 0, 0.4082482904638631)|reused|0.2|0.2|500": {2: 0.095, 3: 0.065},
}


@pytest.mark.parametrize("point", [k for k in OWN_SEED_MISSES if k != "_source"])
def test_values_where_the_pages_draws_missed_against_200_draws(point):
    """Points whose values missed the acceptance page's draws of their own (25) or pooled (49): the quadratic sigma
    with He1 + He3/sqrt(6) at N = 1000, (0.1, 0.4) (its second value 14.24 against 12.32) and (0, 0.4) (the fourth,
    4.42 against 4.78), at N = 500, (0.2, 0.2) (the top one, 11.62 against 10.52), at N = 2000, (0.2, 0.4) (39.45
    against 37.25); with He1 + He2/2 at N = 500, (0.3, 0.1) (3.18 against 2.95), and at N = 2000, (0.2, 0.4) (the
    fourth, 3.98 against 4.16); gelu with He1 + He3/sqrt(6) at N = 1000, (0.4, 0.2) (2.37 against 2.46); tanh with
    He1 + He3/sqrt(6) at N = 1000, (0, 0.2) (4.39 against 4.24); erf with He1 + He3/sqrt(6) and a fresh batch at
    N = 1000, (0.4, 0.2) (the second, 2.41 against 2.26).  Against 200 draws (100 at N = 2000) every predicted value
    those misses named is within 3 % or 3 standard errors of the mean of its rank: they were the page's draws
    (docs/theory/two_step.md §8.4, "The misses against 200 draws").  So is every other value, but the
    :data:`KNOWN_MISSES`, single samples below the spikes that stay within the error stated there."""
    act, tgt, batch, a1, a2, _ = point.split("|")
    ref = OWN_SEED_MISSES[point]
    N = ref["N"]
    p = two_step_finite_n(act, tgt, psi=1.0, phi=2.0, eta1=N ** float(a1), eta2=N ** float(a2), N=N, batch=batch,
                          phi2=2.0 if batch == "fresh" else None)
    values = [o.singular_value for o in p.outliers]
    assert 1 <= len(values) <= len(ref["mean"])
    known = KNOWN_MISSES.get(point, {})
    for rank, (v, m, sd) in enumerate(zip(values, ref["mean"], ref["sd"]), start=1):
        if rank in known:
            assert abs(v / m - 1) < known[rank], (rank, values, ref["mean"])
        else:
            assert abs(v - m) <= max(0.03 * m, 3 * sd / math.sqrt(ref["draws"])), (rank, values, ref["mean"])


def test_the_wide_spread_note_takes_the_share_and_skips_missing_spreads():
    """:func:`wide_spread_note`: an outlier at exactly the share is named, one just below it is not, and one without a
    spread (the asymptotic routes) is skipped."""
    from rmtfl.theory import TwoStepOutlier
    from rmtfl.theory._two_step.two_step import SPREAD_NOTE, wide_spread_note

    def out(v, sd):
        return TwoStepOutlier(v, 1.0, 0.0, (0.0,), 0.0, "sample", spread=sd)
    assert wide_spread_note([out(8.0, SPREAD_NOTE * 8.0 * (1 - 1e-9)), out(4.0, None)]) is None
    note = wide_spread_note([out(8.0, SPREAD_NOTE * 8.0), out(4.0, 0.5), out(3.0, 2.0)])
    assert note.startswith("outliers at 8.000 (sample, spread 2.00), 3.000 (sample, spread 2.00) spread over")


@pytest.mark.parametrize("act", ["square", "he2", "hermite(0, 0, 1, 0, 0.1)"])
def test_an_even_sigma_is_marked_unreliable(act):
    """An even sigma has an odd sigma' of mean 0 at every step: F = 0, P vanishes, and single samples make every
    outlier (docs/theory/two_step.md §9.3, "A sigma without a linear part").  There the route falls short: square,
    He1 + He2/2, N = 300, eta_t = N^0.3, predicts its top root at 11.96 (below the count rule's cut, so no outlier
    reported) where 40 draws have a top value of 18.9 +- 1.2 (`python -m benchmarks.probe_two_step_accuracy --draws 40
    --at '{"act": "square", "tgt": "hermite(0, 1, 0.5)", "N": 300, "a1": 0.3, "a2": 0.3}'`).  The result says so;
    an odd or a mixed sigma, and no step at all, do not."""
    kw = dict(psi=1.0, phi=2.0, eta1=300**0.3, eta2=300**0.3, N=300)
    p = two_step_finite_n(act, QUAD, **kw)
    assert _flagged(p, "P vanishes")
    assert all(o.kind == "sample" for o in p.outliers) and not p.spikes
    for other in ("tanh", QUAD, "relu"):
        assert not any("P vanishes" in n for n in two_step_finite_n(other, QUAD, **kw).notes)
    still = two_step_finite_n(act, QUAD, psi=1.0, phi=2.0, eta1=0.0, eta2=0.0, N=300)
    assert still.reliable and not still.reasons and not still.outliers


@pytest.mark.parametrize("N", [2, 3, 7, 23])
@pytest.mark.parametrize("batch", ["reused", "fresh"])
def test_tiny_widths_keep_most_samples_in_the_bulk(N, batch):
    """A batch smaller than the extreme samples the bulk leaves out (12 at n >= 48) keeps three quarters of its
    samples in the bulk (docs/theory/two_step.md §8.3): a finite prediction, not an error from an empty bulk."""
    for tgt in ("hermite(0, 1, 0, 0.4082482904638631)", QUAD):
        p = two_step_finite_n("gelu", tgt, psi=1.0, phi=2.0, eta1=N**0.3, eta2=N**0.3, N=N, batch=batch,
                              phi2=2.0 if batch == "fresh" else None)
        assert math.isfinite(p.bulk_edge) and p.bulk_edge > 0
        assert p.outliers and all(math.isfinite(o.singular_value) and o.singular_value > p.bulk_edge
                                  for o in p.outliers)
        assert p.count_range[0] <= len(p.outliers) <= p.count_range[1]


#: Cells of the acceptance grid checked here (docs/theory/two_step.md §8.4 has the whole grid): sigma, target,
#: (alpha1, alpha2), batch.  HE3 = He1 + He3/sqrt6 (heavy tails: single-sample outliers, docs/theory/two_step.md §8.3).
HE3 = "hermite(0, 1, 0, 0.4082482904638631)"
CELLS = [("tanh", QUAD, 0.4, 0.2, "reused"), ("erf", QUAD, 0.3, 0.3, "fresh"), ("gelu", QUAD, 0.4, 0.4, "reused"),
         (QUAD, QUAD, 0.3, 0.3, "reused"), ("tanh", HE3, 0.3, 0.4, "reused"),
         # where P's second spike leans on the batch's extreme samples (docs/theory/two_step.md §8.3)
         (QUAD, QUAD, 0.1, 0.2, "reused"), ("gelu", HE3, 0.4, 0.2, "reused"),
         # relu: a step and a delta in closed form (docs/theory/two_step.md §8.2, "relu")
         ("relu", QUAD, 0.3, 0.3, "reused"), ("relu", HE3, 0.3, 0.3, "reused"), ("relu", QUAD, 0.4, 0.4, "fresh"),
         # two sigma off the acceptance grid (docs/theory/two_step.md §8.4, "Two more sigma"); softplus has a second outlier
         ("softplus", QUAD, 0.4, 0.4, "reused"), ("sigmoid", HE3, 0.4, 0.4, "fresh")]
#: Cells where the single-sample outliers of docs/theory/two_step.md §8.3 vary from draw to draw more than a median
#: batch predicts (the limit measured in docs/theory/two_step.md §8.4): there the spikes of P and the bulk edge are checked, not the count.
SAMPLE_LIMITED = {("gelu", QUAD, 0.4, 0.4, "reused"), (QUAD, QUAD, 0.3, 0.3, "reused")}


@pytest.mark.slow
@pytest.mark.parametrize("act,tgt,a1,a2,batch", CELLS)
def test_against_simulation(act, tgt, a1, a2, batch):
    """N = d = 1000, n = n2 = 2000, 6 seeds: each predicted outlier within 3 % or 3 s.e. of the simulated value of the
    same rank, the count checked against the draws' counts by the rule of docs/theory/two_step.md §9.2, and the bulk
    edge within 3 s.e. + 3 N^(-2/3) edge of the fitted simulated edges.

    The count: where the prediction says it does not vary over batches (``count_range`` one value), it equals a
    median of the six counts (either middle value, as on the acceptance page).  Where it does vary, the median of
    six draws is itself uncertain: even an exact median of the count's law misses it often (the criterion's noise
    floor, docs/theory/two_step.md §8.4; at the quadratic sigma's (0.1, 0.2) 40 draws, seeds 1000-1039, count 1, 2
    and 3 outliers 14, 20 and 6 times, so a block of six seeds has four ones with probability 0.12; at gelu with
    He1 + He3/sqrt6, (0.4, 0.2), counts 2 to 11 over 25 draws, two of five blocks of six missed the predicted 6).
    There the prediction must pass a two-sided sign test at 5 % as a median of the six counts (not all six on one
    side of it), and its ``count_range`` must hold a middle count."""
    from benchmarks.bench_two_step_finite_n import middle_counts, sign_test     # the acceptance page's criteria
    from rmtfl.numerics import edge_outlier_count, simulate_two_step

    N = 1000
    kw = dict(batch="fresh", n2=2 * N) if batch == "fresh" else {}
    p = two_step(act, tgt, psi=1.0, phi=2.0, eta1=N**a1, eta2=N**a2, N=N, batch=batch,
                 phi2=2.0 if batch == "fresh" else None)
    assert p.mode == "finite-N"
    sims = [simulate_two_step(act, tgt, N=N, d=N, n=2 * N, eta1=N**a1, eta2=N**a2, rng=1000 + i, dtype="float32",
                              **kw).singular_values[:80] for i in range(6)]
    S = np.array(sims)
    fits = [edge_outlier_count(s, window=math.ceil(0.8 * math.sqrt(N))) for s in sims]
    checked = p.outliers
    counts = np.array([f.count for f in fits])
    low, high = middle_counts(counts)                    # the sample medians of six counts
    if (act, tgt, a1, a2, batch) in SAMPLE_LIMITED:
        checked = [o for o in p.outliers if o.kind == "spike"]
        assert len(checked) <= high
    elif p.count_range[0] < p.count_range[1]:
        assert sign_test(counts, len(p.outliers)) >= 0.05, counts
    else:
        assert low <= len(p.outliers) <= high, counts
    # the count's spread over batches (docs/theory/two_step.md §8.3) holds a median simulated count, except where
    # the collective effect of several extreme samples lifts it further
    # (gelu at (0.4, 0.4): 2-3 against 4, docs/theory/two_step.md §8.4)
    if (act, tgt, a1, a2, batch) != ("gelu", QUAD, 0.4, 0.4, "reused"):
        assert p.count_range[0] <= high and low <= p.count_range[1], (p.count_range, counts)
    for i, o in enumerate(checked):
        m, se = S[:, i].mean(), S[:, i].std(ddof=1) / math.sqrt(6)
        assert abs(o.singular_value - m) <= max(0.03 * m, 3 * se), (i, o.singular_value, m, se)
    e = np.array([f.edge for f in fits])
    # the same statistic on both sides: the count rule's fitted edge (docs/theory/two_step.md §8.4)
    assert abs(p.fitted_edge - e.mean()) <= 3 * e.std(ddof=1) / math.sqrt(6) + 3 * N ** (-2 / 3) * e.mean()


#: Inputs far beyond the checked range, found by probing random inputs (docs/theory/two_step.md §9, "Steps far
#: beyond the checked range"): each once took minutes or ended in an obscure numerical exception.  They now fall
#: back with the reason, or are flagged (eta1 max|a_j| beyond the checked range, a step of at least N^(1/2)).
EXTREME = [
    ("hermite(0, 1, 0.5)", "he2", dict(psi=0.1, phi=0.5, eta1=100.0, eta2=10.0, N=10)),        # fold at eta1 max|a_j| ~ 52
    ("he3", "tanh", dict(psi=0.1, phi=1.0, eta1=10.0, eta2=100.0, N=1000, batch="fresh", phi2=0.3)),  # eta2 > N^1/2
    ("he3", "hermite(0, 0, 0, 0, 1)", dict(psi=0.5, phi=1.0, eta1=100.0, eta2=100.0, N=3000)),  # no column root
]


@pytest.mark.parametrize("act,tgt,kw", EXTREME)
def test_steps_beyond_the_checked_range_say_so(act, tgt, kw):
    import time
    import warnings

    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        p = two_step(act, tgt, **kw)
    assert time.perf_counter() - t0 < 30
    assert _flagged(p, "two_step_finite_n failed") or _flagged(p, "at least N^(1/2)")


def test_the_default_taylor_index_is_capped():
    """eta = 100 at N = 2 would ask for Lambda + 2 ~ 190 Taylor terms (Hermite tables overflow): at most 12."""
    from rmtfl.theory._two_step.plan import MAX_DEFAULT_K, plan_two_step

    plan = plan_two_step(get_activation("softplus"), make_target("hermite(0, 1, 0.5)"), psi=1.0, phi=8.0,
                         eta1=10.0, eta2=100.0, N=2)
    assert plan.K == MAX_DEFAULT_K
    p = two_step("softplus", "hermite(0, 1, 0.5)", psi=1.0, phi=8.0, eta1=10.0, eta2=100.0, N=2)
    assert not p.reliable


def test_a_kernel_step_that_fails_near_the_fold_is_retried_shorter():
    """tanh, He4/sqrt(24) target, psi = 0.1, phi = 0.2, fresh, eta1 = 10 at N = 3000 (eta1 max|a_j| ~ 0.66, well inside
    the checked range): one continuation step of the resolvent kernel failed near the fold and the whole prediction
    with it; shorter steps from the same point now reach it (docs/theory/two_step.md §9)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        p = two_step("tanh", "hermite(0, 0, 0, 0, 1)", psi=0.1, phi=0.2, eta1=10.0, eta2=0.0, N=3000, batch="fresh",
                     phi2=2.0)
    assert p.mode == "finite-N" and p.outliers and p.outliers[0].singular_value > p.bulk_edge


@pytest.mark.parametrize("act", ["tanh", "erf", "gelu"])
def test_fresh_F_table_is_the_two_dimensional_gaussian_expectation(act):
    """A fresh batch's ``F``, ``c`` and ``E sigma'^2`` are expectations over ``(z, xi)`` that ``F_table`` takes as
    one Gaussian ``z + t xi``: against the two-dimensional Gauss–Hermite product rule at high order (80 x 40 nodes),
    at ``eta_1 = N^0.4``, ``N = 1000``, the step's full range of rows (|g| <= 4), the data points of weight above
    1e-8 (the tail of the data grid carries no weight and needs more nodes)."""
    A, T = get_activation(act), make_target("hermite(0, 1, 0, 0.4082482904638631)")
    st = finite_n_setup(A, T, phi=2.0, batch="fresh", phi2=2.0)
    t = 1000**0.4 * np.linspace(-4, 4, 9) / math.sqrt(1000)
    z, wz = gauss_hermite_rule(80)
    xi, wx = gauss_hermite_rule(40)
    W = np.outer(wz, wx)
    f0, c0 = float(wz @ A.derivative(1, z)), float(wz @ A.derivative(2, z))
    got = F_table(A, st, t)
    keep = st.w > 1e-8
    for q, tq in enumerate(t):
        u = z[None, :, None] + tq * (st.mu1 * st.s[keep, None, None] + st.tau_h * xi[None, None, :])
        v, d2 = A.derivatives((1, 2), u)
        ref = (np.einsum("iab,ab->i", v, W) - f0 + st.mu1, np.einsum("iab,ab->i", d2, W) - c0 + st.mu2,
               np.einsum("iab,ab->i", v * v, W))
        for g, r in zip(got, ref):
            np.testing.assert_allclose(g[q, keep], r, atol=1e-5)


@pytest.mark.parametrize("act, tgt, kw", [
    ("hermite(0, 1, 0.5)", "hermite(0, 1, 0, 0.4082482904638631)", dict(batch="reused", extreme_samples="single")),
    ("hermite(0, 1, 0.5)", "hermite(0, 1, 0, 0.4082482904638631)", dict(batch="reused")),
    ("gelu", "hermite(0, 1, 0, 0.4082482904638631)", dict(batch="fresh", phi2=2.0)),
])
def test_the_joint_problems_sample_ranks_move_values_not_counts(monkeypatch, act, tgt, kw):
    """Each single sample's rank takes its mean from the joint problem with P, whose columns carry M's whole-law
    eigenvalue (docs/theory/two_step.md §8.3, "The single samples' ranks from the same solutions"): against the
    prediction before that (both switches off) the values of the samples move and the count and its range do not,
    in either way of taking the extreme samples and with either batch."""
    from rmtfl.theory._two_step import finite_n as fn, sample_order

    def predict():
        return two_step(act, tgt, psi=1.0, phi=2.0, eta1=1000**0.2, eta2=1000**0.4, N=1000, **kw)

    now = predict()
    monkeypatch.setattr(fn, "WHOLE_LAW_EIGENVALUE", False)
    monkeypatch.setattr(sample_order, "JOINT_SAMPLE_RANKS", False)
    before = predict()
    assert len(now.outliers) == len(before.outliers) and now.count_range == before.count_range
    samples = [(a, b) for a, b in zip(now.outliers, before.outliers) if a.kind == "sample"]
    assert samples and all(b.kind == "sample" for _, b in samples)
    assert max(abs(a.singular_value / b.singular_value - 1) for a, b in samples) > 5e-3


@pytest.mark.parametrize("act, kw", [
    ("hermite(0, 1, 0.5)", dict(batch="reused", extreme_samples="single")),
    ("hermite(0, 1, 0.5)", dict(batch="reused")),
    ("gelu", dict(batch="fresh", phi2=2.0)),
])
def test_p_given_the_most_extreme_sample_moves_values_not_counts(monkeypatch, act, kw):
    """``TOP_SAMPLE_GRAM`` (docs/theory/two_step.md §8.3, "P given the batch's most extreme sample") changes only the
    means of the ranks averaged over the batch's most extreme sample: with a reused batch the spikes' values move and
    the count, its range and the edge do not, in either way of taking the extreme samples; fresh batches keep the
    population Gram, so nothing moves there."""
    from rmtfl.theory._two_step import finite_n as fn

    def predict():
        return two_step(act, "hermite(0, 1, 0, 0.4082482904638631)", psi=1.0, phi=2.0, eta1=1000**0.2,
                        eta2=1000**0.4, N=1000, **kw)
    now = predict()
    monkeypatch.setattr(fn, "TOP_SAMPLE_GRAM", False)
    before = predict()
    assert len(now.outliers) == len(before.outliers) and now.count_range == before.count_range
    assert now.bulk_edge == before.bulk_edge and now.fitted_edge == pytest.approx(before.fitted_edge, rel=1e-12)
    moved = max(abs(a.singular_value / b.singular_value - 1) for a, b in zip(now.outliers, before.outliers))
    assert (moved > 0.05) if kw["batch"] == "reused" else (moved == 0.0), moved
