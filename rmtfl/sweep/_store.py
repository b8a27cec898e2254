"""The sweep result store: one SQLite file, safe under crashes and concurrent writers.

Layout (stdlib :mod:`sqlite3`, WAL journal, ``PRAGMA application_id =``
:data:`APPLICATION_ID`, ``PRAGMA user_version =`` :data:`SCHEMA_VERSION`)::

    results(key TEXT PRIMARY KEY,          -- task_key(experiment, version, params, seed, root)
            experiment, version, params,   -- params: canonical JSON of the grid point
            seed_index, root_seed, status,  -- status: 'ok' or 'error'
            metrics,                        -- JSON dict of scalars ('ok' rows)
            error, backend, seconds, finished)

Guarantees:

* **One transaction per finished task**, written by the driver as results
  arrive, so a ``kill -9`` loses at most the tasks still in flight.
* **No duplicates**: the key is the primary key; an ``'ok'`` row is never
  overwritten, an ``'error'`` row is replaced by a later success.  Two sweeps
  on one store (``busy_timeout`` 60 s) therefore neither corrupt it nor
  duplicate rows.
* **Foreign files are never touched**: before anything is written, the first
  16 bytes must be the SQLite header and the database must carry rmtfl's
  ``application_id`` (checked on a read-only connection).  Anything else —
  a text file, a truncated or corrupt database, somebody else's SQLite
  database, a newer schema — raises :class:`ValueError` and leaves the file
  byte-for-byte unchanged.  Only a missing or empty (0-byte) file is
  initialised.
* **Faults are one message naming the file**: an rmtfl store that SQLite
  cannot read, or whose ``PRAGMA quick_check`` (run on a read-only connection
  when the store is opened) is not ``ok``, raises :class:`StoreError` ("is
  damaged") and is left unchanged; a store that cannot be written (read-only
  file or folder, disk full, I/O error) raises :class:`StoreError` with
  SQLite's reason.  A store this call was creating is removed again when its
  creation fails, so a failed open leaves no file behind and changes none.
  A write that fails in the middle of a sweep keeps every row stored before it.

Examples
--------
>>> import tempfile, os
>>> path = os.path.join(tempfile.mkdtemp(), "demo.sqlite")
>>> with ResultStore(path) as st:
...     st.record(TaskResult("k1", "demo", "1", {"x": 1.0}, 0, 0, "ok", {"m": 2.5}))
...     st.record(TaskResult("k1", "demo", "1", {"x": 1.0}, 0, 0, "ok", {"m": 9.9}))
...     st.count(), st.finished_keys(["k1", "k2"])
True
False
(1, {'k1'})
>>> ResultStore(path).rows()[0]["m"]
2.5
"""
from __future__ import annotations

import json
import os
import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from rmtfl._results import Result

__all__ = ["ResultStore", "TaskResult", "StoreError", "APPLICATION_ID", "SCHEMA_VERSION", "to_table"]

#: ``PRAGMA application_id`` of rmtfl stores: the ASCII bytes ``"RMTF"``.
APPLICATION_ID = int.from_bytes(b"RMTF", "big")
#: ``PRAGMA user_version`` of the current layout.
SCHEMA_VERSION = 1
SQLITE_HEADER = b"SQLite format 3\x00"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS results (
    key TEXT PRIMARY KEY,
    experiment TEXT NOT NULL,
    version TEXT NOT NULL,
    params TEXT NOT NULL,
    seed_index INTEGER NOT NULL,
    root_seed INTEGER NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('ok', 'error')),
    metrics TEXT,
    error TEXT,
    backend TEXT,
    seconds REAL,
    finished REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS results_experiment ON results(experiment, version, status);
"""

_COLUMNS = ("key", "experiment", "version", "params", "seed_index", "root_seed", "status",
            "metrics", "error", "backend", "seconds", "finished")


@dataclass(frozen=True)
class TaskResult(Result):
    """One finished task as stored: ``status`` is ``'ok'`` (with ``metrics``) or ``'error'``."""

    key: str
    experiment: str
    version: str
    params: dict
    seed_index: int
    root_seed: int
    status: str
    metrics: dict = field(default_factory=dict)
    error: str | None = None
    backend: str = "numpy"
    seconds: float = 0.0


class StoreError(RuntimeError):
    """A fault of the store file itself (read-only, disk full, I/O error, damaged); the message names the file.

    Not a :class:`ValueError`: the arguments were fine, the file or the disk is not (the CLI's exit status 1).
    """


def _connect(*args, **kwargs):
    """``sqlite3.connect`` (one place, so that the tests can simulate a full disk or a read-only file)."""
    return sqlite3.connect(*args, **kwargs)


def _reason(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def _damaged(path, why: str) -> StoreError:
    why = " ".join(why.split())
    return StoreError(f"store {str(path)!r} is damaged ({why}); it was left unchanged — restore it from a copy, "
                      "or pass a new file name (finished tasks are then computed again)")


def _fault(path, doing: str, exc: BaseException, after: str = "") -> StoreError:
    """A :class:`StoreError` for an ``sqlite3``/``OS`` error while ``doing`` something with the store."""
    text = _reason(exc)
    if isinstance(exc, sqlite3.DatabaseError) and not isinstance(exc, sqlite3.OperationalError):
        return _damaged(path, text)  # "file is not a database", "database disk image is malformed"
    return StoreError(f"store {str(path)!r}: cannot {doing}: {text}{after}")


def _foreign(path: Path, why: str) -> ValueError:
    return ValueError(f"store {str(path)!r} is not an rmtfl sweep store ({why}); "
                      "it was left untouched — pass a new file name or delete it yourself")


def _check_existing(path: Path) -> None:
    """Raise ``ValueError`` unless ``path`` is missing, empty, or an rmtfl store (read-only checks)."""
    if not path.exists() or path.stat().st_size == 0:
        return
    if path.is_dir():
        raise ValueError(f"store {str(path)!r} is a directory, expected a file")
    with open(path, "rb") as fh:
        head = fh.read(100)
    if len(head) < 100 or head[:16] != SQLITE_HEADER:
        raise _foreign(path, "no SQLite header")
    app_id = int.from_bytes(head[68:72], "big")
    if app_id != APPLICATION_ID:
        raise _foreign(path, f"SQLite application_id is {app_id:#x}, expected {APPLICATION_ID:#x}")
    # read-only; ``immutable`` while no other connection has the store open (no -wal/-shm), so that
    # the check creates no -wal/-shm files next to a store it may refuse
    busy = any(Path(f"{path}{s}").exists() for s in ("-wal", "-shm"))
    uri = path.resolve().as_uri() + ("?mode=ro" if busy else "?immutable=1")
    try:
        con = _connect(uri, uri=True, timeout=60)
        try:
            version = con.execute("PRAGMA user_version").fetchone()[0]
            if version != SCHEMA_VERSION:
                raise _foreign(path, f"schema version {version}, this rmtfl reads {SCHEMA_VERSION}")
            cols = [r[1] for r in con.execute("PRAGMA table_info(results)")]
            if tuple(cols) != _COLUMNS:
                raise _foreign(path, f"unexpected results columns {cols}")
            # every page read once: a damaged page is found now, not halfway through a sweep
            problems = [r[0] for r in con.execute("PRAGMA quick_check(3)")]
            con.execute("SELECT count(*) FROM results").fetchone()
        finally:
            con.close()
    except sqlite3.Error as exc:  # rmtfl's application_id, yet SQLite cannot read it (or the disk cannot)
        raise _fault(path, "open it", exc, "; it was left unchanged") from None
    if problems != ["ok"]:
        raise _damaged(path, "PRAGMA quick_check: " + "; ".join(str(p) for p in problems))


def _retry_locked(fn, timeout: float):
    """Call ``fn`` again while SQLite reports a lock it did not wait for (up to ``timeout`` s).

    Switching a file to WAL mode needs an exclusive lock, and SQLite answers
    ``database is locked`` at once, without its busy handler, when two processes
    open a new store at the same moment; ``fn`` must be idempotent.
    """
    deadline = time.monotonic() + timeout
    delay = 0.005
    while True:
        try:
            return fn()
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(delay)
            delay = min(2 * delay, 0.25)


class ResultStore:
    """SQLite store of finished sweep tasks (see the module docstring for the guarantees).

    Parameters
    ----------
    path : str or Path
        The database file (created if missing; parent folders too); ``":memory:"`` keeps
        the rows in this process only.
    timeout : float
        Seconds a writer waits for a concurrent writer's lock (``busy_timeout``).
    """

    def __init__(self, path, *, timeout: float = 60.0):
        memory = str(path) == ":memory:"
        self.path = ":memory:" if memory else Path(path)
        self._con = None
        created, empty, sides = [], None, {}  # what this call creates (folders, the file): removed again if the open fails
        if not memory:
            sides = {s: Path(f"{self.path}{s}").exists() for s in ("-journal", "-wal", "-shm")}
            _check_existing(self.path)
            missing = [p for p in (self.path.parent, *self.path.parent.parents) if not p.exists()]
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise _fault(self.path, "create its folder", exc) from None
            created = missing[::-1]
            if not self.path.exists():
                created.append(self.path)
            empty = None if self.path in created else os.stat(self.path)
        try:
            self._con = _connect(str(self.path), timeout=timeout, isolation_level=None, check_same_thread=False)
            _retry_locked(self._init, timeout)
        except BaseException as exc:
            if self._con is not None:
                self._con.close()
                self._con = None
            if not memory:
                self._undo(created, empty, sides)
            if isinstance(exc, ValueError):
                raise
            if isinstance(exc, (sqlite3.Error, OSError)):
                doing = "create it" if self.path in created or (empty and not empty.st_size) else "open it for writing"
                raise _fault(self.path, doing, exc, "; nothing was changed") from None
            raise

    def _undo(self, created, empty, sides) -> None:
        """After a failed open: remove what it created (the file, its folders, an empty -wal and its -shm)
        and restore a 0-byte file."""
        path = self.path
        new = path in created or (empty is not None and empty.st_size == 0)
        wal = Path(f"{path}-wal")
        empty_wal = not wal.exists() or wal.stat().st_size == 0
        for suffix in ("-journal", "-wal", "-shm"):
            side = Path(f"{path}{suffix}")
            if side.exists() and not sides.get(suffix) and (new or (suffix != "-journal" and empty_wal)):
                try:
                    side.unlink()
                except OSError:
                    pass
        try:
            if empty is not None and empty.st_size == 0 and path.exists() and path.stat().st_size:
                os.truncate(path, 0)
                os.utime(path, ns=(empty.st_atime_ns, empty.st_mtime_ns))
            for p in created[::-1]:
                if p == path:
                    p.unlink(missing_ok=True)
                else:
                    p.rmdir()
        except OSError:
            pass

    def _guard(self, doing: str, fn, *args):
        """``fn(*args)`` with a SQLite fault turned into a :class:`StoreError` naming the file."""
        try:
            return fn(*args)
        except sqlite3.Error as exc:
            after = ("; every result stored before is kept — fix the cause and rerun the same command to resume"
                     if doing.startswith("write") else "")
            raise _fault(self.path, doing, exc, after) from None

    def _init(self) -> None:
        con = self._con
        con.execute(f"PRAGMA busy_timeout = {int(60_000)}")
        con.execute("BEGIN IMMEDIATE")
        try:
            app_id = con.execute("PRAGMA application_id").fetchone()[0]
            n_tables = con.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
            if app_id == 0 and n_tables == 0:  # a brand-new file (possibly a concurrent creator's)
                con.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                con.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
                for stmt in _SCHEMA.strip().split(";"):
                    if stmt.strip():
                        con.execute(stmt)
            elif app_id != APPLICATION_ID:
                raise _foreign(self.path, f"application_id {app_id:#x}")
            con.execute("COMMIT")
        except BaseException:
            try:
                con.execute("ROLLBACK")
            except sqlite3.Error:  # e.g. the COMMIT itself failed on a full disk: nothing to roll back
                pass
            raise
        mode = con.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if str(mode).lower() != "wal":  # e.g. a file system without shared memory
            con.execute("PRAGMA journal_mode = DELETE")
        con.execute("PRAGMA synchronous = NORMAL")

    # ------------------------------------------------------------------ writing
    def record(self, r: TaskResult) -> bool:
        """Store one finished task in its own transaction; ``True`` if the row was written.

        An existing ``'ok'`` row is kept (the first success wins); an existing
        ``'error'`` row is replaced by a new result.
        """
        if r.status not in ("ok", "error"):
            raise ValueError(f"status must be 'ok' or 'error', got {r.status!r}")
        from ._grid import canonical_params

        row = (r.key, r.experiment, str(r.version), canonical_params(r.params), int(r.seed_index),
               int(r.root_seed), r.status,
               json.dumps(r.metrics, sort_keys=True) if r.status == "ok" else None,
               r.error, r.backend, float(r.seconds), time.time())
        sql = (f"INSERT INTO results ({', '.join(_COLUMNS)}) VALUES ({', '.join('?' * len(_COLUMNS))}) "
               "ON CONFLICT(key) DO UPDATE SET status=excluded.status, metrics=excluded.metrics, "
               "error=excluded.error, backend=excluded.backend, seconds=excluded.seconds, "
               "finished=excluded.finished WHERE results.status != 'ok'")
        cur = self._guard("write a result", self._con.execute, sql, row)  # autocommit: one transaction per task
        return cur.rowcount > 0

    # ------------------------------------------------------------------ reading
    def _read(self, sql: str, args=()) -> list:
        return self._guard("read it", lambda: self._con.execute(sql, args).fetchall())

    def finished_keys(self, keys=None) -> set[str]:
        """Keys with an ``'ok'`` row (restricted to ``keys`` when given)."""
        rows = self._read("SELECT key FROM results WHERE status = 'ok'")
        done = {k for (k,) in rows}
        return done if keys is None else done & set(keys)

    def metrics_by_key(self, keys) -> dict:
        """``{key: metrics}`` for the ``'ok'`` rows among ``keys``."""
        want = set(keys)
        rows = self._read("SELECT key, metrics FROM results WHERE status = 'ok'")
        return {k: json.loads(m) for k, m in rows if k in want}

    def count(self, status: str | None = None) -> int:
        """Number of rows (of one ``status`` when given)."""
        if status is None:
            return self._read("SELECT count(*) FROM results")[0][0]
        return self._read("SELECT count(*) FROM results WHERE status = ?", (status,))[0][0]

    def rows(self, experiment: str | None = None, keys=None, status: str | None = "ok") -> list[dict]:
        """Flat dict per row: params, ``seed_index``, metrics, and bookkeeping columns."""
        sql, args = "SELECT * FROM results WHERE 1=1", []
        if experiment is not None:
            sql += " AND experiment = ?"
            args.append(experiment)
        if status is not None:
            sql += " AND status = ?"
            args.append(status)
        def run():
            cur = self._con.execute(sql + " ORDER BY finished, key", args)
            return [c[0] for c in cur.description], cur.fetchall()

        names, records = self._guard("read it", run)
        want = None if keys is None else set(keys)
        out = []
        for rec in records:
            d = dict(zip(names, rec))
            if want is not None and d["key"] not in want:
                continue
            flat = {"experiment": d["experiment"], "version": d["version"], **json.loads(d["params"]),
                    "seed_index": d["seed_index"], "root_seed": d["root_seed"], "status": d["status"]}
            flat.update(json.loads(d["metrics"]) if d["metrics"] else {})
            flat.update({"error": d["error"], "backend": d["backend"], "seconds": d["seconds"],
                         "key": d["key"]})
            out.append(flat)
        return out

    def table(self, experiment: str | None = None, status: str | None = "ok", *, pandas: bool | None = None):
        """Tidy table of the rows: a pandas DataFrame when pandas is installed, else a structured array."""
        return to_table(self.rows(experiment, status=status), pandas=pandas)

    def integrity_ok(self) -> bool:
        """``PRAGMA integrity_check`` returned ``ok``."""
        return self._read("PRAGMA integrity_check")[0][0] == "ok"

    def close(self) -> None:
        """Close the connection (idempotent)."""
        if self._con is not None:
            self._con.close()
            self._con = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):  # pragma: no cover - best effort
        try:
            self.close()
        except Exception:
            pass


def to_table(rows: list[dict], *, pandas: bool | None = None):
    """Rows (dicts) -> pandas DataFrame (if available and ``pandas`` is not False) or numpy structured array.

    Missing entries are NaN (numbers) or empty strings (text).
    """
    if pandas is not False:
        try:
            import pandas as pd
        except ImportError:
            if pandas:
                raise ValueError("pandas=True but pandas is not installed") from None
        else:
            return pd.DataFrame(rows)
    names = []
    for r in rows:
        names.extend(k for k in r if k not in names)
    dtypes = []
    for n in names:
        vals = [r.get(n) for r in rows]
        present = [v for v in vals if v is not None]
        if present and all(isinstance(v, (bool, np.bool_)) for v in present):
            dtypes.append((n, "?"))
        elif present and all(isinstance(v, (int, float, np.number)) and not isinstance(v, bool)
                             for v in present):
            dtypes.append((n, "i8" if all(isinstance(v, (int, np.integer)) for v in vals) else "f8"))
        else:
            width = max([len(str(v)) for v in present] + [1])
            dtypes.append((n, f"U{width}"))
    arr = np.zeros(len(rows), dtype=dtypes)
    for i, r in enumerate(rows):
        for n, dt in dtypes:
            v = r.get(n)
            if v is None:
                arr[n][i] = np.nan if dt == "f8" else (False if dt == "?" else "")
            else:
                arr[n][i] = v
    return arr

