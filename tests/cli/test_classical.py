"""CLI of the classical part: exit codes and JSON output."""
import json

import pytest

from rmtfl.cli import main


def _json(capsys, argv):
    rc = main(argv)
    out = capsys.readouterr().out
    return rc, json.loads(out)


def test_theory_mp_json(capsys):
    rc, res = _json(capsys, ["theory", "mp", "--ratio", "0.5", "--json"])
    assert rc == 0
    assert res["sv_edges"] == pytest.approx([0.2928932188, 1.7071067812], abs=1e-10)
    assert res["moments"][:3] == pytest.approx([1.0, 1.0, 1.5])
    assert res["atom"] == 0.0
    rc, res = _json(capsys, ["theory", "mp", "--psi", "2", "--var", "1", "--json"])
    assert res["psi"] == 2.0 and res["atom"] == 0.5 and res["bgn_threshold"] == pytest.approx(1.189207115, abs=1e-9)


def test_theory_bgn_json(capsys):
    rc, res = _json(capsys, ["theory", "bgn", "--theta", "2", "0.7", "--ratio", "0.5", "--json"])
    assert rc == 0
    first, second = res["outliers"]
    assert first["singular_value"] == pytest.approx(2.3717082451, abs=1e-10)
    assert first["cos2_left"] == pytest.approx(0.8611111111, abs=1e-10)
    assert first["cos2_right"] == pytest.approx(0.775, abs=1e-12)
    assert second["outlier"] is False and second["cos2_left"] == 0.0


def test_theory_hermite_json(capsys):
    from rmtfl import _defaults

    rc, res = _json(capsys, ["theory", "hermite", "--json"])        # defaults: rmtfl._defaults, kmax 4
    assert rc == 0 and res["activation"] == _defaults.ACTIVATION and res["kmax"] == 4
    rc, res = _json(capsys, ["theory", "hermite", "--activation", "relu", "--json"])   # closed forms below
    assert rc == 0 and res["activation"] == "relu"
    assert res["mu"] == pytest.approx([0.3989422804, 0.5, 0.3989422804, 0.0, -0.3989422804], abs=1e-10)
    assert res["nonlinear_norm"] == pytest.approx(0.3014051375, abs=1e-10)


def test_theory_tw(capsys):
    rc, res = _json(capsys, ["theory", "tw", "--beta", "2", "--s", "-2", "--json"])
    assert rc == 0 and res["cdf"] == pytest.approx(0.4132241425, abs=1e-10)
    rc, res = _json(capsys, ["theory", "tw", "--beta", "1", "--p", "0.99", "--json"])
    assert res["quantile"] == pytest.approx(2.0234, abs=1e-3)
    assert main(["theory", "tw", "--beta", "1", "--s", "0"]) == 0
    assert "F_1(0) = 0.8319" in capsys.readouterr().out


def test_simulate_spiked(capsys, tmp_path):
    rc, res = _json(capsys, ["simulate", "spiked", "--N", "300", "--d", "150", "--theta", "3", "--seed", "2",
                             "--json", "--out", str(tmp_path)])
    assert rc == 0
    assert res["outlier_count"] == 1 and res["complete"]
    # one draw at N = 300: within a few N^-1/2 of the BGN limit
    assert abs(res["measured"]["singular_values"][0] - res["predicted"]["singular_values"][0]) < 3 / 300**0.5
    assert json.loads((tmp_path / "spiked.json").read_text())["seed"] == 2
    rc2, res2 = _json(capsys, ["simulate", "spiked", "--N", "300", "--d", "150", "--theta", "3", "--seed", "2",
                               "--json"])
    assert res2["measured"] == res["measured"]


@pytest.mark.parametrize("argv", [
    ["theory", "mp", "--ratio", "0"],
    ["theory", "mp", "--psi", "1", "--var", "-1"],
    ["theory", "bgn", "--theta", "-1", "--psi", "1"],
    ["theory", "bgn", "--theta", "1", "--ratio", "nan"],
    ["theory", "hermite", "--activation", "nope"],
    ["theory", "tw", "--beta", "1", "--p", "1.5"],
    ["simulate", "spiked", "--N", "0", "--d", "5", "--theta", "1"],
])
def test_bad_values_exit_2(argv, capsys):
    assert main(argv) == 2
    assert "error" in capsys.readouterr().err


def test_argparse_errors_exit_2(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["theory", "tw", "--beta", "3", "--s", "0"])
    assert exc.value.code == 2
    with pytest.raises(SystemExit) as exc:
        main(["theory", "tw", "--beta", "1"])
    assert exc.value.code == 2
    with pytest.raises(SystemExit) as exc:            # a flag the command cannot honour is refused
        main(["theory", "mp", "--seed", "1"])
    assert exc.value.code == 2


def test_ratio_is_a_hidden_alias_of_psi(capsys):
    """``--ratio`` (the issue's acceptance: ``rmtfl theory mp --ratio 0.5``) works but is not advertised."""
    rc, a = _json(capsys, ["theory", "mp", "--ratio", "0.5", "--json"])
    rc, b = _json(capsys, ["theory", "mp", "--psi", "0.5", "--json"])
    assert a == b and a["psi"] == 0.5
    with pytest.raises(SystemExit):
        main(["theory", "mp", "--help"])
    assert "--ratio" not in capsys.readouterr().out
