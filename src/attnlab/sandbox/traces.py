"""Plotly building blocks shared by the plug-ins (plain dicts, no plotly import) and the compact JSON encoding.

``to_json`` turns a figure holding numpy arrays into JSON text: floats keep 5 significant digits (what a
screen shows; a 1000-snapshot run pages in faster), NaN/inf become null (Plotly draws a gap).
"""

from __future__ import annotations

import base64
import io
import json
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from attnlab.core.plotting import COLORS as HOUSE_COLORS

#: matplotlib marker → Plotly symbol (the offline renderer's markers: square, circle, triangles, ...)
SYMBOLS = {"s": "square", "o": "circle", "^": "triangle-up", "D": "diamond", "v": "triangle-down", "P": "cross",
           "X": "x", "*": "star"}
COLORS = tuple(HOUSE_COLORS)  # the house palette (core.plotting), shared with the matplotlib figures
SIGNIFICANT = 5


def rgb(color: Sequence[float] | str) -> str:
    """(r, g, b) in [0, 1] (matplotlib) → 'rgb(R,G,B)'; strings pass through."""
    if isinstance(color, str):
        return color
    r, g, b = (round(255 * float(c)) for c in list(color)[:3])
    return f"rgb({r},{g},{b})"


def hue(i: int, n: int) -> str:
    """Colour of index i among n: the house palette when it is long enough, else evenly spaced hues."""
    if n <= len(COLORS):
        return COLORS[int(i) % len(COLORS)]
    return f"hsl({round(324 * int(i) / max(n - 1, 1))},70%,45%)"


def layout(title: str, *, equal: bool = False, xlabel: str = "", ylabel: str = "", **more: Any) -> dict[str, Any]:
    """The compact layout of a sandbox panel (fixed size; equal aspect for geometry panels)."""
    out: dict[str, Any] = {
        "title": {"text": title, "font": {"size": 13}, "x": 0.02, "xanchor": "left"},
        "margin": {"l": 44, "r": 10, "t": 34, "b": 36}, "showlegend": False, "hovermode": "closest",
        "xaxis": {"title": {"text": xlabel}, "zeroline": False, "nticks": 6, "ticklabeloverflow": "allow"},
        "yaxis": {"title": {"text": ylabel}, "zeroline": False, "nticks": 6, "ticklabeloverflow": "allow"},
        "uirevision": "keep", "paper_bgcolor": "white", "plot_bgcolor": "white", "font": {"size": 11},
    }
    if equal:
        out["yaxis"]["scaleanchor"] = "x"
        out["yaxis"]["scaleratio"] = 1
    for key, value in more.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = {**out[key], **value}
        else:
            out[key] = value
    return out


def scatter(xy: np.ndarray, *, name: str = "", color: Any = None, symbol: Any = "circle", size: float = 8,
            text: Sequence[str] | None = None, hover: Sequence[str] | None = None, **more: Any) -> dict[str, Any]:
    """Markers at the rows of ``xy`` (N, 2) or (N, 3): a 3-D scatter when the panel lives in space."""
    xy = np.asarray(xy, dtype=float).reshape(len(xy), -1)
    trace: dict[str, Any] = {"type": "scatter3d" if xy.shape[1] == 3 else "scatter", "mode": "markers",
                             "name": name, "x": xy[:, 0], "y": xy[:, 1] if xy.shape[1] > 1 else np.zeros(len(xy)),
                             "marker": {"size": size, "symbol": symbol, "line": {"width": 0.6, "color": "#222"}}}
    if xy.shape[1] == 3:
        trace["z"] = xy[:, 2]
    if color is not None:
        trace["marker"]["color"] = color
    if text is not None:
        trace["text"] = list(text)
    if hover is not None:
        trace["hovertext"] = list(hover)
        trace["hoverinfo"] = "text"
    trace.update(more)
    return trace


def labels(xy: np.ndarray, text: Sequence[str], *, size: int = 9) -> dict[str, Any]:
    """Text labels at ``xy`` (a text trace: far faster to redraw than layout annotations)."""
    t = scatter(xy, text=text, hoverinfo="skip")
    t.update(mode="text", textposition="top right", textfont={"size": size, "color": "#333"})
    t.pop("marker")
    return t


def line(x: Any, y: Any, *, name: str = "", color: str | None = None, dash: str | None = None, width: float = 1.6,
         **more: Any) -> dict[str, Any]:
    trace: dict[str, Any] = {"type": "scatter", "mode": "lines", "name": name, "x": x, "y": y,
                             "line": {"width": width}}
    if color:
        trace["line"]["color"] = color
    if dash:
        trace["line"]["dash"] = dash
    trace.update(more)
    return trace


def geometry_layout(title: str, frame: dict[str, Any], **more: Any) -> dict[str, Any]:
    """Layout of a panel in the model's plane (equal aspect), space (a 3-D scene) or a labelled PCA plane."""
    labels_ = list(frame.get("labels", []))
    if frame.get("projection"):
        title += " [PCA projection]"
    if frame.get("dim") == 3:
        axes = {f"{a}axis": {"title": {"text": _plain(lab)}} for a, lab in zip("xyz", labels_, strict=False)}
        return layout(title, scene={**axes, "aspectmode": "data"}, **more)
    xl = _plain(labels_[0]) if frame.get("kind") == "pca" else ""
    yl = _plain(labels_[1]) if frame.get("kind") == "pca" and len(labels_) > 1 else ""
    return layout(title, equal=True, xlabel=xl, ylabel=yl, **more)


def png_uri(rgb: np.ndarray) -> str:
    """An (H, W, 3) uint8 image as a PNG data URI, row 0 first (an ``image`` trace draws row 0 at ``y0``)."""
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(rgb), "RGB").save(buf, format="PNG", compress_level=1)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def contour_lines(xs: np.ndarray, ys: np.ndarray, z: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    """The ``level`` set of ``z`` (rows = ys) as one polyline with NaN breaks between pieces (contourpy)."""
    import contourpy

    pieces = contourpy.contour_generator(xs, ys, z).lines(level)
    if not pieces:
        return np.zeros(0), np.zeros(0)
    joined = np.concatenate([np.vstack([p, [np.nan, np.nan]]) for p in pieces])
    return joined[:, 0], joined[:, 1]


def _plain(tex: str) -> str:
    """'$x_1$' → 'x_1' (axis labels of the offline renderer are matplotlib TeX)."""
    return tex.replace("$", "")


def title_text(tex: str) -> str:
    """A matplotlib TeX title as Plotly text (Plotly would need MathJax, which is not bundled)."""
    out = tex
    for a, b in ((r"\hat p", "p̂"), (r"\xi", "ξ"), (r"\psi", "ψ"), (r"\varepsilon", "ε"), (r"\cdot", "·"),
                 ("$", ""), ("{", ""), ("}", "")):
        out = out.replace(a, b)
    return out


# ----------------------------------------------------------------------------------------------- JSON
def _rounded(a: np.ndarray) -> list:
    """Array → nested lists, floats to ``SIGNIFICANT`` digits, non-finite → None."""
    if a.dtype.kind in "biu":
        return a.tolist()
    if a.dtype.kind != "f":
        return [_plain_value(v) for v in a.tolist()]
    x = a.astype(np.float64)
    finite = np.isfinite(x)
    with np.errstate(divide="ignore", invalid="ignore"):
        mag = np.where(finite & (x != 0), np.floor(np.log10(np.abs(np.where(finite, x, 1.0)))), 0.0)
        scale = 10.0 ** (SIGNIFICANT - 1 - mag)
        r = np.where(finite, np.round(x * scale) / scale, np.nan)
    out = r.tolist()
    if finite.all():
        return out
    return _nan_to_none(out)


def _nan_to_none(v: Any) -> Any:
    if isinstance(v, list):
        return [_nan_to_none(x) for x in v]
    return None if isinstance(v, float) and not math.isfinite(v) else v


def _plain_value(o: Any) -> Any:
    if isinstance(o, np.ndarray):
        return _rounded(o)
    if isinstance(o, np.floating):
        return _rounded(np.asarray(o))
    if isinstance(o, np.generic):
        o = o.item()
    if isinstance(o, float) and not math.isfinite(o):
        return None
    if isinstance(o, dict):
        return {str(k): _plain_value(v) for k, v in o.items()}
    if isinstance(o, list | tuple):
        return [_plain_value(v) for v in o]
    return o


def plain(obj: Any) -> Any:
    """``obj`` with numpy arrays and scalars made JSON-ready (see ``to_json``)."""
    return _plain_value(obj)


def to_json(obj: Any) -> str:
    return json.dumps(plain(obj), separators=(",", ":"), allow_nan=False)
