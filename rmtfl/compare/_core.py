"""Prediction beside measurement: the comparison record and the report.

A :class:`Comparison` is one row of ``rmtfl verify``: a predicted value (from
:mod:`rmtfl.theory`, never from measured data), a measured value with its
standard error (from :mod:`rmtfl.numerics`), and the tolerance that decides the
verdict.  Tolerances come from the known fluctuation scale (bulk edge
``~N^-2/3``, outliers and overlaps ``~N^-1/2``) plus ``3 x stderr`` over seeds;
each check documents its choice in ``note``.

Examples
--------
>>> row = compare("classical", "MP edge", 2.0, 1.99, 0.004, tolerance=0.02)
>>> row.passed
True
>>> sorted(row.to_dict())[:3]
['measured', 'name', 'note']
"""
from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from .._results import Result

__all__ = ["Comparison", "compare", "compare_bool", "Report", "MeanStderr", "mean_stderr"]


@dataclass(frozen=True)
class Comparison(Result):
    """One prediction-versus-measurement row (schema of the JSON report)."""

    part: str
    name: str
    predicted: float | str
    measured: float | str
    stderr: float
    tolerance: float | str
    passed: bool
    note: str = ""

    def to_dict(self) -> dict:
        d = asdict(self)
        for k in ("predicted", "measured", "stderr", "tolerance"):
            v = d[k]
            if isinstance(v, (float, np.floating)) and not math.isfinite(float(v)):
                d[k] = None  # JSON has no NaN/inf
            elif isinstance(v, np.generic):
                d[k] = v.item()
        d["passed"] = bool(d["passed"])
        return d


def compare(part: str, name: str, predicted, measured, stderr=0.0, *, tolerance, note: str = "") -> Comparison:
    """Pass iff ``|predicted - measured| <= tolerance`` (NaN never passes)."""
    predicted, measured, stderr, tolerance = (float(x) for x in (predicted, measured, stderr, tolerance))
    gap = abs(predicted - measured)
    passed = bool(math.isfinite(gap) and gap <= tolerance)
    return Comparison(part, name, predicted, measured, stderr, tolerance, passed, note)


def compare_bool(part: str, name: str, predicted: str, measured: str, passed: bool, note: str = "") -> Comparison:
    """A qualitative row (an ordering, a dichotomy) whose verdict is a boolean."""
    return Comparison(part, name, predicted, measured, float("nan"), "exact", bool(passed), note)


@dataclass(frozen=True)
class MeanStderr(Result):
    """Mean over seeds and the standard error of that mean; unpacks as ``m, se = mean_stderr(x)``."""

    mean: float
    stderr: float

    def __iter__(self):
        return iter((self.mean, self.stderr))

    def __getitem__(self, i):
        return (self.mean, self.stderr)[i]


def mean_stderr(values) -> MeanStderr:
    """Mean and standard error of the mean (``ddof=1``; 0 for a single value).

    >>> m, se = mean_stderr([1.0, 2.0, 3.0])
    >>> m, round(se, 6)
    (2.0, 0.57735)
    """
    v = np.asarray(values, dtype=float)
    if v.size == 0:
        raise ValueError("values must be non-empty")
    if not np.all(np.isfinite(v)):
        raise ValueError("values must be finite")
    se = float(v.std(ddof=1) / math.sqrt(v.size)) if v.size > 1 else 0.0
    return MeanStderr(float(v.mean()), se)


@dataclass(frozen=True)
class Report(Result):
    """All rows of a verify run plus its resolved settings (``comparisons`` is a tuple of :class:`Comparison`)."""

    comparisons: tuple = ()
    settings: dict = field(default_factory=dict)

    def __post_init__(self):
        object.__setattr__(self, "comparisons", tuple(self.comparisons))

    @property
    def passed(self) -> bool:
        return bool(self.comparisons) and all(c.passed for c in self.comparisons)

    def to_dict(self) -> dict:
        return {"comparisons": [c.to_dict() for c in self.comparisons], "settings": self.settings,
                "passed": self.passed}

    def write_json(self, path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.to_dict(), indent=2))
        return path

    def table(self) -> str:
        """Plain-text table grouped by part (qualitative rows print their claims in full)."""
        w = min(64, max([len(c.name) for c in self.comparisons] + [20]))
        hdr = f"{'name':<{w}} {'predicted':>11} {'measured ± stderr':>23} {'tolerance':>10}  verdict"
        lines = []
        for part in dict.fromkeys(c.part for c in self.comparisons):
            lines += [f"== {part} ==", hdr]
            for c in (c for c in self.comparisons if c.part == part):
                verdict = "PASS" if c.passed else "FAIL"
                name = c.name if len(c.name) <= w else c.name[: w - 1] + "…"
                if isinstance(c.predicted, str) or isinstance(c.measured, str):
                    lines.append(f"{name:<{w}} {'':>11} {'':>23} {'exact':>10}  {verdict}")
                    lines.append(f"{'':<4}predicted: {c.predicted}   measured: {c.measured}")
                    continue
                meas = f"{_fmt(c.measured)} ± {_fmt(c.stderr)}"
                lines.append(f"{name:<{w}} {_fmt(c.predicted):>11} {meas:>23} {_fmt(c.tolerance):>10}  {verdict}")
        n_ok = sum(c.passed for c in self.comparisons)
        lines.append(f"{n_ok}/{len(self.comparisons)} comparisons passed")
        return "\n".join(lines)


def _fmt(v) -> str:
    if isinstance(v, str):
        return v
    v = float(v)
    if not math.isfinite(v):
        return "-"
    return f"{v:.4g}" if abs(v) >= 1e-3 or v == 0 else f"{v:.2e}"
