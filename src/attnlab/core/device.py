"""Device choice and thread pinning."""

from __future__ import annotations

import os

import torch

from attnlab.core.config import ConfigError


def resolve_device(name: str) -> torch.device:
    """``"cpu"`` or ``"cuda"`` (``"cuda:N"``); asking for CUDA where there is none is a config error."""
    if name == "cpu":
        return torch.device("cpu")
    if name.startswith("cuda"):
        if not torch.cuda.is_available():
            raise ConfigError(f"key 'device' = {name!r}: CUDA is not available on this machine; use --device cpu")
        return torch.device(name)
    raise ConfigError(f"key 'device' = {name!r}: allowed: cpu, cuda")


def describe(device: torch.device) -> str:
    if device.type == "cuda":
        return f"cuda ({torch.cuda.get_device_name(device)})"
    return f"cpu ({torch.get_num_threads()} threads)"


def pin_threads(n: int | None = None) -> int:
    """Set torch's intra-op threads from ``n``, else ``$ATTNLAB_THREADS``, else leave torch's default.

    On small machines running several workers, oversubscribed BLAS threads make small steps 20-40×
    slower; sweep workers therefore pin to ``cores // workers``.
    """
    if n is None:
        env = os.environ.get("ATTNLAB_THREADS")
        n = int(env) if env else None
    if n is not None and n > 0:
        torch.set_num_threads(n)
    return torch.get_num_threads()
