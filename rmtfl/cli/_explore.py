"""``rmtfl explore``: serve the interactive teaching pages (a Bokeh server app, docs/explore.md).

``rmtfl explore [--port 5006] [--host 127.0.0.1] [--open]`` prints its URL and serves until Ctrl-C
(exit status 0); it opens a browser only with ``--open``.  Without Bokeh installed it exits with status
2 and one line naming the extra to install.
"""
from __future__ import annotations

import importlib.util
import sys

__all__ = ["register"]

MISSING = 'rmtfl explore needs bokeh: pip install -e ".[explore]"'


def _cmd_explore(args) -> int:
    if importlib.util.find_spec("bokeh") is None:
        print(f"rmtfl: error: {MISSING}", file=sys.stderr)
        return 2
    import rmtfl.explore

    try:
        return int(rmtfl.explore.serve(port=args.port, host=args.host, open_browser=args.open) or 0)
    except OSError as exc:  # the port is taken, or the host cannot be bound
        print(f"rmtfl: error: cannot serve on {args.host}:{args.port}: {' '.join(str(exc).split())}",
              file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # Ctrl-C before the loop ran
        return 0


def register(groups, top) -> None:
    """Add ``rmtfl explore``."""
    p = top.add_parser("explore", help="serve the interactive teaching pages in a browser (needs .[explore])",
                       description="Serve the interactive pages (MP and BBP, one and two steps, spiked kernel, "
                                   "gradient flow, your matrix) at http://HOST:PORT/ until Ctrl-C.")
    p.add_argument("--port", type=int, default=5006, help="TCP port in [1, 65535] (default 5006)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1, this machine only)")
    p.add_argument("--open", action="store_true", help="open the index page in a web browser")
    p.set_defaults(func=_cmd_explore)
