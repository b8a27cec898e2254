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

    import rmtfl.numerics._spiked_kernel.kernels as kernels
    from rmtfl.numerics import Backend

    class _NumpyProxy:
        __name__ = "numpy_proxy"

        def __getattr__(self, name):
            return getattr(np, name)

    sim = Backend("sim", _NumpyProxy())
    calls = []
    real = kernels.kernel_gram

    def spy(*a, **k):
        calls.append(k.get("backend"))
        return real(*a, **k)

    monkeypatch.setattr(kernels, "kernel_gram", spy)
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
