"""What a running experiment sees: :class:`RunContext` (device, named random streams, checkpoints, live arrays,
progress, log), handed to every experiment function by :meth:`attnlab.core.runs.RunStore.run`."""

from __future__ import annotations

import contextlib
import io
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from attnlab.core import progress
from attnlab.core.config import Config
from attnlab.core.files import atomic_write, savez
from attnlab.core.rng import Streams, generator, offset_seed

LIVE_FILE = "live.npz"


@dataclass
class RunContext:
    """Handed to an experiment function: device, named random streams, checkpoints, progress, log.

    ``device`` is the parsed :class:`torch.device` (:func:`attnlab.core.device.parse` of ``config.device``, once,
    when the run starts). Randomness comes from the named ``streams`` (:mod:`attnlab.core.rng`): ``rng(name)``,
    ``generator(name)``, ``seed(name)`` are their shorthands; pass the generator down, never a global seed.

    Checkpoints: call ``ctx.checkpoint(lambda: state)`` inside long loops; the state (any
    ``torch.save``-able object) is written at most every ``checkpoint_every`` seconds together with
    the random streams' states. At the start, ``ctx.resume()`` returns the last saved state (and
    restores the streams) or ``None`` for a fresh run. ``ctx.publish(lambda: arrays)`` shares progress with live
    viewers (the sandbox) the same way, at most every ``publish_every`` seconds.
    """

    run_dir: Path
    config: Config
    device: torch.device
    streams: Streams
    checkpoint_every: float = 30.0
    publish_every: float = 0.5
    resumed_from: Any = None
    _last_checkpoint: float = field(default_factory=time.monotonic)
    _last_publish: float = float("-inf")
    _log: io.TextIOBase | None = None

    def rng(self, name: str) -> torch.Generator:
        """Torch generator of the named stream, on the run's device, checkpointed (``streams.torch(name)``)."""
        return self.streams.torch(name)

    def seed(self, name: str, offset: int = 0) -> int:
        """Integer seed of a named stream (plus ``offset``, e.g. one per sub-model), for code that hands plain
        integers to a sampler (``streams.seed_for``); below 2**63 as torch requires."""
        return offset_seed(self.config.seed, name, offset)

    def generator(self, name: str, device: str | torch.device | None = None, offset: int = 0) -> torch.Generator:
        """A fresh generator seeded from the named stream's seed plus ``offset``, on ``device`` (default: the run's
        device); ``streams.generator``.

        Unlike :meth:`rng` it is not checkpointed: rebuilt identically on resume, it suits draws made once (data
        sets, index draws) and code that must draw on the CPU whatever the run's device (``device="cpu"``).
        ``generator(name, device="cpu", offset=k)`` draws what ``torch.Generator().manual_seed(seed(name, k))``
        did."""
        return generator(offset_seed(self.config.seed, name, offset),
                         self.device if device is None else device)

    @property
    def checkpoint_path(self) -> Path:
        return self.run_dir / "checkpoint.pt"

    def resume(self) -> Any:
        if not self.checkpoint_path.exists():
            return None
        blob = torch.load(self.checkpoint_path, map_location=self.device, weights_only=False)
        self.streams.load_state_dict(blob["rng"])
        self.resumed_from = blob.get("saved_at")
        self.log(f"resumed from checkpoint saved at {time.ctime(blob.get('saved_at', 0))}")
        return blob["state"]

    def checkpoint(self, state: Callable[[], Any], force: bool = False) -> bool:
        """Save ``state()`` if ``checkpoint_every`` seconds have passed (or ``force``); True if saved."""
        if not force and time.monotonic() - self._last_checkpoint < self.checkpoint_every:
            return False
        blob = {"state": state(), "rng": self.streams.state_dict(), "saved_at": time.time()}
        atomic_write(self.checkpoint_path, lambda p: torch.save(blob, p))
        self._last_checkpoint = time.monotonic()
        return True

    def publish(self, arrays: Callable[[], dict[str, np.ndarray]], force: bool = False) -> bool:
        """Write ``arrays()`` atomically to ``live.npz`` if ``publish_every`` seconds have passed; True if written."""
        if not force and time.monotonic() - self._last_publish < self.publish_every:
            return False
        data = arrays()
        atomic_write(self.run_dir / LIVE_FILE, lambda p: savez(p, data, compress=False))
        self._last_publish = time.monotonic()
        return True

    def progress(self, total: float | None, description: str) -> contextlib.AbstractContextManager[progress.Bar]:
        return progress.bar(total, description)

    def log(self, message: str) -> None:
        if self._log is not None:
            self._log.write(f"{time.strftime('%Y-%m-%d %H:%M:%S')} {message}\n")
            self._log.flush()
