"""The outliers pushing one another at finite N (benchmarks/diag_spike_push.py;
docs/theory/two_step_attempts.md §36)."""
import numpy as np
import pytest

from benchmarks.diag_spike_push import control_push, push, pushed_lambda, pushing, removal_rise, semicircle_g

HE3 = "hermite(0, 1, 0, 0.4082482904638631)"


def test_the_semicircle_transform_at_its_edge_and_far_out():
    """G(e) = 2 / e, G is held at the edge inside the bulk, and G(x) -> 1 / x far out."""
    e = 2.07
    assert semicircle_g(e, e) == pytest.approx(2 / e, rel=1e-14)
    assert np.all(semicircle_g([0.5, 1.9, e], e) == semicircle_g(e, e))
    assert semicircle_g(1e4 * e, e) == pytest.approx(1 / (1e4 * e), rel=1e-7)


def test_a_far_outlier_moves_the_edge_by_e_over_M_and_a_nearer_one_further():
    """Cut hard, an outlier far above moves a value at the edge (or inside the bulk) down by e / M; read a scale off
    the axis, by e / M / (1 + eps^2 / G(e)^4) (2 % less at this scale); an outlier closer to the edge moves it
    further down, and a value above an outlier moves up."""
    e, M, scale = 2.0, 2000.0, 0.0063
    far = push([1.9, e], [1e6], [1.0], edge=e, M=M, scale=scale, hard=True)
    assert np.allclose(far, -e / M, rtol=1e-6)
    eps = semicircle_g(e, e) ** 2 - semicircle_g(e + scale, e) ** 2
    read = push([1.9, e], [1e6], [1.0], edge=e, M=M, scale=scale)
    assert np.allclose(read, -e / M / (1 + eps**2), rtol=1e-6) and 0.97 < read[0] / far[0] < 0.99
    near = push([e], [2.3], [1.0], edge=e, M=M, scale=scale)[0]
    assert near < -1.2 * e / M
    assert push([2.5], [2.1], [1.0], edge=e, M=M, scale=scale)[0] > 0


def test_a_far_spike_moves_the_top_values_as_the_first_order_push_says():
    """Z (N = d = 200, N(0, 1/d) entries) with one spike theta = 3 (its outlier at 3.33, far from the edge 2): the
    top six values of Z move down by e / M / (1 - 1 / theta^2) on average, within three standard errors per rank
    over 60 draws and within three of their mean; half the push (e / 2M) is refused there."""
    place, move, se, pred = control_push([3.0], (), N=200, draws=60, ranks=6)
    assert np.all(place < 0)
    assert np.allclose(pred, pred[0]) and pred[0] < 0
    assert np.all(np.abs(move - pred) < 3 * se)
    mean_se = np.sqrt(np.mean(se**2) / 6)          # the ranks' moves are correlated: a conservative check below
    assert abs(move.mean() - pred[0]) < 3 * np.sqrt(np.mean(se**2))
    assert abs(move.mean() - pred[0] / 2) > 3 * mean_se


def test_control_refuses_spikes_below_the_threshold():
    with pytest.raises(ValueError, match="strong spikes must exceed the threshold 1"):
        control_push([0.9], N=50, draws=2)


def test_pushed_lambda_is_lambda_without_outliers_and_lower_with_a_far_one():
    """With no sample above the fold and no spike of P the pushed Lambda is Lambda; a spike of P at z far above
    moves Lambda's argument below the fold by (2 / M) G(e) / (G(e)^2 - G(z)^2) (cut hard), nearly e / M."""
    from types import SimpleNamespace

    from rmtfl.theory._two_step.sample_order import SampleLaw

    N, fold = 1000, 2.0
    bulk_top = fold - 0.01 * (1.5 * np.pi * (np.arange(60) + 0.5)) ** (2 / 3)
    s = fold + 0.01 * np.linspace(0.0, 30.0, 301)
    law = SampleLaw(s, np.zeros((s.size, 1)), (3,))
    laws = SimpleNamespace(below=law, above=law, fixed=())
    grid, new, lam, delta, scale = pushed_lambda(laws, bulk_top, fold, N=N, psi=1.0)
    assert np.all(delta == 0) and np.array_equal(new, lam)
    laws = SimpleNamespace(below=law, above=law, fixed=(50.0,))
    grid, new, lam, delta, scale = pushed_lambda(laws, bulk_top, fold, N=N, psi=1.0, hard=True)
    below = grid < fold
    assert np.allclose(delta[below], -(2 / (2 * N)) / (1 - semicircle_g(50.0, fold) ** 2), rtol=1e-12)
    assert np.allclose(new[below], np.interp(grid[below] - delta[below], grid, lam))


def test_the_pushed_count_lives_inside_its_block():
    """gelu with He1 + He3/sqrt6 at (0.4, 0.2), N = 1000, reused: the pushed Lambda lies below Lambda from the fold
    down (every outlier lies above); outside the block the prediction is as before."""
    from rmtfl.theory import two_step
    from rmtfl.theory._two_step import two_step as module

    def predict():
        return two_step("gelu", HE3, psi=1.0, phi=2.0, eta1=1000**0.4, eta2=1000**0.2, N=1000)

    before = module.count_through_process
    as_is = [o.singular_value for o in predict().outliers]
    with pushing() as seen:
        predict()
    grid, new, lam, delta, scale, fixed = seen["lambda"]
    p = predict()
    below = grid < p.bulk_edge
    assert np.all(delta[below] < 0) and np.all(new[below] <= lam[below] + 1e-12)
    assert module.count_through_process is before
    assert [o.singular_value for o in p.outliers] == as_is


def test_removal_rise_sees_the_values_rise_when_the_top_sample_leaves():
    """N = 150, gelu with He1 + He3/sqrt6 at (0.4, 0.2), 3 draws: the values below the most extreme sample's outlier
    rise on average where it leaves (they interlace: none rises past the one above it), and a direction unrelated to
    a value has an overlap of order one (d |<r, x>|^2 within a factor 3 of 1 deep in the bulk)."""
    got = removal_rise("gelu", HE3, 0.4, 0.2, N=150, fold=2.0, scale=0.02, draws=3,
                       bins=(-1e9, 0.0, 1e9))
    (m_deep, se_deep, n_deep), _ = got["rise"]
    assert n_deep > 50 and m_deep > 0
    assert 1 / 3 < got["R"][0] < 3 and got["outlier"].size == 3


def test_removal_parts_whole_is_removal_rise_on_the_same_draws():
    """The whole change of --part parts is the sample taken out of --part remove, read the other way: over one bin of
    every place both average the same values (the values below the sample's outlier, one rank down), so the means
    agree to rounding; a far spike along its column sinks the values below it."""
    from benchmarks.diag_spike_push import removal_parts

    kw = dict(N=90, fold=2.0, scale=0.02, draws=2, bins=(-1e9, 1e9))
    rise = removal_rise("gelu", HE3, 0.4, 0.2, **kw)["rise"][0]
    parts = removal_parts("gelu", HE3, 0.4, 0.2, **kw)
    assert parts["whole"][0][0] == pytest.approx(rise[0], rel=1e-9) and parts["whole"][0][2] == rise[2]
    assert parts["column, far"][0][0] > 0


def test_the_push_through_the_bulks_rows_moves_lambda_by_its_own_amounts():
    """gelu with He1 + He3/sqrt6 at (0.4, 0.2), N = 1000, reused, pushed through the widened bulk's rows: the push
    per sample and per spike of P are of the order of an unrelated far spike's e / M (within a factor 3: the same
    compression through rows of unequal weight); below the fold Lambda is read at s plus the per-sample push times
    the samples above the fold (the same number at every s there) plus the per-spike push times the spikes; the
    module is restored after."""
    from rmtfl.theory import two_step
    from rmtfl.theory._two_step import finite_n, two_step as module

    before = (module.count_through_process, finite_n.bulk_without, module.predict_finite_n)
    with pushing(structured=True) as seen:
        p = two_step("gelu", HE3, psi=1.0, phi=2.0, eta1=1000**0.4, eta2=1000**0.2, N=1000)
    per, spike = seen["push"]
    far = p.bulk_edge / 2000
    assert far / 3 < per < 3 * far and far / 3 < spike < 3 * far
    grid, new, lam, delta, scale, fixed = seen["lambda"]
    below = grid < p.bulk_edge
    samples = (-delta[below] - spike * len(fixed)) / per            # every spike of P lies above the fold here
    assert np.allclose(samples, samples[0]) and samples[0] > 1
    assert np.allclose(new[below], np.interp(grid[below] - delta[below], grid, lam))
    assert (module.count_through_process, finite_n.bulk_without, module.predict_finite_n) == before


def test_lambda_errors_are_lambda_less_the_draws_at_each_point(tmp_path):
    """lambda_errors at one cached point (a page cache written here with the draws of three made-up spectra): the
    error as it is is the prediction's Lambda plus its spikes less the draws' mean count at fold + y scale, read the
    way --part lambda reads it."""
    import json

    from benchmarks.bench_two_step_finite_n import cache_key
    from benchmarks.diag_spike_push import lambda_errors
    from rmtfl.theory import two_step

    N, a1, a2 = 1000, 0.4, 0.2
    with pushing(structured=True) as seen:
        p = two_step("gelu", HE3, psi=1.0, phi=2.0, eta1=N**a1, eta2=N**a2, N=N)
    grid, new, lam, _, scale, fixed = seen["lambda"]
    rng = np.random.default_rng(0)
    S = np.sort(p.bulk_edge + scale * rng.normal(-5.0, 8.0, size=(3, 60)), axis=1)[:, ::-1]
    path = tmp_path / "cache.json"
    path.write_text(json.dumps({cache_key("gelu", HE3, "reused", a1, a2, N): [{"sv": list(v)} for v in S]}))
    ys = np.array([-6.0, 0.0, 4.0])
    got = lambda_errors(str(path), N, ys, draws=3)
    (old, pushed), = got.values()
    s = p.bulk_edge + ys * scale
    want = np.interp(s, grid, lam) + [sum(f > x for f in fixed) for x in s] - (S[:, :, None] > s).sum(1).mean(0)
    assert np.allclose(old[0], want) and np.all(pushed[0] <= old[0] + 1e-12)
