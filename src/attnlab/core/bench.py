"""The driver every ``benchmarks/<study>.py`` shares: run the named parts, print each result, write one JSON.

A benchmark script defines its parts as functions returning a dict (workload, times, ratios) and ends with::

    if __name__ == "__main__":
        bench.main("potts", {"sampling": sampling, "training": training})

``attnlab bench potts`` runs every part; ``python -m benchmarks.potts sampling`` picks some. The JSON goes to
``$ATTNLAB_BENCH_OUT/<study>.json`` (default ``benchmarks/results``, uncommitted scratch), with the machine it was
measured on. A script that can run on a GPU takes its device from :func:`device` (``attnlab bench --device cuda``);
``attnlab bench --record`` turns the JSON into a committed record ``results/benchmarks/<study>-<device>.json``
(:func:`record`: device, date, commit, torch/CUDA versions, one row per part).
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

_ASKED: list[str] = []  # devices the running script asked for through device()


def threads() -> int:
    """Torch threads for a benchmark: ``$ATTNLAB_THREADS`` (default 1, the pinned setting of the tests), set now."""
    n = int(os.environ.get("ATTNLAB_THREADS", "1"))
    torch.set_num_threads(n)
    return n


def device() -> torch.device:
    """The device a benchmark computes on: ``$ATTNLAB_BENCH_DEVICE`` (``attnlab bench --device``), default cpu."""
    from attnlab.core.device import resolve_device

    name = os.environ.get("ATTNLAB_BENCH_DEVICE", "cpu")
    _ASKED.append(name)
    return resolve_device(name)


def timed(fn: Callable[[], Any], repeat: int = 1) -> tuple[float, Any]:
    """(mean seconds per call over ``repeat`` calls, the last result); CUDA work is waited for at both ends."""
    _sync()
    t0 = time.perf_counter()
    for _ in range(repeat):
        out = fn()
    _sync()
    return (time.perf_counter() - t0) / repeat, out


def _sync() -> None:
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.synchronize()


def machine(threads: int) -> dict[str, Any]:
    """Python, torch, thread count, CPU and load average: what a timing depends on."""
    return {"python": platform.python_version(), "torch": torch.__version__, "threads": threads,
            "cpu": platform.processor() or platform.machine(), "load_avg": list(os.getloadavg())}


def main(study: str, parts: dict[str, Callable[[], dict[str, Any]]], threads: int = 1,
         argv: list[str] | None = None) -> dict[str, Any]:
    """Run the parts named in ``argv`` (default ``sys.argv[1:]``; none named: all of them) and write the JSON."""
    names = sys.argv[1:] if argv is None else argv
    unknown = [n for n in names if n not in parts]
    if unknown:
        raise SystemExit(f"{study} benchmark: unknown part(s) {', '.join(unknown)}; have {', '.join(parts)}")
    out: dict[str, Any] = {"machine": machine(threads)}
    for name in names or list(parts):
        print(f"[{study}] {name} …", flush=True)
        out[name] = parts[name]()
        print(json.dumps(out[name], indent=2), flush=True)
    path = Path(os.environ.get("ATTNLAB_BENCH_OUT", "benchmarks/results")) / f"{study}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=2) + "\n")
    print(f"→ {path}")
    return out


def record(study: str, result: dict[str, Any], requested: str, out_dir: Path) -> Path:
    """Write the committed benchmark record ``out_dir/<study>-<device>.json`` from a script's JSON ``result``.

    ``<device>`` is ``cpu`` or the GPU's name (``nvidia-h100-80gb-hbm3``). A script that never asked for its device
    (:func:`device`) ran on the CPU whatever was requested, and its record says so.
    """
    from attnlab.core.device import details, resolve_device
    from attnlab.core.files import atomic_write_json
    from attnlab.core.runs import git_revision

    used = requested if requested in _ASKED or requested == "cpu" else "cpu"
    dev = resolve_device(used)
    info = details(dev)
    label = "cpu" if dev.type == "cpu" else _slug(info["name"])
    rows = [{"part": k, **(v if isinstance(v, dict) else {"value": v})} for k, v in result.items() if k != "machine"]
    note = "" if used == requested else f"this benchmark has no device option: it ran on the CPU, not {requested}"
    doc = {"study": study, "device": used, "device_label": label, "device_details": info,
           "requested_device": requested, "note": note,
           "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "commit": git_revision(), "torch": torch.__version__,
           "cuda": torch.version.cuda, "machine": result.get("machine", {}), "rows": rows}
    path = out_dir / f"{study}-{label}.json"
    atomic_write_json(path, doc)
    return path


def _slug(text: str) -> str:
    return "-".join("".join(c if c.isalnum() else " " for c in text.lower()).split()) or "gpu"
