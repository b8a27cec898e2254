"""The spiked-kernel verify checks run, write their figures and pass at the quick level."""
import json

import pytest

from rmtfl.compare._spiked_kernel import checks
from rmtfl.compare import VerifyContext, run_verify


def test_checks_are_listed():
    names = [c.name for c in checks(VerifyContext(level="quick"))]
    assert names == ["degree-spectrum", "linear-sector", "y2-alignment", "one-step-spike", "test-error-ordering"]


@pytest.mark.slow
def test_quick_verify_passes_and_writes_figures(tmp_path):
    ctx = VerifyContext(level="quick", seed=0, out=tmp_path)
    report = run_verify(ctx, ["spiked-kernel"], progress=False)
    failed = [c.name for c in report.comparisons if not c.passed]
    assert not failed, failed
    assert len(report.comparisons) >= 10
    for name in ("kernel_spectrum", "y2_alignment", "generalisation"):
        png = tmp_path / "figures" / f"{name}.png"
        assert png.exists()
        assert json.loads((tmp_path / "figures" / f"{name}.png.json").read_text())["figure"] == png.name


@pytest.mark.slow
def test_checks_thread_the_backend_through(monkeypatch):
    # with a backend whose array namespace is numpy under another name, every check takes the device code
    # paths (GEMM + elementwise map in xp, dense eigh); the rows must match the numpy run to rounding
    import numpy as np

    import rmtfl.numerics._spiked_kernel.gram_experiments as gram_experiments
    from rmtfl.numerics import Backend

    class _NumpyProxy:
        __name__ = "numpy_proxy"

        def __getattr__(self, name):
            return getattr(np, name)

    sim = Backend("sim", _NumpyProxy())
    calls = []
    real = gram_experiments.kernel_gram

    def spy(*a, **k):
        calls.append(k.get("backend"))
        return real(*a, **k)

    monkeypatch.setattr(gram_experiments, "kernel_gram", spy)
    ref = {c.name: c.run(VerifyContext(level="quick")) for c in checks(VerifyContext(level="quick"))
           if c.name in ("linear-sector", "y2-alignment")}
    calls.clear()
    ctx = VerifyContext(level="quick", backend=sim)
    for c in checks(ctx):
        if c.name not in ref:
            continue
        rows = c.run(ctx)
        assert all(r.passed for r in rows)
        for r, r0 in zip(rows, ref[c.name]):
            assert r.measured == pytest.approx(r0.measured, rel=1e-8, abs=1e-12)
    assert calls and all(b is sim for b in calls)


def test_cli_alignment_runs_the_requested_activation(capsys):
    # regression (issue): `rmtfl simulate kernel alignment --activation tanh` silently ran relu because the
    # CLI never passed the activation to gram_alignment. Same seed: tanh and relu must differ, and the CLI
    # must report what rmtfl.numerics.gram_alignment gives for that activation.
    import numpy as np

    from rmtfl.cli import main
    from rmtfl.compare import mean_stderr
    from rmtfl.numerics import gram_alignment

    def run(act):
        argv = ["simulate", "kernel", "alignment", "--activation", act, "--d", "6", "--n", "200", "--b", "5",
                "--seeds", "2", "--seed", "3", "--json"]
        assert main(argv) == 0
        return json.loads(capsys.readouterr().out)

    relu, tanh = run("relu"), run("tanh")
    assert relu["rows"][0]["eig_gram"] != pytest.approx(tanh["rows"][0]["eig_gram"], rel=1e-3)
    assert relu["rows"][0]["cos2_y2_gram"] != pytest.approx(tanh["rows"][0]["cos2_y2_gram"], rel=1e-3)
    for act, out in (("relu", relu), ("tanh", tanh)):
        runs = [gram_alignment(act, d=6, n=200, b=5.0, measure="sphere", rng=g)
                for g in np.random.default_rng(3).spawn(2)]
        assert out["rows"][0]["eig_gram"] == pytest.approx(mean_stderr([r.eigenvalue for r in runs])[0], rel=1e-12)
        assert out["rows"][0]["cos2_y2_gram"] == pytest.approx(mean_stderr([r.cos2_y2 for r in runs])[0], rel=1e-9)
