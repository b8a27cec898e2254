"""Sweepable experiments: a name, a version, a task function and its parameters.

Every experiment function has the signature ``fn(params, rng, backend)`` and
returns a dict of scalars; ``rng`` is the task's own ``numpy.random.Generator``
(see :mod:`rmtfl.sweep._grid`), ``backend`` is ``"numpy"`` or ``"cupy"`` (random
numbers are drawn on the host either way, so both backends see the same data and
a stored row does not depend on where it was computed; the numerics'
``device_rng=True`` stream is deliberately not offered here).
Bump ``version`` whenever the function's output for given params changes: the
version is part of every store key, so old rows are then not reused.

Registry (:data:`EXPERIMENTS`):

``bbp``
    Rank-one BBP/BGN check, ``W = Z/sqrt(d) + theta u v^T`` (docs/conventions.md §1,
    entries ``N(0, 1/d)``); metrics ``s1``, ``s2``, ``cos2_u``, ``cos2_v``.  Cheap; an
    optional ``delay`` (seconds, slept inside the task) emulates expensive tasks for
    fault-tolerance tests.
``two-step``
    Two large gradient steps (docs/theory/two_step.md §6) over ``(alpha1, alpha2)`` with
    ``eta_t = c_t N^{alpha_t}``; metrics ``count`` / ``count_total`` (the count rule of
    docs/theory/two_step.md §9.2: values above the spectrum's own fitted soft edge plus a Tracy–Widom
    margin, minus the first direction for ``count``; ``edge_fit`` the fitted edge), ``outliers`` (= number of singular values
    of ``W_2`` above the Tracy–Widom 99 % edge, minus the first direction, floored at
    0 — the empirical ``Lambda``), ``outliers_total``, ``separated`` / ``separated_total``
    (the same from :func:`rmtfl.numerics.separated_count` with a 25 % relative gap
    over the top 10 values, which a bulk widened by large steps does not inflate), ``s1``..``s4``, ``edge``,
    ``cos2_target`` (``cos^2(v_1, beta*)``), ``cos2_a`` (``cos^2(u_1, a)``); from
    :func:`rmtfl.numerics.simulate_two_step`.
``one-step``
    One step over ``eta`` (docs/theory/two_step.md §3.3), same metrics, from
    :func:`rmtfl.numerics.simulate_one_step`.
``kernel``
    Spiked random-features kernel over ``b`` (docs/theory/spiked_kernel.md §7.1): top eigenvalue of
    ``K/n`` and its eigenvector's squared overlaps ``cos2_y0``, ``cos2_y2``, ``cos2_psi``, from
    :func:`rmtfl.numerics.gram_alignment`.

Every experiment has a ``check(params)`` that validates one grid point (``ValueError`` naming the
parameter and its range); :meth:`Experiment.validate` runs it on the whole grid, and
:func:`~rmtfl.sweep.run_sweep` calls that before any task runs, so a bad grid (``alpha1 = 0.5``,
``N = 0``, an unknown activation) fails at once and writes nothing.  The defaults of the model
parameters are those of :mod:`rmtfl._defaults` (activation, target, ``psi``, ``phi``).

Examples
--------
>>> sorted(EXPERIMENTS)
['bbp', 'kernel', 'one-step', 'two-step']
>>> e = get_experiment("bbp")
>>> out = e.fn({"theta": 2.0, "N": 60, "psi": 1.0}, __import__("numpy").random.default_rng(0), "numpy")
>>> sorted(out)
['cos2_u', 'cos2_v', 's1', 's2']
>>> e.validate([{"theta": -1.0}])
Traceback (most recent call last):
...
ValueError: theta must be >= 0, got -1.0 (grid point {"theta":-1.0})
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from rmtfl import _defaults
from rmtfl._validate import check_alpha, check_choice, check_int, check_nonnegative, check_positive, check_real

from ._grid import canonical_params

__all__ = ["Experiment", "EXPERIMENTS", "get_experiment", "bbp_task", "two_step_task", "one_step_task",
           "kernel_task", "theory_outliers"]


@dataclass(frozen=True)
class Experiment:
    """A sweepable experiment.

    Attributes
    ----------
    name, version : str
        Identity in the store (see the module docstring).
    fn : callable
        ``fn(params, rng, backend) -> dict`` of scalars; must be a module-level
        function (Dask pickles it by reference).
    axes : dict
        Swept parameters and their default axis spec (``"LO:HI:COUNT"`` or a list).
    fixed : dict
        The other parameters and their defaults (types fix the CLI option types).
    metrics : tuple of str
        The main metrics (shown first by the CLI).
    description : str
    check : callable or None
        ``check(params)`` raises ``ValueError`` (naming the parameter) for a bad grid point;
        ``params`` holds the fixed parameters with the point's values applied.
    """

    name: str
    version: str
    fn: Callable = field(repr=False)
    axes: dict = field(default_factory=dict)
    fixed: dict = field(default_factory=dict)
    metrics: tuple = ()
    description: str = ""
    check: Callable | None = field(default=None, repr=False)

    def validate(self, grid) -> None:
        """Check every point of ``grid`` before anything runs; ``ValueError`` names the parameter and the point."""
        if self.check is None:
            return
        for point in grid:
            try:
                self.check({**self.fixed, **point})
            except (ValueError, TypeError) as exc:
                raise ValueError(f"{exc} (grid point {canonical_params(point)})") from None

    def params(self, overrides: dict | None = None) -> dict:
        """The fixed parameters with ``overrides`` applied (unknown names are refused)."""
        overrides = dict(overrides or {})
        unknown = set(overrides) - set(self.fixed) - set(self.axes)
        if unknown:
            raise ValueError(f"experiment {self.name!r} has no parameters {sorted(unknown)}; "
                             f"known: {sorted(set(self.fixed) | set(self.axes))}")
        return {**self.fixed, **overrides}


# --------------------------------------------------------------------------- bbp
def bbp_task(params: dict, rng: np.random.Generator, backend: str = "numpy") -> dict:
    """Top singular pair of ``W = Z/sqrt(d) + theta u v^T`` (``u, v`` unit, uniformly random).

    Parameters (``params``): ``theta >= 0``, ``N >= 2``, ``psi = N/d > 0``, ``delay >= 0`` seconds.
    BGN (docs/theory/two_step.md §2.1) predicts ``s1 -> sqrt((1+theta^2)(psi+theta^2))/theta`` above
    ``theta = psi^{1/4}`` and the bulk edge ``1 + sqrt(psi)`` below it.
    """
    from rmtfl.numerics import get_backend, to_numpy

    theta, N, psi, delay = _check_bbp({**BBP_FIXED, **params})
    d = max(2, int(round(N / psi)))
    be = get_backend(backend)
    Z = rng.standard_normal((N, d)) / math.sqrt(d)
    u = rng.standard_normal(N)
    u /= np.linalg.norm(u)
    v = rng.standard_normal(d)
    v /= np.linalg.norm(v)
    W = be.asarray(Z + theta * np.outer(u, v))
    U, s, Vt = be.xp.linalg.svd(W, full_matrices=False)
    U, s, Vt = to_numpy(U), to_numpy(s), to_numpy(Vt)
    if delay:
        time.sleep(delay)
    return {"s1": float(s[0]), "s2": float(s[1]), "cos2_u": float((U[:, 0] @ u) ** 2),
            "cos2_v": float((Vt[0] @ v) ** 2)}


def _check_bbp(p: dict):
    return (check_nonnegative("theta", p.get("theta", 0.0)), check_int("N", p["N"], lo=2),
            check_positive("psi", p["psi"]), check_nonnegative("delay", p["delay"]))


BBP_FIXED = {"N": 200, "psi": _defaults.PSI, "delay": 0.0}


# ---------------------------------------------------------------------- two-step
def _check_model(p: dict) -> None:
    """Activation, target and dtype of a two-step or one-step point (resolved once, then dropped)."""
    from rmtfl.theory import get_activation, make_target

    get_activation(p["activation"])
    make_target(p["target"])
    check_choice("dtype", p["dtype"], ("float64", "float32"))


def _sizes(p: dict) -> tuple[int, int, int]:
    N = check_int("N", p["N"], lo=8)
    psi = check_positive("psi", p["psi"])
    phi = check_positive("phi", p["phi"])
    d = max(2, int(round(N / psi)))
    return N, d, max(2, int(round(phi * d)))


#: Relative gap of :func:`rmtfl.numerics.separated_count` used for the ``separated`` metrics
#: (the value of the two-step part's phase-diagram figure).
SEPARATION_GAP = 0.25
#: Number of top singular values examined by ``separated_count`` (more if more lie beyond the edge).
SEPARATION_TOP = 10


def _step_metrics(r, k_top: int = 4) -> dict:
    from rmtfl.numerics import edge_outlier_count, separated_count

    s = r.singular_values
    # the count rule of docs/theory/two_step.md §9.2: values above the spectrum's own fitted edge + TW margin
    window = math.ceil(0.8 * math.sqrt(s.size))
    fit = edge_outlier_count(s[:window + 40], window=window)
    out = {f"s{i + 1}": float(s[i]) if i < s.size else math.nan for i in range(k_top)}
    # over the top values only (>= 10, as the two-step figure): deep in the spectrum of a square
    # W the smallest singular values approach 0 and their ratios are large
    sep = separated_count(s[:max(SEPARATION_TOP, int(r.outlier_count) + 2)], SEPARATION_GAP)
    out.update({"separated_total": int(sep), "separated": int(max(sep - 1, 0))})
    out.update({"count_total": int(fit.count), "count": int(max(fit.count - 1, 0)), "edge_fit": float(fit.edge)})
    out.update({"outliers_total": int(r.outlier_count), "outliers": int(max(r.outlier_count - 1, 0)),
                "edge": float(r.edge), "cos2_target": float(r.cos2_target[0, 0]),
                "cos2_a": float(r.cos2_a_powers[0, 0])})
    return out


def two_step_task(params: dict, rng: np.random.Generator, backend: str = "numpy") -> dict:
    """Two gradient steps with ``eta_t = c_t N^{alpha_t}``; the empirical outlier count of ``W_2``.

    Runs :func:`rmtfl.numerics.simulate_two_step` (full spectrum).  ``params``:
    ``alpha1, alpha2`` in ``[0, 1/2)``, ``c1, c2 > 0``, ``N``, ``psi = N/d``, ``phi = n/d``,
    ``activation``, ``target`` (names for :func:`rmtfl.theory.get_activation` /
    :func:`rmtfl.theory.make_target`), ``batch`` (``"reused"``, or ``"fresh"``: a new
    batch of ``n`` samples for the second step), ``dtype``.
    """
    from rmtfl.numerics import simulate_two_step
    from rmtfl.theory import step_size

    p = {**TWO_STEP_FIXED, **params}
    N, d, n = _sizes(p)
    _check_two_step(p)
    eta1 = step_size(p["c1"], N=N, alpha=p["alpha1"])
    eta2 = step_size(p["c2"], N=N, alpha=p["alpha2"])
    r = simulate_two_step(activation=p["activation"], target=p["target"], N=N, d=d, n=n, eta1=eta1,
                          eta2=eta2, batch=p["batch"], n2=n if p["batch"] == "fresh" else None, rng=rng,
                          dtype=p["dtype"], backend=backend, n_vectors=1)
    return {**_step_metrics(r), "eta1": float(eta1), "eta2": float(eta2)}


def _check_two_step(p: dict) -> None:
    _sizes(p)
    for t in (1, 2):
        check_alpha(f"alpha{t}", p.get(f"alpha{t}"))
        check_positive(f"c{t}", p[f"c{t}"])
    check_choice("batch", p["batch"], ("reused", "fresh"))
    _check_model(p)


TWO_STEP_FIXED = {"N": 400, "psi": _defaults.PSI, "phi": _defaults.PHI, "c1": 1.0, "c2": 1.0,
                  "activation": _defaults.ACTIVATION, "target": _defaults.TARGET, "batch": "reused",
                  "dtype": "float64"}


# ---------------------------------------------------------------------- one-step
def one_step_task(params: dict, rng: np.random.Generator, backend: str = "numpy") -> dict:
    """One gradient step of size ``eta`` (:func:`rmtfl.numerics.simulate_one_step`).

    Metrics as for ``two-step``; compare ``s1``, ``cos2_target``, ``cos2_a`` with
    :func:`rmtfl.theory.one_step` (docs/theory/two_step.md §3.3).
    """
    from rmtfl.numerics import simulate_one_step

    p = {**ONE_STEP_FIXED, **params}
    N, d, n = _sizes(p)
    _check_one_step(p)
    eta = p["eta"]
    r = simulate_one_step(activation=p["activation"], target=p["target"], N=N, d=d, n=n, eta=eta, rng=rng,
                          dtype=p["dtype"], backend=backend, n_vectors=1)
    return _step_metrics(r)


def _check_one_step(p: dict) -> None:
    _sizes(p)
    check_real("eta", p.get("eta"))
    _check_model(p)


ONE_STEP_FIXED = {"N": 400, "psi": _defaults.PSI, "phi": _defaults.PHI, "activation": _defaults.ACTIVATION,
                  "target": _defaults.TARGET, "dtype": "float64"}


# ---------------------------------------------------------------------- kernel
def kernel_task(params: dict, rng: np.random.Generator, backend: str = "numpy") -> dict:
    """Top eigenpair of the spiked-kernel Gram matrix ``K/n`` for ``Gamma = A (I + b v v^T)``.

    Runs :func:`rmtfl.numerics.gram_alignment` (docs/theory/spiked_kernel.md §7.1) on ``backend``
    (inputs drawn on the host either way).  Metrics: ``eigenvalue`` and the squared overlaps
    (docs/conventions.md §1) ``cos2_y0``, ``cos2_y2``, ``cos2_psi`` of the top eigenvector with the
    degree-0, degree-2 and linear sample vectors.
    """
    from rmtfl.numerics import gram_alignment

    p = {**KERNEL_FIXED, **params}
    _check_kernel(p)
    r = gram_alignment(p["activation"], d=p["d"], n=p["n"], b=p["b"], A=p["A"], measure=p["measure"],
                       rng=rng, backend=backend)
    return {"eigenvalue": r.eigenvalue, "cos2_y0": r.cos2_y0, "cos2_y2": r.cos2_y2, "cos2_psi": r.cos2_psi}


def _check_kernel(p: dict) -> None:
    from rmtfl.theory import get_activation

    check_int("d", p["d"], lo=2)
    check_int("n", p["n"], lo=2)
    check_nonnegative("b", p.get("b"))
    check_positive("A", p["A"])
    check_choice("measure", p["measure"], ("gaussian", "sphere"))
    get_activation(p["activation"])


KERNEL_FIXED = {"d": 30, "n": 600, "activation": _defaults.ACTIVATION, "A": 1.0, "measure": "sphere"}


# ---------------------------------------------------------------------- theory
def theory_outliers(activation, target, *, alpha1, alpha2, batch: str = "reused",
                    phi: float = _defaults.PHI) -> np.ndarray:
    """Predicted outliers of ``W_2`` beyond the first direction on the grid ``alpha1 x alpha2``.

    ``#{1 <= k <= Lambda : P_k != 0}`` with ``Lambda = min(L - 1, floor(alpha2 / (1/2 - alpha1)))``
    (docs/theory/two_step.md §6): the ``effective`` map of :func:`rmtfl.theory.phase_diagram` with
    Taylor indices up to 12 (odd ``sigma`` keeps only even ``k``), the theory beside the ``outliers``
    and ``separated`` metrics of the ``two-step`` experiment.  ``alpha1``, ``alpha2`` are 1-d axes in
    ``[0, 1/2)`` (``eta_t = c_t N^alpha_t``, docs/conventions.md §5); the result has shape
    ``(len(alpha2), len(alpha1))`` (rows ``alpha2``, as :class:`rmtfl.theory.PhaseDiagram`).

    >>> theory_outliers("tanh", "linear", alpha1=[0.1, 0.3, 0.4], alpha2=[0.45]).tolist()
    [[0, 1, 2]]
    >>> theory_outliers("gelu", "linear", alpha1=[0.3], alpha2=[0.45]).tolist()
    [[2]]
    """
    from rmtfl.theory import phase_diagram

    pd = phase_diagram(np.atleast_1d(np.asarray(alpha1, dtype=float)), np.atleast_1d(np.asarray(alpha2, dtype=float)),
                       activation=activation, target=target, batch=batch, phi=phi, kmax=12)
    return np.asarray(pd.effective)


EXPERIMENTS = {
    "bbp": Experiment("bbp", "1", bbp_task, axes={"theta": "0:3:7"}, fixed=dict(BBP_FIXED),
                      metrics=("s1", "s2", "cos2_v"), check=_check_bbp,
                      description="rank-one BBP/BGN spike W = Z/sqrt(d) + theta u v^T (cheap)"),
    "two-step": Experiment("two-step", "2", two_step_task,
                           axes={"alpha1": "0:0.45:4", "alpha2": "0:0.45:4"}, fixed=dict(TWO_STEP_FIXED),
                           metrics=("count", "separated", "outliers", "s1", "s2", "cos2_target"), check=_check_two_step,
                           description="two large GD steps over (alpha1, alpha2): outlier count of W2"),
    "one-step": Experiment("one-step", "2", one_step_task, axes={"eta": "0:4:9"},
                           fixed=dict(ONE_STEP_FIXED), metrics=("s1", "s2", "cos2_target"),
                           check=_check_one_step, description="one GD step over eta: BBP transition of W1"),
    "kernel": Experiment("kernel", "2", kernel_task, axes={"b": "0:16:5"}, fixed=dict(KERNEL_FIXED),
                         metrics=("eigenvalue", "cos2_y0", "cos2_y2", "cos2_psi"), check=_check_kernel,
                         description="spiked RF kernel Gamma = A(I + b v v^T): top Gram eigenpair over b"),
}


def get_experiment(name: str) -> Experiment:
    """The registered experiment called ``name``."""
    if name not in EXPERIMENTS:
        raise ValueError(f"experiment must be one of {sorted(EXPERIMENTS)}, got {name!r}")
    return EXPERIMENTS[name]
