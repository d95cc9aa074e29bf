"""The run store: one directory per run, an SQLite index, atomic writes, resume from checkpoints.

Layout under the store root (``--store``, else ``$ATTNLAB_HOME``, else ``./attnlab-runs``)::

    index.sqlite                      runs and their status (core.index: WAL, safe for many writers)
    runs/<study>.<experiment>/<id>/   one run; <id> = hash of the resolved config
        config.json                   config + attnlab version, git revision, torch, device, seeds
        metrics.parquet               tidy long format, one schema (core.metrics, docs/data.md)
        arrays.npz                    named arrays
        summary.json                  the summary scalars
        figures/*.png, *.pdf
        manifest.json                 size and SHA-256 of each file above, sealed at completion (core.integrity)
        log.txt
        checkpoint.pt                 only while the run is unfinished
        live.npz                      progress arrays for live viewers (``ctx.publish``), until the run is done
    sweeps/<study>.<experiment>/<id>/ a sweep's table and figure (core.sweep)

Every file is written to a temporary name and renamed into place, so a reader never sees half a
file. A run holds an exclusive ``flock`` on its directory while it computes; a run whose index row
says "running" but whose lock is free was killed (SIGKILL, power loss) and is reported as
"interrupted". Running it again resumes from its last checkpoint; with the same seed, the result is
the one an uninterrupted run gives. A finished run is reused only while its files match its manifest
(kept in the directory and in the index); a corrupt one is recomputed, with one line saying so.

Readers only read: :meth:`RunStore.status` reports a dead run as "interrupted" without writing it (the write is
:meth:`RunStore.record_interrupted`), :meth:`RunStore.lookup` finds a config's finished, intact run. What a
running experiment sees is :class:`~attnlab.core.context.RunContext`; the atomic file helpers are in
:mod:`attnlab.core.files`.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import shutil
import signal
import socket
import subprocess
import threading
import time
import traceback
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from attnlab import __version__
from attnlab.core.config import Config, ConfigError
from attnlab.core.context import LIVE_FILE, RunContext
from attnlab.core.device import describe, details, parse
from attnlab.core.experiment import Experiment, Result
from attnlab.core.files import atomic_write, atomic_write_json, is_locked, locked, savez, say
from attnlab.core.index import Index
from attnlab.core.integrity import MANIFEST, Check, inspect, seal
from attnlab.core.metrics import tidy
from attnlab.core.rng import Streams, recording, stream_seed, used_streams

DEFAULT_ROOT = "attnlab-runs"
DIED = "process died while running (killed?)"


def default_root() -> Path:
    """The store a user's commands share: ``$ATTNLAB_HOME``, else ``./attnlab-runs``."""
    return Path(os.environ.get("ATTNLAB_HOME", DEFAULT_ROOT))


def _env_float(name: str, default: float) -> float:
    return float(os.environ.get(name, default))


# -- the store ---------------------------------------------------------------------------------


@dataclass
class RunRecord:
    """Outcome of :meth:`RunStore.run` (also what ``attnlab run --json`` prints)."""

    run_id: str
    experiment: str
    run_dir: Path
    status: str
    summary: dict[str, Any]
    reused: bool = False
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "run_dir": str(self.run_dir),
            "config_hash": self.run_id,
            "experiment": self.experiment,
            "status": self.status,
            "reused": self.reused,
            "error": self.error,
            "summary": self.summary,
        }


class RunFailed(RuntimeError):
    def __init__(self, record: RunRecord) -> None:
        super().__init__(f"run {record.experiment} {record.run_id} failed: {record.error}")
        self.record = record


class Interrupted(KeyboardInterrupt):
    """Raised in the main thread on SIGTERM so that a terminated run is marked and resumable."""


@cache
def git_revision() -> str | None:
    src = Path(__file__).resolve().parents[3]
    try:
        rev = subprocess.run(["git", "-C", str(src), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5)
        if rev.returncode != 0:
            return None
        dirty = subprocess.run(  # the code's state: the committed records and benchmarks under results/ do not count
            ["git", "-C", str(src), "status", "--porcelain", "--untracked-files=no", "--", ".", ":(exclude)results"],
            capture_output=True,
            text=True,
            timeout=5,
        )
        return rev.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return None


class RunStore:
    """Runs experiments into ``root`` and finds them again.

    ``root``: default :func:`default_root` (``$ATTNLAB_HOME``, else ``./attnlab-runs``). A run checkpoints at most
    every ``checkpoint_every`` seconds (default ``$ATTNLAB_CHECKPOINT_EVERY``, else 30) and publishes live arrays at
    most every ``publish_every`` seconds (default ``$ATTNLAB_PUBLISH_EVERY``, else 0.5); the variables reach runs
    started in subprocesses (``attnlab run`` under the sandbox, sweep workers). An index write waits for a lock up
    to ``index_timeout`` seconds (default ``$ATTNLAB_INDEX_TIMEOUT``, else 60).
    """

    def __init__(self, root: str | Path | None = None, *, checkpoint_every: float | None = None,
                 publish_every: float | None = None, index_timeout: float | None = None) -> None:
        self.root = Path(root) if root is not None else default_root()
        self.checkpoint_every = checkpoint_every if checkpoint_every is not None else \
            _env_float("ATTNLAB_CHECKPOINT_EVERY", 30.0)
        self.publish_every = publish_every if publish_every is not None else _env_float("ATTNLAB_PUBLISH_EVERY", 0.5)
        self.index_timeout = index_timeout
        self._index: Index | None = None

    @property
    def index(self) -> Index:
        """The SQLite index, created (with the store directory) on first use, never before."""
        if self._index is None:
            from attnlab.core.maintenance import scan_runs

            self._index = Index(self.root / "index.sqlite", scan=lambda: scan_runs(self.root),
                                timeout=self.index_timeout)
        return self._index

    def run_dir(self, exp: Experiment, run_id: str) -> Path:
        return self.root / "runs" / exp.key / run_id

    # -- running ---------------------------------------------------------------------------------
    def run(self, exp: Experiment, config: Config, *, force: bool = False) -> RunRecord:
        """Run ``exp`` with ``config``, or reuse the finished run with the same config hash.

        A run whose experiment's memory model does not fit the device's free memory raises
        :class:`~attnlab.core.memory.WouldNotFit` before anything is written (a finished run is still reused).
        A failing experiment is recorded as "failed" (with its traceback in the index and in ``log.txt``) and
        re-raised as :class:`RunFailed`; an interrupt leaves it "interrupted" with its checkpoint in place.
        """
        device = parse(config.device)  # the one parse of the run's device: its context gets this torch.device
        run_id = config.hash(exp.key)
        run_dir = self.run_dir(exp, run_id)
        if exp.memory is not None and (force or not (run_dir / "summary.json").exists()):
            from attnlab.core.memory import check_model

            check_model(exp.memory, config, device, f"{exp.key} ({config.device})")
        run_dir.mkdir(parents=True, exist_ok=True)
        self.index.ensure(run_id, exp.key, run_dir, config.model_dump(mode="json"), "queued")
        with locked(run_dir / ".lock"):
            row = self.index.get(run_id)
            check = inspect(run_dir, row)
            if check.ok and not force:
                if check.state == "legacy" or row is None or row["status"] != "done":
                    self._adopt(exp.key, run_id, run_dir)  # seal a legacy run; a sealed run the index lost is done
                return RunRecord(run_id, exp.key, run_dir, "done", _summary(run_dir), reused=True)
            if check.state == "corrupt":
                say(f"warning: run {run_id} ({exp.key}) is corrupt: {check.line()}; recomputing it")
            if force or check.state == "corrupt":
                _clear(run_dir)
            return self._execute(exp, config, run_id, run_dir, device)

    def _adopt(self, experiment: str, run_id: str, run_dir: Path) -> None:
        manifest = json.loads((run_dir / MANIFEST).read_text()) if (run_dir / MANIFEST).exists() else \
            seal(run_dir, run_id=run_id, experiment=experiment)
        self.index.seal(run_id, manifest)

    def _execute(
        self, exp: Experiment, config: Config, run_id: str, run_dir: Path, device: torch.device
    ) -> RunRecord:
        started, cpu_started = time.time(), time.process_time()
        streams = Streams(config.seed, device)
        meta = self._meta(exp, config, run_id, device)
        atomic_write_json(run_dir / "config.json", meta)
        self.index.start(run_id)
        with open(run_dir / "log.txt", "a") as log, sigterm_raises():
            ctx = RunContext(run_dir, config, device, streams, checkpoint_every=self.checkpoint_every,
                             publish_every=self.publish_every, _log=log)
            ctx.log(f"start {exp.key} {run_id} on {describe(device)}")
            try:
                with recording() as used:
                    result = exp.fn(config, ctx)
                self._save(exp, config, result, run_dir)
            except KeyboardInterrupt:
                ctx.log("interrupted; checkpoint kept, run again to resume")
                self.index.finish(run_id, "interrupted", "interrupted by signal")
                raise
            except Exception as exc:
                text = "".join(traceback.format_exception(exc))
                ctx.log("failed:\n" + text)
                self.index.finish(run_id, "failed", text)
                error = _failure_line(exc, text)
                raise RunFailed(RunRecord(run_id, exp.key, run_dir, "failed", {}, error=error)) from exc
            resumed = {k: stream_seed(config.seed, k) for k in streams.state_dict()["torch"]}  # restored, not asked
            meta["seeds"]["streams"] = {**resumed, **used_streams(used, config.seed)}
            atomic_write_json(run_dir / "config.json", meta)
            ctx.log("done")
        for name in (ctx.checkpoint_path.name, LIVE_FILE):
            with contextlib.suppress(FileNotFoundError):
                (run_dir / name).unlink()
        manifest = seal(run_dir, run_id=run_id, experiment=exp.key, started=started, seconds=time.time() - started,
                        cpu_seconds=time.process_time() - cpu_started,  # this process's CPU time: robust to load
                        resumed=getattr(ctx, "resumed_from", None) is not None)
        self.index.finish(run_id, "done", manifest=manifest)
        return RunRecord(run_id, exp.key, run_dir, "done", result.summary)

    def _meta(self, exp: Experiment, config: Config, run_id: str, device: torch.device) -> dict[str, Any]:
        return {
            "experiment": exp.key,
            "paper_ref": exp.ref,
            "run_id": run_id,
            "config": config.model_dump(mode="json"),
            "attnlab_version": __version__,
            "git_revision": git_revision(),
            "torch_version": torch.__version__,
            "python": platform.python_version(),
            "host": socket.gethostname(),
            "device": describe(device),
            "device_details": details(device),
            "seeds": {"base": config.seed, "streams": {}},
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }

    def _save(self, exp: Experiment, config: Config, result: Result, run_dir: Path) -> None:
        from attnlab.core.plotting import save_figure

        metrics = tidy(result.metrics, exp.outputs.axes(config) if exp.outputs is not None else None)
        atomic_write(run_dir / "metrics.parquet", lambda p: metrics.to_parquet(p, index=False))
        atomic_write(run_dir / "arrays.npz", lambda p: savez(p, result.arrays))
        if exp.figure is not None:
            figs = exp.figure(result, config)
            for name, fig in (figs.items() if isinstance(figs, dict) else [(exp.name, figs)]):
                save_figure(fig, run_dir / "figures" / name)
        atomic_write_json(run_dir / "summary.json", result.summary)

    # -- reading -----------------------------------------------------------------------------------
    def status(self, run_id: str) -> dict[str, Any] | None:
        """Index row of a run, with a dead "running" run reported as "interrupted" (read-only: the index keeps
        "running" until :meth:`record_interrupted` or the run's next start)."""
        row = self.index.get(run_id)
        if row and row["status"] == "running" and not is_locked(self.dir_of(row) / ".lock"):
            row = {**row, "status": "interrupted", "error": DIED}
        return row

    def record_interrupted(self) -> list[str]:
        """Write "interrupted" into the index for every dead "running" run; their ids (a write, for ``gc``)."""
        dead = [r["id"] for r in self.index.rows(status="running") if not is_locked(self.dir_of(r) / ".lock")]
        for run_id in dead:
            self.index.finish(run_id, "interrupted", DIED)
        return dead

    def lookup(self, exp: Experiment, config: Config) -> RunRecord | None:
        """The finished run of ``config`` whose files pass their check, or None (nothing is written)."""
        run_id = config.hash(exp.key)
        summary = self.reusable(self.status(run_id))
        return None if summary is None else RunRecord(run_id, exp.key, self.run_dir(exp, run_id), "done", summary,
                                                      reused=True)

    def rows(self, experiment: str | None = None) -> list[dict[str, Any]]:
        return [self.status(r["id"]) or r for r in self.index.rows(experiment)]

    def dir_of(self, row: dict[str, Any]) -> Path:
        """The directory of an index row's run, under this store's root whatever path the row recorded."""
        from attnlab.core.maintenance import RUN_ID, SAFE_NAME

        if not (SAFE_NAME.match(str(row["experiment"])) and RUN_ID.match(str(row["id"]))):
            raise ConfigError(f"index row {str(row['id'])[:40]!r} names no run directory of this store; `attnlab store "
                              "rebuild` recreates the index from the run folders")
        return self.root / "runs" / row["experiment"] / row["id"]

    def check(self, row: dict[str, Any], deep: bool = True) -> Check:
        """Integrity of the run of an index row (:func:`attnlab.core.integrity.inspect`)."""
        return inspect(self.dir_of(row), row, deep)

    def reusable(self, row: dict[str, Any] | None) -> dict[str, Any] | None:
        """The summary of a finished run whose files pass their check; None otherwise (nothing is changed)."""
        if row is None or not self.check(row).ok:
            return None
        return _summary(self.dir_of(row))


def load_result(run_dir: str | Path) -> tuple[dict[str, Any], Result]:
    """``(config.json contents, Result)`` of a finished run directory."""
    d = Path(run_dir)
    if not (d / "summary.json").exists():
        raise FileNotFoundError(f"{d} is not a finished run (no summary.json)")
    meta = json.loads((d / "config.json").read_text())
    metrics = pd.read_parquet(d / "metrics.parquet") if (d / "metrics.parquet").exists() else pd.DataFrame()
    with np.load(d / "arrays.npz", allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    summary = json.loads((d / "summary.json").read_text())
    return meta, Result(metrics, arrays, summary)


def _summary(run_dir: Path) -> dict[str, Any]:
    return json.loads((run_dir / "summary.json").read_text())


def _clear(run_dir: Path) -> None:
    for name in (MANIFEST, "checkpoint.pt", LIVE_FILE, "summary.json", "metrics.parquet", "arrays.npz", "log.txt"):
        with contextlib.suppress(FileNotFoundError):
            (run_dir / name).unlink()
    shutil.rmtree(run_dir / "figures", ignore_errors=True)


def _failure_line(exc: Exception, text: str) -> str:
    """One line naming what failed: the exception's own first line (a pydantic error's message, not its closing
    documentation link), else the traceback's last line."""
    try:
        from pydantic import ValidationError

        if isinstance(exc, ValidationError) and exc.errors():
            err = exc.errors()[0]
            where = ".".join(str(p) for p in err.get("loc", ())) or exc.title
            return f"{type(exc).__name__} in {exc.title}: {where}: {err.get('msg')} (got {err.get('input')!r})"
    except ImportError:  # pragma: no cover - pydantic is a dependency
        pass
    return _last_line(text)


def _last_line(text: str) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1] if lines else text


@contextlib.contextmanager
def sigterm_raises() -> Iterator[None]:
    """In the main thread, turn SIGTERM into :class:`Interrupted` for the duration of a run (or a check)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: Any) -> None:
        raise Interrupted(f"signal {signum}")

    old = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


@contextlib.contextmanager
def deadline(seconds: float | None) -> Iterator[None]:
    """In the main thread, raise :class:`Interrupted` ("budget") after ``seconds`` (None: never), as SIGTERM would:
    a run in progress keeps its checkpoint and resumes at its next start."""
    if seconds is None or threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: Any) -> None:
        raise Interrupted("budget")

    old = signal.signal(signal.SIGALRM, handler)
    signal.setitimer(signal.ITIMER_REAL, max(float(seconds), 1e-3))
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
