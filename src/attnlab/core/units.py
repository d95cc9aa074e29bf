"""Resumable units of work inside one run: an experiment that loops over configurations checkpoints after each.

``run_units(ctx, keys, compute, "what")`` calls ``compute(key)`` for every key not finished yet, checkpointing the
dict of finished results after each one (``ctx.checkpoint``), so an interrupted run resumes at the first
unfinished key and ends with the same results an uninterrupted run gives. ``run_training_units`` does the same
for units that are long trainings themselves: the unit in progress is checkpointed too, and resumes mid-training.
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


def run_training_units(ctx: RunContext, units: dict[Hashable, int], compute: Callable[[Any, Any, dict, dict], Any],
                       description: str) -> dict:
    """``{key: compute(key, state, hooks, done)}`` for every unit key in order (``units``: key → epochs, for the
    progress bar); ``done`` holds the finished units' results.

    The checkpoint holds ``{"done": finished units, "partial": (key, training state)}``: ``state`` resumes the
    unit in progress (None otherwise), and ``hooks`` are the ``on_epoch(epoch, state_fn)`` / ``progress(epoch)``
    callbacks a training loop calls to checkpoint its state and advance the bar."""
    saved = ctx.resume() or {}
    done: dict = saved.get("done", {})
    partial = saved.get("partial")
    with ctx.progress(sum(units.values()), description) as bar:
        base = 0
        for key, epochs in units.items():
            if key not in done:
                state = partial[1] if partial is not None and partial[0] == key else None
                hooks = {"on_epoch": lambda e, f, key=key: ctx.checkpoint(lambda: {"done": done,
                                                                                   "partial": (key, f())}),
                         "progress": lambda e, b=base: bar.update(b + e)}
                done[key] = compute(key, state, hooks, done)
                ctx.checkpoint(lambda: {"done": done, "partial": None}, force=True)
            base += epochs
            bar.update(base)
    return done
