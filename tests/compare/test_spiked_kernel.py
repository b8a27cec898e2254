"""The spiked-kernel verify checks run, write their figures and pass at the quick level."""
import json

import pytest

from rmtfl.compare.spiked_kernel import checks
from rmtfl.compare.verify import VerifyContext, run_verify


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
