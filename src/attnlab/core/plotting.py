"""Shared figure style and saving (PNG for reports and slides, PDF for papers)."""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib

from attnlab.core.config import ConfigError

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
    from attnlab.core.files import atomic_write

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
    """Default sweep figure, one panel per numeric summary scalar (at most ``max_panels``).

    The swept parameter is on x (the first grid key other than ``seed``; integer ticks for an integer parameter,
    a log axis when it spans more than a decade), one line per combination of the remaining keys; repeated points
    (seeds) are drawn faint and their mean ± sd bold. A sweep over seeds alone shows each seed as a faint point and
    the mean ± sd beside them. Summaries constant over the sweep get no panel."""
    import numpy as np
    import pandas as pd

    skip = {*keys, "run_id", "status", "error"}
    metrics = [c for c in table.columns if c not in skip and pd.api.types.is_numeric_dtype(table[c])
               and not pd.api.types.is_bool_dtype(table[c]) and (len(table) == 1 or table[c].nunique() > 1)]
    metrics = metrics[:max_panels]
    if not metrics:
        return None
    swept = [k for k in keys if k != "seed"]
    fig, axes = figure(len(metrics), width=3.6, height=3.0)
    for ax, metric in zip(np.atleast_1d(axes).reshape(-1), metrics, strict=False):
        if swept:
            _sweep_panel(ax, table, swept[0], swept[1:], metric)
        else:
            _seed_panel(ax, table[metric].to_numpy(float))
        ax.set_title(metric)
    return fig


def _sweep_panel(ax: Any, table: Any, x: str, groups: list[str], metric: str) -> None:
    import numpy as np
    import pandas as pd
    from matplotlib.ticker import MaxNLocator

    numeric = pd.api.types.is_numeric_dtype(table[x]) and not pd.api.types.is_bool_dtype(table[x])
    parts = table.groupby(groups, dropna=False) if groups else [((), table)]
    for (label, sub), color in zip(parts, COLORS * 8, strict=False):
        name = ", ".join(f"{k}={v}" for k, v in zip(groups, np.atleast_1d(label), strict=False)) or None
        stats = sub.groupby(x)[metric].agg(["mean", "std", "count"]).reset_index()
        xs = stats[x] if numeric else stats[x].astype(str)
        if "seed" in sub and stats["count"].max() > 1:
            for _, one in sub.groupby("seed"):
                one = one.sort_values(x)
                ax.plot(one[x] if numeric else one[x].astype(str), one[metric], color=color, alpha=0.25, lw=0.8)
        ax.plot(xs, stats["mean"], marker="o", color=color, lw=2, label=name)
        if numeric and stats["count"].max() > 1:
            sd = stats["std"].fillna(0).to_numpy()
            ax.fill_between(xs, stats["mean"] - sd, stats["mean"] + sd, color=color, alpha=0.15, lw=0)
    ax.set_xlabel(x)
    values = table[x].to_numpy()
    if numeric and pd.api.types.is_integer_dtype(table[x]):
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    if numeric and (values > 0).all() and values.max() / values.min() > 10:
        ax.set_xscale("log")
    if groups:
        ax.legend(fontsize=7)


def _seed_panel(ax: Any, values: Any) -> None:
    import numpy as np

    jitter = np.linspace(-0.15, 0.15, len(values)) if len(values) > 1 else np.zeros(1)
    ax.scatter(jitter, values, color=COLORS[0], alpha=0.35, s=14, label="each seed")
    ax.errorbar([0.5], [values.mean()], yerr=[values.std(ddof=1) if len(values) > 1 else 0.0], fmt="o",
                color=COLORS[3], capsize=4, lw=2, label=f"mean ± sd ({len(values)} seeds)")
    ax.set_xlim(-0.6, 1.1)
    ax.set_xticks([])
    ax.legend(fontsize=7)


def plotly_js(needed_for: str) -> Path:
    """plotly.min.js as shipped inside the installed ``plotly`` Python package (no CDN, no download): the sandbox
    serves it, ``attnlab map`` inlines it; ``needed_for`` names the user in the one-line error when it is missing."""
    import importlib.util

    spec = importlib.util.find_spec("plotly")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(f"{needed_for} needs plotly: pip install 'attnlab[sandbox]'")
    path = Path(next(iter(spec.submodule_search_locations))) / "package_data" / "plotly.min.js"
    if not path.is_file():
        raise ConfigError(f"plotly is installed but has no bundled plotly.min.js at {path}")
    return path

