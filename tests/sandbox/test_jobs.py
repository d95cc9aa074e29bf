"""Training jobs started through the API are real ``attnlab run`` processes of the run store: at most --max-jobs at
once (the rest queued), paused and continued by signals, stopped into resumable "interrupted" runs that resume to
the result an uninterrupted run gives, failures and crashes recorded, every job stopped (resumable) when the server
is stopped. The jobs are runs of the test study ``knobs.walk`` (a random walk that sleeps per step), and one signal MLM
training watched live."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

from sandbox_helpers import start_server, stop_server, wait_for, wait_status

from attnlab.core import report
from attnlab.core.config import resolve
from attnlab.core.registry import get
from attnlab.core.runs import RunStore


def start(server, **config) -> dict:
    status, body = server.call("POST", "api/runs", {"experiment": "knobs.walk",
                                                    "config": {k: str(v) for k, v in config.items()}})
    assert status == 202, body
    return body


def control(server, run_id: str, action: str) -> dict:
    status, body = server.call("POST", f"api/runs/{run_id}/{action}")
    assert status == 200, body
    return body


def proc_state(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


def index_row(root: Path, run_id: str) -> dict:
    return RunStore(root).status(run_id)


def test_queue_pause_continue_stop_resume(server, tmp_path):
    walk = {"steps": 16, "sleep": 0.25, "seed": 11}
    w1 = start(server, **walk)
    w2 = start(server, steps=3, seed=12)
    assert w1["status"] == "running" and (w2["status"], w2["queue_position"]) == ("queued", 1)  # --max-jobs 1
    listed = {r["id"]: r for r in server.get("api/runs")["runs"]}
    assert listed[w2["run_id"]]["status"] == "queued" and listed[w2["run_id"]]["queue_position"] == 1
    run_dir = server.root / "runs" / "knobs.walk" / w1["run_id"]
    wait_for(lambda: (run_dir / "checkpoint.pt").exists(), timeout=120, what="the first checkpoint")

    paused = control(server, w1["run_id"], "pause")
    assert paused["status"] == "paused"
    wait_for(lambda: proc_state(paused["pid"]) == "T", timeout=10, what="SIGSTOP")
    assert control(server, w1["run_id"], "continue")["status"] == "running"
    wait_for(lambda: proc_state(paused["pid"]) != "T", timeout=10, what="SIGCONT")

    assert control(server, w2["run_id"], "stop")["status"] == "interrupted"  # dropped from the queue, never started
    assert index_row(server.root, w2["run_id"])["status"] == "interrupted"
    assert not (server.root / "runs" / "knobs.walk" / w2["run_id"] / "log.txt").exists()

    assert control(server, w1["run_id"], "stop")["status"] == "stopping"
    stopped = wait_status(server, w1["run_id"], ("interrupted",))
    assert "resume" in stopped["error"]
    assert index_row(server.root, w1["run_id"])["status"] == "interrupted" and (run_dir / "checkpoint.pt").exists()
    assert "interrupted; checkpoint kept" in (run_dir / "log.txt").read_text()

    assert control(server, w1["run_id"], "resume")["status"] == "running"
    wait_status(server, w1["run_id"], ("done",))
    log = (run_dir / "log.txt").read_text()
    assert "resumed from checkpoint" in log and not (run_dir / "checkpoint.pt").exists()
    exp = get("knobs.walk")
    alone = RunStore(tmp_path / "alone").run(exp, resolve(exp.config, "quick", {**walk, "sleep": 0.0}))
    resumed = json.loads((run_dir / "summary.json").read_text())
    assert resumed == alone.summary  # the stopped-and-resumed run is the uninterrupted one (sleep does not count)
    status, body = server.call("POST", f"api/runs/{w1['run_id']}/resume")
    assert status == 409 and "only an interrupted or failed run resumes" in body["error"]
    html = report.write(RunStore(server.root), tmp_path / "report.html", [run_dir]).read_text()
    assert w1["run_id"] in html and "knobs.walk" in html  # a run of the page is a run of `attnlab report`


def test_an_mlm_run_started_from_the_page_is_watched_live_and_stops_resumably(server):
    """signal.fig4 from its start form: its view grows step by step while it trains, and stop leaves it resumable."""
    config = {"steps": 3000, "log_every": 20, "d": 32, "T": 16, "betas": "[0.5, 5]", "n_seeds": 1, "seed": 3}
    status, body = server.call("POST", "api/runs", {"experiment": "signal.fig4",
                                                    "config": {k: str(v) for k, v in config.items()}})
    assert status == 202, body
    run_id = body["run_id"]
    lengths = set()

    def grown() -> bool:
        meta = server.get(f"api/runs/{run_id}")
        assert meta["status"] in ("queued", "running"), meta
        if meta.get("view"):
            assert meta["view"]["live"] and meta["view"]["time_label"] == "step"
            lengths.add(len(meta["view"]["times"]))
        return len(lengths) >= 3

    wait_for(grown, timeout=120, what="three live snapshots of the MLM run")
    control(server, run_id, "stop")
    meta = wait_status(server, run_id, ("interrupted",))
    assert meta["view"]["live"] and len(meta["view"]["times"]) >= max(lengths)  # its last snapshot stays viewable
    assert (server.root / "runs" / "signal.fig4" / run_id / "checkpoint.pt").exists()  # it resumes mid-training


def test_failures_and_crashes_are_recorded_and_resumable(server):
    failing = start(server, steps=5, fail_at=2, seed=21)
    row = wait_status(server, failing["run_id"], ("failed",))
    assert "ValueError: asked to fail at step 2" in row["error"]

    crash = start(server, steps=40, sleep=0.25, seed=22)
    run_dir = server.root / "runs" / "knobs.walk" / crash["run_id"]
    wait_for(lambda: (run_dir / "checkpoint.pt").exists(), timeout=120, what="the first checkpoint")
    os.kill(server.get(f"api/runs/{crash['run_id']}")["pid"], signal.SIGKILL)  # a crash nobody asked for
    row = wait_status(server, crash["run_id"], ("interrupted",))
    assert index_row(server.root, crash["run_id"])["status"] == "interrupted"
    assert row["error"] == "the job died (signal 9); resume it to continue from its checkpoint"
    assert control(server, crash["run_id"], "resume")["status"] in ("running", "queued")
    assert control(server, crash["run_id"], "stop")["status"] in ("stopping", "interrupted")
    wait_status(server, crash["run_id"], ("interrupted",))


def test_stopping_the_server_stops_its_jobs_resumably(tmp_path):
    srv = start_server(tmp_path / "store", "--max-jobs", "2")
    try:
        a, b = start(srv, steps=200, sleep=0.2, seed=31), start(srv, steps=200, sleep=0.2, seed=32)
        assert a["status"] == b["status"] == "running"  # two slots
        for job in (a, b):
            d = srv.root / "runs" / "knobs.walk" / job["run_id"]
            wait_for(lambda d=d: (d / "checkpoint.pt").exists(), timeout=120, what="a checkpoint")
    finally:
        code = stop_server(srv)
    out = srv.output("stdout")
    assert code == 0 and "attnlab sandbox stopped" in out
    for job in (a, b):
        assert index_row(srv.root, job["run_id"])["status"] == "interrupted"
        assert (srv.root / "runs" / "knobs.walk" / job["run_id"] / "checkpoint.pt").exists()


def test_a_job_that_outlives_its_stop_signal_is_killed_and_reported_resumable(tmp_path, monkeypatch):
    """SIGTERM can arrive where Python cannot raise it (or code swallows the exception); the job then still ends,
    by SIGKILL after the grace period, and the run store reports its run "interrupted" (its lock is free)."""
    import subprocess
    import sys
    import threading

    from attnlab.sandbox import jobs

    monkeypatch.setattr(jobs, "STOP_GRACE", 0.5)
    store = RunStore(tmp_path / "store")
    exp = get("knobs.walk")
    config = resolve(exp.config, "quick", {"steps": 5})
    run_id = config.hash(exp.key)
    run_dir = store.run_dir(exp, run_id)
    run_dir.mkdir(parents=True)
    store.index.ensure(run_id, exp.key, run_dir, config.model_dump(mode="json"), "queued")
    store.index.start(run_id)  # as a run that started, then ignores SIGTERM
    manager = jobs.JobManager(store, 1)
    stubborn = subprocess.Popen([sys.executable, "-c", "import signal, time\n"
                                 "signal.signal(signal.SIGTERM, signal.SIG_IGN)\nprint('ready', flush=True)\n"
                                 "time.sleep(120)"], stdout=subprocess.PIPE, text=True)
    assert stubborn.stdout.readline().strip() == "ready"
    job = jobs.Job(run_id, exp.key, status="running", proc=stubborn)
    manager._jobs[run_id] = job
    threading.Thread(target=manager._wait, args=(job,), daemon=True).start()
    assert manager.stop(run_id).status == "stopping"
    wait_for(lambda: job.status not in jobs.ACTIVE, timeout=30, what="the stubborn job to end")
    assert stubborn.returncode == -signal.SIGKILL and job.status == "interrupted", (stubborn.returncode, job)
    assert index_row(store.root, run_id)["status"] == "interrupted"
