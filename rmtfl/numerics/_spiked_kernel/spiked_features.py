"""One-step networks as spiked random features: weight law, ridge readout, KRR baselines.

rmtfl convention (docs/conventions.md §4, §5, §7): ``W_0`` rows ``N(0, I_d/d)``,
``a ~ N(0, I_N/N)`` (or Rademacher) fixed, one correlation-loss step
``W_1 = W_0 + eta G(W_0; X, y)`` on ``n`` samples (shared model of
:mod:`rmtfl.numerics._two_step.model`), Gaussian inputs.  The readout is ridge on
``Phi = sigma(X W^T)/sqrt(N)`` with penalty ``lam |a|^2`` (sum of squares), which
is KRR with the empirical kernel ``Phi Phi2^T``; KRR baselines use ``k_Gamma``
with the same ``lam`` (docs/theory/spiked_kernel.md §7.2).  Test errors are mean squared
errors against the **noise-free** target on a fresh test set.

Backends: ``backend="numpy"`` (default) or ``"cupy"``.  Every random number (inputs,
labels, weights) is drawn on the host from the ``rng`` Generator and moved with
``backend.asarray``, so both backends train and test on the same sample; GEMMs,
activations (:func:`rmtfl.numerics.activate`), kernel Gram matrices and the
ridge solves then run on the device.

Examples
--------
>>> res = one_step_weights("relu", "linear", N=200, d=40, n=160, eta=3.0, rng=0)
>>> ms = measure_spike(res.W1, res.beta_star)
>>> bool(ms.spike > ms.orthogonal)
True
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from rmtfl._results import Result
from rmtfl._validate import (check_array, check_choice, check_int, check_memory, check_nonnegative, check_positive,
                             check_real, check_rng)
from rmtfl.theory import Target, eta_from_b, get_activation, make_target, rf_kernel
from .._backend import get_backend, to_numpy
from .kernels import activate, kernel_gram
from .sampling import random_direction
from .._two_step.model import gd_steps, init_first_layer, init_second_layer, sample_inputs, sample_targets

__all__ = ["OneStep", "one_step_weights", "SpikeMeasurement", "measure_spike", "ridge_predict",
           "KernelBaseline", "GeneralisationResult", "generalisation_experiment"]


@dataclass(frozen=True)
class OneStep(Result):
    """A sampled one-step network: ``W0``, ``W1`` (``N x d``), ``a``, the batch ``(X, y)`` of size ``n``
    and ``beta_hat = X^T y/n`` (docs/conventions.md §4–§5)."""

    W0: np.ndarray = field(repr=False)
    W1: np.ndarray = field(repr=False)
    a: np.ndarray = field(repr=False)
    beta_star: np.ndarray = field(repr=False)
    X: np.ndarray = field(repr=False)
    y: np.ndarray = field(repr=False)
    beta_hat: np.ndarray = field(repr=False)
    eta: float


def _on_device(v) -> bool:
    return type(v).__module__.startswith("cupy")


def _target_with(target, noise) -> Target:
    t = target if isinstance(target, Target) else make_target(target)
    return make_target(t, noise=noise) if noise else t


def one_step_weights(activation, target, *, N: int, d: int, n: int, eta: float, noise: float = 0.0,
                     a_law: str = "gaussian", beta_star=None, rng=None, backend="numpy") -> OneStep:
    """Sample ``W_0``, ``a``, a batch ``(X, y)`` and take one step of size ``eta`` (rmtfl ``eta_1``).

    The sampled counterpart of :func:`rmtfl.theory.spike_constants` (same ``N, d, n, eta, noise``);
    normalisation docs/conventions.md §4–§5 (``W_0`` rows ``N(0, I_d/d)``, ``a ~ N(0, I_N/N)``,
    correlation-loss step with mean reduction).

    Parameters
    ----------
    activation : str, callable or Activation
        Student activation ``sigma``.
    target : str, Target, ...
        Single- or multi-index target (anything :func:`rmtfl.theory.make_target` accepts).
    N, d, n : int
        Width, input dimension and batch size.
    eta : float
        Step size.
    noise : float
        Label-noise standard deviation (when ``> 0`` it replaces the target's own).
    a_law : {"gaussian", "rademacher"}
        Law of the second layer.
    beta_star : array of shape (d,), optional
        Target direction; default a uniformly random unit vector.
    rng : None, int, SeedSequence or Generator
        Randomness (direction, ``W_0``, ``a``, inputs, labels: independent spawned streams).
    backend : str or Backend
        ``"cupy"`` takes the gradient step on the device (same host-drawn sample).

    Returns
    -------
    OneStep
        Host arrays.

    Examples
    --------
    >>> r = one_step_weights("tanh", "linear", N=30, d=20, n=40, eta=2.0, rng=3)
    >>> r.W1.shape, r.X.shape
    ((30, 20), (40, 20))
    """
    act = get_activation(activation)
    N, d, n = check_int("N", N, lo=1), check_int("d", d, lo=2), check_int("n", n, lo=1)
    eta = check_real("eta", eta)
    check_choice("a_law", a_law, ("gaussian", "rademacher"))
    g = check_rng(rng)
    r_dir, r_w, r_a, r_x, r_y = g.spawn(5)
    v = random_direction(d, rng=r_dir) if beta_star is None else \
        np.asarray(beta_star, float) / np.linalg.norm(beta_star)
    noise = check_nonnegative("noise", noise)
    if noise > 1e100:
        raise ValueError(f"noise must be <= 1e100, got {noise!r}")
    t = _target_with(target, noise)
    W0 = init_first_layer(N, d, law="gaussian", rng=r_w, backend=backend)
    a = init_second_layer(N, law=a_law, rng=r_a, backend=backend)
    Xh = sample_inputs(n, d, rng=r_x)  # inputs and labels on the host, then moved: same sample on every backend
    yh = sample_targets(Xh, target=t, directions=v[None, :], rng=r_y)
    be = get_backend(backend)
    try:
        W1 = gd_steps(act, W0, a, (be.asarray(Xh), be.asarray(yh)), etas=[eta])
    except ValueError as exc:
        if "overflow" not in str(exc) and "etas" not in str(exc):
            raise
        raise ValueError(f"eta = {eta!r} and noise = {noise!r} are too large: the step overflows") from None
    return OneStep(to_numpy(W0), to_numpy(W1), to_numpy(a), v, Xh, yh, Xh.T @ yh / n, eta)


@dataclass(frozen=True)
class SpikeMeasurement(Result):
    """Second moments of the first-layer rows along ``v`` and orthogonal to it (docs/theory/spiked_kernel.md §1.3).

    ``spike = d mean_j <w_j, v>^2`` (predicted ``1 + d B``), ``orthogonal = d mean_j |P_perp w_j|^2/(d-1)``
    (predicted ``d A'``), with standard errors over neurons; ``cos2_top`` is the squared overlap
    (docs/conventions.md §1) of the top right singular vector of ``W1 - W0`` with ``v`` (when ``W0`` is given).
    """

    spike: float
    spike_se: float
    orthogonal: float
    orthogonal_se: float
    cos2_top: float


def measure_spike(W, v, *, W0=None) -> SpikeMeasurement:
    """Measured ``d E_j <w_j, v>^2`` and orthogonal variance of the rows of ``W`` (``N x d``).

    Normalisation: ``d`` times the second moments, so isotropic ``N(0, I_d/d)`` rows give 1
    (docs/conventions.md §4); compare with :func:`rmtfl.theory.spike_constants`.

    Parameters
    ----------
    W : array of shape (N, d)
        First-layer weights.
    v : array of shape (d,)
        Spike direction (normalised here).
    W0 : array of shape (N, d), optional
        Weights before the step: gives ``cos2_top``.

    Returns
    -------
    SpikeMeasurement

    Examples
    --------
    >>> W = np.array([[1.0, 0.0], [-1.0, 0.0], [0.0, 0.5]])
    >>> ms = measure_spike(W, np.array([1.0, 0.0]))
    >>> round(ms.spike, 12), round(ms.orthogonal, 12)       # d mean <w,v>^2, d mean |P w|^2/(d-1)
    (1.333333333333, 0.166666666667)
    """
    W = check_array("W", to_numpy(W) if _on_device(W) else W, ndim=2, min_size=1)
    N, d = W.shape
    if d < 2:
        raise ValueError(f"W must have d >= 2 columns, got shape {W.shape}")
    v = check_array("v", v, shape=(d,))
    vmax = np.abs(v).max()
    if vmax == 0:
        raise ValueError("v must be non-zero")
    v = v / vmax
    v = v / np.linalg.norm(v)
    if W0 is not None:
        W0 = check_array("W0", to_numpy(W0) if _on_device(W0) else W0, shape=(N, d))
    p = W @ v
    sp = d * p * p
    orth = d * (np.einsum("ij,ij->i", W, W) - p * p) / (d - 1)
    if not (np.all(np.isfinite(sp)) and np.all(np.isfinite(orth))):
        raise ValueError("W is too large: its second moments overflow (rescale W)")
    se = (lambda x: float(x.std(ddof=1) / math.sqrt(N)) if N > 1 else 0.0)
    cos2 = math.nan
    if W0 is not None:
        D = W - W0
        _, _, Vt = np.linalg.svd(D, full_matrices=False)
        cos2 = float((Vt[0] @ v) ** 2)
    return SpikeMeasurement(float(sp.mean()), se(sp), float(orth.mean()), se(orth), cos2)


def ridge_predict(K_train, K_test_train, y, *, lam: float):
    """KRR / ridge-readout prediction ``K_test,train (K_train + lam I)^{-1} y`` (docs/conventions.md §7).

    Runs where ``K_train`` lives: host numpy, or the device for cupy arrays (``cupy.linalg.solve``).

    Examples
    --------
    >>> ridge_predict(np.eye(2), np.eye(2), np.array([2.0, 4.0]), lam=1.0).tolist()
    [1.0, 2.0]
    """
    lam = check_positive("lam", lam)
    if type(K_train).__module__.startswith("cupy"):
        xp = get_backend("cupy").xp
        K = xp.array(K_train, dtype=xp.float64, copy=True)
        idx = xp.arange(K.shape[0])
        K[idx, idx] += lam
        return xp.asarray(K_test_train) @ xp.linalg.solve(K, xp.asarray(y, dtype=xp.float64))
    K = check_array("K_train", K_train, ndim=2, min_size=1).astype(float, copy=True)
    n = K.shape[0]
    if K.shape != (n, n):
        raise ValueError(f"K_train must be square (n, n), got shape {K.shape}")
    K_test_train = check_array("K_test_train", K_test_train, ndim=(1, 2), min_size=1)
    if K_test_train.shape[-1] != n:
        raise ValueError(f"K_test_train must have {n} columns (one per training point), got {K_test_train.shape}")
    y = check_array("y", y, ndim=(1, 2), min_size=1)
    if y.shape[0] != n:
        raise ValueError(f"y must have {n} rows (one per training point), got shape {y.shape}")
    K[np.diag_indices_from(K)] += lam
    # one BLAS thread: right after a large GEMM a small multi-threaded LAPACK solve waits ~0.2 s for
    # OpenBLAS worker threads on a busy machine (measured: 0.25 s vs 0.4 ms for n = 192)
    from rmtfl._threads import blas_threads

    if not np.all(np.isfinite(K)):
        raise ValueError("K_train and lam are too large: K_train + lam I overflows")
    with blas_threads(1):
        try:
            alpha = np.linalg.solve(K, y)
        except np.linalg.LinAlgError:
            raise ValueError(f"K_train + lam I is singular to working precision (lam={lam:g} is too small "
                             "for the scale of K_train)") from None
    out = K_test_train @ alpha
    if not np.all(np.isfinite(out)):
        raise ValueError("K_train is ill-conditioned for this lam: the prediction overflows (raise lam or "
                         "rescale K_train, K_test_train, y)")
    return out


@dataclass(frozen=True)
class KernelBaseline(Result):
    """Test MSE of one KRR baseline: ``mean`` and standard error ``se`` over seeds (docs/theory/spiked_kernel.md §7.2).

    Behaves as the pair ``(mean, se)`` too: ``mean, se = baseline`` and ``baseline[0]``, ``baseline[1]``.
    """

    mean: float
    se: float

    def __iter__(self):
        return iter((self.mean, self.se))

    def __len__(self) -> int:
        return 2

    def __getitem__(self, i):
        return (self.mean, self.se)[i]


@dataclass(frozen=True)
class GeneralisationResult(Result):
    """Test MSE (mean and standard error over seeds) per width and kernel baselines (docs/theory/spiked_kernel.md §7.2).

    ``nn[i]``/``rf[i]``: one-step network / random features at init, width ``N[i]``.
    ``kernels``: ``{"k0", "k1_target", "k1_hhat"}`` -> :class:`KernelBaseline` (``mean, se``);
    width-independent.  ``raw`` holds the per-seed values (left out of ``to_dict``).
    """

    N: tuple
    nn: np.ndarray
    nn_se: np.ndarray
    rf: np.ndarray
    rf_se: np.ndarray
    kernels: dict
    params: dict
    raw: dict = field(repr=False)


#: Largest width ``N`` of :func:`generalisation_experiment` (keeps one run within seconds to minutes).
WIDTH_LIMIT = 100_000


def generalisation_experiment(activation, target, *, d: int = 64, n: int = 256, n2: int = 256, n_test: int = 2560,
                              N=(128, 512, 2048), b: float = 5.0, lam: float = 1e-2, noise: float = 0.0,
                              seeds: int = 4, kernels: bool = True, rng=None,
                              backend="numpy") -> GeneralisationResult:
    """One step on ``n`` samples, ridge readout on fresh ``n2``, versus KRR with ``k_0``, ``k_1(beta*)``, ``k_1(ĥ)``.

    The step size is ``eta = sqrt(b psi)/|mu_1 mu_1*|`` (``psi = N/d``, :func:`rmtfl.theory.eta_from_b`), so
    ``b`` and ``Gamma`` stay fixed as the width grows; ``k_1(beta*)`` uses ``Gamma = I/d + (b/d) beta* beta*^T``
    and ``k_1(ĥ)`` ``Gamma = I/d + kappa^2 beta_hat beta_hat^T`` with ``kappa^2 = eta^2 mu_1^2/N``
    (docs/theory/spiked_kernel.md §1.3, §7.2; readout and KRR normalisation docs/conventions.md §7).

    Parameters
    ----------
    activation : str, callable or Activation
        Student activation ``sigma``.
    target : str, Target, ...
        Single-index target.
    d : int
        Input dimension.
    n, n2, n_test : int
        First-step batch, readout batch and test-set sizes.
    N : int or sequence of int
        Width(s) of the network, each ``<= 100000``; one result per width.
    b : float
        Spike ratio ``B/A`` of the step, ``0 <= b <= 1e100``.
    lam : float
        Ridge penalty (readout and KRR).
    noise : float
        Label-noise standard deviation of the training labels.
    seeds : int
        Independent repetitions.
    kernels : bool
        Also run the KRR baselines.
    rng : None, int, SeedSequence or Generator
        Randomness.
    backend : str or Backend
        ``"cupy"`` runs the step, features, Gram matrices and solves on the device with the same
        host-drawn sample (results agree with numpy to rounding).

    Returns
    -------
    GeneralisationResult

    Examples
    --------
    >>> res = generalisation_experiment("relu", "linear", d=8, n=32, n2=32, n_test=64, N=(16,), seeds=1, rng=0)
    >>> res.N, sorted(res.kernels)
    ((16,), ['k0', 'k1_hhat', 'k1_target'])
    """
    act = get_activation(activation)
    be = get_backend(backend)
    d = check_int("d", d, lo=2)
    n, n2, n_test = (check_int(k, v, lo=2) for k, v in (("n", n), ("n2", n2), ("n_test", n_test)))
    seeds = check_int("seeds", seeds, lo=1, hi=10_000)
    b = check_nonnegative("b", b)
    if b > 1e100:
        raise ValueError(f"b must be <= 1e100 (the step size eta ~ sqrt(b N/d) overflows beyond), got {b!r}")
    lam = check_positive("lam", lam)
    widths = (N,) if np.ndim(N) == 0 else tuple(N)
    if not widths:
        raise ValueError("N must be a width or a non-empty sequence of widths")
    widths = tuple(check_int("N", w, lo=1, hi=WIDTH_LIMIT) for w in widths)
    for name, m in (("n", n), ("n2", n2), ("n_test", n_test)):
        check_memory(name, 8.0 * 3 * m * (d + 1), f"the {name} x d inputs")
    for w in widths:
        check_memory("N", 8.0 * (3.0 * w * d + 2.0 * w * max(n, n2, n_test)), "the N x d weights and features")
    check_memory("n", 8.0 * 4 * max(n, n2) ** 2 + 8.0 * 2 * n_test * max(n, n2), "the kernel Gram matrices")
    noise = check_nonnegative("noise", noise)
    if noise > 1e100:
        raise ValueError(f"noise must be <= 1e100, got {noise!r}")
    t = _target_with(target, noise)
    if t.rank != 1:
        raise ValueError(f"target must be single-index (rank 1) for the spiked kernel, got rank {t.rank}")
    t_clean = Target(t.links, t.directions, 0.0, t.offsets)
    mu1s = float(t.mu1[0])
    kappa2 = b / (d * mu1s**2)  # eta^2 mu_1^2 / N with eta = sqrt(b N/d)/|mu_1 mu_1*|
    nn = np.empty((seeds, len(widths)))
    rf = np.empty((seeds, len(widths)))
    kern = {"k0": [], "k1_target": [], "k1_hhat": []}
    for s, g in enumerate(check_rng(rng).spawn(seeds)):
        r_dir, r1, r2, rt, rnet = g.spawn(5)
        v = random_direction(d, rng=r_dir)
        X1 = sample_inputs(n, d, rng=r1)
        y1 = sample_targets(X1, target=t, directions=v[None, :], rng=r1)
        X2 = sample_inputs(n2, d, rng=r2)
        y2 = sample_targets(X2, target=t, directions=v[None, :], rng=r2)
        Xt = sample_inputs(n_test, d, rng=rt)
        yt = sample_targets(Xt, target=t_clean, directions=v[None, :])
        beta_hat = X1.T @ y1 / n
        if be.name == "numpy":
            X1b, y1b, X2b, y2b, Xtb, ytb = X1, y1, X2, y2, Xt, yt
        else:
            X1b, y1b, X2b, y2b, Xtb, ytb = (be.asarray(z) for z in (X1, y1, X2, y2, Xt, yt))
        for i, (Ni, gw) in enumerate(zip(widths, rnet.spawn(len(widths)))):
            eta = eta_from_b(act, t, psi=Ni / d, b=b)
            ga, gb = gw.spawn(2)
            W0 = init_first_layer(Ni, d, law="gaussian", rng=ga, backend=be)
            a = init_second_layer(Ni, law="gaussian", rng=gb, backend=be)
            try:
                W1 = gd_steps(act, W0, a, (X1b, y1b), etas=[eta])
            except ValueError as exc:
                raise ValueError(f"b = {b!r} is too large for N = {Ni}, d = {d}: the step eta = {eta:g} "
                                 f"fails ({exc})") from None
            for W, store in ((W1, nn), (W0, rf)):
                F2 = activate(act, X2b @ W.T, backend=be) / math.sqrt(Ni)
                Ft = activate(act, Xtb @ W.T, backend=be) / math.sqrt(Ni)
                pred = ridge_predict(F2 @ F2.T, Ft @ F2.T, y2b, lam=lam)
                store[s, i] = float(be.xp.mean((pred - ytb) ** 2))
        if kernels:
            nb = float(np.linalg.norm(beta_hat))
            gammas = {"k0": 1.0 / d, "k1_target": (1.0 / d, b / d, v),
                      "k1_hhat": (1.0 / d, kappa2 * nb * nb, beta_hat / nb)}
            for name, gam in gammas.items():
                if be.name == "numpy":
                    pred = ridge_predict(rf_kernel(act, X2, gamma=gam), rf_kernel(act, Xt, X2, gamma=gam), y2,
                                         lam=lam)
                else:
                    pred = ridge_predict(kernel_gram(act, X2b, gamma=gam, backend=be),
                                         kernel_gram(act, Xtb, X2b, gamma=gam, backend=be), y2b, lam=lam)
                kern[name].append(float(be.xp.mean((pred - ytb) ** 2)))
    se = (lambda x: x.std(axis=0, ddof=1) / math.sqrt(seeds) if seeds > 1 else np.zeros(x.shape[1:]))
    kres = {}
    for name, vals in kern.items():
        if vals:
            arr = np.array(vals)
            kres[name] = KernelBaseline(float(arr.mean()),
                                        float(arr.std(ddof=1) / math.sqrt(seeds)) if seeds > 1 else 0.0)
    params = dict(activation=act.name, target=t.name, d=d, n=n, n2=n2, n_test=n_test, N=list(widths),
                  b=b, lam=lam, noise=noise, seeds=seeds, backend=be.name)
    return GeneralisationResult(widths, nn.mean(0), se(nn), rf.mean(0), se(rf), kres, params,
                                {"nn": nn, "rf": rf, **{k: np.array(v) for k, v in kern.items()}})
