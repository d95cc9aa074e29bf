"""Resumable training units of a clustering run, and the long table of their epoch metrics.

``train_units(ctx, {"name": TrainConfig or Unit(epochs, fn)}, "what")`` trains the units in order through
``core.units.run_training_units``: finished units and the running one's state are checkpointed, so an
interrupted run resumes mid-training. A ``Unit``'s ``fn(state, hooks, done) -> History`` trains in its own way
(from a construction, by transfer from an earlier unit in ``done``, publishing live snapshots) and passes
``state`` and ``hooks`` on to ``train``/``transfer``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from attnlab.clustering.configs import TrainConfig
from attnlab.clustering.history import History
from attnlab.clustering.train import train
from attnlab.core.runs import RunContext
from attnlab.core.units import run_training_units


class Unit(NamedTuple):
    """A training unit of its own: ``fn(state, hooks, done_histories) -> History`` over ``epochs`` epochs."""

    epochs: int
    fn: Callable[[Any, dict, dict[str, History]], History]


def train_units(ctx: RunContext, units: dict[str, TrainConfig | Unit], description: str) -> dict[str, History]:
    """Each unit's ``History`` (a ``TrainConfig`` is trained as it is), resumably."""

    def compute(name: str, state: Any, hooks: dict, done: dict) -> dict[str, np.ndarray]:
        unit = units[name]
        if isinstance(unit, TrainConfig):
            return train(unit, device=ctx.device, state=state, **hooks).to_arrays()
        return unit.fn(state, hooks, {k: History.from_arrays(v) for k, v in done.items()}).to_arrays()

    done = run_training_units(ctx, {name: unit.epochs for name, unit in units.items()}, compute, description)
    return {name: History.from_arrays(done[name]) for name in units}


def epoch_frame(h: History, types: np.ndarray | None = None, **extra: Any) -> pd.DataFrame:
    """Long table of a run's epoch metrics: epoch, seed, observable, value (+ each seed's head type, ``extra``)."""
    E, S = len(h.epochs), h.n_seeds
    frames = [pd.DataFrame({"epoch": np.repeat(h.epochs, S), "seed": np.tile(h.seeds, E), "observable": name,
                            "value": np.asarray(v, dtype=float).ravel()}) for name, v in h.epoch_metrics.items()]
    out = pd.concat(frames, ignore_index=True).assign(**extra)
    if types is not None:
        out["head_type"] = out["seed"].map(dict(zip(h.seeds, types.tolist(), strict=True)))
    return out
