"""Resumable units of work inside one run: an experiment that loops over configurations checkpoints after each.

``Units(ctx).get(key, compute)`` computes a named unit once: finished units and the running unit's own state are
checkpointed (``ctx.checkpoint``: ``{"done": {key: result}, "partial": (key, state)}``), so an interrupted run
skips what is done, resumes inside the unit it was in, and ends with the same results an uninterrupted run
gives. ``run_units`` (units with no inner state) and ``run_training_units`` (units that are long trainings) loop
over a list of keys with a progress bar.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from attnlab.core.runs import RunContext


class Units:
    """The run's units: one per run (it reads the checkpoint once, in ``__init__``)."""

    def __init__(self, ctx: RunContext) -> None:
        self.ctx = ctx
        saved = ctx.resume() or {}
        self.done: dict = saved.get("done", {})
        self.partial: tuple | None = saved.get("partial")

    def get(self, key: Hashable, compute: Callable[[Any, Callable[[Callable[[], Any]], None]], Any]) -> Any:
        """``compute(state, save)`` once: ``state`` resumes an interrupted unit (None when fresh) and
        ``save(lambda: state)`` offers a mid-unit checkpoint."""
        if key in self.done:
            return self.done[key]
        state = self.partial[1] if self.partial is not None and self.partial[0] == key else None

        def save(state_fn: Callable[[], Any]) -> None:
            self.ctx.checkpoint(lambda: {"done": self.done, "partial": (key, state_fn())})

        self.done[key] = compute(state, save)
        self.partial = None
        self.ctx.checkpoint(lambda: {"done": self.done, "partial": None}, force=True)
        return self.done[key]


def run_units(ctx: RunContext, keys: list[Hashable], compute: Callable[[Any], Any], description: str) -> dict:
    """``{key: compute(key)}`` for every key, resuming from and checkpointing to the run's state."""
    units = Units(ctx)
    with ctx.progress(len(keys), description) as bar:
        for key in keys:
            units.get(key, lambda state, save, key=key: compute(key))
            bar.advance()
    return {key: units.done[key] for key in keys}


def run_training_units(ctx: RunContext, units: dict[Hashable, int], compute: Callable[[Any, Any, dict, dict], Any],
                       description: str) -> dict:
    """``{key: compute(key, state, hooks, done)}`` for every unit key in order (``units``: key → epochs, for the
    progress bar); ``done`` holds the finished units' results, ``state`` resumes the unit in progress (None
    otherwise) and ``hooks`` are the ``on_epoch(epoch, state_fn)`` / ``progress(epoch)`` callbacks a training
    loop calls to checkpoint its state and advance the bar."""
    store = Units(ctx)
    with ctx.progress(sum(units.values()), description) as bar:
        base = 0
        for key, epochs in units.items():
            def one(state: Any, save: Callable, key: Hashable = key, base: int = base) -> Any:
                hooks = {"on_epoch": lambda epoch, state_fn: save(state_fn),
                         "progress": lambda epoch: bar.update(base + epoch)}
                return compute(key, state, hooks, store.done)

            store.get(key, one)
            base += epochs
            bar.update(base)
    return {key: store.done[key] for key in units}
