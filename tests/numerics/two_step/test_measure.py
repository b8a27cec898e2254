"""Measuring a simulated W_T: how many top vectors the default measures (rmtfl/numerics/_two_step/measure.py;
docs/theory/two_step.md §9.2)."""
import numpy as np

from rmtfl.numerics import edge_outlier_count, simulate_two_step
from rmtfl.numerics._two_step.measure import DEFAULT_VECTORS, default_vectors
from rmtfl.theory._classical.edge_count import edge_positions


def test_default_vectors_caps_the_values_above_the_edge_unless_the_count_rule_finds_more(monkeypatch):
    import rmtfl.numerics._two_step.measure as measure

    bulk = 2.0 - 0.01 * edge_positions(300)                 # a bulk's mean top values: edge 2, Tracy-Widom scale 0.01
    three = np.concatenate([[9.0, 7.0, 5.0], bulk])
    assert edge_outlier_count(three).count == 3
    assert default_vectors(three, 10, None) == 11            # every value above the MP edge while there are few
    assert default_vectors(three, 200, None) == DEFAULT_VECTORS + 1        # not hundreds of a widened bulk's
    assert default_vectors(three[:10], 5, None) == 6         # too short for the rule: the values above the edge
    assert default_vectors(three, 200, 5) == 201             # top k only: the rule cannot be read
    monkeypatch.setattr(measure, "DEFAULT_VECTORS", 2)
    assert default_vectors(three, 200, None) == 4            # every outlier the count rule finds, past the cap


def test_the_default_vectors_stop_short_of_a_widened_bulks_values_above_the_mp_edge():
    """A widened bulk (the quadratic sigma at eta_t = N^0.4) has dozens of values above the Marchenko–Pastur edge;
    the default ``n_vectors`` measures at most ``DEFAULT_VECTORS`` + 1 of them, with every outlier the count rule
    finds (docs/theory/two_step.md §9.2), an explicit ``n_vectors`` its own number, and the values are the same
    either way."""

    N = 400
    kw = dict(N=N, d=N, n=2 * N, eta1=N**0.4, eta2=N**0.4, rng=3)
    r = simulate_two_step("hermite(0, 1, 0.5)", "hermite(0, 1, 0.5)", **kw)
    count = edge_outlier_count(r.singular_values).count
    assert r.outlier_count > DEFAULT_VECTORS + 1 > count + 1   # above the MP edge: the widened bulk's top as well
    assert r.cos2_target.shape == (DEFAULT_VECTORS + 1, 1) and r.cos2_a_powers.shape[0] == DEFAULT_VECTORS + 1
    r5 = simulate_two_step("hermite(0, 1, 0.5)", "hermite(0, 1, 0.5)", n_vectors=5, **kw)
    assert r5.cos2_target.shape == (5, 1)
    np.testing.assert_array_equal(r5.singular_values, r.singular_values)
    # vectors from solves of 5 and of 33 triplets: equal to the solver's accuracy (the third value lies close to the
    # fourth, so its vector is the least sharp)
    np.testing.assert_allclose(r5.cos2_target[:3], r.cos2_target[:3], atol=1e-7)


def test_a_draw_takes_one_dense_spectrum_and_one_vector_solve(monkeypatch):
    """The default ``n_vectors`` is read from the draw's values, then one solve measures every vector it asks for:
    the dense spectrum is not taken twice (docs/theory/two_step.md §9.2)."""
    import rmtfl.numerics._two_step.measure as measure

    calls = {"values": 0, "vectors": []}
    values, triplets = measure.singular_values, measure.top_singular_triplets

    def counted_values(*args, **kwargs):
        calls["values"] += 1
        return values(*args, **kwargs)

    def counted_triplets(W, k, **kwargs):
        calls["vectors"].append(k)
        return triplets(W, k, **kwargs)

    monkeypatch.setattr(measure, "singular_values", counted_values)
    monkeypatch.setattr(measure, "top_singular_triplets", counted_triplets)
    N = 300
    r = simulate_two_step("hermite(0, 1, 0.5)", "hermite(0, 1, 0.5)", N=N, d=N, n=2 * N, eta1=N**0.4, eta2=N**0.4,
                          rng=5)
    assert r.cos2_target.shape[0] > 3                          # more vectors than the least three
    assert calls == {"values": 1, "vectors": [r.cos2_target.shape[0]]}
