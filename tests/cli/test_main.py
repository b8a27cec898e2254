"""The ``rmtfl`` entry point: ``python -m rmtfl``, lazy imports, exit status, one module for the shared flags."""
import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from rmtfl.cli import build_parser, main

ROOT = Path(__file__).resolve().parents[2]

#: Run the CLI in a fresh interpreter where dask and distributed cannot be imported; report what was imported.
NO_DASK = """
import importlib.abc, json, sys

class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("dask", "distributed"):
            raise ImportError(f"{name} is blocked in this test")
        return None

sys.meta_path.insert(0, Block())
from rmtfl.cli import main
try:
    rc = main(sys.argv[1:])
except SystemExit as exc:
    rc = exc.code
print(json.dumps({"rc": rc, "matplotlib": "matplotlib" in sys.modules, "dask": "dask" in sys.modules}),
      file=sys.stderr)
"""


def _no_dask(*argv, cwd=None):
    p = subprocess.run([sys.executable, "-c", NO_DASK, *argv], capture_output=True, text=True, timeout=300,
                       cwd=cwd)
    return p.stdout, json.loads(p.stderr.strip().splitlines()[-1])


def test_python_dash_m():
    p = subprocess.run([sys.executable, "-m", "rmtfl", "theory", "mp", "--ratio", "0.5", "--json"],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["sv_edges"] == pytest.approx([0.2928932188, 1.7071067812])


@pytest.mark.parametrize("argv", [["--help"], ["theory", "--help"], ["theory", "mp", "--ratio", "0.5"],
                                  ["phase-diagram", "--alpha1", "0.1", "--alpha2", "0.2", "--activation", "gelu"]])
def test_help_and_theory_need_neither_dask_nor_matplotlib(argv):
    out, st = _no_dask(*argv)
    assert st["rc"] == 0 and not st["dask"] and not st["matplotlib"], st
    assert out


def test_serial_sweep_needs_no_dask_and_a_cluster_says_what_is_missing(tmp_path):
    base = ["sweep", "bbp", "--theta", "1", "--N", "20", "--seeds", "1", "--no-progress",
            "--store", str(tmp_path / "s.sqlite")]
    out, st = _no_dask(*base, "--workers", "0")
    assert st["rc"] == 0 and not st["dask"], st
    p = subprocess.run([sys.executable, "-c", NO_DASK, *base, "--workers", "2", "--store", str(tmp_path / "t.sqlite")],
                       capture_output=True, text=True, timeout=300)
    assert json.loads(p.stderr.strip().splitlines()[-1])["rc"] == 2
    assert "needs dask[distributed]" in p.stderr


def test_exit_status_runtime_fault_is_one_line(monkeypatch, capsys):
    import rmtfl.theory as th

    def broken(*a, **k):
        raise RuntimeError("solver blew up\nsecond line")

    monkeypatch.setattr(th, "mp_edges", broken)
    assert main(["theory", "mp"]) == 1
    err = capsys.readouterr().err
    assert err == "rmtfl: RuntimeError: solver blew up second line\n"


@pytest.mark.parametrize("exc, code", [(ValueError("psi must be > 0, got -1"), 2), (TypeError("N must be an int"), 2),
                                       (KeyboardInterrupt(), 130)])
def test_exit_status_bad_arguments(monkeypatch, capsys, exc, code):
    import rmtfl.theory as th

    def broken(*a, **k):
        raise exc

    monkeypatch.setattr(th, "mp_edges", broken)
    assert main(["theory", "mp"]) == code
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_argparse_errors_exit_2():
    for argv in (["nope"], ["theory"], ["theory", "mp", "--psi", "x"], ["theory", "kernel"], ["simulate", "kernel"]):
        with pytest.raises(SystemExit) as e:
            main(argv)
        assert e.value.code == 2


def _module_tree():
    pkg = ROOT / "rmtfl" / "cli"
    return {p.stem: ast.parse(p.read_text()) for p in pkg.glob("*.py")}


def test_shared_flags_come_from_one_parent_and_emit_from_common():
    """``--json --out --seed --backend`` are defined once (``_common.options``); no command module imports ``_main``."""
    for name, tree in _module_tree().items():
        imports = [n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
        assert not any((n.module or "").endswith("_main") for n in imports if name != "__init__"), name
        if name == "_common":
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "add_argument":
                flags = [a.value for a in node.args if isinstance(a, ast.Constant)]
                assert not set(flags) & {"--json", "--out", "--seed", "--backend"}, (name, flags)


def test_shared_flags_have_the_same_defaults_everywhere():
    from rmtfl import _defaults

    def leaves(p):
        import argparse

        subs = [a for a in p._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs:
            yield p
        for a in subs:
            for child in a.choices.values():
                yield from leaves(child)

    seen = {"--seed": set(), "--backend": set(), "--activation": set(), "--target": set()}
    for leaf in leaves(build_parser()):
        if leaf.prog.startswith("rmtfl flow"):
            continue          # flows: the example's settings and w0
        for action in leaf._actions:
            for flag in seen:
                if leaf.prog == "rmtfl phase-diagram" and flag in ("--seed", "--backend"):
                    continue  # only with --empirical (then 0 and numpy)
                if leaf.prog == "rmtfl theory kernel zonal" and flag == "--activation":
                    if flag in action.option_strings:  # resolved in the command: the default, or relu with --rho
                        assert action.default is None
                    continue
                if flag in action.option_strings:
                    seen[flag].add(str(action.default[0] if isinstance(action.default, list) else action.default))
    assert seen == {"--seed": {str(_defaults.SEED)}, "--backend": {_defaults.BACKEND},
                    "--activation": {_defaults.ACTIVATION}, "--target": {_defaults.TARGET}}


def test_a_call_that_does_not_match_the_library_is_a_fault_not_bad_input(monkeypatch, capsys):
    """A ``TypeError`` raised in the CLI's own frame (a signature mismatch) exits 1, not 2."""
    import rmtfl.theory as th

    monkeypatch.setattr(th, "mp_edges", lambda psi: (0.0, 1.0))        # no ``var`` keyword
    assert main(["theory", "mp"]) == 1
    assert capsys.readouterr().err.startswith("rmtfl: internal error: TypeError:")
