"""What an experiment returns: a :class:`Result` (tables, arrays, summary values; no plotting), the one type every
study's run function, the run store, figures and claims share.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from attnlab.core.display import html_block, text_block


@dataclass
class Result:
    """What an experiment returns.

    ``metrics``: a table in any form the figures need; the store writes it in the tidy schema of
    :mod:`attnlab.core.metrics` (``docs/data.md``).
    ``arrays``: named numpy arrays (stored in ``arrays.npz``).
    ``summary``: numbers, booleans, text (or lists of them; see :func:`summary_value`) that ``run --json``,
    sweep tables and claims read (a claim reads it typed: ``ctx.summary(EXPERIMENT)``, :mod:`attnlab.core.summaries`).
    ``config``: the run's config where a claim context loaded the result (never stored; what the typed summary of a
    study's templated keys needs).
    """

    metrics: pd.DataFrame = field(default_factory=pd.DataFrame)
    arrays: dict[str, np.ndarray] = field(default_factory=dict)
    summary: dict[str, float] = field(default_factory=dict)
    config: Any = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.summary = {k: summary_value(k, v) for k, v in self.summary.items()}
        self.arrays = {k: np.asarray(v) for k, v in self.arrays.items()}

    def _rows(self) -> list[tuple[str, Any]]:
        return [("metrics", f"{len(self.metrics)} rows × {len(self.metrics.columns)} columns"),
                *((f"arrays[{k!r}]", v) for k, v in self.arrays.items()), *self.summary.items()]

    def _title(self) -> str:
        return f"Result({len(self.summary)} summary values, {len(self.arrays)} arrays, {len(self.metrics)} metric rows)"

    def __repr__(self) -> str:
        return text_block(self._title(), self._rows())

    def _repr_html_(self) -> str:
        return html_block(self._title(), self._rows())


def summary_value(key: str, v: Any) -> Any:
    """``v`` as a summary value: a Python bool, int, float, str or None, or a list of them. A tensor or numpy
    value of one element becomes its number (``tensor([6])`` → 6), a 1-D one or a tuple a list; NaN becomes None
    ("never happened", stored as null so that summary.json stays valid JSON); anything else is a TypeError."""
    if hasattr(v, "detach"):
        v = v.detach().cpu().numpy()
    if isinstance(v, np.ndarray | np.generic):
        if v.size == 1:
            v = v.reshape(()).item()
        elif v.ndim == 1:
            v = v.tolist()
    if isinstance(v, list | tuple):
        return [summary_value(f"{key}[{i}]", x) for i, x in enumerate(v)]
    if isinstance(v, float) and v != v:
        return None
    if isinstance(v, bool | int | float | str) or v is None:
        return v
    raise TypeError(f"summary[{key!r}] must be a number, bool, text or a list of them, got {type(v).__name__}")
