"""Benchmark of the classical part: ESD, top-k outlier detection, MP density.

Rows (``run() -> list[dict]``; ``python -m benchmarks classical``):

* ``ESD N x N``: :func:`rmtfl.numerics.singular_values` (Gram-side ``eigvalsh``)
  of a ``4000 x 4000`` Gaussian sample versus the floor
  ``numpy.linalg.svd(compute_uv=False)``.  Target ``ratio <= 1.1``.
* ``top-k outliers N x N``: :func:`rmtfl.numerics.top_singular_triplets` with the
  Tracy–Widom edge (``edge_margin``, completeness certified) on the same size with
  three planted spikes, versus dense detection (``svd(compute_uv=False)`` and a
  count above the same edge; its time is the best of this call and the ESD floor,
  the same LAPACK call at the same size).  Target ``>= 5x`` faster (``ratio <= 0.2``) and the
  same outliers (``same_outliers``: counts equal, values within 1e-8).  The default solver at this
  size (``method="auto"``, above ``MIXED_MAX``) is Lanczos with full reorthogonalisation
  (:mod:`rmtfl.numerics._classical.lanczos`); a reference row times ARPACK ``svds`` (``method="arpack"``,
  ``k + 5`` values) on the same matrix.
* ``top-10 N x N``: the same matrix with ``k = 10``, i.e. seven clustered bulk values too, by
  Lanczos (``auto``) and by the mixed-precision solver (:mod:`rmtfl.numerics._classical.mixed`); values must
  equal the dense ones to 1e-10 relative.
* ``MP density 1e6 points``: :func:`rmtfl.theory.mp_density` versus the bare numpy
  expression ``sqrt((b-x)(x-a))/(2 pi psi x)``.  Target ``< 50 ms``.
* ``BGN on 1e6 strengths``: :func:`rmtfl.theory.bgn_outlier` (location and both squared
  overlaps, threshold handled) versus the three bare closed-form expressions; same values to
  1e-14.  Target ``< 50 ms``.

``--quick`` uses ``2000 x 2000``.
"""
from __future__ import annotations

import sys

from . import best_of

__all__ = ["run"]




def run(quick: bool = False) -> list[dict]:
    """Time the classical spectra against their LAPACK/numpy floors."""
    import numpy as np

    from rmtfl.numerics import gaussian_matrix, spiked_matrix
    from rmtfl.numerics import singular_values, top_singular_triplets
    from rmtfl.theory import bgn_outlier
    from rmtfl.theory import mp_density
    from rmtfl.theory import edge_margin

    n = 2000 if quick else 4000
    repeat = 2 if quick else 2
    rows = []

    W = gaussian_matrix(n, n, rng=0)
    t_floor, s_ref = best_of(lambda: np.linalg.svd(W, compute_uv=False), repeat)
    t_esd, s = best_of(lambda: singular_values(W), repeat)
    rows.append({"name": f"ESD {n}x{n} (singular_values)", "seconds": t_esd, "floor_seconds": t_floor,
                 "ratio": t_esd / t_floor, "floor": "numpy.linalg.svd(compute_uv=False)", "target_ratio": 1.1,
                 "max_abs_diff_top100": float(np.max(np.abs(s[:100] - s_ref[:100]))),
                 "ok": t_esd / t_floor <= 1.1})
    del W

    sp = spiked_matrix(n, n, [4.0, 2.5, 1.5], rng=1)
    edge = edge_margin(n, n)
    t_dense, s_dense = best_of(lambda: np.linalg.svd(sp.W, compute_uv=False), 1)
    t_dense = min(t_dense, t_floor)  # the same LAPACK call on a same-size matrix, timed above
    n_dense = int(np.sum(s_dense > edge))
    t_top, top = best_of(lambda: top_singular_triplets(sp.W, 3, rng=2, edge=edge), repeat)
    same = bool(top.complete and top.n_above == n_dense
                and np.allclose(top.s[:n_dense], s_dense[:n_dense], rtol=0, atol=1e-8))
    rows.append({"name": f"top-k outliers {n}x{n} (3 spikes, TW edge)", "seconds": t_top, "floor_seconds": t_dense,
                 "ratio": t_top / t_dense, "floor": "dense svd(compute_uv=False) + count above edge",
                 "target_ratio": 0.2, "n_outliers": top.n_above, "n_computed": top.n_computed,
                 "method": top.method, "same_outliers": same, "ok": same and t_top / t_dense <= 0.2})
    for meth in ("auto", "mixed"):
        t_k10, k10 = best_of(lambda: top_singular_triplets(sp.W, 10, rng=2, edge=edge, method=meth), 1)
        same10 = bool(k10.complete and np.allclose(k10.s[:10], s_dense[:10], rtol=1e-10, atol=0))
        rows.append({"name": f"top-10 {n}x{n} (3 spikes + 7 bulk values), {k10.method}", "seconds": t_k10,
                     "floor_seconds": t_dense, "ratio": t_k10 / t_dense, "floor": "dense svd(compute_uv=False)",
                     "method": k10.method, "same_values": same10, "ok": same10})
    t_arp, arp = best_of(lambda: top_singular_triplets(sp.W, 3, rng=2, edge=edge, method="arpack"), 1)
    same_arp = bool(arp.complete and arp.n_above == n_dense
                    and np.allclose(arp.s[:n_dense], s_dense[:n_dense], rtol=0, atol=1e-8))
    rows.append({"name": f"top-k outliers {n}x{n} ARPACK svds (reference)", "seconds": t_arp,
                 "floor_seconds": t_dense, "ratio": t_arp / t_dense,
                 "floor": "dense svd(compute_uv=False) + count above edge", "n_computed": arp.n_computed,
                 "same_outliers": same_arp, "lanczos_speedup": t_arp / t_top, "ok": same_arp})

    x = np.linspace(0.0, 3.0, 1_000_000)
    a, b, psi = 0.0857864376269049, 2.914213562373095, 0.5

    def bare():
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.sqrt(np.clip((b - x) * (x - a), 0, None)) / (2 * np.pi * psi * x)

    t_bare, _ = best_of(bare, 5)
    t_mp, _ = best_of(lambda: mp_density(x, psi), 5)
    rows.append({"name": "MP density 1e6 points", "seconds": t_mp, "floor_seconds": t_bare,
                 "ratio": t_mp / t_bare, "floor": "bare numpy density expression", "target_seconds": 0.05,
                 "ok": t_mp < 0.05})

    theta = np.linspace(0.0, 5.0, 1_000_000)

    def bare_bgn():
        t2 = theta * theta
        above = theta > psi**0.25
        with np.errstate(invalid="ignore", divide="ignore"):
            s = np.where(above, np.sqrt((1 + t2) * (psi + t2)) / theta, 1 + np.sqrt(psi))
            wl = np.where(above, 1 - psi * (1 + t2) / (t2 * (t2 + psi)), 0.0)
            wr = np.where(above, 1 - (psi + t2) / (t2 * (t2 + 1)), 0.0)
        return s, wl, wr

    t_bare_bgn, ref = best_of(bare_bgn, 5)
    t_bgn, got = best_of(lambda: bgn_outlier(theta, psi), 5)
    same = bool(np.allclose(got.singular_value, ref[0], rtol=1e-14)
                and np.allclose(got.cos2_left, ref[1], atol=1e-14))
    rows.append({"name": "BGN outlier + overlaps on 1e6 strengths", "seconds": t_bgn, "floor_seconds": t_bare_bgn,
                 "ratio": t_bgn / t_bare_bgn, "floor": "bare numpy closed form (3 expressions)",
                 "target_seconds": 0.05, "same_values": same, "ok": same and t_bgn < 0.05})
    return rows


if __name__ == "__main__":  # pragma: no cover
    for row in run(quick="--quick" in sys.argv):
        print({k: (round(v, 4) if isinstance(v, float) else v) for k, v in row.items()})
