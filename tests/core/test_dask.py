"""Sweeps on a real dask.distributed cluster: `dask scheduler` + two `dask worker` processes on 127.0.0.1.

One worker is SIGKILLed while it runs a task; the scheduler re-sends the task to the other worker,
which resumes the run from its checkpoint. Every run completes exactly once and the aggregate table
equals the local executor's.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from attnlab.core.runs import RunStore
from attnlab.core.sweep import run_sweep

pytestmark = pytest.mark.dask

DASK = shutil.which("dask", path=str(Path(sys.executable).parent)) or shutil.which("dask")


def _start(args, log: Path) -> subprocess.Popen:
    env = {**os.environ, "ATTNLAB_CHECKPOINT_EVERY": "0", "ATTNLAB_THREADS": "1"}
    return subprocess.Popen(args, env=env, stdout=open(log, "w"), stderr=subprocess.STDOUT, start_new_session=True)


@pytest.fixture
def cluster(tmp_path):
    if DASK is None:
        pytest.skip("dask CLI not installed (pip install 'attnlab[dask]')")
    sched_file = tmp_path / "scheduler.json"
    procs = [_start([DASK, "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                     "--scheduler-file", str(sched_file)], tmp_path / "scheduler.log")]
    deadline = time.time() + 60
    while not sched_file.exists() and time.time() < deadline:
        time.sleep(0.2)
    address = json.loads(sched_file.read_text())["address"]
    for name in ("w1", "w2"):
        procs.append(_start([DASK, "worker", address, "--name", name, "--nthreads", "1", "--no-nanny",
                             "--no-dashboard", "--host", "127.0.0.1"], tmp_path / f"{name}.log"))
    from distributed import Client

    with Client(address, timeout=30) as client:
        client.wait_for_workers(2, timeout=60)
    yield address, procs
    for p in procs:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGTERM)
    for p in procs:
        try:
            p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)


def test_dask_sweep_survives_a_killed_worker(tmp_path, cluster):
    address, procs = cluster
    w1 = procs[1]
    grid = {"seed": [0, 1, 2, 3], "steps": [25], "sleep": [0.04]}
    store = RunStore(tmp_path / "dask-store")

    import threading

    box = {}
    thread = threading.Thread(target=lambda: box.update(res=run_sweep(
        "toy.walk", grid, store=store, executor="dask", scheduler=address)))
    thread.start()
    killed_run = None
    deadline = time.time() + 120
    while killed_run is None and time.time() < deadline:
        if store.index.path.exists():
            for row in store.index.rows("toy.walk"):
                started = (Path(row["run_dir"]) / "checkpoint.pt").exists()
                if row["status"] == "running" and row["pid"] == w1.pid and started:
                    killed_run = row["id"]
        time.sleep(0.05)
    assert killed_run is not None, "worker w1 never ran a task"
    os.kill(w1.pid, signal.SIGKILL)
    thread.join(timeout=300)
    assert not thread.is_alive()
    res = box["res"]
    assert res.failed == 0 and len(res.table) == 4

    rows = {r["id"]: r for r in store.rows("toy.walk")}
    assert all(r["status"] == "done" and r["completions"] == 1 for r in rows.values())
    assert rows[killed_run]["attempts"] == 2
    assert "resumed from checkpoint" in (Path(rows[killed_run]["run_dir"]) / "log.txt").read_text()

    local = run_sweep("toy.walk", grid, store=RunStore(tmp_path / "local-store"), workers=1)
    pd.testing.assert_frame_equal(res.table.drop(columns=["error"]), local.table.drop(columns=["error"]))

    again = run_sweep("toy.walk", grid, store=store, executor="dask", scheduler=address)
    assert (again.ran, again.reused) == (0, 4)
