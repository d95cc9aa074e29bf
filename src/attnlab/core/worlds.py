"""Worlds where a claim's statement is false (:class:`~attnlab.core.claims.World`, declared beside each claim), and
measuring a claim there: the tests that prove a claim can fail.

A ``pass`` means something only if the same check says ``fail`` where the paper is wrong. Each asserted claim
names such a world beside its definition (``claim(..., falsify=World(...))``)::

    World("the theory's curve scaled by 1.2: simulation and theory no longer agree",
          overrides={"potts.fig3left": {"L": 20, "n_real": 2}},          # small, and what breaks the statement
          result=scale_arrays("gen_error_theory", 1.2))                   # or a perturbed theory / swapped arms

and the study's tests run :func:`measure_in` on it and expect ``fail``. A world is one or more of:

* ``overrides``: config overrides per experiment, applied over the claim's own (the world's win): the smallest
  size that shows the break, and the break itself where it is a config value (the wrong activation, shuffled
  labels, a model without the head);
* ``result``: a function ``(experiment, Result) → Result`` applied to every run the claim reads (a perturbed
  theory, swapped arms of a comparison, a broken measurement), on a copy: the store is never touched;
* ``patch``: ``{"module:attribute": wrap}`` replaced by ``wrap(original)`` while the claim is measured, for the
  claims that compute without running an experiment (a broken kernel, a wrong solver).

Where no world can be built cheaply, ``falsify`` is instead one sentence saying why; ``docs/claims.md`` lists
those claims (:func:`unfalsified`).
"""

from __future__ import annotations

import contextlib
import copy
import importlib
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from attnlab.core.claims import Claim, ClaimContext, ResultFn, World, claims
from attnlab.core.experiment import Experiment, Result
from attnlab.core.registry import get
from attnlab.core.runs import RunStore


class WorldContext(ClaimContext):
    """A claim context whose runs are those of ``world``: its overrides on top, its result function applied."""

    world: World

    def run(self, experiment: str | Experiment, **overrides: Any) -> Result:
        key = get(experiment).key
        mine = {get(k).key: v for k, v in self.world.overrides.items()}  # keyed by experiment objects or names
        result = super().run(key, **{**overrides, **mine.get(key, {})})
        if self.world.result is None:
            return result
        return self.world.result(key, copy.deepcopy(result))


@contextlib.contextmanager
def patched(patch: Mapping[str, Callable[[Any], Any]]) -> Iterator[None]:
    """Replace each ``module:attribute`` by ``wrap(original)`` inside the block, restored after."""
    saved = []
    try:
        for target, wrap in patch.items():
            module_name, attr = target.split(":")
            module = importlib.import_module(module_name)
            original = getattr(module, attr)
            saved.append((module, attr, original))
            setattr(module, attr, wrap(original))
        yield
    finally:
        for module, attr, original in reversed(saved):
            setattr(module, attr, original)


def measure_in(claim: Claim, store: RunStore, world: World | None = None) -> tuple[float, str, str]:
    """``claim`` measured in ``world`` (default: its own ``falsify``), its runs in ``store``: (value, verdict,
    detail). Every seed block the claim has is measured, as a check does."""
    world = world if world is not None else claim.falsify
    if not isinstance(world, World):
        raise ValueError(f"claim {claim.id} has no world where it is false: {world!r}")

    def make_ctx(seed: int) -> WorldContext:
        ctx = WorldContext(world.scale, store, seed=seed)
        ctx.world = world
        return ctx

    with patched(world.patch):
        value, detail = claim.measure_blocks(make_ctx)
    return value, claim.verdict(value), detail


def asserted(study: str | None = None) -> list[Claim]:
    """The claims that are asserted at some scale (every relation but ``report``)."""
    return [c for c in claims(study) if c.relation != "report"]


def with_world(study: str | None = None) -> list[Claim]:
    """Asserted claims that name a world where they are false (the ones the tests measure there)."""
    return [c for c in asserted(study) if isinstance(c.falsify, World)]


def unfalsified(study: str | None = None) -> list[Claim]:
    """Asserted claims without a world: each carries one sentence saying why none is built (or nothing yet)."""
    return [c for c in asserted(study) if not isinstance(c.falsify, World)]


# Result functions for the common worlds ------------------------------------------------------------------------


def scale_summary(*keys: str, by: float) -> ResultFn:
    """Multiply summary values ``keys`` by ``by`` (a perturbed theory or simulation)."""
    return _scale("summary", keys, by)


def scale_arrays(*names: str, by: float) -> ResultFn:
    """Multiply arrays ``names`` by ``by`` (a perturbed theory curve or measured curve)."""
    return _scale("arrays", names, by)


def swap_summary(a: str, b: str) -> ResultFn:
    """Exchange summary values ``a`` and ``b`` (the two arms of a comparison swapped)."""
    return _swap("summary", a, b)


def swap_arrays(a: str, b: str) -> ResultFn:
    """Exchange arrays ``a`` and ``b`` (the two arms of a comparison swapped)."""
    return _swap("arrays", a, b)


def _scale(where: str, keys: tuple[str, ...], by: float) -> ResultFn:
    def fn(experiment: str, result: Result) -> Result:
        values = getattr(result, where)
        for k in keys:
            if k in values:
                values[k] = values[k] * by
        return result

    return fn


def _swap(where: str, a: str, b: str) -> ResultFn:
    def fn(experiment: str, result: Result) -> Result:
        values = getattr(result, where)
        if a in values and b in values:
            values[a], values[b] = values[b], values[a]
        return result

    return fn


def chain(*fns: ResultFn) -> ResultFn:
    """Apply several result functions in turn."""

    def fn(experiment: str, result: Result) -> Result:
        for f in fns:
            result = f(experiment, result)
        return result

    return fn
