"""Every lesson of docs/tutorials runs end to end at small sizes, so none can rot."""
import os
import runpy
import sys
from pathlib import Path

import pytest

LESSONS = sorted((Path(__file__).resolve().parents[1] / "docs" / "tutorials").glob("[0-9][0-9]_*.py"))


WORDS = {5: "five", 6: "six", 7: "seven", 8: "eight", 9: "nine", 10: "ten"}


def test_the_readmes_count_the_lessons_there_are():
    """README.md and docs/tutorials/README.md say how many lessons there are; it must be the real number."""
    root = LESSONS[0].parents[2]
    word = WORDS[len(LESSONS)]
    assert len(LESSONS) == 9, [p.name for p in LESSONS]
    assert f"{word} runnable lessons" in (root / "README.md").read_text()
    index = (root / "docs" / "tutorials" / "README.md").read_text()
    for p in LESSONS:
        assert p.name in index, f"{p.name} missing from docs/tutorials/README.md"


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
