"""Named, independent random streams per run: the one way a run gets randomness.

A run has one integer ``seed``. Each consumer asks for a stream by name — ``"init"`` (network
initialisation), ``"data"`` (training data / SGD batches), ``"mc"`` (Monte-Carlo samples of a theory),
``"teacher"`` (planted structure such as spikes or couplings), ``"eval"`` (held-out data) — and gets a
generator seeded from ``SeedSequence([seed, crc32(name)])``. Streams are therefore independent of one
another and of the order in which they are requested, and adding a new stream never changes the
numbers an existing one draws. Their states go into checkpoints so a resumed run continues the same
random sequence. Inside :func:`recording`, every seed handed out is noted, so a run's ``config.json`` lists
every stream it used (``seeds.streams``).

The protocol — a run's :class:`Streams` (``ctx.streams``) is handed down, and code asks it for a generator by name:

* ``streams.torch(name)`` (``ctx.rng(name)``): the stream itself, on the run's device, checkpointed — a resumed run
  continues its sequence. For draws made inside a long loop (SGD batches).
* ``streams.generator(name, device=None, offset=0)`` (``ctx.generator``): a fresh generator seeded at the
  stream's seed (plus ``offset``: one per sub-model or repetition), rebuilt identically on resume. For draws made
  once (data sets, teachers), and for code that must draw on the CPU whatever the run's device.
* ``streams.numpy(name)``: a NumPy generator of the stream (its own seed, ``"np:" + name``).
* ``streams.seed_for(name, offset=0)`` (``ctx.seed``): the integer, for an API that takes one (a sampler, a
  ``SeedSequence``); code below the context that is handed such an integer builds its generator with
  :func:`generator` rather than ``torch.Generator().manual_seed(...)``.

``ctx.generator(name, offset=k, device="cpu")`` draws exactly what ``torch.Generator().manual_seed(ctx.seed(name,
k))`` drew, so code written the old way moves over without changing a number.
"""

from __future__ import annotations

import contextlib
import zlib
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any

import numpy as np
import torch

_USED: ContextVar[dict[tuple[int, str], int] | None] = ContextVar("attnlab_streams_used", default=None)


def stream_seed(seed: int, name: str) -> int:
    """64-bit seed of stream ``name`` under base ``seed`` (stable across versions and machines)."""
    ss = np.random.SeedSequence([int(seed), zlib.crc32(name.encode())])
    value = int(ss.generate_state(1, dtype=np.uint64)[0] >> np.uint64(1))  # < 2**63 for torch
    used = _USED.get()
    if used is not None:
        used[(int(seed), name)] = value
    return value


@contextlib.contextmanager
def recording() -> Iterator[dict[tuple[int, str], int]]:
    """``{(base seed, stream name): seed}`` of every stream asked for (in this thread) inside the block."""
    token = _USED.set({})
    try:
        yield _USED.get()
    finally:
        _USED.reset(token)


def used_streams(used: dict[tuple[int, str], int], base: int) -> dict[str, int]:
    """Stream name → seed for ``config.json``: a stream of the run's own seed by its name, one of another base
    (a per-model seed) as ``name@seed``."""
    return {name if seed == base else f"{name}@{seed}": value for (seed, name), value in sorted(used.items())}


def offset_seed(seed: int, name: str, offset: int = 0) -> int:
    """Seed of stream ``name`` plus ``offset`` (e.g. one per sub-model), below 2**63 as torch requires."""
    return (stream_seed(seed, name) + offset) % 2**63


def generator(seed: int, device: str | torch.device = "cpu") -> torch.Generator:
    """A torch generator on ``device`` seeded with ``seed``: the one place a generator is built from an integer."""
    return torch.Generator(device=torch.device(device)).manual_seed(int(seed))


class Streams:
    """The named streams of one run (the protocol above): ``streams.torch("data")`` (checkpointed),
    ``streams.generator("init")`` (fresh), ``streams.numpy("mc")``, ``streams.seed_for("teacher", k)``."""

    def __init__(self, seed: int, device: str | torch.device = "cpu") -> None:
        self.seed = int(seed)
        self.device = torch.device(device)
        self._torch: dict[str, torch.Generator] = {}
        self._numpy: dict[str, np.random.Generator] = {}

    def torch(self, name: str) -> torch.Generator:
        """The stream ``name`` itself, on the run's device; its state goes into checkpoints."""
        if name not in self._torch:
            self._torch[name] = generator(stream_seed(self.seed, name), self.device)
        return self._torch[name]

    def seed_for(self, name: str, offset: int = 0) -> int:
        """Integer seed of stream ``name`` (plus ``offset``), for code that takes an integer."""
        return offset_seed(self.seed, name, offset)

    def generator(self, name: str, device: str | torch.device | None = None, offset: int = 0) -> torch.Generator:
        """A fresh generator (not checkpointed) seeded at ``seed_for(name, offset)``, on ``device`` (default: the
        run's)."""
        return generator(self.seed_for(name, offset), self.device if device is None else device)

    def numpy(self, name: str) -> np.random.Generator:
        if name not in self._numpy:
            self._numpy[name] = np.random.default_rng(stream_seed(self.seed, "np:" + name))
        return self._numpy[name]

    def state_dict(self) -> dict[str, Any]:
        return {
            "torch": {k: g.get_state() for k, g in self._torch.items()},
            "numpy": {k: g.bit_generator.state for k, g in self._numpy.items()},
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        for name, s in state.get("torch", {}).items():
            self.torch(name).set_state(s)
        for name, s in state.get("numpy", {}).items():
            self.numpy(name).bit_generator.state = s
