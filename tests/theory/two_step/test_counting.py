"""The count rule on a predicted spectrum (rmtfl/theory/_two_step/counting.py; docs/theory/two_step.md §9.2)."""
from __future__ import annotations

import numpy as np

from rmtfl.theory import edge_outlier_count, two_step
from rmtfl.theory._two_step.counting import EDGE_GAP, count_on_prediction, count_window, low_edge_note


def predicted_count(roots, edge, **kw):
    return count_on_prediction(roots, edge, **kw).count


def test_the_count_on_a_prediction_drops_roots_at_the_edge():
    assert predicted_count([10.0, 3.0], 2.0, N=1000, psi=1.0) == 2
    assert predicted_count([10.0, 2.0005], 2.0, N=1000, psi=1.0) == 1
    assert predicted_count([], 2.0, N=1000, psi=1.0) == 0
    # with the bulk's own top values: a long thin tail (values far below the edge) lets the rule see less of the edge
    sharp = 2.0 - 0.01 * np.arange(1, 47) ** (2 / 3)
    assert predicted_count([10.0, 2.05], 2.0, N=1000, psi=1.0, bulk_top=sharp) == 2
    tail = np.linspace(2.0, 1.5, 46)                      # a tail as steep as the roots: 2.05 is part of it
    assert predicted_count([10.0, 2.05], 2.0, N=1000, psi=1.0, bulk_top=tail) == 1


def test_count_on_prediction_states_its_cut():
    tail = np.linspace(2.0, 1.5, 46)
    rule = count_on_prediction([10.0, 2.05], 2.0, N=1000, psi=1.0, bulk_top=tail)
    assert rule.count == 1 and 2.05 < rule.threshold < 10.0 and rule.edge > 2.0   # the fit sees the tail's top
    assert rule == edge_outlier_count(np.concatenate([[10.0, 2.05], tail]), window=count_window(1000, 1.0))


def test_uncounted_roots_are_named_with_the_cut():
    # quadratic sigma, He1 + He3/sqrt6, (0.4, 0.4), N = 1000, each extreme sample on its own: single-sample roots well
    # above the density's fold but below the cut the rule fits to the heavy-tailed predicted spectrum
    # (docs/theory/two_step.md §8.3)
    p = two_step("hermite(0, 1, 0.5)", "hermite(0, 1, 0, 0.4082482904638631)", psi=1.0, phi=2.0, eta1=1000**0.4,
                 eta2=1000**0.4, N=1000, extreme_samples="single")
    note = next(n for n in p.notes if "below the count rule's cut" in n)
    cut = float(note.split("cut ")[1].split()[0])
    dropped = [float(v) for v in note.split("roots at ")[1].split(" lie")[0].replace("(sample)", "").split(",")]
    assert dropped and max(dropped) < cut <= min(o.singular_value for o in p.outliers)
    assert min(dropped) > p.bulk_edge        # above the fold: the note says why they are not counted all the same


def test_fitted_edge_is_the_rules_edge_on_the_predicted_spectrum():
    # the note names the cut and the fitted edge; the result carries the same edge (docs/theory/two_step.md §8.4)
    p = two_step("hermite(0, 1, 0.5)", "hermite(0, 1, 0, 0.4082482904638631)", psi=1.0, phi=2.0, eta1=1000**0.4,
                 eta2=1000**0.4, N=1000, extreme_samples="single")
    note = next(n for n in p.notes if "below the count rule's cut" in n)
    assert float(note.split("fitted edge ")[1].split()[0].rstrip(")")) == float(f"{p.fitted_edge:#.4g}")
    # the heavy-tailed bulk: the fit sees its descent, not its fold.  The rule's edge on 25 simulated draws at this
    # point is 13.94 +- 0.60 (docs/benchmarks/two_step_finite_n.md, N = 1000 reused, seeds 1000-1024): the predicted
    # fitted edge lies within 3 standard errors of it, the fold far below
    assert abs(p.fitted_edge - 13.94) < 3 * 0.60 < abs(p.bulk_edge - 13.94)
    # a bounded target and a saturating sigma: no tail, the fitted edge is the fold to within a Tracy-Widom scale
    q = two_step("tanh", "hermite(0, 1, 0.5)", psi=1.0, phi=2.0, eta1=1000**0.3, eta2=1000**0.3, N=1000)
    assert abs(q.fitted_edge - q.bulk_edge) < 1000 ** (-2 / 3) * q.bulk_edge
    assert two_step("tanh", "hermite(0, 1, 0.5)", psi=1.0, phi=2.0, eta1=2.0, eta2=2.0).fitted_edge is None


def test_grouped_roots_beyond_the_process_count_are_named_with_it():
    # the same point with the extreme samples grouped (the default with a reused batch): the count is read through the
    # Poisson process of the mean count function, and the roots beyond it are named with that count
    # (docs/theory/two_step.md §9.2)
    p = two_step("hermite(0, 1, 0.5)", "hermite(0, 1, 0, 0.4082482904638631)", psi=1.0, phi=2.0, eta1=1000**0.4,
                 eta2=1000**0.4, N=1000, extreme_samples="grouped")
    note = next(n for n in p.notes if "are not counted" in n)
    dropped = [float(v) for v in note.split("roots at ")[1].split(" are")[0].replace("(sample)", "").split(",")]
    assert dropped and max(dropped) < min(o.singular_value for o in p.outliers)
    assert min(dropped) > p.bulk_edge
    assert f"median count is {len(p.outliers)}," in note
    assert not any("below the count rule's cut" in n for n in p.notes)
    # its fitted edge, the rule's mean edge over the process's spectra, against the 25 draws' 13.94 +- 0.60 (above)
    assert abs(p.fitted_edge - 13.94) < 3 * 0.60 < abs(p.bulk_edge - 13.94)
    lo, hi = p.count_range
    assert lo <= len(p.outliers) <= hi


def test_a_fitted_edge_far_below_the_fold_is_noted():
    rule = count_on_prediction([10.0], 2.0, N=1000, psi=1.0)
    assert low_edge_note(rule, rule.edge) is None
    assert low_edge_note(rule, rule.edge / (1 - 0.9 * EDGE_GAP)) is None
    note = low_edge_note(rule, rule.edge / (1 - 1.25 * EDGE_GAP))
    assert note is not None and "5 % below" in note and "docs/theory/two_step.md §9.3" in note
    # the quadratic sigma with He1 + He2/2 at (0.2, 0.4), N = 2000: fitted edge 3.239, fold 3.535, and 25 draws of
    # the point's own fit their edge at 3.570 (docs/benchmarks/two_step_finite_n.md); tanh there: the two agree and
    # nothing is noted
    p = two_step("hermite(0, 1, 0.5)", "hermite(0, 1, 0.5)", psi=1.0, phi=2.0, eta1=2000**0.2, eta2=2000**0.4, N=2000)
    assert p.fitted_edge < (1 - EDGE_GAP) * p.bulk_edge
    assert sum("below the bulk's fold" in n for n in p.notes) == 1 and p.reliable
    q = two_step("tanh", "hermite(0, 1, 0.5)", psi=1.0, phi=2.0, eta1=2000**0.2, eta2=2000**0.4, N=2000)
    assert not any("below the bulk's fold" in n for n in q.notes)


def test_the_process_counts_the_bulks_top_tail(monkeypatch):
    """gelu with He1 + He2/2 at (0.4, 0.4), reused: the Poisson process counts more values than the predicted roots,
    and those beyond them are the bulk's top values, kind "tail" (docs/theory/two_step.md §8.3, "The bulk's top
    tail").  The draws' median counts (the rule of docs/theory/two_step.md §9.2): 5 at N = 2000 in each of the three
    N = 2000 sections of docs/benchmarks/two_step_finite_n.md (25 shared draws, 25 of the point's own, both), 7-8 at
    N = 4000 (6 draws, docs/theory/two_step.md §8.4, "A larger width")."""
    import rmtfl.theory._two_step.two_step as module
    from rmtfl.theory._classical.activations import get_activation
    from rmtfl.theory._classical.targets import make_target
    from rmtfl.theory._two_step.finite_n import prediction_bulk

    kw = dict(psi=1.0, phi=2.0)
    for N, sim_counts, tails in ((2000, (5, 5), 1), (4000, (7, 8), 4)):
        p = two_step("gelu", "hermite(0, 1, 0.5)", eta1=N**0.4, eta2=N**0.4, N=N, **kw)
        kinds = [o.kind for o in p.outliers]
        assert sim_counts[0] <= len(p.outliers) <= sim_counts[1] and kinds.count("tail") == tails
        assert kinds[-tails:] == ["tail"] * tails                     # below every root
        _, bulk = prediction_bulk(get_activation("gelu"), make_target("hermite(0, 1, 0.5)"), phi2=None, eta1=N**0.4,
                                  eta2=N**0.4, batch="reused", N=N, **kw)
        top = bulk.top_values(count_window(N, 1.0) + 20)
        np.testing.assert_allclose([o.singular_value for o in p.outliers[-tails:]], top[:tails], rtol=1e-12)
        assert all(0 < o.spread < 0.05 * o.singular_value and o.theta == o.cos2_target == 0.0
                   for o in p.outliers[-tails:])
        assert p.count_range[0] <= len(p.outliers) <= p.count_range[1]
        monkeypatch.setattr(module, "TAIL_COUNT", False)           # the count stopped at the roots: one or more short
        q = two_step("gelu", "hermite(0, 1, 0.5)", eta1=N**0.4, eta2=N**0.4, N=N, **kw)
        monkeypatch.setattr(module, "TAIL_COUNT", True)
        assert len(q.outliers) == len(p.outliers) - tails < sim_counts[0]
        assert [o.singular_value for o in q.outliers] == [o.singular_value for o in p.outliers[:-tails]]
    # each sample on its own the count stays at the roots
    s = two_step("gelu", "hermite(0, 1, 0.5)", eta1=4000**0.4, eta2=4000**0.4, N=4000, extreme_samples="single", **kw)
    assert "tail" not in [o.kind for o in s.outliers]


def test_the_count_range_at_n_8000_holds_every_draw():
    """gelu at (0.4, 0.4), reused, N = 8000: the bulk's top tail holds more values above the rule's cut than the ranks
    the process draws at first, and those ranks grow with it (docs/theory/two_step.md §8.3, "A count deeper than the
    drawn ranks").
    The counts of 4 draws per target (seeds 1000-1003; `python -m benchmarks.bench_two_step_finite_n --N 8000 --grid
    0.4 --seeds 4 --batches reused --activations gelu`, docs/theory/two_step.md §8.4): He1 + He2/2 8, 8, 10, 10 and
    He1 + He3/sqrt(6) 13, 25, 21, 19.  Each lies in the predicted count_range, and with He1 + He3/sqrt(6) the count
    lies among them (it was 32, the range's top, where the ranks beyond the drawn ones sat rigid)."""
    N = 8000
    for target, draws, among in (("hermite(0, 1, 0.5)", (8, 8, 10, 10), False),
                                 ("hermite(0, 1, 0, 0.4082482904638631)", (13, 25, 21, 19), True)):
        p = two_step("gelu", target, psi=1.0, phi=2.0, eta1=N**0.4, eta2=N**0.4, N=N)
        lo, hi = p.count_range
        assert all(lo <= c <= hi for c in draws) and lo < len(p.outliers) < hi
        assert not among or min(draws) <= len(p.outliers) <= max(draws)
