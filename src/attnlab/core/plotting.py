"""Shared figure style and saving (PNG for reports and slides, PDF for papers)."""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # headless everywhere; the sandbox renders PNGs too
import matplotlib.pyplot as plt
from matplotlib.figure import Figure

STYLE = {
    "figure.dpi": 110,
    "savefig.dpi": 150,
    "savefig.bbox": "tight",
    "font.size": 10,
    "axes.titlesize": 11,
    "axes.labelsize": 10,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.25,
    "legend.frameon": False,
    "lines.linewidth": 1.6,
    "image.cmap": "viridis",
}

#: Colour cycle shared by all studies (colour-blind safe, Okabe-Ito).
COLORS = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000"]


def figure(ncols: int = 1, nrows: int = 1, *, width: float = 4.0, height: float = 3.2, **kw) -> tuple[Figure, Any]:
    """A new figure in the house style: ``fig, axes = figure(2)``."""
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(nrows, ncols, figsize=(width * ncols, height * nrows), squeeze=False, **kw)
    fig.set_layout_engine("constrained")
    for ax in axes.flat:
        ax.set_prop_cycle(color=COLORS)
    return fig, (axes[0, 0] if axes.size == 1 else axes.reshape(-1) if 1 in (nrows, ncols) else axes)


def save_figure(fig: Figure, stem: Path, formats: Sequence[str] = ("png", "pdf")) -> list[Path]:
    """Write ``stem.png`` and ``stem.pdf`` atomically and close the figure."""
    from attnlab.core.runs import atomic_write

    paths = []
    with plt.rc_context(STYLE):
        for fmt in formats:
            path = stem.with_suffix(f".{fmt}")
            atomic_write(path, lambda p, fmt=fmt: fig.savefig(p, format=fmt))
            paths.append(path)
    plt.close(fig)
    return paths


def to_png_bytes(fig: Figure) -> bytes:
    buf = io.BytesIO()
    with plt.rc_context(STYLE):
        fig.savefig(buf, format="png")
    plt.close(fig)
    return buf.getvalue()


def sweep_figure(table: Any, keys: list[str], max_panels: int = 6) -> Figure | None:
    """Default sweep figure: each numeric summary scalar against the first grid key, one line per
    combination of the other grid keys (mean ± std over repeated points, e.g. seeds)."""
    import numpy as np
    import pandas as pd

    skip = {*keys, "run_id", "status", "error"}
    metrics = [c for c in table.columns if c not in skip and pd.api.types.is_numeric_dtype(table[c])][:max_panels]
    if not metrics:
        return None
    x, groups = keys[0], [k for k in keys[1:] if k != "seed"]
    fig, axes = figure(len(metrics), width=3.6, height=3.0)
    axes = np.atleast_1d(axes)
    for ax, metric in zip(axes, metrics, strict=False):
        parts = table.groupby(groups, dropna=False) if groups else [((), table)]
        for label, sub in parts:
            stats = sub.groupby(x)[metric].agg(["mean", "std"]).reset_index()
            name = ", ".join(f"{k}={v}" for k, v in zip(groups, np.atleast_1d(label), strict=False)) or metric
            xs = stats[x]
            if pd.api.types.is_numeric_dtype(xs):
                ax.errorbar(xs, stats["mean"], yerr=stats["std"].fillna(0), marker="o", capsize=2, label=name)
            else:
                ax.plot(xs.astype(str), stats["mean"], marker="o", label=name)
        ax.set_xlabel(x)
        ax.set_title(metric)
        if groups:
            ax.legend(fontsize=7)
    return fig
