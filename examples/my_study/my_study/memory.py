"""The memory model: a run's peak bytes on its device (``attnlab run`` and the sandbox refuse a run that would not
fit), with what to reduce when it does not."""

from __future__ import annotations


def walk_memory(config) -> tuple[int, str]:
    """What ``need_gib`` says (the walk itself needs a few bytes): lets tests exercise 'would not fit'."""
    return int(config.need_gib * 2**30), "lower need_gib"
