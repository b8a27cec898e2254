"""Finite-``N`` bulk for the two-step outliers: BGN with the remainder of ``W_2`` (docs/theory/two_step.md §2, §5.4, §8.1).

Sampling route (moved here from the deterministic theory layer); used by
:func:`rmtfl.numerics.two_step_semi_analytic` with ``bulk="finite-N"``.
Normalisation as in :func:`rmtfl.theory.two_step` (docs/conventions.md §3–§5): ``W_0`` entries
``N(0, 1/d)``, ``a ~ N(0, I_N/N)``, ``x ~ N(0, I_d)``, correlation-loss steps.

Why
---
``W_2 = H + A B^T`` with the low-rank part ``P = A B^T`` (``A = [a, a^{⊙2}, ...]``,
``B = Vbar``) and the bulk ``H = W_0 + R``.  For ``sigma = He1 + He2/2``, docs/theory/two_step.md §5.4 gives
``R = (eta_1+eta_2) diag(a) W_0 M + eta_1 eta_2 diag(a^{⊙2}) W_0 M^2`` exactly.  ``R``
has operator norm ``O(eta N^{-1/2})`` (about 0.6 at ``N = 1500``, ``eta = 8``) and is
**not** bi-orthogonally invariant: conditionally on ``(a, X, y)`` it is a Gaussian
matrix with the variance profile ``c(a_j, lambda_l)^2 / d``, ``c = 1 + a (eta_1+eta_2)
lambda + a^2 eta_1 eta_2 lambda^2`` in the eigenbasis of ``M``, i.e. largest exactly
on the rows where ``a_j`` is large and on the directions where ``beta_hat`` has weight.
So the spike vectors are not generic for this bulk, and the BGN equation
``D(s) = theta^-2`` (MP or D-transform of the actual bulk law alike) under-predicts
near-bulk outliers at finite ``N`` (by ~4% for the second outlier at ``N = 1500``).

The exact master equation (linearisation of ``W = H + A B^T``; the cross block
``A^T (z^2 - H H^T)^{-1} H B`` vanishes because ``H`` is centred given ``A, B``): ``s`` is an
outlier iff ``Phi_A(s) Phi_B(s)`` has eigenvalue 1, where

    Phi_A(z) = z A^T (z^2 - H H^T)^{-1} A,    Phi_B(z) = z B^T (z^2 - H^T H)^{-1} B.

For an invariant bulk ``Phi_A = phi(z) A^T A`` and ``Phi_B = phi~(z) B^T B``, which is docs/theory/two_step.md §2.2.

What is computed (semi-analytic, ``bulk="finite-N"``)
-----------------------------------------------------
1. Own samples ``W_0, a, X_t, y_t`` from ``rng`` (never a simulation's draws); two
   gradient steps give ``W_2``, the sampled spiked form gives ``A, B``, and ``H = W_2 - A B^T``.
2. The kernels are whitened by the sampled Gram matrices and re-coloured by the analytic
   (or semi-analytic) ones, ``Phi_A -> G^{1/2} G_A^{-1/2} Phi_A G_A^{-1/2} G^{1/2}`` (same for
   ``B``): the sample-to-sample fluctuation of ``theta(P)`` (~8% for the second spike at
   ``N = 1500``) is replaced by its mean, while the bulk/spike interaction, which self-averages,
   is kept.
3. Outlier ``i`` solves ``lambda_i(Phi_A Phi_B)(s) = 1`` above the sample's top bulk value
   (bracketing); the locations are averaged over the own samples (kernels are not averaged: the
   sampled bulk tops are heavy-tailed and each kernel has its pole at its own top).

Checked by simulation (``sigma = He1 + He2/2``, ``g = z + He2/sqrt2``, reused, N = d = 1500,
phi = 4, eta = 8): with each simulation's own ``H, A, B`` the master equation reproduces both
measured outliers to 0.5% (MP bulk: -3.5% to -6% on outlier 2; D-transform of the actual bulk law:
-2.7% to -5.7%, so the widening alone does not explain the gap).  The prediction is 21.22 and
4.75 (own-sample s.d. 0.04% and 0.8% per sample); 16 simulation seeds give 21.23 +- 0.22 and
4.74 +- 0.09 (MP bulk: 21.15, 4.53).  Limits: at N = 400 (eta = 5.75) the prediction of outlier 2
is ~5% high (4.72 vs 4.50 +- 0.09 over 40 seeds; MP: 4.28): ``theta(P)`` then fluctuates by 13%
and its mean lies 2.6% below ``theta`` of the mean Gram matrices (Jensen, an ``O(1/N)`` effect),
and the cross block is no longer negligible.  Overlaps are not corrected (MP formulas).

Examples
--------
>>> from rmtfl.theory import get_activation, make_target
>>> from rmtfl.theory._two_step.plan import plan_two_step
>>> plan = plan_two_step(get_activation("hermite(0, 1, 0.5)"), make_target([0, 1, 2**-0.5]), psi=1.0, phi=4.0,
...                      eta1=4.0, eta2=4.0, N=200, K=1)
>>> fb = finite_bulk_kernels(plan, rng=0, reps=1)
>>> sv = finite_bulk_outliers(fb, np.diag([1.0, 3 / 200]), np.array([[64.0, 8.0], [8.0, 400.0]]), count=2)
>>> bool(sv[0] > sv[1] > fb.top), fb.reps       # theta(P) = (8.00, 2.45); MP-bulk values 8.13, 2.85
(True, 1)
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import optimize

from rmtfl._results import Result
from rmtfl._validate import check_int, check_rng
from rmtfl.theory._two_step.spike_vectors import P_k
from rmtfl.theory._two_step.plan import TwoStepPlan

__all__ = ["FiniteBulk", "finite_bulk_kernels", "finite_bulk_outliers"]


@dataclass(frozen=True)
class FiniteBulk(Result):
    """Sampled bulk(s) with the whitened spike coordinates (see the module docstring).

    ``lam``: per sample, the eigenvalues of the smaller Gram side of ``H`` (``s_i^2``);
    ``Au``, ``Bv``: whitened coordinates of ``A`` and ``B`` on the singular vectors;
    ``restA``, ``restB``: whitened Gram of the parts outside the span of those vectors;
    ``tops``: largest bulk singular value of each sample; ``top``: their mean;
    ``reps``: number of samples.
    """

    lam: tuple
    Au: tuple
    Bv: tuple
    restA: tuple
    restB: tuple
    tops: tuple
    top: float
    reps: int


def _sqrt_pinv(G, rcond=1e-10):
    G = (np.asarray(G, float) + np.asarray(G, float).T) / 2
    l, Q = np.linalg.eigh(G)
    keep = l > rcond * max(l.max(), 1e-300)
    inv = np.where(keep, 1.0 / np.sqrt(np.where(keep, l, 1.0)), 0.0)
    return (Q * inv) @ Q.T


def _sqrt(G):
    G = (np.asarray(G, float) + np.asarray(G, float).T) / 2
    l, Q = np.linalg.eigh(G)
    return (Q * np.sqrt(np.clip(l, 0.0, None))) @ Q.T


def _one_sample(plan: TwoStepPlan, N: int, g: np.random.Generator):
    """One own sample: ``H = W_2 - A B^T`` and the whitened spike coordinates."""
    setup, psi, phi, phi2, K, batch, C = plan.setup, plan.psi, plan.phi, plan.phi2, plan.K, plan.batch, plan.C
    law, eta1, eta2 = plan.second_layer, plan.eta1, plan.eta2
    act, t = setup.act, setup.target
    d = max(int(round(N / psi)), t.rank)
    n1 = max(int(round(phi * d)), 2)
    W = g.standard_normal((N, d)) / math.sqrt(d)
    a = g.standard_normal(N) / math.sqrt(N) if law == "gaussian" else \
        (2.0 * g.integers(0, 2, size=N) - 1.0) / math.sqrt(N)

    def batch_xy(n):
        X = g.standard_normal((n, d))
        y = sum(np.asarray(gr(X[:, r]), dtype=float) for r, gr in enumerate(t.links))
        if t.noise > 0:
            y = y + t.noise * g.standard_normal(n)
        return X, y

    X1, y1 = batch_xy(n1)
    X2, y2 = batch_xy(max(int(round(phi2 * d)), 2)) if batch == "fresh" else (X1, y1)
    quad = act.herme is not None and act.degree is not None and act.degree <= 2
    for (X, y), eta in zip(((X1, y1), (X2, y2)), (eta1, eta2)):
        n = X.shape[0]
        if quad:  # sigma' = c1 + 2 c2 z: G = diag(a) (c1 1 y^T X / n + 2 c2 W M), M = X^T diag(y) X / n
            c = list(act.herme) + [0.0, 0.0]
            G = c[1] * np.outer(a, X.T @ y / n) + 2.0 * c[2] * a[:, None] * (W @ ((X.T * y) @ X / n))
        else:
            G = a[:, None] * ((np.asarray(act.derivative(1, W @ X.T), dtype=float) * y[None, :]) @ X) / n
        W = W + eta * G
    # the sampled spiked form (docs/theory/two_step.md §8 step 5), as in the semi-analytic mode
    bh1 = X1.T @ y1 / n1
    if batch == "fresh":
        s = X2 @ bh1
        basis = [bh1, X2.T @ y2 / X2.shape[0]]
    else:
        s = X1 @ bh1 - y1 * np.einsum("ij,ij->i", X1, X1) / n1  # leave-one-out s~_i
        basis = [bh1]
    tau_h = math.sqrt(setup.tau_h2_unit * setup.ey2 / phi)
    for k in range(1, K + 1):
        Pk = P_k(k, batch, y=y2, s=s, stein=setup.stein, mu1=setup.mu1, tau_h=tau_h, phi=phi)
        basis.append(X2.T @ (y2 * Pk) / X2.shape[0])
    B = np.stack(basis, axis=1) @ C.T
    A = np.stack([a ** (k + 1) for k in range(K + 1)], axis=1)
    H = W - A @ B.T
    del W
    tr = N > d
    Hs = H.T if tr else H  # the smaller side: Hs Hs^T carries the min(N, d) singular values
    lam, Q = np.linalg.eigh(Hs @ Hs.T)
    lam = np.clip(lam, 0.0, None)
    big = lam > 1e-12 * lam.max()
    L, R = (B, A) if tr else (A, B)
    Lu = Q.T @ L
    Rv = np.zeros_like(Lu)
    Rv[big] = (Q[:, big].T @ (Hs @ R)) / np.sqrt(lam[big])[:, None]
    Au, Bv = (Rv, Lu) if tr else (Lu, Rv)
    WA, WB = _sqrt_pinv(A.T @ A), _sqrt_pinv(B.T @ B)
    Au, Bv = Au @ WA, Bv @ WB
    restA = WA @ (A.T @ A) @ WA - Au.T @ Au  # parts outside the singular vectors (kernel of H H^T)
    restB = WB @ (B.T @ B) @ WB - Bv.T @ Bv
    return lam, Au, Bv, restA, restB, math.sqrt(float(lam.max()))


def finite_bulk_kernels(plan: TwoStepPlan, *, rng, reps: int = 1) -> FiniteBulk:
    """Sample ``reps`` own bulks ``H = W_2 - P`` at the plan's width ``N`` and their whitened spike kernels.

    ``plan`` is a :class:`~rmtfl.theory._two_step.plan.TwoStepPlan` with ``N`` given (an integer
    ``>= 2``); ``rng`` (seed or Generator) makes ``reps`` children, one per own sample.
    """
    if plan.N is None:
        raise ValueError("N (an integer >= 2) must be given for the finite-N bulk")
    N = check_int("N", int(plan.N) if float(plan.N).is_integer() else plan.N, lo=2)
    reps = check_int("reps", reps, lo=1, hi=64)
    gens = check_rng(rng).spawn(reps)
    out = [_one_sample(plan, N, g) for g in gens]
    lam, Au, Bv, rA, rB, top = zip(*out)
    return FiniteBulk(lam, Au, Bv, rA, rB, tuple(float(x) for x in top), float(np.mean(top)), reps)


def _kernels(fb: FiniteBulk, j: int, z: float):
    """Whitened ``(Phi_A(z), Phi_B(z))`` of own sample ``j``."""
    w = z / (z * z - fb.lam[j])
    Au, Bv = fb.Au[j], fb.Bv[j]
    return (Au.T * w) @ Au + fb.restA[j] / z, (Bv.T * w) @ Bv + fb.restB[j] / z


def _solve_sample(fb: FiniteBulk, j: int, SU, SV, count: int) -> list:
    def ev(z):
        KA, KB = _kernels(fb, j, z)
        return np.sort(np.linalg.eigvals((SU @ KA @ SU) @ (SV @ KB @ SV)).real)[::-1]

    top = fb.tops[j]
    lo = top * (1.0 + 1e-9)
    hi = max(2.0 * top, top + 1.0)
    while ev(hi)[0] > 1.0:
        hi *= 2.0
    zs = np.concatenate([top + (lo - top) * np.geomspace(1.0, 1e6, 60),
                         np.geomspace(top + 1e6 * (lo - top), hi, 240)])
    zs = np.unique(zs[(zs >= lo) & (zs <= hi)])
    vals = np.array([ev(z) for z in zs])  # (len(zs), r)
    out = []
    for i in range(min(count, vals.shape[1])):
        f = vals[:, i] - 1.0
        idx = np.nonzero((f[:-1] > 0) & (f[1:] <= 0))[0]
        if idx.size == 0:
            out.append(top)
            continue
        k = idx[-1]
        out.append(optimize.brentq(lambda z: ev(z)[i] - 1.0, zs[k], zs[k + 1], xtol=1e-12, rtol=1e-12))
    return out + [top] * (count - len(out))


def finite_bulk_outliers(fb: FiniteBulk, G_U, G_V, *, count: int) -> np.ndarray:
    """The ``count`` largest outliers of ``W_2`` from the master equation with the sampled bulk(s).

    ``G_U`` and ``G_V`` are the Gram matrices of ``P = U Vbar^T`` used for the prediction (analytic
    or semi-analytic, docs/theory/two_step.md §8); each own sample's whitened kernels are re-coloured with them,
    ``Phi_A = G_U^{1/2} kappa_A G_U^{1/2}``, ``Phi_B = G_V^{1/2} kappa_B G_V^{1/2}``.  For each own
    sample, outlier ``i`` is the largest ``z`` above that sample's bulk top with
    ``lambda_i(Phi_A Phi_B)(z) = 1`` (bracketed, Brent; no crossing gives the bulk top).  Returns
    the mean over the own samples (shape ``(count,)``).
    """
    count = check_int("count", count, lo=0)
    SU, SV = _sqrt(G_U), _sqrt(G_V)
    vals = np.array([_solve_sample(fb, j, SU, SV, count) for j in range(fb.reps)], dtype=float).reshape(
        fb.reps, count)
    return vals.mean(axis=0)
