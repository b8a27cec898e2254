"""The kernel-spectra verify checks are registered, run and pass at the quick level."""
import pytest

from rmtfl.compare import VerifyContext, run_verify
from rmtfl.compare._kernel_spectra import checks
from rmtfl.compare._verify import PARTS


def test_checks_are_listed_and_registered():
    names = [c.name for c in checks(VerifyContext(level="quick"))]
    assert names == ["ck-quantiles", "mu0-outlier", "k1-gram-outlier", "one-step-ck-spike"]
    assert PARTS["kernel-spectra"] == "rmtfl.compare._kernel_spectra"


@pytest.mark.slow
def test_quick_verify_passes():
    report = run_verify(VerifyContext(level="quick", seed=0), ["kernel-spectra"], progress=False)
    failed = [c.name for c in report.comparisons if not c.passed]
    assert not failed, failed
    assert len(report.comparisons) == 5
