"""Resumable units of work inside one run: an experiment that loops over configurations checkpoints after each.

``run_units(ctx, keys, compute, "what")`` calls ``compute(key)`` for every key not finished yet, checkpointing the
dict of finished results after each one (``ctx.checkpoint``), so an interrupted run resumes at the first
unfinished key and ends with the same results an uninterrupted run gives.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from attnlab.core.runs import RunContext


def run_units(ctx: RunContext, keys: list[Hashable], compute: Callable[[Any], Any], description: str) -> dict:
    """``{key: compute(key)}`` for every key, resuming from and checkpointing to the run's state."""
    done: dict = ctx.resume() or {}
    with ctx.progress(len(keys), description) as bar:
        for key in keys:
            if key not in done:
                done[key] = compute(key)
                ctx.checkpoint(lambda: done, force=True)
            bar.advance()
    return done
