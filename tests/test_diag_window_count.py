"""The single samples' count through a spike's finite-N window (benchmarks/diag_window_count.py;
docs/theory/two_step_attempts.md §35)."""
import numpy as np

from benchmarks.diag_critical_window import mp_shift, shift_extra, spike_strength, tw_jitter
from benchmarks.diag_window_count import location_kernel, subcritical_kernel, windowed_lambda, windowing

HE3 = "hermite(0, 1, 0, 0.4082482904638631)"


def test_the_kernel_is_the_shift_deep_below_the_outlier_above_and_nothing_beyond():
    """Deep below the edge (where the shift is flat over the jitter) the kernel is the N -> inf spectral shift; well
    between edge and outlier it is one; beyond the outlier plus the jitter's reach it is exactly zero."""
    N = d = 500
    x = np.array([2.0, 8.0, 30.0])
    K = location_kernel(np.array([-70.0, 15.0, 45.0]), x, N=N, d=d)
    deep = shift_extra(list(x), [-70.0], N=N, d=d)[:, 0]
    assert np.allclose(K[0], deep, atol=0.01)
    assert K[1, 2] > 0.999 and K[1, 0] == 0.0 and K[2].tolist() == [0.0, 0.0, 0.0]
    assert 0.2 < deep[0] < deep[1] < deep[2] < 1


def test_the_kernel_is_the_jittered_shift_read_directly():
    """At one spike (off the table's nodes) the kernel equals E_delta over the jitter (on the same 241 nodes)
    of the indicator above the edge and the shift below it, the shift computed directly at its strength."""
    N, d = 400, 800
    x, ys = 3.3, np.array([-12.0, -3.0, -0.5, 0.0, 1.0, 2.5, 5.0])
    delta, w = tw_jitter(241)
    ell = spike_strength(x, N, d)
    direct = [float(w @ np.where(y - delta < 0, mp_shift(ell, y - delta, N=N, d=d), (y - delta) < x)) for y in ys]
    assert np.allclose(location_kernel(ys, [x], N=N, d=d, points=241)[:, 0], direct, atol=0.005)


def test_a_spike_at_its_threshold_is_the_same_from_either_kernel():
    """The subcritical kernel at q = 1 is the location kernel of an outlier at the edge (x = 0), which has no part
    above the edge; a weaker spike adds less everywhere."""
    N = d = 600
    ys = np.linspace(-20.0, 4.0, 13)
    at = subcritical_kernel(ys, [1.0, 0.7], N=N, d=d)
    assert np.allclose(at[:, 0], location_kernel(ys, [0.0], N=N, d=d)[:, 0], atol=1e-3)
    assert np.all(at[:, 1] <= at[:, 0] + 1e-12) and at[0, 1] < at[0, 0] - 0.05


def test_windowed_lambda_moves_only_the_samples_part():
    """With one batch part's samples all at one place x0 scales above the fold, the windowed Lambda is the bulk's
    count plus n times the kernel at x0; the bulk's count is left as it is."""
    from types import SimpleNamespace

    from rmtfl.theory._two_step.poisson_count import mean_count
    from rmtfl.theory._two_step.sample_order import SampleLaw

    N, fold = 1000, 2.0
    bulk_top = fold - 0.01 * (1.5 * np.pi * (np.arange(60) + 0.5)) ** (2 / 3)
    sig = 0.01
    s = fold + sig * np.linspace(0.0, 30.0, 301)
    x0 = 6.05
    tails = (s < fold + x0 * sig).astype(float)[:, None]
    law = SampleLaw(s, tails, (3,))
    laws = SimpleNamespace(below=law, above=law)
    grid, lam, as_is, mu, win, scale = windowed_lambda(laws, bulk_top, fold, N=N, psi=1.0)
    assert abs(scale - sig) < 1e-9
    bulk = mean_count(SampleLaw(s, np.zeros((s.size, 1)), (3,)), bulk_top)
    assert np.allclose(as_is - mu, np.interp(grid, *bulk), atol=1e-9)
    K = location_kernel((grid - fold) / sig, [x0], N=N, d=N)[:, 0]
    assert np.allclose(win, 3 * K, atol=0.01)
    assert np.allclose(lam, as_is - mu + win)


def test_the_windowed_count_lives_inside_its_block():
    """gelu with He1 + He3/sqrt6 at (0.2, 0.4), N = 1000, reused: the windowed Lambda lies below the one held at the
    fold from 10 scales below it down (the supercritical samples add about a half each there), above the fold they
    agree; outside the block the prediction is as before."""
    from rmtfl.theory import two_step
    from rmtfl.theory._two_step import finite_n, two_step as module

    def predict():
        return two_step("gelu", HE3, psi=1.0, phi=2.0, eta1=1000**0.2, eta2=1000**0.4, N=1000)

    before = (module.count_through_process, finite_n.bulk_without, module.predict_finite_n)
    as_is = [o.singular_value for o in predict().outliers]
    with windowing() as seen:
        predict()
    grid, lam, held, mu, win, sig, _ = seen["lambda"]
    p = predict()
    fold = p.bulk_edge
    deep = grid < fold - 10 * sig
    assert np.all(lam[deep] < held[deep] - 1.0)
    far = grid > fold + 20 * sig                  # the jitter spreads the places a little further
    assert np.allclose(lam[far], held[far], atol=0.05)
    assert (module.count_through_process, finite_n.bulk_without, module.predict_finite_n) == before
    assert [o.singular_value for o in p.outliers] == as_is
