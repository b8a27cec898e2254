"""``rmtfl analyze``: the table, --json, --out, the progress bar, and bad input (exit 2, nothing written)."""
import json
import math

import numpy as np
import pytest

from rmtfl.cli import main


def _noise(N, d, seed=0, spike=0.0):
    rng = np.random.default_rng(seed)
    W = rng.standard_normal((N, d)) / math.sqrt(d)
    if spike:
        W[0, 0] += spike
    return W


@pytest.fixture
def files(tmp_path):
    np.save(tmp_path / "w.npy", _noise(120, 80, 0, 3.0))
    np.savez(tmp_path / "model.npz", layer1=_noise(100, 60, 1, 3.0), layer2=_noise(60, 40, 2), bias=np.ones(60))
    return tmp_path


def test_table_json_and_out(files, capsys):
    assert main(["analyze", str(files / "w.npy")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("w ") and "outliers=" in out and "θ=" in out
    assert main(["analyze", str(files / "model.npz"), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert list(data) == ["layer1", "layer2"] and len(data["layer1"]["outliers"]) >= 1
    out_dir = files / "out"
    assert main(["analyze", str(files / "model.npz"), "--out", str(out_dir)]) == 0
    names = sorted(p.name for p in out_dir.iterdir())
    assert names == ["analyze.json", "layer1.png", "layer1.png.json", "layer2.png", "layer2.png.json"]
    rep = json.loads((out_dir / "analyze.json").read_text())
    assert set(rep["reports"]) == {"layer1", "layer2"}


def test_key_and_progress_bar(files, capsys):
    assert main(["analyze", str(files / "model.npz"), "--key", "layer2"]) == 0
    cap = capsys.readouterr()
    assert cap.out.startswith("layer2") and "layer1" not in cap.out and "rmtfl analyze" not in cap.err
    assert main(["analyze", str(files / "model.npz")]) == 0
    assert "rmtfl analyze" in capsys.readouterr().err  # the bar, on stderr, over two matrices


def test_safetensors(files, capsys):
    st = pytest.importorskip("safetensors.numpy")
    st.save_file({"fc.weight": _noise(90, 50, 3, 3.0).astype(np.float32), "fc.bias": np.ones(90, np.float32)},
                 str(files / "m.safetensors"))
    assert main(["analyze", str(files / "m.safetensors")]) == 0
    assert capsys.readouterr().out.startswith("fc.weight")


def _bad_files(tmp_path):
    np.save(tmp_path / "vec.npy", np.ones(30))
    np.save(tmp_path / "empty.npy", np.ones((0, 30)))
    W = _noise(40, 30)
    W[3, 3] = np.nan
    np.save(tmp_path / "nan.npy", W)
    W = _noise(40, 30)
    W[3, 3] = np.inf
    np.save(tmp_path / "inf.npy", W)
    np.save(tmp_path / "cplx.npy", _noise(40, 30) + 1j)
    (tmp_path / "corrupt.npy").write_bytes(b"\x93NUMPY garbage")
    (tmp_path / "corrupt.npz").write_bytes(b"PK\x03\x04 garbage")
    np.savez(tmp_path / "no2d.npz", a=np.ones(3), b=np.ones((2, 2, 2)))
    (tmp_path / "w.txt").write_text("1 2 3")
    return ["vec.npy", "empty.npy", "nan.npy", "inf.npy", "cplx.npy", "corrupt.npy", "corrupt.npz", "no2d.npz",
            "w.txt", "missing.npy"]


def test_bad_input_exits_2_and_writes_nothing(tmp_path, capsys):
    for name in _bad_files(tmp_path):
        out = tmp_path / f"out_{name}"
        rc = main(["analyze", str(tmp_path / name), "--out", str(out)])
        err = capsys.readouterr().err
        assert rc == 2, (name, err)
        assert not out.exists(), name
        assert err.startswith("rmtfl: error:") and "Traceback" not in err and err.count("\n") == 1, (name, err)
    np.savez(tmp_path / "ok.npz", a=_noise(40, 30))
    assert main(["analyze", str(tmp_path / "ok.npz"), "--key", "zz", "--out", str(tmp_path / "o")]) == 2
    assert "key 'zz'" in capsys.readouterr().err and not (tmp_path / "o").exists()
    for flags in (["--alpha", "0"], ["--alpha", "nan"], ["--top-k", "0"], ["--kind", "square"]):
        with pytest.raises(SystemExit) if flags[0] == "--kind" else _no_raise():
            rc = main(["analyze", str(tmp_path / "ok.npz")] + flags)
            assert rc == 2, flags


class _no_raise:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False
