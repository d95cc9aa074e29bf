"""The SQLite index of the run store: one row per run with its status, attempts, timings and error.

WAL mode lets many processes (sweep workers, dask workers, the CLI) read while one writes; every write is a
single short ``BEGIN IMMEDIATE`` transaction and every connection waits up to 60 s for a lock.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

STATUSES = ("queued", "running", "done", "failed", "interrupted")


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
    error TEXT
);
CREATE INDEX IF NOT EXISTS runs_experiment ON runs(experiment);
"""


class Index:
    """SQLite index of runs (WAL mode; every write is one short transaction)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        with self._connect() as con:
            # Switching the journal mode takes an exclusive lock that the busy handler does not wait for,
            # so it is done once, by whoever finds the index not yet in WAL mode, with a few retries.
            for attempt in range(50):
                try:
                    if con.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                        con.execute("PRAGMA journal_mode=WAL")
                    con.executescript(_SCHEMA)
                    break
                except sqlite3.OperationalError as exc:
                    if "locked" not in str(exc) or attempt == 49:
                        raise
                    time.sleep(0.1)

    @contextlib.contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        con = sqlite3.connect(self.path, timeout=60, isolation_level=None)
        try:
            con.execute("PRAGMA busy_timeout=60000")
            con.row_factory = sqlite3.Row
            yield con
        finally:
            con.close()

    def _write(self, sql: str, args: tuple[Any, ...]) -> None:
        with self._connect() as con:
            con.execute("BEGIN IMMEDIATE")
            con.execute(sql, args)
            con.execute("COMMIT")

    def ensure(self, run_id: str, experiment: str, run_dir: Path, config: dict[str, Any], status: str) -> None:
        self._write(
            "INSERT INTO runs (id, experiment, status, run_dir, config, created) VALUES (?,?,?,?,?,?) "
            "ON CONFLICT(id) DO NOTHING",
            (run_id, experiment, status, str(run_dir), json.dumps(config, sort_keys=True), time.time()),
        )

    def start(self, run_id: str) -> None:
        self._write(
            "UPDATE runs SET status='running', started=?, finished=NULL, pid=?, host=?, error=NULL, "
            "attempts=attempts+1 WHERE id=?",
            (time.time(), os.getpid(), socket.gethostname(), run_id),
        )

    def finish(self, run_id: str, status: str, error: str | None = None) -> None:
        assert status in STATUSES
        now = time.time()
        done = 1 if status == "done" else 0
        self._write(
            "UPDATE runs SET status=?, finished=?, seconds=?-COALESCE(started, ?), error=?, "
            "completions=completions+? WHERE id=?",
            (status, now, now, now, error, done, run_id),
        )

    def get(self, run_id: str) -> dict[str, Any] | None:
        with self._connect() as con:
            row = con.execute("SELECT * FROM runs WHERE id=?", (run_id,)).fetchone()
        return dict(row) if row else None

    def rows(self, experiment: str | None = None, status: str | None = None) -> list[dict[str, Any]]:
        sql, args = "SELECT * FROM runs WHERE 1=1", []
        if experiment:
            sql, args = sql + " AND experiment=?", [*args, experiment]
        if status:
            sql, args = sql + " AND status=?", [*args, status]
        with self._connect() as con:
            return [dict(r) for r in con.execute(sql + " ORDER BY created", args)]
