"""Peer benchmark of ``rmtfl.analyze``: WeightWatcher and rmtfl on the same planted matrices.

Usage::

    python benchmarks/bench_analyze_peer.py [--seeds 20] [--fa-draws 400] [--ww PYTHON] [--json FILE]
    python benchmarks/bench_analyze_peer.py --speed        # the speed checks of rmtfl.analyze

Matrices (``d = 1000``, ``N = psi d``, ``psi`` in {0.5, 1, 2}): ``W = sqrt(var) (G + sum_i theta_i u_i v_i^T)``
with ``G`` iid ``N(0, 1/d)``, Haar-random unit ``u_i, v_i`` and ``var = 1.7`` (unknown to both methods); rank 1
(``theta = f theta_c``) and rank 3 (``theta = f theta_c (1, 1.25, 1.5)``), ``theta_c = psi^{1/4}``, ``f`` on a grid
around the threshold; pure Gaussian noise; Student-t(3) noise (unit variance entries).  Every matrix is drawn from
its own seed with numpy alone, so the WeightWatcher worker (a separate Python, e.g. a virtual environment with
``weightwatcher`` installed) draws the very same matrices.

WeightWatcher (optional, ``--ww /path/to/python``): ``WeightWatcher(model=DIR).analyze(mp_fit=True)`` on the flat-file
format -- a folder holding ``W.weight.npy`` and ``ww_config.json`` -- one thread; its count is ``num_spikes`` and its
noise level ``sigma_mp^2 * mean(s^2) / max(1, N/d)`` (it rescales the eigenvalues to mean 1 before the fit).

Reported per cell: the mean absolute outlier-count error (split into missed spikes and over-counts), the fraction of
planted spikes found, the false-alarm rate (a matrix with more outliers than planted), the relative bias of the
noise estimate, the time per matrix, and for rmtfl the coverage of the stated theta interval and the fraction judged
MP-consistent.  The false-alarm rate of rmtfl on pure noise is measured separately over ``--fa-draws`` draws per
``psi``.  The verdict at the end compares what the two methods are built to do: rmtfl's missed spikes against
WeightWatcher's count error in every cell, and rmtfl's over-counts against its level ``alpha`` (a test at level
``alpha`` over-counts at rate ``alpha`` by design; WeightWatcher's cut 9-10 Tracy-Widom units above the edge never
over-counts on Gaussian noise, and misses most spikes below 1.3 theta_c in exchange).
"""
from __future__ import annotations

import os

for _v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import argparse
import json
import subprocess
import sys
import tempfile
import time

import numpy as np

__all__ = ["CELLS", "make_matrix", "run", "main"]

D = 1000
VAR = 1.7
PSIS = (0.5, 1.0, 2.0)
FACTORS = (0.8, 1.1, 1.2, 1.5, 2.0, 3.0)
RANK3 = (1.0, 1.25, 1.5)


def _cells():
    out = []
    for psi in PSIS:
        for rank in (1, 3):
            for f in FACTORS:
                out.append({"psi": psi, "rank": rank, "factor": f, "noise": "gauss"})
        out.append({"psi": psi, "rank": 0, "factor": 0.0, "noise": "gauss"})
        out.append({"psi": psi, "rank": 0, "factor": 0.0, "noise": "t3"})
    return out


CELLS = _cells()


def cell_name(c) -> str:
    if c["rank"] == 0:
        return f"psi={c['psi']:g} {'noise' if c['noise'] == 'gauss' else 'student-t(3)'}"
    return f"psi={c['psi']:g} r={c['rank']} f={c['factor']:g}"


def thetas(c) -> np.ndarray:
    """Planted strengths (rmtfl's convention, units of sqrt(var)), descending."""
    if c["rank"] == 0:
        return np.zeros(0)
    tc = c["psi"] ** 0.25
    mult = (1.0,) if c["rank"] == 1 else RANK3
    return np.sort(c["factor"] * tc * np.array(mult))[::-1]


def make_matrix(c, seed: int, *, d: int = D):
    """``(W, theta, U, V)`` of cell ``c`` from ``seed`` (numpy only)."""
    N = int(round(c["psi"] * d))
    rng = np.random.default_rng([seed, int(c["psi"] * 100), c["rank"], int(c["factor"] * 1000),
                                 0 if c["noise"] == "gauss" else 1])
    if c["noise"] == "t3":
        G = rng.standard_t(3, size=(N, d)) / np.sqrt(3.0 * d)  # unit-variance entries / sqrt(d)
    else:
        G = rng.standard_normal((N, d)) / np.sqrt(d)
    th = thetas(c)
    r = th.size
    U = V = None
    if r:
        U, _ = np.linalg.qr(rng.standard_normal((N, r)))
        V, _ = np.linalg.qr(rng.standard_normal((d, r)))
        G += (U * th) @ V.T
    G *= np.sqrt(VAR)
    return G, th, U, V


# ------------------------------------------------------------------------------------------ WeightWatcher
def _ww_worker(out_path: str, seeds: int, cells: list[int]) -> None:
    """Run WeightWatcher on every (cell, seed); one JSON line per matrix appended to ``out_path``."""
    import logging

    logging.disable(logging.CRITICAL)
    import weightwatcher as ww

    done = set()
    if os.path.exists(out_path):
        with open(out_path) as f:
            for line in f:
                r = json.loads(line)
                done.add((r["cell"], r["seed"]))
    tmp = tempfile.mkdtemp(prefix="ww_flat_")
    for seed in range(seeds):
        for ci in cells:
            if (ci, seed) in done:
                continue
            c = CELLS[ci]
            W, th, _, _ = make_matrix(c, seed)
            np.save(os.path.join(tmp, "W.weight.npy"), W)
            N, d = W.shape
            cfg = {"framework": "ww_flatfiles", "weights_dir": tmp, "model_name": "planted", "layers": {
                "0": {"key": "W.weight", "name": "W", "longname": "W", "weightfile": "W.weight.npy",
                      "biasfile": None, "type": "dense", "dims": json.dumps([N, d])}}}
            with open(os.path.join(tmp, "ww_config.json"), "w") as f:
                json.dump(cfg, f)
            t0 = time.perf_counter()
            df = ww.WeightWatcher(model=tmp).analyze(mp_fit=True)
            sec = time.perf_counter() - t0
            row = df.iloc[0]
            mean_s2 = float(np.sum(W * W)) / min(N, d)  # mean of the min(N, d) eigenvalues of W W^T
            var_hat = float(row["sigma_mp"]) ** 2 * mean_s2 / max(1.0, N / d)
            rec = {"cell": ci, "seed": seed, "count": int(row["num_spikes"]), "var": var_hat,
                   "alpha": float(row["alpha"]), "seconds": sec}
            with open(out_path, "a") as f:
                f.write(json.dumps(rec) + "\n")


def run_ww(python: str, out_path: str, seeds: int, cells=None, timeout=None) -> None:
    cells = list(range(len(CELLS))) if cells is None else cells
    cmd = [python, os.path.abspath(__file__), "--ww-worker", out_path, "--seeds", str(seeds),
           "--cells", ",".join(map(str, cells))]
    subprocess.run(cmd, check=False, timeout=timeout)


def read_ww(path: str) -> dict:
    out = {}
    if path and os.path.exists(path):
        with open(path) as f:
            for line in f:
                r = json.loads(line)
                out[(r["cell"], r["seed"])] = r
    return out


# ------------------------------------------------------------------------------------------ rmtfl
def _rmtfl_one(c, seed, alpha):
    from rmtfl.compare import analyze

    W, th, U, V = make_matrix(c, seed)
    t0 = time.process_time()  # CPU time of one thread: robust to other load on the machine
    rep = analyze(W, alpha=alpha)
    sec = time.process_time() - t0
    k = len(rep.outliers)
    r = th.size
    cover = []
    for i in range(min(k, r)):
        o = rep.outliers[i]
        cover.append(bool(o.theta_low <= th[i] <= o.theta_high))
    return {"count": k, "var": rep.var, "seconds": sec, "mp": bool(rep.mp_consistent), "cover": cover,
            "truth": r}


def summarise(rows_by_cell, fa_noise=None):
    """Per-cell summary dict from ``{cell: [row, ...]}``."""
    table = []
    for ci, rows in rows_by_cell.items():
        if not rows:
            continue
        c = CELLS[ci]
        r = thetas(c).size
        counts = np.array([x["count"] for x in rows])
        found = np.minimum(counts, r).sum() / max(1, r * len(rows)) if r else float("nan")
        cov = [b for x in rows for b in x.get("cover", [])]
        table.append({
            "cell": cell_name(c), "n": len(rows), "count_error": float(np.mean(np.abs(counts - r))),
            "misses": float(np.mean(np.maximum(r - counts, 0))), "over": float(np.mean(np.maximum(counts - r, 0))),
            "exact": float(np.mean(counts == r)), "found": float(found),
            "false_alarm": float(np.mean(counts > r)),
            "var_bias_pct": float(100 * (np.mean([x["var"] for x in rows]) / VAR - 1)),
            "seconds": float(np.median([x["seconds"] for x in rows])),
            "coverage": float(np.mean(cov)) if cov else float("nan"),
            "mp_consistent": float(np.mean([x["mp"] for x in rows])) if "mp" in rows[0] else float("nan"),
            "mean_count": float(np.mean(counts)),
        })
    return table


def benchmark(seeds=20, fa_draws=400, ww_python=None, ww_file=None, alpha=0.05, progress=True):
    results = {"settings": {"d": D, "var": VAR, "seeds": seeds, "fa_draws": fa_draws, "alpha": alpha}}
    if ww_python:
        ww_file = ww_file or os.path.join(tempfile.gettempdir(), "ww_bench.jsonl")
        run_ww(ww_python, ww_file, seeds)
    rm = {ci: [] for ci in range(len(CELLS))}
    wwc = {ci: [] for ci in range(len(CELLS))}
    for ci, c in enumerate(CELLS):
        for seed in range(seeds):
            rm[ci].append(_rmtfl_one(c, seed, alpha))
        if progress:
            print(f"  {cell_name(c)} done", file=sys.stderr, flush=True)
    ww = read_ww(ww_file)
    for ci in range(len(CELLS)):
        for seed in range(seeds):
            if (ci, seed) in ww:
                wwc[ci].append(ww[(ci, seed)])
    results["rmtfl"] = summarise(rm)
    results["rmtfl_raw"] = {str(k): v for k, v in rm.items()}
    results["weightwatcher"] = summarise(wwc) if ww else []
    fa = {}
    for psi in PSIS:
        c = {"psi": psi, "rank": 0, "factor": 0.0, "noise": "gauss"}
        k = np.array([_rmtfl_one(c, 10_000 + s, alpha)["count"] for s in range(fa_draws)])
        p = float(np.mean(k > 0))
        se = float(np.sqrt(alpha * (1 - alpha) / fa_draws))
        fa[f"{psi:g}"] = {"rate": p, "band": [alpha - 2 * se, alpha + 2 * se], "draws": fa_draws}
    results["false_alarm_400"] = fa
    return results


def format_table(results) -> str:
    ww = {r["cell"]: r for r in results.get("weightwatcher", [])}
    lines = ["| cell | count error rmtfl / WW | found rmtfl / WW | false alarm rmtfl / WW | var bias % rmtfl / WW "
             "| θ CI coverage | s per matrix rmtfl / WW |", "|---|---|---|---|---|---|---|"]

    def f(x, fmt):
        return "–" if x is None or (isinstance(x, float) and x != x) else format(x, fmt)

    for r in results["rmtfl"]:
        w = ww.get(r["cell"], {})
        lines.append(f"| {r['cell']} | {f(r['count_error'], '.2f')} / {f(w.get('count_error'), '.2f')} "
                     f"| {f(r['found'], '.2f')} / {f(w.get('found'), '.2f')} "
                     f"| {f(r['false_alarm'], '.2f')} / {f(w.get('false_alarm'), '.2f')} "
                     f"| {f(r['var_bias_pct'], '+.2f')} / {f(w.get('var_bias_pct'), '+.2f')} "
                     f"| {f(r['coverage'], '.2f')} | {f(r['seconds'], '.3f')} / {f(w.get('seconds'), '.2f')} |")
    for psi, v in results.get("false_alarm_400", {}).items():
        lines.append(f"\nrmtfl false-alarm rate, pure noise, psi={psi}: {v['rate']:.4f} over {v['draws']} draws "
                     f"(binomial 2-s.e. band [{v['band'][0]:.4f}, {v['band'][1]:.4f}])")
    lines += ["", verdict(results)]
    return "\n".join(lines)


def verdict(results) -> str:
    """The count error split in two (Gaussian-noise cells only): missed spikes, against WeightWatcher's count
    error in every cell, and over-counts, against the level ``alpha`` (pooled over the cells where every planted
    spike is at least 1.5 theta_c, and pure noise: there a level-``alpha`` test over-counts at rate ``alpha``)."""
    alpha = results["settings"]["alpha"]
    ww = {r["cell"]: r for r in results.get("weightwatcher", [])}
    gauss = [r for r in results["rmtfl"] if "student" not in r["cell"]]
    cmp = [(r, ww[r["cell"]]) for r in gauss if r["cell"] in ww]
    better = sum(r["misses"] <= w["count_error"] + 1e-12 for r, w in cmp)
    pooled = [r for r in gauss if "noise" in r["cell"] or float(r["cell"].split("f=")[-1]) >= 1.5]
    n = sum(r["n"] for r in pooled)
    rate = sum(r["false_alarm"] * r["n"] for r in pooled) / max(n, 1)
    se = float(np.sqrt(alpha * (1 - alpha) / max(n, 1)))
    out = [f"missed spikes <= WeightWatcher's count error in {better} of {len(cmp)} Gaussian cells",
           f"over-count rate, pooled over {len(pooled)} cells (theta >= 1.5 theta_c, pure noise): {rate:.4f} over "
           f"{n} matrices, level {alpha:g}, binomial 2-s.e. band [{alpha - 2 * se:.4f}, {alpha + 2 * se:.4f}]"]
    return "\n".join(out)


# ------------------------------------------------------------------------------------------ speed
def speed(sizes=(4096,), big=20000, top_k=5):
    """Speed checks (CPU seconds of this process, one BLAS thread): the full spectrum against
    ``numpy.linalg.svd(compute_uv=False)``, ``top_k``, and the memory of a ``big x big`` float32 analysis (peak
    traced allocations during ``analyze``, in copies of the matrix).  Each matrix carries three spikes."""
    import tracemalloc

    from rmtfl.compare import analyze

    def timed(fn):
        t0, w0 = time.process_time(), time.perf_counter()
        out = fn()
        return time.process_time() - t0, time.perf_counter() - w0, out

    rows = []
    rng = np.random.default_rng(0)
    for n in sizes:
        W = rng.standard_normal((n, n)) / np.sqrt(n)
        W[:3, :3] += np.diag([3.0, 2.5, 2.2])
        t_svd, w_svd, _ = timed(lambda: np.linalg.svd(W, compute_uv=False))
        t_full, w_full, rep_full = timed(lambda: analyze(W))
        t_top, w_top, rep = timed(lambda: analyze(W, top_k=top_k))
        rows.append({"name": f"analyze full {n}x{n}", "seconds": t_full, "floor_seconds": t_svd,
                     "ratio": t_full / t_svd, "target_ratio": 1.2, "floor": "numpy svd(compute_uv=False)",
                     "wall": [w_full, w_svd], "outliers": len(rep_full.outliers)})
        rows.append({"name": f"analyze top_k={top_k} {n}x{n}", "seconds": t_top, "floor_seconds": t_svd,
                     "ratio": t_top / t_svd, "target_ratio": 0.2, "floor": "numpy svd(compute_uv=False)",
                     "wall": [w_top, w_svd], "outliers": len(rep.outliers), "sketch": rep.sketch})
    if big:
        W = np.empty((big, big), dtype=np.float32)
        for i in range(0, big, 1000):  # noise and three spikes, drawn by blocks of rows
            W[i:i + 1000] = rng.standard_normal((min(1000, big - i), big), dtype=np.float32) / np.float32(np.sqrt(big))
        U, _ = np.linalg.qr(rng.standard_normal((big, 3)))
        V, _ = np.linalg.qr(rng.standard_normal((big, 3)))
        th = np.array([3.0, 2.0, 1.6])
        for i in range(0, big, 1000):
            W[i:i + 1000] += ((U[i:i + 1000] * th) @ V.T).astype(np.float32)
        tracemalloc.start()
        t_big, w_big, rep = timed(lambda: analyze(W, top_k=top_k))
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        rows.append({"name": f"analyze top_k={top_k} {big}x{big} float32", "seconds": t_big, "wall": w_big,
                     "peak_copies": peak / W.nbytes, "target_copies": 3.0, "sketch": rep.sketch,
                     "mp_consistent": rep.mp_consistent, "outliers": [o.theta for o in rep.outliers],
                     "var": rep.var, "complete": rep.complete})
    return rows


def run(quick: bool = False) -> list[dict]:
    """``python -m benchmarks`` entry: the speed rows (2048^2 with --quick, no 20000^2)."""
    return speed(sizes=(2048,) if quick else (4096,), big=0 if quick else 20000)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--fa-draws", type=int, default=400)
    ap.add_argument("--alpha", type=float, default=0.05)
    ap.add_argument("--ww", default=None, help="python of an environment with weightwatcher installed")
    ap.add_argument("--ww-file", default=None, help="JSON-lines file of WeightWatcher results (reused, appended)")
    ap.add_argument("--ww-worker", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--cells", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--json", default=None)
    ap.add_argument("--speed", action="store_true")
    a = ap.parse_args(argv)
    if a.ww_worker:
        cells = [int(x) for x in a.cells.split(",")] if a.cells else list(range(len(CELLS)))
        _ww_worker(a.ww_worker, a.seeds, cells)
        return 0
    if a.speed:
        rows = speed()
        print(json.dumps(rows, indent=2, default=str))
        return 0
    res = benchmark(a.seeds, a.fa_draws, a.ww, a.ww_file, a.alpha)
    print(format_table(res))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
