"""No traceback on any input (issue 14): bounds, memory, --out, sweep refusals, store faults, and a fuzz run.

Every refusal is exit status 2 with one line naming the flag; every runtime fault (a read-only
store, a full disk, a damaged store page) exit status 1 with one line naming the file and the
reason; a refused run leaves every file as it was (bytes and mtime).
"""
from __future__ import annotations

import hashlib
import os
import signal
import sqlite3
from contextlib import contextmanager
from pathlib import Path

import pytest

from rmtfl.cli import build_parser, main
from rmtfl.sweep import _store
from rmtfl.sweep._store import ResultStore, StoreError, TaskResult


def _run(argv, capsys):
    """``main(argv)`` -> (exit status, stdout, stderr); argparse's SystemExit is the status too."""
    try:
        rc = main(list(argv))
    except SystemExit as exc:
        rc = exc.code
    out, err = capsys.readouterr()
    return rc, out, err


def _one_line(err):
    lines = err.strip().splitlines()
    return len(lines) == 1 and "Traceback" not in err


def _fingerprint(path: Path):
    st = os.stat(path)
    return hashlib.sha256(path.read_bytes()).hexdigest(), st.st_size, st.st_mtime_ns


def _tree(folder: Path):
    return {p.name: _fingerprint(p) for p in sorted(folder.iterdir()) if p.is_file()}


# ------------------------------------------------------------------------ bounds and memory (exit 2)
@pytest.mark.parametrize("argv, flag", [
    (["theory", "mp", "--kmax", "100000000"], "--kmax must be an integer in [0, 100]"),
    (["theory", "hermite", "--activation", "tanh", "--kmax", "100000000"], "--kmax"),
    (["theory", "hermite", "--activation", "tanh", "--dps", "-5"], "--dps must be an integer in [5, 1000]"),
    (["theory", "hermite", "--activation", "tanh", "--dps", "100000"], "--dps"),
    (["theory", "kernel", "spectrum", "--kmax", "1000000"], "--kmax"),
    (["theory", "tw", "--beta", "1", "--s", "nan"], "--s must be a finite number"),
    (["theory", "mp", "--psi", "inf"], "--psi must be a finite number"),
    (["simulate", "spiked", "--N", "10000000000", "--d", "30", "--theta", "2"], "--N is too large"),
    (["simulate", "spiked", "--N", "300000", "--d", "300000", "--theta", "2"], "GiB of memory"),
    (["simulate", "two-step", "--N", "1000000", "--d", "1000000", "--n", "2000000", "--eta1", "1", "--eta2", "1"],
     "is too large"),
    (["simulate", "kernel", "spectrum", "--n", "100000000"], "--n is too large"),
    (["simulate", "kernel", "alignment", "--n", "100000000"], "--n is too large"),
    (["simulate", "kernel", "spike", "--N", "100000000000", "--d", "10", "--n", "20"], "--N is too large"),
    (["simulate", "kernel", "generalisation", "--N", "10,100000000000", "--d", "10"], "--N is too large"),
    (["simulate", "kernel", "alignment", "--seeds", "1000000000"], "--seeds must be an integer"),
    (["flow", "kkt", "--example", "relu", "--restarts", "1000000000"], "--restarts"),
    (["flow", "simulate", "--example", "relu", "--points", "1000000000"], "--points"),
])
def test_huge_and_non_finite_values_are_refused_with_the_bound(argv, flag, capsys):
    rc, out, err = _run(argv, capsys)
    assert rc == 2 and _one_line(err) and flag in err, err
    assert "available" in err or "must be" in err


def test_every_numeric_flag_has_a_range():
    """Every int flag has a finite range (rmtfl.cli._common.INT_BOUNDS), every float flag must be finite."""
    from rmtfl.cli._common import Int, Real
    from rmtfl.cli._main import _leaves

    for leaf in _leaves(build_parser()):
        for a in leaf._actions:
            if not a.option_strings or a.choices is not None:
                continue
            assert a.type not in (int, float), (leaf.prog, a.option_strings)
            if isinstance(a.type, Int):
                assert a.type.hi is not None and a.type.lo is not None, (leaf.prog, a.option_strings)
            assert a.type is None or isinstance(a.type, (Int, Real)) or callable(a.type)


def test_check_memory_names_bytes_needed_and_available(monkeypatch):
    from rmtfl import _validate

    assert _validate.available_memory() > 0
    monkeypatch.setattr(_validate, "available_memory", lambda: 2**30)
    with pytest.raises(ValueError, match=r"N is too large: it needs about 8.0 GiB of memory for x, more than the "
                                         r"1.0 GiB available"):
        _validate.check_memory("N", 8 * 2**30, "x")
    _validate.check_memory("N", 2**29)
    monkeypatch.setattr(_validate, "available_memory", lambda: None)
    _validate.check_memory("N", 10**30)  # unknown: nothing refused


@pytest.mark.parametrize("kind", ["file", "inside_file"])
def test_out_naming_an_existing_file_is_refused_and_untouched(tmp_path, capsys, kind):
    f = tmp_path / "existing"
    f.write_text("keep me")
    before = _fingerprint(f)
    out = f if kind == "file" else f / "sub"
    for argv in (["figures", "--out", str(out), "--quick"],
                 ["simulate", "spiked", "--N", "20", "--d", "10", "--theta", "2", "--out", str(out)],
                 ["phase-diagram", "--alpha1", "0.1", "--alpha2", "0.1", "--out", str(out)]):
        rc, _, err = _run(argv, capsys)
        assert rc == 2 and _one_line(err) and "--out" in err and "expected a folder" in err, err
    assert _fingerprint(f) == before


# ------------------------------------------------------------------------ sweeps refused before any task
@pytest.mark.parametrize("argv, message", [
    (["sweep", "two-step", "--alpha1", "0:0.5:3"], "alpha1 must lie in [0.0, 0.5)"),
    (["sweep", "bbp", "--N", "0"], "--N must be an integer"),
    (["sweep", "two-step", "--activation", "nope"], "unknown activation 'nope'"),
    (["sweep", "kernel", "--activation", "nope"], "nope"),
    (["sweep", "one-step", "--eta", "nan"], "eta"),
    (["sweep", "bbp", "--theta", "0:3:100000000"], "COUNT in LO:HI:COUNT must be at most"),
    (["sweep", "two-step", "--alpha1", "0:0.4:5000", "--alpha2", "0:0.4:5000"], "more than 1000000"),
    (["sweep", "bbp", "--theta", "0:3:1000", "--seeds", "5000"], "tasks"),
    (["sweep", "bbp", "--N", "10000000"], "--N is too large"),
    (["sweep", "kernel", "--n", "10000000"], "--n is too large"),
    (["phase-diagram", "--empirical", "--N", "10000000"], "--N is too large"),
    (["phase-diagram", "--alpha1", "0:0.4:100000"], "COUNT"),
])
@pytest.mark.parametrize("existing", [False, True])
def test_bad_sweeps_exit_2_before_any_task_and_write_nothing(tmp_path, capsys, argv, message, existing):
    store = tmp_path / "s.sqlite"
    if existing:  # a store holding earlier results: not touched by a refused run
        assert main(["sweep", "bbp", "--theta", "1", "--N", "20", "--seeds", "1", "--workers", "0", "--no-progress",
                     "--store", str(store)]) == 0
        capsys.readouterr()
    before = _tree(tmp_path)
    extra = ["--store", str(store), "--workers", "0", "--no-progress"] if "--alpha1" not in argv or \
        argv[0] == "sweep" or "--empirical" in argv else []
    rc, out, err = _run(argv + extra, capsys)
    assert rc == 2 and _one_line(err) and message in err, err
    assert _tree(tmp_path) == before                       # nothing created, nothing changed


# ------------------------------------------------------------------------ store faults (exit 1)
class _Faulty:
    """A sqlite3 connection whose statements matching ``when`` raise ``exc`` (a full disk, a read-only file)."""

    def __init__(self, con, when, exc):
        self._con, self._when, self._exc = con, when, exc

    def execute(self, sql, *args):
        if self._when(sql):
            raise self._exc
        return self._con.execute(sql, *args)

    def __getattr__(self, name):
        return getattr(self._con, name)


@contextmanager
def _faulty_sqlite(monkeypatch, when, exc):
    real = _store._connect

    def connect(*a, **k):
        con = real(*a, **k)
        return con if "mode=ro" in str(a[0]) else _Faulty(con, when, exc)

    monkeypatch.setattr(_store, "_connect", connect)
    yield
    monkeypatch.setattr(_store, "_connect", real)


SWEEP = ["sweep", "bbp", "--theta", "0.5,1,2", "--N", "20", "--seeds", "2", "--workers", "0", "--no-progress"]
DISK_FULL = sqlite3.OperationalError("database or disk is full")
READ_ONLY = sqlite3.OperationalError("attempt to write a readonly database")


def _stored(path):
    with ResultStore(path) as st:
        return st.count()


def test_disk_full_mid_sweep_is_one_line_and_keeps_the_finished_rows(tmp_path, capsys, monkeypatch):
    store = tmp_path / "s.sqlite"
    writes = []

    def when(sql):  # the third result finds the disk full
        if sql.startswith("INSERT INTO results"):
            writes.append(sql)
            return len(writes) >= 3
        return False

    with _faulty_sqlite(monkeypatch, when, DISK_FULL):
        rc, out, err = _run(SWEEP + ["--store", str(store)], capsys)
    assert rc == 1 and _one_line(err), err
    assert str(store) in err and "database or disk is full" in err and "not an rmtfl" not in err
    assert "rerun" in err
    assert _stored(store) == 2                                   # the two finished results are kept
    rc, out, err = _run(SWEEP + ["--store", str(store)], capsys)  # space freed: the rerun resumes
    assert rc == 0 and "computed 4, reused 2" in out


@pytest.mark.parametrize("exc, words", [(DISK_FULL, "database or disk is full"),
                                        (READ_ONLY, "attempt to write a readonly database")])
def test_store_that_cannot_be_created_leaves_no_file(tmp_path, capsys, monkeypatch, exc, words):
    store = tmp_path / "new" / "deeper" / "s.sqlite"
    with _faulty_sqlite(monkeypatch, lambda sql: sql.startswith("COMMIT") or sql.startswith("PRAGMA journal"), exc):
        rc, out, err = _run(SWEEP + ["--store", str(store)], capsys)
    assert rc == 1 and _one_line(err) and str(store) in err and words in err, err
    assert "cannot create it" in err and "not an rmtfl" not in err
    assert list(tmp_path.iterdir()) == []                       # not the file, not its folders


@pytest.mark.parametrize("exc, words", [(DISK_FULL, "database or disk is full"),
                                        (READ_ONLY, "attempt to write a readonly database")])
def test_existing_store_that_cannot_be_written_is_left_unchanged(tmp_path, capsys, monkeypatch, exc, words):
    store = tmp_path / "s.sqlite"
    assert main(SWEEP[:3] + ["1"] + SWEEP[4:] + ["--store", str(store)]) == 0
    capsys.readouterr()
    before = _tree(tmp_path)
    with _faulty_sqlite(monkeypatch, lambda sql: sql.startswith("BEGIN IMMEDIATE"), exc):
        rc, out, err = _run(SWEEP + ["--store", str(store)], capsys)
    assert rc == 1 and _one_line(err) and str(store) in err and words in err, err
    assert "cannot open it for writing" in err and "not an rmtfl" not in err
    assert _tree(tmp_path) == before


def _damaged_store(path: Path, rows: int = 1500) -> None:
    with ResultStore(path) as st:
        for i in range(rows):
            st.record(TaskResult(f"k{i}", "demo", "1", {"i": i}, 0, 0, "ok", {"v": float(i)}))
    con = sqlite3.connect(path)
    con.execute("PRAGMA journal_mode = DELETE")  # fold the WAL into the main file
    con.close()
    data = bytearray(path.read_bytes())
    page = 4096
    middle = (len(data) // 2) // page * page
    data[middle + 100:middle + 900] = bytes((37 * i + 11) % 256 for i in range(800))  # garbage in a results page
    path.write_bytes(bytes(data))


def test_damaged_results_page_is_found_on_open_and_left_unchanged(tmp_path, capsys):
    store = tmp_path / "s.sqlite"
    _damaged_store(store)
    before = _tree(tmp_path)
    with pytest.raises(StoreError, match="is damaged"):
        ResultStore(store)
    rc, out, err = _run(SWEEP + ["--store", str(store)], capsys)
    assert rc == 1 and _one_line(err), err
    assert str(store) in err and "is damaged" in err and "not an rmtfl" not in err
    assert _tree(tmp_path) == before


def test_debug_env_shows_the_traceback(tmp_path, monkeypatch):
    store = tmp_path / "s.sqlite"
    _damaged_store(store, rows=600)
    monkeypatch.setenv("RMTFL_DEBUG", "1")
    with pytest.raises(StoreError):
        main(SWEEP + ["--store", str(store)])


# ------------------------------------------------------------------------ fuzz: random bad values
#: Commands of the fuzz run, with small valid base arguments (figures and verify run long; tested above).
BASES = {
    "theory mp": [], "theory bgn": ["--theta", "2"], "theory hermite": ["--activation", "tanh"],
    "theory tw": ["--beta", "2", "--s", "-1"], "theory one-step": ["--eta", "1"],
    "theory two-step": ["--eta1", "1", "--eta2", "1"], "theory kernel spectrum": [],
    "theory kernel zonal": ["--b", "1"], "theory kernel linear": [], "theory kernel spike": ["--eta", "1"],
    "simulate spiked": ["--N", "30", "--d", "20", "--theta", "2"],
    "simulate two-step": ["--N", "30", "--d", "20", "--n", "40", "--eta1", "1", "--eta2", "1"],
    "simulate kernel spectrum": ["--d", "5", "--n", "60"],
    "simulate kernel alignment": ["--d", "5", "--n", "60", "--seeds", "1", "--b", "1"],
    "simulate kernel spike": ["--N", "20", "--d", "10", "--n", "30", "--seeds", "1"],
    "simulate kernel generalisation": ["--N", "16", "--d", "6", "--n", "24", "--n-test", "30", "--seeds", "1"],
    "sweep bbp": ["--theta", "2", "--N", "20", "--seeds", "1"],
    "sweep two-step": ["--alpha1", "0.1", "--alpha2", "0.1", "--N", "16", "--seeds", "1"],
    "sweep one-step": ["--eta", "1", "--N", "16", "--seeds", "1"],
    "sweep kernel": ["--b", "1", "--d", "4", "--n", "20", "--seeds", "1"],
    "phase-diagram": ["--alpha1", "0.1", "--alpha2", "0.2"],
    "flow kkt": ["--example", "relu", "--restarts", "2"],
    "flow saddle": ["--example", "relu", "--restarts", "2"],
    "flow simulate": ["--example", "relu", "--points", "20"],
    "theory ck": ["--psi", "1", "--phi", "1"],
    "simulate ck": ["--N", "20", "--d", "10", "--n", "20"],
    "analyze": [],          # the file is added by _fuzz_one
}
#: A small matrix file for ``rmtfl analyze`` (written once per test session).
_ANALYZE_FILE = None


def _analyze_file():
    global _ANALYZE_FILE
    if _ANALYZE_FILE is None:
        import tempfile

        import numpy as np

        path = os.path.join(tempfile.mkdtemp(prefix="rmtfl-fuzz-"), "w.npy")
        np.save(path, np.random.default_rng(0).standard_normal((60, 40)) / np.sqrt(40))
        _ANALYZE_FILE = path
    return _ANALYZE_FILE
#: Flags not fuzzed: they select a file, an address or a switch (tested on their own).
SKIP = {"--help", "--json", "--out", "--store", "--scheduler", "--no-progress", "--data", "--empirical", "--quick",
        "--full", "--parts", "--version"}
BAD = ["-1", "0", "-0.5", "1e300", "-1e300", "1000000000000", "99999999999999999999", "nan", "inf", "-inf",
       "abc", "", "1,2,x", "0:1:0", "0:1", "hermite(", "nope", "1e-300"]


def _flags():
    from rmtfl.cli._main import _leaves

    out = {}
    for leaf in _leaves(build_parser()):
        name = leaf.prog.removeprefix("rmtfl ").strip()
        if name in BASES:
            out[name] = sorted({a.option_strings[-1] if a.option_strings[0] == "-h" else
                                next((o for o in a.option_strings if o.startswith("--")), a.option_strings[0])
                                for a in leaf._actions if a.option_strings} - SKIP)
    return out


class _Timeout(BaseException):
    pass


@contextmanager
def _time_limit(seconds):
    def fire(*_):
        raise _Timeout()

    old = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def _fuzz_one(command, flag, value, tmp, capsys, limit=20.0):
    argv = command.split() + [a for a in BASES[command]]
    if command == "analyze":
        argv.append(_analyze_file())
    if flag in argv:  # replace the base value of that flag
        i = argv.index(flag)
        argv[i:i + 2] = []
    argv += [flag, value] if value is not None else [flag]
    if command.startswith("sweep"):
        argv += ["--store", str(tmp / "fuzz.sqlite"), "--no-progress"]
        if flag != "--workers":
            argv += ["--workers", "0"]
    if command == "phase-diagram" and flag in ("--seeds", "--workers", "--retries", "--seed", "--backend",
                                               "--count", "--dtype"):
        argv += ["--empirical", "--N", "16", "--store", str(tmp / "fuzz.sqlite"), "--no-progress"]
        argv += ["--seeds", "1"] if flag != "--seeds" else []
    if flag == "--workers" and value not in ("0", "-1", "nan", "inf", "-inf", "abc", "", "1,2,x", "0:1:0", "0:1",
                                             "hermite(", "nope", "-0.5", "1e-300", "1e300", "-1e300"):
        return None  # a real cluster: not in the fuzz run
    try:
        with _time_limit(limit):
            rc, out, err = _run(argv, capsys)
    except _Timeout:
        pytest.fail(f"rmtfl {' '.join(argv)} ran past {limit} s")
    assert rc in (0, 1, 2), (argv, rc, err)
    assert "Traceback" not in err, (argv, err)
    if rc == 1 and not err:  # tasks of a sweep failed: the table says which, on stdout
        assert "failed" in out and "failures:" in out, (argv, out)
    elif rc in (1, 2) and not err.startswith("usage:"):
        assert _one_line(err), (argv, err)
    return rc


def test_fuzz_bad_values_never_give_a_traceback(tmp_path_factory, capsys):
    """Random bad values (negative, zero, huge, NaN, inf, not a number, unknown names) for the flags of every command."""
    from hypothesis import HealthCheck, given, settings, strategies as st

    flags = _flags()
    cases = [(c, f) for c in sorted(flags) for f in flags[c]]
    tmp = tmp_path_factory.mktemp("fuzz")

    @settings(max_examples=60, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(st.sampled_from(cases), st.sampled_from(BAD))
    def check(case, value):
        _fuzz_one(case[0], case[1], value, tmp, capsys)

    check()


@pytest.mark.slow
def test_fuzz_every_flag_with_several_bad_values(tmp_path_factory, capsys):
    """The long profile: every (command, flag) with three bad values, rotating through ``BAD`` so that each
    value meets every kind of flag; bounded so that CI can run it (a few minutes on 2 cores)."""
    flags = _flags()
    tmp = tmp_path_factory.mktemp("fuzz")
    i = 0
    for command in sorted(flags):
        for flag in flags[command]:
            for j in range(3):
                _fuzz_one(command, flag, BAD[(i + 7 * j) % len(BAD)], tmp, capsys, limit=60.0)
            i += 1


def test_fuzz_covers_every_command_but_figures_verify_and_explore():
    """``figures`` and ``verify`` are long jobs with few flags (tested on their own); ``explore`` serves until
    interrupted (its flags are tested in tests/cli/test_flags.py and tests/explore)."""
    from rmtfl.cli._main import _leaves

    names = {leaf.prog.removeprefix("rmtfl ").strip() for leaf in _leaves(build_parser())}
    assert names - set(BASES) == {"figures", "verify", "explore"}
