"""Sweep grids, canonical parameters, task keys and per-task seeds.

A *task* is one (grid point, seed index) pair of one experiment.  Everything
that identifies a task is reduced to a canonical JSON text, so that

* the store key ``task_key(...)`` is the SHA-256 of that text (integral floats
  are written as integers there, so ``2`` and ``2.0`` name the same task), and
* the task's random stream is ``SeedSequence(entropy=<hash of experiment,
  version, root seed and point>, spawn_key=(seed_index,))``.

Neither depends on the executor, the task order or the number of workers, so a
serial run and a cluster run draw identical random numbers.

Grid values written as ``LO:HI:COUNT`` are ``numpy.linspace(LO, HI, COUNT)``
rounded to 12 significant digits (so ``0:0.45:10`` gives ``0.05``, not
``0.05000000000000001``), which keeps keys readable and stable.

Examples
--------
>>> parse_axis("alpha1", "0:0.4:3")
[0.0, 0.2, 0.4]
>>> parse_axis("N", "400,800")
[400, 800]
>>> grid = product_grid({"a": [1, 2], "b": [0.5]}, fixed={"N": 100})
>>> grid
[{'N': 100, 'a': 1, 'b': 0.5}, {'N': 100, 'a': 2, 'b': 0.5}]
>>> canonical_params(grid[0])
'{"N":100,"a":1,"b":0.5}'
>>> len(task_key("demo", "1", grid[0], 0))
64
>>> s1 = task_seed("demo", "1", grid[0], 3)
>>> s2 = task_seed("demo", "1", dict(reversed(list(grid[0].items()))), 3)
>>> s1.generate_state(2).tolist() == s2.generate_state(2).tolist()
True
>>> task_key("demo", "1", {"x": 2}, 0) == task_key("demo", "1", {"x": 2.0}, 0)
True
"""
from __future__ import annotations

import hashlib
import itertools
import json
import math
from numbers import Integral, Real

import numpy as np

__all__ = [
    "parse_axis",
    "product_grid",
    "canonical_params",
    "normalise_params",
    "task_key",
    "task_seed",
    "seed_indices",
]

#: Significant digits kept when a ``LO:HI:COUNT`` axis is expanded.
AXIS_DIGITS = 12


def _number(text: str, name: str):
    text = text.strip()
    try:
        return int(text)
    except ValueError:
        pass
    try:
        v = float(text)
    except ValueError:
        raise ValueError(f"{name}: cannot read {text!r} as a number") from None
    if not math.isfinite(v):
        raise ValueError(f"{name}: values must be finite, got {text!r}")
    return v


def parse_axis(name: str, spec) -> list:
    """Values of one sweep axis.

    ``spec`` is ``"LO:HI:COUNT"`` (``COUNT >= 1`` evenly spaced values, both
    ends included; ``COUNT = 1`` gives ``[LO]``), a comma list ``"a,b,c"``, a
    single number, or a sequence of numbers.
    """
    if isinstance(spec, (list, tuple, np.ndarray)):
        vals = [normalise_value(name, v) for v in spec]
    elif isinstance(spec, (Real, np.generic)) and not isinstance(spec, bool):
        vals = [normalise_value(name, spec)]
    elif isinstance(spec, str) and ":" in spec:
        parts = spec.split(":")
        if len(parts) != 3:
            raise ValueError(f"{name} must be LO:HI:COUNT, a comma list or a number, got {spec!r}")
        lo, hi = float(_number(parts[0], name)), float(_number(parts[1], name))
        count = _number(parts[2], name)
        if not isinstance(count, int) or count < 1:
            raise ValueError(f"{name}: COUNT in LO:HI:COUNT must be an integer >= 1, got {parts[2]!r}")
        vals = [float(f"{v:.{AXIS_DIGITS}g}") for v in np.linspace(lo, hi, count)]
    elif isinstance(spec, str):
        vals = [_number(p, name) for p in spec.split(",") if p.strip()]
    else:
        raise ValueError(f"{name} must be LO:HI:COUNT, a comma list or a number, got {spec!r}")
    if not vals:
        raise ValueError(f"{name}: the axis is empty ({spec!r})")
    return vals


def normalise_value(name: str, v):
    """A JSON-stable Python scalar: numpy scalars become int/float/bool, strings stay."""
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (Integral, np.integer)):
        return int(v)
    if isinstance(v, (Real, np.floating)):
        f = float(v)
        if not math.isfinite(f):
            raise ValueError(f"parameter {name} must be finite, got {v!r}")
        return f
    if isinstance(v, str) or v is None:
        return v
    raise ValueError(f"parameter {name} must be a number, a bool, a string or None, got {type(v).__name__}")


def normalise_params(params: dict) -> dict:
    """``params`` with string keys, scalar values and keys sorted."""
    if not isinstance(params, dict):
        raise ValueError(f"a grid point must be a dict of parameters, got {type(params).__name__}")
    out = {}
    for k in sorted(params):
        if not isinstance(k, str):
            raise ValueError(f"parameter names must be strings, got {k!r}")
        out[k] = normalise_value(k, params[k])
    return out


def canonical_params(params: dict) -> str:
    """Compact sorted-key JSON of the normalised parameters (floats by shortest repr)."""
    return json.dumps(normalise_params(params), sort_keys=True, separators=(",", ":"))


def product_grid(axes: dict, fixed: dict | None = None) -> list[dict]:
    """Cartesian product of ``axes`` (name -> values or spec), merged with ``fixed``.

    The first axis varies slowest (row-major order, like ``itertools.product``).
    """
    names = list(axes)
    values = [parse_axis(n, axes[n]) for n in names]
    fixed = dict(fixed or {})
    clash = set(fixed) & set(names)
    if clash:
        raise ValueError(f"parameters {sorted(clash)} are given both as an axis and as a fixed value")
    return [normalise_params({**fixed, **dict(zip(names, combo))}) for combo in itertools.product(*values)]


def seed_indices(seeds) -> list[int]:
    """``S`` (int) -> ``[0, ..., S-1]``; a sequence of non-negative ints is kept (duplicates dropped)."""
    if isinstance(seeds, (Integral, np.integer)) and not isinstance(seeds, bool):
        if seeds < 1:
            raise ValueError(f"seeds must be >= 1, got {seeds}")
        return list(range(int(seeds)))
    if isinstance(seeds, (bool, str)) or not hasattr(seeds, "__iter__"):
        raise ValueError(f"seeds must be an integer >= 1 or a sequence of seed indices, got {seeds!r}")
    out = []
    for s in seeds:
        if isinstance(s, bool) or not isinstance(s, (Integral, np.integer)) or s < 0:
            raise ValueError(f"seed indices must be integers >= 0, got {s!r}")
        if int(s) not in out:
            out.append(int(s))
    if not out:
        raise ValueError("seeds must not be empty")
    return out


def _identity(experiment: str, version: str, params: dict, root_seed: int) -> str:
    # integral floats hash as ints, so ``--theta 2`` and ``--theta 0:2:2`` name the same task
    p = {k: (int(v) if isinstance(v, float) and v.is_integer() and abs(v) < 2**53 else v)
         for k, v in normalise_params(params).items()}
    return json.dumps({"e": str(experiment), "v": str(version), "r": int(root_seed), "p": p},
                      sort_keys=True, separators=(",", ":"))


def task_key(experiment: str, version: str, params: dict, seed_index: int, root_seed: int = 0) -> str:
    """Store key: SHA-256 hex of experiment, version, root seed, canonical params and seed index."""
    text = _identity(experiment, version, params, root_seed) + f"#{int(seed_index)}"
    return hashlib.sha256(text.encode()).hexdigest()


def task_seed(experiment: str, version: str, params: dict, seed_index: int,
              root_seed: int = 0) -> np.random.SeedSequence:
    """``SeedSequence(entropy=sha256(point identity), spawn_key=(seed_index,))``."""
    digest = hashlib.sha256(_identity(experiment, version, params, root_seed).encode()).digest()
    return np.random.SeedSequence(int.from_bytes(digest[:16], "little"), spawn_key=(int(seed_index),))
