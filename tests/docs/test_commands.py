"""Every `attnlab run` and `attnlab sweep` command shown in the README and the docs names a registered experiment
with parameters and values its config accepts, so the pages never teach a command that stops at its first line."""

from __future__ import annotations

import itertools
import re
import shlex
from pathlib import Path

import pytest

from attnlab.core.config import ConfigError, parse_value, resolve
from attnlab.core.registry import get

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted(p for p in (ROOT / "docs").rglob("*.md") if "generated" not in p.parts)]
COMMAND = re.compile(r"(?:^|\s|`)(?:\.venv/bin/)?attnlab (run|sweep) ([^`#\n]+?(?:\\\n[^`#\n]+?)*)\s*(?:#|`|$)", re.M)


def commands() -> list[tuple[str, str, list[str]]]:
    out = []
    for page in PAGES:
        for m in COMMAND.finditer(page.read_text()):
            out.append((page.relative_to(ROOT).as_posix(), m[1], shlex.split(m[2].replace("\\\n", " "))))
    return out


def options(args: list[str], name: str) -> list[str]:
    return [args[i + 1] for i, a in enumerate(args[:-1]) if a == name]


def test_the_pages_show_commands():
    assert {verb for _, verb, _ in commands()} == {"run", "sweep"}


@pytest.mark.parametrize(("page", "verb", "args"), commands(), ids=lambda v: v if isinstance(v, str) else None)
def test_each_command_resolves_to_a_valid_config(page, verb, args):
    exp = get(args[0])
    scale = (options(args, "--scale") or ["quick"])[0]
    sets = {k: parse_value(v) for k, _, v in (s.partition("=") for s in options(args, "--set"))}
    pairs = (g.partition("=") for g in options(args, "--grid"))
    grid = {k: [parse_value(x) for x in v.split(",")] for k, _, v in pairs}
    seed = int((options(args, "--seed") or [0])[0])
    for point in itertools.product(*grid.values()):
        values = {**sets, **dict(zip(grid, point, strict=True))}
        try:
            resolve(exp.config, scale, values, seed=values.pop("seed", seed))
        except ConfigError as exc:  # a command on the reader's own file (X.npz) is valid but for that file
            files = [k for k, v in sets.items() if isinstance(v, str) and Path(v).suffix and not (ROOT / v).exists()]
            if not any(f"key '{k}'" in str(exc) and "no such file" in str(exc) for k in files):
                raise
