"""One ``to_dict`` for every result: frozen dataclasses that serialise to JSON-ready dicts.

Every public function of rmtfl returns a scalar, an array, or a frozen dataclass deriving from
:class:`Result` (docs/api.md).  ``Result.to_dict()`` turns numpy scalars and arrays, nested results,
tuples, paths and non-finite floats into plain JSON values, so ``json.dumps(r.to_dict())`` always works.
"""
from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np

__all__ = ["Result", "to_jsonable", "jsonify"]


def jsonify(o):
    """Recursively convert ``o`` to plain JSON values (dict, list, str, int, float, bool, None).

    Non-finite floats become the strings ``"nan"``, ``"inf"`` and ``"-inf"`` (JSON has no such numbers).

    >>> jsonify({"a": np.float64(1.5), "b": (np.arange(2), float("inf"))})
    {'a': 1.5, 'b': [[0, 1], 'inf']}
    """
    if isinstance(o, Result) or (dataclasses.is_dataclass(o) and not isinstance(o, type)):
        return {f.name: jsonify(getattr(o, f.name)) for f in dataclasses.fields(o) if f.repr}
    if isinstance(o, dict):
        return {str(k): jsonify(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [jsonify(v) for v in o]
    if isinstance(o, np.ndarray):
        return jsonify(o.tolist())
    if isinstance(o, np.generic):
        return jsonify(o.item())
    if isinstance(o, float):
        return o if math.isfinite(o) else ("nan" if math.isnan(o) else ("inf" if o > 0 else "-inf"))
    if isinstance(o, complex):
        return {"re": jsonify(o.real), "im": jsonify(o.imag)}
    if isinstance(o, Path):
        return str(o)
    if o is None or isinstance(o, (str, int, bool)):
        return o
    if hasattr(o, "to_dict"):
        return jsonify(o.to_dict())
    if hasattr(o, "name") and isinstance(getattr(o, "name"), str):  # activations, targets, backends
        return o.name
    raise TypeError(f"not JSON-serialisable: {type(o).__name__}")


def to_jsonable(o):
    """``json.dumps(default=...)`` hook: everything :func:`jsonify` handles."""
    return jsonify(o)


class Result:
    """Mixin for frozen result dataclasses: ``to_dict()`` gives a JSON-ready dict of the fields.

    Fields declared with ``field(repr=False)`` (large arrays, callables) are left out.

    >>> from dataclasses import dataclass
    >>> @dataclass(frozen=True)
    ... class R(Result):
    ...     x: float
    ...     v: tuple
    >>> R(np.float64(2.0), (1, np.int64(3))).to_dict()
    {'x': 2.0, 'v': [1, 3]}
    """

    __slots__ = ()

    def to_dict(self) -> dict:
        """The fields as plain JSON values (numpy scalars and arrays converted, nested results too)."""
        return jsonify(self)
