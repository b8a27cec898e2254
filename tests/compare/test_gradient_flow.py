"""The gradient-flow verify checks run and pass at the quick level."""
from rmtfl.compare._gradient_flow import checks
from rmtfl.compare import VerifyContext


def test_quick_checks_pass(tmp_path):
    ctx = VerifyContext(level="quick", out=tmp_path)
    rows = [r for c in checks(ctx) for r in c.run(ctx)]
    assert rows and all(r.part == "gradient-flow" for r in rows)
    failed = [(r.name, r.predicted, r.measured) for r in rows if not r.passed]
    assert not failed, failed
    assert any("relu" in r.name and "OUTSIDE the theory" in r.note for r in rows)
    assert (tmp_path / "figures" / "gradient_flow_l3.png").exists()
