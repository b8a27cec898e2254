"""Run every ``benchmarks/bench_*.py`` and print a table (name, seconds, floor, ratio).

Usage::

    python -m benchmarks [--quick] [--json FILE] [FILTER ...]

``FILTER`` keeps modules whose name (``bench_classical`` or ``classical``) contains
one of the given strings.  A module that raises is reported as an error row and the
others still run; the exit status is 1 if any module failed or any row reports
``ok: False``, else 0.
"""
from __future__ import annotations

import argparse
import importlib
import json
import math
import sys
import time
import traceback
from pathlib import Path


def discover() -> list[str]:
    """Module names ``bench_*`` in this package folder that define ``run(quick)``, sorted (the others, such as
    ``bench_two_step_finite_n`` and ``bench_phase_agreement``, are command-line scripts with arguments of their own:
    ``python -m benchmarks.<name> --help``)."""
    here = Path(__file__).resolve().parent
    return sorted(p.stem for p in here.glob("bench_*.py") if "\ndef run(" in p.read_text())


def _fmt(v, nd=4) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        if not math.isfinite(v):
            return "-"
        return f"{v:.{nd}g}"
    return str(v)


def table(rows: list[dict]) -> str:
    hdr = f"{'module':<16} {'name':<52} {'seconds':>9} {'floor s':>9} {'ratio':>7} {'target':>8}  floor"
    lines = [hdr, "-" * len(hdr)]
    for r in rows:
        target = r.get("target_ratio", r.get("target_seconds"))
        tstr = "" if target is None else ("≤" + _fmt(float(target), 3) + ("s" if "target_seconds" in r and
                                                                          "target_ratio" not in r else "x"))
        flag = "" if r.get("ok", True) else "  (MISSED)"
        lines.append(f"{r.get('module', ''):<16} {str(r.get('name', ''))[:52]:<52} {_fmt(r.get('seconds')):>9} "
                     f"{_fmt(r.get('floor_seconds')):>9} {_fmt(r.get('ratio'), 3):>7} {tstr:>8}  "
                     f"{r.get('floor', '')}{flag}")
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks", description="rmtfl benchmarks")
    p.add_argument("filters", nargs="*", help="substring(s) of module names to run (default: all)")
    p.add_argument("--quick", action="store_true", help="smaller sizes")
    p.add_argument("--json", metavar="FILE", default=None, help="also write all rows to FILE")
    args = p.parse_args(argv)
    names = [n for n in discover() if not args.filters or any(f in n for f in args.filters)]
    if not names:
        print(f"no benchmark module matches {args.filters} (have: {discover()})", file=sys.stderr)
        return 2
    rows, failed = [], False
    for name in names:
        t0 = time.perf_counter()
        try:
            mod = importlib.import_module(f"benchmarks.{name}")
            got = mod.run(quick=args.quick)
        except Exception as exc:  # report and go on with the other modules
            failed = True
            traceback.print_exc()
            got = [{"name": f"ERROR {type(exc).__name__}: {exc}", "seconds": None, "floor_seconds": None,
                    "ratio": None, "floor": "", "ok": False}]
        for r in got:
            r.setdefault("module", name.removeprefix("bench_"))
        rows.extend(got)
        print(f"[{name}: {time.perf_counter() - t0:.1f} s]", file=sys.stderr)
    print(table(rows))
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps({"quick": args.quick, "rows": rows}, indent=2, default=float))
    return 1 if failed or any(r.get("ok") is False for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
