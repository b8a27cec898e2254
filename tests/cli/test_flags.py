"""Every flag of every subcommand reaches the library: change the flag, see the call change.

The subcommands and their flags are read from :func:`rmtfl.cli.build_parser` itself, so a new flag
without a case below fails ``test_every_flag_is_forwarded``.  For a flag, the library function the
command calls is replaced by a spy (the name the CLI looks up: ``rmtfl.theory.X``,
``rmtfl.numerics.X``, ...) that binds the call to the real signature (a mismatch fails here), records
it and stops the command (or calls through, for flags that change how many calls are made).  The
command runs once with the base arguments and once with the flag changed; the recorded argument
named by the case must differ.  Flags that select outputs are checked on the output: ``--json``
(stdout parses as JSON) and ``--out DIR`` (files appear in ``DIR``).
"""
from __future__ import annotations

import argparse
import dataclasses
import importlib
import inspect
import json
from pathlib import Path

import numpy as np
import pytest

from rmtfl.cli import build_parser, main

JSON, OUT, CALLS = "<json>", "<out>", "<calls>"


@dataclasses.dataclass(frozen=True)
class Case:
    """``value`` (None: a switch), the parameter expected to change, the spied function, a base override."""

    value: str | None
    param: str
    fn: str | None = None
    base: tuple | None = None
    backend: bool = False          # the command checks --backend cupy first: let that check pass
    through: bool = False          # call the real function (the flag changes how many calls are made)


def C(value, param, fn=None, base=None, backend=False, through=False):
    return Case(value, param, fn, None if base is None else tuple(base), backend, through)


# ------------------------------------------------------------------------------------------ the cases
TH, NM = "rmtfl.theory", "rmtfl.numerics"
TWO_STEP_BASE = ["--eta1", "1", "--eta2", "1"]
SIM_TWO_STEP_BASE = ["--N", "40", "--d", "40", "--n", "80", "--eta1", "1", "--eta2", "1"]


def _step_cases(base):
    """``--eta{t}``, ``--alpha{t}`` and ``--c{t}`` of a two-step command (``--N`` given with the exponents)."""
    out = {}
    for t in (1, 2):
        other = ["--eta2", "1"] if t == 1 else ["--eta1", "1"]
        sizes = [a for a in base if a not in TWO_STEP_BASE] if "--d" in base else ["--N", "100"]
        alpha = [f"--alpha{t}", "0.1"] + other + sizes
        out[f"--eta{t}"] = C("2", f"eta{t}")
        out[f"--alpha{t}"] = C("0.2", f"eta{t}", base=alpha)
        out[f"--c{t}"] = C("2", f"eta{t}", base=alpha)
    return out


def _model_cases():
    return {"--activation": C("tanh", "activation"), "--target": C("linear", "target"),
            "--noise": C("0.1", "noise")}


#: Values of the sweep experiments' parameters (axes and fixed), all different from the defaults.
SWEEP_VALUES = {"theta": "1", "alpha1": "0.2", "alpha2": "0.2", "eta": "1", "b": "1", "N": "24", "psi": "2",
                "phi": "3", "c1": "2", "c2": "2", "activation": "tanh", "target": "linear", "batch": "fresh",
                "dtype": "float32", "delay": "0.01", "d": "10", "n": "40", "A": "2", "measure": "gaussian"}
#: Small bases for the sweep experiments (real runs for --json).
SWEEP_BASES = {"bbp": ["--theta", "2", "--N", "20"], "two-step": ["--alpha1", "0.1", "--alpha2", "0.1", "--N", "16"],
               "one-step": ["--eta", "2", "--N", "16"], "kernel": ["--b", "2", "--d", "4", "--n", "20"]}


def _sweep_cases(name):
    from rmtfl.sweep import EXPERIMENTS

    exp = EXPERIMENTS[name]
    flags = {f"--{p}": C(SWEEP_VALUES[p], "grid") for p in (*exp.axes, *exp.fixed)}
    base = SWEEP_BASES[name] + ["--store", "{tmp}/s.sqlite", "--workers", "0", "--seeds", "1", "--no-progress"]
    flags.update({
        "--seeds": C("2", "seeds"), "--store": C("{tmp}/other.sqlite", "store"), "--workers": C("1", "workers"),
        "--scheduler": C("tcp://127.0.0.1:1", "scheduler", base=[a for a in base if a not in ("--workers", "0")]),
        "--retries": C("5", "retries"), "--no-progress": C(None, "progress", base=base[:-1]),
        "--seed": C("3", "root_seed"), "--backend": C("cupy", "backend", backend=True), "--json": JSON})
    return {"base": base, "fn": "rmtfl.sweep.run_sweep", "flags": flags}


PD_BASE = ["--alpha1", "0.1", "--alpha2", "0.1", "--activation", "gelu"]
PD_FINITE = ["--alpha1", "0.1", "--alpha2", "0.1", "--activation", "hermite(0, 1, 0.5)", "--target", "linear",
             "--N", "60"]
PD_EMPIRICAL = PD_BASE + ["--N", "16", "--empirical", "--workers", "0", "--store", "{tmp}/pd.sqlite", "--seeds", "1",
                          "--no-progress"]


def _pd_empirical(value, param, base=PD_EMPIRICAL, backend=False):
    return C(value, param, "rmtfl.sweep.run_sweep", base, backend)


CASES = {
    "verify": {"base": ["--out", "{tmp}/v"], "fn": "rmtfl.compare.run_verify", "flags": {
        "--quick": C(None, "ctx"), "--full": C(None, "ctx"), "--parts": C("classical", "parts"),
        "--seed": C("3", "ctx"), "--backend": C("cupy", "ctx", backend=True), "--out": C("{tmp}/w", "ctx"),
        "--json": JSON}},
    "theory mp": {"base": [], "fn": f"{TH}.mp_edges", "flags": {
        "--psi": C("2", "psi"), "--ratio": C("2", "psi"), "--var": C("2", "var"),
        "--kmax": C("6", "kmax", f"{TH}.mp_moments"), "--json": JSON}},
    "theory bgn": {"base": ["--theta", "2"], "fn": f"{TH}.bgn_outlier", "flags": {
        "--theta": C("3", "theta"), "--psi": C("2", "psi"), "--ratio": C("2", "psi"), "--var": C("2", "var"),
        "--json": JSON}},
    "theory hermite": {"base": [], "fn": f"{TH}.hermite_coeffs", "flags": {
        "--activation": C("tanh", "activation"), "--kmax": C("6", "kmax"), "--dps": C("20", "dps"),
        "--json": JSON}},
    "theory tw": {"base": ["--beta", "1", "--s", "0"], "fn": f"{TH}.tracy_widom_cdf", "flags": {
        "--beta": C("2", "beta"), "--s": C("1", "s"),
        "--p": C("0.9", "p", f"{TH}.tracy_widom_quantile", ["--beta", "1", "--p", "0.5"]), "--json": JSON}},
    "theory one-step": {"base": ["--eta", "2"], "fn": f"{TH}.one_step", "flags": {
        **_model_cases(), "--psi": C("2", "psi"), "--phi": C("3", "phi"), "--eta": C("3", "eta"), "--json": JSON}},
    "theory two-step": {"base": TWO_STEP_BASE, "fn": f"{TH}.two_step", "flags": {
        **_model_cases(), **_step_cases(TWO_STEP_BASE), "--psi": C("2", "psi"), "--phi": C("3", "phi"),
        "--batch": C("fresh", "batch"), "--phi2": C("3", "phi2", base=TWO_STEP_BASE + ["--batch", "fresh"]),
        "--N": C("100", "N"), "--extreme-samples": C("grouped", "extreme_samples", base=TWO_STEP_BASE + ["--N", "100"]),
        "--json": JSON}},
    "simulate spiked": {"base": ["--N", "40", "--d", "20", "--theta", "3"], "fn": f"{NM}.spiked_matrix", "flags": {
        "--N": C("50", "N"), "--d": C("25", "d"), "--theta": C("4", "theta"), "--var": C("2", "var"),
        "--p": C("0.9", "p", f"{NM}.measure_spiked"), "--seed": C("3", "rng"), "--backend": C("cupy", "backend"),
        "--json": JSON, "--out": OUT}},
    "simulate two-step": {"base": SIM_TWO_STEP_BASE, "fn": f"{NM}.simulate_two_step", "flags": {
        **_model_cases(), **_step_cases(SIM_TWO_STEP_BASE), "--N": C("50", "N"), "--d": C("50", "d"),
        "--n": C("100", "n"), "--batch": C("fresh", "batch"),
        "--n2": C("60", "n2", base=SIM_TWO_STEP_BASE + ["--batch", "fresh"]), "--k": C("3", "k"),
        "--dtype": C("float32", "dtype"), "--seed": C("3", "rng"), "--backend": C("cupy", "backend"),
        "--json": JSON, "--out": OUT}},
    "theory kernel spectrum": {"base": ["--d", "6", "--kmax", "2"], "fn": f"{TH}.sphere_eigenvalues", "flags": {
        "--activation": C("tanh", "activation"), "--d": C("8", "d"), "--kmax": C("3", "kmax"),
        "--json": JSON, "--out": OUT}},
    "theory kernel zonal": {"base": ["--d", "6"], "fn": f"{TH}.zonal_top_eigenfunction", "flags": {
        "--activation": C("tanh", "activation"), "--d": C("8", "d"), "--b": C("2", "b"), "--A": C("2", "A"),
        "--rho": C("2", "rho", f"{TH}.zonal_limit_operator", ["--rho", "1"]), "--json": JSON, "--out": OUT}},
    "theory kernel linear": {"base": [], "fn": f"{TH}.linear_sector", "flags": {
        "--activation": C("tanh", "activation"), "--d": C("8", "d"), "--A": C("0.2", "A"), "--B": C("1", "B"),
        "--measure": C("sphere", "measure"), "--json": JSON, "--out": OUT}},
    "theory kernel spike": {"base": ["--eta", "4"], "fn": f"{TH}.spike_constants", "flags": {
        **_model_cases(), "--eta": C("2", "eta"), "--N": C("256", "N"), "--d": C("128", "d"), "--n": C("512", "n"),
        "--json": JSON, "--out": OUT}},
    "simulate kernel spectrum": {"base": ["--d", "4", "--n", "60"], "fn": f"{NM}.gram_degree_eigenvalues", "flags": {
        "--activation": C("tanh", "activation"), "--d": C("5", "d"), "--n": C("80", "n"),
        "--measure": C("gaussian", "measure"), "--seed": C("3", "rng"), "--backend": C("cupy", "backend", backend=True),
        "--json": JSON, "--out": OUT}},
    "simulate kernel alignment": {"base": ["--d", "4", "--n", "40", "--b", "1", "--seeds", "1"],
                                  "fn": f"{NM}.gram_alignment", "flags": {
        "--activation": C("tanh", "activation"), "--d": C("5", "d"), "--n": C("50", "n"), "--b": C("2", "b"),
        "--A": C("2", "A"), "--seeds": C("2", CALLS, through=True), "--measure": C("gaussian", "measure"),
        "--seed": C("3", "rng"),
        "--backend": C("cupy", "backend", backend=True), "--json": JSON, "--out": OUT}},
    "simulate kernel spike": {"base": ["--d", "8", "--N", "16", "--n", "16", "--seeds", "1"],
                              "fn": f"{NM}.one_step_weights", "flags": {
        **_model_cases(), "--N": C("20", "N"), "--d": C("10", "d"), "--n": C("20", "n"), "--b": C("2", "eta"),
        "--seeds": C("2", CALLS, through=True), "--seed": C("3", "rng"),
        "--backend": C("cupy", "backend", backend=True), "--json": JSON, "--out": OUT}},
    "simulate kernel generalisation": {"base": ["--d", "6", "--N", "10", "--seeds", "1"],
                                       "fn": f"{NM}.generalisation_experiment", "flags": {
        **_model_cases(), "--N": C("10,20", "N"), "--d": C("8", "d"), "--n": C("30", "n"), "--n2": C("30", "n2"),
        "--n-test": C("50", "n_test"), "--b": C("2", "b"), "--lam": C("0.1", "lam"), "--seeds": C("2", "seeds"),
        "--seed": C("3", "rng"), "--backend": C("cupy", "backend", backend=True), "--json": JSON, "--out": OUT}},
    "flow kkt": {"base": ["--example", "check2"], "fn": f"{TH}.ncf_kkt", "flags": {
        "--example": C("square5", "X"), "--data": C("{data2}", "X", base=["--data", "{data1}"]),
        "--activation": C("relu^2", "activation"), "--N": C("3", "N"), "--depth": C("3", "depth"),
        "--loss": C("logistic", "loss"), "--restarts": C("5", "restarts"), "--method": C("search", "method"),
        "--json": JSON, "--out": OUT}},
    "flow saddle": {"base": ["--example", "check2"], "fn": f"{TH}.first_saddle", "flags": {
        "--example": C("square5", "X"), "--data": C("{data2}", "X", base=["--data", "{data1}"]),
        "--activation": C("relu^2", "activation"), "--N": C("3", "N"), "--depth": C("3", "depth"),
        "--loss": C("logistic", "loss"), "--restarts": C("5", "restarts"), "--seed": C("3", "w0"),
        "--json": JSON, "--out": OUT}},
    "flow simulate": {"base": ["--example", "check1", "--points", "40"], "fn": f"{NM}.simulate_flow", "flags": {
        "--example": C("check2", "X"), "--data": C("{data2}", "X", base=["--data", "{data1}", "--points", "40"]),
        "--activation": C("square", "activation"), "--N": C("2", "N"), "--depth": C("3", "depth"),
        "--loss": C("logistic", "loss"), "--delta": C("0.01", "delta"), "--t-end": C("5", "t_end"),
        "--points": C("50", "t_eval"), "--seed": C("3", "w0"), "--json": JSON, "--out": OUT}},
    **{f"sweep {name}": _sweep_cases(name) for name in ("bbp", "two-step", "one-step", "kernel")},
    "phase-diagram": {"base": PD_BASE, "fn": f"{TH}.phase_diagram", "flags": {
        "--alpha1": C("0.2", "alpha1"), "--alpha2": C("0.2", "alpha2"), "--activation": C("tanh", "activation"),
        "--target": C("linear", "target"), "--batch": C("fresh", "batch"), "--phi": C("3", "phi"),
        "--degree": C("3", "degree"),
        "--N": C("80", "N", f"{TH}.finite_n_outlier_map", PD_FINITE),
        "--psi": C("2", "psi", f"{TH}.finite_n_outlier_map", PD_FINITE),
        "--c1": C("2", "c1", f"{TH}.finite_n_outlier_map", PD_FINITE),
        "--c2": C("2", "c2", f"{TH}.finite_n_outlier_map", PD_FINITE),
        "--extreme-samples": C("grouped", "extreme_samples", f"{TH}.finite_n_outlier_map", PD_FINITE),
        "--empirical": _pd_empirical(None, CALLS, PD_EMPIRICAL[:PD_EMPIRICAL.index("--empirical")]),
        "--dtype": _pd_empirical("float32", "grid"), "--seeds": _pd_empirical("2", "seeds"),
        "--store": _pd_empirical("{tmp}/other.sqlite", "store"), "--workers": _pd_empirical("1", "workers"),
        "--scheduler": _pd_empirical("tcp://127.0.0.1:1", "scheduler",
                                     [a for a in PD_EMPIRICAL if a not in ("--workers", "0")]),
        "--retries": _pd_empirical("5", "retries"), "--no-progress": _pd_empirical(None, "progress", PD_EMPIRICAL[:-1]),
        "--seed": _pd_empirical("3", "root_seed"), "--backend": _pd_empirical("cupy", "backend", backend=True),
        "--count": "<count>", "--json": JSON, "--out": OUT}},
    "analyze": {"base": ["{mat}"], "fn": "rmtfl.compare.analyze", "flags": {
        "--key": C("m", "key", "rmtfl.compare.load_matrices"), "--alpha": C("0.1", "alpha"),
        "--kind": C("covariance", "kind"), "--top-k": C("5", "top_k"), "--json": JSON, "--out": OUT}},
    "figures": {"base": ["phase_diagram", "--out", "{tmp}/f"], "fn": "rmtfl.cli._figures.run_figure", "flags": {
        "--out": C("{tmp}/g", "out"), "--quick": C(None, "quick")}},
    "explore": {"base": ["--port", "5006"], "fn": "rmtfl.explore.serve", "flags": {
        "--port": C("6000", "port"), "--host": C("localhost", "host"), "--open": C(None, "open_browser")}},
    "theory ck": {"base": [], "fn": f"{TH}.ck_spectrum", "flags": {
        "--activation": C("tanh", "activation"), "--psi": C("2", "psi"), "--phi": C("3", "phi"),
        "--N": C("100", "N"), "--json": JSON}},
    "simulate ck": {"base": ["--N", "40", "--d", "30", "--n", "50"], "fn": f"{NM}.simulate_ck", "flags": {
        "--activation": C("tanh", "activation"), "--N": C("50", "N"), "--d": C("25", "d"), "--n": C("60", "n"),
        "--seed": C("3", "rng"), "--backend": C("cupy", "backend"), "--json": JSON, "--out": OUT}},
}


# ------------------------------------------------------------------------------------------ machinery
def _commands(parser, path=()):
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield " ".join(path), parser
        return
    for action in subs:
        for name, child in action.choices.items():
            yield from _commands(child, path + (name,))


def _flags(parser):
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        for opt in action.option_strings:
            if opt.startswith("--"):
                yield opt


FLAGS = [(cmd, flag) for cmd, p in _commands(build_parser()) for flag in _flags(p)]


class Stop(BaseException):
    """Raised by a spy once it has recorded the call (not an Exception: the CLI must not catch it)."""


def _norm(v):
    """A comparable, hashable-free picture of an argument value."""
    if isinstance(v, np.random.Generator):
        return ("Generator", json.dumps(v.bit_generator.state, default=str))
    if isinstance(v, np.random.SeedSequence):
        return ("SeedSequence", v.entropy, tuple(v.spawn_key))
    if isinstance(v, np.ndarray):
        return ("array", v.shape, v.tolist())
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return (type(v).__name__, {f.name: _norm(getattr(v, f.name)) for f in dataclasses.fields(v)})
    if isinstance(v, dict):
        return {k: _norm(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_norm(x) for x in v]
    if isinstance(v, Path):
        return str(v)
    if isinstance(v, (int, float, str, bool, type(None), np.generic)):
        return v
    return repr(v)


class Spy:
    def __init__(self, monkeypatch, target: str, stop: bool):
        module, name = target.rsplit(".", 1)
        mod = importlib.import_module(module)
        real = getattr(mod, name)
        sig = inspect.signature(real)
        self.calls, self.errors = [], []

        def spy(*args, **kwargs):
            try:
                bound = sig.bind(*args, **kwargs)
            except TypeError as exc:       # the CLI calls the function with a wrong signature
                self.errors.append(f"{target}: {exc}")
                raise Stop from None
            bound.apply_defaults()
            self.calls.append({k: _norm(v) for k, v in bound.arguments.items()})
            if stop:
                raise Stop
            return real(*args, **kwargs)

        monkeypatch.setattr(mod, name, spy)


def _run(argv):
    try:
        return main(argv)
    except Stop:
        return "stopped"
    except SystemExit as exc:
        return f"exit {exc.code}"


@pytest.fixture
def fill(tmp_path):
    np.savez(tmp_path / "d1.npz", X=np.eye(3), y=np.array([1.0, -0.5, -0.3]))
    np.savez(tmp_path / "d2.npz", X=2 * np.eye(3), y=np.array([1.0, -0.5, -0.3]))
    np.save(tmp_path / "m.npy", np.random.default_rng(0).standard_normal((30, 20)))  # rmtfl analyze
    subs = {"tmp": str(tmp_path), "data1": str(tmp_path / "d1.npz"), "data2": str(tmp_path / "d2.npz"),
            "mat": str(tmp_path / "m.npy")}
    return lambda args: [a.format(**subs) for a in args]


def _lenient_backend(monkeypatch):
    """Let ``get_backend("cupy")`` pass (the spied call stops before any array is made)."""
    import rmtfl.numerics as nm

    real = nm.get_backend
    monkeypatch.setattr(nm, "get_backend", lambda name="numpy": real("numpy"))


# ------------------------------------------------------------------------------------------ tests
def test_the_cases_name_existing_flags():
    have = set(FLAGS)
    stale = [(cmd, f) for cmd, spec in CASES.items() for f in spec["flags"] if (cmd, f) not in have]
    assert not stale, f"cases for flags that do not exist: {stale}"


@pytest.mark.parametrize("cmd, flag", FLAGS, ids=[f"{c} {f}" for c, f in FLAGS])
def test_every_flag_is_forwarded(cmd, flag, fill, tmp_path, monkeypatch, capsys):
    spec = CASES.get(cmd)
    assert spec is not None and flag in spec["flags"], f"no forwarding case for `rmtfl {cmd} {flag}`"
    case = spec["flags"][flag]
    prefix = cmd.split()
    base = fill(list(spec["base"] if not isinstance(case, Case) or case.base is None else case.base))
    if case == JSON:
        _check_json(prefix, base, monkeypatch, capsys, cmd)
        return
    if case == OUT:
        out = tmp_path / "out-flag"
        _run(prefix + base)
        assert not out.exists()
        rc = _run(prefix + base + ["--out", str(out)])
        assert rc == 0 and out.is_dir() and any(out.iterdir()), f"{cmd} --out wrote nothing (rc {rc})"
        return
    if case == "<count>":
        _check_count(prefix, fill, capsys)
        return
    if case.backend:
        _lenient_backend(monkeypatch)
    spy = Spy(monkeypatch, case.fn or spec["fn"], stop=not case.through)
    change = [flag] + ([] if case.value is None else fill([case.value]))
    rc0 = _run(prefix + base)
    first = list(spy.calls)
    rc1 = _run(prefix + base + change)
    second = list(spy.calls[len(first):])
    assert not spy.errors, spy.errors
    if case.param == CALLS:
        assert first != second, f"`{cmd} {' '.join(change)}` did not change the calls ({rc0}, {rc1})"
        return
    assert first and second, f"`{cmd}` did not reach {case.fn or spec['fn']} (exit {rc0} / {rc1}); " \
                             f"{capsys.readouterr().err[-500:]}"
    a, b = first[0], second[0]
    assert case.param in a, f"{case.fn or spec['fn']} has no parameter {case.param!r}: {sorted(a)}"
    assert a[case.param] != b[case.param], f"`{cmd} {' '.join(change)}` did not change {case.param}"


def _check_json(prefix, base, monkeypatch, capsys, cmd):
    if cmd == "verify":  # a report without rows, instead of running the comparisons
        import rmtfl.compare as cmp

        monkeypatch.setattr(cmp, "run_verify", lambda ctx, parts=None, **kw: cmp.Report(settings={"seconds": 0.0}))
    capsys.readouterr()
    _run(prefix + base)
    text = capsys.readouterr().out
    rc = _run(prefix + base + ["--json"])
    out = capsys.readouterr().out
    assert rc in (0, 1), f"{cmd} --json: exit {rc}"
    json.loads(out)
    assert out != text
    with pytest.raises(json.JSONDecodeError):
        json.loads(text)


def _check_count(prefix, fill, capsys):
    """``phase-diagram --count`` selects the metric the simulated map reads."""
    got = {}
    for count in ("separated", "edge"):
        capsys.readouterr()
        assert _run(prefix + fill(PD_EMPIRICAL) + ["--count", count, "--json"]) == 0
        got[count] = json.loads(capsys.readouterr().out)["empirical"]
    assert (got["separated"]["metric"], got["edge"]["metric"]) == ("separated", "outliers")


def test_alignment_activation_reaches_the_gram_matrices_and_the_zonal_theory(monkeypatch):
    """The issue's example: ``simulate kernel alignment --activation tanh`` was ignored."""
    grams = Spy(monkeypatch, f"{NM}.gram_alignment", stop=False)
    zonal = Spy(monkeypatch, f"{TH}.zonal_top_eigenfunction", stop=False)
    assert main(["simulate", "kernel", "alignment", "--d", "4", "--n", "40", "--b", "1", "--seeds", "1",
                 "--activation", "tanh"]) == 0
    assert grams.calls[0]["activation"] == "tanh" and zonal.calls[0]["activation"] == "tanh"
