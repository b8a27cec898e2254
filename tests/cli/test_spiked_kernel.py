"""CLI of the spiked-kernel part: rmtfl theory kernel KIND ..., rmtfl simulate kernel KIND ..."""
import json

import pytest

from rmtfl.cli import main


def _json(capsys, argv):
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_theory_spectrum_json(capsys):
    out = _json(capsys, ["theory", "kernel", "spectrum", "--activation", "relu", "--d", "10", "--kmax", "2",
                          "--json"])
    assert out["multiplicity"] == [1, 10, 54] and out["activation"] == "relu"
    assert abs(out["mu_sphere"][0] - 0.1673012117) < 1e-9


def test_theory_zonal_linear_spike(capsys, tmp_path):
    z = _json(capsys, ["theory", "kernel", "zonal", "--activation", "relu", "--d", "10", "--b", "5", "--json",
                        "--out", str(tmp_path)])
    assert abs(z["odd_eigenvalue"] - 6 / 40) < 1e-10 and (tmp_path / "kernel_theory_zonal.json").exists()
    # overlaps are squared (docs/conventions.md §1), the signed amplitudes come separately
    assert all(abs(o - a * a) < 1e-15 for o, a in zip(z["overlaps"], z["amplitudes"]))
    assert z["amplitudes"][2] > 0 and abs(z["tan_mix"] - z["amplitudes"][2] / z["amplitudes"][0]) < 1e-12
    assert main(["theory", "kernel", "zonal", "--d", "10", "--b", "5"]) == 0
    assert "squared overlaps cos^2(f,Y_0)" in capsys.readouterr().out
    lim = _json(capsys, ["theory", "kernel", "zonal", "--rho", "1", "--json"])
    assert abs(lim["odd_eigenvalue"] - 0.25) < 1e-9
    ls = _json(capsys, ["theory", "kernel", "linear", "--activation", "relu", "--d", "10", "--B", "0.5", "--json"])
    assert abs(ls["target"] - 0.15) < 1e-12 and ls["exact"]
    sc = _json(capsys, ["theory", "kernel", "spike", "--activation", "relu", "--target", "linear", "--eta", "4", "--n", "1024",
                        "--N", "512", "--d", "256", "--json"])
    assert abs(sc["b"] - 2.0) < 1e-12
    assert main(["theory", "kernel", "spectrum", "--d", "10"]) == 0
    assert "uniform probability measure" in capsys.readouterr().out


def test_simulate_small(capsys, tmp_path):
    sp = _json(capsys, ["simulate", "kernel", "spectrum", "--d", "6", "--n", "500", "--json"])
    assert len(sp["gram_mean"]) == 3
    al = _json(capsys, ["simulate", "kernel", "alignment", "--d", "6", "--n", "300", "--b", "0,4", "--seeds", "2",
                        "--json", "--out", str(tmp_path)])
    assert len(al["rows"]) == 2 and (tmp_path / "kernel_alignment.png").exists()
    assert all(0 <= r["cos2_y2_gram"] <= 1 and 0 <= r["cos2_y0_gram"] <= 1 for r in al["rows"])
    assert al["rows"][0]["cos2_y2_zonal"] < 1e-20 and al["rows"][1]["cos2_y2_zonal"] > 0
    sk = _json(capsys, ["simulate", "kernel", "spike", "--d", "40", "--N", "80", "--n", "120", "--seeds", "2",
                        "--json"])
    assert sk["spike_predicted"] > 1
    ge = _json(capsys, ["simulate", "kernel", "generalisation", "--d", "10", "--N", "20,40", "--seeds", "2",
                        "--json", "--out", str(tmp_path)])
    assert len(ge["nn"]) == 2 and (tmp_path / "kernel_generalisation.png").exists()


def test_alignment_uses_the_activation(capsys):
    """``--activation`` reaches both the Gram matrices and the zonal theory (it was ignored before)."""
    argv = ["simulate", "kernel", "alignment", "--d", "6", "--n", "200", "--b", "4", "--seeds", "1", "--json"]
    relu = _json(capsys, argv)["rows"][0]
    tanh = _json(capsys, argv + ["--activation", "tanh"])["rows"][0]
    assert relu["eig_zonal"] != tanh["eig_zonal"] and relu["eig_gram"] != tanh["eig_gram"]


@pytest.mark.parametrize("argv", [
    ["theory", "kernel", "spectrum", "--d", "1"],
    ["theory", "kernel", "linear", "--B", "-1"],
    ["simulate", "kernel", "generalisation", "--N", "20,x"],
    pytest.param(["simulate", "kernel", "spectrum", "--backend", "cupy"], marks=pytest.mark.skipif(
        __import__("importlib").util.find_spec("cupy") is not None, reason="cupy is installed here")),
])
def test_bad_input_exit_2(argv, capsys):
    assert main(argv) == 2
    assert "error" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [
    ["theory", "kernel", "spike"],                                   # --eta is required
    ["theory", "kernel", "spectrum", "--measure", "sphere"],          # the spectrum is the sphere's
    ["theory", "kernel", "zonal", "--rho", "1", "--d", "10"],         # the d -> inf operator has no d
    ["theory", "kernel", "zonal", "--rho", "1", "--activation", "tanh"],
    ["simulate", "kernel", "spike", "--b", "1,2"],
    ["simulate", "kernel", "spike", "--measure", "sphere"],
    ["theory", "kernel", "zonal", "--seed", "1"],
])
def test_refused_flags_exit_2(argv):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
