"""Spectrum of the conjugate kernel ``K = F F^T / N`` in the proportional regime (docs/theory/kernel_spectra.md §1).

Normalisation
-------------
``X`` ``n x d`` with rows ``N(0, I_d)``, ``W`` ``N x d`` with rows ``N(0, I_d/d)`` (docs/conventions.md §3–4),
``F = sigma(X W^T)`` (``n x N``), ``K = F F^T / N`` (``n x n``), ``psi = N/d``, ``phi = n/d``.
Hermite coefficients ``mu_k`` of docs/conventions.md §2 at unit variance.

Gaussian equivalence (docs/theory/kernel_spectra.md §1.1): after the rank-one mean ``mu_0 1 1^T`` is
removed, ``F`` has the bulk of ``mu_1 X W^T + mu_{>1} Z`` (``Z`` iid ``N(0, 1)``), so the limit law
depends on ``sigma`` only through ``mu_1^2`` and ``E sigma^2 - mu_0^2``.  The law is that of
``(1/N) Z T Z^T`` with ``T = mu_1^2 W W^T + mu_{>1}^2 I_N`` (docs/theory/kernel_spectra.md §1.2).

Outliers at finite size (``N=`` given; docs/theory/kernel_spectra.md §2): the mean of ``F`` is the
rank-two matrix ``(mu_0 1 + a) 1^T + 1 b^T`` with ``a_i ~ mu_2 (||x_i||/sqrt d - 1)`` and
``b_j ~ mu_2 (||w_j|| - 1)``.  It produces one outlier (``mu_0 != 0``, "mu0") or, for
``mu_0 = 0 != mu_2``, two equal ones ("norms", when above the BBP threshold); odd activations
have none.

Examples
--------
>>> law = ck_spectrum("relu", psi=1.0, phi=1.0, N=2000)
>>> round(law.edges.upper, 4), law.atom
(1.967, 0.0)
>>> round(float(law.cdf(law.quantile(0.5))), 10)
0.5
>>> o = law.outliers[0]; o.kind, round(o.location, 2)
('mu0', 319.07)
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import mpmath as mp
import numpy as np
from scipy import optimize

from rmtfl._results import Result
from rmtfl._validate import check_array, check_in_range, check_int, check_positive
from .activations import get_activation
from .ck_law import DeformedMP
from .hermite import hermite_coeffs, nonlinear_norm
from .mp import MPEdges

__all__ = ["ck_spectrum", "CKSpectrum", "CKOutlier", "ck_moments_noncrossing"]

#: Mean of the GOE Tracy-Widom law (docs/theory/classical.md §4).
TW1_MEAN = -1.2065335745820587
#: Accepted range of ``psi`` and ``phi``.
RATIO_RANGE = (1e-6, 1e6)


@dataclass(frozen=True)
class CKOutlier(Result):
    """A predicted outlier of the conjugate kernel at finite size (docs/theory/kernel_spectra.md §2).

    ``kind``: ``"mu0"`` (the constant mode, direction ``1``) or ``"norms"`` (the ``||x||``/``||w||``
    fluctuation spikes, ``mu_0 = 0``); ``strength``: ``theta^2`` in units of ``K``; ``threshold``: the
    BBP threshold on ``theta^2``; ``location``: the predicted eigenvalue of ``K`` (``nan`` below the
    threshold); ``multiplicity``: how many eigenvalues sit there; ``exists``: strength above threshold.

    >>> CKOutlier("mu0", 318.4, 0.3, 319.9, 1, True).to_dict()["kind"]
    'mu0'
    """

    kind: str
    strength: float
    threshold: float
    location: float
    multiplicity: int
    exists: bool


@dataclass(frozen=True)
class CKSpectrum(Result):
    """Limiting spectral law of the conjugate kernel ``K = F F^T / N`` (docs/theory/kernel_spectra.md §1).

    Fields: the activation's ``mu0, mu1, mu2`` (and ``mu4``) and ``nonlinear_var`` (``mu_{>1}^2``), ``psi``, ``phi``,
    ``edges`` (hull of the continuous support), ``intervals`` (its connected components), ``atom``
    (mass at 0: ``(1 - psi/phi)_+``, or ``(1 - min(psi, 1)/phi)_+`` for a linear ``sigma``), and, when
    ``N`` was given, ``N, n, d`` and ``outliers`` (a tuple of :class:`CKOutlier`).  Methods
    ``top_bulk`` (the mean largest bulk eigenvalue at that size, docs/theory/kernel_spectra.md §1.6).  Methods
    ``density`` (continuous part), ``cdf`` and ``quantile`` (atom included), ``stieltjes``, ``moments``.

    >>> law = ck_spectrum("tanh", psi=2.0, phi=0.5)
    >>> law.atom, law.outliers
    (0.0, ())
    """

    activation: str
    psi: float
    phi: float
    mu0: float
    mu1: float
    mu2: float
    nonlinear_var: float
    edges: MPEdges
    intervals: tuple
    atom: float
    N: int | None = None
    n: int | None = None
    d: int | None = None
    outliers: tuple = ()
    top_bulk: float | None = None
    mu4: float = 0.0
    _law: DeformedMP = field(default=None, repr=False, compare=False)

    def density(self, x):
        """Density of the continuous part at ``x`` (scalar or array; docs/theory/kernel_spectra.md §1.3)."""
        arr = check_array("x", x, finite=False)
        return _out(self._law.density_raw(arr.ravel()).reshape(arr.shape), arr)

    def cdf(self, x):
        """Distribution function, atom included (docs/theory/kernel_spectra.md §1.5)."""
        arr = check_array("x", x, finite=False)
        val = self._law.cdf(np.nan_to_num(arr, nan=0.0))
        return _out(np.where(np.isnan(arr), np.nan, val), arr)

    def quantile(self, p):
        """``inf{x : F(x) >= p}`` for ``p`` in ``[0, 1]``, atom included (docs/theory/kernel_spectra.md §1.5)."""
        arr = check_array("p", p)
        if np.any((arr < 0) | (arr > 1)):
            raise ValueError("p must lie in [0, 1]")
        return _out(self._law.quantile(arr.ravel()).reshape(arr.shape), arr)

    def stieltjes(self, z):
        """``m(z) = int dmu(t)/(t - z)`` (atom included) for ``Im z >= 0`` (real ``z``: the limit from above).

        docs/theory/kernel_spectra.md §1.3; for ``Im z < 0`` the conjugate symmetry ``m(conj z) = conj m(z)``.
        """
        arr = np.asarray(z, dtype=complex)
        if not np.all(np.isfinite(arr)):
            raise ValueError("z must be finite")
        flat = arr.ravel()
        lower = flat.imag < 0
        w = np.where(lower, flat.conj(), flat)
        zero = w == 0
        w = np.where(zero, 1.0, w)
        m = self._law.stieltjes_upper(w)
        m = np.where(lower, m.conj(), m)
        m = np.where(zero, np.nan, m).reshape(arr.shape)
        return complex(m) if m.ndim == 0 else m

    def moments(self, k: int, *, dps: int | None = None):
        """Moments ``int t^j dmu(t)``, ``j = 0..k`` (docs/theory/kernel_spectra.md §1.4).

        From the power-series solution of the equation of docs/theory/kernel_spectra.md §1.2; floats, or
        mpmath numbers at ``dps`` digits when ``dps`` is given (keyword-only).
        """
        k = check_int("k", k, lo=0, hi=200)
        if dps is not None:
            dps = check_int("dps", dps, 15, 1000)
            return self._law.moments_series(k, dps)
        return np.array([float(v) for v in self._law.moments_series(k, 30)])


def _out(val, arr):
    return float(val) if np.ndim(arr) == 0 else val


def _ratio(name, value):
    check_positive(name, value)
    return check_in_range(name, value, *RATIO_RANGE)


def ck_spectrum(activation, *, psi: float, phi: float, N: int | None = None) -> CKSpectrum:
    """Limiting spectral law of the conjugate kernel ``K = sigma(X W^T) sigma(X W^T)^T / N``.

    Parameters
    ----------
    activation : str, callable or Activation
        ``sigma`` (see :func:`rmtfl.theory.get_activation`).
    psi, phi : float, keyword-only
        ``N/d`` and ``n/d``, in ``[1e-6, 1e6]``.
    N : int, optional, keyword-only
        Width; when given, ``d = N/psi`` and ``n = phi d`` fix the finite-size outliers
        (docs/theory/kernel_spectra.md §2).

    Returns
    -------
    CKSpectrum
        The law (normalisation docs/theory/kernel_spectra.md §1: ``X`` rows ``N(0, I_d)``,
        ``W`` rows ``N(0, I_d/d)``, ``mu_k`` of docs/conventions.md §2).

    Examples
    --------
    >>> law = ck_spectrum("identity", psi=1.0, phi=1.0)     # Fuss-Catalan: moments 1, 3, 12
    >>> [round(float(v), 10) for v in law.moments(3)[1:]]
    [1.0, 3.0, 12.0]
    """
    psi = _ratio("psi", psi)
    phi = _ratio("phi", phi)
    act = get_activation(activation)
    mu = hermite_coeffs(act, 4)
    c = nonlinear_norm(act) ** 2
    e2 = c + mu[0] ** 2 + mu[1] ** 2
    a = float(mu[1]) ** 2
    scale = max(e2, 1e-300)
    if c <= 1e-13 * scale:
        c = 0.0
    if a <= 1e-13 * scale:
        a = 0.0
    if a == 0.0 and c == 0.0:
        raise ValueError(f"activation {act.name!r} is constant in law (E sigma^2 = mu_0^2): the kernel has no bulk")
    law = DeformedMP(a, c, psi, phi / psi)
    ivs = tuple((float(lo), float(hi)) for lo, hi in law.intervals)
    edges = MPEdges(ivs[0][0], ivs[-1][1])
    sizes, outs = (None, None, None), ()
    if N is not None:
        N = check_int("N", N, lo=1, hi=10 ** 9)
        d = max(1, round(N / psi))
        n = max(1, round(phi * d))
        sizes = (N, n, d)
        outs = _outliers(law, mu, n, d, phi, edges.upper)
        top = _top_bulk(law, edges.upper, n)
    else:
        top = None
    return CKSpectrum(act.name, psi, phi, float(mu[0]), float(mu[1]), float(mu[2]), float(c), edges, ivs,
                      float(law.atom), *sizes, outs, top, float(mu[4]), law)


def _top_bulk(law: DeformedMP, edge: float, n: int) -> float:
    """Mean largest bulk eigenvalue at size ``n``: ``edge + E[TW_1] (C n)^(-2/3)`` (docs/theory/kernel_spectra.md §1.6).

    ``C`` is the square-root coefficient of the density at the edge, ``rho(x) ~ (C/pi) sqrt(edge - x)``.
    """
    delta = 1e-7 * edge
    coef = math.pi * float(law.density_raw(np.array([edge - delta]))[0]) / math.sqrt(delta)
    if not coef > 0:
        return float(edge)
    return float(edge + TW1_MEAN * (coef * n) ** (-2.0 / 3.0))


# --------------------------------------------------------------------------- outliers
def _dtransform(law: DeformedMP, lam):
    """``D(lam) = lam m(lam) m~(lam)``, ``m~ = gamma m - (1 - gamma)/lam`` (docs/theory/kernel_spectra.md §2.2)."""
    m = law._real_branch(np.atleast_1d(lam)).real[0]
    g = law.gamma
    mt = g * m - (1.0 - g) / lam
    return lam * m * mt


def _bgn_location(law: DeformedMP, theta2: float, edge: float):
    """Outlier of ``K`` for a rank-one spike of strength ``theta2`` in the features (docs/theory/kernel_spectra.md §2.2)."""
    lo = edge * (1.0 + 1e-9) + 1e-300
    d_edge = _dtransform(law, lo)
    threshold = 1.0 / d_edge if d_edge > 0 else 0.0
    if theta2 <= threshold:
        return threshold, math.nan
    target = 1.0 / theta2
    hi = max(2.0 * edge, theta2 + 4.0 * law.t_max * (1.0 + law.gamma) + edge)
    while _dtransform(law, hi) > target:
        hi *= 2.0
    lam = optimize.brentq(lambda x: _dtransform(law, x) - target, lo, hi, xtol=1e-14 * hi, rtol=1e-15)
    return threshold, float(lam)


def ck_mu0_outlier(spec: "CKSpectrum", mean_shift: float = 0.0) -> float:
    """Location of the ``mu_0`` outlier of ``spec`` (``N`` given) when the mean feature moves by ``mean_shift``.

    Internal helper of the one-step prediction (docs/theory/kernel_spectra.md §4.1); ``nan`` below threshold.
    """
    mean = spec.mu0 + spec.mu4 / (4.0 * spec.d) + mean_shift
    theta2 = spec.n * mean ** 2 + spec.phi * spec.mu2 ** 2
    return _bgn_location(spec._law, theta2, spec.edges.upper)[1]


def _outliers(law: DeformedMP, mu, n: int, d: int, phi: float, edge: float) -> tuple:
    """The spikes of the mean of ``F`` (docs/theory/kernel_spectra.md §2.1)."""
    mu0, mu2, mu4 = float(mu[0]), float(mu[2]), float(mu[4])
    scale = max(abs(mu0), abs(mu2), math.sqrt(law.a + law.c))
    out = []
    if abs(mu0) > 1e-12 * scale:
        mean = mu0 + mu4 / (4.0 * d)  # E sigma(<w, x>) at finite d
        theta2 = n * mean ** 2 + phi * mu2 ** 2
        thr, loc = _bgn_location(law, theta2, edge)
        out.append(CKOutlier("mu0", float(theta2), float(thr), loc, 1, bool(loc == loc)))
    elif abs(mu2) > 1e-12 * scale:
        theta2 = phi * mu2 ** 2 / 2.0
        thr, loc = _bgn_location(law, theta2, edge)
        out.append(CKOutlier("norms", float(theta2), float(thr), loc, 2, bool(loc == loc)))
    return tuple(out)


# ------------------------------------------------------------- the combinatorial moments
def _noncrossing_partitions(k: int):
    """All non-crossing partitions of ``{0..k-1}`` as tuples of block sizes (brute force over set partitions)."""
    def partitions(elems):
        if not elems:
            yield []
            return
        first, rest = elems[0], elems[1:]
        for p in partitions(rest):
            yield [[first]] + p
            for i in range(len(p)):
                yield p[:i] + [[first] + p[i]] + p[i + 1:]

    def crossing(p):
        owner = {}
        for bi, b in enumerate(p):
            for e in b:
                owner[e] = bi
        for a_ in range(k):
            for b_ in range(a_ + 1, k):
                for c_ in range(b_ + 1, k):
                    for d_ in range(c_ + 1, k):
                        if owner[a_] == owner[c_] and owner[b_] == owner[d_] and owner[a_] != owner[b_]:
                            return True
        return False

    for p in partitions(list(range(k))):
        if not crossing(p):
            yield tuple(len(b) for b in p)


def ck_moments_noncrossing(activation, k: int, *, psi: float, phi: float, dps: int = 30) -> list:
    """Moments ``m_1..m_k`` of the conjugate-kernel law by a direct sum over non-crossing partitions.

    The combinatorial formula of docs/theory/kernel_spectra.md §1.4: ``K`` is compound free Poisson,
    ``m_j(K) = sum_{pi in NC(j)} prod_{V in pi} gamma^{|V|-1} E t^{|V|}`` with ``t ~ mu_1^2 s + mu_{>1}^2``
    and ``E s^r = sum_{pi in NC(r)} psi^{r - |pi|}`` (the MP law of ``W W^T``).  Brute force: ``k <= 9``.
    ``k`` positional; ``psi``, ``phi``, ``dps`` keyword-only.  Returns mpmath numbers.

    >>> [float(v) for v in ck_moments_noncrossing("identity", 3, psi=1.0, phi=1.0)]
    [1.0, 3.0, 12.0]
    """
    k = check_int("k", k, lo=1, hi=9)
    psi = _ratio("psi", psi)
    phi = _ratio("phi", phi)
    dps = check_int("dps", dps, 15, 1000)
    act = get_activation(activation)
    mu = hermite_coeffs(act, 1)
    with mp.workdps(dps):
        a = mp.mpf(float(mu[1])) ** 2
        c = mp.mpf(nonlinear_norm(act) ** 2)
        g = mp.mpf(phi) / mp.mpf(psi)
        ps = mp.mpf(psi)
        parts = {j: list(_noncrossing_partitions(j)) for j in range(1, k + 1)}
        s_mom = [mp.mpf(1)] + [mp.fsum(ps ** (r - len(p)) for p in parts[r]) for r in range(1, k + 1)]
        h_mom = [mp.fsum(mp.binomial(r, j) * a ** j * c ** (r - j) * s_mom[j] for j in range(r + 1))
                 for r in range(k + 1)]
        return [mp.fsum(mp.fprod(g ** (b - 1) * h_mom[b] for b in p) for p in parts[j]) for j in range(1, k + 1)]
