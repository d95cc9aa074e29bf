"""The time model of the walk (:mod:`attnlab.core.costs`): its work is steps × (dim + the step's fixed cost) plus
the sleep it is told to take, in units of one coordinate update; ``attnlab store calibrate`` turns units into
seconds from the store's finished runs, and ``attnlab check --plan`` adds up a claim's missing runs with it."""

from __future__ import annotations

from attnlab.core.costs import cost_model

STEP_OVERHEAD = 50  # a step's fixed cost (a checkpoint, a progress tick) in coordinate updates
SLEEP_UNITS = 1e6  # one second of sleep, in coordinate updates (about 1 µs each, calibrated)


@cost_model("toy.walk")
def walk(config) -> float:
    return config.steps * (config.dim + STEP_OVERHEAD + SLEEP_UNITS * config.sleep)
