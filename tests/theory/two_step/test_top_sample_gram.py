"""P's Gram matrix over the batches given their most extreme sample (rmtfl/theory/_two_step/top_sample_gram.py,
docs/theory/two_step.md §8.3): against the same Gram formed on a quadrature of the conditional law itself, its mean
over the law of the maximum, and where the sample lies."""
import math

import numpy as np
import pytest

from rmtfl.theory import get_activation, make_target
from rmtfl.theory._two_step.finite_n import finite_n_grams, finite_n_setup, vbar_coefficients
from rmtfl.theory._two_step.right_gram import reused_moments
from rmtfl.theory._two_step.sample_spikes import reach_cuts, truncated_rule
from rmtfl.theory._two_step.joint_roots import top_quantile_rule
from rmtfl.theory._two_step.top_sample_gram import grams_given_top, moments_given_top, top_sample_levels

QUAD, HE3, HE2 = "hermite(0, 1, 0.5)", "hermite(0, 1, 0, 0.4082482904638631)", "hermite(0, 1, 0.5)"
N, PHI, ETA1, ETA2 = 1000, 2.0, 1000**0.2, 1000**0.4


def _setup(act, tgt):
    act, target = get_activation(act), make_target(tgt)
    st = finite_n_setup(act, target, phi=PHI, batch="reused", phi2=None)
    out = finite_n_grams(act, st, eta1=ETA1, eta2=ETA2, N=N, bulk=False)
    return act, target, st, out


def _grid(act, target, st):
    """The data grid of the same batch on other nodes of ``z*`` (what the prediction hands the module)."""
    def grid(rule):
        return finite_n_setup(act, target, phi=PHI, batch="reused", phi2=None, zs_rule=rule, ey2_ref=st.ey2)
    return grid


def _given(act, target, st, out, quantiles, n=int(PHI * N)):
    t, table = out[3], out[7]
    C = vbar_coefficients(st, ETA1, ETA2, t.size)
    return grams_given_top(act, target, st, table.F, t, C, n=n, quantiles=quantiles, grid=_grid(act, target, st)), C


@pytest.mark.parametrize("tgt", [HE3, HE2])
def test_against_the_conditional_law_on_its_own_quadrature(tgt):
    """Each conditional ``G_V`` against the Gram of :func:`finite_n_grams` on a data grid that is the conditional
    law itself: Gauss-Legendre of order 64 on the interval within the maximum's reach, weights ``(n - 1)/n`` in all,
    and the maximum with ``1/n`` -- no population grid, no subtracted tails.  Agreement to ``1e-5`` of the largest
    entry (measured: ``1.2e-6`` with He1 + He3/sqrt(6); the tails' segments have 3 nodes each)."""
    act, target, st, out = _setup(QUAD, tgt)
    n, Q = int(PHI * N), 4
    tops, _ = _given(act, target, st, out, Q, n)
    for (interval, probs), sides in zip(reach_cuts(target, top_sample_levels(n, Q)), tops):
        assert sum(s.weight for s in sides) == pytest.approx(1.0)
        for top in sides:
            zb, wb = truncated_rule(*interval, order=64)
            rule = (np.append(zb, top.z), np.append(wb * (n - 1) / (n * wb.sum()), 1.0 / n))
            st_c = finite_n_setup(act, target, phi=PHI, batch="reused", phi2=None, zs_rule=rule, ey2_ref=st.ey2)
            G_V = finite_n_grams(act, st_c, eta1=ETA1, eta2=ETA2, N=N, bulk=False)[1]
            assert top.z in interval and top.y == pytest.approx(float(target.links[0](top.z)))
            np.testing.assert_allclose(top.G_V, G_V, atol=1e-5 * np.abs(G_V).max())


def test_its_mean_over_the_maximum_is_the_population():
    """Over the law of the maximum the batches' empirical laws average to the population: each moment the Gram is
    made of, weighted by each quantile's sides and by the quantiles' weights (:func:`top_quantile_rule`), tends to the
    population's.  Measured with He1 + He3/sqrt(6) (largest error of a moment, relative to its largest entry):
    ``2.8e-3`` at ``Q = 6``, ``1.0e-4`` at 25 and ``1.8e-4`` at 100, the floor of the two grids (equally spaced
    quantiles, which never reach the maximum's heavy tail: ``3.2e-2`` at 25, ``1.4e-2`` at 100).  The Gram itself is
    quadratic in them, so its mean over batches is not the population's."""
    act, target, st, out = _setup(QUAD, HE3)
    t, table = out[3], out[7]
    pop = reused_moments(st, np.vstack([np.ones(st.y.size), table.F]), st.w)

    def error(Q):
        given = moments_given_top(act, target, st, table.F, t, n=int(PHI * N), quantiles=Q, grid=_grid(act, target, st))
        wq = top_quantile_rule(Q)[1]
        mean = [sum(wk * w * mom[f] for sides, wk in zip(given, wq) for w, _, _, mom in sides) for f in range(len(pop))]
        return max(float(np.abs(m - P).max() / np.abs(P).max()) for m, P in zip(mean, pop))
    assert error(6) < 5e-3 and error(25) < 3e-4


def test_one_heavy_tail_puts_the_maximum_on_its_side():
    """He1 + He2/2 has ``y`` growing as ``z^2/2`` on both sides but ``+z`` only on one: a batch's most extreme sample
    lies on the positive side with probability above ``1 - MIN_SIDE``, and the other side is left out; an odd link
    (He1 + He3/sqrt(6)) puts it on either side with probability one half."""
    act, target, st, out = _setup(QUAD, HE2)
    tops, _ = _given(act, target, st, out, 6)
    assert all(len(sides) == 1 and sides[0].z > 0 for sides in tops)
    act, target, st, out = _setup(QUAD, HE3)
    tops, _ = _given(act, target, st, out, 6)
    assert all(len(sides) == 2 and sides[0].z == pytest.approx(-sides[1].z, abs=1e-3)
               and sides[0].weight == pytest.approx(0.5, abs=0.01) for sides in tops)
    assert [sides[1].z for sides in tops] == sorted(sides[1].z for sides in tops)      # the reach widens


def test_levels_are_the_maximums_quantiles():
    """``p = 1 - q^(1/n)``: with ``n`` independent samples the maximum's reach leaves ``p`` beyond it with probability
    ``q``; ``(1 - p)^n`` recovers the quantiles, and ``n p`` stays of order one."""
    p = top_sample_levels(2000, 6)
    q = top_quantile_rule(6)[0]
    np.testing.assert_allclose((1 - p) ** 2000, q, rtol=1e-12)
    assert np.all(np.diff(p) < 0) and 2000 * p[-1] < 2e-3 < 2 < 2000 * p[0] < -math.log(q[0]) + 0.1
