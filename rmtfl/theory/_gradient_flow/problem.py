"""The gradient-flow problem: data + architecture + loss, its gradient and the NCF (docs/theory/gradient_flow.md §1–§2).

Conventions (docs/conventions.md §9, docs/theory/gradient_flow.md §1–§2): data ``X`` has one
row per sample; parameters are packed as in :mod:`rmtfl.theory._gradient_flow.networks`.
Losses are **summed** over samples (``reduction="sum"``; ``"mean"`` divides
by ``n``); ``ebar = -d/dp loss(0, y)``.  The NCF is
``N(u) = sum_i c_i ebar_i H(x_i; u)`` with ``c_i = 1`` (sum) or ``1/n`` (mean),
so that ``grad L(w) = -grad N(w) + O(|w|^(2L-1))`` in both reductions.
The homogeneity degree ``L`` comes from the architecture
(:func:`~rmtfl.theory.homogeneity_degree`), never typed in.

Examples
--------
>>> ebar([1.0, -1.0], loss="logistic").tolist()
[0.5, -0.5]
>>> pb = make_problem(np.eye(2), [1.0, -1.0], activation="identity", N=1, loss="logistic")
>>> round(float(pb.loss_at_zero() / np.log(2.0)), 12), pb.ncf(np.array([1.0, 1.0, 0.0]))  # 2 log 2; N(u)
(2.0, 0.5)
"""
from __future__ import annotations

import numpy as np

from rmtfl._validate import (check_array, check_choice, check_finite_array, check_in_range, check_int, check_magnitude,
                             check_memory, check_no_overflow, check_positive)
from .networks import make_architecture

__all__ = ["FlowProblem", "ebar", "make_problem", "check_direction", "LOSSES"]

LOSSES = ("square", "logistic")


def ebar(y, *, loss: str = "square", logistic_scale: float = 1.0):
    """The label signal ``ebar_i = -d/dp loss(0, y_i)`` (docs/conventions.md §9).

    Parameters
    ----------
    y : array of targets.
    loss : ``"square"`` (``ebar = y``) or ``"logistic"`` (``ebar = s_log y / 2``).
    logistic_scale : ``s_log > 0`` of the logistic loss ``s_log ln(1 + e^(-p y))``.

    Returns
    -------
    numpy.ndarray
        ``ebar`` with the shape of ``y`` (per sample; not divided by ``n``).

    Examples
    --------
    >>> ebar([2.0], loss="square").tolist()
    [2.0]
    """
    check_choice("loss", loss, LOSSES)
    s = check_in_range("logistic_scale", logistic_scale, 0.0, 1e100, lo_open=True)
    y = check_array("y", y, ndim=(0, 1, 2), min_size=1)  # per sample, or (n, outputs)
    with np.errstate(over="ignore"):
        out = y.astype(float) if loss == "square" else s * y / 2.0
    return check_no_overflow("y", out)


class FlowProblem:
    """Data + architecture + loss: loss, gradient, NCF and its derivatives.

    ``loss(w) = sum_i c_i l(H(x_i; w), y_i)`` with ``l = (p-y)^2/2`` or
    ``s_log log(1 + e^{-p y})`` (stable form), ``c_i = 1`` or ``1/n`` (docs/conventions.md §9).
    Built by :func:`make_problem`; ``arch`` is an architecture object of
    :mod:`rmtfl.theory._gradient_flow.networks`.
    """

    def __init__(self, X, y, arch, *, loss="square", reduction="sum", logistic_scale=1.0):
        self.loss_name = check_choice("loss", loss, LOSSES)
        self.reduction = check_choice("reduction", reduction, ("sum", "mean"))
        self.s_log = check_positive("logistic_scale", logistic_scale)
        X = check_magnitude("X", check_array("X", X, ndim=2, min_size=1), *DATA_RANGE)
        y = check_magnitude("y", check_array("y", y, ndim=(1, 2), min_size=1), *DATA_RANGE)
        c = arch.n_outputs
        if X.shape[1] != arch.d:
            raise ValueError(f"X must have {arch.d} columns (input dimension of the net), got shape {X.shape}")
        want = (X.shape[0],) if c == 1 else (X.shape[0], c)
        if y.shape != want and not (c == 1 and y.shape == (X.shape[0], 1)):
            raise ValueError(f"y must have shape {want} to match X with {X.shape[0]} rows, got {y.shape}")
        self.X, self.y, self.arch = X, y.reshape(want), arch
        self.n = X.shape[0]
        self.scale = 1.0 if reduction == "sum" else 1.0 / self.n
        self.ebar = self.scale * ebar(self.y, loss=loss, logistic_scale=logistic_scale)
        self.degree = arch.degree
        self.P = arch.n_params

    # loss --------------------------------------------------------------------
    def _dl(self, out):
        if self.loss_name == "square":
            return out - self.y
        t = out * self.y
        return -self.s_log * 0.5 * self.y * (1.0 - np.tanh(0.5 * t))

    def loss(self, w) -> float:
        out = self.arch.forward(self.X, w)
        if self.loss_name == "square":
            return float(self.scale * 0.5 * np.sum((out - self.y) ** 2))
        return float(self.scale * self.s_log * np.sum(np.logaddexp(0.0, -out * self.y)))

    def loss_at_zero(self) -> float:
        return self.loss(np.zeros(self.P))

    def grad(self, w):
        """``grad L(w)`` (analytic)."""
        return self.scale * self.arch.vjp(self.X, w, self._dl(self.arch.forward(self.X, w)))

    def rhs(self):
        """A fast closure ``f(t, w) = -grad L(w)`` for ODE solvers."""
        X, arch, dl, sc = self.X, self.arch, self._dl, -self.scale
        return lambda t, w: sc * arch.vjp(X, w, dl(arch.forward(X, w)))

    # NCF ---------------------------------------------------------------------
    def ncf(self, u) -> float:
        out = self.arch.forward(self.X, u)
        return float(np.sum(self.ebar * out))

    def ncf_grad(self, u):
        return self.arch.vjp(self.X, u, self.ebar)

    def ncf_hessian(self, u, eps=None):
        """``grad^2 N(u)`` by central differences of the analytic gradient (symmetrised)."""
        if eps is None:
            act = getattr(self.arch, "act", None)
            eps = 1e-5 if (act is not None and not act.smooth) else 1e-6
        u = np.asarray(u, dtype=float)
        Hm = np.empty((self.P, self.P))
        for k in range(self.P):
            e = np.zeros(self.P)
            e[k] = eps
            Hm[:, k] = (self.ncf_grad(u + e) - self.ncf_grad(u - e)) / (2 * eps)
        return 0.5 * (Hm + Hm.T)

    def kkt_residual(self, u) -> float:
        """``|grad N(u) - L N(u) u|`` at the unit vector ``u``."""
        return float(np.linalg.norm(self.ncf_grad(u) - self.degree * self.ncf(u) * u))


def make_problem(X, y, *, activation, N, loss="square", depth=2, reduction="sum",
                 logistic_scale=1.0) -> FlowProblem:
    """Validate the inputs and build the :class:`FlowProblem` (docs/conventions.md §9).

    Parameters
    ----------
    X : array (n, d)
        Data, one row per sample.
    y : array (n,)
        Targets.
    activation : str or Activation
        A positively homogeneous activation (identity, square, relu, relu^p, ...), or
        ``"quadratic"`` for the quadratic model ``sum_j <w_j, x>^2``.
    N : int
        Hidden width (units per hidden layer).
    loss : ``"square"`` or ``"logistic"``; summed (``reduction="sum"``) or averaged (``"mean"``).
    depth : number of weight layers (2 = two-layer).
    logistic_scale : ``s_log`` of the logistic loss.

    Returns
    -------
    FlowProblem

    Examples
    --------
    >>> pb = make_problem(np.eye(2), [1.0, 0.0], activation="identity", N=1)
    >>> pb.degree, pb.P
    (2, 3)
    """
    X = check_array("X", X, ndim=2, min_size=1)
    N = check_int("N", N, 1, N_MAX)
    depth = check_int("depth", depth, 2, DEPTH_MAX)
    # parameters ~ N (d + (depth - 2) N + 1); the KKT/saddle searches hold a few P x P matrices
    P = N * (X.shape[1] + (depth - 2) * N + 1)
    check_memory("N", 8.0 * 4 * float(P) ** 2, f"the {P}-parameter flow problem's dense Hessians")
    arch = make_architecture(X.shape[1], activation=activation, N=N, depth=depth)
    return FlowProblem(X, y, arch, loss=loss, reduction=reduction, logistic_scale=logistic_scale)


#: Largest magnitude of the entries of ``X`` and of ``y`` (or all zero): the flow's time scale
#: goes as ``|X|^-L |y|^-1`` and its loss as ``|X|^(2L)``; rescale data beyond (docs/reliability.md §2).
DATA_RANGE = (1e-30, 1e30)

#: Bounds on the network size and on search restarts (the searches are dense in the parameters).
N_MAX = 100_000
DEPTH_MAX = 64
RESTARTS_MAX = 100_000


def check_direction(w0, P: int) -> np.ndarray:
    """Validate ``w0`` (shape ``(P,)``, finite, non-zero) and return ``w0/|w0|``."""
    w0 = check_finite_array("w0", w0, ndim=1)
    if w0.shape != (P,):
        raise ValueError(f"w0 must have shape ({P},) (packed parameters), got {w0.shape}")
    nrm = float(np.linalg.norm(w0))
    if nrm == 0.0:
        raise ValueError("w0 must be non-zero (the flow from w = 0 never moves)")
    return w0 / nrm
