"""The count taken apart along the extreme directions of M (benchmarks/diag_count_parts.py;
docs/theory/two_step_attempts.md §37)."""
import numpy as np
import pytest

from benchmarks.diag_count_parts import drawn_parts, jittered, main, predicted_parts, step_sizes
from benchmarks.diag_critical_window import tw_jitter

HE3 = "hermite(0, 1, 0, 0.4082482904638631)"


def test_the_extreme_directions_part_lies_between_none_and_K():
    """W_2 V_r has K columns fewer than W_2 and its values interlace with W_2's: at every s the count of W_2 less
    that of W_2 V_r is between 0 and K, and with K = 0 it is 0."""
    s = np.linspace(1.2, 3.0, 25)
    full, bulk = drawn_parts("gelu", HE3, 0.3, 0.3, N=80, s=s, draws=3, K=5)
    part = full - bulk
    assert part.shape == (3, 25) and part.min() >= 0 and part.max() <= 5
    assert part.max() > 0
    full0, bulk0 = drawn_parts("gelu", HE3, 0.3, 0.3, N=80, s=s, draws=2, K=0)
    assert np.array_equal(full0, bulk0)


def test_one_step_has_no_second_step_size():
    assert step_sizes(1000, 0.4, None) == (pytest.approx(1000**0.4), 0.0)
    assert step_sizes(1000, 0.4, 0.2) == (pytest.approx(1000**0.4), pytest.approx(1000**0.2))


def test_the_predicted_parts_add_up_and_the_shift_acts_below_the_fold_only():
    """Lambda plus the spikes of P is the bulk (with them) plus mu; the shift is zero at and above the fold and
    positive below it here; mu is held at its fold value below the fold; the bulk of d - K columns counts no more
    than the bulk of d columns."""
    p = predicted_parts("gelu", HE3, 0.2, 0.4, N=300)
    assert p is not None
    y = (p["s"] - p["fold"]) / p["scale"]
    assert np.allclose(p["all"], p["bulk"] + p["mu"])
    assert np.all(p["shift"][y >= 0] == 0.0) and np.all(p["shift"][y < -1] > 0)
    assert np.allclose(p["mu"][y <= 0], p["mu"][y == 0][0])
    assert np.all(p["bulk_dK"] <= p["bulk"] + 1e-9) and p["bulk_dK"][0] < p["bulk"][0]


def test_the_edge_window_spreads_the_fold_and_leaves_far_values_alone():
    """Read through the edge's jitter, the extreme part is mu far above the fold and mu at the fold plus the shift
    far below it; a constant mu with no shift stays constant; near the fold, where mu falls, the window adds values
    above the fold (the edge may lie below s) and never takes any."""
    fold, scale = 2.0, 0.01
    grid = fold + scale * np.linspace(-60, 60, 1201)
    y = (grid - fold) / scale
    mu = np.where(y <= 0, 5.0, 5.0 * np.exp(-np.maximum(y, 0) / 4))
    shift = (np.linspace(-40, 0, 81), 0.05 * np.linspace(-40, 0, 81) ** 2 / 40)     # 2 at 40 below, 0 at the fold
    ext = jittered(grid, mu, fold, scale, shift)
    assert np.allclose(ext[y > 20], mu[y > 20], atol=1e-9)
    deep = y < -30
    assert np.allclose(ext[deep], 5.0 + np.interp(y[deep], *shift), atol=0.05)
    assert np.allclose(jittered(grid, np.full_like(grid, 3.0), fold, scale, (shift[0], 0 * shift[1])), 3.0)
    near = (y > 0) & (y < 10)
    assert np.all(ext[near] >= mu[near] - 1e-12)
    delta, w = tw_jitter()
    k = int(np.argmin(np.abs(y - 2.0)))                  # two scales above the fold: the edge above s with P(delta > 2)
    gain = sum(wk * (5.0 + np.interp(y[k] - dk, *shift) - mu[k]) for dk, wk in zip(delta, w) if dk > y[k])
    assert ext[k] - mu[k] == pytest.approx(gain, abs=1e-9) and gain > 0.05


def test_no_parts_where_the_count_is_not_read_through_the_process():
    assert predicted_parts("tanh", "hermite(0, 1, 0.5)", 0.2, 0.2, N=300) is None


@pytest.mark.parametrize("argv", [["--alphas", "0.4"], ["--draws", "1"], ["--N", "20"]])
def test_bad_arguments_exit_2(argv, capsys):
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    assert "must" in capsys.readouterr().err


@pytest.mark.parametrize("argv, word", [(["--pool", "own.json"], "--grid"), (["--rough-shift"], "--grid"),
                                        (["--own-seeds"], "--grid"), (["--points"], "--grid"),
                                        (["--no-window", "--fine-top"], "--grid"),
                                        (["--grid", "c.json", "--pool", "o.json", "--own-seeds"], "--own-seeds"),
                                        (["--grid", "c.json", "--no-window"], "--fine-top"),
                                        (["--grid", "c.json", "--no-window", "--fine-top", "--rough-shift"],
                                         "--rough-shift")])
def test_grid_options_need_the_grid(argv, word, capsys):
    """``--own-seeds``, ``--pool``, ``--rough-shift``, ``--no-window`` and ``--points`` only with ``--grid``, ``--pool``
    not with ``--own-seeds``, ``--no-window`` only with ``--fine-top``: exit 2, naming the flag, before anything is
    read."""
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    assert word in capsys.readouterr().err


def test_fine_top_values_lie_lower_in_a_thin_tail_and_only_inside_the_block():
    """The quadratic sigma with He1 + He2/2 at (0.4, 0.4), N = 1000, whose bulk ends in a thin tail: read off the
    converged density its top values lie lower, by less than 1 % since the prediction smooths the density over a
    fortieth of its grid step (measured 0.2-0.6 % at ranks 1, 11 and 31; 1-3 % over a tenth, before;
    docs/theory/two_step.md §9.2), and outside the block they are as before."""
    from rmtfl.theory import get_activation, make_target
    from rmtfl.theory._two_step.finite_n import predict_finite_n

    from benchmarks.diag_count_parts import HE2, QUAD, fine_top

    def bulk_top():
        return np.array(predict_finite_n(get_activation(QUAD), make_target(HE2), psi=1.0, phi=2.0, phi2=None,
                                         eta1=1000**0.4, eta2=1000**0.4, batch="reused", N=1000.0,
                                         extreme_samples="grouped").bulk_top)
    before = bulk_top()
    with fine_top():
        fine = bulk_top()
    ratio = fine[[0, 10, 30]] / before[[0, 10, 30]]
    assert np.all(ratio < 1.0) and np.all(ratio > 0.99)
    assert np.array_equal(bulk_top(), before)
