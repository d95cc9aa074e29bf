"""Resumable units of work inside one run: an experiment that loops over configurations checkpoints after each.

A ``Unit`` is one named piece of a run's work as its compute function sees it: its ``key``, the state to
``resume`` from (None when fresh), the results of the units ``done`` before it, ``save(state_fn)`` to checkpoint
its own progress, and typed ``Hooks`` a training loop calls. ``Units(ctx).get(key, compute)`` computes a unit once:
finished units and the running unit's own state are checkpointed (``ctx.checkpoint``:
``{"done": {key: result}, "partial": (key, state)}``), so an interrupted run skips what is done, resumes inside the
unit it was in, and ends with the same results an uninterrupted run gives. ``run_units`` loops over keys with a
progress bar (one tick per unit, or one per epoch when each key carries its number of epochs).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from attnlab.core.runs import RunContext

T = TypeVar("T")
StateFn = Callable[[], Any]


def _ignore(*_: Any) -> None:
    return None


@dataclass(frozen=True)
class Hooks:
    """The callbacks a training loop calls: ``on_epoch(epoch, state_fn)`` after every epoch (checkpoints the state
    ``state_fn()`` returns) and ``progress(epochs_done)`` (advances the run's progress bar)."""

    on_epoch: Callable[[int, StateFn], None] = _ignore
    progress: Callable[[int], None] = _ignore

    def kwargs(self) -> dict[str, Callable]:
        """``{"on_epoch": …, "progress": …}``, for loops that take the hooks as keyword arguments."""
        return {"on_epoch": self.on_epoch, "progress": self.progress}


@dataclass(frozen=True)
class Unit:
    """One unit of a run's work: ``key``, the state to ``resume`` from (None when fresh), ``save(state_fn)`` to
    checkpoint mid-unit, the finished units' results ``done`` (key → result), and the training ``hooks``."""

    key: Hashable
    resume: Any
    save: Callable[[StateFn], None]
    done: Mapping[Hashable, Any]
    hooks: Hooks


class Units:
    """The run's units: one per run (it reads the checkpoint once, in ``__init__``)."""

    def __init__(self, ctx: RunContext) -> None:
        self.ctx = ctx
        saved = ctx.resume() or {}
        self.done: dict = saved.get("done", {})
        self.partial: tuple | None = saved.get("partial")

    def get(self, key: Hashable, compute: Callable[[Unit], T], progress: Callable[[int], None] = _ignore) -> T:
        """``compute(unit)`` once for ``key`` (``progress`` becomes the unit's ``hooks.progress``)."""
        if key in self.done:
            return self.done[key]
        state = self.partial[1] if self.partial is not None and self.partial[0] == key else None

        def save(state_fn: StateFn) -> None:
            self.ctx.checkpoint(lambda: {"done": self.done, "partial": (key, state_fn())})

        hooks = Hooks(on_epoch=lambda epoch, state_fn: save(state_fn), progress=progress)
        self.done[key] = compute(Unit(key, state, save, self.done, hooks))
        self.partial = None
        self.ctx.checkpoint(lambda: {"done": self.done, "partial": None}, force=True)
        return self.done[key]


def run_units(ctx: RunContext, keys: list[Hashable] | Mapping[Hashable, int], compute: Callable[[Unit], Any],
              description: str) -> dict:
    """``{key: compute(unit)}`` for every key in order, resuming from and checkpointing to the run's state.

    ``keys``: a list (the bar advances once per unit) or a mapping key → epochs (the bar counts epochs over all
    units and each unit's ``hooks.progress(epoch)`` advances it)."""
    units = Units(ctx)
    epochs = keys if isinstance(keys, Mapping) else None
    total = sum(epochs.values()) if epochs is not None else len(keys)
    with ctx.progress(total, description) as bar:
        base = 0
        for key in keys:
            if epochs is None:
                units.get(key, compute)
                bar.advance()
                continue
            units.get(key, compute, progress=lambda epoch, base=base: bar.update(base + epoch))
            base += epochs[key]
            bar.update(base)
    return {key: units.done[key] for key in keys}
