"""`make demo`'s selection: one headline experiment per study, each with overrides that are a valid config.

The Makefile's ``DEMO_<study>`` lines are ``attnlab run`` arguments; a renamed parameter or experiment must break
this test in a second, not the demo of a new user.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from attnlab import STUDIES
from attnlab.core.config import parse_value, resolve
from attnlab.core.registry import get

MAKEFILE = Path(__file__).resolve().parents[2] / "Makefile"


def demo_runs() -> dict[str, list[str]]:
    return {m[1]: shlex.split(m[2]) for m in re.finditer(r"^DEMO_(\w+)\s*:=\s*(.+)$", MAKEFILE.read_text(), re.M)
            if m[1] in STUDIES}


def test_the_demo_shows_every_study_with_valid_configs():
    runs = demo_runs()
    assert sorted(runs) == sorted(STUDIES)
    listed = re.search(r"^DEMO_STUDIES\s*:=\s*(.+)$", MAKEFILE.read_text(), re.M)[1].split()
    assert sorted(listed) == sorted(STUDIES)
    for study, args in runs.items():
        exp = get(args[0])
        assert exp.study == study and exp.figure is not None
        sets = [args[i + 1] for i, a in enumerate(args) if a == "--set"]
        assert len(args) == 1 + 2 * len(sets), f"only --set options are expected: {args}"
        overrides = {k: parse_value(v) for k, _, v in (s.partition("=") for s in sets)}
        resolve(exp.config, "quick", overrides)  # raises ConfigError naming a bad key or value
