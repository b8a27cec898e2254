"""One-step predictions (docs/theory/two_step.md §3.3); reference values from the closed forms written out here."""
import math

import pytest

from rmtfl.theory import hermite_coeff, one_step


def _closed(mu1, mus, ey2, psi, phi, eta):
    b2 = mus**2 + ey2 / phi
    th = abs(eta * mu1) * math.sqrt(b2)
    t2 = th * th
    s = math.sqrt((1 + t2) * (psi + t2)) / th
    wd = 1 - (psi + t2) / (t2 * (t2 + 1))
    wn = 1 - psi * (1 + t2) / (t2 * (t2 + psi))
    return th, s, wd * mus**2 / b2, wn, psi**0.25 / (abs(mu1) * math.sqrt(b2))


@pytest.mark.parametrize("psi,phi,eta", [(1.0, 2.0, 3.0), (0.5, 3.0, 2.0), (2.0, 1.5, 4.0)])
def test_closed_form_tanh_linear(psi, phi, eta):
    mu1 = hermite_coeff("tanh", 1)
    th, s, ct, ca, thr = _closed(mu1, 1.0, 1.0, psi, phi, eta)
    p = one_step("tanh", "linear", psi=psi, phi=phi, eta=eta)
    assert p.theta == pytest.approx(th, rel=1e-12)
    assert p.singular_value == pytest.approx(s, rel=1e-12)
    assert p.cos2_target == pytest.approx(ct, rel=1e-12)
    assert p.cos2_second_layer == pytest.approx(ca, rel=1e-12)
    assert p.threshold == pytest.approx(thr, rel=1e-12)


def test_reference_value():
    # tanh: mu_1 = 0.6057055..., theta = 3 mu_1 sqrt(1.5)
    p = one_step("tanh", "linear", psi=1.0, phi=2.0, eta=3.0)
    assert p.theta == pytest.approx(2.2255041, abs=1e-6)
    assert p.singular_value == pytest.approx(p.theta + 1 / p.theta, rel=1e-12)  # psi = 1


def test_below_threshold_and_zero_mu1():
    p = one_step("tanh", "linear", psi=1.0, phi=2.0, eta=1.0)
    assert not p.is_outlier and p.singular_value == 2.0 and p.cos2_target == 0.0
    q = one_step("tanh", "he2n", psi=1.0, phi=2.0, eta=5.0)     # information exponent 2: outlier, zero alignment
    assert q.is_outlier and q.cos2_target == 0.0
    r = one_step("he2", "linear", psi=1.0, phi=2.0, eta=5.0)    # mu_1(sigma) = 0: no spike
    assert r.theta == 0.0 and math.isinf(r.threshold)


def test_multi_index_and_noise():
    p = one_step("tanh", ["linear", "tanh"], psi=1.0, phi=2.0, eta=3.0)
    assert len(p.cos2_targets) == 2 and p.cos2_target == pytest.approx(sum(p.cos2_targets))
    q = one_step("tanh", "linear", psi=1.0, phi=2.0, eta=3.0, noise=1.0)
    assert q.theta == pytest.approx(3 * hermite_coeff("tanh", 1) * math.sqrt(1 + 2 / 2), rel=1e-12)


@pytest.mark.parametrize("kw", [dict(psi=0.0), dict(psi=-1.0), dict(phi=0.0), dict(noise=-0.1)])
def test_bad_inputs(kw):
    args = dict(activation="tanh", target="linear", psi=1.0, phi=2.0, eta=1.0)
    args.update(kw)
    with pytest.raises(ValueError, match=list(kw)[0]):
        one_step(**args)


def test_unknown_activation_or_target():
    with pytest.raises(ValueError, match="unknown activation"):
        one_step("foo", "linear", psi=1.0, phi=2.0, eta=1.0)
    with pytest.raises(ValueError, match="target|activation"):
        one_step("tanh", "bar", psi=1.0, phi=2.0, eta=1.0)


def test_ratios_and_step_are_keyword_only():
    with pytest.raises(TypeError):
        one_step("tanh", "linear", 1.0, 2.0, 3.0)
    assert one_step("tanh", "linear", psi=1.0, phi=2.0, eta=3.0).to_dict()["is_outlier"] is True
