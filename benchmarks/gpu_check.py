"""One-shot GPU check: cupy installed if needed, comparisons on cupy (float64, float32), CPU agreement, timings.

Usage::

    python benchmarks/gpu_check.py [--out DIR] [--n 16000] [--budget 200] [--level quick]
                                   [--no-install] [--dry-run-numpy]

Steps (each guarded; a failure is recorded as a failed row and the script goes on):

0. **requirements and cupy**: rmtfl's runtime requirements are pip-installed if missing
   (a fresh device machine); cupy is imported, or installed with ``pip install cupy-cuda12x`` when missing and an
   NVIDIA device is visible (``nvidia-smi -L``).  Without a device, or when the install or
   the import fails, one line says why and the exit status is 3 (nothing else runs).
1. **agreement** at small sizes, CPU (numpy) against GPU from the same host ``rng``:
   singular values, top triplets, a spiked measurement, and the two-step simulation
   (full spectrum and top-k) in float64 (to 1e-8) and float32 (top values to 2e-3).
2. **comparison suite on cupy, float64**: ``rmtfl verify`` (``run_verify`` with
   ``backend="cupy"``) at ``--level`` (default ``quick``) for the parts in ``VERIFY_PARTS``
   (a part whose module is missing or has no checks is reported as skipped).
3. **float32 comparisons**: the classical KS / top-edge / BGN checks with float32 device
   matrices and the verify tolerances (``N = 1000``, ``2000`` at ``--level default``).
4. **timings** (device generator, ``device_rng=True``: no host draw; after a small warm-up): the two-step
   simulation (``N = d = n``, tanh, linear target, full spectrum and top vectors: one Gram
   product and one dense ``eigh``) against the bare cupy script (same draws, two GEMM steps,
   ``eigvalsh`` of the Gram matrix), and ``singular_values`` against bare ``eigvalsh(W W^T)``,
   float64 and float32.  The float32 rows are timed against a second floor too, the same with the float64 Gram
   matrix: a square float32 matrix's smallest values lie below what float32 Gram eigenvalues resolve.
   The size is ``--n`` (16000) unless the whole script would then
   exceed ``--budget`` seconds: it is predicted from a run at ``n = 4000`` with the ``n^3``
   law and lowered (12000, 8000, 6000, 4000) to fit.

Details go to ``$OUT/gpu_check.json`` (``--out``, else the ``OUT`` environment variable,
else ``./gpu-check-out``); the verify reports to ``$OUT/verify_<part>.json``.  A short table
is printed last.  Exit status: 0 all rows ok, 1 some row failed, 3 no usable GPU/cupy.
``--dry-run-numpy`` runs every step on numpy at tiny sizes (to test the script on a CPU machine).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import time
import traceback
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository's rmtfl importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

#: verify parts run on the GPU (float64); missing modules or parts without checks are skipped.
VERIFY_PARTS = ("classical", "two-step", "spiked-kernel")
#: candidate timing sizes, largest first (``--n`` is put in front).
SIZES = (16000, 12000, 8000, 6000, 4000)
EXIT_NO_GPU = 3
TWO_STEP = dict(activation="tanh", target="linear", eta1=1.5, eta2=1.5)


# ----------------------------------------------------------------------------------- cupy
#: import name -> pip name of rmtfl's runtime requirements (installed if missing on a fresh machine)
REQUIREMENTS = {"numpy": "numpy", "scipy": "scipy", "mpmath": "mpmath", "threadpoolctl": "threadpoolctl",
                "matplotlib": "matplotlib", "tqdm": "tqdm"}


def ensure_requirements():
    """``None`` when rmtfl's requirements import, else a one-line reason (after trying pip)."""
    import importlib
    import importlib.util

    missing = [pip for mod, pip in REQUIREMENTS.items() if importlib.util.find_spec(mod) is None]
    if missing:
        try:
            r = subprocess.run([sys.executable, "-m", "pip", "install", "-q", *missing], capture_output=True,
                               text=True, timeout=120)
        except subprocess.TimeoutExpired:
            return f"pip install {' '.join(missing)} timed out"
        if r.returncode != 0:
            last = [ln for ln in (r.stderr or r.stdout).strip().splitlines() if ln.strip()]
            return f"pip install {' '.join(missing)} failed: {last[-1] if last else r.returncode}"
        importlib.invalidate_caches()
    try:
        importlib.import_module("rmtfl.numerics")
    except Exception as exc:
        return f"rmtfl does not import ({type(exc).__name__}: {exc})"
    return None


def _gpu_visible() -> tuple[bool, str]:
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return (os.path.exists("/proc/driver/nvidia/gpus") and bool(os.listdir("/proc/driver/nvidia/gpus")),
                "no nvidia-smi and no /proc/driver/nvidia/gpus")
    try:
        out = subprocess.run([exe, "-L"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError) as exc:
        return False, f"nvidia-smi failed ({exc})"
    ok = out.returncode == 0 and "GPU" in out.stdout
    return ok, (out.stdout.strip().splitlines() or [out.stderr.strip() or "nvidia-smi -L listed no GPU"])[0]


def ensure_cupy(install: bool = True):
    """The cupy backend, installing cupy-cuda12x first if needed; ``(backend, None)`` or ``(None, reason)``."""
    from rmtfl.numerics import BackendUnavailable, get_backend

    try:
        return get_backend("cupy"), None
    except BackendUnavailable as exc:
        reason = str(exc)
    try:
        import cupy  # noqa: F401
        return None, reason  # cupy imports but no usable device
    except Exception:
        pass
    visible, what = _gpu_visible()
    if not visible:
        return None, f"no CUDA device visible ({what}); cupy not installed"
    if not install:
        return None, reason + " (--no-install given)"
    print(f"gpu_check: installing cupy-cuda12x for {what} ...", file=sys.stderr, flush=True)
    try:
        r = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "cupy-cuda12x"], capture_output=True,
                           text=True, timeout=120)
    except subprocess.TimeoutExpired:
        return None, "pip install cupy-cuda12x timed out after 120 s"
    if r.returncode != 0:
        last = [ln for ln in (r.stderr or r.stdout).strip().splitlines() if ln.strip()]
        return None, f"pip install cupy-cuda12x failed: {last[-1] if last else 'exit ' + str(r.returncode)}"
    import importlib

    importlib.invalidate_caches()
    try:
        return get_backend("cupy"), None
    except BackendUnavailable as exc:
        return None, f"cupy installed but unusable: {exc}"


def _timed(fn, sync):
    sync()
    t = time.perf_counter()
    out = fn()
    sync()
    return time.perf_counter() - t, out


# ------------------------------------------------------------------------------ agreement
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
    t_cpu = top_singular_triplets(sp_cpu.W, 2, rng=1, method="iterative")
    t_gpu = top_singular_triplets(sp_gpu.W, 2, rng=1, backend=be)
    e_t = float(np_.max(np_.abs(t_cpu.s - t_gpu.s)))
    ov = float(np_.max(np_.abs(np_.abs(np_.sum(t_cpu.U * t_gpu.U, axis=0)) - 1.0)))
    rows.append({"name": "top triplets float64 vs numpy Lanczos (values, |<u,u'>|-1)", "value": max(e_t, ov),
                 "tol": 1e-8, "ok": e_t <= 1e-8 and ov <= 1e-8})
    m_cpu = measure_spiked(sp_cpu, rng=2, method="dense")  # float64 reference (auto: mixed-precision vectors)
    m_gpu = measure_spiked(sp_gpu, rng=2, backend=be)
    e_m = float(np_.max(np_.abs(np_.r_[m_cpu.singular_values - m_gpu.singular_values,
                                       m_cpu.cos2_left - m_gpu.cos2_left])))
    rows.append({"name": "spiked measurement float64 vs numpy", "value": e_m, "tol": 1e-8, "ok": e_m <= 1e-8})
    return rows


def _two_step_agreement(be, np_, N):
    """simulate_two_step on the device against numpy, same host rng (bit-identical inputs)."""
    from rmtfl.numerics import simulate_two_step

    rows = []
    ref = {k: simulate_two_step(**TWO_STEP, N=N, d=N, n=2 * N, rng=11, k=k) for k in (None, 6)}
    for dtype, tol in (("float64", 1e-8), ("float32", 2e-3)):
        for k in (None, 6):
            g = simulate_two_step(**TWO_STEP, N=N, d=N, n=2 * N, rng=11, k=k, dtype=dtype, backend=be)
            c = ref[k]
            e_s = float(np_.max(np_.abs(g.singular_values[:6] - c.singular_values[:6]) / c.singular_values[0]))
            e_c = float(np_.max(np_.abs(g.cos2_target - c.cos2_target)))
            ok = e_s <= tol and e_c <= 10 * tol and g.outlier_count == c.outlier_count
            rows.append({"name": f"two-step {dtype} k={k} vs numpy float64 (rel s, cos2/10)",
                         "value": max(e_s, e_c / 10), "tol": tol, "ok": bool(ok),
                         "outliers": [g.outlier_count, c.outlier_count]})
    return rows


# --------------------------------------------------------------------------------- verify
def _verify(backend_name, part, level, out):
    import importlib

    from rmtfl.compare._verify import PARTS, VerifyContext, run_verify

    try:
        mod = importlib.import_module(PARTS[part])
    except (ImportError, KeyError) as exc:
        return [{"name": f"verify {part}: skipped ({exc})", "ok": True}]
    ctx = VerifyContext(level=level, seed=0, backend=backend_name)
    if not mod.checks(ctx):
        return [{"name": f"verify {part}: skipped (no checks)", "ok": True}]
    rep = run_verify(ctx, [part], progress=False)
    (out / f"verify_{part}.json").write_text(json.dumps(rep.to_dict(), indent=2, default=str))
    n_ok = sum(c.passed for c in rep.comparisons)
    return [{"name": f"verify {part} ({level}, {backend_name}, float64)", "value": f"{n_ok}/{len(rep.comparisons)}",
             "seconds": rep.settings.get("seconds"), "ok": bool(rep.comparisons) and rep.passed}]


def _float32_pass(be, np_, N):
    """KS, top edge and one BGN point with float32 matrices on the device (same tolerances as verify)."""
    from rmtfl.compare import mean_stderr
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
        gap = abs(s1 - mp_sv_edges(psi).upper)
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


# -------------------------------------------------------------------------------- timings
def _bare_two_step(be, n, dtype, seed, gram64=False):
    """The floor: device draws, two reused-batch tanh steps by GEMM, eigvalsh of the Gram matrix (``gram64``: of the
    float64 Gram matrix, which a square float32 matrix needs for its smallest values)."""
    xp = be.xp
    dt = xp.dtype(dtype)
    gen = be.device_rng(seed)
    W = gen.standard_normal((n, n), dtype=dt) * dt.type(1 / math.sqrt(n))
    a = gen.standard_normal(n, dtype=dt) * dt.type(1 / math.sqrt(n))
    X = gen.standard_normal((n, n), dtype=dt)
    y = X[:, 0].copy()
    for eta in (TWO_STEP["eta1"], TWO_STEP["eta2"]):
        S = W @ X.T
        xp.tanh(S, out=S)
        S *= S
        xp.subtract(1, S, out=S)
        S *= y[None, :]
        G = S @ X
        del S
        G *= (a * dt.type(eta / n))[:, None]
        W = W + G
        del G
    del X
    return _bare_spectrum(be, W, gram64)


def _bare_spectrum(be, W, gram64=False):
    if gram64:
        W = W.astype(be.xp.float64)
    return be.xp.linalg.eigvalsh(W @ W.T)


def _time_size(be, n, dtype):
    from rmtfl.numerics import gaussian_matrix, singular_values
    from rmtfl.numerics import simulate_two_step

    sync = be.synchronize
    t_sim, r = _timed(lambda: simulate_two_step(**TWO_STEP, N=n, d=n, n=n, rng=0, k=None, dtype=dtype,
                                                backend=be, device_rng=True), sync)
    t_bare, _ = _timed(lambda: _bare_two_step(be, n, dtype, 0), sync)
    W = gaussian_matrix(n, n, rng=1, dtype=dtype, backend=be, device_rng=True)
    t_sv, s = _timed(lambda: singular_values(W, backend=be), sync)
    t_eig, _ = _timed(lambda: _bare_spectrum(be, W), sync)
    rows = []
    if dtype == "float32":      # the smallest values of a square float32 matrix need its float64 Gram matrix
        t_bare64, _ = _timed(lambda: _bare_two_step(be, n, dtype, 0, gram64=True), sync)
        t_eig64, _ = _timed(lambda: _bare_spectrum(be, W, gram64=True), sync)
        rows = [{"name": f"two-step full spectrum N=d=n={n} float32 / f64 Gram", "seconds": t_sim,
                 "floor_seconds": t_bare64, "ratio": t_sim / t_bare64,
                 "floor": "bare: 2 float32 GEMM steps + eigvalsh of the float64 W W^T", "ok": True},
                {"name": f"singular_values {n}x{n} float32 / f64 Gram", "seconds": t_sv,
                 "floor_seconds": t_eig64, "ratio": t_sv / t_eig64, "floor": "bare eigvalsh of the float64 W W^T",
                 "ok": True}]
    del W
    return [
        {"name": f"two-step full spectrum N=d=n={n} {dtype}", "seconds": t_sim, "floor_seconds": t_bare,
         "ratio": t_sim / t_bare, "floor": "bare: 2 GEMM steps + eigvalsh(W W^T)", "outliers": r.outlier_count,
         "ok": r.outlier_count >= 1},
        {"name": f"singular_values {n}x{n} {dtype}", "seconds": t_sv, "floor_seconds": t_eig,
         "ratio": t_sv / t_eig, "floor": "bare eigvalsh(W W^T)", "s_max": float(s[0]),
         "ok": abs(float(s[0]) - 2.0) < 0.05},
    ] + rows


def _timings(be, n_max, budget_left, probe):
    """Probe at ``probe`` (also the warm-up), predict the n^3 cost, time the largest size that fits."""
    rows = []
    t_probe = {}
    for dtype in ("float64", "float32"):  # warm-up (kernel compilation, solver handles): not timed
        _time_size(be, max(probe // 4, 50), dtype)
    for dtype in ("float64", "float32"):
        t = time.perf_counter()
        rows_p = _time_size(be, probe, dtype)
        t_probe[dtype] = time.perf_counter() - t
        for r in rows_p:
            r["name"] += " (probe)"
        rows.extend(rows_p)
    spent = sum(t_probe.values())
    cands = [n for n in sorted({n_max, *SIZES}, reverse=True) if n <= n_max]
    chosen = None
    for n in cands:
        predicted = spent * (n / probe) ** 3
        if predicted <= budget_left():  # budget_left() already counts the probe
            chosen = n
            break
    info = {"name": f"timing size: {chosen} (asked {n_max}; probe {probe}: {spent:.1f} s)", "ok": True,
            "chosen": chosen, "asked": n_max}
    rows.append(info)
    if chosen is not None and chosen != probe:
        for dtype in ("float64", "float32"):
            rows.extend(_time_size(be, chosen, dtype))
    return rows


# ----------------------------------------------------------------------------------- main
def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=os.environ.get("OUT") or "gpu-check-out")
    p.add_argument("--n", type=int, default=16000, help="largest timing size N = d = n (default 16000)")
    p.add_argument("--budget", type=float, default=200.0, help="seconds for the whole script (default 200)")
    p.add_argument("--level", default="quick", choices=("quick", "default", "full"), help="verify level")
    p.add_argument("--no-install", action="store_true", help="do not pip install cupy when it is missing")
    p.add_argument("--dry-run-numpy", action="store_true", help="run every step on numpy at tiny sizes")
    args = p.parse_args(argv)
    if args.dry_run_numpy:  # tiny matrices: extra BLAS threads only add wake-up stalls on a busy CPU
        from rmtfl._threads import blas_threads

        with blas_threads(1):
            return _run(args)
    return _run(args)


def _run(args) -> int:
    t_start = time.perf_counter()
    reason = ensure_requirements()
    if reason is not None:
        print(f"gpu_check: no run: {reason}")
        return EXIT_NO_GPU

    import numpy as np

    from rmtfl.numerics import get_backend

    if args.dry_run_numpy:
        be = get_backend("numpy")
        small, n_agree, n32, n_max, probe = 200, 60, 300, min(args.n, 400), 200
    else:
        be, reason = ensure_cupy(install=not args.no_install)
        if be is None:
            print(f"gpu_check: no GPU run: {reason}")
            return EXIT_NO_GPU
        small, n_agree, n32 = 500, 200, (2000 if args.level != "quick" else 1000)
        n_max, probe = args.n, min(4000, args.n)

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    details = {"backend": be.name, "args": vars(args), "sections": {}}
    summary = []

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
    section("two-step agreement", lambda: _two_step_agreement(be, np, n_agree))
    for part in VERIFY_PARTS:
        section(f"verify {part}", lambda part=part: _verify(be.name, part, args.level, out))
    section("float32 classical", lambda: _float32_pass(be, np, n32))
    reserve = 10.0
    section("timings", lambda: _timings(be, n_max, lambda: args.budget - reserve - (time.perf_counter() - t_start),
                                        probe))

    details["seconds"] = round(time.perf_counter() - t_start, 2)
    (out / "gpu_check.json").write_text(json.dumps(details, indent=2, default=str))
    print(f"{'check':<64} {'value':>10} {'tol/floor':>10} {'ratio':>6}  ok")
    for r in summary:
        val = r.get("value", r.get("seconds", ""))
        tol = r.get("tol", r.get("floor_seconds", ""))
        fv = f"{val:.3g}" if isinstance(val, float) else str(val)
        ft = f"{tol:.3g}" if isinstance(tol, float) else str(tol)
        ratio = f"{r['ratio']:.2f}" if isinstance(r.get("ratio"), float) else ""
        print(f"{str(r['name'])[:64]:<64} {fv:>10} {ft:>10} {ratio:>6}  {'yes' if r.get('ok') else 'NO'}")
    print(f"gpu_check ({be.name}): {sum(bool(r.get('ok')) for r in summary)}/{len(summary)} ok in "
          f"{details['seconds']} s; details in {out / 'gpu_check.json'}")
    return 0 if all(r.get("ok") for r in summary) else 1


if __name__ == "__main__":
    sys.exit(main())
