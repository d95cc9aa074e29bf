"""The walk's parameters: each field validated (bounds, description), with its values at each scale."""

from __future__ import annotations

from pydantic import Field

from attnlab.core.config import Config


class WalkConfig(Config):
    steps: int = Field(40, ge=1, le=100_000, description="number of steps")
    dim: int = Field(3, ge=1, le=64, description="dimension of the walk")
    drift: float = Field(0.0, ge=-1e3, le=1e3, description="mean step")
    sleep: float = Field(0.0, ge=0, description="seconds to sleep per step (to be killed mid-run)")
    fail_at: int = Field(-1, ge=-1, description="raise at this step (-1: never)")
    need_gib: float = Field(0.0, ge=0, description="peak memory its memory model declares (tests of 'would not fit')")
    gpu: bool = Field(False, description="claim the dask resource GPU=1 (tests of GPU placement; computes on the CPU)")
    scales = {"quick": {"steps": 40}, "paper": {"steps": 400}}
