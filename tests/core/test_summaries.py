"""Typed summaries (core.summaries): a frozen dataclass names the flat keys of ``summary.json`` once; to_summary gives
exactly those keys and values back, from_summary builds the object from a stored run and its config, keys(config)
is the declared summary. Every experiment of every study at its tiny size: the typed summary round-trips key for key
(and, where a study keeps its declared templates, makes exactly those keys)."""

from __future__ import annotations

import dataclasses
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from attnlab.core.config import resolve
from attnlab.core.context import RunContext
from attnlab.core.device import resolve_device
from attnlab.core.experiment import experiments
from attnlab.core.outputs import expand
from attnlab.core.rng import Streams
from attnlab.core.summaries import Summary, edit_summary, fill, group, key


class Cfg:
    a_values = (0.0, 0.5, 1.0)
    models = ("factored", "vanilla1")
    Ms = (1, 20)
    lams = (1e-4, 0.01)


@dataclass(frozen=True)
class Fit(Summary):
    test: float
    epochs_to_gap: float = key("epochs_to_gap_0.1")


@dataclass(frozen=True)
class Extra(Summary):
    sink: float


@dataclass(frozen=True)
class Toy(Summary):
    optimal_loss: float
    corr: dict[float, float] = key("corr_a{a_values}")
    dev: dict[tuple[float, str], float] = key("dev_lam{lams}_{weight}", weight=("paper", "exact"))
    models: dict[str, Fit] = group("{models}_*", Fit)
    factored: Extra | None = group("factored_*", Extra, when=lambda c: "factored" in c.models)
    rise: dict[float, float] = key("rise_lam{lams}", when=lambda c: 1 in c.Ms)


FLAT = {"optimal_loss": 0.5, "corr_a0": 0.1, "corr_a0.5": 0.2, "corr_a1": None,
        "dev_lam0.0001_paper": 1.0, "dev_lam0.0001_exact": 2.0, "dev_lam0.01_paper": 3.0, "dev_lam0.01_exact": 4.0,
        "factored_test": 1.5, "factored_epochs_to_gap_0.1": 7.0, "vanilla1_test": 2.5,
        "vanilla1_epochs_to_gap_0.1": None, "factored_sink": 0.9, "rise_lam0.0001": 0.3, "rise_lam0.01": 0.4}


def test_flat_keys_become_attributes_and_come_back_exactly():
    s = Toy.from_summary(FLAT, Cfg())
    assert s.corr == {0.0: 0.1, 0.5: 0.2, 1.0: None}  # None: NaN as stored ("never happened")
    assert s.dev[0.01, "paper"] == 3.0 and s.models["vanilla1"].test == 2.5 and s.factored == Extra(0.9)
    assert s.models["factored"].epochs_to_gap == 7.0 and s.rise[1e-4] == 0.3
    assert s.to_summary() == FLAT
    assert Toy.from_summary(s.to_summary(), Cfg()) == s
    assert sorted(Toy.keys(Cfg())) == sorted(FLAT)


def test_when_leaves_out_what_a_config_does_not_make():
    class Other(Cfg):
        models = ("vanilla1",)
        Ms = (20,)

    flat = {k: v for k, v in FLAT.items() if not k.startswith(("factored", "rise"))}
    s = Toy.from_summary(flat, Other())
    assert s.factored is None and s.rise == {} and list(s.models) == ["vanilla1"]
    assert s.to_summary() == flat and sorted(Toy.keys(Other())) == sorted(flat)


def test_a_renamed_attribute_or_key_fails_loudly():
    @dataclass(frozen=True)
    class Renamed(Summary):  # ``optimal_loss`` renamed: its key is no longer the one the run writes
        optimum: float
        corr: dict[float, float] = key("corr_a{a_values}")

    with pytest.raises(KeyError, match="'optimum' missing"):
        Renamed.from_summary(FLAT, Cfg())
    s = Toy.from_summary(FLAT, Cfg())
    with pytest.raises(AttributeError):
        s.optimum  # noqa: B018
    with pytest.raises(TypeError):
        dataclasses.replace(s, optimum=1.0)


def test_keys_are_formatted_as_the_declarations_expand_them():
    for template in ("corr_a{a_values}", "dev_lam{lams}_x", "m{Ms}/test"):
        name = template[template.index("{") + 1:template.index("}")]
        values = getattr(Cfg, name)
        assert [fill(template, {name: v}) for v in values] == expand(template, Cfg())


def test_declared_templates_are_kept_beside_a_typed_class_else_derived_from_it():
    from attnlab.core.experiment import Experiment
    from attnlab.core.outputs import declare

    kept = Experiment("s", "kept", object, lambda c, ctx: None, outputs=declare(summary="optimal_loss corr_a{a_values}",
                                                                                arrays={}), summary=Toy)
    derived = Experiment("s", "derived", object, lambda c, ctx: None, outputs=declare(arrays={}), summary=Toy)
    assert kept.outputs.keys(Cfg()) == {"optimal_loss", "corr_a0", "corr_a0.5", "corr_a1"}  # what was declared
    assert derived.outputs.keys(Cfg()) == set(Toy.keys(Cfg()))


def test_a_world_edits_the_typed_summary_and_writes_flat_keys():
    from attnlab.core.experiment import Result, get

    exp = get("potts.fig2d")
    cfg = resolve(exp.config, "quick", dict(exp.outputs.tiny))
    flat = {k: float(i) for i, k in enumerate(exp.summary.keys(cfg))}
    result = Result(summary=dict(flat), config=cfg)
    edit_summary(lambda s: dataclasses.replace(s, test={**s.test, 1.0: -1.0}))("potts.fig2d", result)
    assert result.summary == {**flat, "test_a1": -1.0}


TYPED = {e.key: e for study in ("potts", "specialization", "signal", "clustering") for e in experiments(study)}


@pytest.mark.parametrize("name", sorted(TYPED))
def test_every_typed_experiment_round_trips_its_summary(name):
    exp = TYPED[name]
    assert exp.summary is not None, f"{name} has no typed summary"
    cfg = resolve(exp.config, "quick", dict(exp.outputs.tiny))
    device = resolve_device(cfg.device)
    with tempfile.TemporaryDirectory() as d:
        result = exp.fn(cfg, RunContext(Path(d), cfg, device, Streams(cfg.seed, device)))
    s = exp.summary.from_summary(result.summary, cfg)
    flat = s.to_summary()
    assert flat == result.summary  # key for key, value for value: summary.json is what it was
    assert sorted(exp.summary.keys(cfg)) == sorted(result.summary)
    assert exp.summary.from_summary(flat, cfg) == s
    # a study that keeps its summary templates in a measured module: the class makes exactly those
    assert sorted(exp.outputs.keys(cfg)) == sorted(exp.summary.keys(cfg))


PATHS = {e.key: e for e in experiments("paths")}


@pytest.mark.parametrize("name", sorted(PATHS))
def test_every_paths_experiment_round_trips_its_summary(name):
    """paths declares its summary keys in outputs.py (measured code: the declaration stays), so its typed classes
    (paths.summaries.TYPED) are checked against the declaration and against a tiny run, key for key."""
    from attnlab.paths.summaries import TYPED

    exp = PATHS[name]
    cls = TYPED[name]
    cfg = resolve(exp.config, "quick", dict(exp.outputs.tiny))
    assert sorted(cls.keys(cfg)) == sorted(exp.outputs.keys(cfg))  # the class is the declaration
    device = resolve_device(cfg.device)
    with tempfile.TemporaryDirectory() as d:
        result = exp.fn(cfg, RunContext(Path(d), cfg, device, Streams(cfg.seed, device)))
    s = cls.from_summary(result.summary, cfg)
    flat = s.to_summary()
    assert flat == result.summary
    assert cls.from_summary(flat, cfg) == s


def test_paths_typed_summaries_match_the_declaration_at_the_quick_and_paper_scales():
    """Every paths experiment at its quick and paper configs (no run): the typed keys are the declared ones."""
    from attnlab.paths.summaries import TYPED

    assert set(TYPED) == set(PATHS)
    for name, exp in PATHS.items():
        for scale in ("quick", "paper"):
            cfg = resolve(exp.config, scale, {})
            assert sorted(TYPED[name].keys(cfg)) == sorted(exp.outputs.keys(cfg)), (name, scale)
