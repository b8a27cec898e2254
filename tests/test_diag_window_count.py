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
    from rmtfl.theory._two_step.widened_bulk import TOP_VALUE_OFFSET
    from rmtfl.theory._two_step.sample_order import SampleLaw

    N, fold = 1000, 2.0
    bulk_top = fold - 0.01 * (1.5 * np.pi * (np.arange(1, 61) - TOP_VALUE_OFFSET)) ** (2 / 3)   # as top_values reads
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


def test_a_sample_taken_out_by_its_target_leaves_the_steps_exactly():
    """Zeroing the targets of the K most extreme samples is dropping their rows with each step size scaled by
    (n - K) / n (the gradient's 1/n kept): the measurement of --part remove takes them out of both steps exactly."""
    from rmtfl.numerics import gd_steps, init_first_layer, init_second_layer, sample_inputs, sample_targets
    from rmtfl.theory import get_activation, make_target

    g = np.random.default_rng(3).spawn(4)
    N, n, K = 40, 80, 5
    a, X = init_second_layer(N, rng=g[0]), sample_inputs(n, N, rng=g[1])
    y, W0 = sample_targets(X, target=make_target(HE3), rng=g[2]), init_first_layer(N, N, rng=g[3])
    order = np.argsort(-np.abs(y))
    y_out = y.copy()
    y_out[order[:K]] = 0.0
    keep = np.sort(order[K:])
    zeroed = gd_steps(get_activation("gelu"), W0.copy(), a, (X, y_out), etas=(3.0, 2.0))
    dropped = gd_steps(get_activation("gelu"), W0.copy(), a, (X[keep], y[keep]),
                       etas=(3.0 * (n - K) / n, 2.0 * (n - K) / n))
    assert np.max(np.abs(zeroed - dropped)) < 1e-12 * np.max(np.abs(zeroed))


def test_removed_counts_is_nothing_without_samples_out_and_the_whole_step_with_all_out():
    """K = 0 takes nothing out (exactly zero); K = n takes every sample out, so the difference is W_2's count less
    W_0's, which the same seeds give directly."""
    from benchmarks.diag_window_count import removed_counts
    from rmtfl.numerics import gd_steps, init_first_layer, init_second_layer, sample_inputs, sample_targets
    from rmtfl.theory import get_activation, make_target

    N, s = 30, np.array([1.5, 2.0, 2.5, 4.0])
    mean, se = removed_counts("gelu", HE3, 0.3, 0.3, N, s, [[], range(2 * N)], draws=2, seed=5)
    assert mean[0].tolist() == [0.0] * 4 and se[0].tolist() == [0.0] * 4
    direct = []
    for k in range(2):
        g_w, g_a, g_x, g_e = np.random.default_rng(5 + k).spawn(4)
        a, X = init_second_layer(N, rng=g_a), sample_inputs(2 * N, N, rng=g_x)
        y, W0 = sample_targets(X, target=make_target(HE3), rng=g_e), init_first_layer(N, N, rng=g_w)
        W = gd_steps(get_activation("gelu"), W0.copy(), a, (X, y), etas=(N**0.3, N**0.3))
        sv, sv0 = (np.linalg.svd(M, compute_uv=False) for M in (W, W0))
        direct.append((sv[:, None] > s).sum(0) - (sv0[:, None] > s).sum(0))
    assert np.allclose(mean[1], np.mean(direct, axis=0), atol=1e-12)


def test_taking_samples_out_of_one_step_is_between_none_and_both():
    """Out of the first step only or the second only: with every sample out of a step that step leaves W as it was
    (W_1 = W_0, or W_2 = W_1), so with equal step sizes both leave one step from W_0, which the same seeds give
    directly; a step name outside the three is refused."""
    import pytest

    from benchmarks.diag_window_count import removed_counts
    from rmtfl.numerics import gd_steps, init_first_layer, init_second_layer, sample_inputs, sample_targets
    from rmtfl.theory import get_activation, make_target

    N, s = 30, np.array([1.5, 2.0, 2.5, 4.0])
    got = {step: removed_counts("gelu", HE3, 0.3, 0.3, N, s, [range(2 * N)], draws=2, seed=5, step=step)[0][0]
           for step in ("first", "second")}
    direct = []
    for k in range(2):
        g_w, g_a, g_x, g_e = np.random.default_rng(5 + k).spawn(4)
        a, X = init_second_layer(N, rng=g_a), sample_inputs(2 * N, N, rng=g_x)
        y, W0 = sample_targets(X, target=make_target(HE3), rng=g_e), init_first_layer(N, N, rng=g_w)
        act, eta = get_activation("gelu"), N**0.3

        def count(W):
            return (np.linalg.svd(W, compute_uv=False)[:, None] > s).sum(0)
        W2 = gd_steps(act, W0.copy(), a, (X, y), etas=(eta, eta))
        direct.append(count(W2) - count(gd_steps(act, W0.copy(), a, (X, y), etas=(eta,))))
    assert np.allclose(got["first"], np.mean(direct, axis=0), atol=1e-12)
    assert np.allclose(got["second"], np.mean(direct, axis=0), atol=1e-12)
    with pytest.raises(ValueError, match="step must be one of"):
        removed_counts("gelu", HE3, 0.3, 0.3, N, s, [[0]], draws=2, step="third")
