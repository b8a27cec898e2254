"""The deformed Marchenko–Pastur law behind the conjugate-kernel spectrum (docs/theory/kernel_spectra.md §1).

Normalisation
-------------
``K = (1/N) Z T Z^T`` (``n x n``) with ``Z`` ``n x N`` iid standard Gaussian and ``T`` (``N x N``)
independent of ``Z`` with spectral law ``H`` = law of ``a s + c``, ``s`` distributed as the eigenvalues
of ``W W^T`` (``W`` ``N x d`` with iid ``N(0, 1/d)`` entries, ratio ``psi = N/d``).  ``gamma = n/N``.
The Stieltjes transform ``m(z) = int dmu(t)/(t - z)`` of the limit law of ``K`` solves
(docs/theory/kernel_spectra.md §1.2)

``m = 1 / (-z + int t dH(t)/(1 + gamma t m))``,

which, with ``h = 1 - gamma - gamma z m``, becomes the quartic (cubic if ``c = 0``)

``-psi gamma a m (1 + gamma c m) h^2 + (-(1 + gamma c m) + (psi - 1) gamma a m) h + 1 = 0``.

This module is the solver: polynomial coefficients, the root that is a Stieltjes transform,
support intervals, a Chebyshev table of the distribution function and the moments from the
series solution of the same equation.  The public object is :func:`rmtfl.theory.ck_spectrum`.

>>> law = DeformedMP(0.25, 0.5 - 1 / (2 * np.pi) - 0.25, 1.0, 1.0)   # relu, psi = phi = 1
>>> [round(x, 6) for x in law.intervals[0]]
[0.0, 1.967045]
"""
from __future__ import annotations

import math

import mpmath as mp
import numpy as np
from numpy.polynomial import chebyshev as C

__all__ = ["DeformedMP"]

#: Chebyshev degree of the distribution-function table on each support interval.
CHEB_DEG = 256
#: Points of the coarse scan that locates the support intervals.
SCAN_POINTS = 3000


def _companion_roots(coef):
    """Roots of the polynomials with coefficient rows ``coef`` (highest degree first), vectorised."""
    coef = np.asarray(coef, dtype=complex)
    deg = coef.shape[-1] - 1
    lead = coef[..., 0]
    comp = np.zeros(coef.shape[:-1] + (deg, deg), dtype=complex)
    comp[..., 0, :] = -coef[..., 1:] / lead[..., None]
    if deg > 1:
        idx = np.arange(deg - 1)
        comp[..., idx + 1, idx] = 1.0
    return np.linalg.eigvals(comp)


class DeformedMP:
    """Solver for the law of ``(1/N) Z T Z^T`` with ``T`` of law ``a MP(psi) + c`` (docs/theory/kernel_spectra.md §1.2).

    ``a = mu_1^2 >= 0``, ``c = E sigma^2 - mu_0^2 - mu_1^2 >= 0`` (not both zero), ``psi = N/d``,
    ``gamma = n/N``.  ``a = 0`` is the Marchenko–Pastur law of ratio ``gamma`` and variance ``c``.
    """

    def __init__(self, a: float, c: float, psi: float, gamma: float):
        self.a, self.c, self.psi, self.gamma = float(a), float(c), float(psi), float(gamma)
        # t_max bounds the population law; the law of K lies in [0, t_max (1 + sqrt(gamma))^2]
        self.t_max = self.c + self.a * (1.0 + math.sqrt(self.psi)) ** 2
        self.scale = self.t_max * (1.0 + math.sqrt(self.gamma)) ** 2
        rank = 1.0 if self.c > 0 else min(1.0, 1.0 / self.psi)  # rank(T) / N = min(N, d) / N
        # rank(K)/n = min(1, rank(T) N / n)
        self.atom = max(0.0, 1.0 - rank / self.gamma)
        self.intervals = self._support()
        self._tables = [self._cdf_table(lo, hi) for lo, hi in self.intervals]

    # ----------------------------------------------------------------- the polynomial
    def coefficients(self, z):
        """Coefficients (highest degree first) of the polynomial in ``m`` at ``z`` (array of shape ``z.shape + (5,)``)."""
        a, c, psi, g = self.a, self.c, self.psi, self.gamma
        z = np.asarray(z, dtype=complex)
        if a == 0.0:  # MP of ratio gamma, variance c: gamma c z m^2 + (z + c (gamma - 1)) m + 1 = 0 (scaled)
            zero = np.zeros_like(z)
            return np.stack([zero, zero, g * c * z, z + c * (g - 1.0), np.ones_like(z)], -1)
        h0, h1 = 1.0 - g, -g * z
        e1 = g * ((psi - 1.0) * a - c)
        A = psi * g * a
        c0 = np.full_like(z, g)
        c1 = -A * h0 ** 2 - h1 + e1 * h0
        c2 = -A * (2.0 * h0 * h1 + g * c * h0 ** 2) + e1 * h1
        c3 = -A * (h1 ** 2 + 2.0 * g * c * h0 * h1)
        c4 = -A * g * c * h1 ** 2
        return np.stack([c4, c3, c2, c1, c0], -1)

    def _degree(self):
        if self.a == 0.0:
            return 2
        return 4 if self.c > 0.0 else 3

    def roots(self, z):
        """All roots ``m`` of the polynomial at each ``z`` (shape ``z.shape + (degree,)``)."""
        coef = self.coefficients(z)
        coef = coef[..., 5 - self._degree() - 1:]
        return _companion_roots(coef)

    def _admissible(self, m):
        """Nevanlinna conditions of a candidate ``m`` in the upper half plane (docs/theory/kernel_spectra.md §1.3)."""
        tol = 1e-9 * np.maximum(np.abs(m), 1e-300)
        ok = m.imag > tol
        if self.a > 0.0:
            g = self.gamma * m * self.a * (1.0 - self.gamma - self.gamma * self._z * m)
            zeta = -(1.0 + self.gamma * m * self.c) / (self.gamma * m * self.a)
            gt = 1e-9 * np.maximum(np.abs(g), 1e-300)
            ok &= (g.imag > -gt) & ((zeta * g).imag > -gt * np.maximum(np.abs(zeta), 1.0))
        return ok

    def stieltjes_upper(self, z):
        """``m(z)`` for ``Im z >= 0`` (on the real axis: the limit from above), vectorised."""
        z = np.atleast_1d(np.asarray(z, dtype=complex))
        r = self.roots(z)
        self._z = z[..., None]
        ok = self._admissible(r)
        im = np.where(ok, r.imag, -np.inf)
        pick = np.argmax(im, axis=-1)
        m = np.take_along_axis(r, pick[..., None], -1)[..., 0]
        none = ~np.any(ok, axis=-1)
        if np.any(none):  # on the real axis outside the support: the real root
            m = m.astype(complex)
            m[none] = self._real_branch(z[none].real)
        return m

    def _real_branch(self, x):
        """The real root ``m(x)`` for real ``x`` outside the support (docs/theory/kernel_spectra.md §1.3).

        Chosen at ``x + i delta`` by the Nevanlinna conditions, then polished by Newton at ``x``.
        """
        x = np.asarray(x, dtype=float)
        delta = 1e-7 * self.scale
        z = x + 1j * delta
        r = self.roots(z)
        self._z = z[..., None]
        ok = self._admissible(r)
        # Nevanlinna: Im m > 0; the true branch has the smallest Im part consistent with m(x) real
        score = np.where(ok, np.abs(r - (-1.0 / z[..., None])), np.inf)
        # fallback for points far from the support: the root closest to -1/z
        pick = np.argmin(np.where(np.isfinite(score).any(-1, keepdims=True), score,
                                  np.abs(r - (-1.0 / z[..., None]))), axis=-1)
        m = np.take_along_axis(r, pick[..., None], -1)[..., 0].real.astype(complex)
        coef = self.coefficients(x)
        for _ in range(30):  # Newton on the polynomial at the real point
            p = np.zeros_like(m)
            dp = np.zeros_like(m)
            for k in range(5):
                dp = dp * m + p
                p = p * m + coef[..., k]
            step = np.where(dp != 0, p / np.where(dp != 0, dp, 1.0), 0.0)
            m = m - step
            if np.all(np.abs(step) <= 1e-15 * np.abs(m)):
                break
        return m.real + 0j

    def density_raw(self, x):
        """Density of the continuous part at real ``x`` (``Im m(x + i0) / pi``)."""
        x = np.atleast_1d(np.asarray(x, dtype=float))
        pos = x > 0
        xz = np.where(pos, x, 1.0) + 0j  # the polynomial degenerates at z = 0; the density is 0 there
        r = self.roots(xz)
        self._z = xz[..., None]
        ok = self._admissible(r)
        im = np.where(ok, r.imag, 0.0).max(-1)
        return np.where(pos, im / math.pi, 0.0)

    # --------------------------------------------------------------- support
    def _inside(self, x):
        return self.density_raw(x) > 0.0

    def _support(self):
        """Support intervals of the continuous part: a scan, then bisection of each change."""
        hi = self.scale * 1.02
        # dense near 0 (lower edges can be tiny), uniform further out
        xs = np.unique(np.concatenate([np.geomspace(1e-12 * hi, hi, SCAN_POINTS // 2),
                                       np.linspace(0, hi, SCAN_POINTS)[1:]]))
        ins = self._inside(xs)
        out = []
        start = None
        if ins[0]:
            start = 0.0
        for i in range(1, len(xs)):
            if ins[i] and not ins[i - 1]:
                start = self._bisect(xs[i - 1], xs[i], rising=True)
            elif ins[i - 1] and not ins[i]:
                out.append((start, self._bisect(xs[i - 1], xs[i], rising=False)))
                start = None
        if start is not None:
            out.append((start, float(hi)))
        if not out:
            raise ValueError("the conjugate-kernel law has no continuous part (zero variance activation)")
        return tuple(out)

    def _bisect(self, lo, hi, rising):
        for _ in range(80):
            mid = 0.5 * (lo + hi)
            if mid in (lo, hi):
                break
            if self._inside(np.array([mid]))[0] == rising:
                hi = mid
            else:
                lo = mid
        return float(lo if rising else hi)

    # ---------------------------------------------------------------- cdf table
    def _cdf_table(self, lo, hi):
        """Chebyshev series (in ``theta``, ``x = lo + (hi - lo)(1 - cos theta)/2``) of the cumulative mass."""
        f = C.Chebyshev.interpolate(lambda th: self._theta_integrand(th, lo, hi), CHEB_DEG, domain=[0.0, math.pi])
        return f.integ(lbnd=0.0)

    @staticmethod
    def _x_of_theta(th, lo, hi):
        return lo + (hi - lo) * (1.0 - np.cos(th)) / 2.0

    def _theta_integrand(self, th, lo, hi):
        x = self._x_of_theta(th, lo, hi)
        return self.density_raw(x) * (hi - lo) * np.sin(th) / 2.0

    def cdf(self, x):
        """Distribution function (atom included, right-continuous) at real ``x``."""
        x = np.asarray(x, dtype=float)
        out = np.where(x >= 0.0, self.atom, 0.0)
        for (lo, hi), F in zip(self.intervals, self._tables):
            th = np.arccos(np.clip(1.0 - 2.0 * (np.clip(x, lo, hi) - lo) / (hi - lo), -1.0, 1.0))
            part = np.where(x >= hi, F(math.pi), np.where(x <= lo, 0.0, F(th)))
            out = out + part
        total = self.atom + sum(float(F(math.pi)) for F in self._tables)
        return np.clip(out / total, 0.0, 1.0)  # renormalise the table's ~1e-12 quadrature error

    def quantile(self, p):
        """``inf{x : F(x) >= p}`` (0 for ``p <= atom``), vectorised bisection in ``theta``."""
        p = np.asarray(p, dtype=float)
        masses = np.array([float(F(math.pi)) for F in self._tables])
        total = self.atom + masses.sum()
        target = p * total
        out = np.zeros(p.shape)
        below = self.atom
        # p at the atom's mass (up to the table's ~1e-12 quadrature error) is in the atom: quantile 0
        done = target <= self.atom + 1e-11 * total if self.atom > 0 else np.zeros(p.shape, bool)
        if self.atom == 0:
            out = np.where(target <= 0, self.intervals[0][0], out)
            done = target <= 0
        for (lo, hi), F, mass in zip(self.intervals, self._tables, masses):
            sel = (~done) & (target <= below + mass)
            if np.any(sel):
                tgt = target[sel] - below
                a_ = np.zeros(tgt.shape)
                b_ = np.full(tgt.shape, math.pi)
                for _ in range(60):
                    mid = 0.5 * (a_ + b_)
                    up = F(mid) >= tgt
                    b_ = np.where(up, mid, b_)
                    a_ = np.where(up, a_, mid)
                out[sel] = self._x_of_theta(b_, lo, hi)
                done = done | sel
            below += mass
        out = np.where(done, out, self.intervals[-1][1])
        return out

    # ---------------------------------------------------------------- moments
    def population_moments(self, kmax: int, dps: int = 30):
        """Moments ``E t^j`` of ``H`` (``a MP(psi) + c``), ``j = 0..kmax``, as mpmath numbers."""
        with mp.workdps(dps):
            psi = mp.mpf(self.psi)
            # MP(psi) moments: sum_j Narayana(k, j) psi^(k - j)  (docs/theory/classical.md §1)
            s = [mp.mpf(1)] + [mp.fsum(mp.binomial(k, j) * mp.binomial(k, j - 1) / k * psi ** (k - j)
                                       for j in range(1, k + 1)) for k in range(1, kmax + 1)]
            a, c = mp.mpf(self.a), mp.mpf(self.c)
            return [mp.fsum(mp.binomial(k, j) * a ** j * c ** (k - j) * s[j] for j in range(k + 1))
                    for k in range(kmax + 1)]

    def moments_series(self, kmax: int, dps: int = 30):
        """Moments ``m_0..m_kmax`` of the law of ``K`` from the power-series solution of the equation for ``m``.

        With ``w = 1/z`` and ``m = -w M(w)``, the equation reads ``M = 1 + sum_j gamma^(j-1) H_j (w M)^j``
        (docs/theory/kernel_spectra.md §1.4); it is solved order by order.
        """
        with mp.workdps(dps):
            H = self.population_moments(kmax, dps)
            g = mp.mpf(self.gamma)
            M = [mp.mpf(1)] + [mp.mpf(0)] * kmax
            for _ in range(kmax):
                # u = w M (coefficients shifted by one)
                u = [mp.mpf(0)] + M[:kmax]
                new = [mp.mpf(1)] + [mp.mpf(0)] * kmax
                power = [mp.mpf(1)] + [mp.mpf(0)] * kmax
                for j in range(1, kmax + 1):
                    power = _mul(power, u, kmax)
                    coef = g ** (j - 1) * H[j]
                    for k in range(kmax + 1):
                        new[k] += coef * power[k]
                M = new
            return M


def _mul(p, q, kmax):
    out = [mp.mpf(0)] * (kmax + 1)
    for i, pi in enumerate(p):
        if pi == 0:
            continue
        for j in range(kmax + 1 - i):
            out[i + j] += pi * q[j]
    return out
