"""Recompute off the page's thread: worker threads, stale runs cancelled, a progress text.

A page owns one :class:`Jobs` per kind of work (``"theory"``, ``"simulation"``).  :meth:`Jobs.submit`
bumps a generation counter, sets the cancel flag of the run before it and hands ``work(cancel)`` to a
one-thread :class:`concurrent.futures.ThreadPoolExecutor`; ``work`` checks ``cancel`` between its chunks
(:func:`checkpoint` raises :class:`Cancelled`).  When it ends, the result comes back to the document's
own thread with ``doc.add_next_tick_callback`` (the one Bokeh document method that is safe to call from
another thread) and is drawn only if no newer run was submitted meanwhile.  Bad input (``ValueError`` /
``TypeError``, whose message names the parameter) becomes a message on the page; any other fault is a
one-line message too, logged on the server without a traceback to the page.

Runs use single-threaded BLAS (:func:`rmtfl._threads.blas_threads`, held while any run is in flight):
the streams of a page run side by side, and on a busy machine a 2-thread OpenBLAS SVD stalls (a
500 x 1000 SVD took 10.6 s with 2 threads and 0.09 s with 1 on a loaded 2-core machine).  It also
gives the numbers of the sweep engine, which pins 1 thread too.
"""
from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from functools import partial

__all__ = ["Jobs", "Cancelled", "checkpoint", "describe_error"]

log = logging.getLogger("rmtfl.explore")


_BLAS = {"lock": threading.Lock(), "users": 0, "ctx": None}


def _blas_enter() -> None:
    from rmtfl._threads import blas_threads

    with _BLAS["lock"]:
        if _BLAS["users"] == 0:
            _BLAS["ctx"] = blas_threads(1)
            _BLAS["ctx"].__enter__()
        _BLAS["users"] += 1


def _blas_exit() -> None:
    with _BLAS["lock"]:
        _BLAS["users"] -= 1
        if _BLAS["users"] == 0 and _BLAS["ctx"] is not None:
            _BLAS["ctx"].__exit__(None, None, None)
            _BLAS["ctx"] = None


class Cancelled(Exception):
    """A newer control change made this run stale."""


def checkpoint(cancel) -> None:
    """Raise :class:`Cancelled` once ``cancel`` (a :class:`threading.Event` or None) is set (call it between chunks)."""
    if cancel is not None and cancel.is_set():
        raise Cancelled


def describe_error(exc: BaseException) -> str:
    """The one line a page shows for ``exc``."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    if isinstance(exc, (ValueError, TypeError)):
        return f"bad input: {text}"
    if isinstance(exc, MemoryError):
        return f"out of memory: {text} (choose smaller sizes)"
    return f"error: {type(exc).__name__}: {text}"


class Jobs:
    """One stream of recomputations for one page (see the module docstring).

    Parameters
    ----------
    doc : bokeh.document.Document
        The page's document (results are applied on its thread).
    status : callable(str, str)
        ``status(kind, text)`` shows progress (``kind="busy"``), an error (``"error"``) or clears (``"idle"``).
    name : str
        What the stream computes (``"simulation"``), used in the progress text.
    """

    def __init__(self, doc, status, name: str):
        self.doc, self.status, self.name = doc, status, name
        self.generation = 0
        self.seconds = None            # duration of the last completed run
        self._cancel = threading.Event()
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"rmtfl-explore-{name}")

    def submit(self, work, apply) -> int:
        """Run ``work(cancel)`` in the worker; ``apply(result)`` on the page if still current; the generation."""
        self._cancel.set()                        # the running run (if any) stops at its next checkpoint
        self._cancel = cancel = threading.Event()
        self.generation += 1
        gen = self.generation
        self.status("busy", f"computing the {self.name}…")
        future = self._pool.submit(self._run, work, cancel)
        future.add_done_callback(lambda f: self._schedule(partial(self._finish, gen, f, apply)))
        return gen

    def _schedule(self, callback) -> None:
        try:
            self.doc.add_next_tick_callback(callback)
        except Exception:  # the session closed meanwhile: nothing to draw on
            pass

    @staticmethod
    def _run(work, cancel):
        checkpoint(cancel)  # a queued run made stale before it started ends here
        t0 = time.perf_counter()
        _blas_enter()
        try:
            result = work(cancel)
        finally:
            _blas_exit()
        return result, time.perf_counter() - t0

    def _finish(self, gen, future, apply) -> None:
        if gen != self.generation:
            return  # a newer run was submitted: this one is stale
        exc = future.exception()
        if isinstance(exc, Cancelled):
            return
        if exc is not None:
            if not isinstance(exc, (ValueError, TypeError)):
                log.warning("rmtfl explore: %s failed: %s", self.name, describe_error(exc))
            self.status("error", describe_error(exc))
            return
        result, self.seconds = future.result()
        try:
            apply(result)
        except Exception as err:  # drawing failed: say so on the page, keep the server quiet
            log.warning("rmtfl explore: drawing the %s failed: %s", self.name, describe_error(err))
            self.status("error", describe_error(err))
            return
        self.status("idle", f"{self.name}: {self.seconds * 1000:.0f} ms")

    def shutdown(self) -> None:
        """Cancel the running run and release the worker (when the session closes)."""
        self._cancel.set()
        self._pool.shutdown(wait=False, cancel_futures=True)
