"""The README's promises: the two set-up commands, the runnable example, and .ci/run."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def _blocks(lang):
    return re.findall(rf"```{lang}\n(.*?)```", README, flags=re.S)


def test_first_shell_block_is_the_two_commands():
    lines = [ln for ln in _blocks("bash")[0].splitlines() if ln.strip()]
    assert lines == ['pip install -e ".[test]" && rmtfl verify', 'pip install -e ".[test]" && pytest']


def test_ci_runs_the_test_command_as_written():
    assert 'pip install -e ".[test]" && pytest' in (ROOT / ".ci" / "run").read_text()


def test_python_example_prints_the_numbers_it_quotes(capsys):
    """The first example ends with a ``# prints: ...`` line; running it must print exactly those numbers."""
    block = _blocks("python")[0]
    quoted = re.search(r"^# prints: ([-\d. ]+)", block, flags=re.M)
    assert quoted, "the README example must quote its output in a '# prints:' line"
    exec(compile(block, "README example", "exec"), {})
    printed = capsys.readouterr().out.split()
    assert printed == quoted.group(1).split()


def test_numbers_quoted_in_the_prose_come_out():
    """Numbers the README states in words, recomputed."""
    import rmtfl.theory as th

    assert "bgn_threshold(psi) = psi^¼" in README
    assert th.bgn_threshold(16.0) == 2.0
    import pathlib

    lessons = sorted(pathlib.Path(__file__).parent.parent.joinpath("docs", "tutorials").glob("[0-9][0-9]_*.py"))
    words = {7: "seven", 8: "eight", 9: "nine", 10: "ten"}
    assert f"{words[len(lessons)]} runnable lessons" in README


def test_gallery_images_exist():
    for path in re.findall(r"\((figures/gallery/[^)]+\.png)\)", README):
        assert (ROOT / path).is_file(), path
