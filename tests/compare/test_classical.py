"""The classical verify checks run, pass at the quick level, and write their figures."""
import json

from rmtfl.compare._classical import checks
from rmtfl.compare import VerifyContext, run_verify


def test_quick_verify_passes_and_writes_figures(tmp_path):
    ctx = VerifyContext(level="quick", seed=0, out=tmp_path)
    names = [c.name for c in checks(ctx)]
    assert names == ["MP law and top edge", "BGN outliers"]
    report = run_verify(ctx, ["classical"], progress=False)
    assert report.comparisons and report.passed, report.table()
    assert all(c.part == "classical" and c.note for c in report.comparisons)
    for name in ("mp_histogram", "bbp"):
        png = tmp_path / "figures" / f"{name}.png"
        assert png.exists()
        assert json.loads((tmp_path / "figures" / f"{name}.png.json").read_text())["params"]["level"] == "quick"


def test_checks_are_reproducible():
    ctx = VerifyContext(level="quick", seed=3)
    a = run_verify(ctx, ["classical"], progress=False)
    b = run_verify(ctx, ["classical"], progress=False)
    assert [r.measured for r in a.comparisons] == [r.measured for r in b.comparisons]
