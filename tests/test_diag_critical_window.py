"""A spike just past its threshold at finite N (benchmarks/diag_critical_window.py; docs/theory/two_step.md §9.3)."""
import math

import numpy as np

from benchmarks.diag_critical_window import extra_counts, spike_strength
from rmtfl.theory import largest_sv_scaling


def test_the_spike_is_placed_where_its_outlier_lies_x_scales_above_the_edge():
    """The spike strength inverts the outlier's location sqrt(ell (gamma + 1 / (ell - 1))) exactly; x <= 0 lies at or
    below the threshold 1 + 1 / sqrt(gamma); a drawn spike far past it lies where the location says."""
    N, d = 300, 600
    g, scale = N / d, largest_sv_scaling(N, d).scale
    for x in (0.5, 2.0, 8.0):
        ell = spike_strength(x, N, d)
        assert abs(math.sqrt(ell * (g + 1 / (ell - 1))) - (1 + math.sqrt(g) + x * scale)) < 1e-12
    assert spike_strength(0.0, N, d) <= 1 + 1 / math.sqrt(g) and spike_strength(-2.0, N, d) < spike_strength(0.0, N, d)
    ell, rng, top = spike_strength(100.0, N, d), np.random.default_rng(2), []
    for _ in range(20):                        # 100 scales up: the mean top singular value of drawn W, within 3 s.e.
        Z = rng.standard_normal((N, d)) / math.sqrt(d)
        Z[:, 0] *= math.sqrt(ell)
        top.append(np.linalg.svd(Z, compute_uv=False)[0])
    assert abs(np.mean(top) - (1 + math.sqrt(g) + 100.0 * scale)) < 3 * np.std(top) / math.sqrt(20)


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


def test_the_spectral_shift_is_the_marchenko_pastur_one_and_vanishes_at_the_outlier():
    """m = tr (A - z)^(-1) / N (minus the theory's mp_stieltjes) solves c z m^2 + (z + c - 1) m + 1 = 0 with
    Im m > 0; 1 + ell c m vanishes at the spike's outlier (so the shift steps from 1 to 0 there); below the edge the
    shift lies in (0, 1) and grows with the spike."""
    from benchmarks.diag_critical_window import shift_extra
    from rmtfl.theory import mp_stieltjes

    for c in (0.5, 1.0, 2.0):
        for z in (0.7 + 0.01j, 2.5 + 1e-9j, 6.0 + 0.5j):
            m = -mp_stieltjes(z, c)
            assert m.imag > 0 and abs(c * z * m * m + (z + c - 1) * m + 1) < 1e-10
    N, d = 400, 800
    c, scale = N / d, largest_sv_scaling(N, d).scale
    ell = spike_strength(3.0, N, d)
    m = -mp_stieltjes((1 + math.sqrt(c) + 3.0 * scale) ** 2 + 1e-13j, c)
    assert abs(1 + ell * c * m) < 1e-6
    shift = shift_extra((1.0, 4.0), (-8.0, -1.0, 0.0, 2.0, 5.0), N=N, d=d)
    assert np.all((shift[:, :2] > 0) & (shift[:, :2] < 1)) and np.all(shift[1, :2] > shift[0, :2])
    assert shift[:, 2].tolist() == [1.0, 1.0] and shift[:, 3].tolist() == [0.0, 1.0] and shift[:, 4].tolist() == [0, 0]


def test_the_window_model_is_the_shift_deep_below_and_the_outliers_spread_above():
    """The model of the window: the spectral shift far below the edge (where the edge's jitter moves it little), a
    probability in [0, 1] everywhere, and about one half at the outlier's own place (its spread about it)."""
    from benchmarks.diag_critical_window import shift_extra, window_model

    N = d = 500
    xs, ys = (1.0, 8.0), (-30.0, -2.0, 0.0, 8.0, 20.0)
    model, shift = window_model(xs, ys, N=N, d=d), shift_extra(xs, ys, N=N, d=d)
    assert np.all((model >= 0) & (model <= 1))
    assert np.allclose(model[:, 0], shift[:, 0], atol=0.01)
    assert 0.4 < model[1, 3] < 0.6 and model[1, 4] < 0.01 and model[0, 3] < 0.05
