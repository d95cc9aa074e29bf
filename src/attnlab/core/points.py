"""The points of a sweep: ``--grid KEY=V1,V2`` (a cartesian product), ``--configs FILE.jsonl`` (one JSON object
of overrides a line, each crossed with the grid), and the share of them that one task of an array runs
(``--num-tasks N --task-id I``)."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from attnlab.core.config import ConfigError, parse_value


def parse_grid(specs: Iterable[str]) -> dict[str, list[Any]]:
    """``["H=1,2,4", "law=flip,onehot"]`` → ``{"H": [1, 2, 4], "law": ["flip", "onehot"]}``."""
    grid: dict[str, list[Any]] = {}
    for spec in specs:
        key, sep, values = spec.partition("=")
        key = key.strip()
        if not sep or not key or not values.strip():
            raise ConfigError(f"--grid {spec!r}: expected KEY=V1,V2,..., e.g. --grid H=1,2,4")
        if key in grid:
            raise ConfigError(f"--grid {spec!r}: key {key!r} given twice")
        grid[key] = [parse_value(v) for v in _split_top(values)]
    return grid


def _split_top(text: str) -> list[str]:
    """Split on commas that are not inside brackets (so ``x=[1,2],[3,4]`` gives two lists)."""
    parts, depth, cur = [], 0, ""
    for ch in text:
        depth += ch in "[{"
        depth -= ch in "]}"
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    return [*parts, cur]


def expand(grid: Mapping[str, list[Any]]) -> list[dict[str, Any]]:
    """Cartesian product in grid order (last key varies fastest)."""
    keys = list(grid)
    return [dict(zip(keys, combo, strict=True)) for combo in itertools.product(*(grid[k] for k in keys))]


def parse_configs(path: str | Path) -> list[dict[str, Any]]:
    """The points of ``--configs FILE.jsonl``: one JSON object of overrides a line (blank lines skipped), each
    remembering where it is (``__where__``: the file and line number) for errors; a line that is not a JSON
    object is one ConfigError naming its line."""
    path = Path(path)
    try:
        lines = path.read_text().splitlines()
    except OSError as exc:
        raise ConfigError(f"--configs {path}: cannot read it ({exc.strerror or type(exc).__name__})") from None
    out = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"--configs {path} line {n}: not JSON ({exc.msg}, column {exc.colno})") from None
        if not isinstance(obj, dict) or "__where__" in obj:
            raise ConfigError(f"--configs {path} line {n}: expected a JSON object of overrides, "
                              'e.g. {"H": 2, "lr": 0.01}')
        out.append({"__where__": f"--configs {path} line {n}", **obj})
    if not out:
        raise ConfigError(f"--configs {path}: no configuration in it (one JSON object a line)")
    return out


def shard(points: list[Any], num_tasks: int | None, task_id: int | None) -> list[Any]:
    """Task ``task_id`` of ``num_tasks``: every ``num_tasks``-th point from the ``task_id``-th (both or neither)."""
    if num_tasks is None and task_id is None:
        return points
    if num_tasks is None or task_id is None:
        raise ConfigError("--task-id and --num-tasks go together (task I of N runs every N-th point from the I-th)")
    if num_tasks < 1:
        raise ConfigError(f"--num-tasks {num_tasks}: must be ≥ 1")
    if not 0 <= task_id < num_tasks:
        raise ConfigError(f"--task-id {task_id}: must be in 0..{num_tasks - 1} for --num-tasks {num_tasks} "
                          "(a SLURM array for it: --array=0-" + f"{num_tasks - 1})")
    return points[task_id::num_tasks]
