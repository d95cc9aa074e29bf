"""Atomic files: every file of the run store is written to a temporary name and renamed into place.

The rename is atomic within a directory, so a reader sees the old file or the new one, never half of one. A
process killed mid-write leaves only its temporary ``.NAME.PID.TID.tmp`` file, which ``attnlab store gc`` removes.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

TMP_SUFFIX = ".tmp"


def atomic_write(path: Path, write: Callable[[Path], None]) -> None:
    """Call ``write(tmp)`` then rename ``tmp`` onto ``path`` (same directory, so the rename is atomic)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}{TMP_SUFFIX}")
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write(path, lambda p: p.write_text(text))


def atomic_write_json(path: Path, obj: Any) -> None:
    atomic_write_text(path, json.dumps(obj, indent=2, sort_keys=True, default=json_default) + "\n")


def json_default(o: Any) -> Any:
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, Path):
        return str(o)
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def savez(path: Path, arrays: dict[str, np.ndarray], compress: bool = True) -> None:
    """Named arrays to an ``.npz`` at ``path`` (compressed unless ``compress`` is False); wrap in atomic_write."""
    with open(path, "wb") as f:
        (np.savez_compressed if compress else np.savez)(f, **arrays)


def is_tmp(path: Path) -> bool:
    """A temporary file of :func:`atomic_write` (complete or not, never a result)."""
    return path.name.startswith(".") and path.name.endswith(TMP_SUFFIX)


def sha256(path: Path, chunk: int = 1 << 20) -> str:
    """Hex SHA-256 of a file's bytes, read in 1 MiB chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


def say(message: str) -> None:
    """One line on stderr for the user (a corrupt run recomputed, an index rebuilt): never a traceback."""
    print(" ".join(message.split()), file=sys.stderr, flush=True)


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """Exclusive flock on ``path``; released by the kernel if the process dies."""
    with open(path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def is_locked(path: Path) -> bool:
    """Whether a live process holds the flock on ``path`` (a missing file is held by nobody; none is created)."""
    try:
        with open(path) as f:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
            fcntl.flock(f, fcntl.LOCK_UN)
            return False
    except FileNotFoundError:
        return False
