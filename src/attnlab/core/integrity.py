"""Integrity of finished runs: a SHA-256 manifest sealed at completion, checked before a run is reused.

When a run finishes, :func:`seal` writes ``manifest.json`` into its directory: the size and SHA-256 of every
result file (config, metrics, arrays, summary, figures; not the log, the lock, a checkpoint or a live snapshot).
The run store keeps the same manifest in its index. :func:`inspect` compares the files with both copies, the way
``git fsck`` compares objects with their hashes: a file that is missing, truncated or altered makes the run
"corrupt", and a corrupt run is never reused (the store recomputes it and says so in one line).

Runs finished before manifests existed ("legacy") carry none; they are checked for structure instead (JSON that
parses, an ``.npz`` whose every member passes its zip CRC, a Parquet file that reads, PNGs that end) and sealed
when they pass.
"""

from __future__ import annotations

import json
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from attnlab.core.files import atomic_write_json, is_tmp, sha256

MANIFEST = "manifest.json"
#: files of a run directory that are not results: never sealed, never checked
UNSEALED = frozenset({MANIFEST, "log.txt", ".lock", "checkpoint.pt", "live.npz"})
STATES = ("sealed", "legacy", "unfinished", "corrupt")


@dataclass
class Check:
    """What :func:`inspect` found: ``state`` is one of :data:`STATES`; ``problems`` says why a run is corrupt."""

    state: str
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.state in ("sealed", "legacy")

    def line(self, limit: int = 3) -> str:
        """The problems in one line (the first ``limit``, then how many more)."""
        more = f" (and {len(self.problems) - limit} more)" if len(self.problems) > limit else ""
        return "; ".join(self.problems[:limit]) + more


def result_files(run_dir: Path) -> list[Path]:
    """Every result file under ``run_dir`` (sorted), i.e. what a manifest seals."""
    return sorted(p for p in run_dir.rglob("*") if p.is_file() and p.relative_to(run_dir).as_posix() not in UNSEALED
                  and not is_tmp(p) and not p.name.startswith("."))


def seal(run_dir: Path, **info: Any) -> dict[str, Any]:
    """Write ``manifest.json`` (size and SHA-256 of every result file, plus ``info``) and return it."""
    files = {p.relative_to(run_dir).as_posix(): {"size": p.stat().st_size, "sha256": sha256(p)}
             for p in result_files(run_dir)}
    manifest = {"format": 1, "algorithm": "sha256", "sealed": time.time(), **info, "files": files}
    atomic_write_json(run_dir / MANIFEST, manifest)
    return manifest


def read_manifest(run_dir: Path) -> tuple[dict[str, Any] | None, str | None]:
    """``(manifest, None)``, ``(None, None)`` when there is none, or ``(None, problem)`` when it is unreadable."""
    path = run_dir / MANIFEST
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return None, None
    except (OSError, ValueError) as exc:
        return None, f"{MANIFEST} is unreadable ({type(exc).__name__})"
    if not isinstance(data, dict) or not isinstance(data.get("files"), dict):
        return None, f"{MANIFEST} has no file list"
    return data, None


def verify(run_dir: Path, expected: dict[str, Any] | None = None, deep: bool = True) -> list[str]:
    """Problems of a sealed run: its files against the index's manifest ``expected`` (else its own), and the two
    manifests against each other. ``deep=False`` checks presence and sizes only (no hashing)."""
    own, problem = read_manifest(run_dir)
    problems = [problem] if problem else []
    if own is None and expected is None:
        return problems or [f"{MANIFEST} missing"]
    if own is None and not problem:
        problems.append(f"{MANIFEST} missing")
    if own is not None and expected is not None and own["files"] != expected.get("files"):
        problems.append(f"{MANIFEST} differs from the index's copy")
    files = (expected if expected is not None else own)["files"]
    if "summary.json" not in files:
        problems.append("summary.json is not in the manifest")
    for name, entry in sorted(files.items()):
        problems += _file_problems(run_dir / name, name, entry, deep)
    return problems


def _file_problems(path: Path, name: str, entry: dict[str, Any], deep: bool) -> list[str]:
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return [f"{name} missing"]
    want = int(entry.get("size", -1))
    if size < want:
        return [f"{name} truncated ({size} of {want} bytes)"]
    if size != want:
        return [f"{name} has {size} bytes, {want} expected"]
    if deep and sha256(path) != entry.get("sha256"):
        return [f"{name} does not match its SHA-256"]
    return []


def structural(run_dir: Path, deep: bool = True) -> list[str]:
    """Problems of a legacy (unsealed) finished run: each result file must parse as what its name says."""
    problems = []
    for name in ("config.json", "summary.json"):
        try:
            if not isinstance(json.loads((run_dir / name).read_text()), dict):
                problems.append(f"{name} is not a JSON object")
        except FileNotFoundError:
            problems.append(f"{name} missing")
        except (OSError, ValueError) as exc:
            problems.append(f"{name} is unreadable ({type(exc).__name__})")
    if not deep:
        return problems
    for path in result_files(run_dir):
        name = path.relative_to(run_dir).as_posix()
        try:
            _check_format(path)
        except Exception as exc:  # any reader error means the file is damaged
            problems.append(f"{name} is damaged ({type(exc).__name__})")
    return problems


def _check_format(path: Path) -> None:
    if path.suffix == ".npz":
        with zipfile.ZipFile(path) as z:
            bad = z.testzip()  # reads every member and checks its CRC-32
        if bad is not None:
            raise zipfile.BadZipFile(bad)
    elif path.suffix == ".parquet":
        import pyarrow.parquet as pq

        pq.read_table(path)
    elif path.suffix == ".png" and not path.read_bytes().endswith(b"IEND\xaeB`\x82"):
        raise ValueError("no IEND chunk")


def inspect(run_dir: Path, row: dict[str, Any] | None, deep: bool = True) -> Check:
    """The state of a run directory given its index row (or None): sealed, legacy, unfinished or corrupt."""
    expected = None
    if row and row.get("manifest"):
        try:
            expected = json.loads(row["manifest"])
        except ValueError:
            return Check("corrupt", ["the index's manifest is unreadable"])
    if expected is not None or (run_dir / MANIFEST).exists():
        problems = verify(run_dir, expected, deep)
        return Check("corrupt" if problems else "sealed", problems)
    if row is not None and row.get("status") == "done":
        problems = structural(run_dir, deep)
        return Check("corrupt" if problems else "legacy", problems)
    return Check("unfinished")
