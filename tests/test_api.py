"""The API contract of docs/api.md, checked on the code itself.

- ``rmtfl.theory`` is deterministic: no ``rng`` parameter, no random numbers, never imports numerics;
- one vocabulary: sizes ``N, d, n, n2``, ratios ``psi, phi, phi2``; ``rng`` and ``backend`` keyword-only;
  ``activation`` (and ``target``) first when positional;
- results are frozen dataclasses with the shared ``to_dict``;
- no module imports another module's private names, and the package has no import cycles.
"""
from __future__ import annotations

import ast
import dataclasses
import inspect
import json
from pathlib import Path

import pytest

import rmtfl.compare as cmp
import rmtfl.numerics as nm
import rmtfl.sweep as sweep
import rmtfl.theory as th
from rmtfl._results import Result

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "rmtfl"
LAYERS = {"theory": th, "numerics": nm, "compare": cmp}
#: words the API does not use for its sizes and ratios (docs/api.md)
RETIRED = {"m", "width", "ratio", "xp", "n1", "n_neurons", "widths"}


def _public_functions(mod):
    for name in mod.__all__:
        obj = getattr(mod, name)
        if inspect.isfunction(obj):
            yield name, obj


def _params(fn):
    return list(inspect.signature(fn).parameters.values())


@pytest.mark.parametrize("name,fn", list(_public_functions(th)), ids=lambda x: x if isinstance(x, str) else "")
def test_theory_takes_no_rng(name, fn):
    assert "rng" not in inspect.signature(fn).parameters, f"rmtfl.theory.{name} takes rng"


def test_theory_draws_no_random_numbers_and_never_imports_other_layers():
    bad = []
    for path in (PKG / "theory").rglob("*.py"):
        src = path.read_text()
        for word in ("np.random", "numpy.random", "default_rng", "import random"):
            if word in src:
                bad.append(f"{path.relative_to(ROOT)}: {word}")
        for node in ast.walk(ast.parse(src)):
            if isinstance(node, ast.ImportFrom) and node.module:
                mod = node.module if node.level == 0 else ""
                if any(mod.startswith(f"rmtfl.{layer}") for layer in ("numerics", "compare", "plots", "cli", "sweep")):
                    bad.append(f"{path.relative_to(ROOT)} imports {mod}")
    assert not bad, bad


@pytest.mark.parametrize("layer", ["theory", "numerics", "compare", "sweep"])
def test_vocabulary_and_keyword_only_rng_backend(layer):
    bad = []
    for name, fn in _public_functions(LAYERS.get(layer) or sweep):
        params = _params(fn)
        names = [p.name for p in params]
        for p in params:
            if p.name in RETIRED:
                bad.append(f"{name}: parameter {p.name!r} (use N, d, n, n2, psi, phi, phi2, backend)")
            if p.name in ("rng", "backend") and p.kind is not inspect.Parameter.KEYWORD_ONLY:
                bad.append(f"{name}: {p.name} must be keyword-only")
        positional = [p.name for p in params if p.kind is not inspect.Parameter.KEYWORD_ONLY]
        if "activation" in positional and positional[0] != "activation":
            bad.append(f"{name}: activation must come first ({names})")
        if "target" in positional and positional[:2] != ["activation", "target"]:
            bad.append(f"{name}: target must follow activation ({names})")
        if positional[:1] == ["activation"]:
            # after the model's defining inputs everything is keyword-only
            late = [p for p in positional if p in ("N", "d", "n", "n2", "psi", "phi", "phi2", "eta", "eta1", "eta2",
                                                   "noise", "batch", "dtype")]
            if late:
                bad.append(f"{name}: {late} must be keyword-only")
    assert not bad, "\n".join(bad)


#: Model and configuration objects that are inputs, not results: they need no ``to_dict``.
NOT_RESULTS = {
    "theory.Activation": "an activation: an input, resolved once at the boundary",
    "theory.Target": "a target: an input, resolved once at the boundary",
    "numerics.Backend": "an array backend handle",
    "compare.Check": "a comparison job (holds a callable)",
    "compare.VerifyContext": "the settings of a verify run",
}


def _result_classes():
    for layer, mod in LAYERS.items():
        for name in mod.__all__:
            obj = getattr(mod, name)
            if isinstance(obj, type) and dataclasses.is_dataclass(obj) and f"{layer}.{name}" not in NOT_RESULTS:
                yield f"{layer}.{name}", obj


@pytest.mark.parametrize("name,cls", list(_result_classes()), ids=lambda x: x if isinstance(x, str) else "")
def test_result_dataclasses_are_frozen_results(name, cls):
    assert cls.__dataclass_params__.frozen, f"{name} is not frozen"
    assert issubclass(cls, Result), f"{name} does not derive from rmtfl._results.Result (shared to_dict)"


def test_to_dict_is_json_ready():
    r = th.bgn_outlier(2.0, 0.5)
    d = r.to_dict()
    json.dumps(d)
    assert set(d) >= {"singular_value", "cos2_left", "cos2_right"} or len(d) >= 3


# ------------------------------------------------------------------ imports: private names and cycles
def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _resolve(path: Path, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    pkg = _module_name(path).split(".")
    if path.name != "__init__.py":
        pkg = pkg[:-1]
    base = pkg[: len(pkg) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _imports():
    """(importer, imported module, names) for every import in the package, at any depth of the file."""
    for path in PKG.rglob("*.py"):
        tree = ast.parse(path.read_text())
        me = _module_name(path)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                yield path, me, _resolve(path, node), [a.name for a in node.names]
            elif isinstance(node, ast.Import):
                for a in node.names:
                    yield path, me, a.name, []


def test_no_module_imports_private_names_of_another():
    bad = []
    for path, me, mod, names in _imports():
        if not mod.startswith("rmtfl"):
            continue
        for n in names:
            if n.startswith("_") and not n.startswith("__"):
                # importing a private *module* of one's own package is how private modules work
                if (PKG.parent / (mod.replace(".", "/") + f"/{n}.py")).exists() or \
                        (PKG.parent / (mod.replace(".", "/") + f"/{n}")).is_dir():
                    continue
                bad.append(f"{path.relative_to(ROOT)}: from {mod} import {n}")
    assert not bad, "\n".join(bad)


def test_no_import_cycles():
    modules = {_module_name(p) for p in PKG.rglob("*.py")}
    graph = {m: set() for m in modules}
    for path, me, mod, names in _imports():
        targets = []
        if mod in modules:
            targets.append(mod)
            targets += [f"{mod}.{n}" for n in names if f"{mod}.{n}" in modules]
        elif mod.rsplit(".", 1)[0] in modules and mod.startswith("rmtfl"):
            targets.append(mod.rsplit(".", 1)[0])
        graph[me].update(t for t in targets if t != me)
    # importing a package runs its __init__, and importing a submodule runs its parents' __init__ first:
    # a package depends on what its __init__ imports; that is already in the graph.
    cycles, state = [], {}

    def visit(m, stack):
        state[m] = 1
        stack.append(m)
        for t in sorted(graph[m]):
            if state.get(t) == 1:
                cyc = stack[stack.index(t):] + [t]
                # a package __init__ re-exporting its own submodules, which import siblings through
                # the package, is the normal flat-namespace pattern only when the submodule does not
                # import the package itself; report every cycle
                cycles.append(" -> ".join(cyc))
            elif t not in state:
                visit(t, stack)
        stack.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [])
    assert not cycles, "\n".join(cycles)


def test_plot_functions_take_ax_none_and_never_show():
    import rmtfl.plots as plots

    bad = []
    for name in plots.__all__:
        fn = getattr(plots, name)
        if not name.startswith("plot_"):
            continue
        params = inspect.signature(fn).parameters
        if "axes" in params and "ax" not in params:  # a figure of several panels takes axes=None
            ax = params["axes"]
        else:
            ax = params.get("ax")
        if ax is None or ax.default is not None or ax.kind is not inspect.Parameter.KEYWORD_ONLY:
            bad.append(f"{name}: needs keyword-only ax=None")
    for path in (PKG / "plots").glob("*.py"):
        if any(line.strip().startswith("plt.show(") for line in path.read_text().splitlines()):
            bad.append(f"{path.name} calls plt.show()")
    assert not bad, bad


def test_importing_rmtfl_imports_no_optional_dependency():
    """Nor scipy.stats, which takes about a third of a second to import and is needed only by a few functions (they
    import it themselves)."""
    import subprocess
    import sys

    code = ("import sys, rmtfl, rmtfl.theory, rmtfl.numerics, rmtfl.compare; "
            "print(sorted(m for m in ('cupy', 'dask', 'distributed', 'matplotlib', 'bokeh', 'selenium', 'scipy.stats') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
