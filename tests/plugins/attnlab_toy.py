"""A small plug-in study used by the core tests: a seeded random walk that checkpoints every step.

It is registered through ``ATTNLAB_PLUGINS=attnlab_toy`` exactly as a third-party study would be, so
sweep workers (local processes or dask workers) import it the same way.
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import torch
from pydantic import Field

from attnlab.core.config import Config
from attnlab.core.experiment import Result, experiment
from attnlab.core.plotting import figure


class WalkConfig(Config):
    steps: int = Field(40, ge=1, le=100_000, description="number of steps")
    dim: int = Field(3, ge=1, le=64, description="dimension of the walk")
    drift: float = Field(0.0, description="mean step")
    sleep: float = Field(0.0, ge=0, description="seconds to sleep per step (to be killed mid-run)")
    fail_at: int = Field(-1, description="raise at this step (-1: never)")
    need_gib: float = Field(0.0, ge=0, description="peak memory its memory model declares (tests of 'would not fit')")
    gpu: bool = Field(False, description="claim the dask resource GPU=1 (tests of GPU placement; computes on the CPU)")
    scales = {"quick": {"steps": 40}, "paper": {"steps": 400}}


def walk_figure(result: Result, config: WalkConfig):
    fig, ax = figure()
    ax.plot(result.arrays["path"][:, 0])
    ax.set_xlabel("step")
    return fig


def walk_memory(config: WalkConfig) -> tuple[int, str]:
    """The toy's memory model: what ``need_gib`` says (the walk itself needs a few bytes)."""
    return int(config.need_gib * 2**30), "lower need_gib"


@experiment("toy", "walk", WalkConfig, ref="—", figure=walk_figure, headline=True, memory=walk_memory,
            resources=lambda config: {"GPU": 1} if config.gpu else {})
def walk(config: WalkConfig, ctx) -> Result:
    """A seeded random walk with a checkpoint after every step, on the run's device."""
    state = ctx.resume() or {"step": 0, "x": torch.zeros(config.dim, dtype=torch.float64, device=ctx.device),
                             "path": []}
    g = ctx.rng("data")
    with ctx.progress(config.steps, "walk") as bar:
        while state["step"] < config.steps:
            if state["step"] == config.fail_at:
                raise ValueError(f"asked to fail at step {config.fail_at}")
            state["x"] = state["x"] + config.drift + torch.randn(config.dim, generator=g, dtype=torch.float64,
                                                                                device=ctx.device)
            state["path"].append(state["x"].clone())
            state["step"] += 1
            ctx.checkpoint(lambda: state)
            bar.advance()
            if config.sleep:
                time.sleep(config.sleep)
    path = torch.stack(state["path"]).cpu().numpy()
    metrics = pd.DataFrame({"step": np.arange(1, config.steps + 1), "name": "norm",
                            "value": np.linalg.norm(path, axis=1)})
    return Result(metrics, {"path": path}, {"final_norm": float(np.linalg.norm(path[-1])),
                                            "mean_x0": float(path[:, 0].mean())})


def _diffusion(ctx) -> float:
    """E|x_T|² / (dim·T) over a few seeds: 1 for a unit-variance walk without drift."""
    values = []
    for seed in range(4):
        r = ctx.run("toy.walk", seed=seed)
        values.append(r.summary["final_norm"] ** 2 / (3 * len(r.arrays["path"])))
    return float(np.mean(values))


from attnlab.core.claims import Claim, register  # noqa: E402

register(Claim(
    id="toy.diffusion", ref="—", statement="a unit-variance random walk diffuses: E|x_T|² = dim·T",
    how="mean over 4 seeds of |x_T|²/(dim·T)", measure=_diffusion, expected=1.0, relation="approx", tolerance=0.9,
))
