"""Finite-N two-step route, non-perturbative in the first step (docs/theory/two_step.md §8.2)."""
import math

import numpy as np
import pytest

from rmtfl.theory import get_activation, make_target, two_step, two_step_bulk_edge, two_step_finite_n
from rmtfl.theory._two_step.finite_n import finite_n_grams, finite_n_setup
from rmtfl.theory._two_step.two_step import outliers_from_gram

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
        old = two_step(QUAD, HE2, psi=1.0, phi=2.0, eta1=e1, eta2=e2, N=1000).outliers
        assert len(out) == len(old) == 2
        for o, q in zip(out, old):
            assert abs(o.singular_value - q.singular_value) < 1e-6 * q.singular_value


def test_quadratic_sigma_bulk_edge_equals_the_exact_variance_profile():
    """For quadratic sigma the remainder variance vanishes and the profile is that of docs/theory/two_step.md §5.5."""
    for a1, a2 in [(0.3, 0.3)]:
        e1, e2 = 1000**a1, 1000**a2
        p = two_step_finite_n(QUAD, QUAD, psi=1.0, phi=2.0, eta1=e1, eta2=e2, N=1000)
        ref = two_step_bulk_edge(QUAD, QUAD, psi=1.0, phi=2.0, eta1=e1, eta2=e2, N=1000)
        assert abs(p.bulk_edge - ref) < 0.02 * ref          # measured 4.84 vs 4.84, 3.51 vs 3.54


def test_the_issue_case_is_no_longer_explosive():
    """tanh, z + He2/sqrt2, N = d = 1000, n = 2000, reused: simulation 15.4 (0.4, 0.2) and 11.7 (0.3, 0.3) with one
    outlier; the Taylor route gave 294.9 and spurious second outliers."""
    for (a1, a2), sim in [((0.4, 0.2), 15.4), ((0.3, 0.3), 11.7)]:
        p = two_step_finite_n("tanh", HE2, psi=1.0, phi=2.0, eta1=1000**a1, eta2=1000**a2, N=1000)
        assert len(p.outliers) == 1 and p.reliable and p.bulk == "finite-N"
        assert abs(p.outliers[0].singular_value - sim) < 0.03 * sim
        assert 2.0 < p.bulk_edge < 2.1


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
    with pytest.raises(ValueError, match="activation must be smooth"):
        two_step_finite_n("relu", "linear", N=500, **kw)
    big = two_step_finite_n("tanh", "linear", psi=1.0, phi=2.0, eta1=200.0, eta2=5.0, N=1000)
    assert not big.reliable and any("exceeds" in n for n in big.notes)


@pytest.mark.slow
@pytest.mark.parametrize("act,a1,a2", [("tanh", 0.4, 0.2), ("erf", 0.3, 0.3), ("gelu", 0.4, 0.4)])
def test_against_simulation(act, a1, a2):
    """Top outlier within 3 % or 3 s.e. (6 seeds), N = d = 1000, n = 2000, reused, target He1 + He2/2."""
    from rmtfl.numerics import simulate_two_step

    N = 1000
    p = two_step_finite_n(act, QUAD, psi=1.0, phi=2.0, eta1=N**a1, eta2=N**a2, N=N)
    s = np.array([simulate_two_step(act, QUAD, N=N, d=N, n=2 * N, eta1=N**a1, eta2=N**a2, rng=1000 + i,
                                    k=5).singular_values[0] for i in range(6)])
    tol = max(0.03 * s.mean(), 3 * s.std(ddof=1) / math.sqrt(6))
    assert abs(p.outliers[0].singular_value - s.mean()) < tol
