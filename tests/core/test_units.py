"""core.units: one ``Unit`` type with typed hooks; an interrupted loop of units resumes where it stopped."""

import contextlib

import pytest

from attnlab.core.units import Hooks, Unit, Units, run_units


class Ctx:
    """The part of ``RunContext`` units use: a checkpoint kept in memory, a bar that records its updates."""

    def __init__(self, saved=None):
        self.saved, self.updates = saved, []

    def resume(self):
        return self.saved

    def checkpoint(self, state, force=False):
        self.saved = state()
        return True

    @contextlib.contextmanager
    def progress(self, total, description):
        updates = self.updates

        class Bar:
            n = 0

            def update(self, n):
                self.n = n
                updates.append(n)

            def advance(self):
                self.update(self.n + 1)

        yield Bar()


def train(u: Unit, epochs: int, stop_at=None) -> list:
    """A toy training loop: the state is the list of epochs done; it checkpoints and reports after each epoch."""
    state = list(u.resume or [])
    for epoch in range(len(state) + 1, epochs + 1):
        if epoch == stop_at:
            raise KeyboardInterrupt
        state.append(epoch * 10 + len(u.done))
        u.hooks.on_epoch(epoch, lambda s=list(state): s)
        u.hooks.progress(epoch)
    return state


def test_units_by_epochs_resume_inside_the_unit_they_were_in():
    keys = {"a": 2, "b": 3}
    whole = run_units(Ctx(), keys, lambda u: train(u, keys[u.key]), "toy")
    ctx = Ctx()
    with pytest.raises(KeyboardInterrupt):
        run_units(ctx, keys, lambda u: train(u, keys[u.key], stop_at=3 if u.key == "b" else None), "toy")
    assert ctx.saved["partial"] == ("b", [11, 21])
    seen = []
    again = run_units(Ctx(ctx.saved), keys, lambda u: seen.append((u.key, u.resume)) or train(u, keys[u.key]),
                      "toy")
    assert again == whole == {"a": [10, 20], "b": [11, 21, 31]}
    assert seen == [("b", [11, 21])]  # "a" was done: not recomputed


def test_the_bar_counts_epochs_across_units_or_units():
    ctx = Ctx()
    run_units(ctx, {"a": 2, "b": 3}, lambda u: train(u, 2 if u.key == "a" else 3), "toy")
    assert ctx.updates == [1, 2, 2, 3, 4, 5, 5]
    ctx = Ctx()
    assert run_units(ctx, [1, 2, 3], lambda u: u.key ** 2, "toy") == {1: 1, 2: 4, 3: 9}
    assert ctx.updates == [1, 2, 3]


def test_a_unit_is_typed_and_frozen():
    u = []
    Units(Ctx()).get("k", lambda unit: u.append(unit))
    (unit,) = u
    assert isinstance(unit.hooks, Hooks) and set(unit.hooks.kwargs()) == {"on_epoch", "progress"}
    with pytest.raises(AttributeError):
        unit.key = "other"
