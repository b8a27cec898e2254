"""Finite-N statistical checks of the classical layer (marked slow; tolerances from fluctuation scales)."""
import math

import numpy as np
import pytest

from rmtfl.compare import mean_stderr
from rmtfl.numerics import gaussian_matrix, measure_spiked, singular_values, spiked_matrix
from rmtfl.theory import bgn_outlier, largest_sv_scaling, tracy_widom_cdf


@pytest.mark.slow
def test_largest_singular_value_follows_tw1_with_johnstone_scaling():
    # 300 draws of a 100 x 200 matrix: (s1 - center)/scale ~ TW1.  KS 99% critical value 1.63/sqrt(n).
    N, d, n = 100, 200, 300
    center, scale = largest_sv_scaling(N, d)
    z = np.sort([(singular_values(gaussian_matrix(N, d, rng=r))[0] - center) / scale
                 for r in np.random.default_rng(0).spawn(n)])
    F = tracy_widom_cdf(z, beta=1)
    i = np.arange(1, n + 1)
    ks = max(np.max(i / n - F), np.max(F - (i - 1) / n))
    assert ks < 1.63 / math.sqrt(n)


@pytest.mark.slow
@pytest.mark.parametrize("psi", [0.5, 2.0])
def test_rank_three_spikes_match_bgn(psi):
    # distinct strengths, two above and one below the threshold psi^(1/4); N = 800, 6 seeds
    N = 800
    d = int(N / psi)
    tc = psi**0.25
    theta = np.array([2.5 * tc, 1.6 * tc, 0.6 * tc])
    meas = [measure_spiked(spiked_matrix(N, d, theta, rng=r), rng=r) for r in np.random.default_rng(9).spawn(6)]
    pred = bgn_outlier(theta, psi)
    assert all(m.outlier_count == 2 and m.complete for m in meas)
    for i in range(2):
        for key, p in (("singular_values", pred.singular_value[i]), ("cos2_left", pred.cos2_left[i]),
                       ("cos2_right", pred.cos2_right[i])):
            mu, se = mean_stderr([getattr(m, key)[i] for m in meas])
            assert abs(mu - p) <= 1.0 / math.sqrt(N) + 3 * se, (key, i, mu, p, se)
    # the third spike is below threshold: its "triplet" is a bulk-edge vector with O(1/N) overlap
    _, scale = largest_sv_scaling(N, d)
    mu, se = mean_stderr([m.singular_values[2] for m in meas])
    assert mu <= 1 + math.sqrt(psi) + 4 * scale + 3 * se
    mu, se = mean_stderr([m.cos2_left[2] for m in meas])
    assert mu <= 1.0 / math.sqrt(N) + 3 * se
