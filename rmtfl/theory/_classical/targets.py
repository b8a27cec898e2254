"""Single- and multi-index targets ``y = sum_r g_r(<beta*_r, x>) + noise`` (docs/conventions.md §3).

A :class:`Target` holds the link functions ``g_r`` (as
:class:`~rmtfl.theory.Activation` objects), the orthonormal target
directions ``beta*_r`` (or ``None``: the first ``R`` standard basis vectors
``e_1, ..., e_R`` of ``R^d``) and the noise standard deviation.

Centring
--------
The two-step theory (docs/theory/two_step.md §5.2) assumes centred links, ``E g_r(z) = 0``.
:func:`make_target` therefore **centres every link by default**: a link with
``mu_0 = E g(z) != 0`` (relu, square, ``he2`` is already centred, relu is not)
is replaced by ``g - mu_0`` and its name gets the suffix ``"-c"``.  The removed
constants are kept in :attr:`Target.offsets`.  Pass ``centre=False`` to keep
the raw links (the one-step formulas only need ``mu_1`` and ``E y^2``; with an
uncentred link ``E y^2`` then includes ``mu_0^2``).

Hermite coefficients given as a list of numbers are the expansion coefficients
``a_k`` of ``g = sum_k a_k He_k`` (the same meaning as the activation name
``"hermite(a0, a1, ...)"``); the docs/conventions.md coefficients are
``mu_k = k! a_k``.

Examples
--------
>>> t = make_target("tanh", noise=0.1)
>>> t.rank, round(t.mu1[0], 6)
(1, 0.605706)
>>> round(make_target("relu").mu0[0], 12)          # centred: E g = 0
0.0
>>> round(make_target(["linear", "he2n"]).second_moment, 12)   # 1 + 1
2.0
"""
from __future__ import annotations

from dataclasses import dataclass, field
from numbers import Real

import mpmath as mp
import numpy as np

from rmtfl._validate import check_finite_array, check_nonnegative
from .activations import Activation, get_activation, hermite_polynomial
from .hermite import hermite_coeffs, nonlinear_norm

__all__ = ["Target", "make_target"]


@dataclass(frozen=True)
class Target:
    """A (multi-)index target ``y = sum_r g_r(<beta*_r, x>) + noise * eps`` (docs/conventions.md §3).

    A model object (not a result), built by :func:`make_target`.

    Attributes
    ----------
    links : tuple of Activation
        The link functions ``g_r`` (centred unless built with ``centre=False``).
    directions : ndarray of shape (R, d) or None
        Orthonormal rows ``beta*_r``; ``None`` means ``e_1, ..., e_R``.
    noise : float
        Standard deviation of the additive Gaussian label noise.
    offsets : tuple of float
        The constants ``E g_r(z)`` removed by centring (zeros if none).

    Normalisation: ``z_r = <beta*_r, x>`` with ``x ~ N(0, I_d)`` are i.i.d. N(0, 1).
    """

    links: tuple
    directions: np.ndarray | None = field(default=None, repr=False, compare=False)
    noise: float = 0.0
    offsets: tuple = ()
    raw_links: tuple = field(default=(), repr=False, compare=False)

    @property
    def rank(self) -> int:
        """Number of index directions ``R``."""
        return len(self.links)

    @property
    def name(self) -> str:
        s = "+".join(g.name for g in self.links)
        return s + (f"+noise({self.noise:g})" if self.noise else "")

    @property
    def mu0(self) -> tuple:
        """``E g_r(z)`` per link (zero for centred links)."""
        return tuple(float(hermite_coeffs(g, 0)[0]) for g in self.links)

    @property
    def mu1(self) -> tuple:
        """First Hermite coefficient ``mu_1(g_r) = E[z g_r(z)]`` per link."""
        return tuple(float(hermite_coeffs(g, 1)[1]) for g in self.links)

    def hermite(self, kmax: int) -> np.ndarray:
        """``mu_k(g_r)`` for ``k = 0..kmax``, shape ``(R, kmax + 1)``."""
        return np.array([hermite_coeffs(g, kmax) for g in self.links])

    @property
    def link_second_moments(self) -> tuple:
        """``E[g_r(z)^2]`` per link."""
        out = []
        raw = self.raw_links if len(self.raw_links) == self.rank else self.links
        offs = self.offsets if len(self.offsets) == self.rank else (0.0,) * self.rank
        for g, m0 in zip(raw, offs):
            # E g_raw^2 = mu_0^2 + mu_1^2 + mu_{>1}^2 (closed forms for relu & co); centring removes m0^2
            mu = hermite_coeffs(g, 1)
            out.append(float(mu[0] ** 2 + mu[1] ** 2 + nonlinear_norm(g) ** 2 - m0 * m0))
        return tuple(out)

    @property
    def second_moment(self) -> float:
        """``E[y^2]`` including the noise (independent coordinates ``z_r``)."""
        m0 = self.mu0
        s = sum(self.link_second_moments) + self.noise**2
        # cross terms E[g_r] E[g_q] for r != q (zero when centred)
        s += sum(m0[r] * m0[q] for r in range(self.rank) for q in range(self.rank) if r != q)
        return float(s)

    @property
    def centred(self) -> bool:
        return all(abs(m) < 1e-12 for m in self.mu0)

    def direction_matrix(self, d: int) -> np.ndarray:
        """The ``(R, d)`` matrix of target directions (``e_1..e_R`` when not given)."""
        if self.directions is None:
            if self.rank > d:
                raise ValueError(f"d must be >= the target rank {self.rank}, got {d}")
            B = np.zeros((self.rank, d))
            B[np.arange(self.rank), np.arange(self.rank)] = 1.0
            return B
        B = np.asarray(self.directions, dtype=float)
        if B.shape[1] != d:
            raise ValueError(f"target directions have dimension {B.shape[1]}, but d={d}")
        return B


def _centred(g: Activation, m0: float) -> Activation:
    """``g - m0`` with the same derivatives of order >= 1."""
    if g.herme is not None:
        c = list(g.herme)
        c[0] = 0.0
        return hermite_polynomial(c, name=g.name + "-c")
    exact = g.hermite_exact
    return Activation(
        name=g.name + "-c",
        fn=lambda z: g.fn(z) - m0,
        deriv=g.deriv,
        mp_fn=(lambda z: g.mp_fn(z) - mp.mpf(m0)) if g.mp_fn is not None else None,
        degree=g.degree,
        homogeneity=None,
        parity=0 if g.parity == 1 else g.parity,
        smooth=g.smooth,
        hermite_exact=(lambda k: 0.0 if k == 0 else exact(k)) if exact is not None else None,
    )


def _one_link(spec) -> Activation:
    if isinstance(spec, Activation) or isinstance(spec, str) or callable(spec):
        try:
            return get_activation(spec)
        except ValueError as exc:
            raise ValueError(f"target: {exc}".replace("unknown activation", "unknown link")) from None
    if isinstance(spec, (list, tuple, np.ndarray)) and all(
            isinstance(x, (Real, np.floating, np.integer)) and not isinstance(x, bool) for x in spec):
        try:
            return hermite_polynomial([float(x) for x in spec])
        except (TypeError, ValueError) as exc:
            raise ValueError(f"target: Hermite {exc}") from None
    raise ValueError(
        "target must be a name (linear, tanh, relu, he2, he3n, ...), a callable, a list of Hermite "
        f"coefficients a_k of sum a_k He_k, a list of those (multi-index) or a Target; got {spec!r}")


def make_target(spec, *, noise: float = 0.0, directions=None, centre: bool = True) -> Target:
    """Build a :class:`Target` from a name, callable, Hermite coefficients, a list of those, or a Target.

    Normalisation: docs/conventions.md §3 (``y = sum_r g_r(<beta*_r, x>) + noise * eps``, links
    centred by default).  ``spec`` is positional, everything else keyword-only.  This is where a
    target is resolved (once, at the public boundary); the links are :class:`Activation` objects.

    Parameters
    ----------
    spec : str, callable, Activation, sequence of float, list, or Target
        One link (single index) or a list/tuple of links (multi-index).  A flat
        sequence of numbers is read as Hermite coefficients ``a_k`` of
        ``g = sum_k a_k He_k``.  A :class:`Target` is returned unchanged unless
        ``noise`` or ``directions`` is given.
    noise : float, keyword-only
        Label-noise standard deviation, ``>= 0``.
    directions : array of shape (R, d), optional
        Orthonormal target directions; default ``e_1, ..., e_R``.
    centre : bool
        Subtract ``E g_r(z)`` from each link (default; the two-step theory needs it).

    Examples
    --------
    >>> make_target([0, 1, 0.5]).links[0].name       # z + He_2 / 2
    'hermite(0, 1, 0.5)'
    >>> make_target(["tanh", "he3n"]).rank
    2
    """
    noise = check_nonnegative("noise", noise)
    if isinstance(spec, Target):
        if directions is None and noise == 0.0:
            return spec
        return Target(spec.links, spec.directions if directions is None else
                      _check_directions(directions, spec.rank), noise or spec.noise, spec.offsets,
                      spec.raw_links)
    if isinstance(spec, (list, tuple)) and spec and not all(
            isinstance(x, (Real, np.floating, np.integer)) and not isinstance(x, bool) for x in spec):
        raw = [_one_link(s) for s in spec]
    else:
        raw = [_one_link(spec)]
    links, offsets = [], []
    for g in raw:
        m0 = float(hermite_coeffs(g, 0)[0]) if (g.hermite_exact is not None or g.smooth) else _mean_mp(g)
        if centre and abs(m0) > 1e-14:
            links.append(_centred(g, m0))
            offsets.append(m0)
        else:
            links.append(g)
            offsets.append(0.0)
    B = None if directions is None else _check_directions(directions, len(links))
    return Target(tuple(links), B, noise, tuple(offsets), tuple(raw))


def _mean_mp(g: Activation) -> float:
    if g.mp_fn is None:
        raise ValueError(f"cannot compute E g(z) for the non-smooth link {g.name!r} without mp_fn")
    return float(mp.quad(lambda z: g.mp_fn(z) * mp.npdf(z), [-mp.inf, 0, mp.inf]))


def _check_directions(directions, R: int) -> np.ndarray:
    B = check_finite_array("directions", directions, ndim=2)
    if B.shape[0] != R:
        raise ValueError(f"directions must have one row per link (R={R}), got shape {B.shape}")
    if not np.allclose(B @ B.T, np.eye(R), atol=1e-8):
        raise ValueError("directions must have orthonormal rows")
    B = B.astype(float)
    B.setflags(write=False)
    return B
