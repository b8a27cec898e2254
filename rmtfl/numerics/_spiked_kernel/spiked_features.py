"""One-step networks as spiked random features: weight law, ridge readout, KRR baselines.

rmtfl convention (docs/conventions.md §4, §5, §7): ``W_0`` rows ``N(0, I_d/d)``,
``a ~ N(0, I_m/m)`` (or Rademacher) fixed, one correlation-loss step
``W_1 = W_0 + eta G(W_0; X_1, y_1)`` on ``n1`` samples (shared model of
:mod:`rmtfl.numerics._two_step.model`), Gaussian inputs.  The readout is ridge on
``Phi = sigma(X W^T)/sqrt(m)`` with penalty ``lam |a|^2`` (sum of squares), which
is KRR with the empirical kernel ``Phi Phi'^T``; KRR baselines use ``k_Gamma``
with the same ``lam`` (docs/theory/spiked_kernel.md §7.2).  Test errors are mean squared
errors against the **noise-free** target on a fresh test set.

Backends: ``backend="numpy"`` (default) or ``"cupy"``.  Every random number (inputs,
labels, weights) is drawn on the host from the ``rng`` Generator and moved with
``backend.asarray``, so both backends train and test on the same sample; GEMMs,
activations (:func:`rmtfl.numerics.activate`), kernel Gram matrices and the
ridge solves then run on the device.

Examples
--------
>>> from rmtfl.theory import spike_constants
>>> res = one_step_weights("relu", "linear", d=40, m=200, n=160, eta=3.0, rng=0)
>>> ms = measure_spike(res.W1, res.beta_star)
>>> bool(ms.spike > ms.orthogonal)
True
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from rmtfl._validate import check_choice, check_int, check_nonnegative, check_positive, check_real
from rmtfl.theory import get_activation
from rmtfl.theory import rf_kernel
from rmtfl.theory._spiked_kernel.spike import eta_from_b, target_moments
from rmtfl.theory import Target, make_target
from .._backend import get_backend, to_numpy
from .kernels import activate, kernel_gram, random_direction
from .._two_step.model import gd_steps, init_first_layer, init_second_layer, sample_inputs, sample_targets

__all__ = ["OneStep", "one_step_weights", "SpikeMeasurement", "measure_spike", "ridge_predict",
           "GeneralisationResult", "generalisation_experiment"]



@dataclass(frozen=True)
class OneStep:
    """A sampled one-step network: ``W0``, ``W1``, ``a``, the first batch and ``beta_hat = X1^T y1/n1``."""

    W0: np.ndarray = field(repr=False)
    W1: np.ndarray = field(repr=False)
    a: np.ndarray = field(repr=False)
    beta_star: np.ndarray = field(repr=False)
    X1: np.ndarray = field(repr=False)
    y1: np.ndarray = field(repr=False)
    beta_hat: np.ndarray = field(repr=False)
    eta: float


def _target_with(target, noise):
    t = target if isinstance(target, Target) else make_target(target)
    return make_target(t, noise=noise) if noise else t


def one_step_weights(activation, target, d: int, m: int, n: int, eta: float, *, noise: float = 0.0,
                     rng=None, a_law: str = "gaussian", beta_star=None, backend="numpy") -> OneStep:
    """Sample ``W_0``, ``a``, a batch ``(X_1, y_1)`` and take one step of size ``eta`` (rmtfl ``eta_1``).

    ``beta_star`` defaults to a uniformly random unit vector.  Arrays are returned on the host;
    ``backend="cupy"`` takes the gradient step on the device (same host-drawn sample).
    """
    d, m, n = check_int("d", d, lo=2), check_int("m", m, lo=1), check_int("n", n, lo=1)
    eta = check_real("eta", eta)
    check_choice("a_law", a_law, ("gaussian", "rademacher"))
    g = np.random.default_rng(rng)
    r_dir, r_w, r_a, r_x, r_y = g.spawn(5)
    v = random_direction(d, r_dir) if beta_star is None else np.asarray(beta_star, float) / np.linalg.norm(beta_star)
    t = _target_with(target, check_nonnegative("noise", noise))
    W0 = init_first_layer(m, d, "gaussian", r_w, backend=backend)
    a = init_second_layer(m, a_law, r_a, backend=backend)
    Xh = sample_inputs(n, d, r_x)  # inputs and labels on the host, then moved: same sample on every backend
    yh = sample_targets(Xh, t, directions=v[None, :], rng=r_y)
    be = get_backend(backend)
    W1 = gd_steps(W0, a, (be.asarray(Xh), be.asarray(yh)), [eta], activation)
    return OneStep(to_numpy(W0), to_numpy(W1), to_numpy(a), v, Xh, yh, Xh.T @ yh / n, eta)


@dataclass(frozen=True)
class SpikeMeasurement:
    """Second moments of the first-layer rows along ``v`` and orthogonal to it.

    ``spike = d mean_j <w_j, v>^2`` (predicted ``1 + d B``), ``orthogonal = d mean_j |P_perp w_j|^2/(d-1)``
    (predicted ``d A'``), with standard errors over neurons; ``cos2_top`` is the squared overlap of
    the top right singular vector of ``W1 - W0`` with ``v`` (when ``W0`` is given).
    """

    spike: float
    spike_se: float
    orthogonal: float
    orthogonal_se: float
    cos2_top: float


def measure_spike(W, v, W0=None) -> SpikeMeasurement:
    """Measured ``d E_j <w_j, v>^2`` and orthogonal variance of the rows of ``W`` (``m x d``)."""
    W = to_numpy(W)
    v = np.asarray(v, dtype=float)
    m, d = W.shape
    if v.shape != (d,):
        raise ValueError(f"v must have shape ({d},), got {v.shape}")
    v = v / np.linalg.norm(v)
    p = W @ v
    sp = d * p * p
    orth = d * (np.einsum("ij,ij->i", W, W) - p * p) / (d - 1)
    se = (lambda x: float(x.std(ddof=1) / math.sqrt(m)) if m > 1 else 0.0)
    cos2 = math.nan
    if W0 is not None:
        D = W - to_numpy(W0)
        _, _, Vt = np.linalg.svd(D, full_matrices=False)
        cos2 = float((Vt[0] @ v) ** 2)
    return SpikeMeasurement(float(sp.mean()), se(sp), float(orth.mean()), se(orth), cos2)


def ridge_predict(K_train, K_test_train, y, lam: float):
    """KRR / ridge-readout prediction ``K_test,train (K_train + lam I)^{-1} y`` (docs/conventions.md §7).

    Runs where ``K_train`` lives: host numpy, or the device for cupy arrays (``cupy.linalg.solve``).

    >>> ridge_predict(np.eye(2), np.eye(2), np.array([2.0, 4.0]), 1.0).tolist()
    [1.0, 2.0]
    """
    lam = check_positive("lam", lam)
    if type(K_train).__module__.startswith("cupy"):
        xp = get_backend("cupy").xp
        K = xp.array(K_train, dtype=xp.float64, copy=True)
        idx = xp.arange(K.shape[0])
        K[idx, idx] += lam
        return xp.asarray(K_test_train) @ xp.linalg.solve(K, xp.asarray(y, dtype=xp.float64))
    K = np.array(K_train, dtype=float, copy=True)
    K[np.diag_indices_from(K)] += lam
    # one BLAS thread: right after a large GEMM a small multi-threaded LAPACK solve waits ~0.2 s for
    # OpenBLAS worker threads on a busy machine (measured: 0.25 s vs 0.4 ms for n = 192)
    from rmtfl._threads import blas_threads

    with blas_threads(1):
        alpha = np.linalg.solve(K, y)
    return K_test_train @ alpha


@dataclass(frozen=True)
class GeneralisationResult:
    """Test MSE (mean and standard error over seeds) per width and kernel baselines (docs/theory/spiked_kernel.md §7.2).

    ``nn[i]``/``rf[i]``: one-step network / random features at init, width ``widths[i]``.
    ``kernels``: ``{"k0", "k1_target", "k1_hhat"}`` -> (mean, se); width-independent.
    """

    widths: tuple
    nn: np.ndarray
    nn_se: np.ndarray
    rf: np.ndarray
    rf_se: np.ndarray
    kernels: dict
    params: dict
    raw: dict = field(repr=False)


def generalisation_experiment(activation="relu", target="hermite(0, 1, 0.5)", *, d: int = 64, n1: int = 256,
                              n2: int = 256, n_test: int = 2560, widths=(128, 512, 2048), b: float = 5.0,
                              lam: float = 1e-2, noise: float = 0.0, seeds: int = 4, rng=None,
                              kernels: bool = True, backend="numpy") -> GeneralisationResult:
    """One step on ``n1`` samples, ridge readout on fresh ``n2``, versus KRR with ``k_0``, ``k_1(beta*)``, ``k_1(ĥ)``.

    The step size is ``eta = sqrt(b psi)/|mu_1 mu_1*|`` (``psi = m/d``), so ``b`` and
    ``Gamma`` stay fixed as the width grows; ``k_1(beta*)`` uses ``Gamma = I/d + (b/d) beta* beta*^T``
    and ``k_1(ĥ)`` ``Gamma = I/d + kappa^2 beta_hat beta_hat^T`` with ``kappa^2 = eta^2 mu_1^2/m``.
    ``backend="cupy"`` runs the step, features, Gram matrices and solves on the device with
    the same host-drawn sample (results agree with numpy to rounding).
    """
    act = get_activation(activation)
    be = get_backend(backend)
    d = check_int("d", d, lo=2)
    n1, n2, n_test = (check_int(k, v, lo=2) for k, v in (("n1", n1), ("n2", n2), ("n_test", n_test)))
    seeds = check_int("seeds", seeds, lo=1)
    b = check_nonnegative("b", b)
    lam = check_positive("lam", lam)
    widths = tuple(check_int("width", w, lo=1) for w in widths)
    t = _target_with(target, check_nonnegative("noise", noise))
    t_clean = Target(t.links, t.directions, 0.0, t.offsets)
    mu1s = target_moments(t)[0]
    kappa2 = b / (d * mu1s**2)  # eta^2 mu_1^2 / m with eta = sqrt(b m/d)/|mu_1 mu_1*|
    nn = np.empty((seeds, len(widths)))
    rf = np.empty((seeds, len(widths)))
    kern = {"k0": [], "k1_target": [], "k1_hhat": []}
    for s, g in enumerate(np.random.default_rng(rng).spawn(seeds)):
        r_dir, r1, r2, rt, rnet = g.spawn(5)
        v = random_direction(d, r_dir)
        X1 = sample_inputs(n1, d, r1)
        y1 = sample_targets(X1, t, directions=v[None, :], rng=r1)
        X2 = sample_inputs(n2, d, r2)
        y2 = sample_targets(X2, t, directions=v[None, :], rng=r2)
        Xt = sample_inputs(n_test, d, rt)
        yt = sample_targets(Xt, t_clean, directions=v[None, :])
        beta_hat = X1.T @ y1 / n1
        if be.name == "numpy":
            X1b, y1b, X2b, y2b, Xtb, ytb = X1, y1, X2, y2, Xt, yt
        else:
            X1b, y1b, X2b, y2b, Xtb, ytb = (be.asarray(z) for z in (X1, y1, X2, y2, Xt, yt))
        for i, (m, gw) in enumerate(zip(widths, rnet.spawn(len(widths)))):
            eta = eta_from_b(act, t, b, m, d)
            ga, gb = gw.spawn(2)
            W0 = init_first_layer(m, d, "gaussian", ga, backend=be)
            a = init_second_layer(m, "gaussian", gb, backend=be)
            W1 = gd_steps(W0, a, (X1b, y1b), [eta], act)
            for W, store in ((W1, nn), (W0, rf)):
                F2 = activate(act, X2b @ W.T, be) / math.sqrt(m)
                Ft = activate(act, Xtb @ W.T, be) / math.sqrt(m)
                pred = ridge_predict(F2 @ F2.T, Ft @ F2.T, y2b, lam)
                store[s, i] = float(be.xp.mean((pred - ytb) ** 2))
        if kernels:
            nb = float(np.linalg.norm(beta_hat))
            gammas = {"k0": 1.0 / d, "k1_target": (1.0 / d, b / d, v),
                      "k1_hhat": (1.0 / d, kappa2 * nb * nb, beta_hat / nb)}
            for name, gam in gammas.items():
                if be.name == "numpy":
                    pred = ridge_predict(rf_kernel(act, X2, X2, gam), rf_kernel(act, Xt, X2, gam), y2, lam)
                else:
                    pred = ridge_predict(kernel_gram(act, X2b, gamma=gam, backend=be),
                                         kernel_gram(act, Xtb, X2b, gamma=gam, backend=be), y2b, lam)
                kern[name].append(float(be.xp.mean((pred - ytb) ** 2)))
    se = (lambda x: x.std(axis=0, ddof=1) / math.sqrt(seeds) if seeds > 1 else np.zeros(x.shape[1:]))
    kres = {}
    for name, vals in kern.items():
        if vals:
            arr = np.array(vals)
            kres[name] = (float(arr.mean()), float(arr.std(ddof=1) / math.sqrt(seeds)) if seeds > 1 else 0.0)
    params = dict(activation=act.name, target=t.name, d=d, n1=n1, n2=n2, n_test=n_test, widths=list(widths),
                  b=b, lam=lam, noise=noise, seeds=seeds, backend=be.name)
    return GeneralisationResult(widths, nn.mean(0), se(nn), rf.mean(0), se(rf), kres, params,
                                {"nn": nn, "rf": rf, **{k: np.array(v) for k, v in kern.items()}})
