"""A spike just past its threshold at finite N (benchmarks/diag_critical_window.py; docs/theory/two_step.md §9.3)."""
import math

import numpy as np

from benchmarks.diag_critical_window import extra_counts, spike_strength
from rmtfl.theory import largest_sv_scaling


def test_the_spike_is_placed_where_its_outlier_lies_x_scales_above_the_edge():
    """The spike strength inverts the outlier's location sqrt(ell (1 + gamma / (ell - 1))) exactly; x <= 0 lies at or
    below the threshold 1 + sqrt(gamma)."""
    N, d = 300, 600
    g, scale = N / d, largest_sv_scaling(N, d).scale
    for x in (0.5, 2.0, 8.0):
        ell = spike_strength(x, N, d)
        assert abs(math.sqrt(ell * (1 + g / (ell - 1))) - (1 + math.sqrt(g) + x * scale)) < 1e-12
    assert spike_strength(0.0, N, d) <= 1 + math.sqrt(g) and spike_strength(-2.0, N, d) < spike_strength(0.0, N, d)


def test_a_rank_one_lift_adds_at_most_one_value_and_a_strong_spike_adds_one():
    """The spiked Gram matrix is the null one plus a rank-one positive part, so it holds at most one more value above
    any s (interlacing) and never fewer; a spike far past its threshold (40 scales) adds one above the edge in nearly
    every draw (not in all: where a bulk value of the draw lies above the edge, the lifted values may keep their
    count there), and the closer its outlier to the edge the fewer it adds."""
    N = 80
    extra, se = extra_counts((0.0, 2.0, 40.0), (-2.0, 0.0, 2.0), N=N, d=N, draws=30, rng=np.random.default_rng(1))
    assert np.all(extra >= 0) and np.all(extra <= 1)
    assert extra[2, 1] > 0.9 and extra[2, 2] > 0.9
    assert extra[0, 1] < extra[1, 1] < extra[2, 1]
