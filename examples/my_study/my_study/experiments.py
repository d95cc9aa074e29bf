"""The walk experiment, declared whole: its config (validated parameters and their scales), its run ``(config,
ctx) → Result`` (tables, arrays, scalars; no plotting) and the :class:`~attnlab.core.experiment.Experiment` that holds
them with its figure, memory and time models and declared outputs. ``my_study.study`` lists it."""

from __future__ import annotations

import numpy as np
import pandas as pd
from pydantic import Field

from attnlab.core.config import Config
from attnlab.core.experiment import Experiment, Result
from attnlab.core.outputs import declare
from my_study import costs, memory
from my_study.figures import walk_figure
from my_study.train import walk as run_walk


class WalkConfig(Config):
    steps: int = Field(40, ge=1, le=100_000, description="number of steps")
    dim: int = Field(3, ge=1, le=64, description="dimension of the walk")
    drift: float = Field(0.0, ge=-1e3, le=1e3, description="mean step")
    scales = {"quick": {"steps": 40}, "paper": {"steps": 400}}


def walk(config: WalkConfig, ctx) -> Result:
    """A seeded random walk with a checkpoint after every step, on the run's device."""
    path = run_walk(config, ctx)
    metrics = pd.DataFrame({"step": np.arange(1, config.steps + 1), "name": "norm",
                            "value": np.linalg.norm(path, axis=1)})
    return Result(metrics, {"path": path}, {"final_norm": float(np.linalg.norm(path[-1])),
                                            "mean_x0": float(path[:, 0].mean())})


WALK = Experiment("toy", "walk", WalkConfig, walk, ref="—", figure=walk_figure, headline=True,
                  memory=memory.walk_memory, cost=costs.walk,
                  outputs=declare(summary="final_norm mean_x0", arrays={"path": ("steps", "dim")},
                                  tiny={"steps": 5}))
