"""Grids, canonical parameters, task keys and per-task seeds (rmtfl.sweep._grid)."""
import numpy as np
import pytest

from rmtfl.sweep._grid import (canonical_params, normalise_params, parse_axis, product_grid, seed_indices,
                              task_key, task_seed)


def test_parse_axis_forms():
    assert parse_axis("a", "0:0.45:10")[1] == 0.05  # rounded to 12 digits, not 0.05000000000000001
    assert parse_axis("a", "0:1:1") == [0.0]
    assert parse_axis("a", "1,2.5") == [1, 2.5]
    assert parse_axis("a", 3) == [3]
    assert parse_axis("a", np.array([0.5, 1.0])) == [0.5, 1.0]
    for bad in ("0:1", "0:1:0", "0:1:1.5", "x", "", "0:nan:2"):
        with pytest.raises(ValueError, match=r"\ba\b"):
            parse_axis("a", bad)


def test_product_grid_order_and_clash():
    g = product_grid({"x": [1, 2], "y": [10, 20, 30]}, fixed={"N": 5})
    assert [(p["x"], p["y"]) for p in g] == [(1, 10), (1, 20), (1, 30), (2, 10), (2, 20), (2, 30)]
    with pytest.raises(ValueError, match="both"):
        product_grid({"x": [1]}, fixed={"x": 2})


def test_canonical_params_types():
    p = {"b": np.float64(0.1), "a": np.int64(3), "c": np.bool_(True), "s": "tanh"}
    assert canonical_params(p) == '{"a":3,"b":0.1,"c":true,"s":"tanh"}'
    assert type(normalise_params(p)["a"]) is int
    with pytest.raises(ValueError, match=r"\bx\b"):
        normalise_params({"x": [1, 2]})
    with pytest.raises(ValueError, match="finite"):
        normalise_params({"x": float("inf")})


def test_keys_and_seeds_are_stable_and_distinct():
    p = {"N": 100, "alpha": 0.25}
    k = task_key("e", "1", p, 0)
    # reference value computed once and written here: the key must never change across releases,
    # otherwise old stores stop being reusable
    assert k == "a1f9f279b25104a1879b4f5a7d932ecd76b3977c85ffddd2e121cf77168c15fd"
    assert k == task_key("e", "1", {"alpha": 0.25, "N": 100}, 0)
    assert np.random.default_rng(task_seed("e", "1", p, 0)).integers(0, 1000, 3).tolist() == [562, 363, 96]
    assert len({k, task_key("e", "2", p, 0), task_key("f", "1", p, 0), task_key("e", "1", p, 1),
                task_key("e", "1", p, 0, root_seed=1), task_key("e", "1", {**p, "N": 101}, 0)}) == 6
    a = np.random.default_rng(task_seed("e", "1", p, 0)).standard_normal(3)
    b = np.random.default_rng(task_seed("e", "1", dict(reversed(list(p.items()))), 0)).standard_normal(3)
    c = np.random.default_rng(task_seed("e", "1", p, 1)).standard_normal(3)
    assert np.array_equal(a, b) and not np.array_equal(a, c)
    assert task_seed("e", "1", p, 7).spawn_key == (7,)


def test_seed_indices():
    assert seed_indices(3) == [0, 1, 2]
    assert seed_indices([4, 2, 4]) == [4, 2]
    for bad in (0, [-1], [], [1.5], True):
        with pytest.raises(ValueError, match="seed"):
            seed_indices(bad)
