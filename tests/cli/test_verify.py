"""``rmtfl verify``: all four parts, JSON schema, figures with sidecars, exit codes."""
import json

import pytest

from rmtfl.cli._main import main
from rmtfl.numerics import get_backend

PARTS = {"classical", "two-step", "spiked-kernel", "gradient-flow", "kernel-spectra"}


def test_quick_verify_covers_all_parts(tmp_path, capsys):
    rc = main(["verify", "--quick", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    report = json.loads((tmp_path / "report.json").read_text())
    assert rc == 0, out
    rows = report["comparisons"]
    assert {r["part"] for r in rows} == PARTS
    for r in rows:
        assert {"part", "name", "predicted", "measured", "stderr", "passed"} <= set(r)
    assert all(r["passed"] for r in rows)
    figs = list((tmp_path / "figures").glob("*.png"))
    assert figs and all(f.with_suffix(".png.json").exists() for f in figs)
    for part in PARTS:
        assert f"== {part} ==" in out


def test_bad_arguments_exit_2(tmp_path):
    with pytest.raises(SystemExit) as e:
        main(["verify", "--quick", "--full"])
    assert e.value.code == 2
    assert main(["verify", "--quick", "--parts", "nonsense", "--out", str(tmp_path)]) == 2


def test_cupy_backend_fails_cleanly_without_gpu(tmp_path, capsys):
    try:
        get_backend("cupy")
        pytest.skip("a GPU is available here")
    except ValueError:
        pass
    assert main(["verify", "--quick", "--backend", "cupy", "--out", str(tmp_path)]) == 2
    assert "cupy" in capsys.readouterr().err
