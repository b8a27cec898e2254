"""Built-in data sets of the gradient-flow part (docs/theory/gradient_flow.md §14 and small variants).

Each example is a :class:`FlowExample` with ``X`` (rows are samples), ``y``, ``activation``,
``N`` (hidden width), ``depth``, ``loss``, a fixed initial direction ``w0`` (packed as in
docs/conventions.md §9, normalised) and, where the reference gives one, ``escape_loss`` and
the reference values quoted there.  All are deterministic (no random numbers).
``FlowExample.settings`` gives the keyword arguments of the network and loss
(``activation``, ``N``, ``depth``, ``loss``) for :func:`~rmtfl.theory.ncf_kkt` and friends.

- ``check1``: docs/theory/gradient_flow.md §14 Check 1, one linear unit (L = 2).
- ``check2``: docs/theory/gradient_flow.md §14 Check 2, square activation, ``X = I_3``, ``N = 4`` (L = 3).
- ``square5``: the docs/theory/gradient_flow.md §14 common data (d = 3, n = 5) with the square activation, ``N = 4``.
- ``relu2``: the common data with ``max(z, 0)^2``, ``N = 4`` (L = 3).
- ``deep``: the common data with a ``[3, 4, 4, 1]`` square net (L = 7).
- ``logistic``: ``X = diag(1.5, 1, 1)``, ``y = (1, -1, -1)``, square activation, logistic
  loss: its first saddle is at infinity with loss ``2 ln 2``.
- ``relu``: the common data with plain ReLU, ``N = 4`` (outside the theory).

>>> ex = flow_example("check2")
>>> ex.X.shape, ex.N, round(float(ex.w0 @ ex.w0), 12)
((3, 3), 4, 1.0)
>>> ex.settings
{'activation': 'square', 'N': 4, 'depth': 2, 'loss': 'square'}
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from rmtfl._results import Result

__all__ = ["flow_example", "FlowExample", "FLOW_EXAMPLES"]

_X5 = np.array([[1.0, 0.2, -0.5], [0.5, -1.0, 0.3], [-0.3, 0.4, 1.1], [0.8, 0.1, -0.2], [0.2, 0.9, 0.4]])
_Y5 = np.array([1.0, -0.5, 0.8, 0.3, -0.2])
_A0 = np.array([0.5, -0.4, 0.3, 0.2])
_W0 = np.array([[0.3, 0.4, -0.2], [0.5, -0.1, 0.3], [-0.2, 0.3, 0.4], [0.1, -0.3, -0.5]])

FLOW_EXAMPLES = ("check1", "check2", "square5", "relu2", "deep", "logistic", "relu")


def _unit(v):
    v = np.asarray(v, dtype=float)
    return v / np.linalg.norm(v)


def _cos_direction(P: int):
    return _unit(np.cos(1.3 * np.arange(P) + 0.4))


@dataclass(frozen=True)
class FlowExample(Result):
    """A built-in gradient-flow data set with its network, loss and initial direction.

    ``X`` (n, d), ``y`` (n,); the network ``activation``, ``N``, ``depth``; ``loss`` (summed);
    ``w0`` (packed, unit norm, docs/conventions.md §9); ``escape_loss`` = the loss level used as
    the escape threshold (``None`` if the example has none); ``references`` = values quoted
    by docs/theory/gradient_flow.md §14 (empty if none).
    """

    name: str
    X: np.ndarray
    y: np.ndarray
    activation: str
    N: int
    w0: np.ndarray
    depth: int = 2
    loss: str = "square"
    escape_loss: float | None = None
    references: dict = field(default_factory=dict)

    @property
    def settings(self) -> dict:
        """``{"activation", "N", "depth", "loss"}``: keyword arguments for ``ncf_kkt``, ``escape_time``, ...."""
        return {"activation": self.activation, "N": self.N, "depth": self.depth, "loss": self.loss}


def flow_example(name: str) -> FlowExample:
    """The example ``name`` (one of :data:`FLOW_EXAMPLES`), with fresh arrays.

    Parameters
    ----------
    name : str
        One of ``check1``, ``check2``, ``square5``, ``relu2``, ``deep``, ``logistic``, ``relu``
        (module docstring; data of docs/theory/gradient_flow.md §14).

    Returns
    -------
    FlowExample

    Examples
    --------
    >>> flow_example("deep").settings
    {'activation': 'square', 'N': 4, 'depth': 3, 'loss': 'square'}
    """
    w2 = _unit(np.r_[_A0, _W0.ravel()])
    if name == "check1":
        return FlowExample(name, _X5.copy(), _Y5.copy(), "identity", 1, _unit([0.3, -0.2, 0.7, 0.5]),
                           escape_loss=(1.01 + 0.6559876) / 2,
                           references={"N*": 0.5632717, "gamma": 0.571976, "slope": 0.887671,
                                       "t_esc": {"1e-4": 8.38846, "1e-6": 12.47634, "1e-8": 16.56422},
                                       "final_loss": 0.6559876,
                                       "source": "docs/theory/gradient_flow.md §14 Check 1"})
    if name == "check2":
        return FlowExample(name, np.eye(3), np.array([1.0, -0.5, -0.3]), "square", 4, w2, escape_loss=0.42,
                           references={"N*": 0.3849002, "T*": 2.3227165, "saddle_loss": 0.17,
                                       "delta_t_esc": {"1e-3": 2.321927, "1e-4": 2.322638, "1e-5": 2.322709},
                                       "source": "docs/theory/gradient_flow.md §14 Check 2"})
    if name == "square5":
        return FlowExample(name, _X5.copy(), _Y5.copy(), "square", 4, w2)
    if name == "relu2":
        return FlowExample(name, _X5.copy(), _Y5.copy(), "relu^2", 4, w2)
    if name == "relu":
        return FlowExample(name, _X5.copy(), _Y5.copy(), "relu", 4, w2)
    if name == "deep":
        return FlowExample(name, _X5.copy(), _Y5.copy(), "square", 4, _cos_direction(3 * 4 + 4 * 4 + 4), depth=3)
    if name == "logistic":
        return FlowExample(name, np.diag([1.5, 1.0, 1.0]), np.array([1.0, -1.0, -1.0]), "square", 3,
                           _cos_direction(3 * 4), loss="logistic",
                           references={"saddle_loss": 2 * np.log(2.0), "at_infinity": True})
    raise ValueError(f"name must be one of the examples {list(FLOW_EXAMPLES)}, got {name!r}")
