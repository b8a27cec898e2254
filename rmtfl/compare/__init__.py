"""Prediction beside measurement: comparison rows, reports, figures and ``rmtfl verify``."""
from .core import Comparison, Report, compare, compare_bool, mean_stderr
from .figures import save_figure
from .verify import Check, VerifyContext, run_verify

__all__ = ["Comparison", "Report", "compare", "compare_bool", "mean_stderr", "save_figure",
           "Check", "VerifyContext", "run_verify"]
