"""One-shot GPU check: classical comparisons on cupy (float64 and float32), CPU agreement, timings.

Usage::

    python benchmarks/gpu_check.py [--out DIR] [--n 16000] [--quick] [--dry-run-numpy]

Steps (each guarded; a failure is recorded and the script goes on):

1. **agreement** at small sizes: singular values, top triplets and a spiked
   measurement on cupy against numpy from the same host ``rng`` (float64 to
   1e-10; float32 to 1e-4 on the top values);
2. **classical comparisons** on cupy: ``rmtfl verify --parts classical`` at the
   default level (float64), and a float32 KS/edge/BGN pass at ``N = 2000``
   with the same tolerances;
3. **timings**: ``singular_values`` of an ``n x n`` sample (default
   ``n = 16000``; drawn with cupy's device generator to save the host
   transfer) against cupy's ``svd(compute_uv=False)`` at ``n/4`` (the dense SVD
   at full size does not fit the time budget; its time is extrapolated by
   ``(n / (n/4))^3``), float64 and float32;
4. **hooks**: further GPU checks registered in ``EXTRA_CHECKS`` (e.g. the
   two-step simulation, once ``rmtfl.compare.two_step`` provides checks) run
   through ``rmtfl verify`` with ``backend="cupy"``; a missing module is skipped.

Details go to ``$OUT/gpu_check.json`` (``--out`` or the ``OUT`` environment
variable, default ``./gpu-check-out``); a short table is printed last.
Without cupy or a CUDA device the script prints a one-line reason and exits
with status 3.  ``--dry-run-numpy`` runs the same code paths on numpy at tiny
sizes (to test the script on a CPU machine).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
import traceback
from pathlib import Path

#: (label, verify part) pairs run on the GPU after the classical checks; parts whose
#: module is missing or has no checks are skipped.  Add new parts here.
EXTRA_CHECKS = [("two-step simulation", "two-step"), ("spiked kernel", "spiked-kernel")]

EXIT_NO_GPU = 3


def _timed(fn, sync):
    sync()
    t = time.perf_counter()
    out = fn()
    sync()
    return time.perf_counter() - t, out


def _agreement(be, np_, small):
    from rmtfl.numerics import (gaussian_matrix, measure_spiked, singular_values, spiked_matrix,
                                top_singular_triplets)

    rows = []
    W = gaussian_matrix(small, small + small // 2, rng=0)
    s_np = singular_values(W)
    s_gpu = singular_values(be.asarray(W), backend=be)
    err = float(np_.max(np_.abs(s_np - s_gpu)))
    rows.append({"name": "singular values float64 vs numpy", "value": err, "tol": 1e-10, "ok": err <= 1e-10})
    W32 = W.astype(np_.float32)
    s32 = singular_values(be.asarray(W32), backend=be)
    err32 = float(np_.max(np_.abs(s32[:50] - s_np[:50])))
    rows.append({"name": "singular values float32 vs numpy (top 50)", "value": err32, "tol": 1e-4,
                 "ok": err32 <= 1e-4})
    sp_cpu = spiked_matrix(small, small // 2, [3.0, 2.0], rng=5)
    sp_gpu = spiked_matrix(small, small // 2, [3.0, 2.0], rng=5, backend=be)
    t_cpu = top_singular_triplets(sp_cpu.W, 2, rng=1, method="dense")
    t_gpu = top_singular_triplets(sp_gpu.W, 2, rng=1, backend=be)
    e_t = float(np_.max(np_.abs(t_cpu.s - t_gpu.s)))
    ov = float(np_.max(np_.abs(np_.abs(np_.sum(t_cpu.U * t_gpu.U, axis=0)) - 1.0)))
    rows.append({"name": "top triplets float64 vs numpy (values, |<u,u'>|-1)", "value": max(e_t, ov), "tol": 1e-8,
                 "ok": e_t <= 1e-8 and ov <= 1e-8})
    m_cpu = measure_spiked(sp_cpu, rng=2)
    m_gpu = measure_spiked(sp_gpu, rng=2, backend=be)
    e_m = float(np_.max(np_.abs(np_.r_[m_cpu.s - m_gpu.s, m_cpu.cos2_left - m_gpu.cos2_left])))
    rows.append({"name": "spiked measurement float64 vs numpy", "value": e_m, "tol": 1e-8, "ok": e_m <= 1e-8})
    return rows


def _verify(backend_name, part, level):
    from rmtfl.compare.verify import VerifyContext, run_verify

    ctx = VerifyContext(level=level, seed=0, backend=backend_name)
    rep = run_verify(ctx, [part], progress=False)
    n_ok = sum(c.passed for c in rep.comparisons)
    return rep, {"name": f"verify {part} ({level}, {backend_name})", "value": f"{n_ok}/{len(rep.comparisons)}",
                 "seconds": rep.settings["seconds"], "ok": bool(rep.comparisons) and rep.passed}


def _float32_pass(be, np_, N):
    """KS, top edge and one BGN point with float32 matrices on the device (same tolerances as verify)."""
    from rmtfl.compare.core import mean_stderr
    from rmtfl.numerics import (eigenvalues_of_gram, gaussian_matrix, ks_distance_mp, measure_spiked,
                                spiked_matrix)
    from rmtfl.theory import bgn_outlier, largest_sv_scaling, mp_sv_edges

    rows = []
    seeds = np_.random.default_rng(123).spawn(4)
    for psi in (0.5, 2.0):
        d = int(round(N / psi))
        eigs = [eigenvalues_of_gram(gaussian_matrix(N, d, rng=r, dtype="float32", backend=be), backend=be)
                for r in seeds]
        ks, _ = mean_stderr([ks_distance_mp(e, psi, zero_tol=1e-6) for e in eigs])
        tol = 1.5 * math.log(N) / N
        rows.append({"name": f"float32 KS psi={psi:g} N={N}", "value": ks, "tol": tol, "ok": ks <= tol})
        s1, se = mean_stderr([math.sqrt(e[0]) for e in eigs])
        _, scale = largest_sv_scaling(N, d)
        gap = abs(s1 - mp_sv_edges(psi)[1])
        rows.append({"name": f"float32 top edge psi={psi:g}", "value": gap, "tol": 4 * scale + 3 * se,
                     "ok": gap <= 4 * scale + 3 * se})
        th = 2.0 * psi**0.25
        meas = [measure_spiked(spiked_matrix(N, d, th, rng=r, dtype="float32", backend=be), rng=r, backend=be)
                for r in seeds]
        m, se = mean_stderr([x.cos2_left[0] for x in meas])
        gap = abs(m - bgn_outlier(th, psi).cos2_left)
        tol = 1.0 / math.sqrt(N) + 3 * se
        rows.append({"name": f"float32 BGN cos2_left psi={psi:g} theta=2theta_c", "value": gap, "tol": tol,
                     "ok": gap <= tol})
    return rows


def _timings(be, n, dtype, np_):
    from rmtfl.numerics import singular_values

    xp = be.xp
    rows = []
    gen = be.device_rng(0)
    if be.name == "cupy":
        W = gen.standard_normal((n, n), dtype=dtype)
    else:
        W = gen.standard_normal((n, n)).astype(dtype)
    W *= 1.0 / math.sqrt(n)
    t, s = _timed(lambda: singular_values(W, backend=be), be.synchronize)
    rows.append({"name": f"singular_values {n}x{n} {dtype}", "seconds": t, "s_max": float(s[0]),
                 "edge": 2.0, "ok": abs(float(s[0]) - 2.0) < 0.05})
    del W
    m = max(n // 4, 8)
    Ws = gen.standard_normal((m, m), dtype=dtype) if be.name == "cupy" else gen.standard_normal((m, m)).astype(dtype)
    t_f, _ = _timed(lambda: xp.linalg.svd(Ws, compute_uv=False), be.synchronize)
    t_g, _ = _timed(lambda: singular_values(Ws, backend=be), be.synchronize)
    rows.append({"name": f"svd(compute_uv=False) {m}x{m} {dtype} (floor, extrapolated x{(n / m) ** 3:.0f})",
                 "seconds": t_f, "extrapolated_seconds": t_f * (n / m) ** 3, "singular_values_seconds": t_g,
                 "ok": True})
    return rows


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=os.environ.get("OUT", "gpu-check-out"))
    p.add_argument("--n", type=int, default=16000, help="size of the timing sample (default 16000)")
    p.add_argument("--quick", action="store_true", help="quick verify level and smaller sizes")
    p.add_argument("--dry-run-numpy", action="store_true", help="run the code paths on numpy at tiny sizes")
    args = p.parse_args(argv)

    import numpy as np

    from rmtfl.numerics.backend import BackendUnavailable, get_backend

    if args.dry_run_numpy:
        be = get_backend("numpy")
        small, n32, n_time, level = 200, 300, 600, "quick"
    else:
        try:
            be = get_backend("cupy")
        except BackendUnavailable as exc:
            print(f"gpu_check: skipped: {exc}")
            return EXIT_NO_GPU
        small, n32 = 500, (1000 if args.quick else 2000)
        n_time, level = (4000 if args.quick else args.n), ("quick" if args.quick else "default")

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    details = {"backend": be.name, "args": vars(args), "sections": {}}
    summary = []
    t_start = time.perf_counter()

    def section(name, fn):
        t = time.perf_counter()
        try:
            rows = fn()
        except Exception as exc:
            traceback.print_exc()
            rows = [{"name": f"{name}: ERROR {type(exc).__name__}: {exc}", "ok": False}]
        details["sections"][name] = {"rows": rows, "seconds": round(time.perf_counter() - t, 3)}
        summary.extend(rows)
        (out / "gpu_check.json").write_text(json.dumps(details, indent=2, default=str))

    if be.name == "cupy":
        import cupy

        dev = cupy.cuda.runtime.getDeviceProperties(0)
        details["device"] = {"name": dev["name"].decode() if isinstance(dev["name"], bytes) else str(dev["name"]),
                             "total_memory_GiB": round(dev["totalGlobalMem"] / 2**30, 1),
                             "cupy": cupy.__version__}

    section("agreement", lambda: _agreement(be, np, small))

    def verify_classical():
        rep, row = _verify(be.name, "classical", level)
        (out / "verify_classical.json").write_text(json.dumps(rep.to_dict(), indent=2))
        return [row]

    section("verify classical float64", verify_classical)
    section("float32 classical", lambda: _float32_pass(be, np, n32))
    for dtype in ("float64", "float32"):
        section(f"timing {dtype}", lambda dtype=dtype: _timings(be, n_time, dtype, np))

    for label, part in EXTRA_CHECKS:  # hooks: guarded imports, skipped when absent or empty
        def extra(label=label, part=part):
            import importlib

            from rmtfl.compare.verify import PARTS, VerifyContext

            try:
                mod = importlib.import_module(PARTS[part])
            except ImportError as exc:
                return [{"name": f"{label}: skipped ({exc})", "ok": True}]
            if not mod.checks(VerifyContext(level=level, backend=be.name)):
                return [{"name": f"{label}: skipped (no checks yet)", "ok": True}]
            rep, row = _verify(be.name, part, level)
            (out / f"verify_{part}.json").write_text(json.dumps(rep.to_dict(), indent=2))
            return [row]

        section(label, extra)

    details["seconds"] = round(time.perf_counter() - t_start, 2)
    (out / "gpu_check.json").write_text(json.dumps(details, indent=2, default=str))
    print(f"{'check':<62} {'value':>12} {'tol/s':>10}  ok")
    for r in summary:
        val = r.get("value", r.get("seconds", ""))
        tol = r.get("tol", r.get("extrapolated_seconds", ""))
        fv = f"{val:.3g}" if isinstance(val, float) else str(val)
        ft = f"{tol:.3g}" if isinstance(tol, float) else str(tol)
        print(f"{str(r['name'])[:62]:<62} {fv:>12} {ft:>10}  {'yes' if r.get('ok') else 'NO'}")
    print(f"gpu_check: {sum(bool(r.get('ok')) for r in summary)}/{len(summary)} ok in {details['seconds']} s; "
          f"details in {out / 'gpu_check.json'}")
    return 0 if all(r.get("ok") for r in summary) else 1


if __name__ == "__main__":
    sys.exit(main())
