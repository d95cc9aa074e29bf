"""The walk x_{t+1} = x_t + drift + ξ_t, ξ_t ~ N(0, I_dim), declared whole with the test suite's knobs: its config,
its loop (a checkpoint after every step, a progress bar), its run ``(config, ctx) → Result``, its figure, memory and
time models and declared outputs. The loop draws what the template's (``examples/my_study``) draws, from the same
stream, so a knobs walk at the template's values has the template's path.

The knobs: ``sleep`` (seconds per step: a run long enough to be stopped), ``fail_at`` (raise at that step),
``need_gib`` (the peak memory its memory model declares: 'would not fit'), ``gpu`` (claim the dask resource GPU=1:
placement on a GPU worker; it still computes on the run's device)."""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import torch
from pydantic import Field

from attnlab.core.config import Config
from attnlab.core.experiment import Experiment, Result
from attnlab.core.outputs import declare
from attnlab.core.plotting import figure

RUN = 100_000  # the time model's fixed cost of a run, µs of one thread: its table, arrays, figure, manifest (~0.1 s)
STEP = 10  # a step's bookkeeping (a checkpoint offer, a progress tick, the path's copy): ~10 µs, measured 8-40


class WalkConfig(Config):
    steps: int = Field(40, ge=1, le=100_000, description="number of steps")
    dim: int = Field(3, ge=1, le=64, description="dimension of the walk")
    drift: float = Field(0.0, ge=-1e3, le=1e3, description="mean step")
    sleep: float = Field(0.0, ge=0, description="seconds to sleep per step (to be killed mid-run)")
    fail_at: int = Field(-1, ge=-1, description="raise at this step (-1: never)")
    need_gib: float = Field(0.0, ge=0, description="peak memory its memory model declares (tests of 'would not fit')")
    gpu: bool = Field(False, description="claim the dask resource GPU=1 (tests of GPU placement; computes on the CPU)")
    scales = {"quick": {"steps": 40}, "paper": {"steps": 400}}


def path(config: WalkConfig, ctx) -> np.ndarray:
    """The path x_1 … x_T, (steps, dim), on the run's device from its ``data`` stream; resumes from a checkpoint."""
    state = ctx.resume() or {"step": 0, "x": torch.zeros(config.dim, dtype=torch.float64, device=ctx.device),
                             "path": []}
    g = ctx.rng("data")
    with ctx.progress(config.steps, "walk") as bar:
        while state["step"] < config.steps:
            if state["step"] == config.fail_at:
                raise ValueError(f"asked to fail at step {config.fail_at}")
            noise = torch.randn(config.dim, generator=g, dtype=torch.float64, device=ctx.device)
            state["x"] = state["x"] + config.drift + noise
            state["path"].append(state["x"].clone())
            state["step"] += 1
            ctx.checkpoint(lambda: state)
            bar.advance()
            if config.sleep:
                time.sleep(config.sleep)
    return torch.stack(state["path"]).cpu().numpy()


def walk(config: WalkConfig, ctx) -> Result:
    """A seeded random walk with a checkpoint after every step, on the run's device."""
    xs = path(config, ctx)
    metrics = pd.DataFrame({"step": np.arange(1, config.steps + 1), "name": "norm",
                            "value": np.linalg.norm(xs, axis=1)})
    return Result(metrics, {"path": xs}, {"final_norm": float(np.linalg.norm(xs[-1])),
                                          "mean_x0": float(xs[:, 0].mean())})


def walk_figure(result: Result, config):
    """The first coordinate of the path against the step."""
    fig, ax = figure()
    ax.plot(result.arrays["path"][:, 0])
    ax.set_xlabel("step")
    return fig


def walk_memory(config: WalkConfig) -> tuple[int, str]:
    """What ``need_gib`` says (the walk itself needs a few bytes)."""
    return int(config.need_gib * 2**30), "lower need_gib"


def walk_cost(config: WalkConfig) -> float:
    """A fixed cost per run plus, per step, its bookkeeping and one update per dimension (sleeping is no work)."""
    return RUN + config.steps * (config.dim + STEP)


WALK = Experiment("knobs", "walk", WalkConfig, walk, ref="—", figure=walk_figure, headline=True,
                  memory=walk_memory, cost=walk_cost, resources=lambda config: {"GPU": 1} if config.gpu else {},
                  outputs=declare(summary="final_norm mean_x0", arrays={"path": ("steps", "dim")},
                                  tiny={"steps": 5}))
