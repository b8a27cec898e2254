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


def test_python_example_runs(capsys):
    exec(compile(_blocks("python")[0], "README example", "exec"), {})
    assert capsys.readouterr().out.strip()


def test_gallery_images_exist():
    for path in re.findall(r"\((figures/gallery/[^)]+\.png)\)", README):
        assert (ROOT / path).is_file(), path
