"""``rmtfl flow kkt|simulate|saddle``."""
import json

import numpy as np
import pytest

from rmtfl.cli import main


def test_kkt_example_json(capsys):
    assert main(["flow", "kkt", "--example", "check2", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert abs(out["value"] - 0.3849001794597505) < 1e-12 and out["degree"] == 3


def test_saddle_and_simulate(capsys, tmp_path):
    assert main(["flow", "saddle", "--example", "check2"]) == 0
    assert "loss = 0.17" in capsys.readouterr().out
    assert main(["flow", "simulate", "--example", "check1", "--delta", "1e-4", "--json", "--out", str(tmp_path)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert abs(out["measured_escape"] - 8.38846) < 2e-5
    assert (tmp_path / "flow_simulate.png").exists() and (tmp_path / "flow_simulate.json").exists()


def test_seed_draws_a_new_initial_direction(capsys):
    """With an example, ``--seed`` replaces the example's w0 (it was ignored before)."""
    base = ["flow", "simulate", "--example", "check1", "--delta", "1e-4", "--points", "50", "--json"]
    assert main(base) == 0
    a = json.loads(capsys.readouterr().out)
    assert main(base + ["--seed", "3"]) == 0
    b = json.loads(capsys.readouterr().out)
    assert a["predicted_escape"] != b["predicted_escape"] and b["settings"]["seed"] == 3


def test_data_file_and_bad_input(tmp_path, capsys):
    f = tmp_path / "d.npz"
    np.savez(f, X=np.eye(3), y=np.array([1.0, -0.5, -0.3]))
    assert main(["flow", "kkt", "--data", str(f), "--activation", "square", "--N", "2"]) == 0
    assert main(["flow", "kkt", "--data", str(f), "--activation", "tanh"]) == 2
    assert main(["flow", "simulate", "--example", "check2", "--delta", "-1"]) == 2
    np.savez(tmp_path / "bad.npz", X=np.eye(3), y=np.ones(2))
    capsys.readouterr()
    assert main(["flow", "kkt", "--data", str(tmp_path / "bad.npz")]) == 2
    assert "y must have shape" in capsys.readouterr().err
    for argv in (["flow", "kkt"], ["flow", "kkt", "--example", "check2", "--data", str(f)],
                 ["flow", "kkt", "--example", "check2", "--seed", "1"],      # the KKT search is deterministic
                 ["flow", "kkt", "--example", "check2", "--width", "4"]):    # --width is now --N
        with pytest.raises(SystemExit) as exc:
            main(argv)
        assert exc.value.code == 2
