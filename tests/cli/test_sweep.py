"""``rmtfl sweep`` and ``rmtfl phase-diagram`` end to end (in-process, real store, real figures)."""
import dataclasses
import json

import pytest

from rmtfl.cli import main


def _json(capsys, argv):
    rc = main(argv)
    return rc, json.loads(capsys.readouterr().out)


def test_sweep_two_step_json_and_resume(tmp_path, capsys):
    store = str(tmp_path / "cli.sqlite")
    argv = ["sweep", "two-step", "--alpha1", "0:0.4:2", "--alpha2", "0.3:0.45:2", "--N", "80", "--seeds", "2",
            "--store", store, "--workers", "0", "--json", "--no-progress"]
    rc, out = _json(capsys, argv)
    assert rc == 0
    assert (out["tasks"], out["computed"], out["reused"], out["failed"]) == (8, 8, 0, 0)
    assert [(r["params"]["alpha1"], r["params"]["alpha2"]) for r in out["results"]] == \
        [(0.0, 0.3), (0.0, 0.45), (0.4, 0.3), (0.4, 0.45)]           # grid order, alpha1 slowest
    assert all(r["n"] == 2 and "outliers" in r["mean"] for r in out["results"])
    from rmtfl import _defaults

    assert out["results"][0]["params"]["activation"] == _defaults.ACTIVATION   # the defaults of rmtfl._defaults
    rc, again = _json(capsys, argv + ["--seeds", "3"])                 # the last --seeds wins
    assert (again["computed"], again["reused"]) == (4, 8)


def test_sweep_text_output_and_failures(tmp_path, capsys, monkeypatch):
    """A task that raises at run time is stored as an error; the sweep goes on and exits 1."""
    from rmtfl.sweep import EXPERIMENTS, _experiments

    def flaky(params, rng, backend="numpy"):
        if params["theta"] > 1:
            raise RuntimeError("task fault")
        return _experiments.bbp_task(params, rng, backend)

    monkeypatch.setitem(EXPERIMENTS, "bbp", dataclasses.replace(EXPERIMENTS["bbp"], fn=flaky))
    rc = main(["sweep", "bbp", "--theta=0,2", "--N", "40", "--seeds", "1", "--store",
               str(tmp_path / "t.sqlite"), "--workers", "0", "--no-progress"])
    text = capsys.readouterr().out
    assert rc == 1 and "failed 1" in text and "task fault" in text


@pytest.mark.parametrize("extra, message", [
    (["--alpha1", "0:0.5:3"], "alpha1 must lie in [0.0, 0.5), got 0.5"),
    (["--N", "0"], "N must be an integer"),
    (["--activation", "nope"], "activation"),
    (["--target", "nope"], "nope"),
    (["--batch", "twice"], "batch"),
    (["--alpha1", "0:0.4"], "LO:HI:COUNT"),
    (["--seeds", "0"], "--seeds"),
])
def test_the_whole_grid_is_checked_before_any_task(tmp_path, capsys, extra, message):
    store = tmp_path / "x.sqlite"
    assert main(["sweep", "two-step", "--store", str(store), "--workers", "0", "--no-progress"] + extra) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
    assert not store.exists()                                          # nothing ran, nothing was written


def test_bad_arguments_exit_2(tmp_path, capsys):
    bad = tmp_path / "foreign.sqlite"
    bad.write_text("not a database")
    assert main(["sweep", "bbp", "--store", str(bad), "--workers", "0", "--no-progress"]) == 2
    assert "not an rmtfl sweep store" in capsys.readouterr().err
    assert bad.read_text() == "not a database"
    for argv in (["sweep", "two-step", "--workers", "1", "--scheduler", "tcp://127.0.0.1:1"],
                 ["sweep", "two-step", "--root-seed", "1"],                # now --seed
                 ["sweep", "bbp", "--out", "x"]):
        with pytest.raises(SystemExit) as exc:
            main(argv)
        assert exc.value.code == 2


def test_phase_diagram_theory_finite_n_and_empirical(tmp_path, capsys):
    rc, out = _json(capsys, ["phase-diagram", "--alpha1", "0.1,0.4", "--alpha2", "0.45", "--activation", "gelu",
                             "--json"])
    assert rc == 0 and out["effective"] == [[1, 4]] and out["Lambda"] == [[1, 4]]  # floor(0.45/0.4), floor(0.45/0.1)
    assert "finite_N" not in out and "empirical" not in out and "figure" not in out
    rc, out = _json(capsys, ["phase-diagram", "--alpha1", "0.25,0.3", "--alpha2", "0.45", "--activation", "tanh",
                             "--target", "he3n", "--json"])
    assert out["Lambda"] == [[1, 2]] and out["learnable"] == [[False, True]]
    # --N: the finite-N map at that width (reference: rmtfl.theory.finite_n_outlier_map)
    rc, out = _json(capsys, ["phase-diagram", "--alpha1", "0,0.3", "--alpha2", "0.3", "--target", "linear",
                             "--activation", "hermite(0, 1, 0.5)", "--N", "400", "--json"])
    import rmtfl.theory as th

    ref = th.finite_n_outlier_map([0, 0.3], [0.3], activation="hermite(0, 1, 0.5)", target="linear", psi=1.0,
                                  phi=2.0, N=400)
    assert out["finite_N"]["count"] == ref.count.tolist() and out["finite_N"]["N"] == 400
    assert 2.05 < out["finite_N"]["edge"][0][0] < out["finite_N"]["edge"][0][1]
    assert out["Lambda"] == [[0, 1]]
    # an even sigma: the finite-N prediction marks itself unreliable, and the map says so cell by cell
    rc = main(["phase-diagram", "--alpha1", "0.3", "--alpha2", "0.3", "--activation", "square", "--N", "300"])
    text = capsys.readouterr().out
    assert rc == 0 and ")?" in text and "?: the prediction marks itself unreliable there" in text
    out_dir = tmp_path / "fig"
    rc, out = _json(capsys, ["phase-diagram", "--empirical", "--out", str(out_dir), "--alpha1", "0.1,0.4",
                             "--alpha2", "0.45", "--activation", "gelu", "--N", "80", "--seeds", "1",
                             "--workers", "0", "--store", str(tmp_path / "pd.sqlite"), "--json", "--no-progress"])
    assert rc == 0 and len(out["empirical"]["mean"][0]) == 2 and 0.0 <= out["empirical"]["agreement"] <= 1.0
    assert out["finite_N"]["N"] == 80                                   # the finite-N map for any smooth sigma
    png = out_dir / "phase_diagram.png"
    assert png.stat().st_size > 1000 and (out_dir / "phase_diagram.png.json").exists()
    assert json.loads((out_dir / "phase_diagram.json").read_text())["empirical"]["count"] == "separated"


@pytest.mark.parametrize("argv, message", [
    (["phase-diagram", "--c1", "2"], "--c1 applies only with --N or --empirical"),
    (["phase-diagram", "--psi", "2"], "--psi applies only with --N or --empirical"),
    (["phase-diagram", "--seeds", "2"], "--seeds applies only with --empirical"),
    (["phase-diagram", "--store", "x.sqlite"], "--store applies only with --empirical"),
    (["phase-diagram", "--seed", "1"], "--seed applies only with --empirical"),
    (["phase-diagram", "--backend", "numpy"], "--backend applies only with --empirical"),
    (["phase-diagram", "--empirical"], "--empirical needs the width --N"),
    (["phase-diagram", "--N", "100", "--batch", "fresh"], "finite-N map is that of a reused batch"),
])
def test_phase_diagram_refuses_flags_that_change_nothing(argv, message, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2 and message in capsys.readouterr().err


def test_phase_diagram_bad_grid_exit_2(tmp_path, capsys):
    assert main(["phase-diagram", "--alpha1", "0.5"]) == 2
    assert "alpha1 must lie in [0.0, 0.5)" in capsys.readouterr().err
    store = tmp_path / "pd.sqlite"
    assert main(["phase-diagram", "--empirical", "--N", "0", "--alpha1", "0.1", "--alpha2", "0.1", "--workers", "0",
                 "--store", str(store), "--activation", "gelu"]) == 2
    assert "N must be an integer" in capsys.readouterr().err and not store.exists()
    with pytest.raises(SystemExit):
        main(["theory", "phase-diagram"])                              # one phase-diagram command only
