"""Plotly drawing of the clustering sandbox panels (paper 4 Sec. 4.1): ``FIGURES[name](data, ctx)`` draws the pure data
of ``attnlab.clustering.render.panels`` with the offline renderer's visual vocabulary (colour = position t,
circle = informative / square = spurious, marker = class y, query in red), plus hover texts: a token's (x, t), a
sentence's tokens, class and p̂(y|x), a neuron's index.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from matplotlib.colors import to_rgb

from attnlab.clustering.render import panels as P
from attnlab.clustering.render.draw import POSITION_COLORS, QUERY_COLOR, class_color
from attnlab.sandbox import traces as T
from attnlab.sandbox.plugin import Figure

Data = dict[str, Any]
BLUES = ((0.0, "#f7fbff"), (0.1, "#c6dbef"), (0.25, "#6baed6"), (0.5, "#2171b5"), (1.0, "#08306b"))  # ≈ √-scaled


def _class_rgb(v: int) -> tuple[float, float, float]:
    return to_rgb(class_color(v))


def _position_color(t: np.ndarray) -> list[str]:
    return [T.rgb(POSITION_COLORS[int(i) % len(POSITION_COLORS)]) for i in np.atleast_1d(t)]


def _symbols(markers: list[str]) -> list[str]:
    return [T.SYMBOLS.get(m, "circle") for m in markers]


def _origin(dim: int) -> list[dict[str, Any]]:
    return [T.scatter(np.zeros((1, dim)), color="#666", symbol="cross-thin", size=8, hoverinfo="skip")] \
        if dim == 2 else []


def _token_traces(d: Data, what: str) -> list[dict[str, Any]]:
    """A token cloud (E(x)+P(t), Z(x,t), VZ(x,t)): colour = t, marker = informative/spurious, grouped labels."""
    hover = [f"{what} ({x},{t + 1})<br>token x = {x}, position t = {t + 1} "
             f"({'informative' if m == 'o' else 'spurious'})" for x, t, m in zip(d["x"], d["t"], d["markers"],
                                                                                  strict=True)]
    pts = T.scatter(d["points"], color=_position_color(d["color_index"]), symbol=_symbols(d["markers"]), size=8,
                    hover=hover)
    return [pts, T.labels(d["annotations"]["xy"], d["annotations"]["text"], size=8)]


def tokens(d: Data, ctx: Data) -> Figure:
    pts = T.scatter(d["points"], color=[class_color(v) for v in d["values"]], size=12,
                    hover=[f"token embedding E({v})" for v in d["values"]])
    text = [f"E({t})" if "," not in t else t for t in d["annotations"]["text"]]
    data = [*_origin(d["frame"]["dim"]), pts, T.labels(d["annotations"]["xy"], text, size=10)]
    return {"data": data, "layout": T.geometry_layout(T.title_text(d["title"]), d["frame"])}


def positions(d: Data, ctx: Data) -> Figure:
    hover = [f"position embedding P({t + 1}) ({'informative' if m == 'o' else 'spurious'})"
             for t, m in zip(d["t"], d["markers"], strict=True)]
    pts = T.scatter(d["points"], color=_position_color(d["color_index"]), symbol=_symbols(d["markers"]), size=9,
                    hover=hover)
    data = [*_origin(d["frame"]["dim"]), pts, T.labels(d["annotations"]["xy"], d["annotations"]["text"])]
    return {"data": data, "layout": T.geometry_layout("position embeddings P(t) (o informative, □ spurious)",
                                                      d["frame"])}


def embeddings(d: Data, ctx: Data) -> Figure:
    data = [*_origin(d["frame"]["dim"]), *_token_traces(d, "E(x)+P(t) at")]
    lay = T.geometry_layout(T.title_text(d["title"]) + f" · min ‖·‖ = {d['min_norm']:.3g}", d["frame"])
    return {"data": data, "layout": lay}


def normalized(d: Data, ctx: Data) -> Figure:
    r, q, dim = d["radius"], np.asarray(d["query"]["vector"], dtype=float), d["frame"]["dim"]
    data: list[dict[str, Any]] = []
    if dim == 2:
        th = np.linspace(0, 2 * np.pi, 120)
        data.append(T.line(r * np.cos(th), r * np.sin(th), color="#999", width=0.8, hoverinfo="skip"))
        data.append(T.line([0.0, q[0]], [0.0, q[1]], color=QUERY_COLOR, width=3, hoverinfo="skip"))
        head = T.scatter(q[None], color=QUERY_COLOR, symbol="arrow", size=13,
                         hover=[f"query q (‖q‖ = {d['query']['norm']:.3g}, rescaled)"])
        head["marker"]["angle"] = float(np.degrees(np.arctan2(q[0], q[1])))  # the arrow head points along q
        data.append(head)
    else:
        data.append({"type": "scatter3d", "mode": "lines", "x": [0, q[0]], "y": [0, q[1]], "z": [0, q[2]],
                     "line": {"color": QUERY_COLOR, "width": 6}, "hoverinfo": "skip"})
    data += _token_traces(d, "Z(x,t) at")
    lay = T.geometry_layout(f"normalised Z(x,t) and query q (‖q‖ = {d['query']['norm']:.3g})", d["frame"])
    if dim == 2:
        lim = [-1.25 * r * 1.15, 1.25 * r * 1.15]
        lay["xaxis"]["range"], lay["yaxis"]["range"] = lim, lim
    return {"data": data, "layout": lay}


def value(d: Data, ctx: Data) -> Figure:
    return {"data": [*_origin(d["frame"]["dim"]), *_token_traces(d, "VZ(x,t) at")],
            "layout": T.geometry_layout(T.title_text(d["title"]), d["frame"])}


def attention(d: Data, ctx: Data) -> Figure:
    a = np.asarray(d["attn"])
    n, N = a.shape
    heat = {"type": "heatmap", "z": a, "x": list(range(1, N + 1)), "y": list(range(n)), "zmin": 0.0, "zmax": 1.0,
            "colorscale": [list(s) for s in BLUES], "showscale": False,
            "customdata": [[r] * N for r in d["row_labels"]],  # the hover names the sentence, the position, a
            "hovertemplate": "sentence %{customdata}<br>position t = %{x}<br>a = %{z:.3f}<extra></extra>"}
    lay = T.layout(f"attention · mass on t ≤ k: {d['prefix_mass']:.2f}", xlabel="position t",
                   yaxis={"tickvals": list(range(n)), "ticktext": d["row_labels"], "autorange": "reversed",
                          "tickfont": {"family": "monospace", "size": 9}},
                   xaxis={"dtick": 1}, margin={"l": 100})  # room for the sentences
    inf = list(d["informative"])
    if inf and inf == list(range(len(inf))) and len(inf) < N:
        lay["shapes"] = [{"type": "line", "x0": len(inf) + 0.5, "x1": len(inf) + 0.5, "yref": "paper", "y0": 0,
                          "y1": 1, "line": {"color": QUERY_COLOR, "dash": "dash", "width": 1}}]
    return {"data": [heat], "layout": lay}


def _sentence_traces(d: Data, ctx: Data, size: float = 8) -> list[dict[str, Any]]:
    """Probe sentences (ξ, ψ, level lines): colour = prefix, marker = class; hover = tokens, class, p̂(y|x)."""
    words, probs = ctx["sentences"], ctx["probs"]
    classes = np.asarray(d["classes"])
    hover = [f"sentence {w}<br>class y = {y}<br>p̂(y|x) = {probs[i, y]:.3f}"
             for i, (w, y) in enumerate(zip(words, classes, strict=True))]
    return [T.scatter(d["points"], color=[T.rgb(c) for c in d["colors"]], symbol=_symbols(d["markers"]),
                      size=size, hover=hover)]


def xi(d: Data, ctx: Data) -> Figure:
    return {"data": _sentence_traces(d, ctx), "layout": T.geometry_layout(T.title_text(d["title"]) +
                                                                          " (marker = class y)", d["frame"])}


def _tint(c: tuple[float, float, float], amount: float) -> np.ndarray:
    """Mix a colour with white: ``amount`` = 0 → white, 1 → the colour."""
    return 1 - amount * (1 - np.asarray(c))


def psi(d: Data, ctx: Data) -> Figure:
    data: list[dict[str, Any]] = []
    reg = d["regions"]
    lay = T.geometry_layout(T.title_text(d["title"]) + " · background: argmax class", d["frame"])
    if reg is not None:
        grid = np.asarray(reg["argmax"])
        n = int(grid.max()) + 1
        x0, x1, y0, y1 = reg["extent"]
        g = grid.shape[0]
        cols = [T.rgb(_tint(_class_rgb(v), 0.25)) for v in range(max(n, 1))]
        scale = [[i / max(n, 1), cols[i]] for i in range(n)] + [[(i + 1) / max(n, 1), cols[i]] for i in range(n)]
        data.append({"type": "heatmap", "z": grid, "x0": x0, "dx": (x1 - x0) / (g - 1), "y0": y0,
                     "dy": (y1 - y0) / (g - 1), "zmin": -0.5, "zmax": n - 0.5, "showscale": False,
                     "colorscale": sorted(scale), "hoverinfo": "skip"})
        lay["xaxis"]["range"], lay["yaxis"]["range"] = [x0, x1], [y0, y1]
    data += _sentence_traces(d, ctx)
    return {"data": data, "layout": lay}


def levels(d: Data, ctx: Data) -> Figure:
    """Background = class colour blended by confidence (a PNG: ~50× less data than the grid), level lines traced
    on the server (contourpy, as matplotlib does) and sent as polylines."""
    probs, xs, ys = np.asarray(d["probs"]), np.asarray(d["xs"]), np.asarray(d["ys"])
    n_cls = probs.shape[-1]
    cols = np.array([_tint(_class_rgb(v), 0.45) for v in range(n_cls)])
    w = np.clip((probs - 1 / n_cls) / (1 - 1 / n_cls), 0, 1)  # white = undecided, class colour = confident
    img = np.round(255 * np.clip(1 - w @ (1 - cols), 0, 1)).astype(np.uint8)
    dx, dy = xs[1] - xs[0], ys[1] - ys[0]
    # pixel (0, 0) centred on (xs[0], ys[0]); rows go up the (not reversed) y axis, as in both renderers
    data: list[dict[str, Any]] = [{"type": "image", "source": T.png_uri(img), "x0": xs[0], "y0": ys[0], "dx": dx,
                                   "dy": dy, "hoverinfo": "skip"}]
    dashed = (0.1, 0.9) if n_cls == 2 else (0.9,)
    for v in range(n_cls if n_cls > 2 else 1):
        pv = probs[..., v if n_cls > 2 else 1]
        for lv in (0.5, *dashed):
            if pv.min() < lv < pv.max():
                lx, ly = T.contour_lines(xs, ys, pv, lv)
                data.append(T.line(lx, ly, color="#111", dash=None if lv == 0.5 else "dash",
                                   width=1.6 if lv == 0.5 else 0.8, hoverinfo="skip"))
    data += _sentence_traces(d, ctx, size=7)
    lay = T.geometry_layout("level lines p̂(·|ξ) (0.5 solid, 0.1/0.9 dashed)", d["frame"])
    lay["xaxis"]["range"] = [xs[0] - dx / 2, xs[-1] + dx / 2]
    lay["yaxis"]["range"] = [ys[0] - dy / 2, ys[-1] + dy / 2]
    return {"data": data, "layout": lay}


def mlp(d: Data, ctx: Data) -> Figure:
    w, u = np.asarray(d["receptors"]), np.asarray(d["assemblers"])
    h, dim = len(w), w.shape[1]
    cols = [T.hue(i, h) for i in range(h)]
    data: list[dict[str, Any]] = []
    if dim == 2:  # faint spokes from the origin, one trace per cloud (None breaks the line between spokes)
        for pts in (w, u):
            xsg = np.full(3 * h, np.nan)
            ysg = np.full(3 * h, np.nan)
            xsg[0::3], ysg[0::3], xsg[1::3], ysg[1::3] = 0.0, 0.0, pts[:, 0], pts[:, 1]
            data.append(T.line(xsg, ysg, color="rgba(120,120,120,0.45)", width=0.8, hoverinfo="skip"))
    data.append(T.scatter(w, color=cols, symbol="circle", size=9,
                          hover=[f"receptor w_{i + 1} of neuron {i + 1}" for i in range(h)]))
    data.append(T.scatter(u, color=cols, symbol="triangle-up", size=9,
                          hover=[f"assembler u_{i + 1} of neuron {i + 1}" for i in range(h)]))
    ann = P.group_annotations(w, [(i + 1,) for i in range(h)])
    data += [T.labels(ann["xy"], ann["text"], size=8), *_origin(dim)]
    return {"data": data, "layout": T.geometry_layout("MLP receptors w_i (o), assemblers u_i (△)", d["frame"])}


def output(d: Data, ctx: Data) -> Figure:
    traces = _sentence_traces(d, ctx, size=7)
    if d["kind"] == "strip":
        n_ms = int(np.max(d["multiset_id"])) + 1
        lay = T.layout(T.title_text(d["title"]), xlabel="p̂(y=1|x)", xaxis={"range": [-0.05, 1.05]},
                       yaxis={"tickvals": list(range(n_ms)), "ticktext": [f"#1s = {i}" for i in range(n_ms)]},
                       shapes=[{"type": "line", "x0": 0.5, "x1": 0.5, "yref": "paper", "y0": 0, "y1": 1,
                                "line": {"color": "#888", "dash": "dash", "width": 1}}])
        return {"data": traces, "layout": lay}
    v = np.asarray(d["vertices"])
    edge = T.line(np.append(v[:, 0], v[0, 0]), np.append(v[:, 1], v[0, 1]), color="#666", width=1, hoverinfo="skip")
    names = T.labels(v, [f"y={i}" for i in range(len(v))], size=10)
    lay = T.layout(T.title_text(d["title"]), equal=True, xaxis={"visible": False}, yaxis={"visible": False})
    return {"data": [edge, names, *traces], "layout": lay}


def sparsity(d: Data, ctx: Data) -> Figure:
    lo, hi = d["band"]
    lay = T.layout(T.title_text(d["title"]), xlabel="ε", ylabel="fraction |σ(Wξ̄)| < ε",
                   xaxis={"type": "log"}, yaxis={"range": [-0.02, 1.02]},
                   shapes=[{"type": "rect", "x0": lo, "x1": hi, "yref": "paper", "y0": 0, "y1": 1,
                            "fillcolor": "#e6e6e6", "line": {"width": 0}, "layer": "below"}])
    return {"data": [T.line(d["eps"], d["sparsity"], color=T.COLORS[0], mode="lines+markers",
                            marker={"size": 3})], "layout": lay}


# ----------------------------------------------------------------------------------------------- series panels
def loss(d: Data) -> Figure:
    styles = {"train_loss": (T.COLORS[0], None), "test_loss": (T.COLORS[1], None),
              "train_acc": (T.COLORS[0], "dot"), "test_acc": (T.COLORS[1], "dot")}
    data = [T.line(d["epochs"], y, name=n.replace("_", " "), color=styles[n][0], dash=styles[n][1])
            for n, y in d["series"].items()]
    return {"data": data, "layout": T.layout(d["title"] + " (click to jump)", xlabel="epoch", showlegend=True,
                                             hovermode="x", legend={"font": {"size": 9}, "x": 1, "xanchor": "right",
                                                                     "y": 0.5})}


def _log_series(d: Data, ylabel: str) -> Figure:
    data = [T.line(d["epochs"], np.where(np.asarray(y) > 0, y, np.nan), name=n, color=T.COLORS[i % len(T.COLORS)],
                   width=1.2) for i, (n, y) in enumerate(d["series"].items())]
    return {"data": data, "layout": T.layout(d["title"], xlabel="epoch", ylabel=ylabel, yaxis={"type": "log"},
                                             showlegend=True, hovermode="x", legend={"font": {"size": 9}})}


def grads(d: Data) -> Figure:
    return _log_series(d, "‖∇L‖")


def min_norm(d: Data) -> Figure:
    return _log_series(d, "norm")


FRAME_FIGURES: dict[str, Callable[[Data, Data], Figure]] = {
    "tokens": tokens, "positions": positions, "embeddings": embeddings, "normalized": normalized,
    "attention": attention, "value": value, "xi": xi, "psi": psi, "levels": levels, "mlp": mlp, "output": output,
    "sparsity": sparsity}
SERIES_FIGURES: dict[str, Callable[[Data], Figure]] = {"loss": loss, "grads": grads, "min_norm": min_norm}
