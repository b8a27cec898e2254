"""``rmtfl flow kkt|simulate|saddle``."""
import json

import numpy as np

from rmtfl.cli._main import main


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


def test_data_file_and_bad_input(tmp_path, capsys):
    f = tmp_path / "d.npz"
    np.savez(f, X=np.eye(3), y=np.array([1.0, -0.5, -0.3]))
    assert main(["flow", "kkt", "--data", str(f), "--activation", "square", "--width", "2"]) == 0
    assert main(["flow", "kkt", "--data", str(f), "--activation", "tanh"]) == 2
    assert main(["flow", "simulate", "--example", "check2", "--delta", "-1"]) == 2
    assert main(["flow", "kkt"]) == 2
    np.savez(tmp_path / "bad.npz", X=np.eye(3), y=np.ones(2))
    assert main(["flow", "kkt", "--data", str(tmp_path / "bad.npz")]) == 2
    assert "y must have shape" in capsys.readouterr().err
