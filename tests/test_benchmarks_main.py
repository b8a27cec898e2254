"""``python -m benchmarks`` (benchmarks/__main__.py) runs the modules with ``run(quick)`` and leaves the command-line
scripts to their own arguments."""
import importlib

from benchmarks.__main__ import discover, main


def test_discover_lists_only_modules_with_run():
    names = discover()
    assert "bench_two_step" in names and "bench_finite_n_time" in names
    for script in ("bench_two_step_finite_n", "bench_phase_agreement", "bench_kernel_spectra"):
        assert script not in names
        assert not hasattr(importlib.import_module(f"benchmarks.{script}"), "run")
    for name in names:
        assert callable(importlib.import_module(f"benchmarks.{name}").run)


def test_a_filter_that_matches_nothing_exits_2(capsys):
    assert main(["no_such_benchmark"]) == 2
    assert "no benchmark module matches" in capsys.readouterr().err
