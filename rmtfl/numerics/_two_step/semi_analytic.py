"""Semi-analytic two-step predictions: the theory's spiked form with sampled ingredients (docs/theory/two_step.md §8).

:func:`rmtfl.theory.two_step` is deterministic: the Gram matrices of the low-rank part
``P = U Vbar^T`` are their limits and the bulk is Marchenko–Pastur.  The routes here draw
random numbers (from ``rng``, never a simulation's draws) and return the same
:class:`~rmtfl.theory.TwoStepPrediction`:

* ``grams="sampled"``: the Gram matrices ``G_U``, ``G_Vbar`` of one sample of ``a``, ``X_t``,
  ``y_t`` (with ``beta_hat_t``, the leave-one-out ``s~_i`` or ``s_i``, and ``P_k`` on the samples;
  docs/theory/two_step.md §8 step 5, "semi-analytic");
* ``bulk="finite-N"``: outlier locations from the master equation with sampled bulks
  ``H = W_2 - P`` (docs/theory/two_step.md §8.1, :mod:`rmtfl.numerics._two_step.finite_bulk`).

Normalisation as in :func:`rmtfl.theory.two_step` (docs/conventions.md §3–§5): ``W_0`` entries
``N(0, 1/d)``, ``a ~ N(0, I_N/N)`` (or Rademacher), ``x ~ N(0, I_d)``, correlation-loss steps,
``psi = N/d``, ``phi = n/d``; ``d = round(N / psi)``, ``n = round(phi d)``.

Examples
--------
>>> from rmtfl.theory import two_step
>>> sig, tgt = "hermite(0, 1, 0.5)", [0, 1, 2**-0.5]
>>> p = two_step(sig, tgt, psi=1.0, phi=4.0, eta1=8.0, eta2=8.0, N=600, K=1)   # the Taylor route
>>> q = two_step_semi_analytic(sig, tgt, N=600, psi=1.0, phi=4.0, eta1=8.0, eta2=8.0, rng=3)
>>> q.mode, len(q.outliers) == len(p.outliers) == 2
('semi-analytic', True)
>>> bool(abs(q.outliers[1].singular_value / p.outliers[1].singular_value - 1) < 0.2)
True
"""
from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from rmtfl._validate import check_choice, check_in_range, check_int, check_memory, check_positive, check_rng
from rmtfl.theory import TwoStepPrediction, get_activation, make_target
from rmtfl.theory._two_step.spike_vectors import P_k
from rmtfl.theory._two_step.plan import SpikeGrams, TwoStepPlan, analytic_grams, plan_two_step, predict_from_grams
from .finite_bulk import finite_bulk_kernels, finite_bulk_outliers

__all__ = ["two_step_semi_analytic", "sampled_grams"]

GRAMS = ("sampled", "analytic")
BULKS = ("mp", "finite-N")


def sampled_grams(plan: TwoStepPlan, *, rng) -> SpikeGrams:
    """Gram matrices of ``P`` from one sample of ``a``, ``X_t``, ``y_t`` (docs/theory/two_step.md §8 step 5).

    ``plan`` needs ``N``; ``rng`` is a seed or Generator (a Generator is used as it is).
    """
    if plan.N is None:
        raise ValueError("N (an integer >= 2) must be given for the sampled Gram matrices")
    st, psi, phi, phi2, K, batch, C = plan.setup, plan.psi, plan.phi, plan.phi2, plan.K, plan.batch, plan.C
    N, law = int(plan.N), plan.second_layer
    g = check_rng(rng)
    d = max(int(round(N / psi)), st.target.rank)
    n1 = max(int(round(phi * d)), 2)
    a = g.standard_normal(N) / math.sqrt(N) if law == "gaussian" else \
        (2.0 * g.integers(0, 2, size=N) - 1.0) / math.sqrt(N)

    def batch_xy(n):
        X = g.standard_normal((n, d))
        y = sum(np.asarray(gr(X[:, r]), dtype=float) for r, gr in enumerate(st.target.links))
        if st.target.noise > 0:
            y = y + st.target.noise * g.standard_normal(n)
        return X, y

    X1, y1 = batch_xy(n1)
    bh1 = X1.T @ y1 / n1
    ey2, R = st.ey2, st.target.rank
    if batch == "fresh":
        n2 = max(int(round(phi2 * d)), 2)
        X2, y2 = batch_xy(n2)
        s = X2 @ bh1
        basis = [bh1, X2.T @ y2 / n2]
    else:
        X2, y2, n2 = X1, y1, n1
        s = X1 @ bh1 - y1 * np.einsum("ij,ij->i", X1, X1) / n1  # leave-one-out s~_i
        basis = [bh1]
    tau_h = math.sqrt(st.tau_h2_unit * ey2 / phi)
    for k in range(1, K + 1):
        Pk = P_k(k, batch, y=y2, s=s, stein=st.stein, mu1=st.mu1, tau_h=tau_h, phi=phi)
        basis.append(X2.T @ (y2 * Pk) / n2)
    B = np.stack(basis, axis=1)  # d x nb
    Vbar = B @ C.T
    U = np.stack([a ** (k + 1) for k in range(K + 1)], axis=1)
    return SpikeGrams(U.T @ U, Vbar.T @ Vbar, Vbar[:R, :].T)


#: Largest ``|eta1|, |eta2|`` and ``noise`` (spike strengths are products and squares of them).
SCALE_LIMIT = 1e100


def _check_sample_memory(N, psi, phi, phi2):
    """Refuse (naming ``N, psi, phi``) sizes whose ``N x d``, ``n x d`` and ``n x N`` samples exceed memory."""
    psi = check_positive("psi", psi)
    phi = check_positive("phi", phi)
    phi2 = phi if phi2 is None else check_positive("phi2", phi2)
    d = max(N / psi, 1.0)
    n = max(phi, phi2) * d
    check_memory("N, psi, phi", 8.0 * 4 * (N * d + n * d + n * N), f"the N x d, n x d and n x N samples (d = {d:.3g}, "
                 f"n = {n:.3g})")


def two_step_semi_analytic(activation, target, *, N, psi, phi, eta1, eta2, batch="reused", phi2=None, noise=0.0,
                           K=None, grams="sampled", bulk="mp", bulk_samples=2, second_layer="gaussian",
                           order=None, rng=None) -> TwoStepPrediction:
    """Outliers of ``W_2`` after two steps with sampled Gram matrices and/or a sampled finite-``N`` bulk.

    The spiked form, ``K`` and the BGN step are those of :func:`rmtfl.theory.two_step`
    (docs/theory/two_step.md §5–§8; normalisation docs/conventions.md §3–§5); what is sampled:

    Parameters
    ----------
    activation, target
        ``sigma`` and the target (names or objects; links centred).
    N : int >= 2
        Width (required: the samples have ``N`` rows, ``d = round(N / psi)`` columns).
    psi, phi : float > 0
        ``N/d`` and ``n/d`` (``phi_1`` for fresh batches).
    eta1, eta2 : float
        Step sizes (``eta = c N^alpha``: :func:`rmtfl.theory.step_size`).
    batch : {"reused", "fresh"}
    phi2 : float > 0
        ``n_2/d`` of the fresh second batch (required for ``batch="fresh"``).
    noise : float >= 0
        Label-noise standard deviation (combined with the target's own).
    K : int, optional
        Override the highest Taylor index (default as in :func:`rmtfl.theory.two_step`).
    grams : {"sampled", "analytic"}
        ``"sampled"``: Gram matrices of ``P`` from one sample of ``a``, ``X_t``, ``y_t`` (mode
        ``"semi-analytic"``: for Rademacher ``a``, heavy-tailed targets, more than 3 target
        directions, or wherever the limits of docs/theory/two_step.md §7 are not trusted).
        ``"analytic"``: the deterministic limits of :func:`rmtfl.theory.two_step` (then only the
        bulk is sampled, so ``bulk="finite-N"`` is required).
    bulk : {"mp", "finite-N"}
        ``"mp"``: BGN with the Marchenko–Pastur bulk (docs/theory/two_step.md §2.1).  ``"finite-N"``:
        ``bulk_samples`` own draws of ``W_0, a, X, y`` (``O(N n d)`` work each) give the bulk
        ``H = W_2 - P`` at this ``N``, and the outlier locations solve the master equation
        ``det(I - Phi_A Phi_B) = 0`` (docs/theory/two_step.md §8.1): the ``O(eta N^{-1/2})``
        remainder of docs/theory/two_step.md §5.4 widens the bulk and interacts with the spike
        vectors; ``"mp"`` under-predicts near-bulk outliers (4% for the second outlier of the
        quadratic case at ``N = 1500``, where ``"finite-N"`` is within 0.5%; at ``N = 400`` it
        over-predicts that outlier by ~5%).  Overlaps keep the MP formulas.
    bulk_samples : int in [1, 64]
        Number of own bulk samples for ``bulk="finite-N"`` (outlier locations averaged).
    second_layer : {"gaussian", "rademacher"}
        Law of ``a``.
    order : int, optional
        Gauss–Hermite order of the analytic Gram matrices.
    rng : None, int, SeedSequence or Generator
        The draws.  With ``grams="sampled"`` and ``bulk="finite-N"`` two children are spawned
        (Grams, bulk); otherwise ``rng`` is used directly.

    Returns
    -------
    TwoStepPrediction
        ``mode`` is ``"semi-analytic"`` (sampled Grams) or ``"analytic"``; ``bulk`` and
        ``bulk_top`` say which bulk placed the outliers; ``notes`` record what was sampled.

    Examples
    --------
    >>> p = two_step_semi_analytic("hermite(0, 1, 0.5)", [0, 1, 2**-0.5], N=300, psi=1.0, phi=4.0, eta1=5.7,
    ...                            eta2=5.7, grams="analytic", bulk="finite-N", bulk_samples=1, rng=4)
    >>> p.mode, p.bulk, len(p.outliers), bool(p.outliers[1].singular_value > p.bulk_top)
    ('analytic', 'finite-N', 2, True)
    """
    check_choice("grams", grams, GRAMS)
    check_choice("bulk", bulk, BULKS)
    N = check_int("N", N, lo=2)
    bulk_samples = check_int("bulk_samples", bulk_samples, lo=1, hi=64)
    for name, val in (("eta1", eta1), ("eta2", eta2)):
        check_in_range(name, val, -SCALE_LIMIT, SCALE_LIMIT)
    check_in_range("noise", noise, 0.0, SCALE_LIMIT)
    _check_sample_memory(N, psi, phi, phi2)
    if grams == "analytic" and bulk == "mp":
        raise ValueError("grams='analytic' with bulk='mp' samples nothing: that is rmtfl.theory.two_step; "
                         "use grams='sampled' or bulk='finite-N'")
    plan = plan_two_step(get_activation(activation), make_target(target), psi=psi, phi=phi, eta1=eta1, eta2=eta2,
                         batch=batch, phi2=phi2, noise=noise, N=N, K=K, second_layer=second_layer, order=order)
    gram_rng = bulk_rng = rng
    if grams == "sampled" and bulk == "finite-N":
        gram_rng, bulk_rng = check_rng(rng).spawn(2)
    notes = []
    if grams == "sampled":
        G = sampled_grams(plan, rng=gram_rng)
        notes.append("semi-analytic: Gram matrices of sampled a, X, y")
    else:
        G = analytic_grams(plan)
    if not all(np.all(np.isfinite(np.asarray(g, dtype=float))) for g in (G.G_U, G.G_V)):
        raise ValueError("eta1, eta2 and noise are too large together: the spike's Gram matrices overflow a double")
    pred = predict_from_grams(plan, G, mode="semi-analytic" if grams == "sampled" else "analytic", notes=notes)
    if bulk == "mp":
        return pred
    fb = finite_bulk_kernels(plan, rng=bulk_rng, reps=bulk_samples)
    sv = finite_bulk_outliers(fb, G.G_U, G.G_V, count=len(pred.outliers))
    outs = tuple(replace(o, singular_value=float(v)) for o, v in zip(pred.outliers, sv))
    note = (f"finite-N bulk: outlier locations from the master equation with {bulk_samples} own sampled "
            f"bulk(s) W_2 - P at N={N} (mean top {fb.top:.4f}); overlaps use the MP formulas")
    return replace(pred, outliers=outs, bulk="finite-N", bulk_top=fb.top, notes=pred.notes + (note,))
