"""Runs carried between machines: ``attnlab store pack`` writes chosen runs (finished, or unfinished with their
checkpoints) into one ``.tar.gz``; ``attnlab store unpack`` adds them to another store, so that a paper-scale check
stopped by a GPU slice's deadline resumes on the next machine from where it stopped.

The archive holds ``pack.json`` (what it carries, from which commit) and each run's folder under
``runs/<experiment>/<run id>/``. Unpacking never follows a path outside the store: a member whose name is not of
that shape, a link or a device is refused before anything is written. A run the store already has finished and
intact is kept; an unfinished or corrupt one is replaced by the carried run when that one has progressed further
(finished, or a checkpoint where the store has none).
"""

from __future__ import annotations

import io
import json
import shutil
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

from attnlab.core.config import ConfigError
from attnlab.core.integrity import inspect
from attnlab.core.maintenance import RUN_ID, SAFE_NAME, row_of

SKIP = (".lock",)  # per-machine state, never carried
PACK = "pack.json"


def pack(store: Any, rows: list[dict[str, Any]], out: Path) -> dict[str, Any]:
    """Write the runs of ``rows`` (index rows of ``store``) into ``out`` (``.tar.gz``); what it holds."""
    from attnlab.core.runs import git_revision

    runs = []
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".part")
    with tarfile.open(tmp, "w:gz") as tar:
        for row in rows:
            d = store.dir_of(row)
            if not d.is_dir():
                continue
            for f in sorted(p for p in d.rglob("*") if p.is_file() and p.name not in SKIP):
                tar.add(f, arcname=f"runs/{row['experiment']}/{row['id']}/{f.relative_to(d).as_posix()}",
                        recursive=False)
            runs.append({"id": row["id"], "experiment": row["experiment"], "status": row["status"]})
        info = {"attnlab_pack": 1, "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "commit": git_revision(),
                "runs": runs}
        data = json.dumps(info, indent=1).encode()
        member = tarfile.TarInfo(PACK)
        member.size, member.mtime = len(data), int(time.time())
        tar.addfile(member, io.BytesIO(data))
    tmp.replace(out)
    return {**info, "bytes": out.stat().st_size}


def _safe_members(tar: tarfile.TarFile) -> list[tarfile.TarInfo]:
    members = []
    for m in tar.getmembers():
        if m.name == PACK:
            continue
        parts = m.name.split("/")
        if not (m.isfile() and len(parts) >= 4 and parts[0] == "runs" and SAFE_NAME.match(parts[1])
                and RUN_ID.match(parts[2]) and all(p not in ("", ".", "..") for p in parts[3:])):
            raise ConfigError(f"{m.name!r} in the archive is not a run's file (runs/EXPERIMENT/RUN_ID/FILE): "
                              "refused, nothing unpacked")
        members.append(m)
    return members


def unpack(store: Any, path: Path) -> list[tuple[str, str]]:
    """Add the runs of archive ``path`` to ``store``: [(run id, what happened)]."""
    try:
        tar = tarfile.open(path, "r:gz")  # noqa: SIM115 (closed by the `with tar` below)
    except (OSError, tarfile.TarError) as exc:
        raise ConfigError(f"{str(path)!r} is not a run archive of `attnlab store pack` ({exc})") from None
    with tar:
        try:
            info = json.load(tar.extractfile(PACK))  # type: ignore[arg-type]
        except (KeyError, ValueError, TypeError):
            raise ConfigError(f"{str(path)!r} has no readable {PACK}: not an archive of `attnlab store pack`") \
                from None
        members = _safe_members(tar)
        out = []
        store.root.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=store.root, prefix=".unpack-") as tmp:
            for m in members:
                target = Path(tmp) / m.name
                target.parent.mkdir(parents=True, exist_ok=True)
                with tar.extractfile(m) as src, open(target, "wb") as dst:  # type: ignore[union-attr]
                    shutil.copyfileobj(src, dst)
            for run in info.get("runs", []):
                incoming = Path(tmp) / "runs" / run["experiment"] / run["id"]
                if incoming.is_dir():
                    out.append((run["id"], _adopt(store, incoming, run["experiment"], run["id"])))
    return out


def _progress(d: Path) -> int:
    """2 finished and intact, 1 unfinished with a checkpoint, 0 otherwise (nothing, corrupt, failed)."""
    if not d.is_dir():
        return 0
    if inspect(d, None).ok and (d / "summary.json").exists():
        return 2
    return 1 if (d / "checkpoint.pt").exists() else 0


def _adopt(store: Any, incoming: Path, experiment: str, run_id: str) -> str:
    from attnlab.core.files import locked

    target = store.root / "runs" / experiment / run_id
    target.parent.mkdir(parents=True, exist_ok=True)
    with locked(target.parent / f".{run_id}.unpack.lock"):
        ours, theirs = _progress(target), _progress(incoming)
        if ours == 2:
            return "kept: the store has it finished"
        if theirs <= ours:
            return "kept: the store's copy has progressed as far"
        if target.exists():
            shutil.rmtree(target)
        shutil.move(str(incoming), target)
        row = row_of(target)
        if row is not None:
            store.index.put(row)
        return "added (finished)" if theirs == 2 else "added (unfinished: resumes from its checkpoint)"
