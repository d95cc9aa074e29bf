"""Experiments: ``(config, ctx) → Result`` (tables, arrays, scalars; no plotting), registered under ``toy.<name>``."""

from __future__ import annotations

import numpy as np
import pandas as pd

from attnlab.core.experiment import Result, experiment
from my_study.configs import WalkConfig
from my_study.figures import walk_figure
from my_study.memory import walk_memory
from my_study.train import walk as run_walk


@experiment("toy", "walk", WalkConfig, ref="—", figure=walk_figure, headline=True, memory=walk_memory,
            resources=lambda config: {"GPU": 1} if config.gpu else {})
def walk(config: WalkConfig, ctx) -> Result:
    """A seeded random walk with a checkpoint after every step, on the run's device."""
    path = run_walk(config, ctx)
    metrics = pd.DataFrame({"step": np.arange(1, config.steps + 1), "name": "norm",
                            "value": np.linalg.norm(path, axis=1)})
    return Result(metrics, {"path": path}, {"final_norm": float(np.linalg.norm(path[-1])),
                                            "mean_x0": float(path[:, 0].mean())})
