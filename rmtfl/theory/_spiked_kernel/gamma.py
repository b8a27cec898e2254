"""The weight covariance ``Gamma`` of the random-features kernel: ``A I + B v v^T`` or a dense PSD matrix.

``Gamma`` is a ``(d, d)`` PSD matrix, a scalar ``A`` (``Gamma = A I``), a tuple
``(A, B, v)`` (``Gamma = A I + B v v^T`` with ``v`` normalised to unit length;
``d x d`` is never formed) or a :class:`SpikedGamma` (docs/conventions.md §7,
docs/theory/spiked_kernel.md §1.3).  :func:`as_gamma` validates any of them and
:func:`apply_gamma` forms ``X Gamma``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from rmtfl._results import Result
from rmtfl._validate import check_finite_array, check_int, check_nonnegative

__all__ = ["SpikedGamma", "as_gamma", "apply_gamma"]


@dataclass(frozen=True)
class SpikedGamma(Result):
    """``Gamma = A I_d + B v v^T`` stored as ``(A, B, v)`` with ``|v| = 1`` (never a dense ``d x d``).

    The weight covariance of the one-step law (docs/conventions.md §7, docs/theory/spiked_kernel.md §1.3);
    ``v`` is normalised on construction and ``b = B/A`` is the spike ratio.

    Examples
    --------
    >>> G = SpikedGamma(0.5, 2.0, np.array([3.0, 4.0]))
    >>> G.apply(np.eye(2)).round(3).tolist()
    [[1.22, 0.96], [0.96, 1.78]]
    """

    A: float
    B: float
    v: np.ndarray = field(repr=False)

    def __post_init__(self):
        A = check_nonnegative("A", self.A)
        B = check_nonnegative("B", self.B)
        v = check_finite_array("v (spike direction)", self.v, ndim=1).astype(float)
        nv = float(np.linalg.norm(v))
        if nv == 0:
            raise ValueError("v (spike direction) must be non-zero")
        v = v / nv
        v.setflags(write=False)
        object.__setattr__(self, "A", A)
        object.__setattr__(self, "B", B)
        object.__setattr__(self, "v", v)

    @property
    def d(self) -> int:
        return int(self.v.shape[0])

    @property
    def b(self) -> float:
        """Spike-to-bulk ratio ``B/A`` (``inf`` when ``A = 0``)."""
        return self.B / self.A if self.A > 0 else math.inf

    def apply(self, X):
        """``X Gamma`` for ``X`` of shape ``(n, d)`` (or ``(d,)``)."""
        X = np.asarray(X, dtype=float)
        return self.A * X + self.B * np.multiply.outer(X @ self.v, self.v)

    def dense(self) -> np.ndarray:
        """The dense matrix (for tests and small ``d`` only)."""
        return self.A * np.eye(self.d) + self.B * np.outer(self.v, self.v)

    def to_dict(self) -> dict:
        """``{"A", "B", "v"}`` as JSON values (``v`` included although it is left out of the repr)."""
        return {"A": self.A, "B": self.B, "v": self.v.tolist()}


#: The largest input dimension ``d`` :func:`as_gamma` takes (a spike direction of ``d`` floats is 800 MB there).
MAX_D = 10**8


def as_gamma(gamma, *, d: int):
    """Validate ``gamma`` for inputs of dimension ``d`` (an integer in ``[1, 1e8]``); return a :class:`SpikedGamma` or a
    dense array.

    ``gamma`` is a ``(d, d)`` PSD matrix, a scalar ``A`` (``Gamma = A I``), a tuple ``(A, B, v)`` or a
    :class:`SpikedGamma` (docs/conventions.md §7).  Raises ``ValueError`` for a non-PSD or
    non-symmetric matrix, a wrong shape, negative ``A``/``B`` or a spike direction of the wrong length.

    Examples
    --------
    >>> as_gamma((1.0, 2.0, np.array([0.0, 2.0])), d=2).v.tolist()
    [0.0, 1.0]
    """
    d = check_int("d", d, lo=1, hi=MAX_D)
    if isinstance(gamma, SpikedGamma):
        g = gamma
    elif isinstance(gamma, tuple):
        if len(gamma) != 3:
            raise ValueError(f"gamma as a tuple must be (A, B, v), got {len(gamma)} entries")
        g = SpikedGamma(*gamma)
    elif np.ndim(gamma) == 0:
        e0 = np.zeros(d)
        e0[0] = 1.0                  # any unit vector: B = 0
        return SpikedGamma(check_nonnegative("gamma (scalar A)", gamma), 0.0, e0)
    else:
        G = check_finite_array("gamma", gamma, ndim=2, dtype_kind="f")
        if G.shape != (d, d):
            raise ValueError(f"gamma must have shape ({d}, {d}) to match the inputs, got {G.shape}")
        if not np.allclose(G, G.T, rtol=1e-10, atol=1e-12 * max(1.0, float(np.abs(G).max()))):
            raise ValueError("gamma must be symmetric")
        lo = float(np.linalg.eigvalsh(G)[0])
        if lo < -1e-10 * max(1.0, float(np.abs(G).max())):
            raise ValueError(f"gamma must be positive semi-definite; its smallest eigenvalue is {lo:.3g}")
        return G
    if g.d != d:
        raise ValueError(f"spike direction v has length {g.d}, but the inputs have dimension d={d}")
    return g


def apply_gamma(gamma, X):
    """``X Gamma`` for a validated ``gamma`` (:class:`SpikedGamma` or a dense array from :func:`as_gamma`).

    Examples
    --------
    >>> apply_gamma(as_gamma(2.0, d=2), np.array([[1.0, 3.0]])).tolist()
    [[2.0, 6.0]]
    """
    return gamma.apply(X) if isinstance(gamma, SpikedGamma) else X @ gamma
