"""Declared outputs (core.outputs): every experiment that declares its outputs runs at its tiny size (no figures,
no store) and produces exactly the summary keys and arrays, of the declared shapes, it declares, and metrics that
the store writes in the one tidy schema (core.metrics), and its typed summary (core.summaries) reads it and gives
the same flat summary back (its typed arrays, core.arrays, its arrays); templates expand over config fields and a
mismatch is named in one line."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from attnlab.clustering.summaries import ARRAYS as clustering_arrays
from attnlab.core.config import resolve
from attnlab.core.context import RunContext
from attnlab.core.device import resolve_device
from attnlab.core.experiment import Result
from attnlab.core.metrics import conforms, name_axes, tidy, unnamed_axes, wide
from attnlab.core.outputs import Outputs, check, expand
from attnlab.core.registry import experiments
from attnlab.core.rng import Streams
from attnlab.paths.summaries import ARRAYS as paths_arrays
from attnlab.potts.summaries import ARRAYS as potts_arrays
from attnlab.signal.summaries import ARRAYS as signal_arrays
from attnlab.specialization.summaries import ARRAYS as specialization_arrays

torch.set_num_threads(1)
NAMED = ("potts", "paths", "specialization", "signal")  # the studies whose metrics name every index axis (docs/data.md)
DECLARED = {e.key: e for e in experiments() if e.outputs is not None}
# experiment key → its typed arrays classes
TYPED_ARRAYS = {**paths_arrays, **potts_arrays, **signal_arrays, **specialization_arrays, **clustering_arrays}


def run_tiny(exp) -> tuple[object, Result]:
    """(config, result) of ``exp`` at its declared tiny size."""
    cfg = resolve(exp.config, "quick", dict(exp.outputs.tiny))
    device = resolve_device(cfg.device)
    with tempfile.TemporaryDirectory() as d:
        ctx = RunContext(Path(d), cfg, device, Streams(cfg.seed, device))
        result = exp.fn(cfg, ctx)
    return cfg, result


def test_every_experiment_of_the_five_studies_declares_its_outputs():
    from attnlab import STUDIES

    missing = [e.key for e in experiments() if e.study in STUDIES and e.outputs is None]
    assert not missing, f"no outputs declared for {missing}"


@pytest.mark.parametrize("key", sorted(DECLARED))
def test_an_experiment_produces_what_it_declares(key):
    exp = DECLARED[key]
    cfg, result = run_tiny(exp)
    assert check(exp.outputs, cfg, result) == []
    if exp.summary is not None:  # its typed summary (core.summaries) reads the run and gives summary.json back
        typed = exp.summary.from_summary(result.summary, cfg)
        assert typed.to_summary() == result.summary  # key for key, value for value
        assert exp.summary.from_summary(typed.to_summary(), cfg) == typed
    for cls in TYPED_ARRAYS.get(key, ()):  # its typed arrays (core.arrays) read the run and give its arrays back
        arrays = cls.from_arrays(result.arrays, cfg)
        assert all(v is result.arrays[k] for k, v in arrays.to_arrays(cfg).items())
    stored = tidy(result.metrics, exp.outputs.axes(cfg))  # what the store writes: the one schema (docs/data.md)
    assert conforms(stored) == []
    if exp.study in NAMED:
        assert unnamed_axes(stored) == {}, "name these index axes in the declaration's index"


def test_templates_expand_over_config_fields_and_mismatches_are_named():
    class Cfg:
        acts = ["softmax", "bsoftmax"]
        Hs = (2, 4)
        nu = 0.5
        T = 5
        n_seeds = 3

    assert expand("E_{acts}_H{Hs}_nu{nu}", Cfg()) == ["E_softmax_H2_nu0.5", "E_softmax_H4_nu0.5",
                                                      "E_bsoftmax_H2_nu0.5", "E_bsoftmax_H4_nu0.5"]
    out = Outputs(summary=["m_{acts} best"], arrays={"time": ("T + 1",), "m_{acts}": ("T + 1", "n_seeds"),
                                                     "run/*": None})
    good = Result(summary={"m_softmax": 1.0, "m_bsoftmax": 2.0, "best": 3},
                  arrays={"time": np.zeros(6), "m_softmax": np.zeros((6, 3)), "m_bsoftmax": np.zeros((6, 3)),
                          "run/meta": np.zeros(())})
    assert check(out, Cfg(), good) == []
    bad = Result(summary={"m_softmax": 1.0, "m_bsoft": 2.0, "best": 3},
                 arrays={"time": np.zeros(5), "m_softmax": np.zeros((6, 3)), "m_bsoftmax": np.zeros((6, 3))})
    assert check(out, Cfg(), bad) == [
        "summary key 'm_bsoftmax' declared, not produced", "summary key 'm_bsoft' produced, not declared",
        "arrays 'run/*' declared, none produced", "array 'time' has shape (5,), declared (6,)"]


def test_tidy_brings_every_table_into_one_schema():
    long_old = pd.DataFrame({"source": "theory", "tau": [0.0, 1.0], "name": "m", "component": ["0,1", "1,0"],
                             "value": [1.0, 2.0]})
    t = tidy(long_old)
    assert conforms(t) == [] and list(t["i"]) == [0, 1] and list(t["j"]) == [1, 0] and set(t.observable) == {"m"}
    grid = pd.DataFrame({"param": ["lr", "lr", "h", "h"], "value": [0.1, 0.1, 8.0, 8.0], "seed": [0, 1, 0, 1],
                         "test_acc": [0.91, 0.52, 0.73, 0.64]})
    t = tidy(grid)
    assert conforms(t) == [] and len(t) == 4 and set(t.observable) == {"test_acc"} and t["seed"].dtype == "Int64"
    assert wide(t).sort_values(["param", "seed"]).reset_index(drop=True).equals(
        grid.sort_values(["param", "seed"]).reset_index(drop=True).astype({"seed": "Int64"})[list(wide(t).columns)])
    assert conforms(grid) == [f"no column {c!r}" for c in ("source", "observable", "time_name", "time")]
    from attnlab.core.trajectory import Trajectory, compare

    sim = Trajectory(np.arange(3.0), {"m": np.ones((3, 2))})
    t = tidy(compare(sim, Trajectory(np.arange(3.0), {"m": np.zeros((3, 2))}, source="theory")))
    assert conforms(t) == [] and set(t.source) == {"simulation", "theory", "abs_diff"} and len(t) == 3 * 3 * 2


def test_declared_index_names_replace_the_unnamed_axes():
    from attnlab.core.trajectory import Trajectory

    traj = Trajectory(np.arange(2.0), {"U": np.ones((2, 3, 3)), "m": np.ones((2, 4)), "loss": np.ones(2)})
    frame = traj.to_frame()
    assert unnamed_axes(frame) == {"U": ["i", "j"], "m": ["i"]}
    named = name_axes(frame, {"U": ("path", "path_prime"), "*": ("head",)})
    assert unnamed_axes(named) == {} and not {"i", "j"} & set(named.columns)
    assert named.loc[named.observable == "U", ["path", "path_prime"]].drop_duplicates().shape == (9, 2)
    assert named.loc[named.observable == "m", "head"].tolist() == [0, 1, 2, 3] * 2
    assert named.loc[named.observable == "loss", ["path", "head"]].isna().all().all()
    out = Outputs(summary=[], arrays={}, index={"U": ("path", "path_prime"), "nope": ("head",)})
    assert check(out, None, Result(frame)) == ["index declared for observable 'nope', which the metrics lack",
                                               "metrics observable 'm': index columns i not named"]
