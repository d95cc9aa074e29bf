"""Sweeps: a grid of configs → runs in the store → one table (Parquet) and one figure.

Executors:

* ``local`` (default): a process pool on this machine (``workers`` processes, torch threads pinned to
  ``cores // workers`` each); with one worker, runs in this process.
* ``dask``: a dask.distributed cluster — a ``LocalCluster`` when no scheduler is given, or the cluster
  at ``scheduler="tcp://host:8786"`` (start one with ``dask scheduler`` and ``dask worker
  tcp://host:8786 --nthreads 1`` on each machine, or with dask-jobqueue's ``SLURMCluster`` whose
  ``scheduler_address`` you pass here). Workers must see the same store directory (a shared
  filesystem) and have attnlab installed.

GPU tasks (``--device cuda``) claim the dask resource ``GPU: 1`` (:func:`task_resources`), so they run only on
workers started with ``--resources GPU=1``, one task per GPU at a time. Start one such worker per GPU, each seeing
its own GPU (``CUDA_VISIBLE_DEVICES=i dask worker tcp://head:8786 --nthreads 1 --resources GPU=1``); the
``LocalCluster`` that attnlab starts itself on a GPU machine does exactly that (:func:`gpu_cluster`). Each worker
sees its GPU as ``cuda:0``, so a dask sweep takes ``--device cuda``, not ``cuda:N``.

Before any work, every point's memory model (``experiment(..., memory=)``) is checked against this machine's
device (not for a remote ``--scheduler``, whose workers check their own when a task starts).

Batches and arrays: ``configs`` (``--configs FILE.jsonl``, :func:`parse_configs`) lists points one JSON object of
overrides a line, each line crossed with the grid (if any); ``num_tasks``/``task_id`` (``--num-tasks N --task-id I``,
:func:`shard`) run only every N-th point from the I-th, in the grid's stable order, so that a SLURM array of N jobs
(``--array=0-N-1``, ``--task-id $SLURM_ARRAY_TASK_ID``) runs the whole grid, every job validating all of it first.
The same command without ``--task-id`` afterwards reuses every run and writes the whole table.

Every task is keyed by its run id: the run store makes a run idempotent (a finished run is reused,
an interrupted one resumes from its checkpoint, concurrent attempts serialise on the run's lock), so
a task that dask re-schedules after a worker died completes exactly once. A failing task is recorded
with its error and does not stop the sweep; running the same sweep again only runs what is missing.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import re
import socket
from collections.abc import Iterable, Mapping
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from functools import partial
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import pandas as pd
import torch

from attnlab.core import progress
from attnlab.core.config import Config, ConfigError, resolve
from attnlab.core.device import index, kind, parse
from attnlab.core.experiment import Experiment
from attnlab.core.files import atomic_write, atomic_write_json
from attnlab.core.memory import check_model
from attnlab.core.points import expand, parse_configs, parse_grid, shard  # noqa: F401 (re-exported)
from attnlab.core.registry import get, load_studies
from attnlab.core.runs import RunFailed, RunStore


@dataclass(frozen=True)
class Task:
    """One run of a sweep, as shipped to a worker (plain data, picklable)."""

    experiment: str
    config: dict[str, Any]
    root: str
    run_id: str
    resources: dict[str, float] | None = None


def task_resources(exp: Experiment, config: Config) -> dict[str, float]:
    """Dask worker resources a task claims: ``{"GPU": 1}`` on a CUDA device, plus the experiment's own."""
    out: dict[str, float] = {"GPU": 1} if kind(config.device) == "cuda" else {}
    if exp.resources is not None:
        out.update(exp.resources(config))
    return out


def execute(task: Task) -> dict[str, Any]:
    """Run one task in whatever process it lands in; never raises for a failing experiment."""
    from attnlab.core.config import resolve_from
    from attnlab.core.device import pin_threads

    pin_threads()
    progress.set_quiet(True)
    load_studies()
    exp = get(task.experiment)
    config = resolve_from(exp.config, task.config)
    store = RunStore(task.root)
    try:
        record = store.run(exp, config)
        return {"run_id": record.run_id, "status": "done", "summary": record.summary, "error": None}
    except RunFailed as exc:
        return {"run_id": task.run_id, "status": "failed", "summary": {}, "error": exc.record.error}


@dataclass
class SweepResult:
    sweep_id: str
    sweep_dir: Path
    table: pd.DataFrame
    ran: int
    reused: int
    failed: int

    def to_json(self) -> dict[str, Any]:
        return {
            "sweep_dir": str(self.sweep_dir),
            "sweep_id": self.sweep_id,
            "runs": len(self.table),
            "ran": self.ran,
            "reused": self.reused,
            "failed": self.failed,
            "table": str(self.sweep_dir / "table.parquet"),
        }


def plan(
    exp: Experiment, grid: Mapping[str, list[Any]], scale: str, base: Mapping[str, Any], seed: int | None,
    device: str | None, configs: list[dict[str, Any]] | None = None,
) -> list[tuple[dict[str, Any], Config]]:
    """Resolve and validate every point (each line of ``configs`` × the grid) before any work starts."""
    if not grid and not configs:
        raise ConfigError("a sweep needs at least one --grid KEY=V1,V2,... or --configs FILE.jsonl")
    points = expand(grid) if grid else [{}]
    out = []
    for line in configs or [{}]:
        where, overrides = line.get("__where__"), {k: v for k, v in line.items() if k != "__where__"}
        both = sorted(set(overrides) & set(grid))
        try:
            if both:
                raise ConfigError(f"{', '.join(both)} given both here and by --grid")
            out += [({**overrides, **point}, resolve(exp.config, scale, {**base, **overrides, **point}, seed=seed,
                                                     device=device)) for point in points]
        except ConfigError as exc:
            raise ConfigError(f"{where}: {exc}" if where else str(exc)) from None
    return out


def run_sweep(
    experiment: str,
    grid: Mapping[str, list[Any]],
    *,
    store: RunStore,
    scale: str = "quick",
    base: Mapping[str, Any] | None = None,
    seed: int | None = None,
    device: str | None = None,
    executor: str = "local",
    scheduler: str | None = None,
    workers: int | None = None,
    configs: list[dict[str, Any]] | None = None,
    num_tasks: int | None = None,
    task_id: int | None = None,
) -> SweepResult:
    """Run the points of ``grid`` (× the lines of ``configs``), or task ``task_id`` of ``num_tasks`` of them."""
    exp = get(experiment)
    if executor not in ("local", "dask"):
        raise ConfigError(f"executor {executor!r} is not allowed; allowed: local, dask")
    if scheduler and executor != "dask":
        raise ConfigError("--scheduler only applies to --executor dask")
    if workers is not None and workers < 1:
        raise ConfigError(f"workers = {workers}: must be ≥ 1")
    all_points = plan(exp, grid, scale, base or {}, seed, device, configs)
    points = shard(all_points, num_tasks, task_id)
    if executor == "dask" and any(index(cfg.device) for _, cfg in points):
        raise ConfigError("--executor dask places each task on a GPU worker that sees its GPU as cuda:0: "
                          "give --device cuda, not cuda:N")
    if exp.memory is not None and not scheduler:
        for _, cfg in points:
            check_model(exp.memory, cfg, parse(cfg.device), f"{exp.key} ({cfg.device})")
    tasks = [Task(exp.key, cfg.model_dump(mode="json"), str(store.root), cfg.hash(exp.key), task_resources(exp, cfg))
             for _, cfg in points]
    client = connect_scheduler(scheduler) if scheduler else None  # before anything is written
    sweep_id = hashlib.sha256(json.dumps([exp.key, [t.run_id for t in tasks]]).encode()).hexdigest()[:16]
    sweep_dir = store.root / "sweeps" / exp.key / sweep_id
    atomic_write_json(
        sweep_dir / "sweep.json",
        {"experiment": exp.key, "scale": scale, "grid": dict(grid), "base": dict(base or {}),
         "configs": [{k: v for k, v in c.items() if k != "__where__"} for c in configs or []],
         "task": None if num_tasks is None else {"task_id": task_id, "num_tasks": num_tasks,
                                                 "points_in_all_tasks": len(all_points)},
         "runs": [t.run_id for t in tasks]},
    )

    outcomes: dict[str, dict[str, Any]] = {}
    todo = []
    for (_, cfg), task in zip(points, tasks, strict=True):
        found = store.lookup(exp, cfg)  # a corrupt run is recomputed (and says so)
        if found is not None:
            outcomes[task.run_id] = {"run_id": task.run_id, "status": "done", "summary": found.summary, "error": None,
                                     "reused": True}
        else:
            store.index.ensure(task.run_id, exp.key, store.run_dir(exp, task.run_id), task.config, "queued")
            todo.append(task)
    unique = list({t.run_id: t for t in todo}.values())  # a grid may repeat a point
    runner = partial(_run_dask, client=client) if executor == "dask" else _run_local
    for out in runner(unique, workers, scheduler):
        outcomes[out["run_id"]] = out

    table = _table(points, tasks, outcomes)
    atomic_write(sweep_dir / "table.parquet", lambda p: table.to_parquet(p, index=False))
    _figure(exp, table, list(dict.fromkeys(k for point, _ in points for k in point)), sweep_dir)
    reused = sum(1 for o in outcomes.values() if o.get("reused"))
    failed = sum(1 for o in outcomes.values() if o["status"] != "done")
    return SweepResult(sweep_id, sweep_dir, table, len(unique), reused, failed)


def _table(points: list[tuple[dict[str, Any], Config]], tasks: list[Task], outcomes: dict[str, dict]) -> pd.DataFrame:
    rows: list[dict[str, Any]] = []
    for (point, _), task in zip(points, tasks, strict=True):
        out = outcomes[task.run_id]
        rows.append({**{k: _cell(v) for k, v in point.items()}, "run_id": task.run_id, "status": out["status"],
                     "error": out["error"], **out["summary"]})
    return pd.DataFrame(rows) if rows else pd.DataFrame(columns=["run_id", "status", "error"])


def _cell(v: Any) -> Any:
    return json.dumps(v) if isinstance(v, list | dict) else v


def _figure(exp: Experiment, table: pd.DataFrame, keys: list[str], sweep_dir: Path) -> None:
    from attnlab.core.plotting import save_figure, sweep_figure

    done = table[table["status"] == "done"]
    if done.empty:
        return
    fig = (exp.sweep_figure or sweep_figure)(done, keys)
    if fig is not None:
        save_figure(fig, sweep_dir / "figures" / "sweep")


# -- executors -----------------------------------------------------------------------------------


def _worker_init(threads: int) -> None:
    os.environ["ATTNLAB_THREADS"] = str(threads)
    os.environ["ATTNLAB_QUIET"] = "1"


def _run_local(tasks: list[Task], workers: int | None, scheduler: str | None) -> Iterable[dict[str, Any]]:
    if not tasks:
        return
    cores = os.cpu_count() or 1
    workers = min(workers or cores, len(tasks))
    if workers == 1:
        for task in progress.track(tasks, "sweep"):
            yield execute(task)
        return
    ctx = get_context("spawn")
    with (
        ProcessPoolExecutor(workers, mp_context=ctx, initializer=_worker_init, initargs=(max(1, cores // workers),))
        as pool,
        progress.bar(len(tasks), f"sweep ({workers} processes)") as bar,
    ):
        futures: dict[Future, Task] = {pool.submit(execute, t): t for t in tasks}
        for fut in as_completed(futures):
            bar.advance()
            yield _outcome(futures[fut], fut)


def _outcome(task: Task, fut: Any) -> dict[str, Any]:
    try:
        return fut.result()
    except Exception as exc:  # the worker process itself died or the task could not be unpickled
        return {"run_id": task.run_id, "status": "failed", "summary": {}, "error": f"{type(exc).__name__}: {exc}"}


def connect_scheduler(address: str, timeout: float | None = None) -> Any:
    """A dask ``Client`` of the scheduler at ``address``, or one line (ConfigError) within ``timeout`` seconds
    (``$ATTNLAB_DASK_TIMEOUT``, 5): a refused port at once, a port where no scheduler answers at the timeout.

    The scheduler is asked for its identity first, under our own deadline: ``Client(timeout=...)`` waits forever
    on a peer that accepts the connection and never answers."""
    timeout = timeout if timeout is not None else float(os.environ.get("ATTNLAB_DASK_TIMEOUT", "5"))
    reach_scheduler(address, min(timeout, 3.0))
    try:
        from distributed import Client
    except ImportError:
        raise ConfigError("--executor dask needs the dask extra: pip install 'attnlab[dask]'") from None
    not_dask = (f"--scheduler {address}: something answered there, but not a dask scheduler; give the address "
                "`dask scheduler` prints (tcp://HOST:8786 by default)")
    try:
        identity = asyncio.run(asyncio.wait_for(_identity(address, timeout), timeout))
    except (OSError, TimeoutError) as exc:
        raise ConfigError(f"--scheduler {address}: no dask scheduler answered within {timeout:g} s "
                          f"({type(exc).__name__})") from None
    except Exception:  # another protocol's bytes read as dask frames: absurd lengths (MemoryError), bad msgpack
        raise ConfigError(not_dask) from None
    if not (isinstance(identity, dict) and identity.get("type") == "Scheduler"):
        raise ConfigError(not_dask)
    try:
        return Client(address, timeout=timeout)
    except (OSError, TimeoutError) as exc:
        raise ConfigError(f"--scheduler {address}: no dask scheduler answered within {timeout:g} s "
                          f"({type(exc).__name__})") from None


async def _identity(address: str, timeout: float) -> dict[str, Any]:
    from distributed.comm import connect

    comm = await connect(address, timeout=timeout)
    try:
        await comm.write({"op": "identity"})
        return await comm.read()
    finally:
        comm.abort()


def reach_scheduler(address: str, timeout: float = 3.0) -> None:
    """Fail fast, before anything is written, when nothing listens at a ``tcp://host:port`` scheduler address."""
    m = re.match(r"^(?:tcp://)?\[?([^\]/]+?)\]?:(\d+)/?$", address)
    if m is None:
        if re.match(r"^(tls|ucx|inproc|ws|wss)://", address):
            return  # other transports: the identity request's deadline speaks for them
        raise ConfigError(f"--scheduler {address!r}: expected tcp://HOST:PORT, e.g. tcp://127.0.0.1:8786")
    host, port = m.group(1), int(m.group(2))
    try:
        socket.create_connection((host, port), timeout=timeout).close()
    except OSError as exc:
        why = exc.strerror or type(exc).__name__
        raise ConfigError(f"--scheduler {address}: cannot reach a dask scheduler there ({why}); start one with "
                          "`dask scheduler`, or leave out --scheduler for a local cluster") from None


def _run_dask(tasks: list[Task], workers: int | None, scheduler: str | None, client: Any = None
              ) -> Iterable[dict[str, Any]]:
    try:
        from distributed import Client, LocalCluster
        from distributed import as_completed as dask_completed
    except ImportError:
        raise ConfigError("--executor dask needs the dask extra: pip install 'attnlab[dask]'") from None
    if not tasks:
        if client is not None:
            client.close()
        return
    cluster = None
    if client is None:
        gpus = torch.cuda.device_count() if any(t.resources and "GPU" in t.resources for t in tasks) else 0
        cluster = gpu_cluster(min(workers or gpus, gpus)) if gpus else LocalCluster(
            n_workers=workers or (os.cpu_count() or 1), threads_per_worker=1, processes=True, dashboard_address=None)
        client = Client(cluster)
    try:
        futures = {client.submit(execute, t, key=f"attnlab-run-{t.run_id}", pure=False,
                                 resources=t.resources or None): t for t in tasks}
        with progress.bar(len(tasks), "sweep (dask)") as bar:
            for fut in dask_completed(list(futures)):
                bar.advance()
                yield _outcome(futures[fut], fut)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def gpu_workers(n_gpus: int) -> dict[str, dict[str, Any]]:
    """Worker specs of a local GPU cluster: one single-threaded worker per GPU, each with the resource ``GPU: 1``
    and ``CUDA_VISIBLE_DEVICES`` set to its own GPU (so that it computes on ``cuda:0``, its GPU)."""
    from distributed import Nanny

    return {f"gpu{i}": {"cls": Nanny, "options": {
        "nthreads": 1, "resources": {"GPU": 1}, "host": "127.0.0.1", "dashboard": False,
        "env": {"CUDA_VISIBLE_DEVICES": str(i), "ATTNLAB_THREADS": "1", "ATTNLAB_QUIET": "1"}}}
        for i in range(n_gpus)}


def gpu_cluster(n_gpus: int) -> Any:
    """A local dask cluster of :func:`gpu_workers` (what ``--executor dask`` starts for a CUDA sweep)."""
    from distributed import Scheduler, SpecCluster

    scheduler = {"cls": Scheduler, "options": {"host": "127.0.0.1", "dashboard": False}}
    return SpecCluster(workers=gpu_workers(n_gpus), scheduler=scheduler, name="attnlab-gpu",
                       silence_logs=logging.WARNING)
