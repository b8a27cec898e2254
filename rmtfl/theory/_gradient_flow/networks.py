"""Homogeneous networks for the gradient-flow part: architectures and packing.

Conventions (docs/conventions.md §9, docs/theory/gradient_flow.md §1–§2): data ``X`` has one
row per sample; the hidden width is ``N`` (the ``h`` of docs/theory/gradient_flow.md §1);
two-layer nets ``H(x) = sum_j a_j sigma(<w_j, x>)`` are packed
as ``(a, W)`` (``a`` first, then ``W`` row-major); deep nets
``H(x) = W_K sigma(W_{K-1} ... sigma(W_1 x))`` as ``(vec W_1, ..., vec W_K)``
(row-major); the quadratic model ``sum_j <w_j, x>^2`` as ``W`` row-major.
The loss, its gradient and the NCF of data on these architectures are in
:mod:`rmtfl.theory._gradient_flow.problem`.
The homogeneity degree ``L`` is computed from the structure and the
activation's homogeneity ``p`` (two-layer ``p + 1``; ``K`` layers
``1 + p + ... + p^(K-1)``; quadratic model 2), never typed in.

Examples
--------
>>> homogeneity_degree(TwoLayer(3, 4, "square"))
3
>>> homogeneity_degree(QuadraticModel(3, 2))
2
>>> homogeneity_degree(([3, 4, 4, 1], "square"))
7
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rmtfl._results import Result
from rmtfl._validate import check_int
from .._classical.activations import Activation, get_activation

__all__ = [
    "TwoLayer", "QuadraticModel", "FeedForward", "ZeroPreservingSet",
    "homogeneity_degree", "zero_preserving", "make_architecture", "homogeneous_activation",
]


# ------------------------------------------------------------------ activation
def homogeneous_activation(activation) -> Activation:
    """Resolve ``activation`` (a name or an :class:`~rmtfl.theory.Activation`) and check that it is
    positively ``p``-homogeneous with ``p >= 1`` (docs/theory/gradient_flow.md §1).

    Raises ``ValueError`` for a non-homogeneous activation (tanh, erf, ...).

    >>> homogeneous_activation("relu^2").homogeneity
    2.0
    """
    act = get_activation(activation)
    p = act.homogeneity
    if p is None or not p >= 1:
        raise ValueError(
            f"activation must be positively p-homogeneous with p >= 1 (identity, square, relu, "
            f"relu^p, ...); {act.name!r} is not (homogeneity={p})")
    return act


def _sigma_pair(act: Activation):
    """Fast numpy ``(sigma, sigma')`` for the activations the flow uses."""
    name = act.name
    if name in ("identity", "linear"):
        return (lambda z: z), (lambda z: np.ones_like(z))
    if name == "square":
        return (lambda z: z * z), (lambda z: 2.0 * z)
    if name == "relu":
        return (lambda z: np.maximum(z, 0.0)), (lambda z: (z > 0) * 1.0)
    if name.startswith("relu^"):
        p = int(name[5:])
        if p == 2:
            return (lambda z: np.square(np.maximum(z, 0.0))), (lambda z: 2.0 * np.maximum(z, 0.0))
        return (lambda z: np.maximum(z, 0.0) ** p), (lambda z: p * np.maximum(z, 0.0) ** (p - 1))
    return act.fn, (lambda z: act.derivative(1, z))


# --------------------------------------------------------------- architectures
@dataclass(frozen=True)
class ZeroPreservingSet(Result):
    """A zero-preserving coordinate subset (docs/theory/gradient_flow.md §10).

    ``kind`` is ``"pair"`` (incoming row + outgoing column of a hidden unit) or
    ``"row"`` (incoming row alone); ``indices`` index the packed vector.
    """

    layer: int
    unit: int
    kind: str
    indices: tuple


class _Base:
    """Shared helpers; subclasses define ``forward``/``vjp``/``unpack``."""

    n_outputs = 1

    def _split(self, w):
        w = np.asarray(w, dtype=float)
        if w.shape != (self.n_params,):
            raise ValueError(f"w must have shape ({self.n_params},) for {self.describe()}, got {w.shape}")
        return w


class TwoLayer(_Base):
    """``H(x) = sum_j a_j sigma(<w_j, x>)`` with ``N`` hidden units, packed ``(a, W)``; degree ``p + 1``
    (docs/conventions.md §9).

    ``sigma`` and ``sigma_prime`` are fast numpy versions of the activation and its derivative.

    >>> net = TwoLayer(2, 1, "identity")
    >>> float(net.forward(np.array([[1.0, 2.0]]), np.array([2.0, 1.0, 1.0]))[0])
    6.0
    """

    def __init__(self, d: int, N: int, activation):
        self.d = check_int("d", d, 1)
        self.N = check_int("N", N, 1)
        self.act = homogeneous_activation(activation)
        self.p = float(self.act.homogeneity)
        self.sigma, self.sigma_prime = _sigma_pair(self.act)
        self.n_params = self.N * (1 + self.d)

    @property
    def degree(self) -> int:
        return _as_int(self.p + 1)

    def describe(self) -> str:
        return f"two-layer(d={self.d}, N={self.N}, sigma={self.act.name})"

    def unpack(self, w):
        w = self._split(w)
        return w[: self.N], w[self.N:].reshape(self.N, self.d)

    def pack(self, a, W):
        return np.concatenate([np.ravel(a), np.ravel(W)]).astype(float)

    def forward(self, X, w):
        a, W = self.unpack(w)
        return self.sigma(X @ W.T) @ a

    def vjp(self, X, w, g):
        """``sum_i g_i grad_w H(x_i; w)``."""
        a, W = self.unpack(w)
        Z = X @ W.T
        ga = self.sigma(Z).T @ g
        gW = ((g[:, None] * self.sigma_prime(Z)) * a[None, :]).T @ X
        return np.concatenate([ga, gW.ravel()])

    def unit_norms(self, w):
        a, W = self.unpack(w)
        return np.sqrt(a * a + np.sum(W * W, axis=1))

    def conserved(self, w):
        """``|w_j|^2 - p a_j^2`` per neuron (constant along the flow, docs/theory/gradient_flow.md §6)."""
        a, W = self.unpack(w)
        return np.sum(W * W, axis=1) - self.p * a * a

    def unit_slices(self):
        """Packed indices of neuron ``j`` (``a_j`` and ``w_j``)."""
        return [np.r_[j, self.N + j * self.d + np.arange(self.d)] for j in range(self.N)]

    def canonical(self, w):
        """Canonical representative: sign fixed per neuron, neurons sorted by mass."""
        a, W = (x.copy() for x in self.unpack(w))
        if self.act.name in ("identity", "linear"):
            # hidden-space rotations: [a W] -> S V^T (rows ordered by singular value)
            U, S, Vt = np.linalg.svd(np.column_stack([a, W]), full_matrices=False)
            J = np.zeros((self.N, 1 + self.d))
            J[: S.size] = S[:, None] * Vt
            a, W = J[:, 0], J[:, 1:]
        for j in range(self.N):
            v = np.r_[a[j], W[j]] if self.act.parity == -1 else W[j]
            if v.size and v[np.argmax(np.abs(v))] < 0:
                if self.act.parity == 1:
                    W[j] = -W[j]
                elif self.act.parity == -1 and _is_odd_power(self.p):
                    a[j], W[j] = -a[j], -W[j]
        order = np.lexsort((np.round(-a, 10), np.round(-np.sqrt(a * a + np.sum(W * W, 1)), 10)))
        return self.pack(a[order], W[order])


class QuadraticModel(_Base):
    """``H(x) = sum_j <w_j, x>^2`` with ``N`` rows ``w_j``, packed ``W`` row-major; degree 2
    (docs/theory/gradient_flow.md §5.1).

    >>> QuadraticModel(3, 2).n_params
    6
    """

    def __init__(self, d: int, N: int):
        self.d = check_int("d", d, 1)
        self.N = check_int("N", N, 1)
        self.n_params = self.N * self.d
        self.p = 2.0

    degree = 2

    def describe(self) -> str:
        return f"quadratic-model(d={self.d}, N={self.N})"

    def unpack(self, w):
        return self._split(w).reshape(self.N, self.d)

    def pack(self, W):
        return np.ravel(W).astype(float)

    def forward(self, X, w):
        Z = X @ self.unpack(w).T
        return np.sum(Z * Z, axis=1)

    def vjp(self, X, w, g):
        Z = X @ self.unpack(w).T
        return (2.0 * (g[:, None] * Z).T @ X).ravel()

    def unit_norms(self, w):
        return np.linalg.norm(self.unpack(w), axis=1)

    def conserved(self, w):
        return np.zeros(0)

    def unit_slices(self):
        return [j * self.d + np.arange(self.d) for j in range(self.N)]

    def canonical(self, w):
        W = self.unpack(w)
        U, S, Vt = np.linalg.svd(W, full_matrices=False)  # W -> S V^T (rotation invariance)
        J = np.zeros_like(W)
        J[: S.size] = S[:, None] * Vt
        for j in range(self.N):
            if J[j, np.argmax(np.abs(J[j]))] < 0:
                J[j] = -J[j]
        return self.pack(J)


class FeedForward(_Base):
    """``H(x) = W_K sigma(... sigma(W_1 x))`` with ``dims = [d, h_1, ..., c]``.

    Packed ``(vec W_1, ..., vec W_K)`` row-major, ``W_l`` of shape
    ``(dims[l], dims[l-1])``; degree ``1 + p + ... + p^(K-1)``.

    >>> FeedForward([3, 4, 4, 1], "square").degree
    7
    """

    def __init__(self, dims, activation):
        dims = [check_int("dims[k]", k, 1) for k in dims]
        if len(dims) < 3:
            raise ValueError(f"dims must list at least [d, hidden, outputs], got {dims}")
        self.dims = tuple(dims)
        self.d, self.K = dims[0], len(dims) - 1
        self.n_outputs = dims[-1]
        self.act = homogeneous_activation(activation)
        self.p = float(self.act.homogeneity)
        self.sigma, self.sigma_prime = _sigma_pair(self.act)
        self.shapes = [(dims[k + 1], dims[k]) for k in range(self.K)]
        self.offsets = np.cumsum([0] + [r * c for r, c in self.shapes])
        self.n_params = int(self.offsets[-1])

    @property
    def degree(self) -> int:
        return _as_int(sum(self.p ** k for k in range(self.K)))

    def describe(self) -> str:
        return f"feed-forward(dims={list(self.dims)}, sigma={self.act.name})"

    def unpack(self, w):
        w = self._split(w)
        return [w[self.offsets[k]: self.offsets[k + 1]].reshape(s) for k, s in enumerate(self.shapes)]

    def pack(self, *Ws):
        return np.concatenate([np.ravel(M) for M in Ws]).astype(float)

    def _forward_all(self, X, Ws):
        hs, zs = [X], []
        for k, M in enumerate(Ws):
            z = hs[-1] @ M.T
            zs.append(z)
            hs.append(self.sigma(z) if k < self.K - 1 else z)
        return hs, zs

    def forward(self, X, w):
        out = self._forward_all(X, self.unpack(w))[0][-1]
        return out[:, 0] if self.n_outputs == 1 else out

    def vjp(self, X, w, g):
        Ws = self.unpack(w)
        hs, zs = self._forward_all(X, Ws)
        G = g.reshape(X.shape[0], self.n_outputs)
        grads = [None] * self.K
        for k in range(self.K - 1, -1, -1):
            grads[k] = G.T @ hs[k]
            if k:
                G = (G @ Ws[k]) * self.sigma_prime(zs[k - 1])
        return np.concatenate([m.ravel() for m in grads])

    def unit_norms(self, w):
        """``nu_{l,k} = sqrt(|W_l[k,:]|^2 + |W_{l+1}[:,k]|^2)`` for every hidden unit (layer by layer)."""
        Ws = self.unpack(w)
        return np.concatenate([np.sqrt(np.sum(Ws[k] ** 2, 1) + np.sum(Ws[k + 1] ** 2, 0))
                               for k in range(self.K - 1)])

    def conserved(self, w):
        Ws = self.unpack(w)
        return np.concatenate([np.sum(Ws[k] ** 2, 1) - self.p * np.sum(Ws[k + 1] ** 2, 0)
                               for k in range(self.K - 1)])

    def unit_slices(self):
        out = []
        for k in range(self.K - 1):
            r, c = self.shapes[k]
            r2, c2 = self.shapes[k + 1]
            for u in range(r):
                row = self.offsets[k] + u * c + np.arange(c)
                col = self.offsets[k + 1] + np.arange(r2) * c2 + u
                out.append(np.r_[row, col])
        return out

    def canonical(self, w):
        Ws = [M.copy() for M in self.unpack(w)]
        for k in range(self.K - 1):
            for u in range(Ws[k].shape[0]):
                v = Ws[k][u]
                if v[np.argmax(np.abs(v))] < 0:
                    if self.act.parity == 1:
                        Ws[k][u] = -v
                    elif self.act.parity == -1 and _is_odd_power(self.p):
                        Ws[k][u], Ws[k + 1][:, u] = -v, -Ws[k + 1][:, u]
            nu = np.sqrt(np.sum(Ws[k] ** 2, 1) + np.sum(Ws[k + 1] ** 2, 0))
            order = np.argsort(-np.round(nu, 10), kind="stable")
            Ws[k], Ws[k + 1] = Ws[k][order], Ws[k + 1][:, order]
        return self.pack(*Ws)


def _as_int(x: float):
    return int(round(x)) if abs(x - round(x)) < 1e-12 else float(x)


def _is_odd_power(p: float) -> bool:
    return abs(p - round(p)) < 1e-12 and int(round(p)) % 2 == 1


def make_architecture(d: int, *, activation, N: int, depth: int = 2):
    """Two-layer (``depth=2``), deep ``[d, N, ..., N, 1]`` (``depth=K``), or
    the quadratic model (``activation="quadratic"``, ``depth=2``); docs/conventions.md §9.

    >>> make_architecture(3, activation="square", N=4, depth=3).describe()
    'feed-forward(dims=[3, 4, 4, 1], sigma=square)'
    """
    depth = check_int("depth", depth, 2)
    if isinstance(activation, str) and activation.strip().lower() == "quadratic":
        if depth != 2:
            raise ValueError(f"depth must be 2 for the quadratic model, got {depth}")
        return QuadraticModel(d, N)
    if depth == 2:
        return TwoLayer(d, N, activation)
    return FeedForward([d] + [check_int("N", N, 1)] * (depth - 1) + [1], activation)


def _as_architecture(architecture, activation=None):
    if isinstance(architecture, (TwoLayer, QuadraticModel, FeedForward)):
        return architecture
    if isinstance(architecture, str) and architecture.strip().lower() == "quadratic":
        return QuadraticModel(1, 1)
    if isinstance(architecture, tuple) and len(architecture) == 2 and activation is None:
        architecture, activation = architecture
    if isinstance(architecture, (list, tuple)) and activation is not None:
        dims = list(architecture)
        if len(dims) == 3 and dims[-1] == 1:
            return TwoLayer(dims[0], dims[1], activation)
        return FeedForward(dims, activation)
    raise ValueError("architecture must be a TwoLayer/QuadraticModel/FeedForward, 'quadratic', "
                     f"or (dims, activation) with dims=[d, N, ..., c]; got {architecture!r}")


def homogeneity_degree(architecture) -> int:
    """Degree ``L`` with ``H(x; c w) = c^L H(x; w)``, computed from the structure
    (docs/conventions.md §9, docs/theory/gradient_flow.md §1).

    Parameters
    ----------
    architecture : TwoLayer, QuadraticModel, FeedForward, ``"quadratic"`` or ``(dims, activation)``
        ``dims = [d, N, 1]`` is the two-layer net, longer lists are deep nets.

    Returns
    -------
    int
        ``p + 1`` (two-layer), ``1 + p + ... + p^(K-1)`` (``K`` layers), 2 (quadratic model).

    Examples
    --------
    >>> homogeneity_degree(([3, 4, 1], "relu^3"))
    4
    """
    return _as_architecture(architecture).degree


def zero_preserving(architecture, *, activation=None) -> list[ZeroPreservingSet]:
    """Zero-preserving subsets of a feed-forward net (docs/theory/gradient_flow.md §10).

    For every hidden unit: the pair (incoming row, outgoing column) when
    ``sigma(0) = 0``; the incoming row alone when also ``sigma'(0) = 0``.  The
    activation values at 0 are evaluated, not looked up.  Indices refer to the packed
    parameter vector of docs/conventions.md §9.

    Parameters
    ----------
    architecture : an architecture object, ``"quadratic"``, or ``dims`` (with ``activation``)
    activation : the activation when ``architecture`` is a list of sizes.

    Returns
    -------
    list of ZeroPreservingSet

    >>> [s.kind for s in zero_preserving([2, 1, 1], activation="square")]
    ['pair', 'row']
    >>> [s.kind for s in zero_preserving([2, 1, 1], activation="identity")]
    ['pair']
    """
    arch = _as_architecture(architecture, activation)
    if isinstance(arch, QuadraticModel):  # each w_j is a unit with sigma = z^2, no outgoing weight
        return [ZeroPreservingSet(1, j, "row", tuple(int(i) for i in s)) for j, s in enumerate(arch.unit_slices())]
    z0 = np.zeros(1)
    s0, ds0 = float(arch.sigma(z0)[0]), float(np.asarray(arch.sigma_prime(z0)).ravel()[0])
    out = []
    if isinstance(arch, TwoLayer):
        layers = [(1, arch.N, lambda j: np.r_[arch.N + j * arch.d + np.arange(arch.d)])]
    else:
        layers = []
        for k in range(arch.K - 1):
            r, c = arch.shapes[k]
            layers.append((k + 1, r, (lambda kk, cc: lambda u: arch.offsets[kk] + u * cc + np.arange(cc))(k, c)))
    slices = arch.unit_slices()
    idx = 0
    for layer, count, row_of in layers:
        for u in range(count):
            if s0 == 0.0:
                out.append(ZeroPreservingSet(layer, u, "pair", tuple(int(i) for i in slices[idx])))
                if ds0 == 0.0:
                    out.append(ZeroPreservingSet(layer, u, "row", tuple(int(i) for i in row_of(u))))
            idx += 1
    return out
