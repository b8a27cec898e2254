"""The two-layer model ``f(x) = a^T sigma(W x)`` and its correlation-loss gradient steps.

Normalisation (docs/conventions.md §4–§5): ``W0`` is ``N x d`` with entries
``N(0, 1/d)`` (``law="gaussian"``) or rows uniform on the unit sphere
(``law="sphere"``); ``a`` has entries ``N(0, 1/N)`` (``"gaussian"``) or
``±1/sqrt(N)`` (``"rademacher"``); inputs ``x ~ N(0, I_d)``; the gradient is
the ascent direction of the correlation loss with mean reduction,

    G(W; X, y) = (1/n) diag(a) sigma'(W X^T) diag(y) X ,

computed as one elementwise map and one GEMM (never an ``N x n x d`` tensor).
A step is ``W <- W + eta G(W; X, y)`` with ``a`` fixed.

Random numbers are drawn on the host from ``numpy.random.Generator`` and moved
to the requested backend, so the same ``rng`` gives the same arrays on numpy
and cupy.  ``device_rng=True`` (``init_first_layer``, ``init_second_layer``,
``sample_inputs``) draws the Gaussians with the backend's own generator instead
(:func:`rmtfl.numerics.device_normal`: cupy's ``default_rng`` seeded from
``rng``): reproducible per backend, but a *different stream* from the host one.

Examples
--------
>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> W = init_first_layer(40, 30, rng=rng); a = init_second_layer(40, rng=rng)
>>> X = sample_inputs(60, 30, rng=rng)
>>> from rmtfl.theory import make_target
>>> y = sample_targets(X, target=make_target("tanh"), rng=rng)
>>> W1 = gd_steps("tanh", W, a, (X, y), etas=[2.0])
>>> W1.shape, bool(np.allclose(W1, W + 2.0 * correlation_grad("tanh", W, a, X, y)))
((40, 30), True)

Signatures: the sizes are positional (``init_first_layer(N, d)``, ``init_second_layer(N)``,
``sample_inputs(n, d)``), then everything keyword-only (``law``, ``rng``, ``dtype``,
``backend``, ``device_rng``); the step functions take the
activation first and then the arrays they act on (``correlation_grad(activation, W, a, X, y)``,
``gd_steps(activation, W0, a, batches, etas=...)``), as every ``f(activation, ...)`` of rmtfl;
``sample_targets(X, target=...)`` takes the data array and a keyword-only target.
"""
from __future__ import annotations

import numpy as np

from rmtfl._validate import check_array, check_choice, check_int, check_memory, check_rng
from rmtfl.theory import Activation, get_activation
from .._classical.blas import gram_upper, matmul
from .._backend import check_dtype, get_backend, to_numpy
from .._classical.sampling import device_normal

__all__ = [
    "init_first_layer",
    "init_second_layer",
    "sample_inputs",
    "sample_targets",
    "correlation_grad",
    "gd_steps",
    "gd_trajectory",
    "sigma_prime",
]



def _on_device(v) -> bool:
    return type(v).__module__.startswith("cupy")


def check_data(name: str, value, ndim: int):
    """A real, finite, non-empty host array of rank ``ndim`` (float32 kept, others float64), or a cupy array of that rank.

    Errors name ``name`` (docs/reliability.md).
    """
    if _on_device(value):
        if value.ndim != ndim or value.size == 0 or value.dtype.kind != "f":
            raise ValueError(f"{name} must be a non-empty real {ndim}-d array, got shape {value.shape}, "
                             f"dtype {value.dtype}")
        return value
    arr = check_array(name, value, ndim=ndim, min_size=1)
    if arr.dtype not in (np.float32, np.float64):
        arr = arr.astype(np.float64)
    return arr


def _check_model(W, a, X, y, wname="W"):
    W = check_data(wname, W, 2)
    a = check_data("a", a, 1)
    X = check_data("X", X, 2)
    y = check_data("y", y, 1)
    if W.shape[1] != X.shape[1] or a.shape[0] != W.shape[0] or y.shape[0] != X.shape[0]:
        raise ValueError(f"shapes do not match: {wname} {W.shape}, a {a.shape}, X {X.shape}, y {y.shape} "
                         f"({wname} (N, d), a (N,), X (n, d), y (n,))")
    return W, a, X, y


#: Largest ``|eta|`` of :func:`gd_steps` / :func:`gd_trajectory` (docs/reliability.md §1).
ETA_LIMIT = 1e100


def _gauss(rng, shape, dtype):
    """Standard normals drawn in float64 and cast, so float32 runs see the same sample as float64 ones."""
    z = rng.standard_normal(shape)
    return z if z.dtype == dtype else z.astype(dtype)



def init_first_layer(N: int, d: int, *, law: str = "gaussian", rng=None, dtype="float64",
                     backend="numpy", device_rng: bool = False):
    """First-layer weights ``W0`` of shape ``(N, d)`` (docs/conventions.md §4).

    ``law="gaussian"``: entries ``N(0, 1/d)``; ``law="sphere"``: rows uniform on
    the unit sphere ``S^{d-1}``.  Both have ``E ||w_j||^2 = 1``.

    Parameters
    ----------
    N, d : int >= 1
        Width and input dimension.
    law : {"gaussian", "sphere"}
    rng : None, int, SeedSequence or Generator
    dtype : {"float64", "float32"}
    backend : {"numpy", "cupy"} or Backend
    device_rng : bool
        Draw the Gaussians with the backend's own generator (a different stream).

    Examples
    --------
    >>> W = init_first_layer(3, 1000, law="sphere", rng=1)
    >>> np.allclose(np.linalg.norm(W, axis=1), 1.0)
    True
    """
    N = check_int("N", N, lo=1)
    d = check_int("d", d, lo=1)
    check_memory("N, d", 8.0 * N * d, "an N x d float64 matrix")
    check_choice("law", law, ("gaussian", "sphere"))
    dt = check_dtype(dtype)
    be = get_backend(backend)
    # host draws are scaled on the host, so numpy and cupy get bit-identical arrays
    W = device_normal((N, d), dtype=dt, rng=check_rng(rng), backend=be) if device_rng else _gauss(check_rng(rng), (N, d), dt)
    xp = be.xp if device_rng else np
    if law == "gaussian":
        W *= dt.type(1.0 / np.sqrt(d))
    else:
        W /= xp.linalg.norm(W, axis=1, keepdims=True).astype(dt)
    return W if device_rng else be.asarray(W)


def init_second_layer(N: int, *, law: str = "gaussian", rng=None, dtype="float64", backend="numpy",
                      device_rng: bool = False):
    """Second-layer weights ``a`` of length ``N``: ``N(0, 1/N)`` or Rademacher ``±1/sqrt(N)`` (docs/conventions.md §4).

    ``law`` is ``"gaussian"`` or ``"rademacher"`` (signs always drawn on the host); ``rng``, ``dtype``,
    ``backend`` and ``device_rng`` as for :func:`init_first_layer`.

    >>> a = init_second_layer(4, law="rademacher", rng=0)
    >>> sorted(set(np.round(np.abs(a), 12)))
    [np.float64(0.5)]
    """
    N = check_int("N", N, lo=1)
    check_memory("N", 8.0 * N, "a length-N float64 vector")
    check_choice("law", law, ("gaussian", "rademacher"))
    dt = check_dtype(dtype)
    g = check_rng(rng)
    be = get_backend(backend)
    if law == "gaussian" and device_rng:
        return device_normal(N, dtype=dt, rng=g, backend=be) * dt.type(1.0 / np.sqrt(N))
    if law == "gaussian":
        a = _gauss(g, N, dt) * dt.type(1.0 / np.sqrt(N))
    else:  # Rademacher signs: always drawn on the host (N values)
        a = (2.0 * g.integers(0, 2, size=N) - 1.0).astype(dt) / dt.type(np.sqrt(N))
    return be.asarray(a)


def sample_inputs(n: int, d: int, *, rng=None, dtype="float64", backend="numpy", device_rng: bool = False):
    """Inputs ``X`` of shape ``(n, d)`` with i.i.d. ``N(0, 1)`` entries (rows ``x ~ N(0, I_d)``, docs/conventions.md §3).

    ``rng``, ``dtype``, ``backend`` and ``device_rng`` as for :func:`init_first_layer`.

    >>> sample_inputs(5, 3, rng=0).shape
    (5, 3)
    """
    n = check_int("n", n, lo=1)
    d = check_int("d", d, lo=1)
    check_memory("n, d", 8.0 * n * d, "an n x d float64 matrix")
    dt, be = check_dtype(dtype), get_backend(backend)
    if device_rng:
        return device_normal((n, d), dtype=dt, rng=check_rng(rng), backend=be)
    return be.asarray(_gauss(check_rng(rng), (n, d), dt))


def sample_targets(X, *, target, directions=None, rng=None):
    """Labels ``y_i = sum_r g_r(<beta*_r, x_i>) + noise * eps_i`` for the rows of ``X`` (docs/conventions.md §3).

    The data array ``X`` is the positional input; ``target`` is keyword-only (a positional
    ``target`` comes only after ``activation`` in rmtfl, docs/api.md).

    Parameters
    ----------
    X : array (n, d), numpy or cupy
    target : Target or anything :func:`rmtfl.theory.make_target` accepts
        (links are centred by default, see that module).
    directions : array (R, d), optional
        Orthonormal target directions.  Default: ``target.directions`` if set,
        otherwise the deterministic choice ``e_1, ..., e_R`` (the first ``R``
        coordinates), which is no loss of generality for isotropic ``W0``.
    rng : Generator or seed
        Used only for the label noise (drawn on the host, standard normal).

    Returns
    -------
    y : array (n,), same backend and dtype as ``X``.

    >>> X = np.arange(6.0).reshape(3, 2)
    >>> sample_targets(X, target="linear").tolist()      # y = x_1
    [0.0, 2.0, 4.0]
    """
    from rmtfl.theory import Target, make_target

    X = check_data("X", X, 2)
    gen = check_rng(rng)
    t = target if isinstance(target, Target) else make_target(target)
    if directions is not None:
        t = make_target(t, directions=directions)
    n, d = X.shape
    xp = _xp(X)
    if t.directions is None:
        if t.rank > d:
            raise ValueError(f"d must be >= the target rank {t.rank}, got {d}")
        Z = X[:, : t.rank]
    else:
        B = xp.asarray(t.direction_matrix(d), dtype=X.dtype)
        Z = X @ B.T
    y = xp.zeros(n, dtype=X.dtype)
    for r, g in enumerate(t.links):
        y += xp.asarray(g(Z[:, r]), dtype=X.dtype)
    if t.noise > 0:
        eps = gen.standard_normal(n)
        y += xp.asarray(t.noise * eps, dtype=X.dtype)
    if not bool(xp.all(xp.isfinite(y))):
        raise ValueError("X is too large: the labels overflow (rescale X)")
    return y


def _xp(arr):
    return get_backend("cupy").xp if type(arr).__module__.startswith("cupy") else np


def sigma_prime(act: Activation, Z):
    """``sigma'(Z)`` in the dtype of ``Z``; OVERWRITES ``Z`` where a fast path exists (tanh, relu,
    degree <= 2), so pass a temporary (every caller passes ``W @ X.T``): one ``N x n`` array
    instead of two at the peak.  ``act`` is a resolved :class:`~rmtfl.theory.Activation`
    (internal helper, not in the :mod:`rmtfl.numerics` namespace).

    >>> from rmtfl.theory import get_activation
    >>> sigma_prime(get_activation("hermite(0, 1, 0.5)"), np.array([0.0, 2.0])).tolist()   # 1 + z
    [1.0, 3.0]
    """
    if act.name == "tanh":
        xp = _xp(Z)
        T = xp.tanh(Z, out=Z)
        T *= T
        xp.subtract(1, T, out=T)
        return T
    if act.name in ("relu",):
        _xp(Z).copyto(Z, Z > 0)
        return Z
    if act.herme is not None and act.degree is not None and act.degree <= 2:
        # sigma = a0 + a1 z + a2 (z^2 - 1):  sigma' = a1 + 2 a2 z
        c = list(act.herme) + [0.0, 0.0]
        Z *= Z.dtype.type(2 * c[2])
        Z += Z.dtype.type(c[1])
        return Z
    try:
        return act.derivative(1, Z).astype(Z.dtype, copy=False)
    except TypeError:  # a cupy Z and a derivative cupy cannot evaluate (scipy.special.eval_hermite, np.asarray)
        if not type(Z).__module__.startswith("cupy"):
            raise
        return get_backend("cupy").asarray(np.asarray(act.derivative(1, to_numpy(Z))), dtype=Z.dtype)


def correlation_grad(activation, W, a, X, y):
    """``G = (1/n) diag(a) sigma'(W X^T) diag(y) X`` (docs/conventions.md §5), shape ``(N, d)``.

    Computed as ``S = sigma'(W X^T) * y`` (``N x n``) and one GEMM ``S @ X`` (host arrays through
    scipy's BLAS, :mod:`rmtfl.numerics._classical.blas`, the pool of the scipy LAPACK that measures the result).

    Parameters
    ----------
    activation : str, callable or Activation
        ``sigma``.
    W : array (N, d)
        First layer.
    a : array (N,)
        Second layer.
    X : array (n, d)
        Inputs.
    y : array (n,)
        Labels.

    Examples
    --------
    >>> rng = np.random.default_rng(2)
    >>> W = rng.standard_normal((3, 4)); a = rng.standard_normal(3)
    >>> X = rng.standard_normal((5, 4)); y = rng.standard_normal(5)
    >>> ref = sum(np.outer(a * (1 - np.tanh(W @ x) ** 2) * yi, x) for x, yi in zip(X, y)) / 5
    >>> bool(np.allclose(correlation_grad("tanh", W, a, X, y), ref))
    True
    """
    act = get_activation(activation)
    W, a, X, y = _check_model(W, a, X, y)
    G = _correlation_grad(act, W, a, X, y)
    if not bool(_xp(G).all(_xp(G).isfinite(G))):
        raise ValueError("W, a, X and y are too large: the gradient overflows (rescale them)")
    return G


def _correlation_grad(act, W, a, X, y):
    """:func:`correlation_grad` on validated arrays."""
    n = X.shape[0]
    S = sigma_prime(act, matmul(W, X.T))
    S *= y[None, :]
    G = matmul(S, X)
    del S
    G *= (a / n)[:, None]
    return G


def _schedule(batches, etas):
    """``(batches, etas)`` as two lists of equal length (one ``(X, y)`` pair reused, or one per step)."""
    etas = [float(e) for e in np.atleast_1d(check_array("etas", etas, ndim=(0, 1), min_size=1)).tolist()]
    if any(abs(e) > ETA_LIMIT for e in etas):
        raise ValueError(f"etas must satisfy |eta| <= {ETA_LIMIT:g}, got {etas}")
    if not isinstance(batches, (tuple, list)):
        raise TypeError(f"batches must be an (X, y) pair or a sequence of such pairs, got {type(batches).__name__}")
    if isinstance(batches, tuple) and len(batches) == 2 and hasattr(batches[0], "shape") \
            and getattr(batches[0], "ndim", 0) == 2:
        batches = [batches] * len(etas)
    batches = list(batches)
    if len(batches) != len(etas):
        raise ValueError(f"batches must be one (X, y) pair or one per step ({len(etas)}), got {len(batches)}")
    for b in batches:
        if not isinstance(b, (tuple, list)) or len(b) != 2:
            raise TypeError(f"batches must hold (X, y) pairs, got {type(b).__name__}")
    return batches, etas


def _check_run(W0, a, batches, etas):
    """Validated ``W0, a`` and the schedule: every batch checked once (a reused batch once)."""
    batches, etas = _schedule(batches, etas)
    W0 = check_data("W0", W0, 2)
    a = check_data("a", a, 1)
    seen = {}
    out = []
    for X, y in batches:
        key = (id(X), id(y))
        if key not in seen:
            _, _, Xc, yc = _check_model(W0, a, X, y, wname="W0")
            seen[key] = (Xc, yc)
        out.append(seen[key])
    return W0, a, out, etas


def _finite_weights(W):
    xp = _xp(W)
    if not bool(xp.all(xp.isfinite(W))):
        raise ValueError("etas are too large for these data: the weights overflow")
    return W


def gd_steps(activation, W0, a, batches, *, etas):
    """Gradient steps ``W_t = W_{t-1} + eta_t G(W_{t-1}; X_t, y_t)`` with ``a`` fixed; returns ``W_T``.

    Normalisation: docs/conventions.md §5 (correlation loss, mean reduction, :func:`correlation_grad`).

    Parameters
    ----------
    activation : str, callable or Activation
        ``sigma``.
    W0 : array (N, d)
        Initial first layer (not modified).
    a : array (N,)
        Fixed second layer.
    batches : tuple ``(X, y)`` or sequence of such tuples
        A single ``(X, y)`` is reused at every step; a sequence gives one batch
        per step (fresh batches), ``len(batches) == len(etas)``.
    etas : float or sequence of float
        Step sizes ``eta_t`` (any real; ``eta = c N^alpha``, see
        :func:`rmtfl.theory.step_size`).

    Returns
    -------
    array (N, d)
        ``W_T`` (every iterate: :func:`gd_trajectory`).

    Two steps on one reused batch (host arrays, ``n`` not much larger than ``N, d``) go through
    ``K = X X^T`` without forming ``W_1``: three GEMMs and a SYRK instead of four GEMMs
    (``_two_steps_one_batch``; same result to rounding).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> W = init_first_layer(5, 4, rng=rng); a = init_second_layer(5, rng=rng)
    >>> X = sample_inputs(8, 4, rng=rng); y = sample_targets(X, target="linear")
    >>> gd_steps("tanh", W, a, (X, y), etas=[1.0, 0.5]).shape
    (5, 4)
    """
    act = get_activation(activation)
    W0, a, batches, etas = _check_run(W0, a, batches, etas)
    if len(etas) == 2 and batches[0][0] is batches[1][0] and batches[0][1] is batches[1][1] \
            and _gram_route_pays(W0, a, *batches[0]):
        return _finite_weights(_two_steps_one_batch(W0, a, *batches[0], etas, act))
    W = W0
    del W0  # a caller that keeps no reference of its own lets W_0 go after the first step
    for (X, y), eta in zip(batches, etas):
        G = _correlation_grad(act, W, a, X, y)
        G *= G.dtype.type(eta)
        G += W
        W = G
    return _finite_weights(W)


def gd_trajectory(activation, W0, a, batches, *, etas):
    """Every iterate ``W_1, ..., W_T`` of :func:`gd_steps` (same arguments), stacked: shape ``(T, N, d)``.

    Plain steps (no Gram route); the stack is allocated once on the backend of ``W0``.
    Normalisation: docs/conventions.md §5.

    >>> rng = np.random.default_rng(0)
    >>> W = init_first_layer(5, 4, rng=rng); a = init_second_layer(5, rng=rng)
    >>> X = sample_inputs(8, 4, rng=rng); y = sample_targets(X, target="linear")
    >>> Ws = gd_trajectory("tanh", W, a, (X, y), etas=[1.0, 0.5])
    >>> Ws.shape, bool(np.allclose(Ws[-1], gd_steps("tanh", W, a, (X, y), etas=[1.0, 0.5])))
    ((2, 5, 4), True)
    """
    act = get_activation(activation)
    W0, a, batches, etas = _check_run(W0, a, batches, etas)
    out = _xp(W0).empty((len(etas),) + tuple(W0.shape), dtype=W0.dtype)
    W = W0
    for t, ((X, y), eta) in enumerate(zip(batches, etas)):
        G = _correlation_grad(act, W, a, X, y)
        G *= G.dtype.type(eta)
        G += W
        out[t] = G
        W = out[t]
    return _finite_weights(out)


def _gram_route_pays(W0, a, X, y) -> bool:
    """Whether :func:`_two_steps_one_batch` applies (host float arrays of one dtype) and is cheaper:
    ``2 N n d + n^2 d / 2 + N n^2`` multiply-adds against ``4 N n d`` for two plain steps."""
    arrays = (W0, a, X, y)
    if not all(type(v) is np.ndarray for v in arrays) or len({v.dtype for v in arrays}) != 1 \
            or W0.dtype not in (np.float32, np.float64) or W0.ndim != 2 or X.ndim != 2:
        return False
    (N, d), n = W0.shape, X.shape[0]
    return n * (d / 2 + N) < 1.8 * N * d


def _two_steps_one_batch(W0, a, X, y, etas, act):
    """``W_2`` after two steps on one reused batch with three GEMMs and a SYRK (four GEMMs plainly).

    ``W_1 X^T = W_0 X^T + eta_1 G_0 X^T`` with ``G_0 X^T = (1/n) diag(a) S_0 diag(y) K`` and
    ``K = X X^T``, so the second pre-activation needs the ``n x n`` Gram ``K`` (a SYRK, half a
    GEMM) instead of ``W_1``; and the two gradients share one GEMM,
    ``W_2 = W_0 + (1/n) diag(a) (eta_1 S_0 + eta_2 S_1) diag(y) X``.  Peak: ``W_0, X`` and three
    ``N x n``/``n x n`` arrays.  Same result as two :func:`correlation_grad` steps to rounding.
    """
    from scipy.linalg import blas

    n = X.shape[0]
    Z = matmul(W0, X.T)  # N x n, C order
    S0 = sigma_prime(act, Z.copy())
    S0 *= y[None, :]
    S0 *= (a * (etas[0] / n))[:, None]
    K = gram_upper(X)  # upper triangle of X X^T, Fortran order
    symm = blas.dsymm if X.dtype == np.float64 else blas.ssymm
    # in Fortran order Z.T (n x N) += K S0^T, i.e. Z += S0 K in place: Z is now W_1 X^T
    symm(1.0, K, S0.T, beta=1.0, c=Z.T, side=0, lower=0, overwrite_c=1)
    del K
    S1 = sigma_prime(act, Z)
    S1 *= y[None, :]
    S1 *= (a * (etas[1] / n))[:, None]
    S0 += S1
    del S1, Z
    W = matmul(S0, X)
    W += W0
    return W
