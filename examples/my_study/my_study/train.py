"""The loop: ``config.steps`` steps of the walk with a checkpoint after each (a killed run resumes where it stopped,
bit-identically) and a progress bar."""

from __future__ import annotations

import numpy as np
import torch

from my_study.data import increment
from my_study.model import step


def walk(config, ctx) -> np.ndarray:
    """The path x_1 … x_T, (steps, dim), on the run's device, from its ``data`` stream."""
    state = ctx.resume() or {"step": 0, "x": torch.zeros(config.dim, dtype=torch.float64, device=ctx.device),
                             "path": []}
    g = ctx.rng("data")
    with ctx.progress(config.steps, "walk") as bar:
        while state["step"] < config.steps:
            state["x"] = step(state["x"], config.drift, increment(config.dim, g, ctx.device))
            state["path"].append(state["x"].clone())
            state["step"] += 1
            ctx.checkpoint(lambda: state)
            bar.advance()
    return torch.stack(state["path"]).cpu().numpy()
