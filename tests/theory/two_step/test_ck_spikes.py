"""CK outliers after one step (docs/theory/kernel_spectra.md §4)."""
import math

import pytest

from rmtfl.theory import ck_one_step_spikes, ck_spectrum, one_step


def test_large_step_limit_of_bai_yao():
    # t1 -> inf: lam -> gamma t1 + m1(H)   (docs/theory/kernel_spectra.md §4.1)
    p = ck_one_step_spikes("tanh", "linear", psi=1.0, phi=2.0, eta=200.0)
    law = ck_spectrum("tanh", psi=1.0, phi=2.0)
    s1 = one_step("tanh", "linear", psi=1.0, phi=2.0, eta=200.0).singular_value
    t1 = law.mu1 ** 2 * s1 ** 2 + law.nonlinear_var
    step = [s for s in p.spikes if s.kind == "step"][0]
    assert step.location == pytest.approx(2.0 * t1 + law.moments(1)[1], rel=1e-3)


def test_threshold_is_above_the_w_threshold_and_separates():
    p = ck_one_step_spikes("tanh", "linear", psi=1.0, phi=2.0, eta=1.0)
    w_thr = one_step("tanh", "linear", psi=1.0, phi=2.0, eta=1.0).threshold
    assert p.eta_threshold >= w_thr
    below = ck_one_step_spikes("tanh", "linear", psi=1.0, phi=2.0, eta=0.98 * p.eta_threshold)
    above = ck_one_step_spikes("tanh", "linear", psi=1.0, phi=2.0, eta=1.02 * p.eta_threshold)
    assert below.count == 0 and above.count == 1
    assert above.spikes[0].location > above.bulk.edges.upper


def test_finite_n_terms():
    p = ck_one_step_spikes("relu", "linear", psi=1.0, phi=1.0, eta=4.0, N=2000)
    kinds = [s.kind for s in p.spikes]
    assert kinds == ["mu0", "step"]
    # the mu0 outlier moves up by ~ gamma mu0 mu2 eta^2 (sigma_b^2 + tau_h^2) = 0.159 * 16 * 0.75
    before = p.bulk.outliers[0].location
    assert p.spikes[0].location - before == pytest.approx(0.1592 * 16 * 0.75, rel=0.05)


def test_alpha_positive_counts_and_bad_input():
    p = ck_one_step_spikes("tanh", "linear", psi=1.0, phi=1.0, eta=1000 ** 0.3 * 2, N=1000, alpha=0.3)
    assert p.ell == 2 and p.count >= 1
    with pytest.raises(ValueError, match="N"):
        ck_one_step_spikes("tanh", "linear", psi=1.0, phi=1.0, eta=3.0, alpha=0.3)
    with pytest.raises(ValueError, match="psi"):
        ck_one_step_spikes("tanh", "linear", psi=-1.0, phi=1.0, eta=3.0)
    with pytest.raises(ValueError, match="alpha"):
        ck_one_step_spikes("tanh", "linear", psi=1.0, phi=1.0, eta=3.0, alpha=0.7, N=100)
    assert math.isinf(ck_one_step_spikes("he2", "linear", psi=1.0, phi=1.0, eta=3.0).eta_threshold)
