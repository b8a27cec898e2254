"""benchmarks/probe_two_step_accuracy.py: random off-grid points against simulation (docs/reliability.md §4)."""
from __future__ import annotations

import json
import random

import pytest

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


@pytest.mark.parametrize("still_wrong", [False, True])
def test_a_suspect_is_drawn_again_before_it_is_reported(monkeypatch, tmp_path, still_wrong):
    """A point whose first draws say WRONG is checked again with ``--confirm`` draws from the same first seed; only
    the larger sample's verdict counts (exit status 1 only then), and the first draws' mean is kept beside it."""
    calls = []

    def fake_check(pt, draws, first_seed=1000):
        calls.append((draws, first_seed))
        wrong = draws == 3 or still_wrong
        return dict(pt, pred_top=2.0, sim_top=1.0 if draws == 3 else 1.9, sim_top_se=0.01, rel_top=0.5, top_ok=False,
                    pred_count=1, sim_counts=[1] * draws, count_ok=True, edge_pred=1.0, edge_sim=1.0, edge_ok=True,
                    reliable=True, notes=[], seconds=0.0, wrong=wrong)

    monkeypatch.setattr(probe, "check", fake_check)
    out = tmp_path / "probe.json"
    rc = probe.main(["--seed", "2", "--count", "1", "--draws", "3", "--confirm", "12", "--json", str(out)])
    assert calls == [(3, 200_000), (12, 200_000)]
    assert rc == (1 if still_wrong else 0)
    row = json.loads(out.read_text())[0]
    assert row["first_draws"]["sim_top"] == 1.0 and row["sim_top"] == 1.9 and len(row["sim_counts"]) == 12


@pytest.mark.parametrize("args", [["--confirm", "101"], ["--draws", "1"], ["--count", "0"]])
def test_bad_arguments_exit_2(args, capsys):
    with pytest.raises(SystemExit) as e:
        probe.main(args)
    assert e.value.code == 2 and "must be in" in capsys.readouterr().err


def test_one_given_point_is_checked_and_reported(tmp_path, capsys):
    """``--at JSON``: the shape defaults (psi 1, phi 2, reused, no noise), every predicted outlier beside the
    simulated ranks, and the JSON of the comparison."""
    pt = probe.point('{"act": "tanh", "tgt": "hermite(0, 1, 0.5)", "N": 300, "a1": 0.3, "a2": 0.3}')
    assert (pt["psi"], pt["phi"], pt["batch"], pt["noise"], pt["d"], pt["n"]) == (1.0, 2.0, "reused", 0.0, 300, 600)
    out = tmp_path / "at.json"
    assert probe.main(["--draws", "2", "--json", str(out), "--at",
                       '{"act": "tanh", "tgt": "hermite(0, 1, 0.5)", "N": 300, "a1": 0.3, "a2": 0.3, "psi": 2}']) == 0
    text = capsys.readouterr().out
    assert "predicted outliers:" in text and "simulated ranks (mean ± s.e. of 2 draws)" in text
    r = json.loads(out.read_text())
    assert r["d"] == 150 and len(r["sim_values"]) >= 3 and r["pred_values"][0] == r["pred_top"]


@pytest.mark.parametrize("spec", ['{"act": "tanh"}', "not json", '{"act": "tanh", "tgt": "linear", "N": 300, '
                                  '"a1": 0.1, "a2": 0.1, "eta": 3}',
                                  '{"act": "tanh", "tgt": "linear", "N": "300", "a1": 0.1, "a2": 0.1}',
                                  '{"act": "tanh", "tgt": "linear", "N": 300, "a1": 0.1, "a2": 0.1, "psi": -1}',
                                  '{"act": "tanh", "tgt": "linear", "N": 1, "a1": 0.1, "a2": 0.1}'])
def test_a_bad_point_exits_2(spec, capsys):
    with pytest.raises(SystemExit) as e:
        probe.main(["--at", spec])
    assert e.value.code == 2 and "--at" in capsys.readouterr().err
