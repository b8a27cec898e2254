"""Prediction beside measurement: comparison rows, reports, figures and ``rmtfl verify``.

One module per topic behind this flat namespace (``classical``, ``two_step``, ``spiked_kernel``,
``gradient_flow``), each contributing its checks to :func:`run_verify`.
"""
from __future__ import annotations

from ._core import Comparison, MeanStderr, Report, compare, compare_bool, mean_stderr
from ._figures import save_figure, to_jsonable
from ._verify import Check, VerifyContext, run_verify
# --- analyze: a calibrated MP/BBP analysis of a user's matrix (docs/analyze.md)
from ._analyze import analyze, SpectrumOutlier, SpectrumReport
from ._analyze_io import load_matrices

__all__ = ["Comparison", "MeanStderr", "Report", "compare", "compare_bool", "mean_stderr", "save_figure", "to_jsonable",
           "Check", "VerifyContext", "run_verify", "analyze", "SpectrumOutlier", "SpectrumReport", "load_matrices"]
