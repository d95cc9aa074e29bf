"""The walk experiment, declared whole: its config (validated parameters and their scales), its run ``(config,
ctx) → Result`` (tables, arrays, scalars; no plotting) and the :class:`~attnlab.core.experiment.Experiment` that holds
them with its figure, memory and time models and declared outputs. ``my_study.study`` lists it.

The fields ``sleep``, ``fail_at``, ``need_gib`` and ``gpu`` are the test suite's handles on a run (to kill it mid-way,
make it fail, refuse it for memory, place it on a GPU worker); a study of your own does not need them."""

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
    sleep: float = Field(0.0, ge=0, description="seconds to sleep per step (to be killed mid-run)")
    fail_at: int = Field(-1, ge=-1, description="raise at this step (-1: never)")
    need_gib: float = Field(0.0, ge=0, description="peak memory its memory model declares (tests of 'would not fit')")
    gpu: bool = Field(False, description="claim the dask resource GPU=1 (tests of GPU placement; computes on the CPU)")
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
                  resources=lambda config: {"GPU": 1} if config.gpu else {},
                  outputs=declare(summary="final_norm mean_x0", arrays={"path": ("steps", "dim")},
                                  tiny={"steps": 5}))
