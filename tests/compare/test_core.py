"""Comparison rows and the JSON report schema of issue 2."""
import json
import math

import pytest

from rmtfl.compare import Report, compare, compare_bool, mean_stderr


def test_compare_verdict_and_nan():
    assert compare("classical", "x", 1.0, 1.05, tolerance=0.1).passed
    assert not compare("classical", "x", 1.0, 1.2, tolerance=0.1).passed
    assert not compare("classical", "x", 1.0, float("nan"), tolerance=0.1).passed


def test_report_schema(tmp_path):
    r = Report([compare("classical", "edge", 2.0, 1.99, 0.01, tolerance=0.05),
                compare_bool("two-step", "order", "a<b", "a<b", True)])
    d = json.loads(r.write_json(tmp_path / "r.json").read_text())
    row = d["comparisons"][0]
    assert set(row) >= {"part", "name", "predicted", "measured", "stderr", "passed"}
    assert d["comparisons"][1]["stderr"] is None and d["passed"] is True
    assert "== two-step ==" in r.table()


def test_mean_stderr():
    m, s = mean_stderr([1.0, 2.0, 3.0])
    assert m == 2.0 and s == pytest.approx(1 / math.sqrt(3))
    with pytest.raises(ValueError):
        mean_stderr([])
