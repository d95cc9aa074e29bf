"""The sandbox's only door to the run store: runs by id from the index, their arrays, and the study views.

A client names a run by its 16-hex-digit id and nothing else; the directory is ``<root>/runs/<experiment>/<id>``
built from the index row (the experiment must be a registered one), so no path from a request reaches the
filesystem. A finished run is read from ``arrays.npz`` + ``summary.json``; a run that is still training (or was
stopped) from the ``live.npz`` its experiment publishes (``RunContext.publish``). Views are cached per
(run, file version); frame figures, which depend only on one snapshot's parameters, per (run, variant, frame,
panel), so a live run that grows keeps the frames already drawn.
"""

from __future__ import annotations

import json
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from attnlab.core.config import ConfigError
from attnlab.core.registry import get
from attnlab.core.runs import LIVE_FILE, RunStore
from attnlab.sandbox.plugin import View, plugin_for

RUN_ID = re.compile(r"^[0-9a-f]{16}$")


class NotFound(LookupError):
    """No such run (or nothing to show yet); the message is one line for the user."""


@dataclass
class Opened:
    run_id: str
    experiment: str
    live: bool
    version: tuple[str, int]
    view: View


class _LRU(OrderedDict):
    def __init__(self, size: int) -> None:
        super().__init__()
        self.size = size

    def put(self, key: Any, value: Any) -> None:
        self[key] = value
        self.move_to_end(key)
        while len(self) > self.size:
            self.popitem(last=False)


class RunReader:
    """Read-only access to a run store's runs for the sandbox (thread-safe)."""

    def __init__(self, store: RunStore, views: int = 8, frames: int = 4000) -> None:
        self.store = store
        self.root = store.root.resolve()
        self._views = _LRU(views)
        self._frames = _LRU(frames)
        self._lock = threading.Lock()

    # -- rows ----------------------------------------------------------------------------------------
    def rows(self) -> list[dict[str, Any]]:
        """Every run of the index (newest first) with whether the sandbox can open it."""
        if not (self.root / "index.sqlite").exists():
            return []
        out = []
        for r in reversed(self.store.rows()):
            plugin = plugin_for(r["experiment"])
            config = json.loads(r["config"])
            out.append({"id": r["id"], "experiment": r["experiment"], "status": r["status"],
                        "created": r["created"], "seconds": r["seconds"], "error": _first_line(r["error"]),
                        "config": config, "label": label(r["experiment"], config), "openable": plugin is not None,
                        "study": r["experiment"].split(".", 1)[0]})
        return out

    def row(self, run_id: str) -> dict[str, Any]:
        if not RUN_ID.match(run_id):
            raise NotFound(f"run id {run_id!r} is not 16 hex digits")
        row = self.store.status(run_id) if (self.root / "index.sqlite").exists() else None
        if row is None:
            raise NotFound(f"no run {run_id} in the run store {self.root}")
        return row

    def run_dir(self, row: dict[str, Any]) -> Path:
        exp = get(row["experiment"])  # a registered experiment, or ConfigError
        d = (self.root / "runs" / exp.key / row["id"]).resolve()
        if not d.is_relative_to(self.root):
            raise NotFound(f"run {row['id']} lies outside the run store")
        return d

    # -- views ---------------------------------------------------------------------------------------
    def open(self, run_id: str) -> Opened:
        """The study view of a run: finished arrays, else the live snapshot; cached until the file changes."""
        row = self.row(run_id)
        plugin = plugin_for(row["experiment"])
        if plugin is None:
            raise NotFound(f"no sandbox plug-in shows {row['experiment']} runs")
        d = self.run_dir(row)
        final = d / "arrays.npz"
        src = final if final.exists() and (d / "summary.json").exists() else d / LIVE_FILE
        try:  # a finished run's version also moves when its summary or manifest changes (a damaged run is re-checked)
            stamps = [p.stat().st_mtime_ns for p in (src, d / "summary.json", d / "manifest.json")
                      if p == src or (src == final and p.exists())]
            version = (src.name, max(stamps))
        except FileNotFoundError:
            raise NotFound(f"run {run_id} ({row['status']}) has nothing to show yet") from None
        with self._lock:
            hit = self._views.get(run_id)
            if hit is not None and hit.version == version:
                self._views.move_to_end(run_id)
                return hit
        if src == final:
            check = self.store.check(row)
            if check.state == "corrupt":
                raise NotFound(f"run {run_id} is corrupt ({check.line(2)}); start it again to recompute it")
        with np.load(src, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
        summary = json.loads((d / "summary.json").read_text()) if src == final else {}
        view = plugin.open(row["experiment"], arrays, summary, json.loads(row["config"]), live=src != final)
        opened = Opened(run_id, row["experiment"], src != final, version, view)
        with self._lock:
            self._views.put(run_id, opened)
        return opened

    def forget(self, run_id: str) -> None:
        """Drop the cached view and frames of a deleted run."""
        with self._lock:
            self._views.pop(run_id, None)
            for key in [k for k in self._frames if k[0] == run_id]:
                del self._frames[key]

    def frames(self, opened: Opened, indices: list[int], variant: int, names: list[str]) -> list[dict[str, Any]]:
        """Frame figures of ``indices`` (computed once per run, variant, frame and panel)."""
        out = []
        for i in indices:
            figs: dict[str, Any] = {}
            with self._lock:
                for n in names:
                    hit = self._frames.get((opened.run_id, variant, i, n))
                    if hit is not None:
                        figs[n] = hit
            missing = [n for n in names if n not in figs]
            if missing:
                new = opened.view.frame(i, variant, missing)
                with self._lock:
                    for n, fig in new.items():
                        self._frames.put((opened.run_id, variant, i, n), fig)
                figs.update(new)
            out.append({"index": i, "time": float(opened.view.times[i]), "figures": {n: figs[n] for n in names}})
        return out


@cache
def _defaults(experiment: str) -> dict[str, Any]:
    try:
        return get(experiment).config().model_dump(mode="json")
    except Exception:  # an experiment without full defaults, or one no longer registered: no diff
        return {}


def label(experiment: str, config: dict[str, Any], limit: int = 6) -> str:
    """The config keys that differ from the experiment's paper defaults, e.g. 'k=3 epochs=40 seed=1'."""
    base = _defaults(experiment)
    if not base:
        return ""
    diff = [f"{k}={_short(v)}" for k, v in config.items() if k in base and base[k] != v and k != "device"]
    return " ".join(diff[:limit]) + (" …" if len(diff) > limit else "") or "paper defaults"


def _short(v: Any) -> str:
    text = json.dumps(v) if isinstance(v, list | dict) else str(v)
    return text if len(text) <= 24 else text[:21] + "…"


def _first_line(text: str | None) -> str | None:
    if not text:
        return text
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1] if lines else text


def check_names(view: View, names: list[str], kind: str) -> list[str]:
    """Validate requested panel names against the view's panels of ``kind``."""
    allowed = view.panel_names(kind)
    bad = [n for n in names if n not in allowed]
    if bad:
        raise ConfigError(f"panel {bad[0]!r} is not a {kind} panel of this run; allowed: {', '.join(allowed)}")
    return names or allowed
