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
def cluster(tmp_path, request):
    """A scheduler and two workers w1, w2; ``request.param`` (indirect parametrisation) gives each worker's extra
    arguments, e.g. ``[["--resources", "GPU=1"], []]``."""
    extra = getattr(request, "param", [[], []])
    if DASK is None:
        pytest.skip("dask CLI not installed (pip install 'attnlab[dask]')")
    sched_file = tmp_path / "scheduler.json"
    procs = [_start([DASK, "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                     "--scheduler-file", str(sched_file)], tmp_path / "scheduler.log")]
    deadline = time.time() + 60
    while not sched_file.exists() and time.time() < deadline:
        time.sleep(0.2)
    address = json.loads(sched_file.read_text())["address"]
    for name, args in zip(("w1", "w2"), extra, strict=True):
        procs.append(_start([DASK, "worker", address, "--name", name, "--nthreads", "1", "--no-nanny",
                             "--no-dashboard", "--host", "127.0.0.1", *args], tmp_path / f"{name}.log"))
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
        "knobs.walk", grid, store=store, executor="dask", scheduler=address)))
    thread.start()
    killed_run = None
    deadline = time.time() + 120
    while killed_run is None and time.time() < deadline:
        if store.index.path.exists():
            for row in store.index.rows("knobs.walk"):
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

    rows = {r["id"]: r for r in store.rows("knobs.walk")}
    assert all(r["status"] == "done" and r["completions"] == 1 for r in rows.values())
    assert rows[killed_run]["attempts"] == 2
    assert "resumed from checkpoint" in (Path(rows[killed_run]["run_dir"]) / "log.txt").read_text()

    local = run_sweep("knobs.walk", grid, store=RunStore(tmp_path / "local-store"), workers=1)
    pd.testing.assert_frame_equal(res.table.drop(columns=["error"]), local.table.drop(columns=["error"]))

    again = run_sweep("knobs.walk", grid, store=store, executor="dask", scheduler=address)
    assert (again.ran, again.reused) == (0, 4)


@pytest.mark.parametrize("cluster", [[["--resources", "GPU=1"], []]], indirect=True)
def test_gpu_tasks_run_only_on_the_worker_with_the_gpu_resource(tmp_path, cluster):
    """Tasks claiming GPU=1 (the knobs walk's ``gpu`` flag stands in for ``--device cuda``) all land on w1, the worker
    started with ``--resources GPU=1``; the others may run anywhere and some run on w2."""
    address, procs = cluster
    store = RunStore(tmp_path / "gpu-store")
    grid = {"gpu": [True, False], "seed": [0, 1, 2, 3], "steps": [3], "sleep": [0.1]}
    res = run_sweep("knobs.walk", grid, store=store, executor="dask", scheduler=address)
    assert res.failed == 0 and len(res.table) == 8
    pids = {r["id"]: r["pid"] for r in store.rows("knobs.walk")}
    where = res.table.assign(pid=res.table["run_id"].map(pids))
    assert set(where[where["gpu"]]["pid"]) == {procs[1].pid}
    assert procs[2].pid in set(where[~where["gpu"]]["pid"])


def test_local_gpu_cluster_has_one_worker_per_gpu_each_seeing_its_own():
    """The cluster `--executor dask` starts on a GPU machine (here with two "GPUs" that are only names): each worker
    has GPU=1 and CUDA_VISIBLE_DEVICES set to its own index."""
    from distributed import Client

    from attnlab.core.sweep import gpu_cluster

    with gpu_cluster(2) as local, Client(local) as client:
        client.wait_for_workers(2, timeout=60)
        seen = client.run(lambda: os.environ.get("CUDA_VISIBLE_DEVICES"))
        resources = [w["resources"] for w in client.scheduler_info()["workers"].values()]
    assert sorted(seen.values()) == ["0", "1"] and resources == [{"GPU": 1}, {"GPU": 1}]
