"""A single sample's column strength with its skewed law in place of the Gaussian
(docs/theory/two_step_attempts.md §19; measured, not kept).

The single-sample law of docs/theory/two_step.md §8.3 takes a column's realised strength
``S = psi (1/N) sum_j c_j^2 t_j(x)`` as Gaussian: mean ``Q = psi E_j[v t]``, standard deviation
``psi sqrt(Var_j(v t) / N)`` over rows drawn from the law of ``a``.  With the quadratic sigma at ``(0.4, 0.4)``,
``N = 1000``, that deviation is about a fifth of ``Q``, and the sum is dominated by the rows of largest ``|a_j|``
(``c_j^2`` grows like ``a_j^4``), so ``S`` is skewed.  Here, with the rows held at their ``N`` quantiles (as the
prediction holds them: a draw's ``a`` at its quantiles leaves ``W_2 - P``'s top values as they are,
docs/theory/two_step.md §8.4, "The columns and P taken apart"), ``c_j^2`` in row ``j`` is a gamma variable with the
row's mean ``E[v]`` and variance ``E[v^2] - E[v]^2`` (for the quadratic sigma exactly ``E[v]`` times a chi-square
of one degree), and ``P(S > 1)`` of the sum of gammas comes from the Lugannani-Rice saddlepoint formula
(:func:`gamma_sum_sf`).  The script prints the expected number of single samples above ``s``,
``sum_b n_b P_b(S > s)``, under the prediction's Gaussian, the Gaussian with the rows held fixed, and the saddlepoint
law::

    python -m benchmarks.diag_strength_law --activation "hermite(0, 1, 0.5)" --alphas 0.4,0.4 --s 8,16
    python -m benchmarks.diag_strength_law --activation "hermite(0, 1, 0.5)" --alphas 0.3,0.3 --s 3.6,5.2
"""
from __future__ import annotations

import argparse
import math
import sys

import numpy as np
from scipy import optimize, special


def gamma_sum_sf(scale, shape, x: float) -> np.ndarray:
    """``P(sum_j G_j > x)`` per column of ``scale`` and ``shape`` (``rows x columns``), ``G_j`` independent gamma
    variables of shape ``shape_j`` and scale ``scale_j`` (either sign), by the Lugannani-Rice formula: the cumulant
    generating function ``K(u) = -sum_j k_j log(1 - a_j u)``, ``K'(u) = x`` at the saddle point ``u``,
    ``w = sign(u) sqrt(2 (u x - K(u)))``, ``v = u sqrt(K''(u))``, ``P = Phi(-w) + phi(w) (1/v - 1/w)``."""
    scale, shape = np.atleast_2d(scale), np.atleast_2d(shape)
    out = np.empty(scale.shape[1])
    for b in range(scale.shape[1]):
        a, k = scale[:, b], shape[:, b]
        keep = (a != 0) & (k > 0)
        a, k = a[keep], k[keep]
        mean, var = float(k @ a), float(k @ (a * a))
        if var <= 0.0:
            out[b] = float(mean > x)
            continue
        if abs(x - mean) < 1e-7 * math.sqrt(var):
            out[b] = 0.5
            continue
        hi = 1.0 / a.max() if a.max() > 0 else math.inf
        lo = 1.0 / a.min() if a.min() < 0 else -math.inf

        def k1(u):
            return float(k @ (a / (1.0 - a * u))) - x

        if x > mean:              # the saddle point lies in (0, hi): K' runs from the mean to +inf there
            u0, u1 = 0.0, (hi * (1 - 1e-14) if math.isfinite(hi) else 1.0 / math.sqrt(var))
            while not math.isfinite(hi) and k1(u1) < 0:
                u1 *= 2.0
            if k1(u1) < 0:
                out[b] = 0.0
                continue
        else:                     # in (lo, 0)
            u1, u0 = 0.0, (lo * (1 - 1e-14) if math.isfinite(lo) else -1.0 / math.sqrt(var))
            while not math.isfinite(lo) and k1(u0) > 0:
                u0 *= 2.0
            if k1(u0) > 0:
                out[b] = 1.0
                continue
        u = optimize.brentq(k1, u0, u1, xtol=1e-300, rtol=1e-13, maxiter=1000)
        r = 1.0 - a * u
        K, K2 = float(-(k @ np.log(r))), float(k @ (a * a / (r * r)))
        w = math.copysign(math.sqrt(max(2.0 * (u * x - K), 0.0)), u)
        v = u * math.sqrt(K2)
        if abs(w) < 1e-6:
            out[b] = special.ndtr((mean - x) / math.sqrt(var))
        else:
            out[b] = special.ndtr(-w) + math.exp(-0.5 * w * w) / math.sqrt(2 * math.pi) * (1.0 / v - 1.0 / w)
    return np.clip(out, 0.0, 1.0)


def captured_law(act: str, tgt: str, *, N: int, alphas, batch: str = "reused"):
    """The arguments of the prediction's single-sample law (``tau``, ``parts``, ``psi``, ``wa``) and its outliers."""
    from rmtfl.theory import two_step
    from rmtfl.theory._two_step import sample_order

    seen, kept = {}, sample_order.tail_law

    def spy(tau, x_edge, x_guess, parts, *, N, psi, wa, shift=None):
        seen.update(tau=tau, parts=parts, psi=psi, wa=wa)
        seen["law"] = kept(tau, x_edge, x_guess, parts, N=N, psi=psi, wa=wa, shift=shift)
        return seen["law"]
    sample_order.tail_law = spy
    try:
        p = two_step(act, tgt, psi=1.0, phi=2.0, eta1=N ** alphas[0], eta2=N ** alphas[1], N=N, batch=batch,
                     phi2=2.0 if batch == "fresh" else None)
    finally:
        sample_order.tail_law = kept
    return seen, p


def expected_above(seen, N: int, s: float):
    """``sum_b n_b P_b(S > s)`` under the prediction's own law (its Gaussian, read off the law it returned), the
    Gaussian with the rows held at their quantiles, and the saddlepoint law of the sum of gammas (``None`` inside
    the bulk)."""
    t = seen["tau"](s * s)
    if t is None:
        return None
    psi, wa, law = seen["psi"], seen["wa"], seen["law"]
    out = np.zeros(3)
    out[0] = float(np.interp(s, law.grid, np.asarray(law.tails) @ np.asarray(law.sizes, dtype=float)))  # as it is
    for mass, vmean, vm2, n_b in seen["parts"]:
        mass, vmean, vm2 = (np.asarray(v, dtype=float) for v in (mass, vmean, vm2))
        q = psi * (vmean @ (wa * t))
        sd_rows = psi * np.sqrt(np.clip((vm2 - vmean**2) @ (wa * t * t), 0.0, None) / N) + 1e-300
        var = np.clip(vm2 - vmean**2, 1e-300, None).T                  # rows x bins
        shape, scale = (vmean.T**2 / var) * (wa * N)[:, None], (var / vmean.T) * (psi * t / N)[:, None]
        live = q > 0.3                                                  # bins that can reach 1 at all
        sp = np.zeros(q.size)
        sp[live] = gamma_sum_sf(scale[:, live], shape[:, live], 1.0)
        out[1] += n_b * float(mass @ special.ndtr((q - 1) / sd_rows))
        out[2] += n_b * float(mass @ sp)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--activation", default="hermite(0, 1, 0.5)")
    ap.add_argument("--target", default="hermite(0, 1, 0.5)")
    ap.add_argument("--alphas", default="0.4,0.4", help="alpha1,alpha2")
    ap.add_argument("--N", type=int, default=1000)
    ap.add_argument("--batch", choices=("reused", "fresh"), default="reused")
    ap.add_argument("--s", default="8,16", help="first,last singular value of the grid printed (9 points)")
    a = ap.parse_args(argv)
    alphas = tuple(float(v) for v in a.alphas.split(","))
    s0, s1 = (float(v) for v in a.s.split(","))
    seen, p = captured_law(a.activation, a.target, N=a.N, alphas=alphas, batch=a.batch)
    print(f"{a.activation}, {a.target}, {alphas}, N = {a.N}, {a.batch}: outliers "
          f"{[round(o.singular_value, 3) for o in p.outliers]}")
    print("     s   single samples above s: Gaussian / Gaussian, rows fixed / saddlepoint, rows fixed")
    for s in np.linspace(s0, s1, 9):
        e = expected_above(seen, a.N, float(s))
        print(f"{s:6.2f}   " + ("inside the bulk" if e is None else " / ".join(f"{v:.3f}" for v in e)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
