"""Semi-analytic two-step predictions (docs/theory/two_step.md §8 step 5, §8.1): sampled Gram matrices of P and the
sampled finite-N bulk, moved out of the deterministic theory layer (rmtfl.numerics.two_step_semi_analytic)."""
import math

import numpy as np
import pytest

from rmtfl.numerics import two_step_semi_analytic
from rmtfl.theory import bgn_dtransform, two_step

QUAD = "hermite(0, 1, 0.5)"
QT = [0.0, 1.0, 1 / math.sqrt(2)]


def _sa(act, tgt, psi, phi, eta1, eta2, **kw):
    return two_step_semi_analytic(act, tgt, psi=psi, phi=phi, eta1=eta1, eta2=eta2, **kw)


def test_quadratic_two_outliers_analytic_vs_sampled_grams():
    p = two_step(QUAD, QT, psi=1.0, phi=4.0, eta1=8.0, eta2=8.0, N=1500, K=1)    # the Taylor route (exact for quadratic sigma)
    assert p.mode == "analytic" and p.K == 1 and len(p.outliers) == 2
    q = _sa(QUAD, QT, 1.0, 4.0, 8.0, 8.0, N=1500, rng=3)
    assert q.mode == "semi-analytic" and q.bulk == "mp" and len(q.outliers) == 2 and q.K == p.K
    assert any("sampled a, X, y" in n for n in q.notes)
    for a, b in zip(p.outliers, q.outliers):   # sampled Gram matrices fluctuate by O(N^-1/2)
        assert a.singular_value == pytest.approx(b.singular_value, rel=0.06)


def test_sampled_grams_reproducible_and_rng_dependent():
    a = _sa("tanh", "linear", 1.0, 2.0, 16.0, 16.0, N=400, rng=7)
    b = _sa("tanh", "linear", 1.0, 2.0, 16.0, 16.0, N=400, rng=7)
    c = _sa("tanh", "linear", 1.0, 2.0, 16.0, 16.0, N=400, rng=8)
    assert a.mode == "semi-analytic" and a.spikes == b.spikes and a.spikes != c.spikes
    g = np.random.default_rng(7)                                   # a Generator is used as it is
    assert _sa("tanh", "linear", 1.0, 2.0, 16.0, 16.0, N=400, rng=g).spikes == a.spikes


def test_taylor_note_and_second_layer_law():
    big = _sa("tanh", "linear", 1.0, 2.0, 1000**0.35, 1000**0.45, N=1000, rng=0)
    assert big.taylor_parameter > 0.5 and any("unreliable" in n for n in big.notes)
    r = _sa("tanh", "tanh", 1.0, 2.0, 6.0, 6.0, batch="fresh", phi2=3.0, N=400, rng=7, second_layer="rademacher")
    assert r.batch == "fresh" and r.outliers


def test_bad_input():
    with pytest.raises(TypeError):
        _sa("tanh", "linear", 1.0, 2.0, 1.0, 1.0, rng=0)                          # N is required
    with pytest.raises(ValueError, match=r"\bN\b"):
        _sa("tanh", "linear", 1.0, 2.0, 1.0, 1.0, N=None, rng=0)
    with pytest.raises(ValueError, match="grams"):
        _sa(QUAD, QT, 1.0, 4.0, 5.0, 5.0, N=300, grams="other", rng=0)
    with pytest.raises(ValueError, match="bulk"):
        _sa(QUAD, QT, 1.0, 4.0, 5.0, 5.0, N=300, bulk="other", rng=0)
    with pytest.raises(ValueError, match="rmtfl.theory.two_step"):                  # nothing to sample
        _sa(QUAD, QT, 1.0, 4.0, 5.0, 5.0, N=300, grams="analytic", rng=0)
    with pytest.raises(ValueError, match="bulk_samples"):
        _sa(QUAD, QT, 1.0, 4.0, 5.0, 5.0, N=300, bulk="finite-N", rng=0, bulk_samples=0)
    with pytest.raises(ValueError, match="phi2"):
        _sa(QUAD, QT, 1.0, 4.0, 5.0, 5.0, N=300, batch="fresh", rng=0)


# ------------------------------------------------------------ finite-N bulk (bulk="finite-N")
def test_finite_bulk_master_equation_reduces_to_dtransform():
    # generic (delocalised) unit spike vectors on an invariant bulk: Phi_A = phi(z), Phi_B = phi~(z), so the
    # master equation det(I - Phi_A Phi_B) = 0 is the D-transform equation D(s) = theta^-2 (docs/theory/two_step.md §2.2)
    from rmtfl.numerics._two_step.finite_bulk import FiniteBulk, finite_bulk_outliers

    rng = np.random.default_rng(0)
    m = 300
    lam = np.sort(rng.uniform(0.0, 4.0, m))
    e = np.full((m, 1), 1 / math.sqrt(m))
    z0 = np.zeros((1, 1))
    fb = FiniteBulk((lam,), (e,), (e,), (z0,), (z0,), (float(np.sqrt(lam.max())),), float(np.sqrt(lam.max())), 1)
    for theta in (1.3, 2.5):
        got = finite_bulk_outliers(fb, np.eye(1), np.array([[theta**2]]), count=1)[0]
        assert got == pytest.approx(bgn_dtransform(theta, 1.0, eigenvalues=lam).singular_value, rel=1e-10)


def test_finite_bulk_quadratic_and_reproducible():
    kw = dict(N=300, grams="analytic", bulk="finite-N", rng=4, bulk_samples=1)
    a = _sa(QUAD, QT, 1.0, 4.0, 5.7, 5.7, **kw)
    b = _sa(QUAD, QT, 1.0, 4.0, 5.7, 5.7, **kw)
    mp = two_step(QUAD, QT, psi=1.0, phi=4.0, eta1=5.7, eta2=5.7, N=300, K=1)    # the Taylor route, MP bulk
    assert a.bulk == "finite-N" and mp.bulk == "mp" and mp.bulk_top is None
    assert any("finite-N bulk" in n for n in a.notes) and a.mode == "analytic"
    assert [o.singular_value for o in a.outliers] == [o.singular_value for o in b.outliers]
    assert a.spikes == mp.spikes and len(a.outliers) == len(mp.outliers) == 2
    # the widened, non-invariant bulk pushes the near-bulk outlier up; the big one barely moves
    assert a.outliers[1].singular_value > mp.outliers[1].singular_value > a.bulk_top
    assert a.outliers[0].singular_value == pytest.approx(mp.outliers[0].singular_value, rel=0.03)
    assert a.outliers[0].cos2_target == mp.outliers[0].cos2_target      # overlaps: MP formulas


def test_finite_bulk_with_sampled_grams_spawns_two_streams():
    a = _sa(QUAD, QT, 1.0, 4.0, 8.0, 8.0, N=300, bulk="finite-N", rng=3, bulk_samples=1)
    assert a.mode == "semi-analytic" and a.bulk == "finite-N" and len(a.outliers) == 2
    assert any("sampled a, X, y" in n for n in a.notes) and any("finite-N bulk" in n for n in a.notes)
    s = _sa(QUAD, QT, 1.0, 4.0, 8.0, 8.0, N=300, rng=np.random.default_rng(3).spawn(2)[0])
    assert a.spikes == s.spikes        # the Gram matrices come from the first child
