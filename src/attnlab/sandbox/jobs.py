"""Training jobs started from the page: real ``attnlab run`` processes, at most ``max_jobs`` at once, the rest queued.

Each job runs ``python -m attnlab.cli run EXPERIMENT --config FILE --out STORE`` with the fully resolved config
(so its run id is the one the page computed), exactly as a user would at a terminal: the run store records it,
it checkpoints, and ``attnlab report`` shows it. Controls are signals:

* stop: SIGTERM → the run marks itself "interrupted" and keeps its checkpoint; starting it again resumes it. A job
  still alive ``STOP_GRACE`` seconds later (the signal came while Python could not raise it, or was swallowed) gets
  SIGKILL: its checkpoint stays and the run store reports it "interrupted", so stop always stops;
* pause / continue: SIGSTOP / SIGCONT (a paused job keeps its slot);
* server shutdown: every job gets SIGTERM (resumable), queued jobs are dropped.

A job that dies any other way (SIGKILL, crash) leaves the index row "running" with its lock free, which the run
store reports as "interrupted": resumable too. The final status is always read back from the run store.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from attnlab.core.config import Config
from attnlab.core.experiment import Experiment
from attnlab.core.runs import RunStore

ACTIVE = ("queued", "running", "paused", "stopping")
STOP_GRACE = 20.0  # seconds a stopped job has to exit on its own before SIGKILL


class QueueFull(RuntimeError):
    """``max_jobs`` run and ``max_queued`` wait: a new job is refused (HTTP 429) rather than queued without end."""


@dataclass
class Job:
    run_id: str
    experiment: str
    status: str = "queued"  # queued, running, paused, stopping, then the run store's final status
    error: str | None = None
    submitted: float = field(default_factory=time.time)
    started: float | None = None
    finished: float | None = None
    returncode: int | None = None
    stop_requested: bool = False
    proc: subprocess.Popen | None = field(default=None, repr=False)
    config_file: Path | None = field(default=None, repr=False)
    need: int = 0  # bytes its experiment's memory model says it needs (0: no model)

    def to_json(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "experiment": self.experiment, "status": self.status, "error": self.error,
                "submitted": self.submitted, "started": self.started, "finished": self.finished,
                "returncode": self.returncode, "pid": self.pid}

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None and self.status in ("running", "paused", "stopping") else None


class JobManager:
    """Queue and processes of the sandbox's training jobs (thread-safe)."""

    def __init__(self, store: RunStore, max_jobs: int = 1, on_change: Callable[[], None] | None = None,
                 max_queued: int = 16) -> None:
        if max_jobs < 1:
            raise ValueError(f"max_jobs = {max_jobs}: must be ≥ 1")
        self.store = store
        self.max_jobs = max_jobs
        self.max_queued = max_queued
        self.on_change = on_change
        self._jobs: dict[str, Job] = {}
        self._queue: list[str] = []
        self._lock = threading.RLock()
        self._tmp = Path(tempfile.mkdtemp(prefix="attnlab-sandbox-jobs-"))
        self._closed = False

    # -- queries -------------------------------------------------------------------------------------
    def jobs(self) -> list[Job]:
        with self._lock:
            return list(self._jobs.values())

    def job(self, run_id: str) -> Job | None:
        with self._lock:
            return self._jobs.get(run_id)

    def position(self, run_id: str) -> int | None:
        with self._lock:
            return self._queue.index(run_id) + 1 if run_id in self._queue else None

    def queued_need(self) -> int:
        """Bytes the queued jobs will need once started (running ones already hold theirs)."""
        with self._lock:
            return sum(self._jobs[r].need for r in self._queue)

    def forget(self, run_id: str) -> None:
        """Drop a finished job's record (its run was deleted); an active job is kept."""
        with self._lock:
            job = self._jobs.get(run_id)
            if job is not None and job.status in ACTIVE:
                raise LookupError(f"run {run_id} is {job.status} in the sandbox: stop it first")
            self._jobs.pop(run_id, None)
        self._changed()

    # -- control -------------------------------------------------------------------------------------
    def submit(self, exp: Experiment, config: Config, need: int = 0) -> Job:
        """Queue a run of ``exp`` with ``config`` (an active job for the same run is returned as is); raise
        :class:`QueueFull` when every slot runs and the queue holds ``max_queued``."""
        run_id = config.hash(exp.key)
        with self._lock:
            if self._closed:
                raise RuntimeError("the sandbox is shutting down")
            job = self._jobs.get(run_id)
            if job is not None and job.status in ACTIVE:
                return job
            if self._slots_used() >= self.max_jobs and len(self._queue) >= self.max_queued:
                raise QueueFull(f"{self._slots_used()} runs are running and {len(self._queue)} are queued (the "
                                f"limits: --max-jobs {self.max_jobs}, --max-queued {self.max_queued}); wait for one "
                                "to finish or stop some")
            path = self._tmp / f"{run_id}.yaml"
            path.write_text(yaml.safe_dump(config.model_dump(mode="json"), sort_keys=True))
            run_dir = self.store.run_dir(exp, run_id)
            run_dir.mkdir(parents=True, exist_ok=True)
            self.store.index.ensure(run_id, exp.key, run_dir, config.model_dump(mode="json"), "queued")
            job = Job(run_id, exp.key, config_file=path, need=need)
            self._jobs[run_id] = job
            self._queue.append(run_id)
            self._start_next()
        self._changed()
        return job

    def stop(self, run_id: str) -> Job:
        """Queued → dropped (its run stays resumable); running or paused → SIGTERM (→ "interrupted")."""
        with self._lock:
            job = self._require(run_id)
            if job.status == "queued":
                self._queue.remove(run_id)
                job.status, job.finished = "interrupted", time.time()
                self.store.index.finish(run_id, "interrupted", "stopped from the sandbox before it started")
            elif job.status in ("running", "paused"):
                job.stop_requested = True
                self._signal(job, signal.SIGTERM)
                if job.status == "paused":
                    self._signal(job, signal.SIGCONT)
                job.status = "stopping"
                timer = threading.Timer(STOP_GRACE, self._kill_if_alive, args=(job,))
                timer.daemon = True
                timer.start()
        self._changed()
        return job

    def _kill_if_alive(self, job: Job) -> None:
        with self._lock:
            if job.status == "stopping":
                self._signal(job, signal.SIGKILL)

    def pause(self, run_id: str) -> Job:
        with self._lock:
            job = self._require(run_id, "running")
            self._signal(job, signal.SIGSTOP)
            job.status = "paused"
        self._changed()
        return job

    def cont(self, run_id: str) -> Job:
        with self._lock:
            job = self._require(run_id, "paused")
            self._signal(job, signal.SIGCONT)
            job.status = "running"
        self._changed()
        return job

    def shutdown(self, timeout: float = 15.0) -> None:
        """SIGTERM every job (they mark themselves interrupted), wait up to ``timeout`` s, then SIGKILL."""
        with self._lock:
            self._closed = True
            self._queue.clear()
            procs = [j for j in self._jobs.values() if j.proc is not None and j.proc.poll() is None]
            for job in procs:
                self._signal(job, signal.SIGTERM)
                self._signal(job, signal.SIGCONT)
        deadline = time.monotonic() + timeout
        for job in procs:
            try:
                job.proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                job.proc.kill()
                job.proc.wait()
        for f in self._tmp.glob("*.yaml"):
            f.unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            self._tmp.rmdir()

    # -- internals -----------------------------------------------------------------------------------
    def _require(self, run_id: str, status: str | None = None) -> Job:
        job = self._jobs.get(run_id)
        if job is None or job.status not in ACTIVE:
            raise LookupError(f"run {run_id} has no active sandbox job")
        if status is not None and job.status != status:
            raise LookupError(f"run {run_id} is {job.status}, not {status}")
        return job

    @staticmethod
    def _signal(job: Job, sig: signal.Signals) -> None:
        if job.proc is not None and job.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(job.proc.pid, sig)

    def _slots_used(self) -> int:
        return sum(j.status in ("running", "paused", "stopping") for j in self._jobs.values())

    def _start_next(self) -> None:
        while self._queue and self._slots_used() < self.max_jobs and not self._closed:
            job = self._jobs[self._queue.pop(0)]
            cmd = [sys.executable, "-m", "attnlab.cli", "run", job.experiment, "--config", str(job.config_file),
                   "--store", str(self.store.root), "--json", "--quiet"]
            env = {**os.environ, "ATTNLAB_QUIET": "1", "PYTHONUNBUFFERED": "1"}
            job.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                                        start_new_session=True)  # the server's terminal signals reach only it
            job.status, job.started = "running", time.time()
            threading.Thread(target=self._wait, args=(job,), daemon=True, name=f"job-{job.run_id}").start()

    def _wait(self, job: Job) -> None:
        _, err = job.proc.communicate()
        row = self.store.status(job.run_id)  # the run store's word on how it ended
        with self._lock:
            job.returncode = job.proc.returncode
            job.finished = time.time()
            never_started = row is not None and row["status"] == "queued"  # killed or refused before its run began
            job.status = row["status"] if row and row["status"] not in ("queued", "running") else (
                "done" if job.returncode == 0 else "failed")
            if never_started and (job.stop_requested or self._closed):
                job.status = "interrupted"
            lines = [ln for ln in (err or "").strip().splitlines() if ln.strip()]
            if job.status == "interrupted":
                how = "stopped" if job.stop_requested or self._closed else (
                    f"the job died (signal {-job.returncode})" if job.returncode < 0 else
                    f"the job ended (exit code {job.returncode})")
                job.error = f"{how}; resume it to continue from its checkpoint"
            elif job.status != "done":  # the run store's recorded error, else what the command said
                recorded = [ln for ln in ((row or {}).get("error") or "").strip().splitlines() if ln.strip()]
                job.error = (recorded or [ln for ln in lines if not ln.startswith("  see ")] or
                             [f"exit code {job.returncode}"])[-1]
            if never_started:  # the index would say "queued" for ever
                self.store.index.finish(job.run_id, job.status, job.error)
            if job.config_file is not None:
                job.config_file.unlink(missing_ok=True)
            self._start_next()
        self._changed()

    def _changed(self) -> None:
        if self.on_change is not None:
            self.on_change()
