"""What every explore page shares: its text, the message and progress lines, the prediction read-out, inputs.

A page is a Bokeh layout built by :class:`Page`: a header (what you see, the formula, the lesson it
belongs to), a row of controls, a status line (``name="status"``, class ``rmtfl-status``: a spinner
while a run is in flight, the last run's duration after), a message line (``name="message"``, class
``rmtfl-message``: bad input and faults, never a traceback), and two read-outs whose text is
machine-readable ``key=value`` pairs (also ``data-key="value"`` attributes):
``name="prediction"`` / class ``rmtfl-prediction`` (the theory) and ``name="measured"`` / class
``rmtfl-measured`` (the simulation).
"""
from __future__ import annotations

import html
import math
from pathlib import Path

__all__ = ["Page", "values_html", "check_int", "check_float", "LESSONS", "lesson_link", "SPINNER_CSS"]

#: The lessons folder of a source checkout (served at ``/lessons/`` when it exists).
LESSONS = Path(__file__).resolve().parents[2] / "docs" / "tutorials"

SPINNER_CSS = ("<style>.rmtfl-spin{display:inline-block;width:0.8em;height:0.8em;border:2px solid #bbb;"
               "border-top-color:#1f77b4;border-radius:50%;animation:rmtfl-rot 0.8s linear infinite;"
               "vertical-align:middle;margin-right:0.4em}@keyframes rmtfl-rot{to{transform:rotate(360deg)}}</style>")


def lesson_link(name: str) -> str:
    """An HTML link to the lesson ``docs/tutorials/NAME`` (served at ``/lessons/NAME``)."""
    label = f"docs/tutorials/{name}"
    if (LESSONS / name).is_file():
        return f'<a href="/lessons/{html.escape(name)}" target="_blank">{label}</a>'
    return f"<code>{label}</code>"


def _fmt(v) -> str:
    if isinstance(v, bool):
        return str(int(v))
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return "nan" if math.isnan(v) else f"{v:.10g}"
    return html.escape(str(v))


def values_html(values: dict, *, labels: dict | None = None) -> str:
    """``values`` as ``key=value`` pairs, each in its own ``<code>``, all keys also as ``data-`` attributes."""
    labels = labels or {}
    attrs = " ".join(f'data-{k.replace("_", "-")}="{_fmt(v)}"' for k, v in values.items())
    items = " ".join(f'<code title="{html.escape(labels.get(k, k))}">{k}={_fmt(v)}</code>' for k, v in values.items())
    return f'<span class="rmtfl-values" {attrs}>{items}</span>'


def check_int(name: str, value, lo: int, hi: int) -> int:
    """``value`` as an int in ``[lo, hi]``, or ``ValueError`` naming ``name`` and the range."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be an integer in [{lo}, {hi}], got {value!r}") from None
    if not math.isfinite(v) or v != int(v) or not lo <= v <= hi:
        raise ValueError(f"{name} must be an integer in [{lo}, {hi}], got {value!r}")
    return int(v)


def check_float(name: str, value, lo: float, hi: float, *, open_hi: bool = False) -> float:
    """``value`` as a finite float in ``[lo, hi]`` (``[lo, hi)`` with ``open_hi``), or ``ValueError``."""
    rng = f"[{lo}, {hi}{')' if open_hi else ']'}"
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number in {rng}, got {value!r}") from None
    if not math.isfinite(v) or v < lo or v > hi or (open_hi and v >= hi):
        raise ValueError(f"{name} must be a number in {rng}, got {value!r}")
    return v


class Page:
    """The frame of one page: header, controls, status, message and read-outs (see the module docstring)."""

    def __init__(self, doc, *, title: str, text: str, formula: str, lesson: str, width: int = 1100):
        from bokeh.models import Div

        self.doc = doc
        doc.title = f"rmtfl explore — {title}"
        self.header = Div(text=(f'<h2 style="margin:0.2em 0">{html.escape(title)}</h2>'
                                f'<p style="margin:0.2em 0">{text}</p>'
                                f'<p style="margin:0.2em 0">Formula: {formula}</p>'
                                f'<p style="margin:0.2em 0">Lesson: {lesson_link(lesson)} · '
                                f'<a href="/">all pages</a></p>'),
                          width=width, name="header")
        self.status_div = Div(text="", name="status", css_classes=["rmtfl-status"], width=width)
        self.message = Div(text="", name="message", css_classes=["rmtfl-message"], width=width,
                           styles={"color": "#b00020"})
        self.prediction = Div(text="", name="prediction", css_classes=["rmtfl-prediction"], width=width)
        self.measured = Div(text="", name="measured", css_classes=["rmtfl-measured"], width=width)
        self._states = {}

    def status(self, stream: str):
        """A ``status(kind, text)`` callback for the stream ``stream`` (see :class:`~rmtfl.explore._jobs.Jobs`)."""
        def update(kind: str, text: str) -> None:
            self._states[stream] = (kind, text)
            if kind == "error":
                self.message.text = html.escape(text)
            elif kind == "idle" and not any(k == "error" for k, _ in self._states.values()):
                self.message.text = ""
            self._draw_status()
        return update

    def _draw_status(self) -> None:
        attrs = " ".join(f'data-{s}="{k}"' for s, (k, _) in self._states.items())
        parts = []
        for stream, (kind, text) in self._states.items():
            spin = '<span class="rmtfl-spin"></span>' if kind == "busy" else ""
            parts.append(f"{spin}{html.escape(text if kind != 'error' else stream + ': failed')}")
        self.status_div.text = f'{SPINNER_CSS}<span class="rmtfl-state" {attrs}>{" · ".join(parts)}</span>'

    def bad_input(self, exc: BaseException) -> None:
        """Show ``exc`` (a refused control value) as the page's message; nothing is recomputed."""
        from ._jobs import describe_error

        self.message.text = html.escape(describe_error(exc))

    def clear_message(self) -> None:
        self._states = {s: v for s, v in self._states.items() if v[0] != "error"}
        self.message.text = ""

    def run(self, controls: dict, make_params, submit, plots, jobs) -> None:
        """Lay the page out and recompute on every control change.

        ``make_params(**values)`` checks the controls' values (a ``ValueError`` is shown on the page and nothing
        runs); ``submit(p)`` starts the work for the checked parameters; ``jobs`` are shut down with the session.
        """
        def refresh():
            try:
                p = make_params(**{k: c.value for k, c in controls.items()})
            except ValueError as exc:
                self.bad_input(exc)
                return
            self.clear_message()
            submit(p)

        for c in controls.values():
            c.on_change("value", lambda attr, old, new: refresh())
        self.doc.add_root(self.layout(list(controls.values()), plots))
        self.doc.on_session_destroyed(lambda ctx: [j.shutdown() for j in jobs])
        refresh()

    def layout(self, controls, plots):
        """The page: header, controls, status, message, read-outs, plots."""
        from bokeh.layouts import column, row
        from bokeh.models import Div

        return column(self.header, row(*controls), self.status_div, self.message,
                      row(Div(text="<b>prediction</b>", width=90), self.prediction),
                      row(Div(text="<b>simulation</b>", width=90), self.measured),
                      row(*plots), name="page")
