"""CLI of the kernel-spectra part: rmtfl theory ck, rmtfl simulate ck."""
import json

from rmtfl.cli import main


def _json(capsys, argv):
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_theory_ck_json_and_text(capsys):
    out = _json(capsys, ["theory", "ck", "--activation", "relu", "--psi", "1", "--phi", "1", "--N", "2000", "--json"])
    assert abs(out["edges"]["upper"] - 1.967045) < 1e-6 and out["atom"] == 0.0
    assert out["outliers"][0]["kind"] == "mu0" and abs(out["outliers"][0]["location"] - 319.0719) < 1e-3
    assert "_law" not in out and set(out["quantiles"]) == {"0.05", "0.25", "0.5", "0.75", "0.95"}
    assert main(["theory", "ck", "--activation", "tanh", "--psi", "2", "--phi", "1"]) == 0
    assert "bulk edges" in capsys.readouterr().out


def test_simulate_ck(capsys, tmp_path):
    out = _json(capsys, ["simulate", "ck", "--activation", "relu", "--N", "200", "--d", "200", "--n", "300",
                         "--json", "--out", str(tmp_path)])
    assert out["N"] == 200 and len(out["top"]) == 5 and out["ks"] < 0.1
    assert abs(out["top"][0] - out["predicted_outliers"][0]) / out["predicted_outliers"][0] < 0.05
    assert (tmp_path / "ck.json").exists()


def test_bad_flags_exit_2(capsys):
    assert main(["theory", "ck", "--psi", "0"]) == 2
    assert "psi" in capsys.readouterr().err
    assert main(["theory", "ck", "--activation", "nope"]) == 2
    assert main(["simulate", "ck", "--N", "0", "--d", "3", "--n", "3"]) == 2
