"""Two large gradient steps: the spiked form of ``W_2``, its outliers and alignments (docs/theory/two_step.md §5–§8).

Normalisation (docs/conventions.md §3–§5): ``W_0`` entries ``N(0, 1/d)``, ``a ~ N(0, I_N/N)``
(fixed), ``x ~ N(0, I_d)``, correlation loss with mean reduction,
``W_t = W_{t-1} + eta_t G(W_{t-1}; X_t, y_t)``, ratios ``psi = N/d``,
``phi = n/d`` (``phi = phi_1`` and ``phi2 = n_2/d`` for fresh batches).  Links are
centred (:mod:`rmtfl.theory._classical.targets`).

To leading order (docs/theory/two_step.md §5.3)

    W_2 ≈ W_0 + U Vbar^T,   u_k = a^{⊙(k+1)},
    vbar_0 = mu_1 (eta_1 beta_hat_1 + eta_2 beta_hat_2),  vbar_k = eta_2 eta_1^k / k! v_k,
    v_k = X_2^T (y_2 ⊙ P_k) / n_2,

with the sample weights ``P_k`` of :func:`~rmtfl.theory._two_step.spike_vectors.P_k`.  The outliers are BGN applied to
the singular values of ``U Vbar^T`` (docs/theory/two_step.md §8), obtained from the Gram matrices
``G_U`` and ``G_Vbar``:

* **analytic** mode: limit Gram matrices (closed forms in ``N`` for ``G_U``;
  Gauss–Hermite quadrature over ``(z*, zeta, eps)`` for ``G_Vbar``), evaluated
  at the given ``N`` so the powers ``N^{-k/2}`` are kept;
* **semi-analytic** mode: Gram matrices of sampled ``a``, ``X``, ``y`` (the only
  place the theory layer draws random numbers; it needs an explicit ``rng``).

The spike-vector ingredients (Stein table, ``P_k``, the limit and sampled Gram
matrices) live in :mod:`rmtfl.theory._two_step.spike_vectors`.

Examples
--------
>>> from rmtfl.theory import one_step
>>> p = two_step("tanh", "linear", 1.0, 2.0, 1.5, 1.5)          # N -> infinity, Lambda = 0
>>> q = one_step("tanh", "linear", 1.0, 2.0, 3.0)
>>> abs(p.outliers[0].singular_value - q.singular_value) < 1e-12, p.mode
(True, 'analytic')
>>> two_step("tanh", "he3n", 1.0, 2.0, 3.0, 3.0, batch="fresh", phi2=2.0).outliers[0].cos2_target
0.0
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

from rmtfl._validate import check_choice, check_int, check_nonnegative, check_positive, check_real
from .._classical.activations import get_activation
from .one_step import bgn_predict
from .outliers import outlier_count
from .spike_vectors import BATCHES, _sampled_grams, _setup, _stats, a_power_gram
from .._classical.targets import make_target

__all__ = ["TwoStepOutlier", "TwoStepPrediction", "two_step", "inferred_alpha", "outliers_from_gram"]

MODES = ("auto", "analytic", "semi-analytic")
BULKS = ("mp", "finite-N")


def inferred_alpha(eta: float, N: float) -> float:
    """``alpha`` with ``|eta| = N^alpha`` (i.e. ``c = 1``), clipped to ``[0, 1/2)``; used to choose ``K``."""
    if N is None or abs(eta) <= 1.0:
        return 0.0
    return float(min(max(math.log(abs(eta)) / math.log(N), 0.0), 0.4999))


# ----------------------------------------------------------------- outliers
@dataclass(frozen=True)
class TwoStepOutlier:
    """One predicted outlier of ``W_2`` (docs/theory/two_step.md §8 step 4).

    ``theta`` is the singular value of the low-rank part ``P``; ``singular_value``
    is ``s_psi(theta)``; ``cos2_target`` is the squared norm of the projection of the
    right singular vector on the target subspace (per direction in ``cos2_targets``);
    ``cos2_second_layer`` is ``cos^2`` of the left singular vector with ``a``.
    """

    singular_value: float
    theta: float
    cos2_target: float
    cos2_targets: tuple
    cos2_second_layer: float


@dataclass(frozen=True)
class TwoStepPrediction:
    """Result of :func:`two_step`.

    Attributes
    ----------
    outliers : tuple of TwoStepOutlier
        Outliers above the BGN threshold ``psi^{1/4}``, largest first.
    spikes : tuple of float
        All singular values of the low-rank part ``P`` (largest first).
    mode : str
        ``"analytic"`` or ``"semi-analytic"`` (which Gram matrices were used).
    K : int
        Highest Taylor index kept.
    bulk_edge : float
        ``1 + sqrt(psi)``.
    outlier_count : object
        :func:`~rmtfl.theory.outlier_count` at the exponents inferred
        from ``eta_t = N^{alpha_t}`` (``None`` when ``N`` is not given).
    notes : tuple of str
    taylor_parameter : float or None
        ``eta_1 sqrt(2 ln N / N) sqrt(E D^2)``, an estimate of ``eta_1 max_j |a_j D_ji|``; the
        Taylor expansion and the mean replacement need it ``<< 1`` (docs/theory/two_step.md §9).  A note
        is added when it exceeds 0.5 (non-polynomial ``sigma``: the truncated series is then
        not a reliable prediction).
    bulk : str
        ``"mp"`` (BGN closed form, Marchenko–Pastur bulk) or ``"finite-N"`` (outlier locations
        from the master equation with the theory's own sampled bulk ``W_2 - P``,
        :mod:`rmtfl.theory._two_step.finite_bulk`).
    bulk_top : float or None
        ``"finite-N"``: the mean top singular value of the sampled bulks; else ``None``.
    """

    outliers: tuple
    spikes: tuple
    mode: str
    K: int
    bulk_edge: float
    batch: str
    outlier_count: object = None
    notes: tuple = field(default=())
    taylor_parameter: float | None = None
    bulk: str = "mp"
    bulk_top: float | None = None


def outliers_from_gram(G_U, G_V, Mbar, psi: float):
    """BGN on the singular values of ``P = U Vbar^T`` from its Gram matrices (docs/theory/two_step.md §8 step 3–4).

    ``G_U = U^T U``, ``G_V = Vbar^T Vbar`` (both ``(K+1) x (K+1)``), ``Mbar = Vbar^T B*``
    (``(K+1) x R``, the target overlaps).  Returns ``(spikes, outliers)``.

    >>> sp, out = outliers_from_gram(np.eye(1), np.array([[4.0]]), np.array([[2.0]]), 1.0)
    >>> sp, round(out[0].singular_value, 12), round(out[0].cos2_target, 12)   # theta = 2, psi = 1
    ((2.0,), 2.5, 0.75)
    """
    G_U = np.asarray(G_U, dtype=float)
    lu, Qu = np.linalg.eigh((G_U + G_U.T) / 2)
    lu = np.clip(lu, 0.0, None)
    Rm = (Qu * np.sqrt(lu)) @ Qu.T
    M = Rm @ np.asarray(G_V, dtype=float) @ Rm
    ev, q = np.linalg.eigh((M + M.T) / 2)
    order = np.argsort(ev)[::-1]
    ev, q = np.clip(ev[order], 0.0, None), q[:, order]
    thr = psi**0.25
    spikes, outs = [], []
    for i in range(ev.size):
        s = math.sqrt(ev[i])
        if s <= 1e-12 * max(1.0, math.sqrt(ev[0])):
            continue
        spikes.append(s)
        if s <= thr:
            continue
        sv, wn, wd = bgn_predict(s, psi)
        Rq = Rm @ q[:, i]
        per = tuple(float(wd * (Mbar[:, r] @ Rq) ** 2 / s**2) for r in range(Mbar.shape[1]))
        ca = float(wn * Rq[0] ** 2 / G_U[0, 0]) if G_U[0, 0] > 0 else 0.0
        outs.append(TwoStepOutlier(float(sv), s, float(sum(per)), per, ca))
    return tuple(spikes), tuple(outs)


def _coefficients(K, batch, mu1, eta1, eta2):
    """Matrix ``C`` with ``vbar_k = sum_j C[k, j] basis_j`` (docs/theory/two_step.md §8 step 1)."""
    nb = K + 2 if batch == "fresh" else K + 1
    C = np.zeros((K + 1, nb))
    off = 1 if batch == "fresh" else 0
    if batch == "fresh":
        C[0, 0], C[0, 1] = mu1 * eta1, mu1 * eta2
    else:
        C[0, 0] = mu1 * (eta1 + eta2)
    for k in range(1, K + 1):
        C[k, k + off] = eta2 * eta1**k / math.factorial(k)
    return C


def _default_K(act, eta1, eta2, N):
    if N is None:
        return 0, None
    lam = outlier_count(inferred_alpha(eta1, N), inferred_alpha(eta2, N),
                        degree=act.degree if act.degree is not None else None)
    K = int(lam.count) + 2
    if act.degree is not None:
        K = min(K, act.degree - 1)
    if not act.smooth:
        K = 0
    return max(K, 0), lam


def two_step(activation, target, psi, phi, eta1, eta2, batch="reused", phi2=None, noise=0.0, *,
             N=None, mode="auto", rng=None, K=None, second_layer="gaussian", order=None, bulk="mp",
             bulk_samples=2) -> TwoStepPrediction:
    """Predicted outliers of ``W_2`` after two steps (docs/theory/two_step.md §5–§8).

    Parameters
    ----------
    activation : str, callable or Activation
    target : anything :func:`~rmtfl.theory.make_target` accepts (links centred)
    psi, phi : float > 0
        ``N/d`` and ``n/d`` (``phi`` is ``phi_1`` for fresh batches).
    eta1, eta2 : float
        Step sizes as numbers (``eta = c N^alpha``: :func:`~rmtfl.theory.step_size`).
    batch : {"reused", "fresh"}
    phi2 : float > 0
        ``n_2/d`` of the fresh second batch; required for ``batch="fresh"``, must be
        ``None`` (or ``phi``) for ``"reused"``.
    noise : float >= 0
        Label-noise standard deviation (combined with the target's own).
    N : int, optional
        Width.  ``None`` is the proportional limit at fixed ``eta``: every ``k >= 1``
        term vanishes (``K = 0``), so reused two steps equal one step with ``eta1 + eta2``.
        Given, the terms are kept at that ``N`` with ``K = min(L - 1, Lambda + 2)``.
    mode : {"auto", "analytic", "semi-analytic"}
        ``auto``: analytic when ``Lambda = 0`` (the inferred exponents, see
        :func:`inferred_alpha`), ``K = 0`` or ``sigma`` is a polynomial; otherwise
        semi-analytic (which then needs ``N`` and ``rng``).
    rng : Generator or seed
        Only for the semi-analytic mode (samples ``a``, ``X_t``, ``y_t``) and ``bulk="finite-N"``
        (the theory's own draws; with both, two children are spawned).
    K : int, optional
        Override the highest Taylor index.
    second_layer : {"gaussian", "rademacher"}
        Law of ``a`` (Rademacher collapses the ``u_k`` onto ``span{a, 1}``).
    bulk : {"mp", "finite-N"}
        ``"mp"``: BGN with the Marchenko–Pastur bulk (docs/theory/two_step.md §2.1), the ``N -> infinity`` law.
        ``"finite-N"`` (needs ``N`` and ``rng``): the bulk ``H = W_2 - P`` at the actual ``N``
        is sampled (``bulk_samples`` own draws of ``W_0, a, X, y``; ``O(N n d)`` work each), and
        the outlier locations solve the non-invariant master equation
        ``det(I - Phi_A Phi_B) = 0`` with the Gram matrices of ``P`` above
        (:mod:`rmtfl.theory._two_step.finite_bulk`).  The remainder ``R = O(eta N^{-1/2})`` of docs/theory/two_step.md §5.4 widens
        the bulk and interacts with the spike vectors; ``"mp"`` under-predicts near-bulk outliers
        (4% for the second outlier of the quadratic case at ``N = 1500``, where ``"finite-N"`` is
        within 0.5%; at ``N = 400`` it over-predicts that outlier by ~5%, the ``O(1/N)`` Jensen gap
        of the fluctuating ``theta(P)`` and the neglected cross terms).  Overlaps keep the MP
        formulas.  Not shown better in general: keep ``"mp"`` unless ``R`` is the concern.
    bulk_samples : int
        Number of own bulk samples for ``bulk="finite-N"`` (outlier locations averaged).

    Examples
    --------
    >>> p = two_step("hermite(0, 1, 0.5)", [0, 1, 1 / 2**0.5], 1.0, 4.0, 5.0, 5.0, N=1500)
    >>> len(p.outliers), p.mode
    (2, 'analytic')
    """
    act = get_activation(activation)
    psi = check_positive("psi", psi)
    phi = check_positive("phi", phi)
    eta1 = check_real("eta1", eta1)
    eta2 = check_real("eta2", eta2)
    check_choice("batch", batch, BATCHES)
    check_choice("mode", mode, MODES)
    check_choice("second_layer", second_layer, ("gaussian", "rademacher"))
    check_choice("bulk", bulk, BULKS)
    noise = check_nonnegative("noise", noise)
    if batch == "fresh":
        if phi2 is None:
            raise ValueError("phi2 (the fresh batch ratio n2/d) must be given (> 0) for batch='fresh'")
        phi2 = check_positive("phi2", phi2)
    elif phi2 is not None and check_positive("phi2", phi2) != phi:
        raise ValueError(f"phi2 must be None (or equal phi) for batch='reused', got {phi2!r}")
    if N is not None:
        N = check_positive("N", N)
    t = make_target(target)
    if noise:
        t = make_target(t, noise=math.hypot(noise, t.noise))
    K0, lam = _default_K(act, eta1, eta2, N)
    if K is not None:
        K0 = check_int("K", K, lo=0)
        if N is None and K0 > 0:
            raise ValueError("K > 0 needs the width N (the k >= 1 terms scale like N^{-k/2})")
    K = K0
    notes = []
    if not act.smooth and N is not None:
        notes.append(f"{act.name} is not smooth: only the k = 0 term is kept")
    if mode == "auto":
        closed = K == 0 or act.degree is not None or (lam is not None and int(lam.count) == 0)
        mode = "analytic" if closed else "semi-analytic"
    if mode == "semi-analytic":
        if N is None:
            raise ValueError("mode='semi-analytic' needs the width N")
        if rng is None:
            raise ValueError("mode='semi-analytic' samples spike vectors and needs an explicit rng (seed or Generator)")
    bulk_rng = None
    if bulk == "finite-N":
        if N is None:
            raise ValueError("bulk='finite-N' needs the width N (an integer >= 2)")
        if rng is None:
            raise ValueError("bulk='finite-N' samples its own bulk and needs an explicit rng (seed or Generator)")
        bulk_samples = check_int("bulk_samples", bulk_samples, lo=1, hi=64)
        if mode == "semi-analytic":
            rng, bulk_rng = (rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)).spawn(2)
        else:
            bulk_rng = rng
    setup = _setup(act, t, K)
    C = _coefficients(K, batch, setup.mu1, eta1, eta2)
    if mode == "analytic":
        st = _stats(setup, phi, K, batch, phi2, order)
        G_U = a_power_gram(K, N if N is not None else 1.0, second_layer)
        G_V = C @ st["gram"] @ C.T
        Mbar = C @ st["basis_targets"]
    else:
        G_U, G_V, Mbar = _sampled_grams(setup, psi, phi, phi2, K, batch, C, int(N), rng, second_layer)
        notes.append("semi-analytic: Gram matrices of sampled a, X, y")
    spikes, outs = outliers_from_gram(G_U, G_V, Mbar, psi)
    top = None
    if bulk == "finite-N":
        from .finite_bulk import finite_bulk_kernels, finite_bulk_outliers

        fb = finite_bulk_kernels(act, t, psi, phi, eta1, eta2, batch, phi2, K=K, N=int(N), rng=bulk_rng,
                                 reps=bulk_samples, second_layer=second_layer)
        sv = finite_bulk_outliers(fb, G_U, G_V, len(outs))
        outs = tuple(replace(o, singular_value=float(v)) for o, v in zip(outs, sv))
        top = fb.top
        notes.append(f"finite-N bulk: outlier locations from the master equation with {bulk_samples} own sampled "
                     f"bulk(s) W_2 - P at N={int(N)} (mean top {top:.4f}); overlaps use the MP formulas")
    tp = None
    if N is not None:
        ey2 = setup.ey2
        mus2 = sum(m * m for m in setup.mus)
        d2 = setup.mu1**2 * (mus2 + ey2 / phi) + setup.tau_h2_unit * ey2 / phi
        tp = abs(eta1) * math.sqrt(2 * math.log(max(N, 2.0)) / N) * math.sqrt(d2)
        if tp > 0.5 and K > 0 and (act.degree is None or act.degree > 2):  # degree 2 is exact (docs/theory/two_step.md §5.4)
            notes.append(f"Taylor parameter eta1*max|a D| ~ {tp:.2f} is not small: the mean replacement "
                         "of the k >= 1 terms is unreliable here (docs/theory/two_step.md §9)")
    return TwoStepPrediction(outliers=outs, spikes=spikes, mode=mode, K=K, bulk_edge=1 + math.sqrt(psi),
                             batch=batch, outlier_count=lam, notes=tuple(notes), taylor_parameter=tp,
                             bulk=bulk, bulk_top=top)
