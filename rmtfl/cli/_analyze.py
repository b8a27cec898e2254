"""``rmtfl analyze FILE [--key NAME] [--alpha A] [--kind K] [--top-k K] [--json] [--out DIR]`` (docs/analyze.md §7).

Reads every 2-d real array of ``FILE`` (``.npy``, ``.npz``, ``.safetensors``, ``.pt``/``.pth``:
:func:`rmtfl.compare.load_matrices`), analyses each with :func:`rmtfl.compare.analyze` and prints one table row
per matrix (``--json``: the reports as JSON).  ``--out DIR`` writes ``DIR/analyze.json`` (every report) and one
figure per matrix (``DIR/<name>.png`` with its JSON sidecar).  Every matrix is read and analysed before anything is
written, so bad input (a 1-d or empty array, NaN or inf, complex values, an unreadable or corrupt file, a missing
key, an ``.npz`` without 2-d arrays) exits with status 2 and writes nothing.  Arrays with fewer than 10 rows or
columns (biases, tiny heads) in a file with several arrays are skipped with a note on stderr.  A progress bar
(stderr) runs over more than one matrix.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

__all__ = ["register"]


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("._") or "matrix"


def _cmd(args) -> int:
    import rmtfl.compare as cmp

    mats = cmp.load_matrices(args.file, key=args.key)
    small = [k for k, a in mats.items() if min(a.shape) < 10]
    if small and len(small) < len(mats):
        for k in small:
            print(f"rmtfl analyze: skipping {k!r} (shape {tuple(mats[k].shape)}: fewer than 10 rows or columns)",
                  file=sys.stderr)
        mats = {k: a for k, a in mats.items() if k not in small}
    items = list(mats.items())
    bar = None
    if len(items) > 1:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(items), desc="rmtfl analyze", unit="matrix", file=sys.stderr, leave=False)
    reports = {}
    try:
        for name, a in items:
            try:
                reports[name] = cmp.analyze(a, alpha=args.alpha, kind=args.kind, top_k=args.top_k)
            except ValueError as exc:
                raise ValueError(f"{name!r}: {exc}") from None
            if bar is not None:
                bar.update(1)
    finally:
        if bar is not None:
            bar.close()
    payload = {name: r.to_dict() for name, r in reports.items()}
    if args.out:
        from ._common import pyplot, write_json

        out = Path(args.out)
        write_json(out, "analyze.json", {"file": str(args.file), "reports": payload})
        plt = pyplot()
        used = set()
        for name, r in reports.items():
            stem = _safe(name)
            while stem in used:
                stem += "_"
            used.add(stem)
            fig, ax = plt.subplots(figsize=(5.6, 3.8))
            r.plot(ax=ax)
            ax.set_title(f"{name}: " + ax.get_title(), fontsize=8)
            cmp.save_figure(fig, out / f"{stem}.png", {"file": str(args.file), "name": name, **r.to_dict()})
            plt.close(fig)
    if args.json:
        from ._common import emit

        emit(payload, args)
    else:
        width = max(len(n) for n in reports)
        for name, r in reports.items():
            print(f"{name:<{width}}  {r.table_row()}")
            if not r.mp_consistent:
                print(f"{'':<{width}}  ({r.reason})")
        if args.out:
            print(f"report: {Path(args.out) / 'analyze.json'}  figures: {args.out}")
    return 0


def register(groups, top) -> None:
    """Add ``rmtfl analyze``."""
    from ._common import MAX_SIZE, Int, options

    p = top.add_parser("analyze", help="calibrated MP/BBP analysis of the matrices in a file",
                       parents=[options(json=True, out="analyze.json and one figure per matrix")],
                       description="Noise level, Marchenko-Pastur fit, Tracy-Widom outliers with BGN strengths "
                                   "theta and their intervals, for every 2-d array of FILE (docs/analyze.md).")
    p.add_argument("file", metavar="FILE", help="a .npy, .npz, .safetensors or .pt/.pth file")
    p.add_argument("--key", default=None, metavar="NAME", help="analyse only this array of the file")
    p.add_argument("--alpha", type=float, default=0.05, help="level of each Tracy-Widom test (default 0.05)")
    p.add_argument("--kind", default="rectangular", choices=["rectangular", "covariance"],
                   help="rectangular (default; W = sqrt(var)(G + sum theta u v^T)) or covariance "
                        "(a data matrix, samples in rows: spiked covariance)")
    p.add_argument("--top-k", type=Int(1, MAX_SIZE), default=None, metavar="K",
                   help="compute only the K largest singular values (bulk from a sketch above min(N, d) = 2000)")
    p.set_defaults(func=_cmd)
