"""The page script of the finite-N acceptance grid, benchmarks/two_step_finite_n_page.sh (docs/benchmarks/
two_step_finite_n.md): with ``ONLY`` it writes the matching sections again and keeps every other one as it stands."""
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "two_step_finite_n_page.sh"
PAGE = ROOT / "docs" / "benchmarks" / "two_step_finite_n.md"

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")


def _run(page, only, cache):
    env = dict(os.environ, PAGE=str(page), ONLY=only)
    return subprocess.run(["bash", str(SCRIPT), str(cache)], env=env, capture_output=True, text=True, timeout=60)


def test_only_keeps_every_section_it_does_not_match(tmp_path):
    page = tmp_path / "page.md"
    shutil.copy(PAGE, page)
    r = _run(page, "no section has this title", tmp_path / "cache")
    assert r.returncode == 0, r.stderr
    assert page.read_bytes() == PAGE.read_bytes()            # nothing simulated, every section copied as it was


def test_only_stops_where_a_section_to_keep_is_missing(tmp_path):
    text = PAGE.read_text(encoding="utf-8")
    last = text.rindex("\n## ")
    page = tmp_path / "page.md"
    page.write_text(text[:last + 1], encoding="utf-8")       # the page without its last section
    r = _run(page, "no section has this title", tmp_path / "cache")
    assert r.returncode == 2 and "is not on" in r.stderr and text[last + 4:].split("\n")[0] in r.stderr
    assert page.read_text(encoding="utf-8") == text[:last + 1]           # left as it was
    assert not Path(str(page) + ".new").exists()
