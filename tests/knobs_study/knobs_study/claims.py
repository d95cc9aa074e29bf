"""The knobs study's claim: its walk diffuses, E|x_T|² = dim·T·(1 + drift²·T) (``attnlab check knobs``)."""

from __future__ import annotations

import numpy as np

from attnlab.core.claims import claim
from attnlab.core.worlds import World
from knobs_study.experiments import WALK


def _diffusion(ctx) -> float:
    """E|x_T|² / (dim·T) over a few seeds: 1 for a unit-variance walk without drift."""
    values = []
    for seed in range(4):
        r = ctx.run(WALK, seed=seed)
        steps, dim = r.arrays["path"].shape
        values.append(r.summary["final_norm"] ** 2 / (dim * steps))
    return float(np.mean(values))


claim("knobs.diffusion", "—", "a unit-variance random walk diffuses: E|x_T|² = dim·T",
      "mean over 4 seeds of |x_T|²/(dim·T)", _diffusion, expected=1.0, relation="approx", tolerance=0.9,
      # where the statement is false: a walk with drift 1 moves ballistically, E|x_T|² ≈ dim·T² ≫ dim·T
      falsify=World("a walk with drift 1 per step: |x_T|² grows as T², not T", overrides={WALK: {"drift": 1.0}}))
