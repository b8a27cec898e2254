"""Drive the explore pages in headless Chromium (the browser tests and the screenshot script).

The system browser is used (``/usr/bin/chromium`` and ``/usr/bin/chromedriver`` on Debian, or
``RMTFL_CHROMIUM`` / ``RMTFL_CHROMEDRIVER``); Selenium's driver manager is never asked to download
one.  :class:`ServerThread` runs :func:`rmtfl.explore.make_server` on a loopback port in a thread of
this process and records the server's log lines.  Bokeh renders each widget inside a shadow root, so
:data:`FIND_JS` searches the shadow trees for an element of a css class.
"""
from __future__ import annotations

import logging
import os
import re
import shutil
import threading
import time

__all__ = ["browser_paths", "chrome", "ServerThread", "read_values", "driver_text", "message", "set_value",
           "file_input", "wait_for", "wait_idle", "page_state", "console_errors", "FIND_JS"]


def browser_paths():
    """``(chromium, chromedriver)`` paths, or ``None`` with the reason as a second value."""
    chromium = os.environ.get("RMTFL_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    driver = os.environ.get("RMTFL_CHROMEDRIVER") or shutil.which("chromedriver")
    if not chromium or not os.path.exists(chromium):
        return None, "no chromium browser (apt-get install chromium chromium-driver)"
    if not driver or not os.path.exists(driver):
        return None, "no chromedriver (apt-get install chromium-driver)"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return None, "selenium is not installed (pip install -e '.[test]')"
    return (chromium, driver), ""


def chrome(width: int = 1200, height: int = 1000):
    """A headless Chromium WebDriver on the system browser, with the browser console log recorded."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    paths, why = browser_paths()
    if paths is None:
        raise RuntimeError(why)
    chromium, driver = paths
    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                f"--window-size={width},{height}", "--no-first-run", "--disable-extensions",
                "--disable-background-networking"):
        opts.add_argument(arg)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(executable_path=driver), options=opts)


class _Records(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.lines = []

    def emit(self, record):
        text = record.getMessage()
        if record.exc_info:
            text += "\n" + "".join(logging.Formatter().formatException(record.exc_info))
        self.lines.append(f"{record.levelname} {record.name}: {text}")


class ServerThread:
    """:func:`rmtfl.explore.make_server` on ``127.0.0.1`` in a daemon thread; ``.url``, ``.log``, ``.stop()``."""

    def __init__(self, host: str = "127.0.0.1"):
        from tornado.ioloop import IOLoop

        from rmtfl.explore import free_port, make_server

        self.records = _Records()
        for name in ("bokeh", "tornado", "rmtfl"):
            logging.getLogger(name).addHandler(self.records)
        self._ready = threading.Event()
        self._error = None
        port = free_port(host)

        def run():
            import asyncio

            asyncio.set_event_loop(asyncio.new_event_loop())
            try:
                self.loop = IOLoop.current()
                self.server = make_server(port=port, host=host, io_loop=self.loop)
                self.server.start()
            except BaseException as exc:  # reported by the constructor
                self._error = exc
                self._ready.set()
                return
            self._ready.set()
            self.loop.start()

        self.thread = threading.Thread(target=run, name="rmtfl-explore-server", daemon=True)
        self.thread.start()
        self._ready.wait(30)
        if self._error is not None:
            raise self._error
        self.url = f"http://{host}:{port}"

    @property
    def log(self) -> str:
        return "\n".join(self.records.lines)

    def stop(self) -> None:
        def halt():
            self.server.stop()
            self.loop.stop()

        self.loop.add_callback(halt)
        self.thread.join(10)
        for name in ("bokeh", "tornado", "rmtfl"):
            logging.getLogger(name).removeHandler(self.records)


#: JavaScript: the first element with css class ``arguments[0]`` in the document or any shadow tree.
FIND_JS = """
const cls = arguments[0];
function find(root) {
  const hit = root.querySelector('.' + cls);
  if (hit) return hit;
  for (const el of root.querySelectorAll('*')) {
    if (el.shadowRoot) { const h = find(el.shadowRoot); if (h) return h; }
  }
  return null;
}
const el = find(document);
if (!el) return null;
const root = el.shadowRoot || el;
const parts = Array.from(root.children).filter(c => !['STYLE', 'LINK', 'SCRIPT'].includes(c.tagName));
return parts.map(c => c.innerText || '').join(' ');
"""

#: JavaScript: the ``data-`` attributes of the status line's ``.rmtfl-state`` element.
STATE_JS = FIND_JS.replace("const parts", "const s = root.querySelector('.rmtfl-state');"
                           "return s ? Object.assign({}, s.dataset) : {};\nconst parts")

_PAIR = re.compile(r"([A-Za-z_][\w]*)=(-?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|nan|-?inf)")


def read_values(driver, css: str = "rmtfl-prediction") -> dict:
    """The ``key=value`` pairs displayed by the read-out of class ``css`` (numbers as floats)."""
    text = driver.execute_script(FIND_JS, css) or ""
    return {k: float(v) for k, v in _PAIR.findall(text)}


def page_state(driver) -> dict:
    """``{"theory": "busy"|"idle"|"error", "simulation": ...}`` from the page's status line."""
    text = driver.execute_script(STATE_JS, "rmtfl-status")
    return text or {}


def driver_text(driver, css: str) -> str:
    """The text shown by the element of css class ``css`` (searched through the shadow trees)."""
    return (driver.execute_script(FIND_JS, css) or "").strip()


def message(driver) -> str:
    """The page's message line (bad input, faults)."""
    return driver_text(driver, "rmtfl-message")


#: JavaScript: the ``<input type=file>`` of the page's upload control (inside its shadow tree).
FILE_JS = FIND_JS.split("const el = find(document);")[0].replace("root.querySelector('.' + cls)",
                                                                  "root.querySelector(cls)") + \
    "return find(document);"


def file_input(driver):
    """The upload control's ``<input type=file>`` element (``send_keys(path)`` uploads a file)."""
    return driver.execute_script(FILE_JS, "input[type=file]")


def set_value(driver, name: str, value) -> None:
    """Set the control named ``name`` through the page's own Bokeh model (what typing into it does)."""
    driver.execute_script("const m = Bokeh.documents[0].get_model_by_name(arguments[0]);"
                          "if (!m) throw new Error('no control ' + arguments[0]); m.value = arguments[1];",
                          name, value)


def wait_for(predicate, timeout: float = 30.0, interval: float = 0.1, what: str = "the page"):
    """Poll ``predicate()`` until it returns a truthy value (returned); ``TimeoutError`` after ``timeout`` s."""
    t_end = time.monotonic() + timeout
    last = None
    while time.monotonic() < t_end:
        try:
            last = predicate()
        except Exception as exc:  # the page is still loading
            last = exc
        else:
            if last:
                return last
        time.sleep(interval)
    raise TimeoutError(f"waited {timeout} s for {what}; last: {last!r}")


def wait_idle(driver, timeout: float = 60.0) -> dict:
    """Wait until no stream of the page is busy and each has run once; the state."""
    def idle():
        st = page_state(driver)
        return st if st and all(v in ("idle", "error") for v in st.values()) else None
    return wait_for(idle, timeout, what="the page's runs to finish")


def console_errors(driver) -> list:
    """SEVERE entries of the browser console since the last call (Chromium's ``goog:loggingPrefs``)."""
    return [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]
