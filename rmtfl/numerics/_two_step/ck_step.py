"""The conjugate kernel before and after one gradient step, sampled (docs/theory/kernel_spectra.md §4).

Normalisation: docs/conventions.md §3–5.  ``W_0``, ``a`` at initialisation, one step
``W_1 = W_0 + eta G(W_0; X, y)`` on a batch of ``n`` samples, then the conjugate kernels
``K_t = sigma(X~ W_t^T) sigma(X~ W_t^T)^T / N`` on fresh inputs ``X~`` (``n x d``), both returned with
their eigenvalues sorted decreasingly.

Examples
--------
>>> r = simulate_ck_one_step("tanh", "linear", N=200, d=200, n=200, eta=4.0, rng=0)
>>> r.before.shape, bool(r.after[0] > r.before[0])
((200,), True)
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg as sla

from rmtfl._results import Result
from rmtfl._validate import check_in_range, check_int, check_memory, check_rng
from rmtfl.theory import get_activation
from .._classical.blas import gram_upper, matmul
from .model import gd_steps, init_first_layer, init_second_layer, sample_inputs, sample_targets

__all__ = ["simulate_ck_one_step", "CKStepSample"]


@dataclass(frozen=True)
class CKStepSample(Result):
    """Eigenvalues (decreasing) of the conjugate kernel before (``before``) and after (``after``) one step.

    Normalisation: docs/theory/kernel_spectra.md §4.

    >>> CKStepSample("relu", 1.0, np.array([1.0]), np.array([2.0])).to_dict()["after"]
    [2.0]
    """

    activation: str
    eta: float
    before: np.ndarray
    after: np.ndarray


def _ck_eigs(act, Xt, W, N):
    F = np.asarray(act(matmul(Xt, np.ascontiguousarray(W.T))), dtype=np.float64)
    if not np.all(np.isfinite(F)):
        raise ValueError("activation: the features are not all finite; the Gram is undefined")
    G = gram_upper(F)
    G *= 1.0 / N
    return sla.eigh(G, lower=False, eigvals_only=True, check_finite=False, driver="evd")[::-1].copy()


def simulate_ck_one_step(activation, target, *, N: int, d: int, n: int, eta: float, rng=None) -> CKStepSample:
    """Sample ``W_0``, take one step of size ``eta`` and return the CK spectra on fresh inputs (host numpy).

    Normalisation: docs/theory/kernel_spectra.md §4 (docs/conventions.md §3–5).  All arguments after
    ``target`` keyword-only.

    >>> r = simulate_ck_one_step("relu", "linear", N=100, d=100, n=100, eta=1.0, rng=1)
    >>> len(r.after)
    100
    """
    act = get_activation(activation)
    N = check_int("N", N, 1, 10 ** 7)
    d = check_int("d", d, 1, 10 ** 7)
    n = check_int("n", n, 1, 10 ** 7)
    eta = check_in_range("eta", eta, -1e6, 1e6)
    check_memory("N, d, n", 8.0 * (2 * n * d + 2 * N * d + n * N + n * n), "the one-step conjugate kernels")
    g = check_rng(rng)
    W0 = init_first_layer(N, d, rng=g)
    a = init_second_layer(N, rng=g)
    X = sample_inputs(n, d, rng=g)
    y = sample_targets(X, target=target, rng=g)
    W1 = gd_steps(act, W0, a, (X, y), etas=[eta])
    Xt = sample_inputs(n, d, rng=g)
    return CKStepSample(act.name, float(eta), _ck_eigs(act, Xt, W0, N), _ck_eigs(act, Xt, W1, N))
