"""The memory model: a run's peak bytes on its device (``attnlab run`` and the sandbox refuse a run that would not
fit), with what to reduce when it does not.

The walk keeps its path, ``steps`` tensors of ``dim`` float64s (each with its torch bookkeeping), and at the end
stacks it and copies it to numpy: ``steps · (3 · 8 · dim + 512)`` bytes, on top of a fixed 12 MiB (torch's first
operations on the device). Measured by ``attnlab.core.memory.measured_peak`` on the CPU: 11.4 MB at 40 steps in 3
dimensions (the model: 12.6 MB), 13.6 MB at 2,000 steps in 64 (16.7 MB), 17.3 MB at 10,000 steps in 8 (19.6 MB):
the model bounds the peak within a factor 1.3."""

from __future__ import annotations

FIXED = 12 * 2**20  # torch's first operations on the device (the first random numbers, the first tensors)
PER_STEP = 512  # one stored position's torch bookkeeping beyond its numbers (the tensor, the list entry)


def walk_memory(config) -> tuple[int, str]:
    """Peak bytes of a walk: the fixed part, then per step its position three times (the path, its stack, numpy)."""
    return FIXED + config.steps * (3 * 8 * config.dim + PER_STEP), "fewer steps or a lower dim"
