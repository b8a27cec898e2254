"""Outliers of the conjugate kernel after one large gradient step (docs/theory/kernel_spectra.md §4).

Normalisation: docs/conventions.md §3–5.  ``W_1 = W_0 + eta G(W_0; X, y)`` from one step on a batch of
``n = phi d`` samples (``a ~ N(0, I_N/N)``, correlation loss); the conjugate kernel
``K_1 = sigma(X~ W_1^T) sigma(X~ W_1^T)^T / N`` is taken on **fresh** inputs ``X~`` (``n x d``).

``alpha = 0`` (fixed ``eta``; docs/theory/kernel_spectra.md §4.1): by Gaussian equivalence the rows of
``sigma(X~ W_1^T) - mu_0`` behave as ``N(0, T)`` with ``T = mu_1^2 W_1 W_1^T + mu_{>1}^2 I``.  ``W_1`` carries one
BGN outlier ``s_1`` (:func:`rmtfl.theory.one_step`), so ``T`` has one population spike
``t_1 = mu_1^2 s_1^2 + mu_{>1}^2`` and the kernel an outlier at Bai–Yao's

``lam = gamma t_1 + t_1 (t_1 G_H(t_1) - 1)``,  ``G_H(t) = int dH(u)/(t - u)``,  ``gamma = n/N``,

when ``lam'(t_1) > 0``: a second BBP threshold on ``eta``, above the one of ``W_1``.  The ``mu_0``
outlier of docs/theory/kernel_spectra.md §2 stays.

``alpha > 0`` (``eta = c N^alpha``, ``N`` given; docs/theory/kernel_spectra.md §4.2): the feature matrix gains the rank-``ell(alpha)``
mean ``sum_k (mu_k eta^k / k!) M_k(mu_1 X~ beta_hat; tau_h) (a^{⊙k})^T`` (docs/theory/two_step.md §4); the
spikes of ``K`` are, to leading order, the eigenvalues of its ``(k, l)`` Gram built from Gaussian moments,
plus the mean bulk shift.

Examples
--------
>>> p = ck_one_step_spikes("tanh", "linear", psi=1.0, phi=2.0, eta=3.0)
>>> p.spikes[0].kind, round(p.spikes[0].location, 4)
('step', 5.8735)
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from rmtfl._results import Result
from rmtfl._validate import check_in_range, check_positive
from .._classical.activations import double_factorial, get_activation
from .._classical.ck import ck_spectrum, CKSpectrum
from .._classical.hermite import gaussian_moment, hermite_coeffs
from .._classical.mp import mp_stieltjes
from .._classical.targets import make_target
from .one_step import one_step
from .outliers import one_step_spike_count

__all__ = ["ck_one_step_spikes", "CKStepSpikes", "CKStepSpike"]


@dataclass(frozen=True)
class CKStepSpike(Result):
    """One predicted outlier of the conjugate kernel after one step (docs/theory/kernel_spectra.md §4).

    ``kind``: ``"mu0"`` (constant mode), ``"step"`` (``alpha = 0``: the Bai–Yao spike of the step),
    or ``"step k"`` (``alpha > 0``: the ``k``-th Hermite spike); ``location``: predicted eigenvalue of ``K``
    (``nan`` when below threshold); ``exists``.

    >>> CKStepSpike("step", 4.0, True).to_dict()
    {'kind': 'step', 'location': 4.0, 'exists': True}
    """

    kind: str
    location: float
    exists: bool


@dataclass(frozen=True)
class CKStepSpikes(Result):
    """Prediction for the conjugate kernel after one step (docs/theory/kernel_spectra.md §4).

    ``bulk``: the :class:`~rmtfl.theory.CKSpectrum` (unchanged by the step); ``spikes``: the step's outliers
    (beyond the ``mu_0`` one, which is in ``bulk.outliers`` when ``N`` is given); ``count``: how many exist;
    ``eta_threshold``: smallest ``eta`` that separates the ``alpha = 0`` spike; ``w_singular_value``: ``s_1(W_1)``;
    ``ell``: ``ell(alpha)`` of docs/theory/two_step.md §4 (``alpha`` given).

    >>> ck_one_step_spikes("tanh", "linear", psi=1.0, phi=2.0, eta=0.5).count
    0
    """

    activation: str
    psi: float
    phi: float
    eta: float
    alpha: float
    N: int | None
    w_singular_value: float
    eta_threshold: float
    count: int
    ell: int | None
    spikes: tuple
    bulk: CKSpectrum


def _bai_yao(law: CKSpectrum, s1: float) -> tuple[float, float]:
    """``(lam, lam')`` of the population spike ``t1 = mu1^2 s1^2 + c`` (docs/theory/kernel_spectra.md §4.1)."""
    a = law.mu1 ** 2
    c = law.nonlinear_var
    g = law.phi / law.psi

    def lam(s):
        t1 = a * s * s + c
        GH = float(np.real(mp_stieltjes(s * s, law.psi))) / a
        return g * t1 + t1 * (t1 * GH - 1.0)

    h = 1e-6 * s1
    return lam(s1), (lam(s1 + h) - lam(s1 - h)) / (2 * h)


def ck_one_step_spikes(activation, target, *, psi: float, phi: float, eta: float, N: int | None = None,
                       alpha: float | None = None, noise: float = 0.0) -> CKStepSpikes:
    """Number and locations of the conjugate-kernel outliers after one step (docs/theory/kernel_spectra.md §4).

    Parameters
    ----------
    activation, target
        ``sigma`` and the target (as for :func:`rmtfl.theory.one_step`).
    psi, phi : float, keyword-only
        ``N/d`` and ``n/d`` (the training batch and the fresh CK inputs have the same size ``n``).
    eta : float, keyword-only
        The step size ``eta = c N^alpha`` as a number.
    N : int, optional, keyword-only
        Width; gives the finite-size ``mu_0`` outlier and, for ``alpha > 0``, the Hermite spikes.
    alpha : float, optional, keyword-only
        Exponent in ``[0, 1/2)``; ``None`` or 0 is the proportional (BBP) regime.
    noise : float, keyword-only
        Label-noise standard deviation.

    >>> p = ck_one_step_spikes("relu", "linear", psi=1.0, phi=1.0, eta=4.0, N=2000)
    >>> p.count, [s.kind for s in p.spikes]
    (2, ['mu0', 'step'])
    """
    psi = check_positive("psi", psi)
    phi = check_positive("phi", phi)
    eta = check_in_range("eta", eta, -1e6, 1e6)
    alpha = 0.0 if alpha is None else check_in_range("alpha", alpha, 0.0, 0.5, hi_open=True)
    act = get_activation(activation)
    law = ck_spectrum(act, psi=psi, phi=phi, N=N)
    pred = one_step(act, target, psi=psi, phi=phi, eta=eta, noise=noise)
    spikes = []
    if N is not None and alpha == 0:
        r = _finite_n_amplitude(act, target, law, eta, N, noise)
        pred = one_step(act, target, psi=psi, phi=phi, eta=eta * r, noise=noise)
        if law.outliers and law.outliers[0].kind == "mu0":
            spikes.append(_mu0_after_step(act, target, law, eta, N, noise))
    if law.mu1 != 0 and pred.is_outlier:
        lam, dlam = _bai_yao(law, pred.singular_value)
        ok = dlam > 0 and lam > law.edges.upper
        spikes.append(CKStepSpike("step", float(lam) if ok else math.nan, bool(ok)))
    else:
        spikes.append(CKStepSpike("step", math.nan, False))
    thr = _eta_threshold(act, target, law, psi, phi, noise)
    ell = None
    if alpha > 0:
        if N is None:
            raise ValueError("alpha > 0 needs N= (the Hermite spikes grow with N)")
        ell = int(one_step_spike_count(alpha))
        spikes = _hermite_spikes(act, target, law, eta, N, noise)
    count = sum(1 for s in spikes if s.exists)
    return CKStepSpikes(act.name, psi, phi, float(eta), float(alpha), law.N, float(pred.singular_value), thr,
                        count, ell, tuple(spikes), law)


def _step_moments(act, target, law, noise):
    """``(sigma_b^2, tau_h^2)``: variance of ``b = mu_1 x~ . beta_hat`` and of the neuron fluctuation (docs/theory/two_step.md §4)."""
    t = make_target(target)
    if noise:
        t = make_target(t, noise=math.hypot(noise, t.noise))
    mu = hermite_coeffs(act, 1)
    bnorm2 = sum(m * m for m in t.mu1) + t.second_moment / law.phi
    try:
        tau2 = max(gaussian_moment(act, 1, 1) - mu[1] ** 2, 0.0) * t.second_moment / law.phi
    except ValueError:
        tau2 = 0.0
    return mu[1] ** 2 * bnorm2, tau2


def _finite_n_amplitude(act, target, law, eta, N, noise, kmax=7) -> float:
    """Finite-``N`` factor ``r`` on the rank-one step from the odd Hermite terms ``k >= 3`` (docs/theory/kernel_spectra.md §4.1).

    ``r = 1 + sum_k (mu_k eta^(k-1) / (k! mu_1)) (E[M_k(b) b] / E b^2) k!! N^((1-k)/2)``.
    """
    mu = hermite_coeffs(act, kmax)
    if mu[1] == 0:
        return 1.0
    b2, tau2 = _step_moments(act, target, law, noise)
    r = 1.0
    for k in range(3, kmax + 1, 2):
        proj = _moment_poly_cross(k, b2, tau2) / b2
        r += mu[k] * eta ** (k - 1) / (math.factorial(k) * mu[1]) * proj * double_factorial(k) * N ** ((1 - k) / 2)
    return r


def _moment_poly_cross(k, b2, tau2):
    """``E[M_k(b; tau) b]`` for ``b ~ N(0, b2)``."""
    tot = 0.0
    for j in range(k + 1):
        if (k - j) % 2 == 0 and (j + 1) % 2 == 0:
            tot += math.comb(k, j) * double_factorial(k - j - 1) * tau2 ** ((k - j) / 2) * double_factorial(j) * b2 ** ((j + 1) / 2)
    return tot


def _mu0_after_step(act, target, law, eta, N, noise) -> CKStepSpike:
    """The ``mu_0`` outlier after the step (docs/theory/kernel_spectra.md §4.1).

    The mean feature grows by ``mu_2 eta^2 (sigma_b^2 + tau_h^2) / (2N)``.
    """
    from .._classical.ck import ck_mu0_outlier

    b2, tau2 = _step_moments(act, target, law, noise)
    mu2 = law.mu2
    shift = mu2 * eta ** 2 * (b2 + tau2) / (2.0 * N)
    o = ck_mu0_outlier(law, shift)
    return CKStepSpike("mu0", o, bool(o == o))


def _eta_threshold(act, target, law, psi, phi, noise) -> float:
    """Smallest ``eta`` whose Bai–Yao spike separates (bisection; ``inf`` if ``mu_1 = 0``)."""
    if law.mu1 == 0:
        return math.inf

    def sep(e):
        p = one_step(act, target, psi=psi, phi=phi, eta=e, noise=noise)
        if not p.is_outlier:
            return False
        lam, dlam = _bai_yao(law, p.singular_value)
        return dlam > 0 and lam > law.edges.upper

    lo = one_step(act, target, psi=psi, phi=phi, eta=1.0, noise=noise).threshold
    if not math.isfinite(lo):
        return math.inf
    hi = lo * 1.01 + 1e-12
    while not sep(hi):
        hi *= 2.0
        if hi > 1e6:
            return math.inf
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if sep(mid):
            hi = mid
        else:
            lo = mid
    return float(hi)


def _hermite_spikes(act, target, law, eta, N, noise, kmax=6):
    """Leading-order spikes for ``alpha > 0`` (docs/theory/kernel_spectra.md §4.2)."""
    mu = hermite_coeffs(act, kmax)
    # b = mu_1 x~ . beta_hat has variance b2; tau_h^2 = E[(sigma' - mu_1)^2] E[y^2] / phi (docs/theory/two_step.md §4)
    b2, tau2 = _step_moments(act, target, law, noise)
    n = law.n
    # Gram of the spike vectors: u_k = M_k(b; tau) on the n side, v_k = a^{⊙k} on the N side (k = 0..kmax)
    K = kmax + 1
    Gu = np.zeros((K, K))
    Gv = np.zeros((K, K))
    for k in range(K):
        for m in range(K):
            Gu[k, m] = n * _moment_poly_product(k, m, b2, tau2)
            p = k + m
            Gv[k, m] = N * (double_factorial(p - 1) * N ** (-p / 2) if p % 2 == 0 else 0.0)
    coef = np.array([mu[k] * eta ** k / math.factorial(k) for k in range(K)])
    C = np.diag(coef)
    # eigenvalues of (1/N) U C V^T V C U^T on span(U): those of (1/N) Gu^{1/2} C Gv C Gu^{1/2}
    w, Q = np.linalg.eigh(Gu)
    w = np.clip(w, 0, None)
    R = Q @ np.diag(np.sqrt(w)) @ Q.T
    vals = np.sort(np.linalg.eigvalsh(R @ C @ Gv @ C @ R / N))[::-1]
    shift = law.moments(1)[1] * (1.0 + law.phi / law.psi)  # mean bulk shift m1 (1 + gamma)
    edge = law.edges.upper
    out = []
    for i, v in enumerate(vals[: min(K, 4)]):
        loc = float(v + shift)
        ex = bool(v > 4.0 * edge)  # leading order is trustworthy only well above the bulk
        out.append(CKStepSpike(f"hermite mode {i}", loc if ex else math.nan, ex))
    return out


def _moment_poly_product(k: int, m: int, b2: float, tau2: float) -> float:
    """``E[M_k(b; tau) M_m(b; tau)]`` for ``b ~ N(0, b2)``, ``M_k(b; tau) = E_xi (b + xi)^k``, ``xi ~ N(0, tau^2)``."""
    def poly(k):
        # coefficients of M_k(b) in powers of b: sum_j C(k, j) b^j E xi^{k-j}
        return [math.comb(k, j) * (double_factorial(k - j - 1) * tau2 ** ((k - j) / 2) if (k - j) % 2 == 0 else 0.0)
                for j in range(k + 1)]

    pk, pm = poly(k), poly(m)
    tot = 0.0
    for i, ci in enumerate(pk):
        for j, cj in enumerate(pm):
            p = i + j
            if p % 2 == 0:
                tot += ci * cj * double_factorial(p - 1) * b2 ** (p / 2)
    return tot
