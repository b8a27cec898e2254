"""Inputs and sample vectors of the kernel experiments: the sphere / Gaussian measures and zonal harmonics.

Inputs are Gaussian ``N(0, I_d)`` (``measure="gaussian"``) or uniform on the unit sphere
(``"sphere"``; docs/conventions.md §8), drawn on the host from the ``rng`` Generator (so every
backend sees the same inputs).  Harmonic sample vectors: on the sphere ``Y_ell(<v, x>)``; for
Gaussian inputs the radial factor ``|x|/sqrt(d)`` multiplies them (docs/theory/spiked_kernel.md §4.7).
All sample vectors are returned normalised to unit Euclidean norm.

Examples
--------
>>> import numpy as np
>>> X = sample_sphere(300, 5, rng=0)
>>> np.allclose(np.linalg.norm(X, axis=1), 1.0)
True
"""
from __future__ import annotations

import numpy as np

from rmtfl._validate import check_array, check_choice, check_int, check_memory, check_rng
from rmtfl.theory import zonal_harmonic
from .._backend import host_array

__all__ = ["sample_sphere", "sample_measure", "random_direction", "harmonic_vectors"]


def sample_sphere(n: int, d: int, *, rng=None) -> np.ndarray:
    """``n`` points uniform on the unit sphere ``S^{d-1}`` (rows), drawn on the host.

    The ``"sphere"`` input measure (docs/conventions.md §8): Gaussian rows normalised to unit length.

    Parameters
    ----------
    n, d : int
        Number of points (``>= 1``) and dimension (``>= 2``).
    rng : None, int, SeedSequence or Generator
        Randomness (``numpy.random.default_rng``).

    Returns
    -------
    ndarray of shape (n, d)

    Examples
    --------
    >>> X = sample_sphere(4, 3, rng=0)
    >>> X.shape, bool(np.allclose((X * X).sum(axis=1), 1))
    ((4, 3), True)
    """
    n, d = check_int("n", n, lo=1), check_int("d", d, lo=2)
    check_memory("n, d", 8.0 * n * d, "an n x d float64 matrix")
    X = check_rng(rng).standard_normal((n, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    return X


def sample_measure(n: int, d: int, *, measure: str = "gaussian", rng=None) -> np.ndarray:
    """Inputs from ``N(0, I_d)`` (``"gaussian"``) or the unit sphere (``"sphere"``; docs/conventions.md §8).

    Examples
    --------
    >>> sample_measure(5, 3, measure="sphere", rng=1).shape
    (5, 3)
    """
    check_choice("measure", measure, ("gaussian", "sphere"))
    if measure == "sphere":
        return sample_sphere(n, d, rng=rng)
    n, d = check_int("n", n, lo=1), check_int("d", d, lo=2)
    check_memory("n, d", 8.0 * n * d, "an n x d float64 matrix")
    return check_rng(rng).standard_normal((n, d))


def random_direction(d: int, *, rng=None) -> np.ndarray:
    """A unit vector uniform on ``S^{d-1}`` (the spike direction ``v`` / ``beta*``; docs/conventions.md §3).

    Examples
    --------
    >>> round(float(np.linalg.norm(random_direction(4, rng=0))), 12)
    1.0
    """
    return sample_sphere(1, d, rng=rng)[0]


def harmonic_vectors(X, v, *, degrees=(0, 1, 2), measure: str = "sphere") -> np.ndarray:
    """Unit-norm sample vectors of the zonal harmonics ``Y_ell(<v, x̂>)`` (columns, one per degree).

    ``Y_ell`` is unit-norm on the sphere's probability measure (docs/conventions.md §8;
    :func:`rmtfl.theory.zonal_harmonic`).  For ``measure="gaussian"`` each entry is multiplied by
    ``|x|/sqrt(d)`` (the exact eigenfunctions of homogeneous kernels under Gaussian inputs,
    docs/theory/spiked_kernel.md §4.7).  Degree 1 is the target's linear function ``psi* = <v, x>``.

    Parameters
    ----------
    X : array of shape (n, d)
        Inputs.
    v : array of shape (d,)
        Direction (normalised here).
    degrees : sequence of int
        Harmonic degrees, one column each.
    measure : {"sphere", "gaussian"}
        Input measure.

    Returns
    -------
    ndarray of shape (n, len(degrees)), unit columns

    Examples
    --------
    >>> Y = harmonic_vectors(sample_sphere(200, 4, rng=0), np.eye(4)[0], degrees=(0, 2))
    >>> Y.shape, bool(np.allclose(np.linalg.norm(Y, axis=0), 1))
    ((200, 2), True)
    """
    X = check_array("X", host_array(X), ndim=2, min_size=1)
    d = X.shape[1]
    if d < 2:
        raise ValueError(f"X must have d >= 2 columns, got shape {X.shape}")
    v = check_array("v", v, ndim=1)
    check_choice("measure", measure, ("gaussian", "sphere"))
    degrees = check_degrees(degrees)
    if v.shape[0] != d:
        raise ValueError(f"v must have length d={d}, got {v.shape[0]}")
    vmax = np.abs(v).max()
    if vmax == 0:
        raise ValueError("v must be non-zero")
    v = v / vmax
    v = v / np.linalg.norm(v)
    # rows rescaled by their largest entry: |x| and <v, x>/|x| neither overflow nor underflow
    xmax = np.abs(X).max(axis=1)
    if np.any(xmax == 0):
        raise ValueError("X must have non-zero rows (the direction x/|x| is undefined for x = 0)")
    Xs = X / xmax[:, None]
    rs = np.linalg.norm(Xs, axis=1)
    u = np.clip((Xs @ v) / rs, -1.0, 1.0)
    r = rs * xmax
    if measure == "gaussian" and not np.all(np.isfinite(r)):
        raise ValueError("X is too large: the row norms |x| overflow (rescale X)")
    cols = [zonal_harmonic(ell, d, u) for ell in degrees]
    Y = np.stack(cols, axis=1)
    if measure == "gaussian":
        Y *= (r / r.max())[:, None]  # |x|/sqrt(d) up to a constant that the normalisation removes
    Y /= np.abs(Y).max(axis=0, keepdims=True) + (np.abs(Y).max(axis=0, keepdims=True) == 0)
    nrm = np.linalg.norm(Y, axis=0, keepdims=True)
    if np.any(nrm == 0):
        bad = [degrees[i] for i in np.nonzero(nrm[0] == 0)[0]]
        raise ValueError(f"X and v give a zero harmonic vector for degrees {bad} (e.g. X orthogonal to v)")
    return Y / nrm


#: Largest harmonic degree of :func:`harmonic_vectors` (docs/reliability.md §1).
DEGREE_LIMIT = 1000


def check_degrees(degrees, hi: int = DEGREE_LIMIT, name: str = "degrees") -> tuple:
    """A non-empty sequence of harmonic degrees, integers in ``[0, hi]``; errors name ``name``."""
    if isinstance(degrees, (str, bytes)) or not hasattr(degrees, "__iter__"):
        raise TypeError(f"{name} must be a sequence of integers, got {degrees!r}")
    out = tuple(check_int(name, k, lo=0, hi=hi) for k in degrees)
    if not out:
        raise ValueError(f"{name} must not be empty")
    return out
