"""The two-step verify checks: structure, and the cheap exact checks run end to end."""
from rmtfl.compare._two_step import checks
from rmtfl.compare import VerifyContext


def test_checks_listed():
    names = [c.name for c in checks(VerifyContext(level="quick"))]
    assert len(names) == 7 and all(c.part == "two-step" for c in checks(VerifyContext()))
    assert "quadratic sigma: finite-N bulk edge" in names
    assert "finite-N two steps at alpha = 0.2, 0.3, 0.4" in names


def test_exact_checks_pass():
    ctx = VerifyContext(level="quick")
    for c in checks(ctx):
        if c.name.startswith(("He3", "outlier counts")):
            rows = c.run(ctx)
            assert rows and all(r.passed for r in rows), [r for r in rows if not r.passed]


def test_lambda0_check_quick_passes():
    ctx = VerifyContext(level="quick")
    chk = [c for c in checks(ctx) if c.name.startswith("two steps")][0]
    rows = chk.run(ctx)
    assert len(rows) == 6 and all(r.passed for r in rows)


def test_quadratic_check_quick_uses_finite_bulk():
    ctx = VerifyContext(level="quick")
    chk = [c for c in checks(ctx) if c.name.startswith("quadratic")][0]
    rows = chk.run(ctx)
    assert len(rows) == 4 and all(r.passed for r in rows), [r for r in rows if not r.passed]
    assert "finite-N bulk" in rows[0].note


def test_bulk_edge_check_runs_and_passes_at_quick_level():
    """Deterministic edge vs 3 simulated bulks at N = 400 (measured 2.892 +- 0.095 vs 2.917 predicted)."""
    ctx = VerifyContext(level="quick")
    (check,) = [c for c in checks(ctx) if c.name == "quadratic sigma: finite-N bulk edge"]
    (row,) = check.run(ctx)
    assert row.passed and row.predicted > 2.5  # far above the MP edge 2: the widening is what is tested
