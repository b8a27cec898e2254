"""The zonal eigenproblem of the spiked kernel ``k_Gamma``, ``Gamma = A (I + b v v^T)`` (docs/theory/spiked_kernel.md §5.3–§5.5).

``k_Gamma`` commutes with rotations fixing ``v``, so its top eigenfunction on
the unit sphere ``S^{d-1}`` is zonal: a function of ``u = <v, x>``.  Writing
``x = (u, sqrt(1-u^2) e)``, the zonal kernel is ``K_z(u, u') = E_c[k_Gamma]`` with
``c = <e, e'>``; ``u`` has density ``∝ (1-u^2)^{(d-3)/2}`` and ``c`` density
``∝ (1-c^2)^{(d-4)/2}``.  Both are discretised with normalised Gauss–Jacobi
rules and the operator is symmetrised as ``M = sqrt(w) K_z sqrt(w)``; the even
and odd sectors are diagonalised separately (exact parity blocks on symmetric
nodes).

Normalisation: eigenvalues w.r.t. the uniform **probability** measure on the
unit sphere (docs/conventions.md §8); for relu the Gaussian-input eigenvalues are
``d x`` these.  ``Y_ell(u) = sqrt(N(d, ell)) P_ell^{(d)}(u)`` are unit-norm zonal
harmonics.  Overlaps follow docs/conventions.md §1 and are **squared**:
``overlaps[ell] = <f, Y_ell>^2`` (= ``cos^2(f, Y_ell)``) for the unit-norm top even
eigenfunction ``f``; the signed amplitudes ``<f, Y_ell>`` (sign fixed by
``<f, Y_0> > 0``) are kept in ``amplitudes`` for the mixing sign and ``tan theta_mix``.

Examples
--------
>>> z = zonal_top_eigenfunction("relu", d=10, b=0.0, n_u=60, n_c=60)
>>> round(z.eigenvalue, 8), round(float(z.overlaps[0]), 12), round(float(z.overlaps[2]), 12)   # b = 0: no mixing
(0.16730121, 1.0, 0.0)
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from rmtfl._results import Result
from rmtfl._validate import check_in_range, check_int, check_memory, check_nonnegative, check_positive, check_real
from .._classical.activations import Activation, get_activation
from .._classical.hermite import gauss_hermite_rule
from .closed_forms import arccos_kernel
from .rf_kernel import kernel_from_scalars
from .sphere import ORDER_LIMIT, jacobi_rule, zonal_harmonic

#: Largest ``A``, ``b`` and ``rho``: beyond it ``s s2`` in the kernel overflows a double.
SCALE_LIMIT = 1e50
#: Largest ``lmax`` of :func:`zonal_top_eigenfunction` / :func:`zonal_limit_operator`.
LMAX_LIMIT = 150

__all__ = ["ZonalEigen", "ZonalOperator", "MixingCoefficient", "zonal_operator", "zonal_top_eigenfunction",
           "first_order_mixing", "zonal_limit_operator"]


@dataclass(frozen=True)
class ZonalEigen(Result):
    """Top even (and odd) zonal eigenpair of ``k_{A(I + b v v^T)}`` on ``S^{d-1}``.

    Attributes
    ----------
    eigenvalue : float
        Top even eigenvalue (sphere, probability measure; scales with ``A`` for relu).
    overlaps : ndarray
        Squared overlaps ``<f, Y_ell>^2`` (docs/conventions.md §1) for ``ell = 0..lmax`` (odd
        entries 0), indexable by degree; ``overlaps[2]`` is the squared ``Y_2`` overlap.
    amplitudes : ndarray
        Signed amplitudes ``<f, Y_ell>`` (sign fixed by ``<f, Y_0> > 0``);
        ``overlaps = amplitudes**2``.
    tan_mix : float
        ``<f, Y_2>/<f, Y_0>`` (signed amplitudes; its sign is the mixing sign).
    odd_eigenvalue : float
        Top odd eigenvalue; for relu it equals ``A (1+b)/(4d)`` exactly (docs/theory/spiked_kernel.md §5.1).
    eps_over_b : float
        First-order mixing coefficient ``epsilon/b`` at this ``d`` (``nan`` when not computed).
    nodes, values : ndarray
        Quadrature nodes ``u_a`` and the eigenfunction ``f(u_a)``.
    """

    d: float
    b: float
    A: float
    eigenvalue: float
    overlaps: np.ndarray = field(repr=False)
    amplitudes: np.ndarray = field(repr=False)
    tan_mix: float
    odd_eigenvalue: float
    eps_over_b: float = math.nan
    nodes: np.ndarray = field(default=None, repr=False)
    values: np.ndarray = field(default=None, repr=False)

    @property
    def first_order_tan(self) -> float:
        """First-order prediction ``b * eps/b`` of ``tan theta_mix``."""
        return self.b * self.eps_over_b


def _c_rule(d: int, n_c: int):
    if d == 2:  # e, e' in S^0 = {±1}: c = ±1 with probability 1/2
        return np.array([-1.0, 1.0]), np.array([0.5, 0.5])
    return jacobi_rule(n_c, (d - 4) / 2)


@dataclass(frozen=True)
class ZonalOperator(Result):
    """The symmetrised zonal operator ``matrix = sqrt(w) K_z sqrt(w)`` on the nodes ``u`` with weights ``w``.

    Eigenvalues of ``matrix`` are those of ``k_Gamma`` restricted to zonal functions, w.r.t. the
    uniform probability measure on ``S^{d-1}`` (docs/conventions.md §8; docs/theory/spiked_kernel.md §5.4).
    """

    matrix: np.ndarray = field(repr=False)
    nodes: np.ndarray = field(repr=False)
    weights: np.ndarray = field(repr=False)
    d: int = 0
    b: float = 0.0
    A: float = 1.0


def zonal_operator(activation, *, d: int, b: float, A: float = 1.0, n_u: int = 160,
                   n_c: int = 160) -> ZonalOperator:
    """Symmetrised zonal operator ``M = sqrt(w) K_z sqrt(w)`` of ``k_{A(I + b v v^T)}``, its nodes ``u`` and weights ``w``.

    Normalisation: uniform probability measure on ``S^{d-1}`` (docs/conventions.md §8), Gauss–Jacobi
    rules for ``u = <v, x>`` and ``c = <e, e2>`` (docs/theory/spiked_kernel.md §5.4).  ``b`` may be
    slightly negative (``b > -1``) for finite differences.

    Parameters
    ----------
    activation : str, callable or Activation
        The activation ``sigma``.
    d : int
        Dimension, ``>= 2``.
    b : float
        Spike ratio ``> -1``.
    A : float
        Overall scale of ``Gamma``.
    n_u, n_c : int
        Quadrature orders (``n_u`` rounded up to even), at most ``ORDER_LIMIT`` (10,000); the
        ``n_u x n_u`` matrices are checked against the available memory.

    Returns
    -------
    ZonalOperator

    Examples
    --------
    >>> op = zonal_operator("step", d=6, b=2.0, n_u=40, n_c=40)
    >>> op.matrix.shape, bool(np.allclose(op.matrix, op.matrix.T))
    ((40, 40), True)
    """
    return _zonal_operator(get_activation(activation), d, b, A, n_u, n_c)


def _check_orders(n_u, n_c):
    n_u = check_int("n_u", n_u, lo=4, hi=ORDER_LIMIT)
    n_c = check_int("n_c", n_c, lo=2, hi=ORDER_LIMIT)
    check_memory("n_u", 8.0 * (6 * (n_u + 1) ** 2 + 4 * (n_u + 1) * n_c), "the n_u x n_u zonal matrices")
    return n_u, n_c


def _zonal_operator(act: Activation, d, b, A, n_u, n_c) -> ZonalOperator:
    d = check_int("d", d, lo=2)
    A = check_positive("A", A)
    if A > SCALE_LIMIT:
        raise ValueError(f"A must be <= {SCALE_LIMIT:g} (the kernel overflows beyond), got {A!r}")
    b = check_real("b", b)
    if not b > -1:
        raise ValueError(f"b must be > -1 (Gamma = A(I + b v v^T) PSD), got {b!r}")
    if b > SCALE_LIMIT:
        raise ValueError(f"b must be <= {SCALE_LIMIT:g} (the kernel overflows beyond), got {b!r}")
    n_u, n_c = _check_orders(n_u, n_c)
    if n_u % 2:
        n_u += 1
    u, w = jacobi_rule(n_u, (d - 3) / 2)
    c, wc = _c_rule(d, n_c)
    s = A * (1 + b * u * u)
    root = np.sqrt(np.maximum(1 - u * u, 0.0))
    K = np.empty((n_u, n_u))
    base = A * (1 + b) * np.outer(u, u)
    perp = A * np.outer(root, root)
    for i in range(n_u):  # one row at a time keeps memory at n_u * n_c
        cross = base[i][:, None] + perp[i][:, None] * c[None, :]
        K[i] = kernel_from_scalars(act, s[i], s[:, None], cross) @ wc
    K = 0.5 * (K + K.T)
    sw = np.sqrt(w)
    return ZonalOperator(sw[:, None] * K * sw[None, :], u, w, d, float(b), A)


def _sectors(M):
    """Eigen-decompositions of the even and odd blocks on symmetric nodes."""
    n = M.shape[0]
    h = n // 2
    idx, rev = np.arange(h), n - 1 - np.arange(h)
    Pe = np.zeros((n, h))
    Po = np.zeros((n, h))
    Pe[idx, idx] = Pe[rev, idx] = 1 / math.sqrt(2)
    Po[idx, idx], Po[rev, idx] = 1 / math.sqrt(2), -1 / math.sqrt(2)
    ee, ve = np.linalg.eigh(Pe.T @ M @ Pe)
    eo, vo = np.linalg.eigh(Po.T @ M @ Po)
    return ee[::-1], Pe @ ve[:, ::-1], eo[::-1], Po @ vo[:, ::-1]


def zonal_top_eigenfunction(activation, *, d: int, b: float, A: float = 1.0, n_u: int = 160,
                            n_c: int = 160, lmax: int = 6, mixing: bool = True) -> ZonalEigen:
    """Top even eigenpair of ``k_Gamma``, ``Gamma = A (I + b v v^T)``, on ``S^{d-1}`` (Gauss–Jacobi).

    Normalisation: eigenvalues w.r.t. the uniform probability measure on the unit sphere
    (docs/conventions.md §8); overlaps squared (docs/conventions.md §1); docs/theory/spiked_kernel.md §5.4.

    Parameters
    ----------
    activation : str or Activation
        Any activation with a kernel (closed form or Mehler).
    d : int
        Dimension, ``>= 2``.
    b : float
        Spike ratio ``B/A >= 0``.
    A : float
        Overall scale of ``Gamma`` (relu eigenvalues scale by ``A``).
    n_u, n_c : int
        Quadrature orders (120–200 give ~1e-3 accuracy or better; docs/theory/spiked_kernel.md §5.4).
    lmax : int
        Largest harmonic degree in ``overlaps`` (squared, docs/conventions.md §1) and ``amplitudes`` (signed).
    mixing : bool
        Also compute the first-order coefficient ``eps/b`` (:func:`first_order_mixing`).

    Returns
    -------
    ZonalEigen

    Examples
    --------
    >>> z = zonal_top_eigenfunction("relu", d=10, b=5.0, n_u=80, n_c=80)
    >>> abs(z.odd_eigenvalue - 6 / 40) < 1e-10, bool(0 < z.overlaps[2] < 1), bool(z.amplitudes[2] > 0)
    (True, True, True)
    >>> bool(abs(z.overlaps[2] - z.amplitudes[2] ** 2) < 1e-15)
    True
    """
    act = get_activation(activation)
    d = check_int("d", d, lo=2)
    b = check_nonnegative("b", b)
    lmax = check_int("lmax", lmax, lo=2, hi=LMAX_LIMIT)
    op = _zonal_operator(act, d, b, A, n_u, n_c)
    u, w = op.nodes, op.weights
    ee, ve, eo, _ = _sectors(op.matrix)
    psi = ve[:, 0]
    f = psi / np.sqrt(w)
    ov = np.array([float(np.sum(w * f * zonal_harmonic(ell, d, u))) for ell in range(lmax + 1)])
    if ov[0] < 0:
        f, ov = -f, -ov
    ov[1::2] = 0.0
    eps = _first_order_mixing(act, d, n_u, n_c, 1e-3).eps_over_b if mixing else math.nan
    return ZonalEigen(d, b, op.A, float(ee[0]), ov * ov, ov, float(ov[2] / ov[0]), float(eo[0]), eps, u, f)


@dataclass(frozen=True)
class MixingCoefficient(Result):
    """First-order ``Y_0``–``Y_2`` mixing (docs/theory/spiked_kernel.md §5.3): ``eps/b = <Y_2, dK Y_0>/(mu_0 - mu_2)``.

    ``dY0Y0``/``dY2Y0`` are matrix elements of ``dK/db`` at ``b = 0``, ``A = 1``;
    ``high_d`` is the ``d -> inf`` value ``1/(sqrt(2) d)`` (relu).  Eigenvalues w.r.t. the
    uniform probability measure on the sphere (docs/conventions.md §8).
    """

    d: int
    eps_over_b: float
    dY0Y0: float
    dY2Y0: float
    mu0: float
    mu2: float
    high_d: float


def first_order_mixing(activation, *, d: int, n_u: int = 160, n_c: int = 160, h: float = 1e-3) -> MixingCoefficient:
    """``eps/b`` at finite ``d`` by a central difference in ``b`` of the zonal operator (error ``O(h^2)``).

    Normalisation as :func:`zonal_top_eigenfunction` (docs/conventions.md §8; docs/theory/spiked_kernel.md §5.3).

    Parameters
    ----------
    activation : str or Activation
        The activation ``sigma``.
    d : int
        Dimension, ``>= 2``.
    n_u, n_c : int
        Quadrature orders.
    h : float
        Finite-difference step in ``b``.

    Returns
    -------
    MixingCoefficient

    Examples
    --------
    >>> m = first_order_mixing("relu", d=200, n_u=80, n_c=80)
    >>> abs(m.eps_over_b / m.high_d - 1) < 0.02
    True
    """
    act = get_activation(activation)
    d = check_int("d", d, lo=2)
    h = check_in_range("h", h, 0.0, 1.0, lo_open=True, hi_open=True)  # b = -h must stay > -1
    n_u, n_c = _check_orders(n_u, n_c)
    return _first_order_mixing(act, d, n_u, n_c, h)


def _first_order_mixing(act: Activation, d: int, n_u, n_c, h) -> MixingCoefficient:
    plus = _zonal_operator(act, d, h, 1.0, n_u, n_c)
    u, w = plus.nodes, plus.weights
    Mm = _zonal_operator(act, d, -h, 1.0, n_u, n_c).matrix
    M0 = _zonal_operator(act, d, 0.0, 1.0, n_u, n_c).matrix
    dM = (plus.matrix - Mm) / (2 * h)
    y0 = np.sqrt(w) * zonal_harmonic(0, d, u)
    y2 = np.sqrt(w) * zonal_harmonic(2, d, u)
    mu0, mu2 = float(y0 @ M0 @ y0), float(y2 @ M0 @ y2)
    d00, d20 = float(y0 @ dM @ y0), float(y2 @ dM @ y0)
    high = 1 / (math.sqrt(2) * d) if act.name == "relu" else math.nan
    return MixingCoefficient(d, d20 / (mu0 - mu2), d00, d20, mu0, mu2, high)


def zonal_limit_operator(rho: float, *, n_z: int = 200, lmax: int = 6) -> ZonalEigen:
    """The ``d -> inf`` zonal operator of relu with ``b = rho d`` on ``L^2(N(0, 1))`` (docs/theory/spiked_kernel.md §5.5).

    ``K(z, z') = (1/2pi) sqrt((1+rho z^2)(1+rho z'^2)) J_1(theta)``,
    ``cos theta = rho z z'/sqrt((1+rho z^2)(1+rho z'^2))``; probabilists' Gauss–Hermite
    nodes.  ``overlaps[ell]`` are the squared overlaps (docs/conventions.md §1) with
    ``He_ell/sqrt(ell!)`` (``Y_0 = 1``, ``Y_2 = He_2/sqrt 2``), ``amplitudes[ell]`` the
    signed ones; the odd top eigenvalue is ``rho/4`` (eigenfunction ``z``).
    In giant-step terms ``rho = beta`` of ``b = beta d`` (``B = rho`` when ``A = 1/d``; docs/conventions.md §10.2).  First
    order in ``rho``: ``tan theta_mix ~ rho/sqrt(2)``.  The returned ``b`` and ``d`` are ``inf``.

    Examples
    --------
    >>> z = zonal_limit_operator(0.0, n_z=40)
    >>> round(z.eigenvalue, 12) == round(1 / (2 * math.pi), 12)
    True
    """
    rho = check_in_range("rho", rho, 0.0, SCALE_LIMIT)
    n_z = check_int("n_z", n_z, lo=4, hi=ORDER_LIMIT)
    lmax = check_int("lmax", lmax, lo=2, hi=LMAX_LIMIT)
    check_memory("n_z", 8.0 * 6 * (n_z + 1) ** 2, "the n_z x n_z zonal matrices")
    if n_z % 2:
        n_z += 1
    z, w = gauss_hermite_rule(n_z)
    s = 1 + rho * z * z
    K = arccos_kernel(1, s[:, None], s[None, :], rho * np.outer(z, z))
    sw = np.sqrt(w)
    M = sw[:, None] * K * sw[None, :]
    ee, ve, eo, _ = _sectors(M)
    f = ve[:, 0] / sw
    he = np.polynomial.hermite_e.hermevander(z, lmax) / np.sqrt(
        [math.factorial(k) for k in range(lmax + 1)])
    ov = (w * f) @ he
    if not np.all(np.isfinite(ov)):
        raise ValueError(f"lmax={lmax} is too large for n_z={n_z}: He_lmax overflows on the nodes")
    if ov[0] < 0:
        f, ov = -f, -ov
    ov[1::2] = 0.0
    return ZonalEigen(math.inf, math.inf, 1.0, float(ee[0]), ov * ov, ov, float(ov[2] / ov[0]),
                      float(eo[0]), math.nan, z, f)
