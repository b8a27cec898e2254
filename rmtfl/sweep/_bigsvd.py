"""Top-k singular values of a two-step ``W_2`` too large for one machine, with ``dask.array``.

Normalisation as everywhere (docs/conventions.md §3–§5): ``W_0`` entries ``N(0, 1/d)``,
``a ~ N(0, I_N/N)``, ``x ~ N(0, I_d)``, correlation-loss steps
``W_t = W_{t-1} + eta_t G(W_{t-1}; X, y)`` with
``G = (1/n) diag(a) sigma'(W X^T) diag(y) X`` (one reused batch).

:func:`two_step_w2_dask` builds ``W_2`` lazily as a chunked ``dask.array``:
``W_0``, ``a`` and ``X`` are drawn by ``dask.array.random.default_rng(rng)``
chunk by chunk (on the workers, never on the driver), ``y = g(X beta*)`` is
computed per row-chunk of ``X``, and each step is two chunked products,
``Z = W X^T`` (``N x n``, chunks ``rows x rows``) and ``G = (sigma'(Z) * y) X``
(a reduction over the sample chunks).  Peak memory per task is one
``rows x d`` or ``rows x rows`` block, so ``N`` and ``n`` can exceed a single
machine's memory; each row-chunk of ``W`` needs ``rows * d`` floats.

:func:`top_singular_values_dask` then runs ``dask.array.linalg.svd_compressed``
(randomised SVD with power iterations): with ``n_power_iter = q`` the error on
``s_i`` decays like ``(s_{k+p+1}/s_i)^{2q+1}``, so well-separated outliers are
accurate to near machine precision while values inside the bulk are only
approximate — ask for ``k`` beyond the predicted number of outliers and read
only those above the bulk edge (docs/theory/two_step.md §9).

The random numbers depend on ``rng`` (an integer seed) and on the chunking (same seed and
chunks give the same matrix on any cluster); :func:`materialise_inputs`
returns the same ``W_0, a, X, y`` as numpy arrays so the result can be checked
against the in-memory computation at a size that fits.

Examples
--------
>>> W2 = two_step_w2_dask("tanh", "linear", N=120, d=100, n=200, eta1=4.0, eta2=4.0, rng=1, rows=50)
>>> W2.shape, W2.chunksize
((120, 100), (50, 100))
>>> s = top_singular_values_dask(W2, 3, n_power_iter=6, rng=0, scheduler="sync")
>>> ref = __import__("numpy").linalg.svd(W2.compute(scheduler="sync"), compute_uv=False)[:3]
>>> bool(abs(s[0] - ref[0]) < 1e-10), bool(abs(s[1] - ref[1]) < 1e-2)   # outlier exact, bulk approximate
(True, True)
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from rmtfl._results import Result
from rmtfl._validate import check_int, check_real

__all__ = ["two_step_w2_dask", "top_singular_values_dask", "materialise_inputs", "DaskInputs"]


@dataclass(frozen=True)
class DaskInputs(Result):
    """The ``W_0, a, X, y`` of :func:`two_step_w2_dask` as numpy arrays; unpacks as ``W0, a, X, y``."""

    W0: np.ndarray = field(repr=False)
    a: np.ndarray = field(repr=False)
    X: np.ndarray = field(repr=False)
    y: np.ndarray = field(repr=False)

    def __iter__(self):
        return iter((self.W0, self.a, self.X, self.y))


def _seed(rng) -> int:
    """The integer seed of the chunked generator (chunks are drawn on the workers, so only a seed travels)."""
    if isinstance(rng, (bool, np.bool_)) or not isinstance(rng, (int, np.integer)) or rng < 0:
        raise ValueError(f"rng must be a non-negative integer seed on the dask path, got {rng!r}")
    return int(rng)


def _inputs(N, d, n, rng, rows, dtype):
    import dask.array as da

    g = da.random.default_rng(_seed(rng))
    W0 = g.standard_normal((N, d), chunks=(rows, d), dtype=dtype) / np.sqrt(d).astype(dtype)
    a = g.standard_normal(N, chunks=rows, dtype=dtype) / np.sqrt(N).astype(dtype)
    X = g.standard_normal((n, d), chunks=(rows, d), dtype=dtype)
    return W0, a, X


def _labels(Xb, target):
    from rmtfl.numerics import sample_targets

    return sample_targets(Xb, target=target)


def _sigma_prime_block(Z, activation):
    from rmtfl.theory import get_activation

    return np.asarray(get_activation(activation).derivative(1, Z), dtype=Z.dtype)


def _check(N, d, n, rows, target):
    from rmtfl.theory import make_target

    N = check_int("N", N, lo=2)
    d = check_int("d", d, lo=2)
    n = check_int("n", n, lo=2)
    rows = check_int("rows", rows, lo=1)
    t = make_target(target)
    if t.noise > 0:
        raise ValueError("target noise must be 0 on the dask path (labels are computed per chunk without "
                         f"a noise stream); got noise = {t.noise}")
    return N, d, n, rows, t


def two_step_w2_dask(activation, target, *, N: int, d: int, n: int, eta1: float, eta2: float,
                     rows: int = 2000, dtype="float64", rng: int = 0):
    """``W_2`` after two reused-batch steps, as a lazy ``dask.array`` (``N x d``, row chunks of ``rows``).

    ``eta_t`` are the step sizes themselves (``eta = c N^alpha``: see
    :func:`rmtfl.theory.step_size`).  ``target`` must be noise-free; its direction
    is ``e_1`` (the :func:`rmtfl.numerics.sample_targets` default).
    """
    import dask.array as da

    N, d, n, rows, t = _check(N, d, n, rows, target)
    eta1, eta2 = check_real("eta1", eta1), check_real("eta2", eta2)
    dtype = np.dtype(dtype)
    W0, a, X = _inputs(N, d, n, rng, rows, dtype)
    y = X.map_blocks(_labels, t, drop_axis=1, dtype=dtype)
    W = W0
    for eta in (eta1, eta2):
        Z = da.matmul(W, X.T)
        S = Z.map_blocks(_sigma_prime_block, activation, dtype=dtype) * y[None, :]
        G = da.matmul(S, X) * (a / n)[:, None]
        W = W + dtype.type(eta) * G
    return W


def materialise_inputs(*, target, N: int, d: int, n: int, rows: int = 2000, dtype="float64",
                       rng: int = 0) -> DaskInputs:
    """The ``W_0, a, X, y`` that :func:`two_step_w2_dask` uses, as numpy arrays (for small checks)."""
    import dask

    N, d, n, rows, t = _check(N, d, n, rows, target)
    W0, a, X = _inputs(N, d, n, rng, rows, np.dtype(dtype))
    W0, a, X = dask.compute(W0, a, X, scheduler="sync")
    return DaskInputs(W0, a, X, _labels(X, t))


def top_singular_values_dask(W, k: int, *, n_power_iter: int = 4, n_oversamples: int = 10, scheduler=None,
                             rng: int = 0) -> np.ndarray:
    """Top ``k`` singular values of a (dask or numpy) matrix by ``svd_compressed``; host float64, descending.

    ``scheduler`` is passed to ``compute`` (``None``: the active distributed Client, if any,
    else dask's default threads).
    """
    import dask.array as da

    k = check_int("k", k, lo=1)
    n_power_iter = check_int("n_power_iter", n_power_iter, lo=0)
    if not isinstance(W, da.Array):
        W = da.from_array(np.asarray(W), chunks=(max(1, math.ceil(W.shape[0] / 4)), W.shape[1]))
    if k > min(W.shape):
        raise ValueError(f"k must be in [1, {min(W.shape)}], got {k}")
    _, s, _ = da.linalg.svd_compressed(W, k, n_power_iter=n_power_iter, n_oversamples=n_oversamples,
                                       seed=_seed(rng))
    kw = {} if scheduler is None else {"scheduler": scheduler}
    return np.sort(np.asarray(s.compute(**kw), dtype=np.float64))[::-1]
