"""The walk's randomness: standard Gaussian increments ξ_t ~ N(0, I_dim), drawn from a run's named stream."""

from __future__ import annotations

import torch


def increment(dim: int, g: torch.Generator, device: torch.device | str) -> torch.Tensor:
    """One increment ξ_t (float64, on ``device``)."""
    return torch.randn(dim, generator=g, dtype=torch.float64, device=device)
