"""The model: one step of the walk, x_{t+1} = x_t + drift + ξ_t."""

from __future__ import annotations

import torch


def step(x: torch.Tensor, drift: float, noise: torch.Tensor) -> torch.Tensor:
    return x + drift + noise
