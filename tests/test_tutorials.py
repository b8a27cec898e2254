"""Every lesson of docs/tutorials runs end to end at small sizes, so none can rot."""
import os
import runpy
import sys
from pathlib import Path

import pytest

LESSONS = sorted((Path(__file__).resolve().parents[1] / "docs" / "tutorials").glob("[0-9][0-9]_*.py"))


def test_there_are_six_lessons():
    assert len(LESSONS) >= 6, [p.name for p in LESSONS]


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.stem)
def test_lesson_runs(path, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("RMTFL_TUTORIAL_SMALL", "1")
    monkeypatch.setenv("RMTFL_TUTORIAL_OUT", str(tmp_path))
    monkeypatch.setattr(sys, "path", list(sys.path))
    sys.modules.pop("_lesson", None)
    runpy.run_path(str(path), run_name="__main__")
    out = capsys.readouterr().out
    assert "predicted" in out                       # each lesson shows prediction beside measurement
    assert list(tmp_path.glob("*.png")), "each lesson writes a figure"
    sys.modules.pop("_lesson", None)
