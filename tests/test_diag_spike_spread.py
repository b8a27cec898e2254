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
