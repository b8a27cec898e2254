"""CLI of the two-step part: rmtfl theory one-step|two-step|phase-diagram, rmtfl simulate two-step."""
import json

import pytest

from rmtfl.cli._main import main


def _json(capsys, argv):
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_theory_one_step(capsys):
    r = _json(capsys, ["theory", "one-step", "--eta", "3", "--json"])
    assert abs(r["singular_value"] - 2.674841) < 1e-5 and r["threshold"] > 1.3


def test_theory_two_step_alpha_form(capsys):
    r = _json(capsys, ["theory", "two-step", "--alpha1", "0.1", "--alpha2", "0.1", "--c1", "1", "--c2", "1",
                       "--N", "1000", "--json"])
    assert r["mode"] == "analytic" and len(r["outliers"]) >= 1 and r["Lambda"]["count"] == 0


def test_theory_two_step_quadratic(capsys):
    r = _json(capsys, ["theory", "two-step", "--activation", "hermite(0,1,0.5)", "--target",
                       "hermite(0,1,0.7071067811865476)", "--phi", "4", "--eta1", "8", "--eta2", "8",
                       "--N", "1500", "--json"])
    assert len(r["outliers"]) == 2


def test_theory_phase_diagram(capsys):
    r = _json(capsys, ["theory", "phase-diagram", "--alpha1", "0.25", "0.3", "--alpha2", "0.45",
                       "--activation", "tanh", "--json"])
    assert r["Lambda"] == [[1, 2]] and r["learnable"] == [[False, True]]


def test_theory_phase_diagram_at_finite_n(capsys):
    """--N adds the map at that width (reference: rmtfl.theory.finite_n_outlier_map, test_phase.py)."""
    r = _json(capsys, ["theory", "phase-diagram", "--alpha1", "0", "0.3", "--alpha2", "0.3", "--target", "linear",
                       "--N", "400", "--json"])
    assert r["finite_N"]["count"] == [[1, 2]] and r["finite_N"]["activation"] == "hermite(0, 1, 0.5)"
    assert 2.05 < r["finite_N"]["bulk_edge"][0][0] < r["finite_N"]["bulk_edge"][0][1]
    assert r["Lambda"] == [[0, 1]]  # asymptotic: sigma generic here, Lambda = floor(0.3 / 0.2) = 1 at alpha1 = 0.3


def test_simulate_two_step(capsys, tmp_path):
    r = _json(capsys, ["simulate", "two-step", "--N", "120", "--d", "120", "--n", "240", "--eta1", "1.5",
                       "--eta2", "1.5", "--batch", "fresh", "--n2", "240", "--k", "4", "--json",
                       "--out", str(tmp_path)])
    assert r["outlier_count"] >= 1 and (tmp_path / "two_step_spectrum.png").exists()
    assert (tmp_path / "two_step_simulation.json").exists()


@pytest.mark.parametrize("argv", [
    ["theory", "two-step", "--eta1", "1", "--eta2", "1", "--batch", "fresh"],
    ["theory", "two-step", "--alpha1", "0.5", "--eta2", "1", "--N", "100"],
    ["theory", "one-step", "--eta", "1", "--psi", "-1"],
    ["theory", "one-step", "--eta", "1", "--activation", "nope"],
    ["simulate", "two-step", "--N", "50", "--d", "50", "--n", "50", "--eta1", "1", "--eta2", "1",
     "--batch", "fresh"],
])
def test_bad_input_exit_2(argv, capsys):
    assert main(argv) == 2
    assert "error" in capsys.readouterr().err
