"""The built-in studies are listed in one place, ``attnlab.STUDIES`` (issue 30): the entry points in
``pyproject.toml`` declare exactly those names in that order (read from the file, not from an install that may be
stale), and every ``STUDY = "…"`` constant or ``Study("…", …)`` object in a study's modules names its own package,
so none of them is a second list that could drift. Read with ``ast``; nothing is imported."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import pytest

from attnlab import STUDIES

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "attnlab"


def test_pyproject_declares_the_studies_of_attnlab_studies_in_order():
    groups = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]
    for group in ("attnlab.studies", "attnlab.views"):
        assert tuple(groups[group]) == STUDIES, group
        assert all(v.split(":")[0].split(".")[:2] == ["attnlab", k] for k, v in groups[group].items()), group


def study_names(path: Path) -> list[str]:
    """The study names ``path`` declares at module level: ``STUDY = "name"`` and ``STUDY = Study("name", …)``."""
    out = []
    for node in ast.parse(path.read_text(), str(path)).body:
        if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None and any(
                isinstance(t, ast.Name) and t.id == "STUDY" for t in (node.targets if isinstance(node, ast.Assign)
                                                                      else [node.target])):
            value = node.value
            if isinstance(value, ast.Call) and value.args:
                value = value.args[0]
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                out.append(value.value)
    return out


@pytest.mark.parametrize("study", STUDIES)
def test_every_study_constant_names_its_own_package(study):
    found = {str(p.relative_to(SRC)): study_names(p) for p in sorted((SRC / study).rglob("*.py"))}
    found = {k: v for k, v in found.items() if v}
    assert found, f"no STUDY constant under attnlab/{study}"
    assert {k: v for k, v in found.items() if v != [study]} == {}


def test_a_constant_naming_another_study_is_caught(tmp_path):
    f = tmp_path / "x.py"
    f.write_text('from attnlab.core.study import Study\nSTUDY = "signal"\nOTHER = "potts"\n')
    assert study_names(f) == ["signal"]
    f.write_text('STUDY: object = Study("potts", "title", experiments=())\n')
    assert study_names(f) == ["potts"]
