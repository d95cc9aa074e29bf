"""What the potts study's sandbox views share: reading stored arrays, the optimum's dashed line, padded axis
ranges."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from attnlab.core.config import ConfigError
from attnlab.sandbox import traces as T

OPTIMUM = "#000"


def sub(arrays: Mapping[str, np.ndarray], prefix: str) -> dict[str, np.ndarray]:
    return {k[len(prefix):]: np.asarray(v) for k, v in arrays.items() if k.startswith(prefix)}


def need(arrays: Mapping[str, np.ndarray], keys: Sequence[str], experiment: str) -> None:
    missing = [k for k in keys if k not in arrays]
    if missing:
        raise ConfigError(f"this {experiment} run lacks the arrays {', '.join(missing)}; nothing to show")


def hline(times: np.ndarray, y: float, name: str, color: str = OPTIMUM, dash: str = "dash") -> dict[str, Any]:
    return T.line([float(times[0]), float(times[-1])], [y, y], name=name, color=color, dash=dash, width=1.2)


def pad(lo: float, hi: float, frac: float = 0.06) -> list[float]:
    span = max(hi - lo, 1e-9)
    return [lo - frac * span, hi + frac * span]
