"""The batch's extreme columns as one coupled group in the single-sample law (docs/theory/two_step.md §8.3, "The
extreme samples as one group").

The single-sample law (:func:`~rmtfl.theory._two_step.sample_order.tail_law`) treats each column the bulk leaves out
on its own: sample ``i`` stands out beyond ``x = s^2`` when its strength ``T_ii(x)`` exceeds 1.  In a draw the
outliers are where an eigenvalue of the whole matrix ``T(x) = C^T (x - H_b H_b^T)^{-1} C`` over the batch's most
extreme columns is 1, and its off-diagonal entries, random with ``E[T_ik^2] = psi^2 E_j[v_ij v_kj tau_j(x)^2] / N``,
lift its top eigenvalues: a dozen columns just below their own threshold push one or two values out together.

Here ``T = D + E``: ``D`` the columns' strengths (each bin of the tail at its mean strength with its ``O(N^-1/2)``
Gaussian spread, weighted by its expected number of samples), ``E`` a Wigner matrix with that variance profile.  The
deterministic equivalent of ``D + E`` (the vector Dyson equation ``g_b = E_xi[1 / (q_b + sd_b xi - z - S_b)]``,
``S_b = sum_k w_k eps^2_bk g_k``, at ``z = 1 + i0``) gives its number of eigenvalues above 1 through the
log-determinant ``L = sum_b w_b E log(q_b + sd_b xi - z - S_b) + 1/2 sum_b w_b g_b S_b``: ``#(> 1) = K + Im L / pi``
(:func:`group_count`; ``tests/theory/two_step/test_sample_group.py`` checks it against sampled ``D + E``).
:func:`grouped_tail_law` puts that count into the law in place of the group's columns on their own.  Deterministic.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from scipy.linalg import lapack

from .sample_order import TAIL_MASS, SampleLaw, tail_law

__all__ = ["Coupling", "ScaledCoupling", "coupling_matrix", "group_count", "warm_group_count", "grouped_tail_law",
           "beyond_cut"]

#: Nodes of the Gaussian spread of a column's strength (probabilists' Gauss-Hermite).
_XI, _WXI = np.polynomial.hermite_e.hermegauss(16)
_WXI = _WXI / _WXI.sum()


class Coupling(NamedTuple):
    """The coupling variances ``e2 = U U^T`` held by their factor ``U`` (``B x r``): the group's ``e2`` is a sum over
    the ``r`` rows of the matrix, so with ``r`` below ``B`` its products cost ``2 B r`` instead of ``B^2``."""
    U: np.ndarray


def group_count(q, sd, w, e2, *, z: float = 1.0, eta_min: float = 1e-5) -> np.ndarray:
    """Expected number of eigenvalues of ``D + E`` above ``z``, per bin (module docstring): ``D`` holds ``w_b``
    columns of strength ``q_b + sd_b xi`` (``xi ~ N(0, 1)``), ``E`` is symmetric with independent centred entries,
    ``E[E_bk^2] = e2[b, k]`` (a ``B x B`` array, or its factor as :class:`Coupling`); a column is not coupled to
    itself (a bin of ``w_b > 1`` columns couples each to the other ``w_b - 1``; a bin of less than one column, a piece
    of a continuous tail, not within itself).

    Examples
    --------
    >>> import numpy as np
    >>> q = np.array([0.95, 0.9, 0.88, 0.85, 0.8, 0.8, 0.75, 0.7, 0.7, 0.65, 0.6, 0.55])
    >>> round(float(group_count(q, np.full(12, 0.03), np.ones(12), np.full((12, 12), 0.044**2)).sum()), 2)
    1.53
    """
    return _solve(q, sd, w, e2, z=z, eta_min=eta_min)[0]


def warm_group_count():
    """:func:`group_count` for a run of neighbouring groups (the same bins, their strengths moving a little from one
    call to the next, as along the law's grid of ``s``): each call starts the fixed point at ``Im z = eta_min`` from
    the columns' own law under the last call's self-energy ``S`` scaled to this one's couplings (where that does
    not settle, through :data:`WARM_LEVELS` from it), and goes back to the continuation in ``Im z`` from 1 where
    neither converges or stays in the upper half plane.  The same counts as :func:`group_count` to ``1e-8``
    (``tests/theory/two_step/test_sample_group.py``), 3 to 5 times faster along a law's grid."""
    last = {}

    def count(q, sd, w, e2, *, z: float = 1.0, eta_min: float = 1e-5):
        got = None
        start = last.get("S")
        if start is not None and start[0].shape == (2, np.size(q)):
            got = _solve(q, sd, w, e2, z=z, eta_min=eta_min, start=start)
        if got is None:             # a start that does not settle: by continuation (the columns alone would not)
            got = _solve(q, sd, w, e2, z=z, eta_min=eta_min, alone=start is None)
        last["S"] = got[1]
        return got[0]
    return count


class ScaledCoupling(NamedTuple):
    """The coupling variances ``e2 = V diag(c2) V^T`` of a group whose rows ``V`` (``B x r``) stay while the row
    weights ``c2`` move along a law's grid (:func:`_group_parts`): no factor to form at each ``s``, and its diagonal
    from ``VV = V * V``, computed once."""
    V: np.ndarray
    VV: np.ndarray
    c2: np.ndarray


def coupling_matrix(e2) -> np.ndarray:
    """The ``B x B`` coupling variances ``e2`` as a matrix, from the matrix itself, its :class:`Coupling` (``U U^T``)
    or its :class:`ScaledCoupling` (``V diag(c2) V^T``)."""
    if isinstance(e2, ScaledCoupling):
        V = np.asarray(e2.V, dtype=float)
        return (V * e2.c2) @ V.T
    if isinstance(e2, Coupling):
        U = np.asarray(e2.U, dtype=float)
        return U @ U.T
    return np.array(e2, dtype=float)


def _products(e2):
    """``(v -> v e2, diag(e2))`` for ``v`` of shape ``(..., B)``, from the matrix, its :class:`Coupling` or
    :class:`ScaledCoupling`."""
    if isinstance(e2, ScaledCoupling):
        V, c2 = e2.V, e2.c2
        return (lambda v: ((v @ V) * c2) @ V.T), e2.VV @ c2
    if isinstance(e2, Coupling):
        U = np.asarray(e2.U, dtype=float)
        return (lambda v: (v @ U) @ U.T), np.einsum("ij,ij->i", U, U)
    e2 = np.asarray(e2, dtype=float)
    return (lambda v: v @ e2), np.diagonal(e2).copy()       # e2 is symmetric


#: Anderson steps a start straight at ``eta_min`` gets before a continuation in ``Im z`` takes over (most that
#: settle take fewer than 20; past 35 the continuation through :data:`WARM_LEVELS` is the cheaper way: 2 % fewer
#: map evaluations than with 60 over 128 grouped calls of four activations at N = 1000 and 4000).
DIRECT = 35


#: A start straight at ``eta_min`` whose step is still above a tenth (of ``1 + max|g|``) after 15 Anderson steps
#: is given up for the continuation through :data:`WARM_LEVELS` (3 % fewer map evaluations over 128 grouped calls
#: of four activations at N = 1000 and 4000 than going on to :data:`DIRECT`).
STALL = (15, 0.1)


#: The levels of ``Im z`` a start that does not settle straight at ``eta_min`` is taken through before
#: ``eta_min`` (from the same start: where a column's strength has just crossed ``z``; half the iterations of
#: the continuation from 1).
WARM_LEVELS = (1e-3, 1e-4)


def _solve(q, sd, w, e2, *, z: float, eta_min: float, start=None, alone: bool = True):
    """``(counts, (S, diag(e2)))`` of :func:`group_count`, ``S`` the self-energy at the fixed point ``g`` at
    ``z + i eta_min``, both as their real and imaginary parts (``2 x B``).

    From ``start``, a neighbouring group's ``(S, diag(e2))`` (along a law's grid: its self-energy is smoother from
    one ``s`` to the next than ``g``, whose columns near ``z`` move fast), the columns' own law under its ``S``, each
    bin's scaled by the ratio of its coupling to itself here and there (8 % fewer map evaluations than from its
    ``g``), straight at ``eta_min``, and where that does not settle from the same start through
    :data:`WARM_LEVELS` (``None`` where neither converges to a ``g`` in the upper half plane); without it from the
    columns on their own (``S = 0``, unless ``alone`` is false), straight at ``eta_min``, and where that does not
    settle by continuation in ``Im z`` from 1.  The solution in the upper half plane is unique (the self-energy maps
    it into itself), so a start that settles there has found it.  In real
    arithmetic: ``1 / (u - i v) = (u + i v) / (u^2 + v^2)`` and ``Im log(u - i v) = atan2(-v, u)``; the nodes of
    the spread along the first axis (``16 x B``), so that each operation runs along the bins."""
    q, sd, w = (np.asarray(v, dtype=float) for v in (q, sd, w))
    apply, diag = _products(e2)
    own = diag * np.minimum(1.0, 1.0 / np.maximum(w, 1e-300)) * w   # a column's coupling to itself, taken out
    xz = np.multiply.outer(_XI, sd)                                  # x - z, nodes by bins
    xz += q - z
    u = np.empty_like(xz)
    inv = np.empty_like(xz)

    def self_energy(g):                                  # (Re, Im) of S = e2 (w g), less each column's own part
        S = apply(g * w)
        S -= own * g
        return S

    def columns(S, eta):                                 # E_xi 1 / (x - z - i eta - S)
        np.subtract(xz, S[0], out=u)
        v = S[1] + eta
        np.multiply(u, u, out=inv)
        np.add(inv, v * v, out=inv)
        np.divide(1.0, inv, out=inv)
        out = np.empty((2, q.size))
        np.dot(_WXI, inv, out=out[1])
        out[1] *= v
        np.multiply(inv, u, out=inv)
        np.dot(_WXI, inv, out=out[0])
        return out                                       # (Re, Im) of g

    def F(g, eta):
        return columns(self_energy(g), eta)

    def settled(got):                                    # converged, in the upper half plane
        return got[1] and not got[0][1].min() < 0.0

    if start is not None:
        S0, d0 = start
        S0 = S0 * np.divide(diag, d0, out=np.ones_like(diag), where=d0 > 0.0)
        got = _anderson(F, columns(S0, eta_min), eta_min, iterations=DIRECT, stall=STALL)
        if not settled(got):                             # a short continuation in Im z from the same start
            got = (columns(S0, max(WARM_LEVELS[0], eta_min)), False)
            for eta in [*WARM_LEVELS, eta_min]:
                got = _anderson(F, got[0], max(eta, eta_min))
            if not settled(got):
                return None
    else:
        got = (None, False)
        if alone:                                        # from the columns on their own (S = 0)
            g0 = _WXI @ (1.0 / (xz - 1j * eta_min))
            got = _anderson(F, np.stack([g0.real, g0.imag]), eta_min, iterations=DIRECT)
        if not settled(got):
            got = (np.zeros((2, q.size)), False)
            for eta in np.geomspace(1.0, eta_min, 10):      # continuation in Im z down to the real axis
                got = _anderson(F, got[0], eta)
    g = got[0]
    S = self_energy(g)
    im_log = _WXI @ np.arctan2(-(eta_min + S[1]), xz - S[0])
    im_L = im_log + 0.5 * (g[0] * S[1] + g[1] * S[0])
    return w + w * im_L / math.pi, (S, diag)


def _anderson(F, g, eta, *, memory: int = 6, tol: float = 1e-8, iterations: int = 300, stall=None):
    """``(g, converged)``: the fixed point ``g = F(g, eta)`` from ``g``, by Anderson mixing of the last ``memory``
    iterates (type II: the combination of the last maps whose residual is least in the least-squares sense, from
    the normal equations of the residuals' differences, kept in a ring) after a first plain step (the map itself),
    to a step below ``tol`` relative to ``1 + max|g|`` (``max|g|`` read again only where the step is below ``tol``
    times 4 of its last reading); a damped step (half the map) where the mix is not finite.  ``stall``:
    ``(k, level)``, given up (not converged) where the ``k``-th step is still above ``level`` relative to
    ``1 + max|g|``."""
    k_stall, level = stall or (-1, 0.0)
    shape = g.shape
    n = g.size
    dG = np.empty((memory - 1, n)); dR = np.empty((memory - 1, n))
    A = np.zeros((memory - 1, memory - 1))              # dR's Gram matrix, its diagonal with a touch of ridge
    k = 0
    f_prev = r_prev = None
    big = np.inf                                         # 4 (1 + max|g|) at its last reading
    for it in range(iterations):
        fg = F(g, eta).ravel()
        r = fg - g.ravel()
        step = np.abs(r).max()
        if step < tol * big or it == k_stall or it == 0:  # max|g| read only where the step may be small enough
            scale = 1.0 + np.abs(fg).max()
            big = 4.0 * scale
            if step < tol * scale:
                return fg.reshape(shape), True
            if it == k_stall and step > level * scale:
                return g, False
        if r_prev is None:
            f_prev, r_prev = fg, r
            g = fg.reshape(shape)
            continue
        j = k % (memory - 1)
        np.subtract(r, r_prev, out=dR[j]); np.subtract(fg, f_prev, out=dG[j])
        k += 1
        m = min(k, memory - 1)
        row = dR[:m] @ dR[j]
        A[j, :m] = row; A[:m, j] = row
        A[j, j] *= 1.0 + 1e-12                           # the ridge: dR's rows may be nearly dependent
        f_prev, r_prev = fg, r
        _, c, info = lapack.dposv(A[:m, :m], dR[:m] @ r)  # Cholesky: the normal equations are positive definite
        if info == 0 and math.isfinite(c.sum()):         # (a finite mix of finite maps)
            g = (fg - c @ dG[:m]).reshape(shape)
        else:
            g = 0.5 * (g + fg.reshape(shape))
    return g, False


def beyond_cut(mass, order):
    """The tail bins of the samples beyond the bulk's cut: the first ``order``-ed bins up to the cut's share of the
    tail's mass (``1 / (2 TAIL_MASS)`` of it)."""
    mass = np.asarray(mass, dtype=float)
    m = np.zeros(mass.size, bool)
    m[order[np.cumsum(mass[order]) <= mass.sum() / (2 * TAIL_MASS) + 1e-15]] = True
    return m


def _group_rows(parts, masks):
    """``(V, V2, w, part, VV)`` of the group's bins, which do not depend on ``s``: per bin its column's ``E[v]`` and
    ``E[v^2]`` in each row, its expected number of samples, its batch part, and ``V * V``."""
    V = np.vstack([np.asarray(vmean)[m] for (_, vmean, _, _), m in zip(parts, masks)])
    V2 = np.vstack([np.asarray(vm2)[m] for (_, _, vm2, _), m in zip(parts, masks)])
    w = np.concatenate([np.asarray(mass, dtype=float)[m] * n_b for (mass, _, _, n_b), m in zip(parts, masks)])
    part = np.concatenate([np.full(int(m.sum()), ip) for ip, m in enumerate(masks)])
    return V, V2, w, part, V * V


def _group_parts(rows, t, *, N, psi, wa):
    """``(q, sd, w, e2, part)`` of the group at the row kernel ``t`` (module docstring), from its :func:`_group_rows`
    ``rows``; ``part`` the batch part of each bin."""
    V, V2, w, part, VV = rows
    mq = V @ (wa * t)
    sd = psi * np.sqrt(np.clip(V2 @ (wa * t * t) - mq**2, 0.0, None) / N)
    c = psi * np.abs(t) * np.sqrt(np.asarray(wa) / N)                   # e2 = U U^T, U = V diag(c)
    return psi * mq, sd, w, ScaledCoupling(V, VV, c * c), part


def _far_below(q, sd, w, e2) -> bool:
    """Whether every eigenvalue of the group ``D + E`` lies far below 1 in every batch that matters: each strength six
    spreads below it less three times the largest row's coupling scale (the Wigner part's edge is at twice it)."""
    if isinstance(e2, ScaledCoupling):                  # e2 w, the diagonal not formed
        ew = ((w @ e2.V) * e2.c2) @ e2.V.T
    else:
        ew = _products(e2)[0](w)
    return float(np.max(q + 6.0 * sd)) + 3.0 * math.sqrt(max(float(np.max(ew)), 0.0)) < 1.0


def grouped_tail_law(tau, x_edge: float, x_guess: float, parts, *, N: float, psi: float, wa,
                     shift=None) -> SampleLaw:
    """:func:`~rmtfl.theory._two_step.sample_order.tail_law` (same arguments) with the batch's most extreme columns
    coupled into one group (module docstring): the law of the other bins as it is, plus the group's expected number
    above each ``s`` per batch part (:func:`group_count`, each fixed point along the grid started from the last one)
    over the part's size.  The coupling to ``P`` (``shift``) acts on the other bins only; the law without it
    (``uncoupled``) holds the group as well."""
    kernels = {}

    def tau_once(x):                                   # the law's grid and the group's share the row kernels
        if x not in kernels:
            kernels[x] = tau(x)
        return kernels[x]

    t_e = tau_once(x_edge * (1 + 2e-7))
    if t_e is None:
        return tail_law(tau, x_edge, x_guess, parts, N=N, psi=psi, wa=wa, shift=shift)
    masks = [beyond_cut(mass, np.argsort(-(psi * (np.asarray(v) @ (wa * t_e))))) for mass, v, _, _ in parts]
    rest = [(np.asarray(mass, dtype=float) * ~m, v, v2, n) for (mass, v, v2, n), m in zip(parts, masks)]
    law = tail_law(tau_once, x_edge, 2.0 * max(x_guess, x_edge), rest, N=N, psi=psi, wa=wa, shift=shift)
    group = np.zeros_like(law.tails)                   # the group's expected number above s, per part's sample
    rows = _group_rows(parts, masks)
    count = warm_group_count()
    for i, s in enumerate(law.grid):
        t = tau_once(s * s)
        if t is None:
            continue
        q, sd, w, e2, part = _group_parts(rows, t, N=N, psi=psi, wa=wa)
        if _far_below(q, sd, w, e2):
            break                              # here and beyond (the strengths fall with s) no column reaches 1
        above = np.clip(count(q, sd, w, e2), 0.0, None)
        for ip in range(len(parts)):
            group[i, ip] = above[part == ip].sum() / law.sizes[ip]

    def with_group(base):                      # non-increasing in s, as a law must be
        return np.maximum.accumulate((np.asarray(base, dtype=float) + group)[::-1], axis=0)[::-1]
    if law.uncoupled is None:
        return SampleLaw(law.grid, with_group(law.tails), law.sizes)
    own = SampleLaw(law.grid, with_group(law.uncoupled.tails), law.sizes)
    return SampleLaw(law.grid, with_group(law.tails), law.sizes, uncoupled=own)
