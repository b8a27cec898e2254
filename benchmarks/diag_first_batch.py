"""A first-batch sample's column in the second step of fresh batches (docs/theory/two_step.md §8.3, "A first-batch
sample in the second step").

The second step moves row ``j`` of ``W_1`` by ``e_j I + beta_j M_2``, so the column ``W_1 x_i`` of a first-batch
sample ``x_i`` (a generic direction for ``M_2``) leaves it as ``(1 + e_j + beta_j m_1) W_1 x_i`` plus
``beta_j W_1 (M_2 - m_1) x_i``, a part among the bulk's own columns.  Three checks::

    python -m benchmarks.diag_first_batch carry --activation tanh --alphas 0.4,0.4
    python -m benchmarks.diag_first_batch propagation --alphas 0.4,0.4 --y 12
    python -m benchmarks.diag_first_batch batches --alphas 0.4,0.4

- ``carry``: simulated ``W_2`` (``N = d``, ``n = n_2 = 2N``): the slope of ``W_2 x_i`` on ``W_1 x_i`` over the rows,
  by ``g = sqrt(N) a_j``, for the batch's most extreme first-batch samples, beside the factor ``1 + e_j + beta_j m_1``
  of the rows' coefficients (:func:`rmtfl.theory._two_step.widened_bulk.row_coefficients`; the prediction leaves the
  identity factor out, docs/theory/two_step_attempts.md §6).
- ``propagation``: for the quadratic ``sigma = He1 + He2/2`` the steps are exact products, ``W_2`` less its
  ``beta_hat`` terms has rows ``w_j (I + t1_j M_1)(I + t2_j M_2)``: the top singular value with a first-batch sample
  of label ``y`` in ``M_1`` (the 12 most extreme samples of each batch left out), with its column carried whole,
  added after the second step (the column alone), and the single-column location of the column alone and with the
  ``beta`` part, as the prediction takes it (:mod:`rmtfl.theory._two_step.first_batch`).
- ``batches``: the same product model with the 12 most extreme samples of each batch left out of its ``M`` or kept
  in it: the top three values with neither, either and both batches' extreme samples, and with both less the term
  ``t1_j t2_j w_j E_1 E_2`` in which they meet directly (``E_b`` their part of ``M_b``).
"""
from __future__ import annotations

import argparse
import math
import sys

from benchmarks.diag_pure_profile import parse_alphas

QUADRATIC = "hermite(0, 1, 0.5)"
HE3 = "hermite(0, 1, 0, 0.4082)"
BINS = ((-math.inf, -2.0), (-2.0, -1.0), (-1.0, 0.0), (0.0, 1.0), (1.0, 2.0), (2.0, math.inf))


def _bulk(act, tgt, a1, a2, N):
    from rmtfl.theory._two_step.finite_n import prediction_bulk
    st, bulk = prediction_bulk(act, tgt, psi=1.0, phi=2.0, phi2=2.0, eta1=float(N) ** a1, eta2=float(N) ** a2,
                               batch="fresh", N=N)
    return bulk, st


def carry_slopes(activation: str = "tanh", target: str = HE3, alphas=(0.4, 0.4), *, N: int = 1000, draws: int = 2,
                 samples: int = 12, seed: int = 7000) -> list:
    """Per bin of ``g = sqrt(N) a_j`` (:data:`BINS`): ``(lo, hi, rows, slope, standard error, predicted)`` (module
    docstring)."""
    import numpy as np

    from rmtfl.numerics import gd_steps, init_first_layer, init_second_layer, sample_inputs, sample_targets
    from rmtfl.theory import get_activation, make_target
    from rmtfl.theory._two_step.widened_bulk import row_coefficients

    act, tgt = get_activation(activation), make_target(target)
    bulk, _ = _bulk(act, tgt, *alphas, N)
    e, _, beta, _, _ = row_coefficients(bulk.a, bulk.st, bulk.eta1, bulk.eta2, bulk.tn, bulk.rows)
    gq, lift = bulk.a * math.sqrt(N), 1.0 + e + beta * bulk.st.ey1
    g_all, w1, w2 = [], [], []
    for k in range(draws):
        rng = np.random.default_rng(seed + k)
        W0, a = init_first_layer(N, N, rng=rng), init_second_layer(N, rng=rng)
        batches = [(X, sample_targets(X, target=tgt, rng=rng)) for X in (sample_inputs(2 * N, N, rng=rng)
                                                                        for _ in range(2))]
        W1 = gd_steps(act, W0, a, batches[:1], etas=[float(N) ** alphas[0]])
        W2 = gd_steps(act, W1, a, batches[1:], etas=[float(N) ** alphas[1]])
        X, y = batches[0]
        xh = X[np.argsort(-np.abs(y))[:samples]].copy()
        xh[:, 0] = 0.0                                   # the part along beta* belongs to P
        xh /= np.linalg.norm(xh, axis=1, keepdims=True)
        g_all.append(np.tile(a * math.sqrt(N), samples))
        w1.append((W1 @ xh.T).T.ravel())
        w2.append((W2 @ xh.T).T.ravel())
    g, u, v = (np.concatenate(x) for x in (g_all, w1, w2))
    out = []
    for lo, hi in BINS:
        m = (g >= lo) & (g < hi)
        slope = float(u[m] @ v[m] / (u[m] @ u[m]))
        resid = v[m] - slope * u[m]
        se = float(math.sqrt(resid @ resid / (m.sum() - 1) / (u[m] @ u[m])))
        pred = float(u[m] ** 2 @ np.interp(g[m], gq, lift) / (u[m] @ u[m]))   # the slope's own weights
        out.append((lo, hi, int(m.sum()), slope, se, pred))
    return out


def _batch_m(rng, n, d, left_out=12):
    """``(M, M less its left_out most extreme samples)`` of one batch of the He1 + He2/2 target."""
    import numpy as np
    X = rng.standard_normal((n, d))
    y = X[:, 0] + (X[:, 0] ** 2 - 1) / 2
    keep = np.argsort(-np.abs(y))[left_out:]
    return X.T @ (y[:, None] * X) / n, X[keep].T @ (y[keep, None] * X[keep]) / n


def _two_products(W, t1, t2, M1, M2):
    """Rows ``w_j (I + t1_j M_1)(I + t2_j M_2)``: the quadratic sigma's two steps less their ``beta_hat`` terms."""
    W1 = W + t1[:, None] * (W @ M1)
    return W1 + t2[:, None] * (W1 @ M2)


def batches(alphas=(0.4, 0.4), *, N: int = 1000, draws: int = 6, seed: int = 900) -> dict:
    """``{case: (means, standard errors)}`` of the top three singular values of the quadratic product model with each
    batch's 12 most extreme samples left out of its ``M`` or kept in it (module docstring)."""
    import numpy as np

    out = {"both left out": [], "first batch's kept": [], "second batch's kept": [], "both kept": [],
           "both, no cross term": []}
    for k in range(draws):
        rng = np.random.default_rng(seed + k)
        (M1, M1k), (M2, M2k) = _batch_m(rng, 2 * N, N), _batch_m(rng, 2 * N, N)
        a = rng.standard_normal(N) / math.sqrt(N)
        t1, t2 = float(N) ** alphas[0] * a, float(N) ** alphas[1] * a
        W0 = rng.standard_normal((N, N)) / math.sqrt(N)
        H = {case: _two_products(W0, t1, t2, A, B) for case, A, B in (
            ("both left out", M1k, M2k), ("first batch's kept", M1, M2k), ("second batch's kept", M1k, M2),
            ("both kept", M1, M2))}
        # the extreme samples of the two batches met directly: t1 t2 W0 E1 E2 (E_b their part of M_b)
        H["both, no cross term"] = H["both kept"] - (t1 * t2)[:, None] * (W0 @ (M1 - M1k) @ (M2 - M2k))
        for case, M in H.items():
            out[case].append(np.linalg.svd(M, compute_uv=False)[:3])
    return {case: (np.mean(v, axis=0), np.std(v, axis=0, ddof=1) / math.sqrt(draws)) for case, v in out.items()}


def propagation(alphas=(0.4, 0.4), y: float = 12.0, *, N: int = 1000, draws: int = 12, seed: int = 900) -> dict:
    """``{case: (mean, standard error)}`` of the top singular value over ``draws`` of the quadratic product model
    (module docstring), and ``"prediction"``: the single column's location alone and with the ``beta`` part, as the
    prediction takes it."""
    import numpy as np

    from rmtfl.theory import get_activation, make_target

    a1, a2 = alphas
    n, d = 2 * N, N
    out = {"left out": [], "carried whole": [], "added after the second step": []}
    for k in range(draws):
        rng = np.random.default_rng(seed + k)
        M1, M2 = _batch_m(rng, n, d)[1], _batch_m(rng, n, d)[1]
        xi = rng.standard_normal(d)
        xi[0] = 0.0
        a = rng.standard_normal(N) / math.sqrt(N)
        t1, t2 = float(N) ** a1 * a, float(N) ** a2 * a
        W0 = rng.standard_normal((N, d)) / math.sqrt(d)
        spike = (t1 * (W0 @ xi) * y / n)[:, None] * xi[None, :]    # the sample's own term of the first step
        H = _two_products(W0, t1, t2, M1, M2)
        W1 = W0 + t1[:, None] * (W0 @ M1) + spike
        for case, W in (("left out", H), ("carried whole", W1 + t2[:, None] * (W1 @ M2)),
                        ("added after the second step", H + spike)):
            out[case].append(np.linalg.svd(W, compute_uv=False)[0])
    res = {case: (float(np.mean(v)), float(np.std(v, ddof=1) / math.sqrt(draws))) for case, v in out.items()}
    res["prediction"] = _column_locations(get_activation(QUADRATIC), make_target(QUADRATIC), alphas, y, N)
    return res


def _column_locations(act, tgt, alphas, y, N):
    """The first-batch column's location: ``(the column alone, with the beta part)``, the latter as the prediction
    takes it (:func:`rmtfl.theory._two_step.first_batch.carried_columns`)."""
    import numpy as np

    from rmtfl.theory._two_step import sample_spikes as ss
    from rmtfl.theory._two_step.first_batch import carried_columns
    from rmtfl.theory._two_step.widened_bulk import column_spike

    bulk, st = _bulk(act, tgt, *alphas, N)
    z = -1.0 + math.sqrt(2.0 + 2.0 * y)                 # He1 + He2/2: y = z + (z^2 - 1) / 2
    yb, wb = ss.y_law_truncated(tgt, bulk.zrange)
    lams = ss.extreme_eigenvalues([y], [z], 2.0, yb, wb, bulk.zrange)
    _, rws = ss.sample_strengths(act, st, ys=[y], zs=[z], eta1=bulk.eta1, eta2=bulk.eta2, N=N, d=N,
                                 g=bulk.a * math.sqrt(N), wg=bulk.wa, which="first", lams=lams)
    base = 1.0 + bulk.functions(bulk.a)[:, 5]
    v = (base + rws[0])[None, :]
    carried, _ = carried_columns(bulk, v, v * v, psi=1.0)
    return tuple(column_spike(bulk, bulk.a, bulk.wa, np.ravel(w) - base) or math.nan for w in (v, carried))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("check", choices=["carry", "propagation", "batches"])
    ap.add_argument("--activation", default="tanh", help="carry: sigma")
    ap.add_argument("--target", default=HE3, help="carry: the target")
    ap.add_argument("--alphas", default="0.4,0.4", help="alpha1,alpha2 in [0, 0.5)")
    ap.add_argument("--y", type=float, default=12.0, help="propagation: the sample's label (> 2)")
    ap.add_argument("--N", type=int, default=1000)
    ap.add_argument("--draws", type=int, default=None, help="default 2 (carry), 12 (propagation), 6 (batches)")
    args = ap.parse_args(argv)
    a1, a2 = parse_alphas(ap, args.alphas)
    if args.N < 100 or (args.draws is not None and args.draws < 2) or args.y <= 2:
        ap.error("--N must be at least 100, --draws at least 2 and --y above 2")
    if args.check == "carry":
        rows = carry_slopes(args.activation, args.target, (a1, a2), N=args.N, draws=args.draws or 2)
        print(f"{args.activation}, {args.target}, fresh, ({a1:g}, {a2:g}), N = d = {args.N}")
        print("  g bin         rows   slope of W2 x on W1 x   1 + e + beta m1 of the rows")
        for lo, hi, n, slope, se, pred in rows:
            print(f"  [{lo:4g}, {hi:4g})  {n:6d}   {slope:.4f} ± {se:.4f}         {pred:.4f}")
        return 0
    if args.check == "batches":
        res = batches((a1, a2), N=args.N, draws=args.draws or 6)
        print(f"He1 + He2/2 on He1 + He2/2, fresh, ({a1:g}, {a2:g}), N = d = {args.N}: the product model's top values")
        for case, (m, se) in res.items():
            print(f"  {case:20s} " + "  ".join(f"{v:.3f} ± {e:.3f}" for v, e in zip(m, se)))
        return 0
    res = propagation((a1, a2), args.y, N=args.N, draws=args.draws or 12)
    print(f"He1 + He2/2 on He1 + He2/2, fresh, ({a1:g}, {a2:g}), N = d = {args.N}, a first-batch sample of y = {args.y:g}")
    for case in ("left out", "carried whole", "added after the second step"):
        m, se = res[case]
        print(f"  {case:28s} {m:.3f} ± {se:.3f}")
    old, new = res["prediction"]
    print(f"  {'the column alone':28s} {old:.3f}")
    print(f"  {'the prediction (beta part)':28s} {new:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
