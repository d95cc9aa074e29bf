"""Compact displays of the package's objects: one short text line per item in a terminal (``repr``), a small HTML
table in Jupyter (``_repr_html_``), never a whole array."""

from __future__ import annotations

import html
from collections.abc import Iterable
from typing import Any

import numpy as np


def brief(value: Any, width: int = 60) -> str:
    """A value in a few characters: an array as its shape, dtype and range; text and lists cut at ``width``."""
    if hasattr(value, "detach"):
        value = value.detach().cpu().numpy()
    if isinstance(value, np.ndarray):
        if value.size == 0:
            return f"array{value.shape} {value.dtype}, empty"
        if value.dtype.kind in "biuf":
            finite = value[np.isfinite(value)] if value.dtype.kind == "f" else value
            span = f"{finite.min():.4g} … {finite.max():.4g}" if finite.size else "no finite value"
            return f"array{value.shape} {value.dtype}, {span}"
        return f"array{value.shape} {value.dtype}"
    text = f"{value:.6g}" if isinstance(value, float) else repr(value) if not isinstance(value, str) else value
    return text if len(text) <= width else text[: width - 1] + "…"


def text_block(title: str, rows: Iterable[tuple[str, Any]], limit: int = 12) -> str:
    """``title`` then one indented ``name: brief(value)`` line per row, at most ``limit`` of them."""
    rows = list(rows)
    lines = [title, *(f"  {k}: {brief(v)}" for k, v in rows[:limit])]
    if len(rows) > limit:
        lines.append(f"  … and {len(rows) - limit} more")
    return "\n".join(lines)


def html_block(title: str, rows: Iterable[tuple[str, Any]], limit: int = 40) -> str:
    """The same as an HTML table (names in bold, values brief), at most ``limit`` rows."""
    rows = list(rows)
    body = "".join(f"<tr><th style='text-align:left'>{html.escape(str(k))}</th>"
                   f"<td style='text-align:left'>{html.escape(brief(v, 120))}</td></tr>" for k, v in rows[:limit])
    more = f"<tr><td colspan='2'>… and {len(rows) - limit} more</td></tr>" if len(rows) > limit else ""
    return f"<div><strong>{html.escape(title)}</strong><table>{body}{more}</table></div>"
