"""What the paths study's sandbox views share: colours, the log width axis, theory/sample/GP traces, the U heat
maps, and the checks and look-ups on stored arrays."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from attnlab.core.config import ConfigError
from attnlab.sandbox import traces as T

THEORY, SAMPLES, GP, GD = T.COLORS[0], "#000", T.COLORS[3], T.COLORS[2]
GP_DASH = {"all": None, "good": "dash", "good_denoising": "dot", "good_uniform": "dot"}
DIVERGING = [[0.0, "#2166ac"], [0.25, "#92c5de"], [0.5, "#f7f7f7"], [0.75, "#f4a582"], [1.0, "#b2182b"]]
N_AXIS = {"type": "log", "title": {"text": "width N"}}  # the x axis of every series over N (x values are N)


def theory(x: Any, y: Any, name: str = "theory", color: str = THEORY, symbol: str = "x",
           **more: Any) -> dict[str, Any]:
    """Lines with markers in one colour (theory: crosses joined by a line, as in the paper's figures)."""
    return T.line(x, y, name=name, color=color, mode="lines+markers", marker={"symbol": symbol, "size": 7,
                                                                               "color": color}, **more)


def samples(x: Any, y: Any, name: str = "samples (Gibbs)", color: str = SAMPLES, **more: Any) -> dict[str, Any]:
    return T.scatter(np.stack([np.asarray(x, float), np.asarray(y, float)], 1), name=name, color=color, size=8,
                     **more)


def hline(x0: float, x1: float, y: float, name: str, color: str, dash: str | None = None) -> dict[str, Any]:
    return T.line([x0, x1], [y, y], name=name, color=color, dash=dash, width=1.3, hoverinfo="name+y")


def gp_dash(style: str | None) -> str | None:
    return GP_DASH.get(style or "all")


def heat(U: np.ndarray, labels: list[str], axis: int, coloraxis: str = "coloraxis") -> dict[str, Any]:
    suffix = "" if axis == 1 else str(axis)
    return {"type": "heatmap", "z": np.asarray(U, float), "x": labels, "y": labels, "coloraxis": coloraxis,
            "xaxis": f"x{suffix}", "yaxis": f"y{suffix}", "xgap": 0.5, "ygap": 0.5,
            "hovertemplate": "U[%{y}, %{x}] = %{z:.4g}<extra></extra>"}


def heat_layout(title: str, titles: list[str], lim: float, Hs: Sequence[int] | None = None,
                extra_axes: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Side-by-side heat maps (one per entry of ``titles``) on one diverging colour scale ±lim, rows top-down;
    with ``Hs`` the h₁ blocks of U are outlined (paths ordered with h₁ most significant)."""
    n = len(titles)
    gap = 0.06
    w = (1 - gap * (n - 1)) / n
    more: dict[str, Any] = {}
    shapes = []
    block = int(np.prod(Hs[1:])) if Hs is not None and len(Hs) > 1 else 1
    n_paths = int(np.prod(Hs)) if Hs is not None else 0
    for i, t in enumerate(titles):
        s = "" if i == 0 else str(i + 1)
        more[f"xaxis{s}"] = {"domain": [i * (w + gap), i * (w + gap) + w], "title": {"text": t}, "showgrid": False,
                             "tickangle": -90, "tickfont": {"size": 8}, "anchor": f"y{s}"}
        more[f"yaxis{s}"] = {"autorange": "reversed", "showgrid": False, "tickfont": {"size": 8}, "anchor": f"x{s}",
                             "showticklabels": i == 0, "scaleanchor": f"x{s}"}
        if block > 1:
            for e in np.arange(block, n_paths, block) - 0.5:
                line = {"type": "line", "xref": f"x{s}", "yref": f"y{s}", "line": {"width": 0.8, "color": "#222"}}
                shapes += [{**line, "x0": e, "x1": e, "y0": -0.5, "y1": n_paths - 0.5},
                           {**line, "x0": -0.5, "x1": n_paths - 0.5, "y0": e, "y1": e}]
    lay = T.layout(title, coloraxis={"colorscale": DIVERGING, "cmin": -lim, "cmax": lim,
                                     "colorbar": {"thickness": 8, "len": 0.8}}, **more, **(extra_axes or {}))
    lay["margin"] = {**lay["margin"], "b": 60}
    if shapes:
        lay["shapes"] = shapes
    return lay


def lim(*arrays: np.ndarray) -> float:
    """The largest |entry| over ``arrays`` (the half-width of a colour scale fixed over every frame)."""
    return max(max(float(np.nanmax(np.abs(a))) for a in arrays if np.size(a)), 1e-12)


def value_range(arrays: Sequence[np.ndarray]) -> tuple[float, float]:
    """The finite range of ``arrays`` padded by 5% (a y range fixed over every frame)."""
    vals = np.concatenate([np.ravel(a) for a in arrays]) if arrays else np.zeros(1)
    vals = vals[np.isfinite(vals)]
    lo, hi = (float(vals.min()), float(vals.max())) if vals.size else (0.0, 1.0)
    pad = 0.05 * max(hi - lo, 1e-3)
    return lo - pad, hi + pad


def at(times: np.ndarray, t: float) -> int | None:
    """Index of ``t`` in ``times`` (relative tolerance), or None."""
    hit = np.flatnonzero(np.isclose(times, t, rtol=1e-9, atol=0))
    return int(hit[0]) if hit.size else None


def need(arrays: Mapping[str, np.ndarray], keys: Sequence[str], experiment: str, what: str) -> None:
    """A one-line ConfigError when ``arrays`` lacks any of ``keys``."""
    missing = [k for k in keys if k not in arrays]
    if missing:
        raise ConfigError(f"this {experiment} run stores no {what} (missing {', '.join(missing[:3])}"
                          f"{', …' if len(missing) > 3 else ''}): it cannot be shown")
