"""``rmtfl sweep`` and ``rmtfl phase-diagram`` end to end (in-process, real store, real figures)."""
import json

import pytest

from rmtfl.cli._main import main


def _json(capsys, argv):
    rc = main(argv)
    return rc, json.loads(capsys.readouterr().out)


def test_sweep_two_step_json_and_resume(tmp_path, capsys):
    store = str(tmp_path / "cli.sqlite")
    argv = ["sweep", "two-step", "--alpha1", "0:0.4:2", "--alpha2", "0.3:0.45:2", "--N", "80", "--seeds", "2",
            "--store", store, "--workers", "0", "--json", "--no-progress"]
    rc, out = _json(capsys, argv)
    assert rc == 0
    assert (out["points"], out["computed"], out["reused"], out["failed"]) == (8, 8, 0, 0)
    assert [(r["params"]["alpha1"], r["params"]["alpha2"]) for r in out["results"]] == \
        [(0.0, 0.3), (0.0, 0.45), (0.4, 0.3), (0.4, 0.45)]           # grid order, alpha1 slowest
    assert all(r["n"] == 2 and "outliers" in r["mean"] for r in out["results"])
    assert {"two-step", "one-step", "bbp", "kernel"} <= set(out["experiments"])
    rc, again = _json(capsys, argv + ["--seeds", "3"])                 # the last --seeds wins
    assert (again["computed"], again["reused"]) == (4, 8)


def test_sweep_text_output_and_failures(tmp_path, capsys):
    rc = main(["sweep", "bbp", "--theta=-1,2", "--N", "40", "--seeds", "1", "--store",
               str(tmp_path / "t.sqlite"), "--workers", "0", "--no-progress"])
    text = capsys.readouterr().out
    assert rc == 1 and "failed 1" in text and "theta must be >= 0" in text


def test_bad_arguments_exit_2(tmp_path, capsys):
    base = ["sweep", "two-step", "--N", "80", "--store", str(tmp_path / "x.sqlite"), "--workers", "0",
            "--no-progress"]
    assert main(base + ["--alpha1", "0:0.4"]) == 2
    assert main(base + ["--seeds", "0"]) == 2
    bad = tmp_path / "foreign.sqlite"
    bad.write_text("not a database")
    assert main(["sweep", "bbp", "--store", str(bad), "--workers", "0", "--no-progress"]) == 2
    assert "not an rmtfl sweep store" in capsys.readouterr().err
    assert bad.read_text() == "not a database"
    with pytest.raises(SystemExit):
        main(["sweep", "two-step", "--workers", "1", "--scheduler", "tcp://127.0.0.1:1"])


def test_phase_diagram_theory_and_empirical(tmp_path, capsys):
    out_dir = tmp_path / "fig"
    rc, out = _json(capsys, ["phase-diagram", "--out", str(out_dir), "--alpha1", "0.1,0.4",
                             "--alpha2", "0.45", "--activation", "gelu", "--json"])
    assert rc == 0 and out["theory"] == [[1.0], [4.0]]   # floor(0.45/0.4), floor(0.45/0.1)
    rc, out = _json(capsys, ["phase-diagram", "--empirical", "--out", str(out_dir), "--alpha1", "0.1,0.4",
                             "--alpha2", "0.45", "--N", "80", "--seeds", "1", "--workers", "0",
                             "--store", str(tmp_path / "pd.sqlite"), "--json", "--no-progress"])
    assert rc == 0 and len(out["empirical"]) == 2 and 0.0 <= out["agreement"] <= 1.0
    png = out_dir / "phase_diagram.png"
    assert png.stat().st_size > 1000 and (out_dir / "phase_diagram.png.json").exists()
    assert main(["phase-diagram", "--alpha1", "0.5", "--out", str(out_dir)]) == 2
