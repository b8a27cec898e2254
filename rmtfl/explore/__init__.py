"""``rmtfl explore``: interactive teaching pages, a Bokeh server app (optional extra ``.[explore]``).

Five pages, each a prediction beside a fresh simulation, recomputed when a control changes
(docs/explore.md):

==============  =====================================================================
``/mp_bbp``     MP and BBP: the spiked matrix, the MP law, the BGN outlier, the TW margin
``/steps``      one and two large GD steps: the W2 outliers and the (α1, α2) map
``/kernel``     spiked kernel: Funk–Hecke spectra, linear boost, Y0/Y2 mixing
``/flow``       gradient flow from small initialisation: collapse under the time shift
``/matrix``     your matrix: upload ``.npy``/``.npz``, get the spectrum analysis
==============  =====================================================================

``/`` lists them; ``/lessons/NAME`` serves the matching lesson of ``docs/tutorials/`` (source checkout).
Importing this package imports nothing of Bokeh: :func:`make_server` and :func:`serve` do.
"""
from __future__ import annotations

import os
import signal
import socket

__all__ = ["PAGES", "make_server", "serve", "free_port", "page_modules"]

#: The page modules, in order (each has PATH, TITLE, SUMMARY, LESSON and build(doc)).
PAGES = ("_mp_bbp", "_steps", "_kernel", "_flow", "_matrix")


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port free on ``host`` right now (for tests and ``port=0``).

    >>> 1024 <= free_port() <= 65535
    True
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def page_modules():
    """The page modules of :data:`PAGES`, imported (this imports Bokeh only when a page is built).

    >>> [m.PATH for m in page_modules()]
    ['/mp_bbp', '/steps', '/kernel', '/flow', '/matrix']
    """
    import importlib

    return [importlib.import_module(f"{__name__}.{name}") for name in PAGES]


def _index(doc) -> None:
    from bokeh.models import Div

    from ._page import lesson_link

    items = "".join(f'<li><a href="{m.PATH}">{m.TITLE}</a> — {m.SUMMARY} (lesson {lesson_link(m.LESSON)})</li>'
                    for m in page_modules())
    doc.title = "rmtfl explore"
    doc.add_root(Div(name="index", css_classes=["rmtfl-index"], width=1000, text=(
        "<h2>rmtfl explore</h2><p>Each page sets a prediction of rmtfl.theory beside a fresh simulation of "
        "rmtfl.numerics, recomputed when a control changes (long simulations run in the background; a "
        f"newer change cancels them).</p><ol>{items}</ol>")))


def make_server(*, port: int = 5006, host: str = "127.0.0.1", io_loop=None):
    """A Bokeh :class:`~bokeh.server.server.Server` with the index and the five pages (not started).

    Parameters
    ----------
    port : int
        TCP port in [0, 65535]; 0 picks a free one (read it back from ``server.port``).
    host : str
        Address to listen on (default loopback only).
    io_loop : tornado.ioloop.IOLoop, optional
        The loop to run on (default the current one).

    Returns
    -------
    bokeh.server.server.Server
        Call ``server.start()`` and run its ``io_loop``; ``server.stop()`` ends it.

    Examples
    --------
    >>> from tornado.ioloop import IOLoop
    >>> server = make_server(port=0, io_loop=IOLoop(make_current=False))
    >>> sorted(server._tornado.app_paths)
    ['/', '/flow', '/kernel', '/matrix', '/mp_bbp', '/steps']
    >>> server.stop()
    """
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise ValueError(f"port must be an integer in [0, 65535], got {port!r}")
    if not isinstance(host, str) or not host:
        raise ValueError(f"host must be a non-empty string, got {host!r}")
    from bokeh.application import Application
    from bokeh.application.handlers import FunctionHandler
    from bokeh.server.server import Server
    from tornado.web import StaticFileHandler

    from ._page import LESSONS

    if port == 0:
        port = free_port(host)
    apps = {"/": Application(FunctionHandler(_index))}
    for m in page_modules():
        apps[m.PATH] = Application(FunctionHandler(m.build))
    origins = [f"{host}:{port}"] + ([f"localhost:{port}", f"127.0.0.1:{port}"] if host in ("127.0.0.1", "localhost")
                                    else [])
    extra = [(r"/lessons/(.*)", StaticFileHandler, {"path": str(LESSONS)})] if LESSONS.is_dir() else []
    kw = {} if io_loop is None else {"io_loop": io_loop}
    return Server(apps, port=port, address=host, allow_websocket_origin=origins, extra_patterns=extra,
                  http_server_kwargs={"max_buffer_size": 200 * 2**20}, websocket_max_message_size=200 * 2**20,
                  **kw)


def serve(*, port: int = 5006, host: str = "127.0.0.1", open_browser: bool = False) -> int:
    """Serve the pages at ``http://HOST:PORT/`` until Ctrl-C; print the URL; open a browser if asked.

    Parameters
    ----------
    port : int
        TCP port (``rmtfl explore --port``, default 5006).
    host : str
        Address to listen on; the default ``127.0.0.1`` serves this machine only.
    open_browser : bool
        Open the index page in the default web browser (``--open``).

    Returns
    -------
    int
        0 after Ctrl-C (the server is stopped cleanly).  ``rmtfl explore`` is this function
        (the page machinery and the browser tests are described in docs/explore.md).
    """
    server = make_server(port=port, host=host)
    server.start()
    url = f"http://{host}:{server.port}/"
    print(f"rmtfl explore: serving {url} (Ctrl-C to stop)", flush=True)
    if open_browser:
        server.io_loop.add_callback(_open, url)
    loop = server.io_loop
    aloop = getattr(loop, "asyncio_loop", None)
    # Ctrl-C stops the loop from inside it: a KeyboardInterrupt raised in the middle of a callback can leave the
    # loop unable to shut down.  Windows event loops have no signal handlers; there the KeyboardInterrupt remains.
    handled = aloop is not None and os.name == "posix"
    if handled:
        aloop.add_signal_handler(signal.SIGINT, loop.stop)
    try:
        loop.start()
        print("rmtfl explore: stopped", flush=True)
    except KeyboardInterrupt:
        print("rmtfl explore: stopped", flush=True)
    finally:
        if handled:
            aloop.remove_signal_handler(signal.SIGINT)
        server.stop()
    return 0


def _open(url: str) -> None:
    import webbrowser

    webbrowser.open(url)
