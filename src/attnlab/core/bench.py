"""The driver every ``benchmarks/<study>.py`` shares: run the named parts, print each result, write one JSON.

A benchmark script defines its parts as functions returning a dict (workload, times, ratios) and ends with::

    if __name__ == "__main__":
        bench.main("potts", {"sampling": sampling, "training": training})

``attnlab bench potts`` runs every part; ``python -m benchmarks.potts sampling`` picks some. The JSON goes to
``$ATTNLAB_BENCH_OUT/<study>.json`` (default ``benchmarks/results``), with the machine it was measured on.
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


def threads() -> int:
    """Torch threads for a benchmark: ``$ATTNLAB_THREADS`` (default 1, the pinned setting of the tests), set now."""
    n = int(os.environ.get("ATTNLAB_THREADS", "1"))
    torch.set_num_threads(n)
    return n


def timed(fn: Callable[[], Any], repeat: int = 1) -> tuple[float, Any]:
    """(mean seconds per call over ``repeat`` calls, the last result)."""
    t0 = time.perf_counter()
    for _ in range(repeat):
        out = fn()
    return (time.perf_counter() - t0) / repeat, out


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
