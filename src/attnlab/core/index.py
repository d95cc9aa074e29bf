"""The SQLite index of the run store: one row per run with its status, attempts, timings, error and manifest.

WAL mode lets many processes (sweep workers, dask workers, the CLI) read while one writes; every write is a
single short ``BEGIN IMMEDIATE`` transaction and every connection waits up to ``$ATTNLAB_INDEX_TIMEOUT`` s (60)
for a lock.

The run directories are the source of truth; the index is a cache of them. An index that SQLite finds malformed
(truncated, overwritten: ``PRAGMA quick_check`` at open, or any error saying so later), one that stays locked past
the timeout (held by a hung process: no write of ours lasts that long), or one that is missing or empty while run
directories exist, is moved aside (``index.sqlite.corrupt-<time>``) and rebuilt from the run directories, with one
line on stderr saying so. Recovery is serialised between processes by an ``flock`` on ``.index.lock``.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sqlite3
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from attnlab.core.config import ConfigError
from attnlab.core.files import locked, say

STATUSES = ("queued", "running", "done", "failed", "interrupted")
COLUMNS = ("id", "experiment", "status", "run_dir", "config", "created", "started", "finished", "seconds", "pid",
           "host", "attempts", "completions", "error", "manifest")
_DAMAGE = ("malformed", "not a database", "file is encrypted", "locked", "no such table", "no such column")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY,
    experiment TEXT NOT NULL,
    status TEXT NOT NULL,
    run_dir TEXT NOT NULL,
    config TEXT NOT NULL,
    created REAL, started REAL, finished REAL, seconds REAL,
    pid INTEGER, host TEXT,
    attempts INTEGER NOT NULL DEFAULT 0,
    completions INTEGER NOT NULL DEFAULT 0,
    error TEXT,
    manifest TEXT
);
CREATE INDEX IF NOT EXISTS runs_experiment ON runs(experiment);
"""


class IndexUnusable(ConfigError):
    """The index cannot be opened or written for a reason rebuilding does not cure (permissions, a full disk)."""


class Index:
    """SQLite index of runs (WAL mode; every write is one short transaction; damage is repaired from ``scan``).

    ``scan()`` returns one row (a dict of :data:`COLUMNS`) per run directory; it rebuilds a damaged index.
    ``timeout``: seconds a connection waits for a lock (default ``$ATTNLAB_INDEX_TIMEOUT``, else 60).
    """

    def __init__(self, path: Path, scan: Callable[[], list[dict[str, Any]]] | None = None,
                 timeout: float | None = None) -> None:
        self.path = path
        self.scan = scan
        self.timeout = timeout if timeout is not None else float(os.environ.get("ATTNLAB_INDEX_TIMEOUT", "60"))
        path.parent.mkdir(parents=True, exist_ok=True)
        with self._recovery_lock():
            try:
                created = self._open()
            except sqlite3.DatabaseError as exc:
                if not _damaged(exc):
                    raise IndexUnusable(f"the run index {path} cannot be opened: {exc}") from None
                self._rebuild(f"is damaged ({_reason(exc)})")
                return
            rows = self.scan() if created and self.scan is not None else []
            if rows:
                self._insert(rows)
                say(f"warning: the run index {path} was missing or empty while {len(rows)} run directories exist; "
                    "rebuilt it from them")

    # -- opening, damage and recovery ------------------------------------------------------------------
    def _open(self) -> bool:
        """Check the file (quick_check), switch it to WAL, create or migrate the table; True if it was created."""
        with self._connect() as con:
            check = con.execute("PRAGMA quick_check(1)").fetchone()[0]
            if check != "ok":
                raise sqlite3.DatabaseError(f"database disk image is malformed ({check})")
            # Switching the journal mode takes an exclusive lock that the busy handler may not wait for, so it is
            # done once, by whoever finds the index not yet in WAL mode, retried until the timeout.
            deadline = time.monotonic() + self.timeout
            while True:
                try:
                    if con.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                        con.execute("PRAGMA journal_mode=WAL")
                    break
                except sqlite3.OperationalError as exc:
                    if "locked" not in str(exc) or time.monotonic() > deadline:
                        raise
                    time.sleep(0.1)
            tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            if "runs" not in tables:
                con.executescript(_SCHEMA)
                return True
            columns = {r[1] for r in con.execute("PRAGMA table_info(runs)")}
            if "manifest" not in columns:  # an index written before manifests existed
                con.execute("ALTER TABLE runs ADD COLUMN manifest TEXT")
            return False

    def _recovery_lock(self) -> contextlib.AbstractContextManager[None]:
        return locked(self.path.with_name(".index.lock"))

    def _recover(self, exc: sqlite3.DatabaseError) -> None:
        """Rebuild after ``exc``, unless another process replaced the file meanwhile."""
        before = _inode(self.path)
        with self._recovery_lock():
            if _inode(self.path) != before:
                return
            what = f"stayed locked for {self.timeout:g} s (held by another process)" if "locked" in str(exc) else \
                f"is damaged ({_reason(exc)})"
            self._rebuild(what)

    def _rebuild(self, what: str) -> None:
        backup, n = self._replace("corrupt")
        where = f"moved aside to {backup.name} and " if backup else ""
        say(f"warning: the run index {self.path} {what}; {where}rebuilt it from {n} run directories")

    def rebuild(self) -> tuple[Path | None, int]:
        """Move the index aside (``index.sqlite.bak-<time>``) and rebuild it from the run directories."""
        with self._recovery_lock():
            return self._replace("bak")

    def _replace(self, tag: str) -> tuple[Path | None, int]:
        backup = None
        if self.path.exists():
            backup = self.path.with_name(f"{self.path.name}.{tag}-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}")
            for suffix in ("", "-wal", "-shm"):  # a stale WAL must never be replayed into the new file
                with contextlib.suppress(FileNotFoundError):
                    os.replace(f"{self.path}{suffix}", f"{backup}{suffix}")
        self._open()
        rows = self.scan() if self.scan is not None else []
        self._insert(rows)
        return backup, len(rows)

    def _insert(self, rows: list[dict[str, Any]]) -> None:
        sql = f"INSERT INTO runs ({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))}) " \
              "ON CONFLICT(id) DO NOTHING"
        with self._connect() as con:
            con.execute("BEGIN IMMEDIATE")
            con.executemany(sql, [tuple(_cell(r.get(c)) for c in COLUMNS) for r in rows])
            con.execute("COMMIT")

    def put(self, row: dict[str, Any]) -> None:
        """Insert or replace one row (a run unpacked from another machine: its directory says what it is)."""
        sql = f"INSERT OR REPLACE INTO runs ({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))})"
        self._write(sql, tuple(_cell(row.get(c)) for c in COLUMNS))

    # -- access --------------------------------------------------------------------------------------
    @contextlib.contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        con = sqlite3.connect(self.path, timeout=self.timeout, isolation_level=None)
        try:
            con.execute(f"PRAGMA busy_timeout={int(self.timeout * 1000)}")
            con.row_factory = sqlite3.Row
            yield con
        finally:
            con.close()

    def _guarded(self, op: Callable[[sqlite3.Connection], Any], write: bool = False) -> Any:
        """Run ``op`` on a connection (in one transaction if ``write``); a damaged index is rebuilt, then retried."""
        for attempt in (0, 1):
            try:
                with self._connect() as con:
                    if not write:
                        return op(con)
                    con.execute("BEGIN IMMEDIATE")
                    out = op(con)
                    con.execute("COMMIT")
                    return out
            except sqlite3.DatabaseError as exc:
                if attempt or not _damaged(exc):
                    raise IndexUnusable(f"the run index {self.path}: {_reason(exc)}") from None
                self._recover(exc)
        raise AssertionError("unreachable")

    def _write(self, sql: str, args: tuple[Any, ...]) -> None:
        self._guarded(lambda con: con.execute(sql, args), write=True)

    def ensure(self, run_id: str, experiment: str, run_dir: Path, config: dict[str, Any], status: str) -> None:
        self._write(
            "INSERT INTO runs (id, experiment, status, run_dir, config, created) VALUES (?,?,?,?,?,?) "
            "ON CONFLICT(id) DO NOTHING",
            (run_id, experiment, status, str(run_dir), json.dumps(config, sort_keys=True), time.time()),
        )

    def start(self, run_id: str) -> None:
        self._write(
            "UPDATE runs SET status='running', started=?, finished=NULL, pid=?, host=?, error=NULL, manifest=NULL, "
            "attempts=attempts+1 WHERE id=?",
            (time.time(), os.getpid(), socket.gethostname(), run_id),
        )

    def finish(self, run_id: str, status: str, error: str | None = None,
               manifest: dict[str, Any] | None = None) -> None:
        assert status in STATUSES
        now = time.time()
        done = 1 if status == "done" else 0
        self._write(
            "UPDATE runs SET status=?, finished=?, seconds=?-COALESCE(started, ?), error=?, "
            "completions=completions+?, manifest=COALESCE(?, manifest) WHERE id=?",
            (status, now, now, now, error, done, _cell(manifest), run_id),
        )

    def seal(self, run_id: str, manifest: dict[str, Any]) -> None:
        """Record the manifest of a finished run (a legacy run sealed late, a sealed run whose "done" was lost)."""
        self._write("UPDATE runs SET status='done', manifest=? WHERE id=?", (_cell(manifest), run_id))

    def remove(self, run_id: str) -> None:
        self._write("DELETE FROM runs WHERE id=?", (run_id,))

    def get(self, run_id: str) -> dict[str, Any] | None:
        row = self._guarded(lambda con: con.execute("SELECT * FROM runs WHERE id=?", (run_id,)).fetchone())
        return dict(row) if row else None

    def rows(self, experiment: str | None = None, status: str | None = None) -> list[dict[str, Any]]:
        sql, args = "SELECT * FROM runs WHERE 1=1", []
        if experiment:
            sql, args = sql + " AND experiment=?", [*args, experiment]
        if status:
            sql, args = sql + " AND status=?", [*args, status]
        rows = self._guarded(lambda con: [dict(r) for r in con.execute(sql + " ORDER BY created", args)])
        for row in rows:
            _check_row(row, self.path)
        return rows

    def integrity(self) -> str:
        """SQLite's own ``PRAGMA integrity_check``: "ok" or its first complaint."""
        return self._guarded(lambda con: con.execute("PRAGMA integrity_check(1)").fetchone()[0])


_NUMERIC = ("created", "started", "finished", "seconds", "pid", "attempts", "completions")


def _check_row(row: dict[str, Any], path: Path) -> None:
    """A row SQLite accepted but attnlab never writes (text where a time belongs, an unknown status): one line that
    names the row and the cure, rather than a traceback from whichever command reads it first."""
    from attnlab.core.config import ConfigError

    bad = [c for c in _NUMERIC if row.get(c) is not None and not isinstance(row[c], int | float)]
    if row.get("status") not in STATUSES:
        bad.append("status")
    if bad:
        raise ConfigError(f"index {str(path)!r}: row {str(row.get('id'))[:40]!r} is not one attnlab wrote (bad "
                          f"{', '.join(bad)}); `attnlab store rebuild` recreates the index from the run folders "
                          "(the old index is kept as a backup)")


def _damaged(exc: sqlite3.DatabaseError) -> bool:
    return any(word in str(exc) for word in _DAMAGE)


def _reason(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:200]


def _inode(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
        return st.st_ino, st.st_dev
    except FileNotFoundError:
        return None


def _cell(value: Any) -> Any:
    return json.dumps(value, sort_keys=True) if isinstance(value, dict | list) else value
