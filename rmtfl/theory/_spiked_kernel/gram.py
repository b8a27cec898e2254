"""Spectrum of the kernel Gram matrix ``K_ij = k_Gamma(x_i, x_j)`` at ``n ∝ d`` (docs/theory/kernel_spectra.md §3).

Normalisation
-------------
``x_i ~ N(0, I_d)``, ``i = 1..n``, ``phi = n/d``; ``k_Gamma`` the random-features kernel of
docs/conventions.md §7 (no prefactor, no ``1/n``): ``k_0 = k_{I/d}``, ``k_1 = k_Gamma`` with
``Gamma = A I + B w* w*^T`` and ``b = B/A`` fixed as ``d -> inf`` (the one-step law of
docs/theory/spiked_kernel.md §1.3 at ``alpha = 0``).

El Karoui's linearisation (docs/theory/kernel_spectra.md §3.1), with ``tau = A d + B`` and the
Hermite coefficients ``mu_k(tau)`` of ``z -> sigma(sqrt(tau) z)``:

``K ≈ u u^T + (mu_2(tau)^2 / 2d) 1 1^T + (mu_1(tau)^2 A d / tau) X (I + b w* w*^T) X^T / d + upsilon I``,

``upsilon = E sigma(sqrt(tau) z)^2 - mu_0(tau)^2 - mu_1(tau)^2``, ``u = mu_0 1 + a`` (``a``: the
``||x_i||`` fluctuation).  The bulk is ``upsilon + scale MP(phi)``; outliers: the constant mode
(docs/theory/kernel_spectra.md §3.2) and the ``B``-spike (Baik–Silverstein, §3.3), with the squared overlap
``1 - 1/(phi b^2)`` of its eigenvector with ``X w*``.

Examples
--------
>>> s = kernel_gram_spectrum("relu", phi=2.0, gamma=(1e-3, 4e-3, np.eye(1000)[0]))
>>> [o.kind for o in s.outliers]
['constant', 'B-spike']
>>> round(s.outliers[1].cos2_Xw, 4)      # 1 - 1/(phi b^2)
0.9688
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import optimize

from rmtfl._results import Result
from rmtfl._validate import check_array, check_in_range, check_int, check_positive
from rmtfl.theory._classical.activations import from_callable, get_activation
from rmtfl.theory._classical.hermite import hermite_coeffs, nonlinear_norm
from rmtfl.theory._classical.mp import MPEdges, mp_atom, mp_cdf, mp_density, mp_edges, mp_quantile, mp_stieltjes
from .gamma import SpikedGamma, as_gamma

__all__ = ["kernel_gram_spectrum", "KernelGramSpectrum", "GramOutlier"]


@dataclass(frozen=True)
class GramOutlier(Result):
    """A predicted outlier of the kernel Gram matrix (docs/theory/kernel_spectra.md §3.2–3.3).

    ``kind``: ``"constant"`` (the constant mode; ``multiplicity`` 2 when ``mu_0 = 0 != mu_2``) or
    ``"B-spike"``; ``strength`` (additive ``theta`` for the constant mode, ``b = B/A`` for the spike);
    ``location``: predicted eigenvalue (``nan`` below the threshold); ``cos2_Xw``: squared overlap of its
    eigenvector with ``X w*`` (``nan`` where not predicted); ``exists``.

    >>> GramOutlier("B-spike", 4.0, 0.7, 9.5, 0.97, 1, True).to_dict()["kind"]
    'B-spike'
    """

    kind: str
    strength: float
    threshold: float
    location: float
    cos2_Xw: float
    multiplicity: int
    exists: bool


@dataclass(frozen=True)
class KernelGramSpectrum(Result):
    """Limit law of the eigenvalues of ``K = [k_Gamma(x_i, x_j)]`` and its outliers (docs/theory/kernel_spectra.md §3).

    The bulk is ``shift + scale * MP(phi)`` (``MP(phi)``: the law of ``X X^T / d``, atom ``(1 - 1/phi)_+``
    at 0, so the atom of ``K`` sits at ``shift``).  ``edges``: the continuous part; ``outliers``: a tuple of
    :class:`GramOutlier` (empty when ``d`` is unknown).  Methods ``density``, ``cdf``, ``quantile``.

    >>> s = kernel_gram_spectrum("tanh", phi=0.5)
    >>> round(s.shift, 6), s.outliers
    (0.027415, ())
    """

    activation: str
    phi: float
    A_d: float
    b: float
    shift: float
    scale: float
    edges: MPEdges
    atom: float
    d: int | None
    n: int | None
    outliers: tuple

    def density(self, x):
        """Density of the continuous part (docs/theory/kernel_spectra.md §3.1)."""
        arr = check_array("x", x, finite=False)
        return mp_density((arr - self.shift) / self.scale, self.phi) / self.scale

    def cdf(self, x):
        """Distribution function, atom at ``shift`` included (docs/theory/kernel_spectra.md §3.1)."""
        arr = check_array("x", x, finite=False)
        return mp_cdf((arr - self.shift) / self.scale, self.phi)

    def quantile(self, p):
        """Inverse of :meth:`cdf` (docs/theory/kernel_spectra.md §3.1)."""
        return self.shift + self.scale * np.asarray(mp_quantile(p, self.phi))


def _scaled_coeffs(act, tau: float):
    """``mu_0..mu_4`` of ``z -> sigma(sqrt(tau) z)`` and its second moment (docs/conventions.md §2)."""
    if act.homogeneity is not None and act.hermite_exact is not None:
        f = tau ** (act.homogeneity / 2.0)
        mu = hermite_coeffs(act, 4) * f
        e2 = (nonlinear_norm(act) ** 2 + float(hermite_coeffs(act, 1) @ hermite_coeffs(act, 1))) * f * f
        return mu, e2
    if tau == 1.0:
        mu = hermite_coeffs(act, 4)
        return mu, nonlinear_norm(act) ** 2 + mu[0] ** 2 + mu[1] ** 2
    if not act.smooth:
        raise ValueError(f"activation {act.name!r} at variance {tau:g} needs a closed form; not available")
    s = math.sqrt(tau)
    scaled = from_callable(lambda z: act(s * z), name=f"{act.name}(sqrt({tau:g}) z)")
    mu = hermite_coeffs(scaled, 4)
    return mu, nonlinear_norm(scaled) ** 2 + mu[0] ** 2 + mu[1] ** 2


def kernel_gram_spectrum(activation, *, phi: float, gamma=None, d: int | None = None) -> KernelGramSpectrum:
    """Bulk and outliers of the kernel Gram matrix ``[k_Gamma(x_i, x_j)]`` with ``n = phi d`` Gaussian inputs.

    Parameters
    ----------
    activation : str, callable or Activation
        ``sigma`` of the random-features kernel (docs/conventions.md §7).
    phi : float, keyword-only
        ``n/d > 0``.
    gamma : None, (A, B, v) or SpikedGamma, keyword-only
        ``None`` or a scalar ``A``: ``k_0`` (``Gamma = I/d``, resp. ``A I``); ``(A, B, v)``: ``k_1`` with
        ``Gamma = A I + B v v^T`` (``d = len(v)``).  A dense matrix is refused (use the triple).
    d : int, optional, keyword-only
        Input dimension; needed for the finite-size outliers when ``gamma`` does not fix it.

    Returns
    -------
    KernelGramSpectrum
        Normalisation docs/theory/kernel_spectra.md §3 (no ``1/n``: the eigenvalues of ``K`` itself).

    >>> s = kernel_gram_spectrum("relu", phi=1.0, d=500)
    >>> s.outliers[0].kind, round(s.outliers[0].location, 1)
    ('constant', 80.0)
    """
    phi = check_positive("phi", phi)
    check_in_range("phi", phi, 1e-6, 1e6)
    act = get_activation(activation)
    if d is not None:
        d = check_int("d", d, lo=2, hi=10 ** 9)
    if gamma is None:
        if d is None:
            A, B, v_len = None, 0.0, None
        else:
            A, B, v_len = 1.0 / d, 0.0, d
    elif not isinstance(gamma, (tuple, SpikedGamma)) and np.ndim(gamma) == 0:
        if d is None:
            raise ValueError("gamma given as a scalar A needs d= (Gamma = A I_d)")
        A, B, v_len = check_positive("gamma (scalar A)", gamma), 0.0, d
    else:
        if not isinstance(gamma, (tuple, SpikedGamma)):
            raise ValueError("gamma must be None, a scalar A, a triple (A, B, v) or a SpikedGamma")
        dd = gamma.d if isinstance(gamma, SpikedGamma) else int(np.size(gamma[2]))
        g = as_gamma(gamma, d=dd)
        if d is not None and d != g.d:
            raise ValueError(f"d={d} does not match the length of the spike direction ({g.d})")
        A, B, v_len = g.A, g.B, g.d
        if A <= 0:
            raise ValueError("gamma: A must be > 0 (the bulk needs an isotropic part)")
    d = v_len
    A_d = 1.0 if A is None else A * d
    tau = A_d + (B if B else 0.0)
    b = 0.0 if A is None else B / A
    mu, e2 = _scaled_coeffs(act, tau)
    scale = mu[1] ** 2 * A_d / tau
    shift = max(e2 - mu[0] ** 2 - mu[1] ** 2, 0.0)
    if scale <= 1e-14 * max(e2, 1e-300):
        raise ValueError(f"activation {act.name!r} has mu_1 = 0: the linearised Gram bulk is degenerate "
                         "(shift * I); the kernel Gram needs mu_1 != 0")
    lo, hi = mp_edges(phi)
    edges = MPEdges(shift + scale * lo, shift + scale * hi)
    n = None if d is None else max(1, round(phi * d))
    outs = () if d is None else _gram_outliers(mu, phi, n, d, b, shift, scale, hi)
    return KernelGramSpectrum(act.name, float(phi), float(A_d), float(b), float(shift), float(scale), edges,
                              float(mp_atom(phi)), d, n, outs)


def _resolvent_outlier(theta: float, phi: float, shift: float, scale: float, hi: float):
    """Additive rank-one outlier on ``shift + scale MP(phi)``: ``theta G(lam) = 1`` (docs/theory/kernel_spectra.md §3.2)."""
    def G(lam):
        w = (lam - shift) / scale
        return float(np.real(mp_stieltjes(w, phi))) / scale

    edge = shift + scale * hi
    g_edge = G(edge * (1 + 1e-12) + 1e-300)
    threshold = 1.0 / g_edge
    if theta <= threshold:
        return threshold, math.nan
    lo_, up = edge * (1 + 1e-12) + 1e-300, edge + 2 * theta + 2 * scale * (1 + phi)
    lam = optimize.brentq(lambda x: theta * G(x) - 1.0, lo_, up, xtol=1e-13 * up, rtol=1e-15)
    return threshold, float(lam)


def _gram_outliers(mu, phi, n, d, b, shift, scale, hi):
    out = []
    mu0, mu2, mu4 = float(mu[0]), float(mu[2]), float(mu[4])
    size = max(abs(mu0), abs(mu2), math.sqrt(scale + shift))
    if abs(mu0) > 1e-12 * size:
        mean = mu0 + mu4 / (4.0 * d)
        theta = n * mean ** 2 + phi * mu2 ** 2
        thr, loc = _resolvent_outlier(theta, phi, shift, scale, hi)
        out.append(GramOutlier("constant", float(theta), float(thr), loc, math.nan, 1, bool(loc == loc)))
    elif abs(mu2) > 1e-12 * size:
        theta = phi * mu2 ** 2 / 2.0
        thr, loc = _resolvent_outlier(theta, phi, shift, scale, hi)
        out.append(GramOutlier("constant", float(theta), float(thr), loc, math.nan, 2, bool(loc == loc)))
    if b > 0:
        thr = 1.0 / math.sqrt(phi)
        if b > thr:
            loc = shift + scale * (1.0 + b) * (phi + 1.0 / b)
            cos2 = 1.0 - 1.0 / (phi * b * b)
            out.append(GramOutlier("B-spike", float(b), float(thr), float(loc), float(cos2), 1, True))
        else:
            out.append(GramOutlier("B-spike", float(b), float(thr), math.nan, math.nan, 1, False))
    return tuple(out)
