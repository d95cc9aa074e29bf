"""``attnlab bench``: run the benchmark scripts of ``benchmarks/`` (a source checkout), all parts or the named
ones, on a device; ``--record`` writes the committed record ``results/benchmarks/<study>-<device>.json`` and
regenerates the README's and docs/benchmarks.md's tables of the comparisons with the papers' public code."""

from __future__ import annotations

import json
import os
import runpy
import sys
from pathlib import Path
from typing import Annotated

import typer

from attnlab import STUDIES
from attnlab.cli_common import DeviceOpt, checked_device, guard, out_console
from attnlab.core.config import ConfigError


@guard
def bench(
    study: Annotated[str | None, typer.Argument(help="one study (default: all)")] = None,
    out: Annotated[Path, typer.Option("--out", help="directory for the JSON results")] = Path("benchmarks/results"),
    device: DeviceOpt = None,
    record: Annotated[bool, typer.Option("--record", help="also write results/benchmarks/<study>-<device>.json "
                                         "(committed: device, date, commit, versions, rows)")] = False,
    part: Annotated[list[str] | None, typer.Option("--part", help="only this part of the script (repeatable; "
                                                   "default: all; an unknown name lists them)")] = None,
    rounds: Annotated[int, typer.Option("--rounds", help="alternated rounds of each comparison with a paper's "
                                        "public code (at least 3 to be published)")] = 3,
) -> None:
    """Run the benchmark scripts of benchmarks/ (from a source checkout); each writes JSON.

    Through runpy, not ``python benchmarks/<study>.py``: run directly, a script's folder goes first on sys.path
    and benchmarks/signal.py would shadow the standard library's ``signal``."""
    from attnlab.core import bench as bench_mod

    root = _bench_dir()
    os.environ["ATTNLAB_BENCH_DEVICE"] = checked_device(device) or "cpu"
    chosen = [study] if study else list(STUDIES)
    for s in chosen:
        script = root / f"{s}.py"
        if not script.exists():
            raise ConfigError(f"no benchmark for {s!r} in {root} (have: "
                              f"{', '.join(p.stem for p in root.glob('*.py')) or 'none'})")
    if rounds < 1:
        raise ConfigError(f"--rounds {rounds}: must be ≥ 1")
    os.environ["ATTNLAB_BENCH_OUT"] = str(out)
    os.environ["ATTNLAB_BENCH_ROUNDS"] = str(rounds)
    argv = sys.argv
    try:
        for s in chosen:
            out_console.print(f"[bold]benchmark {s}[/bold]")
            sys.argv = [str(root / f"{s}.py"), *(part or [])]  # the parts to run (none named: all)
            bench_mod._ASKED.clear()
            runpy.run_path(sys.argv[0], run_name="__main__")
            if record:
                result = json.loads((out / f"{s}.json").read_text())
                path = bench_mod.record(s, result, os.environ["ATTNLAB_BENCH_DEVICE"], root.parent / "results" /
                                        "benchmarks")
                out_console.print(f"record → {path}")
                pages = [p for p in (root.parent / "README.md", root.parent / "docs" / "benchmarks.md") if p.exists()]
                for page in bench_mod.update_pages(pages, path.parent):
                    out_console.print(f"updated {page} (its tables of the records)")
    finally:
        sys.argv = argv


def _bench_dir() -> Path:
    for base in (Path.cwd(), Path(__file__).resolve().parents[2]):
        if (base / "benchmarks").is_dir():
            return base / "benchmarks"
    raise ConfigError("benchmarks/ not found: run `attnlab bench` from the attnlab source checkout")
