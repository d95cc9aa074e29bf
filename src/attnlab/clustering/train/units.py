"""Resumable training units of a clustering run, and the long table of their epoch metrics.

``train_units(ctx, {"name": TrainConfig or (epochs, fn)}, "what")`` trains the units in order through
``core.units.run_units``: finished units and the running one's state are checkpointed, so an interrupted run
resumes mid-training. An ``(epochs, fn)`` pair's ``fn(unit) -> History`` trains in its own way (from a
construction, by transfer from an earlier unit in ``unit.done``, publishing live snapshots) and passes
``unit.resume`` and ``unit.hooks`` on to ``train``/``transfer``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from attnlab.clustering.configs import TrainConfig
from attnlab.clustering.train.history import History
from attnlab.clustering.train.loop import train
from attnlab.core.runs import RunContext
from attnlab.core.units import Unit, run_units

Training = tuple[int, Callable[[Unit], History]]  # (epochs, fn): a unit that trains in its own way


def train_units(ctx: RunContext, units: dict[str, TrainConfig | Training], description: str) -> dict[str, History]:
    """Each unit's ``History`` (a ``TrainConfig`` is trained as it is), resumably."""

    def compute(u: Unit) -> dict[str, np.ndarray]:
        unit = units[u.key]
        if isinstance(unit, TrainConfig):
            return train(unit, device=ctx.device, state=u.resume, **u.hooks.kwargs()).to_arrays()
        return unit[1](u).to_arrays()

    epochs = {name: unit.epochs if isinstance(unit, TrainConfig) else unit[0] for name, unit in units.items()}
    done = run_units(ctx, epochs, compute, description)
    return {name: History.from_arrays(done[name]) for name in units}


def epoch_frame(h: History, types: np.ndarray | None = None, **extra: Any) -> pd.DataFrame:
    """Tidy table of a run's epoch metrics (``docs/data.md``): source "training", observable, time_name "epoch",
    time, value, seed (+ each seed's head type, ``extra``)."""
    E, S = len(h.epochs), h.n_seeds
    frames = [pd.DataFrame({"source": "training", "observable": name, "time_name": "epoch",
                            "time": np.repeat(h.epochs, S).astype(float), "value": np.asarray(v, dtype=float).ravel(),
                            "seed": pd.array(np.tile(h.seeds, E), dtype="Int64")})
              for name, v in h.epoch_metrics.items()]
    out = pd.concat(frames, ignore_index=True).assign(**extra)
    if types is not None:
        out["head_type"] = out["seed"].map(dict(zip(h.seeds, types.tolist(), strict=True)))
    return out
