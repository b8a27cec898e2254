"""benchmarks/probe_two_step_accuracy.py: random off-grid points against simulation (docs/reliability.md §4)."""
from __future__ import annotations

import json
import random

from benchmarks import probe_two_step_accuracy as probe


def test_draws_stay_in_the_stated_ranges_and_repeat_with_the_seed():
    a = [probe.draw(random.Random(5)) for _ in range(1)] + [probe.draw(random.Random(5))]
    assert a[0] == a[1]
    rng = random.Random(11)
    for _ in range(200):
        pt = probe.draw(rng)
        assert pt["act"] in probe.ACTIVATIONS and pt["tgt"] in probe.TARGETS
        assert 0.0 <= pt["a1"] <= 0.45 and 0.0 <= pt["a2"] <= 0.45
        assert pt["N"] * pt["d"] * pt["n"] <= probe.MAX_WORK
        assert pt["d"] == round(pt["N"] / pt["psi"]) and pt["n"] == round(pt["phi"] * pt["d"])
        assert "second_layer" not in pt
    wide = [probe.draw(rng, wide=True) for _ in range(200)]
    assert {p["second_layer"] for p in wide} == {"gaussian", "rademacher"}
    assert {p["psi"] for p in wide} == {0.25, 0.5, 1.0, 2.0, 4.0}
    assert all(p["N"] * p["d"] * p["n"] <= probe.MAX_WORK for p in wide)


def test_one_point_against_its_draws(tmp_path):
    """A small point end to end: the prediction beside two draws, every criterion and the flag computed, and the
    command line's JSON and exit status (0: nothing wrong)."""
    pt = dict(act="tanh", tgt="hermite(0, 1, 0.5)", psi=2.0, phi=2.0, N=300, d=150, n=300, batch="reused",
              a1=0.3, a2=0.3, noise=0.0)
    r = probe.check(pt, 2)
    assert r["reliable"] and not r["wrong"] and r["top_ok"] and r["edge_ok"]
    assert r["pred_count"] == 1 and len(r["sim_counts"]) == 2
    assert r["rel_top"] == abs(r["pred_top"] - r["sim_top"]) / r["sim_top"]
    out = tmp_path / "probe.json"
    assert probe.main(["--seed", "3", "--count", "1", "--draws", "2", "--json", str(out)]) in (0, 1)
    rows = json.loads(out.read_text())
    assert len(rows) == 1 and {"top_ok", "count_ok", "edge_ok", "wrong", "seconds"} <= rows[0].keys()
