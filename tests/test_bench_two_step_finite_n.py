"""The count criterion of the finite-N acceptance grid (benchmarks/bench_two_step_finite_n.py)."""
import json

import numpy as np
import pytest

from benchmarks.bench_two_step_finite_n import edge_gaps, median_miss, middle_counts, sign_test


def test_middle_counts_odd_and_even():
    assert middle_counts([5, 3, 4]) == (4, 4)
    # an even sample has two middle values; every count between them is a sample median
    assert middle_counts([2, 3, 3, 4, 4, 6]) == (3, 4)
    assert middle_counts([1, 1, 2, 2, 2, 2]) == (2, 2)


def test_sign_test_exact_binomial_tails():
    counts = np.array([3] * 13)
    assert sign_test(counts, 3) == 1.0                       # no draw on either side
    # all 13 draws above: 2 * 2^-13
    assert sign_test(counts, 2) == pytest.approx(2 / 8192, rel=1e-12)
    # 11 of 13 below, 2 equal: 2 * P(Bin(13, 1/2) >= 11) = 2 * (78 + 13 + 1) / 8192
    counts = np.array([1] * 11 + [2, 2])
    assert sign_test(counts, 2) == pytest.approx(2 * 92 / 8192, rel=1e-12)
    # balanced draws never reject
    assert sign_test(np.array([1, 2, 3, 4, 5, 6, 7]), 4) == 1.0


def test_median_miss_exact_and_against_resampling():
    from scipy.stats import binom

    # a count that never varies: the median of any number of draws is that count
    assert median_miss(np.array([4] * 13)) == 0.0
    # two values, 1 in 6 draws of 13 and 2 in 7: the median of 13 draws is 2 unless 7 or more draws are 1
    c = np.array([1] * 6 + [2] * 7)
    assert median_miss(c) == pytest.approx(binom.sf(6, 13, 6 / 13), rel=1e-12)
    # against resampling the draws' own law
    c = np.array([2, 3, 3, 4, 4, 4, 5, 5, 6, 6, 7, 8, 9])
    rng = np.random.default_rng(1)
    meds = np.sort(rng.choice(c, (200_000, 13)), axis=1)[:, 6]
    p = np.mean(meds != 5)
    assert median_miss(c) == pytest.approx(p, abs=4 * np.sqrt(p * (1 - p) / 200_000))


def _row(a1, a2, *, values=True, count=True, edge=True, p=1.0):
    return dict(act="gelu", tgt="hermite(0, 1, 0.5)", batch="reused", N=1000, a1=a1, a2=a2, pred_count=2,
                sim_count=2 if count else 3, sim_count_high=2 if count else 3, count_p=p, values_ok=values,
                count_ok=count, edge_ok=edge, worst_rel=0.01, edge_pred=2.0, edge_sim=2.0, draws=25)


def test_grid_figure_marks_each_point_and_writes_its_rows(tmp_path):
    import json

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from benchmarks.bench_two_step_finite_n import plot_grid, save_grid_figure

    rows = [_row(0.0, 0.0), _row(0.0, 0.4, count=False, p=0.01), _row(0.4, 0.0, values=False, edge=False),
            _row(0.4, 0.4)]
    ax = plot_grid(rows)
    texts = {(round(t.get_position()[0]), round(t.get_position()[1])): t.get_text() for t in ax.texts}
    assert texts == {(0, 0): "2/2", (0, 1): "2/3†\nC", (1, 0): "2/2\nVE", (1, 1): "2/2"}
    red = [p for p in ax.patches if p.get_facecolor()[1] < 0.8]          # the failing cells
    assert sorted((round(p.get_x() + 0.5), round(p.get_y() + 0.5)) for p in red) == [(0, 1), (1, 0)]
    assert ax.get_title().endswith(": 2/4")
    plt.close(ax.figure)
    path = save_grid_figure(rows, tmp_path / "grid.png")
    side = json.loads((tmp_path / "grid.png.json").read_text())
    assert path.exists() and len(side["params"]["rows"]) == 4 and side["params"]["draws"] == 25


def test_cache_keys_keep_the_default_shape_and_tell_others_apart():
    from benchmarks.bench_two_step_finite_n import cache_key

    plain = cache_key("gelu", "linear", "reused", 0.2, 0.4, 1000)
    assert plain == "1000|reused|gelu|linear|0.2|0.4"   # old caches still hit
    assert cache_key("gelu", "linear", "reused", 0.2, 0.4, 1000, 0.5, 1.5) != plain


def test_median_spectrum_count_is_the_median_count_over_a_common_bulk():
    from benchmarks.bench_two_step_finite_n import median_spectrum_count
    from rmtfl.numerics import edge_outlier_count
    from rmtfl.theory._classical.edge_count import edge_positions

    bulk = list(2.0 - 0.01 * edge_positions(60))          # mean top values of a bulk: edge 2, TW scale 0.01
    # over one bulk the rule's cut is the same in every draw, and the k-th value of the rank-by-rank median exceeds
    # it exactly when most draws count at least k (a mean spectrum would put 3.0 / 3 above the edge and count 1)
    draws = [[3.0] + bulk, bulk[:1] + bulk, bulk[:1] + bulk]
    assert [edge_outlier_count(np.array(s), window=26).count for s in draws] == [1, 0, 0]
    assert median_spectrum_count(draws, 26) == 0
    draws = [[3.0, 2.6] + bulk, [2.9] + bulk + [1.5], [3.1, 2.7, 2.5] + bulk]     # lengths differ: common length
    assert median_spectrum_count(draws, 26) == 2


def test_the_edge_gap_note_quotes_the_acceptance_page():
    """The numbers of the finite-N result's note on a fitted edge far below the fold are those of the page's rows
    (docs/benchmarks/two_step_finite_n.md; docs/theory/two_step.md §9.3)."""
    import re
    from pathlib import Path

    from rmtfl.theory._two_step.counting import EDGE_GAP, count_on_prediction, low_edge_note

    page = Path(__file__).resolve().parents[1] / "docs" / "benchmarks" / "two_step_finite_n.md"
    bins = edge_gaps(page)
    far, near = bins[0], bins[2]
    assert far["gap"] == (-np.inf, -EDGE_GAP) and near["gap"] == (-0.02, 0.02)
    rule = count_on_prediction([10.0], 2.0, N=1000, psi=1.0)
    note = low_edge_note(rule, 2.0 * rule.edge)
    m = re.search(r"at the (\d+) points .* at (\d+) and the count .* at (\d+) \((\d+) of them too many\), against "
                  r"(\d+) and (\d+) of the (\d+) points", note)
    quoted = [int(v) for v in m.groups()]
    assert quoted == [far["rows"], far["edge_off"], far["count_over"] + far["count_under"], far["count_over"],
                      near["edge_off"], near["count_over"] + near["count_under"], near["rows"]]


@pytest.mark.slow
def test_the_wide_spread_note_quotes_the_acceptance_page():
    """The numbers of the finite-N result's note on an outlier spreading by a quarter of its value are those of the
    page's rows (docs/benchmarks/two_step_finite_n.md, each row predicted again; docs/theory/two_step.md §9.3)."""
    import re
    from pathlib import Path

    from benchmarks.bench_two_step_finite_n import spread_errors
    from rmtfl.theory import TwoStepOutlier
    from rmtfl.theory._two_step.two_step import wide_spread_note

    page = Path(__file__).resolve().parents[1] / "docs" / "benchmarks" / "two_step_finite_n.md"
    narrow, wide = spread_errors(page)
    note = wide_spread_note([TwoStepOutlier(10.0, 1.0, 0.0, (0.0,), 0.0, "sample", spread=5.0)])
    m = re.search(r"at the (\d+) points .* by ([\d.]+) % at the median point \(up to ([\d.]+) %, above 5 % at (\d+), "
                  r"the prediction high at (\d+)\), against ([\d.]+) % \(up to ([\d.]+) %\) at the (\d+) others", note)
    quoted = [float(v) for v in m.groups()]
    assert quoted == [wide["rows"], round(100 * wide["median"], 1), round(100 * wide["largest"], 1), wide["off"],
                      wide["high"], round(100 * narrow["median"], 1), round(100 * narrow["largest"], 1),
                      narrow["rows"]]
    # the note marks the points where the values fail: nearly half of its points are more than 5 % off (26 of 56),
    # more than ten times the share of the others (24 of 812)
    share, others = wide["off"] / wide["rows"], narrow["off"] / narrow["rows"]
    assert share > 0.4 and share > 10 * others and others < 0.1, (share, others)


def test_sample_value_errors_reads_the_single_samples_of_a_page(tmp_path):
    """On a page whose simulated means are the prediction's values times 1.05, every single-sample error is
    1/1.05 - 1 and the spikes of P are left out; a section of other shapes is skipped
    (docs/theory/two_step.md §9.3)."""
    from benchmarks.bench_two_step_finite_n import sample_value_errors
    from rmtfl.theory import two_step

    N, hq = 1000, "hermite(0, 1, 0.5)"
    p = two_step(hq, hq, psi=1.0, phi=2.0, eta1=N**0.4, eta2=N**0.4, N=N, batch="reused")
    kinds = [o.kind for o in p.outliers]
    assert "spike" in kinds and kinds.count("sample") >= 2
    sim = ", ".join(f"{1.05 * o.singular_value:.6f}" for o in p.outliers)
    row = f"| {N} | reused | He1+He2/2 | He1+He2/2 | (0.4, 0.4) | x | {sim} | 5/4 | 3–5 / 2–8 | 1/1 (1) | NO |"
    page = tmp_path / "page.md"
    page.write_text(f"## N = 1000, reused batch\n\n{row}\n\n## Other shapes: psi = 2\n\n{row}\n", encoding="utf-8")
    errors = sample_value_errors(page)
    assert list(errors) == [(N, "reused", "He1+He2/2", "He1+He2/2")]
    e = errors[(N, "reused", "He1+He2/2", "He1+He2/2")]
    assert len(e) == kinds.count("sample") and np.allclose(e, 1 / 1.05 - 1, atol=1e-6)


def test_points_with_seeds_of_their_own_share_no_batch():
    """``--own-seeds``: each point's first seed comes from its cache key (docs/theory/two_step.md §8.4): the same key
    gives the same seed, the 272 points of the N = 1000 page get 272 different blocks of 1000 seeds, apart from the
    shared seeds 1000, 1001, ... of the plain keys."""
    import itertools

    from benchmarks.bench_two_step_finite_n import ACTIVATIONS, GRID, TARGETS, cache_key, point_seed

    keys = [cache_key(act, tgt, "reused", a1, a2, 1000, own=True)
            for act, tgt, a1, a2 in itertools.product(ACTIVATIONS, TARGETS, GRID, GRID)]
    keys += [cache_key(act, tgt, "fresh", a1, a2, 1000, own=True)
             for act, tgt, a1, a2 in itertools.product(ACTIVATIONS, TARGETS, GRID[::2], GRID[::2])]
    seeds = [point_seed(k) for k in keys]
    assert len(keys) == 272 and len({s // 1000 for s in seeds}) == 272
    assert all(10**9 <= s < 10**9 + 10**9 and s % 1000 == 0 for s in seeds)
    assert point_seed(keys[0]) == seeds[0] and keys[0].endswith("|own")
    assert not cache_key("gelu", "linear", "reused", 0.2, 0.4, 1000).endswith("|own")


def test_sections_with_seeds_of_their_own_are_not_counted_twice(tmp_path):
    """The edge-gap table and the single-sample errors (both read ``page_rows``) leave out a section drawn again with
    seeds of its own at each point, which measures the same points (``OWN_TITLE``), and one run with the extreme
    samples grouped, another prediction (``GROUPED_TITLE``)."""
    from benchmarks.bench_two_step_finite_n import GROUPED_TITLE, OWN_TITLE, page_rows

    row = ("| 1000 | reused | tanh | He1+He2/2 | (0.0, 0.0) | 2.1 | 2.1 | 1/1 | 1–1 / 1–1 | "
           "1.900/2.000 (2.000) | yes |")
    page = tmp_path / "page.md"
    page.write_text(f"## N = 1000, reused batch\n\n{row}\n\n## N = 1000, reused batch, {OWN_TITLE}\n\n{row}\n\n"
                    f"## N = 1000, reused batch, {GROUPED_TITLE}\n\n{row}\n", encoding="utf-8")
    assert sum(b["rows"] for b in edge_gaps(page)) == 1
    assert [title for title, _ in page_rows(page)] == ["N = 1000, reused batch"]


def test_edge_offsets_read_the_fitted_edges_against_the_simulated_ones(tmp_path):
    """``edge_offsets``: fitted / simulated - 1 per row (1.900/2.000: -5 %; 2.200/2.000: +10 %), its median and mean,
    and the mean over the saturating activations alone."""
    from benchmarks.bench_two_step_finite_n import edge_offsets

    row = "| 1000 | reused | {} | He1+He2/2 | (0.0, 0.0) | 2.1 | 2.1 | 1/1 | 1–1 / 1–1 | {}/2.000 (2.000) | yes |"
    rows = [row.format("tanh", "1.900"), row.format("gelu", "2.200"), row.format("erf", "2.000")]
    page = tmp_path / "page.md"
    page.write_text("## N = 1000, reused batch\n\n" + "\n".join(rows) + "\n", encoding="utf-8")
    o = edge_offsets(page)
    assert o["rows"] == 3 and o["saturating_rows"] == 2
    assert o["median"] == pytest.approx(0.0) and o["mean"] == pytest.approx(0.05 / 3)
    assert o["saturating_mean"] == pytest.approx(-0.025)


def test_pool_follows_the_shared_draws_with_each_points_own(tmp_path, capsys):
    """``--pool``: a point's draws are those of ``--cache`` and then its own from the pooled cache, ``--seeds`` in
    all, nothing simulated; too few draws, or ``--own-seeds`` beside it, is a usage error (exit 2)."""
    from benchmarks.bench_two_step_finite_n import cache_key, main
    from rmtfl.theory._classical.edge_count import edge_positions

    act, tgt, N = "tanh", "hermite(0, 1, 0.5)", 200

    def draw(top):
        return {"sv": [top] + list(2.0 - 0.02 * edge_positions(60))}
    shared, own = tmp_path / "shared.json", tmp_path / "own.json"
    shared.write_text(json.dumps({cache_key(act, tgt, "reused", 0.0, 0.0, N): [draw(3.0), draw(3.1), draw(3.2)]}))
    own.write_text(json.dumps({cache_key(act, tgt, "reused", 0.0, 0.0, N, own=True): [draw(4.0), draw(4.1)]}))
    args = ["--N", str(N), "--grid", "0.0", "--batches", "reused", "--activations", act, "--targets", tgt,
            "--cache", str(shared), "--pool", str(own)]
    out = tmp_path / "rows.json"
    assert main(args + ["--seeds", "4", "--json", str(out)]) == 0
    (row,) = json.loads(out.read_text())
    assert row["draws"] == 4 and abs(row["sim"][0] - (3.0 + 3.1 + 3.2 + 4.0) / 4) < 1e-12
    for bad in (["--seeds", "6"], ["--seeds", "4", "--own-seeds"]):
        with pytest.raises(SystemExit) as e:
            main(args + bad)
        assert e.value.code == 2
    assert "--pool" in capsys.readouterr().err


def test_a_draw_keeps_enough_values_for_the_count_at_any_width(monkeypatch):
    """80 values, or the count rule's window plus 44 beyond N = 2000 (at N = 8000 the window is 72: 80 values would cap
    the count at 8)."""
    import types

    import rmtfl.numerics
    from benchmarks.bench_two_step_finite_n import simulate_cell
    from rmtfl.theory._two_step.counting import count_window

    fake = types.SimpleNamespace(singular_values=np.linspace(3.0, 1.0, 500), cos2_target=np.zeros((3, 1)))
    monkeypatch.setattr(rmtfl.numerics, "simulate_two_step", lambda *a, **k: fake)
    for N, kept in ((1000, 80), (2000, 80), (8000, 116)):
        assert len(simulate_cell("tanh", "linear", "reused", 0.4, 0.4, N, 1)[0]["sv"]) == kept
        assert kept - count_window(N, 1.0) >= 44
