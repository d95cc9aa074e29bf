"""Typed summaries (core.summaries): a frozen dataclass names the flat keys of ``summary.json`` once; to_summary gives
exactly those keys and values back, from_summary builds the object from a stored run and its config, keys(config)
is the declared summary. Every experiment of every study has one (its round trip on a tiny run is checked with its
declared outputs, tests/core/test_outputs.py)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import pytest

from attnlab import STUDIES
from attnlab.core.config import resolve
from attnlab.core.outputs import expand
from attnlab.core.registry import experiments
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


def test_the_declared_summary_keys_are_the_typed_class_s():
    """An older ``declare(summary=...)`` beside a typed class is left aside: the class names the keys."""
    from attnlab.core.experiment import Experiment
    from attnlab.core.outputs import declare

    older = Experiment("s", "older", object, lambda c, ctx: None, outputs=declare(summary="optimal_loss corr_a0",
                                                                                  arrays={}), summary=Toy)
    derived = Experiment("s", "derived", object, lambda c, ctx: None, outputs=declare(arrays={}), summary=Toy)
    assert older.outputs.keys(Cfg()) == derived.outputs.keys(Cfg()) == set(Toy.keys(Cfg()))
    assert "corr_a1" in older.outputs.keys(Cfg())


def test_a_world_edits_the_typed_summary_and_writes_flat_keys():
    from attnlab.core.experiment import Result
    from attnlab.core.registry import get

    exp = get("potts.fig2d")
    cfg = resolve(exp.config, "quick", dict(exp.outputs.tiny))
    flat = {k: float(i) for i, k in enumerate(exp.summary.keys(cfg))}
    result = Result(summary=dict(flat), config=cfg)
    edit_summary(lambda s: dataclasses.replace(s, test={**s.test, 1.0: -1.0}))("potts.fig2d", result)
    assert result.summary == {**flat, "test_a1": -1.0}


@pytest.mark.parametrize("study", STUDIES)
def test_every_experiment_has_a_typed_summary_that_names_its_keys_at_every_scale(study):
    """At the quick and paper configs (no run): the class makes keys, which are the declared summary."""
    for exp in experiments(study):
        assert exp.summary is not None, f"{exp.key} has no typed summary"
        for scale in ("quick", "paper"):
            cfg = resolve(exp.config, scale, {})
            assert exp.outputs.keys(cfg) == set(exp.summary.keys(cfg)) != set(), (exp.key, scale)
