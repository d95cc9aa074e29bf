"""Typed arrays (core.arrays): a class names stored arrays with their dimensions, checks each one a run gives it
(present, one axis per dimension) and gives the same arrays back; every study's class agrees with its experiments'
declared outputs (as many dimensions as declared axes, the declared index names), so neither can drift alone."""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, replace
from types import SimpleNamespace

import numpy as np
import pytest

from attnlab.clustering.summaries import ARRAYS as CLUSTERING
from attnlab.core.arrays import Arrays, MissingArray, dims, edit_arrays, nested
from attnlab.core.config import resolve
from attnlab.core.registry import get
from attnlab.paths.summaries import ARRAYS as PATHS
from attnlab.potts.summaries import ARRAYS as POTTS
from attnlab.signal.summaries import ARRAYS as SIGNAL
from attnlab.specialization.summaries import ARRAYS as SPECIALIZATION


class Cfg:
    acts = ("softmax", "bsoftmax")
    panels = (0, 1)


@dataclass(frozen=True, eq=False)
class Panel(Arrays):
    time: np.ndarray = dims("time")
    m: np.ndarray = dims("time", "head", "feature", observable="m")


@dataclass(frozen=True, eq=False)
class Run(Arrays):
    U: np.ndarray = dims("seed", "path", "path_prime")
    b: dict[tuple[str, str], np.ndarray] = dims("time", "head", key="{acts}/{src}_b", src=("sim", "theory"))
    panel: dict[int, Panel] = nested("panel{panels}/*", Panel)
    extra: np.ndarray | None = dims("time", key="x/extra", when=lambda c: False)


def _stored() -> dict[str, np.ndarray]:
    out = {"U": np.arange(18.0).reshape(2, 3, 3), "unread": np.zeros(1)}
    out.update({f"{a}/{s}_b": np.full((4, 2), i) for i, (a, s) in enumerate(
        (a, s) for a in Cfg.acts for s in ("sim", "theory"))})
    for p in Cfg.panels:
        out.update({f"panel{p}/time": np.arange(4.0) + p, f"panel{p}/m": np.ones((4, 2, 3)) * p})
    return out


def test_typed_arrays_read_the_stored_arrays_by_attribute_and_give_them_back():
    stored = _stored()
    a = Run.from_arrays(stored, Cfg())
    assert a.U is stored["U"] and a.b["bsoftmax", "theory"] is stored["bsoftmax/theory_b"]
    assert a.panel[1].m is stored["panel1/m"] and a.extra is None  # the stored arrays themselves, not copies
    back = a.to_arrays(Cfg())
    assert back.keys() == stored.keys() - {"unread"} and all(back[k] is stored[k] for k in back)
    assert Run.dims("U") == ("seed", "path", "path_prime") and Panel.dims("m") == ("time", "head", "feature")
    assert Run.names(Cfg())["softmax/sim_b"] == ("time", "head") and next(iter(Run.names(Cfg()))) == "U"
    assert Run.observables(Cfg()) == {"panel0/m": "m", "panel1/m": "m"}
    with pytest.raises(TypeError, match="Panel"):
        Run.dims("panel")
    with pytest.raises(KeyError, match="no field 'V'"):
        Run.dims("V")


def test_a_world_edits_a_runs_arrays_through_the_class():
    stored = _stored()
    result = SimpleNamespace(arrays=stored, config=Cfg(), summary={})
    edited = edit_arrays(Run, lambda a: replace(a, U=-a.U, panel={**a.panel, 1: replace(a.panel[1], m=a.panel[0].m)}))(
        "x.run", result)
    assert np.array_equal(edited.arrays["U"], -np.arange(18.0).reshape(2, 3, 3))
    assert edited.arrays["panel1/m"] is stored["panel0/m"] and edited.arrays["unread"] is stored["unread"]
    assert edited.arrays.keys() == stored.keys()
    with pytest.raises(MissingArray, match="'U'"):  # a world on arrays the run does not have fails, naming them
        edit_arrays(Run, lambda a: a)("x.run", SimpleNamespace(arrays={}, config=Cfg()))


def test_a_missing_array_or_a_wrong_number_of_axes_is_named():
    stored = _stored()
    del stored["panel1/time"]
    with pytest.raises(MissingArray, match="'panel1/time' missing") as e:
        Run.from_arrays(stored, Cfg())
    assert e.value.args[0] == "panel1/time" and isinstance(e.value, KeyError)
    stored = {**_stored(), "U": np.zeros((3, 3))}
    with pytest.raises(ValueError, match=r"'U' has shape \(3, 3\), 2 axes for the 3 dimensions "
                                         r"\('seed', 'path', 'path_prime'\)"):
        Run.from_arrays(stored, Cfg())
    with pytest.raises(ValueError, match="needs the run's config"):
        Run.from_arrays(_stored())
    with pytest.raises(ValueError, match="no '\\*'"):
        nested("panel", Panel)


CLASSES = {**PATHS, **POTTS, **SIGNAL, **SPECIALIZATION, **CLUSTERING}


@pytest.mark.parametrize("key", sorted(CLASSES))
def test_every_typed_arrays_class_agrees_with_its_experiments_declared_outputs(key):
    exp = get(key)
    cfg = resolve(exp.config, "quick", dict(exp.outputs.tiny))
    shapes, index = exp.outputs.shapes(cfg), exp.outputs.axes(cfg) or {}
    for cls in CLASSES[key]:
        for name, names in cls.names(cfg).items():
            match = name if name in shapes else next((k for k in shapes if "*" in k and fnmatch.fnmatchcase(
                name, k)), None)
            assert match is not None, f"{cls.__name__}: {name!r} is not among {key}'s declared arrays"
            if shapes[match] is not None:
                assert len(shapes[match]) == len(names), f"{cls.__name__}: {name!r} {names} vs {shapes[match]}"
        for name, obs in cls.observables(cfg).items():
            declared = [v for k, v in index.items() if fnmatch.fnmatchcase(obs, k)]
            assert declared, f"{cls.__name__}: {name!r} names the observable {obs!r}, which {key} does not index"
            names = cls.names(cfg)[name]
            assert names[len(names) - len(declared[0]):] == declared[0], (name, names, declared[0])
