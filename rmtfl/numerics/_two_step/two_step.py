"""Sampling and measuring one and two large gradient steps (docs/theory/two_step.md §3, §5, §9).

Normalisation as in :mod:`rmtfl.numerics._two_step.model` (docs/conventions.md §4–§5):
``W_0`` entries ``N(0, 1/d)``, ``a ~ N(0, I_N/N)``, ``x ~ N(0, I_d)``,
correlation-loss steps ``W_t = W_{t-1} + eta_t G(W_{t-1}; X_t, y_t)`` with ``a`` fixed.
Target directions are ``e_1, ..., e_R`` (the first coordinates).

Measured: the singular values of ``W_T`` (all, or the top ``k`` with a
completeness check at the bulk edge plus a Tracy–Widom margin, docs/theory/two_step.md §9),
the squared cosines of the top singular vectors with each ``beta*_r`` (right,
d side) and with ``a^{⊙(j+1)}`` (left, N side), and the number of singular
values beyond ``1 + sqrt(psi)`` plus the Tracy–Widom margin
(:func:`rmtfl.numerics.count_outliers`).

Examples
--------
>>> r = simulate_two_step("tanh", "linear", N=200, d=200, n=400, eta1=1.5, eta2=1.5, rng=0, k=5)
>>> r.singular_values.shape, r.cos2_target.shape[1]
((5,), 1)
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from rmtfl._results import Result
from rmtfl._validate import (check_alpha, check_array, check_choice, check_int, check_memory, check_nonnegative,
                             check_positive, check_real, check_rng)
from rmtfl.theory import get_activation, make_target, step_size
from rmtfl.theory._two_step.bulk_edge import quadratic_c2
from .._backend import get_backend, to_numpy
from .model import (ETA_LIMIT, check_data, check_dtype, gd_steps, init_first_layer, init_second_layer, sample_inputs,
                    sample_targets, sigma_prime)
from .._classical.spectra import singular_values
from .measure import measure_step

__all__ = ["StepSimulation", "simulate_two_step", "simulate_one_step", "EmpiricalPhaseDiagram",
           "empirical_phase_diagram", "taylor_term_weights", "separated_count", "quadratic_bulk"]


@dataclass(frozen=True)
class StepSimulation(Result):
    """Measurements on ``W_T`` after one or two steps.

    Attributes
    ----------
    singular_values : ndarray
        All ``min(N, d)`` singular values (``k=None``) or the top ones (at least ``k``,
        more if more lie above the edge), descending.
    cos2_target : ndarray (n_vec, R)
        ``cos^2(v_i, beta*_r)`` for the top right singular vectors ``v_i``.
    cos2_a_powers : ndarray (n_vec, J)
        ``cos^2(u_i, a^{⊙(j+1)})``, ``j = 0..J-1`` (column 0 is the alignment with ``a``).
    outlier_count : int
        Singular values above ``edge``.
    edge : float
        ``1 + sqrt(N/d)`` plus the Tracy–Widom margin at ``p = 0.99``.
    complete : bool
        Every singular value above ``edge`` is among ``singular_values``.
    params : dict
        Resolved parameters (JSON-friendly).
    """

    singular_values: np.ndarray
    cos2_target: np.ndarray
    cos2_a_powers: np.ndarray
    outlier_count: int
    edge: float
    complete: bool
    params: dict = field(default_factory=dict)


@dataclass(frozen=True)
class EmpiricalPhaseDiagram(Result):
    """Simulated outlier counts of ``W_2`` over an ``(alpha1, alpha2)`` grid (:func:`empirical_phase_diagram`).

    Attributes
    ----------
    alpha1, alpha2 : ndarray
        The grid axes (columns, rows).
    mean_count, stderr : ndarray, shape ``(len(alpha2), len(alpha1))``
        Mean number of singular values beyond the edge plus Tracy–Widom margin, and its
        standard error over the seeds (0 for one seed).
    extra : ndarray
        ``mean_count - 1``: outliers beyond the first direction (comparable with ``Lambda``).
    mean_separated : ndarray
        Mean :func:`separated_count` (values split from the bulk by a relative gap ``rel_gap``).
    rel_gap : float
    N, d, n : int
    batch : str
    seeds : int
    """

    alpha1: np.ndarray
    alpha2: np.ndarray
    mean_count: np.ndarray
    stderr: np.ndarray
    extra: np.ndarray
    mean_separated: np.ndarray
    rel_gap: float
    N: int
    d: int
    n: int
    batch: str
    seeds: int


def _check_common(N, d, n, dtype, backend, k, n2=None):
    N = check_int("N", N, lo=1)
    d = check_int("d", d, lo=1)
    n = check_int("n", n, lo=1)
    item = check_dtype(dtype).itemsize
    get_backend(backend)
    if k is not None:
        k = check_int("k", k, lo=1, hi=min(N, d))
    m = n + (n2 or 0)
    # W_0, W_1, the gradient (N x d each), the batches (n x d, n2 x d), labels, the N x n
    # pre-activations (two at the peak) and the dense spectrum (min(N, d)^2 on the host)
    need = item * (3.0 * N * d + m * (d + 1) + 2.0 * N * max(n, n2 or 0)) + 8.0 * min(N, d) ** 2
    check_memory("N, d, n", need, "the weights, batches and pre-activations of the simulation")
    return N, d, n, k


#: Largest ``noise`` of the simulations (its square must stay finite, docs/reliability.md §1).
NOISE_LIMIT = 1e100


def _check_etas(etas):
    out = []
    for i, e in enumerate(etas):
        e = check_real(f"eta{i + 1}" if len(etas) > 1 else "eta", e)
        if abs(e) > ETA_LIMIT:
            name = f"eta{i + 1}" if len(etas) > 1 else "eta"
            raise ValueError(f"{name} must satisfy |{name}| <= {ETA_LIMIT:g}, got {e!r}")
        out.append(e)
    return out


def simulate_two_step(activation, target, *, N, d, n, eta1, eta2, batch="reused", n2=None, noise=0.0, k=None,
                      dtype="float64", first_layer="gaussian", second_layer="gaussian", n_vectors=None, a_powers=3,
                      device_rng: bool = False, rng=None, backend="numpy") -> StepSimulation:
    """Sample ``W_0, a``, the data and two steps; measure the spectrum and alignments of ``W_2``.

    Normalisation: docs/conventions.md §3–§5 (module docstring); the theory is
    :func:`rmtfl.theory.two_step` (docs/theory/two_step.md §5–§8).

    Parameters
    ----------
    activation, target
        ``sigma`` and the target (:func:`rmtfl.theory.make_target`; links centred).
    N, d, n : int
        Width, input dimension, first-batch size (sizes up to 8000 are fine in float32).
    eta1, eta2 : float
        Step sizes (``eta = c N^alpha``, see :func:`rmtfl.theory.step_size`).
    batch : {"reused", "fresh"}
        ``"fresh"`` draws an independent second batch of size ``n2`` (required).
    n2 : int
        Size of the fresh second batch (its own parameter; ``phi2 = n2/d``).
        Must be ``None`` or equal to ``n`` for a reused batch.
    rng : seed or Generator
        Children are spawned for (W0, a, X1, X2, noise, solver start vector).
    k : int, optional
        Only the top ``k`` singular values (and every one above the edge), certified complete
        (:func:`rmtfl.numerics.top_singular_triplets`: the mixed-precision dense solver up to
        ``min(N, d) = 2000``, values to float64 accuracy).
    dtype : {"float64", "float32"}
    backend : {"numpy", "cupy"}
        On cupy the steps run on the device and the spectrum is the dense device
        ``eigvalsh``/``eigh`` of the smaller Gram side (no iterative device solver).
    device_rng : bool
        ``False`` (default): every random number is drawn on the host, so the same
        ``rng`` gives bit-identical inputs on numpy and cupy.  ``True``: ``W0``, ``a``
        (gaussian law) and ``X`` come from the backend's own generator
        (:func:`rmtfl.numerics.device_normal`), a *different stream*.
    noise : float
        Extra label-noise standard deviation.
    first_layer, second_layer : laws of ``W_0`` and ``a``.
    n_vectors : int, optional
        How many top singular vectors to measure (default ``max(3, outliers + 1)``; the outliers are the values
        above ``edge``, at most 32 of them unless the count rule of docs/theory/two_step.md §9.2 finds more above
        the bulk's own edge: a widened bulk has hundreds of values above ``edge``).
    a_powers : int
        Number of powers ``a^{⊙(j+1)}`` for the left alignments.

    Returns
    -------
    StepSimulation

    Examples
    --------
    >>> r = simulate_two_step("tanh", "linear", N=150, d=150, n=300, eta1=1.5, eta2=1.5, batch="fresh", n2=300,
    ...                       rng=0, k=3)
    >>> r.outlier_count, r.params["batch"]
    (1, 'fresh')
    """
    check_choice("batch", batch, ("reused", "fresh"))
    N, d, n, k = _check_common(N, d, n, dtype, backend, k)
    if batch == "fresh":
        if n2 is None:
            raise ValueError("n2 (the fresh second batch size, an integer >= 1) must be given for batch='fresh'")
        n2 = check_int("n2", n2, lo=1)
    elif n2 is not None and check_int("n2", n2, lo=1) != n:
        raise ValueError(f"n2 must be None (or equal n) for batch='reused', got {n2!r}")
    if batch == "fresh":
        _check_common(N, d, n, dtype, backend, k, n2)
    return _simulate([eta1, eta2], batch, get_activation(activation), make_target(target), N=N, d=d, n=n, n2=n2,
                     rng=rng, k=k, dtype=dtype, backend=backend, noise=noise, first_layer=first_layer,
                     second_layer=second_layer, n_vectors=n_vectors, a_powers=a_powers, device_rng=device_rng)


def simulate_one_step(activation, target, *, N, d, n, eta, noise=0.0, k=None, dtype="float64",
                      first_layer="gaussian", second_layer="gaussian", n_vectors=None, a_powers=3,
                      device_rng: bool = False, rng=None, backend="numpy") -> StepSimulation:
    """One step ``W_1 = W_0 + eta G``; same parameters (``eta`` for ``eta1, eta2``, no second batch) and
    measurements as :func:`simulate_two_step`.

    Normalisation: docs/conventions.md §3–§5; the theory is :func:`rmtfl.theory.one_step`
    (docs/theory/two_step.md §3.3).

    >>> r = simulate_one_step("tanh", "linear", N=150, d=150, n=300, eta=3.0, rng=1, k=3)
    >>> r.outlier_count
    1
    """
    N, d, n, k = _check_common(N, d, n, dtype, backend, k)
    return _simulate([eta], "reused", get_activation(activation), make_target(target), N=N, d=d, n=n, n2=None,
                     rng=rng, k=k, dtype=dtype, backend=backend, noise=noise, first_layer=first_layer,
                     second_layer=second_layer, n_vectors=n_vectors, a_powers=a_powers, device_rng=device_rng)


def _simulate(etas, batch, act, t, *, N, d, n, n2, rng, k, dtype, backend, noise,
              first_layer, second_layer, n_vectors, a_powers, device_rng=False):
    noise = check_nonnegative("noise", noise)
    if noise > NOISE_LIMIT:
        raise ValueError(f"noise must be <= {NOISE_LIMIT:g}, got {noise!r}")
    if noise:
        t = make_target(t, noise=math.hypot(noise, t.noise))
    etas = _check_etas(etas)
    check_choice("first_layer", first_layer, ("gaussian", "sphere"))
    check_choice("second_layer", second_layer, ("gaussian", "rademacher"))
    a_powers = check_int("a_powers", a_powers, lo=1, hi=8)
    if t.rank > d:
        raise ValueError(f"d must be >= the target rank {t.rank}, got {d}")
    nv = None if n_vectors is None else check_int("n_vectors", n_vectors, lo=1, hi=min(N, d))
    be = get_backend(backend)
    dev = bool(device_rng)
    W, a, batches, g_solve = _sample_and_step(etas, batch, act, t, N, d, n, n2, rng, dtype, be, first_layer,
                                              second_layer, dev)
    del batches
    s, cos_t, cos_a, n_out, edge, complete = measure_step(W, a, t, N, d, k, g_solve, be, nv, a_powers)
    params = {"activation": act.name, "target": t.name, "N": N, "d": d, "n": n, "n2": n2,
              "etas": etas, "batch": batch, "k": k, "dtype": str(np.dtype(dtype)), "backend": be.name,
              "first_layer": first_layer, "second_layer": second_layer, "device_rng": dev}
    return StepSimulation(s, cos_t, cos_a, n_out, edge, complete, params)


def _sample_and_step(etas, batch, act, t, N, d, n, n2, rng, dtype, be, first_layer, second_layer, dev):
    """Draw ``W_0, a`` and the batches from ``rng`` (children: W0, a, X1, X2, noise, solver) and take
    the steps; returns ``(W_T, a, batches, solver rng)``.  ``W_0`` is not kept, so ``gd_steps`` may
    free it after the first step."""
    g_w, g_a, g_x1, g_x2, g_eps, g_solve = check_rng(rng).spawn(6)
    a = init_second_layer(N, law=second_layer, rng=g_a, dtype=dtype, backend=be, device_rng=dev)
    X1 = sample_inputs(n, d, rng=g_x1, dtype=dtype, backend=be, device_rng=dev)
    eps1, eps2 = g_eps.spawn(2)
    y1 = sample_targets(X1, target=t, rng=eps1)
    if batch == "fresh":
        X2 = sample_inputs(n2, d, rng=g_x2, dtype=dtype, backend=be, device_rng=dev)
        batches = [(X1, y1), (X2, sample_targets(X2, target=t, rng=eps2))]
    else:
        batches = (X1, y1)
    try:
        W = gd_steps(act, init_first_layer(N, d, law=first_layer, rng=g_w, dtype=dtype, backend=be,
                                           device_rng=dev), a, batches, etas=etas)
    except ValueError as exc:
        if "overflow" not in str(exc):
            raise
        names = ", ".join(f"eta{i + 1}" for i in range(len(etas))) if len(etas) > 1 else "eta"
        raise ValueError(f"{names} = {etas} (with noise = {t.noise:g}) are too large for N={N}, d={d}, n={n}: "
                         "the weights overflow") from None
    return W, a, batches, g_solve


def quadratic_bulk(activation, target, *, N, d, n, eta1, eta2, noise=0.0, k: int = 5, rng=None):
    """Top singular values of the bulk ``H = W_2 - P`` of two reused-batch steps, quadratic ``sigma``.

    For ``sigma = c0 + He1 + c2 He2`` (``mu1 = 1``) the low-rank part of ``W_2`` is exactly
    ``P = (eta1 + eta2) a beta_hat^T + 2 c2 eta1 eta2 a^{⊙2} (M beta_hat)^T`` with
    ``beta_hat = X^T y / n`` and ``M = X^T diag(y) X / n`` (docs/theory/two_step.md §5.4), computed here from
    the sample itself; ``W_2`` comes from real gradient steps (same draws as
    :func:`simulate_two_step` with the same ``rng``).  Normalisation as in the module
    (docs/conventions.md §3–§5).  Compare with :func:`rmtfl.theory.two_step_bulk_edge` (the deterministic edge of ``H``,
    docs/theory/two_step.md §5.5).  Returns the top ``k`` singular values (an array, descending).

    >>> s = quadratic_bulk("hermite(0, 1, 0.5)", "linear", N=150, d=150, n=300, eta1=2.0, eta2=2.0, rng=0, k=2)
    >>> s.shape, bool(s[0] < 3.0)
    ((2,), True)
    """
    act = get_activation(activation)
    c2 = quadratic_c2(act)
    t = make_target(target)
    noise = check_nonnegative("noise", noise)
    if noise > NOISE_LIMIT:
        raise ValueError(f"noise must be <= {NOISE_LIMIT:g}, got {noise!r}")
    if noise:
        t = make_target(t, noise=math.hypot(noise, t.noise))
    k = check_int("k", k, lo=1)
    N, d, n, k = _check_common(N, d, n, "float64", "numpy", k)
    eta1, eta2 = _check_etas([eta1, eta2])
    be = get_backend("numpy")
    W, a, (X, y), _ = _sample_and_step([eta1, eta2], "reused", act, t, N, d, n, None, rng, "float64", be,
                                       "gaussian", "gaussian", False)
    beta_hat = X.T @ y / n
    m_beta = X.T @ (y * (X @ beta_hat)) / n
    with np.errstate(over="ignore", invalid="ignore"):
        W -= (eta1 + eta2) * np.outer(a, beta_hat) + 2.0 * c2 * eta1 * eta2 * np.outer(a * a, m_beta)
    if not np.all(np.isfinite(W)):
        raise ValueError(f"eta1, eta2 and noise are too large: the bulk W_2 - P overflows (eta1={eta1}, "
                         f"eta2={eta2})")
    return singular_values(W)[:k]


#: Largest number of draws per grid point of :func:`empirical_phase_diagram`.
SEEDS_LIMIT = 10_000


def empirical_phase_diagram(activation, target, *, N, d, n, alpha1, alpha2, c1=1.0, c2=1.0,
                            batch="reused", n2=None, seeds=2, k=12, dtype="float64", rel_gap=0.15,
                            device_rng: bool = False, rng=None, backend="numpy") -> EmpiricalPhaseDiagram:
    """Outlier counts of ``W_2`` over an ``(alpha1, alpha2)`` grid, averaged over seeds (docs/theory/two_step.md §6, §9.1).

    ``eta_t = c_t N^{alpha_t}`` (docs/conventions.md §5); each point runs :func:`simulate_two_step`
    ``seeds`` times (children of ``rng``).  ``mean_separated`` (the mean :func:`separated_count`)
    is the better finite-``N`` proxy when large steps widen the bulk.

    Parameters
    ----------
    activation, target
        As for :func:`simulate_two_step`.
    N, d, n : int
        Sizes; ``n2`` the fresh second batch (``batch="fresh"``).
    alpha1, alpha2 : 1-d array_like in ``[0, 1/2)``
        Grid axes.
    c1, c2 : float > 0
        Prefactors of the step sizes.
    seeds : int
        Draws per grid point, ``1 <= seeds <= 10000``.
    k : int
        Top singular values measured per draw (certified complete at the edge).
    rel_gap : float
        Relative gap of :func:`separated_count`.
    dtype, device_rng, rng, backend
        As for :func:`simulate_two_step`.

    Returns
    -------
    EmpiricalPhaseDiagram

    Examples
    --------
    >>> r = empirical_phase_diagram("tanh", "linear", N=120, d=120, n=240, alpha1=[0.0], alpha2=[0.0], seeds=1,
    ...                             rng=0, k=4)
    >>> r.mean_count.shape
    (1, 1)
    """
    act, t = get_activation(activation), make_target(target)
    a1 = np.atleast_1d(check_array("alpha1", alpha1, ndim=(0, 1), min_size=1))
    a2 = np.atleast_1d(check_array("alpha2", alpha2, ndim=(0, 1), min_size=1))
    for name, axis in (("alpha1", a1), ("alpha2", a2)):
        for v in axis:
            check_alpha(name, float(v))
    c1, c2 = check_positive("c1", c1), check_positive("c2", c2)
    seeds = check_int("seeds", seeds, lo=1, hi=SEEDS_LIMIT)
    k = check_int("k", k, lo=1)
    rel_gap = check_positive("rel_gap", rel_gap)
    check_dtype(dtype)
    check_choice("batch", batch, ("reused", "fresh"))
    kids = check_rng(rng).spawn(a1.size * a2.size)
    counts = np.zeros((a2.size, a1.size, seeds))
    sep = np.zeros_like(counts)
    for i, al2 in enumerate(a2):
        for j, al1 in enumerate(a1):
            e1, e2 = step_size(c1, N=N, alpha=al1), step_size(c2, N=N, alpha=al2)
            for nm, c, e in (("1", c1, e1), ("2", c2, e2)):
                if abs(e) > ETA_LIMIT:
                    raise ValueError(f"c{nm} = {c!r} is too large: eta{nm} = c{nm} N^alpha{nm} = {e:g} exceeds "
                                     f"{ETA_LIMIT:g}")
            for s_, g in enumerate(kids[i * a1.size + j].spawn(seeds)):
                r = simulate_two_step(act, t, N=N, d=d, n=n, eta1=e1, eta2=e2, batch=batch, n2=n2, rng=g, k=k,
                                      dtype=dtype, backend=backend, n_vectors=1, device_rng=device_rng)
                counts[i, j, s_] = r.outlier_count
                sep[i, j, s_] = separated_count(r.singular_values, rel_gap=rel_gap)
    mean = counts.mean(axis=2)
    se = counts.std(axis=2, ddof=1) / math.sqrt(seeds) if seeds > 1 else np.zeros_like(mean)
    return EmpiricalPhaseDiagram(a1, a2, mean, se, mean - 1.0, sep.mean(axis=2), float(rel_gap), N, d, n, batch,
                                 seeds)


def separated_count(s, rel_gap: float = 0.15) -> int:
    """Number of top singular values separated from the rest by a relative gap.

    ``max{i : s_i / s_{i+1} > 1 + rel_gap}`` (0 if none) over the values given (descending).
    Unlike the count beyond ``1 + sqrt(psi)`` plus a Tracy–Widom margin, it is insensitive
    to a bulk widened by the ``O(eta N^{-1/2})`` remainder of large steps (docs/theory/two_step.md §5.4, §9),
    whose top values are packed at relative spacing ``~N^{-2/3}``.

    >>> separated_count([20.0, 4.5, 2.6, 2.55, 2.5])
    2
    >>> separated_count([2.05, 2.0, 1.98])
    0
    """
    v = check_array("s", s, ndim=1, min_size=1)
    rel_gap = check_positive("rel_gap", rel_gap)
    v = v[v > 0]
    if v.size < 2:
        return 0
    ratio = v[:-1] / v[1:]
    idx = np.nonzero(ratio > 1.0 + rel_gap)[0]
    return int(idx[-1] + 1) if idx.size else 0


def taylor_term_weights(activation, W0, X1, y1, *, X2=None, y2=None, kmax: int = 3):
    """Exact per-sample weights of the Taylor terms of ``W_2`` (docs/theory/two_step.md §5.1), averaged over neurons.

    Returns an array ``(kmax, n2)`` with row ``k - 1`` equal to
    ``(1/N) sum_j sigma^(k+1)(Z_ji) D_ji^k``, ``Z = W0 X2^T`` and
    ``D = (1/n1) sigma'(W0 X1^T) diag(y1) X1 X2^T`` (reused when ``X2`` is None).
    Since ``D`` does not involve ``a``, the ``k``-th Taylor term is
    ``diag(a^{⊙(k+1)}) (...)``, whose projection on ``a^{⊙(k+1)}`` has exactly these
    weights; docs/theory/two_step.md §5.3 predicts them as ``P_k(y_i, s_i)`` (:func:`rmtfl.theory._two_step.spike_vectors.P_k`).
    A diagnostic of the mean-replacement step; costs ``O(N n d)``.  Normalisation: docs/conventions.md §4–§5.

    >>> rng = np.random.default_rng(0)
    >>> W0 = init_first_layer(30, 20, rng=rng); X = sample_inputs(40, 20, rng=rng)
    >>> float(np.abs(taylor_term_weights("hermite(0, 1, 0.5)", W0, X, X[:, 0], kmax=2)[1]).max())
    0.0
    """
    act = get_activation(activation)
    kmax = check_int("kmax", kmax, lo=1, hi=8)
    W0 = check_data("W0", W0, 2)
    X1 = check_data("X1", X1, 2)
    y1 = check_data("y1", y1, 1)
    X2 = X1 if X2 is None else check_data("X2", X2, 2)
    if W0.shape[1] != X1.shape[1] or X2.shape[1] != X1.shape[1] or y1.shape[0] != X1.shape[0]:
        raise ValueError(f"shapes do not match: W0 {W0.shape}, X1 {X1.shape}, y1 {y1.shape}, X2 {X2.shape} "
                         "(W0 (N, d), X1 (n1, d), y1 (n1,), X2 (n2, d))")
    if y2 is not None:
        y2 = check_data("y2", y2, 1)
        if y2.shape[0] != X2.shape[0]:
            raise ValueError(f"y2 must have one label per row of X2, got {y2.shape} for X2 {X2.shape}")
    n1 = X1.shape[0]
    S = sigma_prime(act, W0 @ X1.T)
    S *= y1[None, :]
    D = (S @ X1) @ X2.T
    D /= n1
    del S
    Z = W0 @ X2.T
    out = np.zeros((kmax, X2.shape[0]))
    Dk = np.ones_like(D)
    for k in range(1, kmax + 1):
        Dk *= D
        out[k - 1] = to_numpy((act.derivative(k + 1, Z) * Dk).mean(axis=0))
    if not np.all(np.isfinite(out)):
        raise ValueError("W0, X1 and y1 (or X2) are too large: the Taylor weights overflow (rescale them)")
    return out
