"""benchmarks/diag_spike_spread.py: what an outlier follows from draw to draw (docs/theory/two_step.md §8.5)."""
from __future__ import annotations

import pytest

from benchmarks.diag_spike_spread import correlations


def test_correlations_are_correlations_and_refuse_fresh_batches():
    got = correlations("tanh|hermite(0, 1, 0.5)|reused|0.2|0.2", 60, 8, rank=1)
    assert set(got) == {"sd", "unexplained", "E_N[g^4]", "E_n[y^2]", "E_n[y^4]", "max |y|"}
    assert got["sd"] > 0 and 0.0 <= got["unexplained"] <= 1.0
    assert all(-1.0 <= got[k] <= 1.0 for k in ("E_N[g^4]", "E_n[y^2]", "E_n[y^4]", "max |y|"))
    with pytest.raises(ValueError, match="reused"):
        correlations("tanh|hermite(0, 1, 0.5)|fresh|0.2|0.2", 60, 2)


def test_decompose_gives_both_parts_and_the_prediction_its_parts():
    """The two conditional spreads are standard deviations of the top three values; with W0 and a fixed the top
    spike of a tanh point still moves (the batch's share), and the predicted parts add up to the predicted spread."""
    import math

    from benchmarks.diag_spike_spread import decompose, predict, predicted_parts

    point = "tanh|hermite(0, 1, 0.5)|reused|0.2|0.2"
    got = decompose(point, 60, 2, 4)
    assert set(got) == {"batch", "W0, a"} and all(len(v) == 3 and min(v) >= 0.0 for v in got.values())
    assert got["batch"][0] > 0.0
    parts = predicted_parts(point, 200)
    outs = [o for o in predict(point, 200) if o.kind == "spike"]
    assert parts[0] is not None and set(parts[0]) == {"data", "first", "chi2", "rows", "resolvent"}
    assert math.isclose(math.sqrt(sum(v * v for v in parts[0].values())), outs[0].spread, rel_tol=1e-9)
    with pytest.raises(ValueError, match="reused"):
        decompose("tanh|hermite(0, 1, 0.5)|fresh|0.2|0.2", 60, 1, 2)
