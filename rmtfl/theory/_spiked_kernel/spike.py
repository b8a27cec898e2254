"""The one-step weight law ``N(0, Gamma)``, ``Gamma = A I + B beta* beta*^T`` (docs/theory/spiked_kernel.md §1).

rmtfl convention (docs/conventions.md §4–§6): one correlation-loss step
``W_1 = W_0 + eta G(W_0; X, y)`` with ``W_0`` rows ``N(0, I_d/d)``, Gaussian
``a ~ N(0, I_N/N)`` fixed, ``n`` samples, width ``N``.  Per neuron
``w_j^1 = w_j^0 + eta mu_1 a_j beta_hat + r_j`` with ``beta_hat = X^T y/n``, so
given the data the neurons are i.i.d. with covariance
``I/d + kappa^2 beta_hat beta_hat^T + Sigma_r``, ``kappa^2 = eta^2 mu_1^2 / N``
(docs/theory/spiked_kernel.md §1.1–§1.2).

Three forms are returned (all three are second-moment statements about the
same weights; docs/theory/spiked_kernel.md §1.3):

1. **target** (``.A, .B, .b``; the ``phi = n/d -> inf`` idealisation):
   ``A = 1/d``, ``B = kappa^2 mu_1*^2 = eta^2 mu_1^2 mu_1*^2 / N``, ``b = B/A = eta^2 mu_1^2 mu_1*^2 / psi``.
   The variance of ``w`` along ``beta*`` is ``A + B`` at any ``phi``.
2. **finite-alpha / ĥ form** (``.A_hhat, .B_hhat, .b_hhat, .cos2_hhat``): the actual
   conditional law, spike along ``ĥ = beta_hat/|beta_hat|`` with
   ``B_hhat = kappa^2 E|beta_hat|^2`` and ``E|beta_hat|^2 = mu_1*^2 + ((d-1) E y^2 + E[y^2 z^2] - mu_1*^2)/n``
   (exact expectation; leading order ``mu_1*^2 + E y^2/phi``), ``A_hhat = 1/d + residual``
   with ``residual = eta^2 E[(sigma' - mu_1)^2] E y^2/(N n)``, and the predicted squared
   overlap ``cos^2(ĥ, beta*) = E<beta_hat, beta*>^2 / E|beta_hat|^2`` (leading order
   ``mu_1*^2/(mu_1*^2 + E y^2/phi)``).  ("alpha" is the giant-step name of ``phi = n/d``.)
3. **isotropic A' form** (``.A_prime, .B_prime``): averaging the data noise of ``beta_hat``,
   ``A' = 1/d + eta^2 E[sigma'^2] E y^2/(N n)``, ``B' = B``; ``d A'`` is the predicted
   orthogonal variance ``d E<w, e>^2`` (``e ⊥ beta*``).

Giant-step conversion (docs/conventions.md §10.2): ``eta_G = eta sqrt(N)``, ``kappa = eta_G mu_1/N``.

Examples
--------
>>> sc = spike_constants("relu", "linear", N=512, d=256, n=1024, eta=4.0)
>>> round(sc.A * 256, 12), round(sc.B, 12), round(sc.b, 10)     # B = 16 * 0.25 * 1 / 512
(1.0, 0.0078125, 2.0)
>>> round(eta_from_b("relu", "linear", psi=2.0, b=2.0), 12)
4.0
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from rmtfl._results import Result
from rmtfl._validate import check_int, check_nonnegative, check_positive, check_real
from .._classical.activations import Activation, get_activation
from .._classical.hermite import gauss_hermite_rule, gaussian_moment, hermite_coeffs
from .._classical.targets import Target, make_target

__all__ = ["SpikeConstants", "spike_constants", "b_from_eta", "eta_from_b", "TargetMoments", "target_moments"]


@dataclass(frozen=True)
class SpikeConstants(Result):
    """Spiked covariance constants of the one-step weight law (docs/theory/spiked_kernel.md §1.3).

    See the module docstring for the three forms: ``A, B, b`` (target-aligned), ``A_hhat, B_hhat,
    b_hhat, cos2_hhat`` (spike along ĥ at finite ``phi``) and ``A_prime, B_prime`` (isotropic).
    ``N, d, n`` are the sizes of the step (width, dimension, batch) and ``eta`` its step size
    (rmtfl's ``eta_1``; ``eta_giant = eta sqrt(N)``, docs/conventions.md §10.2).  ``mu1``, ``mu1_star``,
    ``Ey2`` and ``Ey2z2`` are ``E sigma'(z)``, ``E[g(z) z]``, ``E y^2`` and ``E[y^2 z^2]`` (label noise included).
    """

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
    Ey2z2: float
    beta_hat_norm2: float
    N: int
    d: int
    n: int

    @property
    def spike_variance(self) -> float:
        """Predicted ``d E_j <w_j, beta*>^2 = 1 + d B`` (any ``phi``)."""
        return 1.0 + self.d * self.B

    @property
    def orthogonal_variance(self) -> float:
        """Predicted ``d E_j <w_j, e>^2`` for ``e ⊥ beta*``: ``d A'``."""
        return self.d * self.A_prime


@dataclass(frozen=True)
class TargetMoments(Result):
    """Moments of a single-index target ``y = g(z) + noise``, ``z = <beta*, x>`` (docs/conventions.md §3).

    ``mu1_star = E[g(z) z]``, ``Ey2 = E[y^2]`` and ``Ey2z2 = E[y^2 z^2]`` (label noise included).
    """

    mu1_star: float
    Ey2: float
    Ey2z2: float


def _single_index(target, noise: float):
    t = make_target(target, noise=noise) if (noise or not isinstance(target, Target)) else target
    if t.rank != 1:
        raise ValueError(f"target must be single-index (rank 1) for the spiked kernel, got rank {t.rank}")
    return t


def _moments(t: Target) -> TargetMoments:
    g = t.links[0]
    x, w = gauss_hermite_rule(400)
    gx = np.asarray(g(x), dtype=float)
    Ey2z2 = float(w @ (gx * gx * x * x)) + t.noise**2
    return TargetMoments(float(t.mu1[0]), float(t.second_moment), Ey2z2)


def target_moments(target, *, noise: float = 0.0) -> TargetMoments:
    """``mu_1*``, ``E y^2`` and ``E[y^2 z^2]`` of a single-index target (``z = <beta*, x>``), noise included.

    Internal helper of this topic (not in the ``rmtfl.theory`` namespace): :class:`SpikeConstants` carries
    the same moments as ``mu1_star``, ``Ey2``, ``Ey2z2``.

    Normalisation: ``x ~ N(0, I_d)``, ``|beta*| = 1``, ``mu_1* = E[g(z) He_1(z)]`` (docs/conventions.md §2–§3).

    Parameters
    ----------
    target : str, Target, ...
        Single-index target (anything :func:`~rmtfl.theory.make_target` accepts).
    noise : float
        Label-noise standard deviation; when ``> 0`` it replaces the target's own.

    Returns
    -------
    TargetMoments

    Examples
    --------
    >>> tm = target_moments("linear", noise=0.5)
    >>> round(tm.mu1_star, 12), round(tm.Ey2, 12), round(tm.Ey2z2, 12)
    (1.0, 1.25, 3.25)
    """
    noise = check_nonnegative("noise", noise)
    return _moments(_single_index(target, noise))


def _mu1(act: Activation) -> float:
    return float(hermite_coeffs(act, 1)[1])


#: Largest ``|eta|`` and ``noise``: their squares must stay finite (docs/reliability.md §1).
_SCALE_LIMIT = 1e100


def _check_eta(eta) -> float:
    eta = check_real("eta", eta)
    if abs(eta) > _SCALE_LIMIT:
        raise ValueError(f"eta must satisfy |eta| <= {_SCALE_LIMIT:g} (eta^2 overflows beyond), got {eta!r}")
    return eta


def spike_constants(activation, target, *, N: int, d: int, n: int, eta: float,
                    noise: float = 0.0) -> SpikeConstants:
    """``A``, ``B``, ``b = B/A`` of the one-step weights, plus the ĥ (finite-alpha) and isotropic ``A'`` forms.

    Normalisation: rmtfl's one-step model (docs/conventions.md §4–§6), weights ``N(0, I_d/d)``,
    ``a ~ N(0, I_N/N)``; the three forms are docs/theory/spiked_kernel.md §1.3.

    Parameters
    ----------
    activation : str or Activation
        Student activation ``sigma``.
    target : str, Target, ...
        Single-index target (anything :func:`~rmtfl.theory.make_target` accepts).
    N, d, n : int
        Width, input dimension (``d >= 2``) and samples of the step.
    eta : float
        rmtfl step size ``eta_1`` (giant-step ``eta_G = eta sqrt(N)``).
    noise : float
        Label-noise standard deviation (when ``> 0`` it replaces the target's own).

    Returns
    -------
    SpikeConstants
        ``.A, .B, .b``: target-aligned form (i); ``.A_hhat, .B_hhat, .b_hhat, .cos2_hhat``:
        spike along ĥ at finite ``phi`` (ii); ``.A_prime, .B_prime``: isotropic form (iii).

    Examples
    --------
    >>> sc = spike_constants("relu", "linear", N=1024, d=64, n=100, eta=2.0)
    >>> round(sc.eta_giant, 10), round(sc.spike_variance, 10)     # 1 + d B, B = eta^2 mu_1^2 mu_1*^2 / N
    (64.0, 1.0625)
    """
    act = get_activation(activation)
    N = check_int("N", N, lo=1)
    d = check_int("d", d, lo=2)
    n = check_int("n", n, lo=1)
    eta = _check_eta(eta)
    noise = check_nonnegative("noise", noise)
    if noise > _SCALE_LIMIT:
        raise ValueError(f"noise must be <= {_SCALE_LIMIT:g} (its square overflows beyond), got {noise!r}")
    tm = _moments(_single_index(target, noise))
    mu1s, Ey2, Ey2z2 = tm.mu1_star, tm.Ey2, tm.Ey2z2
    mu1 = _mu1(act)
    Es2 = float(gaussian_moment(act, 1, 1))  # E[sigma'(z)^2]
    kappa2 = eta**2 * mu1**2 / N
    A = 1.0 / d
    B = kappa2 * mu1s**2
    bh2 = mu1s**2 + ((d - 1) * Ey2 + Ey2z2 - mu1s**2) / n
    along = mu1s**2 + (Ey2z2 - mu1s**2) / n
    residual = eta**2 * max(Es2 - mu1**2, 0.0) * Ey2 / (N * n)
    A_h = A + residual
    B_h = kappa2 * bh2
    A_p = A + eta**2 * Es2 * Ey2 / (N * n)
    return SpikeConstants(A=A, B=B, b=B / A, A_hhat=A_h, B_hhat=B_h, b_hhat=B_h / A_h,
                          cos2_hhat=along / bh2, residual=residual, A_prime=A_p, B_prime=B,
                          kappa2=kappa2, eta=eta, eta_giant=eta * math.sqrt(N), mu1=mu1, mu1_star=mu1s,
                          Ey2=Ey2, Ey2z2=Ey2z2, beta_hat_norm2=bh2, N=N, d=d, n=n)


def b_from_eta(activation, target, *, psi: float, eta: float) -> float:
    """Spike ratio ``b = B/A = eta^2 mu_1^2 mu_1*^2 / psi`` of the target-aligned form, ``psi = N/d``.

    Only the ratio ``psi`` enters (``A = 1/d``, ``B = eta^2 mu_1^2 mu_1*^2/N``); normalisation as
    :func:`spike_constants` (docs/theory/spiked_kernel.md §1.3, docs/conventions.md §5).

    Parameters
    ----------
    activation : str or Activation
        Student activation ``sigma``.
    target : str, Target, ...
        Single-index target.
    psi : float
        Width ratio ``N/d > 0``.
    eta : float
        rmtfl step size ``eta_1``.

    Returns
    -------
    float

    Examples
    --------
    >>> b_from_eta("relu", "linear", psi=2.0, eta=4.0)
    2.0
    """
    act = get_activation(activation)
    psi = check_positive("psi", psi)
    eta = _check_eta(eta)
    mu1s = _moments(_single_index(target, 0.0)).mu1_star
    b = eta**2 * _mu1(act)**2 * mu1s**2 / psi
    if not math.isfinite(b):
        raise ValueError(f"eta and psi give an infinite spike ratio b = eta^2 mu_1^2 mu_1*^2/psi (eta={eta!r}, "
                         f"psi={psi!r})")
    return b


def eta_from_b(activation, target, *, psi: float, b: float) -> float:
    """``eta = sqrt(b psi)/|mu_1 mu_1*|``: the step that gives spike ratio ``b`` (docs/theory/spiked_kernel.md §1.3).

    Inverse of :func:`b_from_eta`; ``psi = N/d`` (docs/conventions.md §5).

    Parameters
    ----------
    activation : str or Activation
        Student activation ``sigma``.
    target : str, Target, ...
        Single-index target.
    psi : float
        Width ratio ``N/d > 0``.
    b : float
        Spike ratio ``B/A >= 0``.

    Returns
    -------
    float

    Examples
    --------
    >>> round(eta_from_b("relu", "linear", psi=2.0, b=2.0), 12)
    4.0
    """
    act = get_activation(activation)
    psi = check_positive("psi", psi)
    b = check_nonnegative("b", b)
    mu1s = _moments(_single_index(target, 0.0)).mu1_star
    mu1 = _mu1(act)
    if mu1 * mu1s == 0:
        raise ValueError("mu_1(sigma) * mu_1(g) must be non-zero to reach a spike with one step")
    eta = math.sqrt(b) * math.sqrt(psi) / abs(mu1 * mu1s)
    if not math.isfinite(eta):
        raise ValueError(f"b and psi are too large: eta = sqrt(b psi)/|mu_1 mu_1*| overflows (b={b!r}, psi={psi!r})")
    return eta
