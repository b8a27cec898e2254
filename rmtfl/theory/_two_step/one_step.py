"""One large gradient step: the rank-one spike of ``W_1`` and its BBP/BGN predictions (docs/theory/two_step.md §3).

Normalisation (docs/conventions.md §3–§5): ``W_0`` entries ``N(0, 1/d)``, ``a ~ N(0, I_N/N)``,
``x ~ N(0, I_d)``, correlation loss with mean reduction, ``W_1 = W_0 + eta G``.
Ratios ``psi = N/d`` and ``phi = n/d``.  In the proportional limit at fixed ``eta``
(``alpha_1 = 0``)

    W_1 ≈ W_0 + eta mu_1 a beta_hat^T,   ||beta_hat||^2 -> sum_r mu_1(g_r)^2 + E[y^2]/phi,

so the spike strength is ``theta_1 = |eta mu_1| ||beta_hat||`` and BGN
(:mod:`rmtfl.theory._classical.bgn`) gives the top singular value and the two alignments.

Examples
--------
>>> p = one_step("tanh", "linear", psi=1.0, phi=2.0, eta=3.0)
>>> round(p.theta, 6), round(p.singular_value, 6), round(p.cos2_target, 6)
(2.225504, 2.674841, 0.532065)
>>> round(p.threshold, 6)
1.348009
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from rmtfl._results import Result
from rmtfl._validate import check_in_range, check_positive
from .._classical.activations import get_activation
from .._classical.hermite import hermite_coeff
from .._classical.targets import make_target

__all__ = ["OneStepPrediction", "one_step", "bgn_predict"]


@dataclass(frozen=True)
class OneStepPrediction(Result):
    """Predictions for ``W_1 = W_0 + eta G`` (docs/theory/two_step.md §3.3).

    Attributes
    ----------
    theta : float
        Spike strength ``|eta mu_1| ||a|| ||beta_hat||`` (limit, ``||a|| -> 1``).
    singular_value : float
        Predicted ``s_1(W_1)``; the bulk edge ``1 + sqrt(psi)`` below threshold.
    cos2_target : float
        ``cos^2`` of the top right singular vector with the target subspace
        (sum over the directions ``beta*_r``; for one direction it is ``cos^2(v_1, beta*)``).
    cos2_targets : tuple of float
        The same per direction ``beta*_r``.
    cos2_second_layer : float
        ``cos^2`` of the top left singular vector with ``a``.
    threshold : float
        BBP threshold ``eta_c = psi^{1/4} / (|mu_1| ||beta_hat||)`` (``inf`` if ``mu_1 = 0``).
    bulk_edge : float
        ``1 + sqrt(psi)``, the limit of ``s_2(W_1)``.
    beta_hat_cos2 : tuple of float
        ``cos^2(beta_hat, beta*_r)``, the finite-``phi`` ceiling of the alignment.
    is_outlier : bool
        ``theta > psi^{1/4}`` (the BBP condition).
    """

    theta: float
    singular_value: float
    cos2_target: float
    cos2_targets: tuple
    cos2_second_layer: float
    threshold: float
    bulk_edge: float
    beta_hat_cos2: tuple
    is_outlier: bool


def bgn_predict(theta: float, psi: float) -> tuple[float, float, float]:
    """``(s, omega_N, omega_d)`` of BGN for a rank-one strength ``theta`` (0 overlaps below threshold).

    Internal helper (a tuple; the public form is :func:`rmtfl.theory.bgn_outlier`).

    >>> bgn_predict(0.5, 1.0)
    (2.0, 0.0, 0.0)
    """
    from .._classical.bgn import bgn_outlier

    if theta <= 0:
        return 1.0 + math.sqrt(psi), 0.0, 0.0
    s, wn, wd = bgn_outlier(theta, psi)
    return float(s), float(wn), float(wd)


def _mu1_exact_zero(mu: float) -> float:
    return 0.0 if abs(mu) < 1e-14 else mu


#: Largest ``|eta|`` and ``noise`` of :func:`one_step` (the spike strength is squared downstream).
SCALE_LIMIT = 1e100


def one_step(activation, target, *, psi, phi, eta, noise: float = 0.0) -> OneStepPrediction:
    """Predicted top singular value and alignments of ``W_1`` after one step (docs/theory/two_step.md §3.3).

    Normalisation: docs/conventions.md §3–§5 (``W_0`` entries ``N(0, 1/d)``, ``a ~ N(0, I/N)``,
    ``W_1 = W_0 + eta G`` with the correlation-loss gradient, mean reduction).

    Parameters
    ----------
    activation : str, callable or Activation
        ``sigma``; only ``mu_1(sigma)`` enters.
    target : anything :func:`~rmtfl.theory.make_target` accepts
        Single- or multi-index; links are centred (see :mod:`rmtfl.theory._classical.targets`).
    psi, phi : float > 0
        ``N/d`` and ``n/d``.
    eta : float
        Step size (a number; ``eta = c N^alpha``, the formulas are the ``alpha = 0`` limit),
        ``|eta| <= 1e100``.
    noise : float in ``[0, 1e100]``
        Label-noise standard deviation (added to the target's own noise).

    Notes
    -----
    A target with ``mu_1(g) = 0`` gives zero target alignment (not an error).
    Normalisation: ``||a|| -> 1`` (Gaussian ``N(0, 1/N)`` or Rademacher ``±1/sqrt(N)``).

    Examples
    --------
    >>> one_step("tanh", "he2n", psi=1.0, phi=2.0, eta=3.0).cos2_target
    0.0
    """
    act = get_activation(activation)
    psi = check_positive("psi", psi)
    phi = check_positive("phi", phi)
    eta = check_in_range("eta", eta, -SCALE_LIMIT, SCALE_LIMIT)
    noise = check_in_range("noise", noise, 0.0, SCALE_LIMIT)
    t = make_target(target)
    if noise:
        t = make_target(t, noise=math.hypot(noise, t.noise))
    mu1 = _mu1_exact_zero(hermite_coeff(act, 1))
    mus = tuple(_mu1_exact_zero(m) for m in t.mu1)
    ey2 = t.second_moment
    bnorm2 = sum(m * m for m in mus) + ey2 / phi
    theta = abs(eta * mu1) * math.sqrt(bnorm2)
    s, wn, wd = bgn_predict(theta, psi)
    per = tuple(wd * m * m / bnorm2 for m in mus)
    edge = 1.0 + math.sqrt(psi)
    thr = math.inf if mu1 == 0 or bnorm2 == 0 else psi**0.25 / (abs(mu1) * math.sqrt(bnorm2))
    return OneStepPrediction(
        theta=theta, singular_value=s, cos2_target=float(sum(per)), cos2_targets=per,
        cos2_second_layer=wn, threshold=thr, bulk_edge=edge,
        beta_hat_cos2=tuple(m * m / bnorm2 for m in mus), is_outlier=theta > psi**0.25,
    )
