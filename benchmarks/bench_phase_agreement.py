"""How the simulated (alpha1, alpha2) phase diagram converges to Lambda as N grows (docs/theory/two_step.md §9.1).

For each width ``N`` it reads (or runs) an ``rmtfl sweep two-step`` store over a 6 x 6 grid off the critical
lines of ``Lambda`` (gelu, target He1 + He2/2, reused batch, ``psi = 1``, ``phi = 2``, ``eta_t = N^alpha_t``), and
counts at each grid point the outliers of the simulated ``W_2`` with the stated rule of docs/theory/two_step.md §9.2
(values above the spectrum's own fitted soft edge plus a Tracy–Widom margin; median over seeds).  It sets that count
beside the finite-``N`` prediction (:func:`rmtfl.theory.finite_n_outlier_map`) and beside the asymptotic
``1 + Lambda`` (:func:`rmtfl.theory.phase_diagram`), and draws the fraction of grid points where each agrees against
``N`` (``figures/gallery/phase_agreement.png`` with its JSON sidecar)::

    for N in 500 1000 2000 4000; do
        rmtfl sweep two-step --alpha1 0.01,0.07,0.13,0.2,0.26,0.32 --alpha2 0.01,0.07,0.13,0.2,0.26,0.32 \
            --N $N --seeds 3 --dtype float32 --store sweep_N$N.sqlite
    done
    python -m benchmarks.bench_phase_agreement --stores 'sweep_N{N}.sqlite' --N 500,1000,2000,4000

After a change of the theory, ``--simulated-from figures/gallery/phase_agreement.png.json`` keeps the simulated
counts of the last run and predicts again.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

import numpy as np

GRID = [0.01, 0.07, 0.13, 0.2, 0.26, 0.32]
MODEL = dict(activation="gelu", target="hermite(0, 1, 0.5)", psi=1.0, phi=2.0)


def simulated_counts(path: str, grid):
    """Median ``count_total`` over seeds per grid point, indexed ``[alpha2, alpha1]``, and the seeds per point."""
    from rmtfl.sweep import ResultStore

    with ResultStore(path) as store:
        rows = store.rows("two-step")
    by = {}
    for r in rows:
        by.setdefault((round(r["alpha1"], 6), round(r["alpha2"], 6)), []).append(r["count_total"])
    C = np.full((len(grid), len(grid)), np.nan)
    seeds = 0
    for j, a1 in enumerate(grid):
        for i, a2 in enumerate(grid):
            v = by.get((round(a1, 6), round(a2, 6)))
            if v:
                C[i, j] = float(np.median(v))
                seeds = max(seeds, len(v))
    return C, seeds


def sidecar_counts(path: str) -> dict:
    """``{N: (simulated counts, seeds)}`` from the JSON sidecar of an earlier run (the simulations are kept; the
    predictions are made again)."""
    with open(path) as f:
        res = json.load(f)["params"]
    if res["grid"] != GRID or res["model"] != MODEL:
        raise SystemExit(f"{path}: its grid or model is not this benchmark's")
    return {int(n): (np.asarray(r["simulated"], dtype=float), r["seeds"]) for n, r in res["N"].items()}


def agreement(stores: dict, grid=GRID) -> dict:
    """Per ``N``: the simulated, finite-``N`` and asymptotic count maps and the fractions that agree.

    ``stores``: per ``N`` a sweep store's path, or ``(counts, seeds)`` already read (:func:`sidecar_counts`)."""
    from rmtfl.theory import finite_n_outlier_map, phase_diagram

    lam = np.asarray(phase_diagram(grid, grid, activation=MODEL["activation"], target=MODEL["target"],
                                   phi=MODEL["phi"]).effective).T + 1      # [alpha2, alpha1], total count
    out = {"grid": list(grid), "model": MODEL, "lambda_total": lam.tolist(), "N": {}}
    for N, path in sorted(stores.items()):
        sim, seeds = simulated_counts(path, grid) if isinstance(path, str) else path
        fin = finite_n_outlier_map(grid, grid, N=N, **MODEL).count
        ok = ~np.isnan(sim)
        out["N"][N] = {"simulated": sim.tolist(), "finite_n": fin.tolist(), "seeds": seeds, "points": int(ok.sum()),
                       "match_finite_n": int(np.sum(sim[ok] == fin[ok])), "match_lambda": int(np.sum(sim[ok] == lam[ok]))}
    return out


def plot(res: dict, *, ax=None):
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(5.2, 3.6))
    Ns = sorted(int(n) for n in res["N"])
    f_fin = [res["N"][n]["match_finite_n"] / res["N"][n]["points"] for n in Ns]
    f_lam = [res["N"][n]["match_lambda"] / res["N"][n]["points"] for n in Ns]
    ax.plot(Ns, f_fin, "o-", label="simulated count = finite-N prediction")
    ax.plot(Ns, f_lam, "s--", label="simulated count = 1 + Λ (N → ∞)")
    ax.set_xscale("log")
    from matplotlib.ticker import NullLocator

    ax.set_xticks(Ns, [str(n) for n in Ns])
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_ylim(0, 1.05)
    ax.set_xlabel("width N (= d, n = 2N)")
    ax.set_ylabel("fraction of the 6 × 6 grid")
    ax.set_title("Outlier count of W2: gelu, He1+He2/2, reused", fontsize=9)
    ax.legend(fontsize=8, loc="lower right")
    return ax


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--stores", default="sweep_N{N}.sqlite", help="path pattern with {N}")
    ap.add_argument("--N", default="500,1000,2000,4000")
    ap.add_argument("--out", default="figures/gallery/phase_agreement.png")
    ap.add_argument("--json", default=None)
    ap.add_argument("--simulated-from", default=None,
                    help="the JSON sidecar of an earlier run: keep its simulated counts, predict again")
    a = ap.parse_args(argv)
    if a.simulated_from:
        stores = sidecar_counts(a.simulated_from)
    else:
        stores = {int(n): a.stores.format(N=n) for n in a.N.split(",") if os.path.exists(a.stores.format(N=n))}
    if not stores:
        print("no sweep store found; run the sweeps of the module docstring first", file=sys.stderr)
        return 2
    res = agreement(stores)
    for n, r in sorted(res["N"].items()):
        print(f"N={n}: {r['points']} points x {r['seeds']} seeds; finite-N matches {r['match_finite_n']}, "
              f"Lambda matches {r['match_lambda']}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from rmtfl.compare import save_figure

    fig, ax = plt.subplots(figsize=(5.2, 3.6))
    plot(res, ax=ax)
    fig.tight_layout()
    save_figure(fig, a.out, {k: v for k, v in res.items()})
    plt.close(fig)
    return 0


if __name__ == "__main__":
    sys.exit(main())
