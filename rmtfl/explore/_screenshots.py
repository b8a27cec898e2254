"""Screenshots of the explore pages: ``python -m rmtfl.explore._screenshots OUTDIR``.

Starts the server on a free loopback port, opens each page at its defaults in headless Chromium
(the system browser, see :mod:`rmtfl.explore._browser`), waits until the prediction and the
simulation are drawn, and writes ``OUTDIR/explore_<page>.png`` with a JSON sidecar (page, URL path,
default inputs, versions).  The "your matrix" page is shown with a sampled spiked matrix uploaded
(``N = 300``, ``d = 600``, ``theta = 3``, seed 0).
"""
from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path


def _versions() -> dict:
    import platform

    import bokeh
    import numpy
    import scipy

    from rmtfl._version import __version__

    return {"rmtfl": __version__, "numpy": numpy.__version__, "scipy": scipy.__version__,
            "bokeh": bokeh.__version__, "python": platform.python_version()}


def main(argv=None) -> int:
    import numpy as np

    from . import _browser as br
    from . import page_modules

    argv = sys.argv[1:] if argv is None else list(argv)
    if len(argv) != 1 or argv[0].startswith("-"):
        print("usage: python -m rmtfl.explore._screenshots OUTDIR", file=sys.stderr)
        return 2
    out = Path(argv[0])
    out.mkdir(parents=True, exist_ok=True)
    paths, why = br.browser_paths()
    if paths is None:
        print(f"rmtfl explore screenshots: {why}", file=sys.stderr)
        return 1
    server = br.ServerThread()
    driver = br.chrome(width=1240, height=900)
    written = []
    try:
        for m in page_modules():
            name = m.PATH.strip("/")
            driver.get(server.url + m.PATH)
            settings = dict(getattr(m, "DEFAULTS", {}))
            if name == "matrix":
                import rmtfl.numerics as nm

                br.wait_for(lambda: br.file_input(driver), 30, what="the upload control")
                with tempfile.TemporaryDirectory() as tmp:
                    f = Path(tmp) / "spiked_300x600.npy"
                    np.save(f, nm.spiked_matrix(300, 600, 3.0, rng=0).W)
                    br.file_input(driver).send_keys(str(f))
                    br.wait_for(lambda: br.read_values(driver, "rmtfl-measured").get("N") == 300, 60,
                                what="the uploaded matrix")
                settings = {"upload": "spiked_matrix(300, 600, 3.0, rng=0).W"}
            else:
                br.wait_for(lambda: br.read_values(driver), 60, what=f"the prediction of {m.PATH}")
            br.wait_idle(driver)
            png = out / f"explore_{name}.png"
            driver.save_screenshot(str(png))
            (out / f"{png.name}.json").write_text(json.dumps(
                {"figure": png.name, "params": {"page": m.PATH, "title": m.TITLE, "settings": settings},
                 "versions": _versions()}, indent=2))
            written.append(png)
            print(png)
    finally:
        driver.quit()
        server.stop()
    return 0 if len(written) == len(page_modules()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
