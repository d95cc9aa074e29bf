"""Run-store maintenance behind ``attnlab store``: rows from run directories, selection, removal, garbage.

The run directories are the source of truth: :func:`scan_runs` reads each one's own account of itself
(``config.json``, ``manifest.json``, its lock, ``log.txt``) into an index row, which is how a damaged or lost index
is rebuilt. :func:`select` filters the index by study, experiment, status (including "corrupt") and age;
:func:`remove` deletes runs (never one that is running); :func:`garbage` finds what ``gc`` deletes.
"""

from __future__ import annotations

import json
import re
import shutil
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from attnlab.core.config import ConfigError
from attnlab.core.files import is_locked, is_tmp
from attnlab.core.index import STATUSES
from attnlab.core.integrity import MANIFEST, Check, inspect, read_manifest

DAY = 86400.0
_AGE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*$")
_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": DAY, "w": 7 * DAY, "": DAY}
_LOG_MARK = re.compile(r"^\S+ \S+ (start |done$|failed:|interrupted)")
SAFE_NAME = re.compile(r"^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$")
RUN_ID = re.compile(r"^[0-9a-f]{16}$")


# -- rows from run directories ----------------------------------------------------------------------
def scan_runs(root: Path) -> list[dict[str, Any]]:
    """One index row per run directory under ``root/runs`` that ever started (has a ``config.json``)."""
    rows = []
    for d in sorted((root / "runs").glob("*/*")):
        if d.is_dir() and SAFE_NAME.match(d.parent.name) and RUN_ID.match(d.name):
            row = row_of(d)
            if row is not None:
                rows.append(row)
    return rows


def row_of(d: Path) -> dict[str, Any] | None:
    """The index row a run directory implies; None when it never started."""
    config_file = d / "config.json"
    if not config_file.exists():
        return None
    try:
        meta = json.loads(config_file.read_text())
        meta = meta if isinstance(meta, dict) else {}
    except (OSError, ValueError):
        meta = {}  # kept: its manifest (if any) says it is corrupt, and a rerun rewrites it
    manifest, _ = read_manifest(d)
    marks = _log_marks(d / "log.txt")
    row: dict[str, Any] = {
        "id": d.name, "experiment": d.parent.name, "run_dir": str(d), "config": meta.get("config", {}),
        "created": _timestamp(meta.get("created")) or config_file.stat().st_mtime,
        "attempts": sum(m.startswith("start") for m, _ in marks),
        "completions": sum(m == "done" for m, _ in marks), "manifest": manifest,
    }
    if manifest is not None:
        row.update(status="done", finished=manifest.get("sealed"), seconds=manifest.get("seconds"),
                   started=manifest.get("started"))
    elif is_locked(d / ".lock"):
        row["status"] = "running"
    elif (d / "summary.json").exists() and not (d / "checkpoint.pt").exists():
        row["status"] = "done"  # finished before manifests existed; checked for structure when used
    elif marks and marks[-1][0] == "failed:":
        row.update(status="failed", error=marks[-1][1])
    else:
        row.update(status="interrupted", error="found unfinished when the index was rebuilt")
    return row


def _log_marks(path: Path) -> list[tuple[str, str]]:
    """(mark, text after it) of each start / done / failed / interrupted line of a run's log."""
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return []
    marks = []
    for i, line in enumerate(lines):
        m = _LOG_MARK.match(line)
        if m:
            marks.append((m.group(1), "\n".join(lines[i + 1:]).strip() if m.group(1) == "failed:" else ""))
    return marks


def _timestamp(text: Any) -> float | None:
    try:
        return datetime.strptime(str(text), "%Y-%m-%dT%H:%M:%S%z").timestamp()
    except ValueError:
        return None


# -- selection ------------------------------------------------------------------------------------
def parse_age(text: str, option: str) -> float:
    """``"7d"``, ``"12h"``, ``"30m"``, ``"90s"``, ``"2w"`` or a number of days → seconds."""
    m = _AGE.match(text)
    if not m:
        raise ConfigError(f"{option} {text!r}: expected an age such as 7d, 12h, 30m or a number of days")
    return float(m.group(1)) * _UNITS[m.group(2)]


@dataclass(frozen=True)
class Selection:
    study: str | None = None
    experiment: str | None = None
    status: str | None = None
    older_than: float | None = None  # seconds
    newer_than: float | None = None

    def __post_init__(self) -> None:
        allowed = (*STATUSES, "corrupt")
        if self.status is not None and self.status not in allowed:
            raise ConfigError(f"--status {self.status!r} is not allowed; allowed: {', '.join(allowed)}")

    @property
    def empty(self) -> bool:
        return all(v is None for v in (self.study, self.experiment, self.status, self.older_than, self.newer_than))


def select(store: Any, sel: Selection, ids: list[str] | None = None, deep: bool = False
           ) -> list[tuple[dict[str, Any], Check]]:
    """Index rows (with their integrity check) matching ``sel`` and, if given, ``ids`` (full ids or prefixes)."""
    now = time.time()
    out = []
    for row in store.rows():
        if ids and not any(row["id"].startswith(i) for i in ids):
            continue
        if sel.study and row["experiment"].split(".", 1)[0] != sel.study:
            continue
        if sel.experiment and row["experiment"] != sel.experiment:
            continue
        age = now - (row["created"] or now)
        if sel.older_than is not None and age < sel.older_than:
            continue
        if sel.newer_than is not None and age > sel.newer_than:
            continue
        check = inspect(store.dir_of(row), row, deep) if row["status"] == "done" else Check("unfinished")
        status = "corrupt" if check.state == "corrupt" else row["status"]
        if sel.status and status != sel.status:
            continue
        out.append((row, check))
    return out


# -- removal --------------------------------------------------------------------------------------
def remove(store: Any, row: dict[str, Any], dry_run: bool = False) -> str | None:
    """Delete a run's directory and index row; the reason it was kept (it is running) or None."""
    d = store.dir_of(row)
    if is_locked(d / ".lock"):
        return "it is running (stop it first)"
    if not dry_run:
        shutil.rmtree(d, ignore_errors=True)
        store.index.remove(row["id"])
    return None


@dataclass
class Garbage:
    path: Path
    what: str
    bytes: int
    row: dict[str, Any] | None = None  # a run to remove (with its index row) rather than a file


def garbage(store: Any, older_than: float, tmp_age: float = 600.0) -> list[Garbage]:
    """What ``gc`` removes: interrupted and failed runs older than ``older_than`` seconds, temporary files of killed
    writes, checkpoints left in sealed runs, run directories that never started, index rows without a directory,
    and moved-aside indexes older than ``older_than``."""
    now, root = time.time(), store.root
    out: list[Garbage] = []
    rows = {r["id"]: r for r in store.rows()}
    for row in rows.values():
        d = store.dir_of(row)
        if not d.exists() and row["status"] not in ("queued", "running"):
            out.append(Garbage(d, f"index row of {row['experiment']} {row['id']} without a directory", 0, row))
        elif row["status"] in ("interrupted", "failed") and \
                now - (row["finished"] or row["created"] or now) > older_than:
            out.append(Garbage(d, f"{row['status']} run {row['experiment']} {row['id']}", _size(d), row))
    doomed = {g.path for g in out}
    for d in sorted((root / "runs").glob("*/*")):
        if not d.is_dir() or d in doomed:
            continue
        running = is_locked(d / ".lock")
        for f in d.rglob("*"):
            if f.is_file() and is_tmp(f) and not running:
                out.append(Garbage(f, "temporary file of a killed write", f.stat().st_size))
        if (d / MANIFEST).exists() and not running:
            out += [Garbage(d / n, f"{n} left in a finished run", (d / n).stat().st_size)
                    for n in ("checkpoint.pt", "live.npz") if (d / n).exists()]
        if not (d / "config.json").exists() and not running and d.name not in rows and \
                now - d.stat().st_mtime > older_than:
            out.append(Garbage(d, "run directory that never started", _size(d)))
    for f in (p for sub in ("sweeps", "claims") for p in (root / sub).rglob("*")):
        if f.is_file() and is_tmp(f) and now - f.stat().st_mtime > tmp_age:
            out.append(Garbage(f, "temporary file of a killed write", f.stat().st_size))
    for f in root.glob("index.sqlite.*-*"):
        if f.is_file() and now - f.stat().st_mtime > older_than:
            out.append(Garbage(f, "moved-aside index", f.stat().st_size))
    return out


def collect(store: Any, item: Garbage) -> None:
    """Remove one :class:`Garbage` item."""
    if item.row is not None:
        if remove(store, item.row) is None:
            return
    elif item.path.is_dir():
        shutil.rmtree(item.path, ignore_errors=True)
    else:
        item.path.unlink(missing_ok=True)


def _size(d: Path) -> int:
    return sum(f.stat().st_size for f in d.rglob("*") if f.is_file()) if d.exists() else 0
