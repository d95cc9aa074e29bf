"""A study declared in one place (issue 30): the Study object lists its experiments (each whole), the loader
registers exactly those, claims reach experiments by object, and a world's overrides may be keyed by the object."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from attnlab.core.experiment import Experiment, Result
from attnlab.core.registry import get
from attnlab.core.study import Study
from attnlab.core.worlds import World, WorldContext


def _run(config, ctx) -> Result:
    """A stand-in run."""
    return Result(summary={"x": 1.0})


def test_a_study_refuses_a_repeated_or_foreign_experiment():
    from my_study.experiments import WalkConfig

    a = Experiment("mine", "a", WalkConfig, _run)
    assert a.title == "A stand-in run."  # the run's docstring, as the decorator did
    with pytest.raises(ValueError, match="more than once"):
        Study("mine", "t", experiments=(a, a))
    with pytest.raises(ValueError, match=r"another study: other\.b"):
        Study("mine", "t", experiments=(a, Experiment("other", "b", WalkConfig, _run)))
    assert Study("mine", "t", experiments=(a,)).experiment("a") is a
    with pytest.raises(KeyError, match="has a"):
        Study("mine", "t", experiments=(a,)).experiment("b")


@pytest.mark.parametrize("module", ["attnlab.potts.study", "my_study.study", "knobs_study.study"])
def test_the_registry_holds_the_declared_objects_whole(module):
    import importlib

    study = importlib.import_module(module).STUDY
    for exp in study.experiments:
        assert get(exp.key) is exp and get(exp) is exp
        assert exp.figure is not None and exp.cost is not None and exp.outputs is not None, exp.key


def test_potts_claims_name_experiments_by_object_not_by_string():
    """Go-to-definition works from a claim to its experiment: no experiment key spelled as a string in the claims."""
    from attnlab.potts.study import STUDY

    keys = "|".join(re.escape(e.key) for e in STUDY.experiments)
    root = Path(__import__("attnlab.potts.claims", fromlist=["x"]).__file__).parent
    found = [f"{f.name}: {m}" for f in root.glob("*.py") for m in re.findall(rf'"({keys})"', f.read_text())]
    assert not found, found


def test_a_world_keyed_by_the_experiment_object_overrides_its_runs(tmp_path):
    from my_study.experiments import WALK

    from attnlab.core.runs import RunStore

    ctx = WorldContext("quick", RunStore(tmp_path))
    ctx.world = World("short walks", overrides={WALK: {"steps": 3}})
    assert ctx.run(WALK).arrays["path"].shape == (3, 3)
    assert ctx.run("toy.walk").arrays["path"].shape == (3, 3)  # the same run, asked by name
