"""Device memory: what is free, what a run may plan to use, and "would not fit" before a run starts.

Chunk and batch sizes come from the device's free memory, not from a CPU constant::

    chunk = memory.chunk_size(n_seqs, bytes_per_seq, device)          # ≤ half of what is free now
    memory.require(need, device, "fig1's SGD batch (N_b·L·D floats)")  # one-line WouldNotFit if it cannot fit

An experiment may declare its peak memory (``experiment(..., memory=fn)``, ``fn(config) -> bytes``, or
``(bytes, "what to reduce")``); :meth:`attnlab.core.runs.RunStore.run` checks it with :func:`require` before it
creates the run's directory, so a run that cannot fit stops with one line (exit 2) and writes nothing.

On CUDA the free memory is ``torch.cuda.mem_get_info``; on the CPU it is the kernel's ``MemAvailable``, lowered to
what a cgroup limit (a container, a SLURM job) leaves. ``$ATTNLAB_FREE_BYTES`` overrides both (tests, or to plan
for a smaller machine than the one at hand).
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from attnlab.core.config import ConfigError
from attnlab.core.device import label

GiB = 2**30

MemoryModel = Callable[[Any], "int | tuple[int, str]"]


class WouldNotFit(ConfigError):
    """A run or an allocation needs more memory than the device has free (one line; the CLI exits 2)."""


def free_bytes(device: torch.device | str, override: float | None = None) -> int:
    """Bytes free on ``device`` now: on CUDA, the driver's free memory (``mem_get_info``) plus the blocks torch's
    caching allocator holds but no tensor uses (reserved − allocated: free to this process, invisible to the
    driver); on the CPU, available memory (cgroup-aware).

    ``override`` (default ``$ATTNLAB_FREE_BYTES``) replaces the measurement: to plan for a smaller machine than
    the one at hand, or in tests."""
    override = override if override is not None else os.environ.get("ATTNLAB_FREE_BYTES")
    if override:
        return int(float(override))
    device = torch.device(device)
    if device.type == "cuda":
        cached = torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device)
        return int(torch.cuda.mem_get_info(device)[0] + cached)
    return _cpu_available()


def budget(device: torch.device | str, fraction: float = 0.5) -> int:
    """Bytes a run may plan to use on ``device``: ``fraction`` of what is free (the rest is headroom)."""
    if not 0 < fraction <= 1:
        raise ConfigError(f"memory fraction {fraction!r} must be in (0, 1]")
    return int(free_bytes(device) * fraction)


def chunk_size(
    n_items: int, bytes_per_item: int, device: torch.device | str, *, fraction: float = 0.5, at_least: int = 1
) -> int:
    """The largest chunk ≤ ``n_items`` whose ``chunk · bytes_per_item`` fits :func:`budget`, and ≥ ``at_least``.

    ``at_least`` wins over the budget (a chunk below it would be pointless); use :func:`require` when the
    floor itself must fit.
    """
    if n_items < 1:
        raise ValueError(f"n_items = {n_items}: must be ≥ 1")
    fit = budget(device, fraction) // max(1, int(bytes_per_item))
    return int(min(n_items, max(at_least, fit)))


def require(bytes_needed: int, device: torch.device | str, what: str, reduce: str | None = None) -> None:
    """Raise :class:`WouldNotFit` (one line: what needs how much, what is free where, what to reduce) if
    ``bytes_needed`` exceeds the memory free on ``device``."""
    free = free_bytes(device)
    if bytes_needed <= free:
        return
    hint = reduce or "reduce the sizes (--set KEY=VALUE, or --scale quick) or use a device with more memory"
    raise WouldNotFit(
        f"{what} needs {_gib(bytes_needed)} but {label(device)} has {_gib(free)} free; {hint}"
    )


def check_model(model: MemoryModel, config: Any, device: torch.device | str, what: str) -> int:
    """Evaluate an experiment's memory model on ``config`` and :func:`require` it; returns the bytes."""
    out = model(config)
    need, reduce = (out if isinstance(out, tuple) else (out, None))
    require(int(need), device, what, reduce)
    return int(need)


def _gib(n: int) -> str:
    return f"{n / GiB:.3g} GiB"


# -- the CPU's available memory ------------------------------------------------------------------


def _cpu_available() -> int:
    """MemAvailable (or psutil's / sysconf's), capped by the cgroup's limit minus its usage."""
    available = _meminfo_available()
    limit = _cgroup_room()
    return int(min(available, limit)) if limit is not None else int(available)


def _meminfo_available() -> int:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        import psutil

        return int(psutil.virtual_memory().available)
    except ImportError:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES"))


def _cgroup_room(root: Path = Path("/sys/fs/cgroup")) -> int | None:
    """Limit minus usage of this process's cgroup (v2, else v1); None when there is no limit."""
    pairs = ((root / "memory.max", root / "memory.current"),
             (root / "memory" / "memory.limit_in_bytes", root / "memory" / "memory.usage_in_bytes"))
    for limit_file, usage_file in pairs:
        try:
            text = limit_file.read_text().strip()
        except OSError:
            continue
        if text == "max" or int(text) >= 2**60:  # v1 writes "no limit" as a huge number
            return None
        try:
            usage = int(usage_file.read_text().strip())
        except (OSError, ValueError):
            usage = 0
        return max(0, int(text) - usage + _stat(usage_file.with_name("memory.stat"), ("inactive_file",
                                                                                      "total_inactive_file")))
    return None


def _stat(path: Path, keys: tuple[str, ...]) -> int:
    """The first of ``keys`` in a cgroup's memory.stat (reclaimable page cache counts as room), else 0."""
    try:
        rows = dict(line.split()[:2] for line in path.read_text().splitlines() if len(line.split()) >= 2)
    except OSError:
        return 0
    return next((int(rows[k]) for k in keys if k in rows), 0)


# -- measuring a run's peak, to check a memory model --------------------------------------------------------------


def measured_peak(experiment: str, config: Any, timeout: float = 900.0) -> dict[str, int]:
    """Peak memory one run of ``experiment`` adds, measured in a fresh process (to check a memory model).

    The experiment's function runs alone (no figures, no files but its checkpoints, in a temporary directory).
    CPU: the peak resident size during the run (VmHWM, reset just before it) minus the resident size just before
    it (libraries imported, streams set up), with glibc's mmap threshold fixed at 128 KiB so that every freed
    tensor goes back to the system: the peak of live memory. (With glibc's default, adaptive threshold the same
    run of ``paths.fig2c`` peaked anywhere between 0.4 and 2.4 GiB from one process to the next: heap
    fragmentation, not the run's needs.) CUDA: ``max_memory_allocated``. Returns ``{"peak": bytes, "baseline":
    bytes, "seconds": s}``.
    """
    import json
    import subprocess

    payload = json.dumps({"experiment": experiment, "config": config.model_dump(mode="json")})
    res = subprocess.run([sys.executable, "-m", "attnlab.core.memory", payload], capture_output=True, text=True,
                         timeout=timeout, env={**os.environ, "ATTNLAB_QUIET": "1",
                                                                "MALLOC_MMAP_THRESHOLD_": "131072"})
    if res.returncode != 0:
        raise RuntimeError(f"measuring {experiment} failed:\n{res.stderr[-3000:]}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def _probe(payload: str) -> dict[str, Any]:
    import json
    import tempfile
    import time

    from attnlab.core.config import resolve_from
    from attnlab.core.context import RunContext
    from attnlab.core.device import parse
    from attnlab.core.registry import get
    from attnlab.core.rng import Streams

    spec = json.loads(payload)
    exp = get(spec["experiment"])
    config = resolve_from(exp.config, spec["config"])
    device = parse(config.device)
    with tempfile.TemporaryDirectory() as tmp:
        ctx = RunContext(Path(tmp), config, device, Streams(config.seed, device), checkpoint_every=1e9,
                         publish_every=1e9)
        cuda = device.type == "cuda"
        if cuda:
            torch.cuda.reset_peak_memory_stats(device)
            baseline = torch.cuda.memory_allocated(device)
        else:
            _reset_peak_rss()
            baseline = _rss()
        t0 = time.perf_counter()
        exp.fn(config, ctx)
        seconds = time.perf_counter() - t0
        peak = torch.cuda.max_memory_allocated(device) if cuda else _peak_rss()
    return {"peak": int(peak - baseline), "baseline": int(baseline), "seconds": seconds}


def _rss() -> int:
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        return _peak_rss()


def _reset_peak_rss() -> None:
    """Reset this process's peak RSS to its current RSS (Linux ≥ 4.0: ``5`` to /proc/self/clear_refs)."""
    with contextlib.suppress(OSError):
        Path("/proc/self/clear_refs").write_text("5")


def _peak_rss() -> int:
    """VmHWM, the peak RSS of this process's memory since exec (or the last reset). Not ``ru_maxrss``: Linux carries
    that over exec from the parent, so a child of a large process reads the parent's size."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * (1 if sys.platform == "darwin" else 1024)


if __name__ == "__main__":
    import json

    print(json.dumps(_probe(sys.argv[1])))
