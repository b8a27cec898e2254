"""The one-step weight law ``N(0, Gamma)``, ``Gamma = A I + B beta* beta*^T`` (docs/theory/spiked_kernel.md §1).

rmtfl convention (docs/conventions.md §4–§6): one correlation-loss step
``W_1 = W_0 + eta G(W_0; X_1, y_1)`` with ``W_0`` rows ``N(0, I_d/d)``, Gaussian
``a ~ N(0, I_m/m)`` fixed, ``n`` samples, width ``m`` (= ``N``).  Per neuron
``w_j^1 = w_j^0 + eta mu_1 a_j beta_hat + r_j`` with ``beta_hat = X^T y/n``, so
given the data the neurons are i.i.d. with covariance
``I/d + kappa^2 beta_hat beta_hat^T + Sigma_r``, ``kappa^2 = eta^2 mu_1^2 / m``.

Three forms are returned (all three are second-moment statements about the
same weights):

1. **target** (``.A, .B, .b``; the ``phi = n/d -> inf`` idealisation):
   ``A = 1/d``, ``B = kappa^2 mu_1*^2 = eta^2 mu_1^2 mu_1*^2 / m``, ``b = B/A``.
   The variance of ``w`` along ``beta*`` is ``A + B`` at any ``phi``.
2. **finite-alpha / ĥ form** (``.A_hhat, .B_hhat, .b_hhat, .cos2_hhat``): the actual
   conditional law, spike along ``ĥ = beta_hat/|beta_hat|`` with
   ``B_hhat = kappa^2 E|beta_hat|^2`` and ``E|beta_hat|^2 = mu_1*^2 + ((d-1) E y^2 + E[y^2 z^2] - mu_1*^2)/n``
   (exact expectation; leading order ``mu_1*^2 + E y^2/phi``), ``A_hhat = 1/d + residual``
   with ``residual = eta^2 E[(sigma' - mu_1)^2] E y^2/(m n)``, and the predicted squared
   overlap ``cos^2(ĥ, beta*) = E<beta_hat, beta*>^2 / E|beta_hat|^2`` (leading order
   ``mu_1*^2/(mu_1*^2 + E y^2/phi)``).  ("alpha" is the giant-step name of ``phi = n/d``.)
3. **isotropic A' form** (``.A_prime, .B_prime``): averaging the data noise of ``beta_hat``,
   ``A' = 1/d + eta^2 E[sigma'^2] E y^2/(m n)``, ``B' = B``; ``d A'`` is the predicted
   orthogonal variance ``d E<w, e>^2`` (``e ⊥ beta*``).

Giant-step conversion (docs/conventions.md §10.2): ``eta_G = eta sqrt(m)``, ``kappa = eta_G mu_1/m``.

Examples
--------
>>> sc = spike_constants("relu", "linear", eta=4.0, n=1024, m=512, d=256)
>>> round(sc.A * 256, 12), round(sc.B, 12), round(sc.b, 10)     # B = 16 * 0.25 * 1 / 512
(1.0, 0.0078125, 2.0)
>>> round(eta_from_b("relu", "linear", 2.0, 512, 256), 12)
4.0
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from rmtfl._validate import check_int, check_nonnegative, check_real
from .._classical.activations import get_activation
from .._classical.hermite import gauss_hermite_rule, gaussian_moment, hermite_coeffs
from .._classical.targets import Target, make_target

__all__ = ["SpikeConstants", "spike_constants", "b_from_eta", "eta_from_b", "target_moments"]


@dataclass(frozen=True)
class SpikeConstants:
    """Spiked covariance constants of the one-step weight law (see module docstring for the three forms)."""

    A: float
    B: float
    b: float
    A_hhat: float
    B_hhat: float
    b_hhat: float
    cos2_hhat: float
    residual: float
    A_prime: float
    B_prime: float
    kappa2: float
    eta: float
    eta_giant: float
    mu1: float
    mu1_star: float
    Ey2: float
    beta_hat_norm2: float
    d: int
    m: int
    n: int

    @property
    def spike_variance(self) -> float:
        """Predicted ``d E_j <w_j, beta*>^2 = 1 + d B`` (any ``phi``)."""
        return 1.0 + self.d * self.B

    @property
    def orthogonal_variance(self) -> float:
        """Predicted ``d E_j <w_j, e>^2`` for ``e ⊥ beta*``: ``d A'``."""
        return self.d * self.A_prime


def target_moments(target, noise: float = 0.0):
    """``(mu_1*, E y^2, E[y^2 z^2])`` of a single-index target (``z = <beta*, x>``), noise included."""
    t = target if isinstance(target, Target) else make_target(target, noise=noise)
    if noise and isinstance(target, Target):
        t = make_target(target, noise=noise)
    if t.rank != 1:
        raise ValueError(f"target must be single-index (rank 1) for the spiked kernel, got rank {t.rank}")
    g = t.links[0]
    mu1s = float(t.mu1[0])
    Ey2 = float(t.second_moment)
    x, w = gauss_hermite_rule(400)
    gx = np.asarray(g(x), dtype=float)
    Ey2z2 = float(w @ (gx * gx * x * x)) + t.noise**2
    return mu1s, Ey2, Ey2z2


def spike_constants(activation, target, eta: float, n: int, m: int, d: int, noise: float = 0.0) -> SpikeConstants:
    """``A``, ``B``, ``b = B/A`` of the one-step weights, plus the ĥ (finite-alpha) and isotropic ``A'`` forms.

    Parameters
    ----------
    activation : str or Activation
        Student activation ``sigma``.
    target : str, Target, ...
        Single-index target (anything :func:`~rmtfl.theory.make_target` accepts).
    eta : float
        rmtfl step size ``eta_1`` (giant-step ``eta_G = eta sqrt(m)``).
    n, m, d : int
        Samples of the step, width, input dimension (``d >= 2``).
    noise : float
        Label-noise standard deviation (added to the target's).

    Returns
    -------
    SpikeConstants
        ``.A, .B, .b``: target-aligned form (i); ``.A_hhat, .B_hhat, .b_hhat, .cos2_hhat``:
        spike along ĥ at finite ``phi`` (ii); ``.A_prime, .B_prime``: isotropic form (iii).
    """
    act = get_activation(activation)
    eta = check_real("eta", eta)
    n = check_int("n", n, lo=1)
    m = check_int("m", m, lo=1)
    d = check_int("d", d, lo=2)
    noise = check_nonnegative("noise", noise)
    mu1s, Ey2, Ey2z2 = target_moments(target, noise)
    mu1 = float(hermite_coeffs(act, 1)[1])
    Es2 = float(gaussian_moment(act, 1, 1))  # E[sigma'(z)^2]
    kappa2 = eta**2 * mu1**2 / m
    A = 1.0 / d
    B = kappa2 * mu1s**2
    bh2 = mu1s**2 + ((d - 1) * Ey2 + Ey2z2 - mu1s**2) / n
    along = mu1s**2 + (Ey2z2 - mu1s**2) / n
    residual = eta**2 * max(Es2 - mu1**2, 0.0) * Ey2 / (m * n)
    A_h = A + residual
    B_h = kappa2 * bh2
    A_p = A + eta**2 * Es2 * Ey2 / (m * n)
    return SpikeConstants(A=A, B=B, b=B / A, A_hhat=A_h, B_hhat=B_h, b_hhat=B_h / A_h,
                          cos2_hhat=along / bh2, residual=residual, A_prime=A_p, B_prime=B,
                          kappa2=kappa2, eta=eta, eta_giant=eta * math.sqrt(m), mu1=mu1, mu1_star=mu1s,
                          Ey2=Ey2, beta_hat_norm2=bh2, d=d, m=m, n=n)


def b_from_eta(activation, target, eta: float, m: int, d: int) -> float:
    """``b = eta^2 mu_1^2 mu_1*^2 / psi`` with ``psi = m/d`` (target-aligned form)."""
    act = get_activation(activation)
    eta = check_real("eta", eta)
    m, d = check_int("m", m, lo=1), check_int("d", d, lo=2)
    mu1s = target_moments(target)[0]
    mu1 = float(hermite_coeffs(act, 1)[1])
    return eta**2 * mu1**2 * mu1s**2 * d / m


def eta_from_b(activation, target, b: float, m: int, d: int) -> float:
    """``eta = sqrt(b psi)/|mu_1 mu_1*|``: the step that gives spike ratio ``b`` (docs/theory/spiked_kernel.md §1.3)."""
    act = get_activation(activation)
    b = check_nonnegative("b", b)
    m, d = check_int("m", m, lo=1), check_int("d", d, lo=2)
    mu1s = target_moments(target)[0]
    mu1 = float(hermite_coeffs(act, 1)[1])
    if mu1 * mu1s == 0:
        raise ValueError("mu_1(sigma) * mu_1(g) must be non-zero to reach a spike with one step")
    return math.sqrt(b * m / d) / abs(mu1 * mu1s)
