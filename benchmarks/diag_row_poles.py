"""How much of the heaviest rows' lift of the bulk's top value their own outliers carry (the quadratic ``sigma``;
docs/theory/two_step_attempts.md §43).

For ``sigma = He1 + He2/2`` a row ``j`` of ``W_2 - P`` has the variance profile ``S(a_j, lambda)``, growing like a
power of ``|a_j|``, and a row heavy enough has an outlier of its own: its Schur complement on the bulk's resolvent
vanishes where ``q_j(x) = sum_l S(a_j, lambda_l) X_l^2 (-tt_l(x)) / d = 1`` (``X_l`` the row's standard Gaussian
entries along the bulk's columns, ``tt_l`` their kernels; the widened bulk's pole ``1 + f(a) . B(x) = 0`` takes
the mean of ``q_j``).  The weights are dominated by the top columns, so ``q_j`` does not concentrate: over
``m_l`` columns at a node it is a weighted sum of ``chi^2_{m_l} / m_l``, and ``P(q_j(s^2) > 1)`` comes from its
characteristic function (Gil-Pelaez, deterministic).  The bulk's rank 1 is then the larger of the density's rank 1
(``WidenedBulk.top_values``) and the rows' poles; with rows drawn (Poisson over the law of ``g = sqrt(N) a``) or at
the quantiles of that law, and with ``q_j`` spread or at its mean::

    python -m benchmarks.diag_row_poles

The simulated references (16 draws of the exact matrix, `python -m benchmarks.diag_fresh_bulk --seed 500 --draws 16
--alphas A1,A2 [--quantile-rows]`, docs/theory/two_step.md §8.2) are printed beside.
"""
from __future__ import annotations

import argparse
import math
import sys

#: The exact matrix's rank 1 (16 draws, extremes redrawn), a drawn and at its quantiles (docs/theory/two_step.md §8.2).
SIMULATED = {("fresh", 0.4, 0.4): (3.700, 3.446), ("reused", 0.4, 0.4): (7.678, 7.432),
             ("fresh", 0.3, 0.3): (2.182, 2.159), ("reused", 0.3, 0.3): (3.222, 3.169),
             ("fresh", 0.0, 0.4): (2.522, 2.499), ("reused", 0.0, 0.4): (2.692, 2.671)}
SIGMA = TARGET = "hermite(0, 1, 0.5)"


def tail_probability(c, m) -> float:
    """``P(sum_l c_l chi^2_{m_l} / m_l > 1)`` for ``c_l >= 0`` (Gil-Pelaez inversion of the characteristic function).

    The oscillating integrand makes ``quad`` warn on some pieces; the result is within ``1e-3`` of 400 000 draws of
    the sum (40 random weights, checked) and within ``1e-4`` of scipy's for a single ``chi^2_1``, the slowest case
    (``tests/test_diag_row_poles.py``), so the warnings are silenced here."""
    import warnings

    import numpy as np
    from scipy import integrate

    def integrand(u):
        return float(np.exp(-0.5 * np.sum(m * np.log1p(-2j * u * c / m)) - 1j * u).imag) / u

    edges = [0.0, 1.0, 10.0, 100.0, 1e3, 1e4, 1e5]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", integrate.IntegrationWarning)
        val = sum(integrate.quad(integrand, lo, hi, limit=200)[0] for lo, hi in zip(edges[:-1], edges[1:]))
    return min(max(0.5 + val / math.pi, 0.0), 1.0)


def rank_one(batch: str, alpha1: float, alpha2: float, *, N: int = 1000, psi: float = 1.0, phi: float = 2.0,
             points: int = 25, span: float = 0.6) -> dict:
    """The density's rank 1, the fold, and ``E s_1`` with the rows' poles (module docstring), four ways."""
    import numpy as np
    from scipy import special, stats

    import rmtfl.theory._two_step.finite_n as fn
    from rmtfl.theory import get_activation, make_target

    act, target = get_activation(SIGMA), make_target(TARGET)
    phi2 = phi if batch == "fresh" else None
    _, bulk = fn.prediction_bulk(act, target, psi=psi, phi=phi, phi2=phi2, eta1=N ** alpha1, eta2=N ** alpha2,
                                 batch=batch, N=N)
    red, d = bulk.red, N / psi
    wl = red.col_weights
    m = np.maximum(wl * d, 1.0)                         # columns per node

    def weights(g, x):
        A = bulk.kernels(x)[:red.K]
        tt = 1.0 / (x * (1.0 + red.colh @ A))           # -tt > 0 above the edge
        S = red.colh @ bulk.functions(np.array([g / math.sqrt(N)]))[0]
        return np.clip(wl * S * tt, 0.0, None)

    gg = np.concatenate([-np.linspace(5.5, 1.5, 41), np.linspace(1.5, 5.5, 41)])
    ss = bulk.edge * np.linspace(1.0 + 1e-6, 1.0 + span, points)
    spread = np.array([[tail_probability(weights(g, s * s), m) for g in gg] for s in ss])
    mean = np.array([[float(weights(g, s * s).sum() > 1.0) for g in gg] for s in ss])
    side = [gg < 0, gg > 0]
    pdf = stats.norm.pdf(gg)
    gq = special.ndtri((np.arange(N) + 0.5) / N)
    gq = gq[np.abs(gq) >= 1.5]
    b1 = float(bulk.top_values(1)[0])
    c = weights(float(gq.max()), bulk.x_edge * (1.0 + 1e-6))     # the heaviest quantile row's form at the fold
    out = dict(fold=bulk.edge, density=b1, top_share=float(c.max() / c.sum()),
               freedom=float(c.sum() ** 2 / np.sum(c * c / m)))
    for name, P in (("spread", spread), ("mean", mean)):
        drawn = np.exp(-N * sum(np.trapezoid(pdf[k] * P[:, k], gg[k], axis=1) for k in side))
        quant = np.array([np.exp(np.sum(np.log1p(-np.clip(np.interp(gq, gg, p), 0.0, 1.0 - 1e-15)))) for p in P])
        for rows, none in (("drawn", drawn), ("quantile", quant)):
            # P(s_1 > s) = 1 - P(no pole above s) above the fold; between the density's rank 1 and the fold a pole
            # anywhere above the fold puts s_1 there
            es = b1 + (bulk.edge - b1) * (1.0 - none[0]) + float(np.trapezoid(1.0 - none, ss))
            out[(name, rows)] = (1.0 - float(none[0]), es)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--points", nargs="+", default=["fresh:0.4,0.4", "reused:0.4,0.4", "fresh:0.3,0.3",
                                                    "reused:0.3,0.3", "fresh:0,0.4", "reused:0,0.4"],
                    help="BATCH:ALPHA1,ALPHA2")
    args = ap.parse_args(argv)
    pts = []
    for p in args.points:
        try:
            batch, al = p.split(":")
            a1, a2 = (float(v) for v in al.split(","))
        except ValueError:
            ap.error(f"--points takes BATCH:ALPHA1,ALPHA2, got {p!r}")
        if batch not in ("fresh", "reused") or not (0 <= a1 < 0.5 and 0 <= a2 < 0.5):
            ap.error(f"--points: batch 'fresh' or 'reused', alphas in [0, 0.5), got {p!r}")
        pts.append((batch, a1, a2))
    print("| batch, (α1, α2) | fold | density's rank 1 | rows' q spread: drawn / quantiles (P pole above fold) "
          "| q at its mean: drawn / quantiles | simulated: drawn / quantiles | top row's q at the fold: top column's "
          "share, degrees of freedom |")
    print("|---|---|---|---|---|---|---|")
    for batch, a1, a2 in pts:
        r = rank_one(batch, a1, a2)
        sim = SIMULATED.get((batch, a1, a2))
        cell = lambda k: f"{r[(k, 'drawn')][1]:.3f} / {r[(k, 'quantile')][1]:.3f}"  # noqa: E731
        probs = f"({r[('spread', 'drawn')][0]:.2f}, {r[('spread', 'quantile')][0]:.2f})"
        print(f"| {batch}, ({a1:g}, {a2:g}) | {r['fold']:.3f} | {r['density']:.3f} | {cell('spread')} {probs} "
              f"| {cell('mean')} | {'—' if sim is None else f'{sim[0]:.3f} / {sim[1]:.3f}'} "
              f"| {r['top_share']:.2f}, {r['freedom']:.0f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
