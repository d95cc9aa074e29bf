"""The time model of the walk (:mod:`attnlab.core.costs`): its work, in microseconds of one CPU thread, is a fixed
cost per run (saving its table, arrays and figure) plus, per step, the step's own bookkeeping (a checkpoint offer,
a progress tick) and one coordinate update per dimension.
``attnlab store calibrate`` turns units into seconds from the store's finished runs, and ``attnlab check --plan``
adds up a claim's missing runs with it."""

from __future__ import annotations

RUN = 100_000  # a run's fixed cost: writing metrics.parquet, arrays.npz, the figure and the manifest (~0.1 s)
STEP = 10  # a step's bookkeeping (a checkpoint offer, a progress tick, the path's copy): ~10 µs, measured 8-40


def walk(config) -> float:
    """A walk's work in units: the run's fixed cost, then per step its bookkeeping and its ``dim`` updates."""
    return RUN + config.steps * (config.dim + STEP)
