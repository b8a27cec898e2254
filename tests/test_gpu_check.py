"""benchmarks/gpu_check.py: its numpy dry run end to end, and a clean refusal without a GPU."""
import json

import pytest

from benchmarks import gpu_check


def test_dry_run_numpy_end_to_end(tmp_path, capsys):
    rc = gpu_check.main(["--dry-run-numpy", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert rc == 0, out
    details = json.loads((tmp_path / "gpu_check.json").read_text())
    assert details["backend"] == "numpy"
    names = [r["name"] for sec in details["sections"].values() for r in sec["rows"]]
    assert any(n.startswith("verify two-step") for n in names)
    assert any(n.startswith("two-step full spectrum") for n in names)
    assert any("float32" in n for n in names)
    last = out.strip().splitlines()
    assert last[-1].startswith("gpu_check (numpy):") and "ok" in last[0]  # the table is printed last


def test_without_cupy_fails_cleanly(tmp_path, capsys):
    try:
        import cupy  # noqa: F401
        pytest.skip("cupy is installed here")
    except ImportError:
        pass
    rc = gpu_check.main(["--no-install", "--out", str(tmp_path / "o")])
    lines = capsys.readouterr().out.strip().splitlines()
    assert rc == gpu_check.EXIT_NO_GPU and len(lines) == 1 and lines[0].startswith("gpu_check: no GPU run:")
    assert not (tmp_path / "o").exists()
