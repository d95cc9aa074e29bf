"""What the sandbox's endpoints share: the run store, its reader, the job manager, and the checks between a request
and a run (which experiments start, a config's memory need, a run's job state, a frame range)."""

from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass, field
from typing import Any

from attnlab.core.config import ConfigError
from attnlab.core.device import label, parse
from attnlab.core.experiment import Experiment
from attnlab.core.registry import get
from attnlab.core.runs import RunStore
from attnlab.sandbox import forms
from attnlab.sandbox.jobs import ACTIVE, JobManager
from attnlab.sandbox.messages import StartRequest
from attnlab.sandbox.plugin import StudyPlugin, View, plugin_for, plugins
from attnlab.sandbox.store import NotFound, RunReader


@dataclass
class Sandbox:
    """The state behind the API: ``max_jobs`` training processes at once, at most ``max_queued`` more waiting."""

    store: RunStore
    max_jobs: int = 1
    max_queued: int = 16
    render_lock: threading.Lock = field(default_factory=threading.Lock)  # pyplot is not thread-safe

    def __post_init__(self) -> None:
        self.reader = RunReader(self.store)
        self.jobs = JobManager(self.store, self.max_jobs, max_queued=self.max_queued)

    def job_view(self, row: dict[str, Any]) -> dict[str, Any]:
        """An index row with the sandbox job's state over it (queued, paused, stopping are the job's words)."""
        job = self.jobs.job(row["id"])
        if job is None:
            return row
        if job.status in ACTIVE:
            row = {**row, "status": job.status, "queue_position": self.jobs.position(row["id"]), "pid": job.pid}
        if job.error and row["status"] != "done":
            row = {**row, "error": job.error}
        return row

    def startable(self, key: str) -> tuple[Experiment, StudyPlugin]:
        """The experiment ``key`` and its plug-in, or ``ConfigError`` listing what the sandbox can start."""
        exp = get(key)
        plugin = plugin_for(key)
        if plugin is None or key not in plugin.forms:
            allowed = sorted(k for p in plugins().values() for k in p.forms)
            raise ConfigError(f"experiment {key!r} cannot be started from the sandbox; allowed: {', '.join(allowed)}")
        return exp, plugin

    def validated(self, req: StartRequest):
        """(experiment, config or None, errors, memory {need, free}) of a start request; nothing is written."""
        exp, _ = self.startable(req.experiment)
        config, errors = forms.validate(exp, req.scale, req.config)
        memory = None
        if config is not None:
            try:
                memory = self.need_of(exp, config)
            except ConfigError as exc:
                name = "device" if "device" in str(exc) and "memory" not in str(exc) else "<config>"
                config, errors = None, [forms.FieldError(name, None, str(exc))]
        return exp, config, errors, memory

    def need_of(self, exp: Experiment, config) -> dict[str, Any]:
        """The run's memory need from its experiment's model, refused (WouldNotFit) when it and the queued runs'
        needs exceed the device's free memory."""
        from attnlab.core.memory import WouldNotFit, free_bytes

        device = parse(config.device)
        free = free_bytes(device)
        if exp.memory is None:
            return {"need": None, "free": free, "queued": self.jobs.queued_need()}
        out = exp.memory(config)
        need, reduce = out if isinstance(out, tuple) else (out, None)
        queued = self.jobs.queued_need()
        if need + queued > free:
            also = f" (and the queued runs {queued / 2**30:.3g} GiB more)" if queued else ""
            raise WouldNotFit(f"this run needs {need / 2**30:.3g} GiB{also} but {label(device)} has "
                              f"{free / 2**30:.3g} GiB free; {reduce or 'reduce its sizes'}")
        return {"need": int(need), "free": free, "queued": queued}

    def stored(self, run_id: str) -> dict[str, Any] | None:
        """The index row of ``run_id`` (None if the store has no index yet or no such run)."""
        return self.store.status(run_id) if (self.reader.root / "index.sqlite").exists() else None

    def delete(self, run_id: str) -> dict[str, Any]:
        """Remove a run that is not active: its directory and index row (``LookupError`` otherwise)."""
        from attnlab.core.maintenance import remove

        row = self.reader.row(run_id)
        self.jobs.forget(run_id)  # LookupError (409) while its job is active
        why = remove(self.store, row)
        if why:
            raise LookupError(f"run {run_id}: {why}")
        self.reader.forget(run_id)
        return {"run_id": run_id, "deleted": True}

    def state(self) -> dict[str, Any]:
        """What the event stream sends: every run in brief and the version (mtime) of each live snapshot."""
        rows = [self.job_view(r) for r in self.reader.rows()]
        live = {}
        for r in rows:
            if r["status"] in ACTIVE or r["status"] == "interrupted":
                try:
                    d = self.reader.run_dir(r)
                except (ConfigError, NotFound):
                    continue
                with contextlib.suppress(FileNotFoundError):  # a finishing job may remove it meanwhile
                    live[r["id"]] = (d / "live.npz").stat().st_mtime_ns
        brief = [{k: r.get(k) for k in ("id", "experiment", "status", "error", "created", "seconds", "queue_position",
                                        "openable", "label")} for r in rows]
        return {"runs": brief, "live": live}


def check_frames(view: View, start: int, variant: int) -> None:
    """``start`` must be one of ``view``'s frames and ``variant`` one of its variants (``ConfigError`` otherwise)."""
    n = len(view.times)
    if start >= n:
        raise ConfigError(f"start = {start}: the run has {n} frames (allowed 0..{n - 1})")
    check_variant(view, variant)


def check_variant(view: View, variant: int) -> None:
    """``variant`` must be one of ``view``'s variants (``ConfigError`` naming them otherwise)."""
    if variant >= len(view.variants):
        raise ConfigError(f"variant = {variant}: allowed 0..{len(view.variants) - 1} ({', '.join(view.variants)})")
