"""Matplotlib drawing of each sandbox panel (paper Sec. 4.1, Figs. 1–6, 8, 10–13): ``DRAW[name](ax, data)`` draws the
pure data of ``panels.py``. Colours: position t (tab20), class y (house ``COLORS``), neuron i (``COLORS``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.colors import PowerNorm, to_rgb
from matplotlib.lines import Line2D
from matplotlib.ticker import MaxNLocator
from matplotlib.transforms import ScaledTranslation

from attnlab.clustering.render.geometry import CLASS_MARKERS, Data, group_annotations
from attnlab.core.plotting import COLORS, STYLE

_TAB20 = plt.get_cmap("tab20").colors
POSITION_COLORS = [_TAB20[i] for i in range(0, 20, 2)] + [_TAB20[i] for i in range(1, 20, 2)]
QUERY_COLOR = "#D62728"
_LOCATOR = lambda: MaxNLocator(nbins=4, steps=[1, 2, 2.5, 5, 10])  # noqa: E731  few ticks: readable and fast
CURSOR_COLOR = "#D62728"


def palette(i: int | np.ndarray, n: int, base: Sequence = COLORS) -> list:
    """Colour of index i among n: ``base`` when it is long enough, else evenly spaced hues."""
    idx = np.atleast_1d(i)
    if n <= len(base):
        return [base[int(j)] for j in idx]
    return [plt.get_cmap("hsv")(0.9 * int(j) / max(n - 1, 1)) for j in idx]


def class_color(v: int) -> Any:
    return COLORS[int(v) % len(COLORS)]


# ----------------------------------------------------------------------------------------------- geometry helpers
def _geometry(ax, data: Data, *, adjustable: str = "datalim") -> None:
    fr = data["frame"]
    if fr["kind"] != "plane":  # the plane's own axes need no label (fewer texts per frame); PCA axes do
        ax.set_xlabel(fr["labels"][0])
        ax.set_ylabel(fr["labels"][1] if len(fr["labels"]) > 1 else "")
    if fr["dim"] == 3:
        ax.set_zlabel(fr["labels"][2])
        for axis in (ax.xaxis, ax.yaxis, ax.zaxis):
            axis.set_major_locator(MaxNLocator(nbins=3))
        ax.tick_params(labelsize=7)
    else:
        ax.set_aspect("equal", adjustable=adjustable)
        ax.xaxis.set_major_locator(_LOCATOR())
        ax.yaxis.set_major_locator(_LOCATOR())
    title = data["title"] + (f"\n[{data.get('note', 'PCA projection')}]" if fr["projection"] else "")
    ax.set_title(title, fontsize=10)


def _scatter(ax, pts: np.ndarray, *, c, marker: str, s: float = 36, **kw) -> None:
    if len(pts) == 0:
        return
    kw.setdefault("edgecolors", "k")
    kw.setdefault("linewidths", 0.5)
    if pts.shape[1] == 3:
        ax.scatter(pts[:, 0], pts[:, 1], pts[:, 2], c=c, marker=marker, s=s, depthshade=False, **kw)
    else:
        ax.scatter(pts[:, 0], pts[:, 1], c=c, marker=marker, s=s, **kw)


def _by_marker(ax, pts: np.ndarray, markers: list[str], colors: list | np.ndarray, s: float = 36, **kw) -> None:
    markers = np.asarray(markers)
    colors = np.asarray(colors, dtype=object) if not isinstance(colors, np.ndarray) else colors
    for mk in dict.fromkeys(markers.tolist()):
        sel = markers == mk
        c = colors[sel]
        _scatter(ax, pts[sel], c=list(c) if c.dtype == object else c, marker=mk, s=s, **kw)


def _annotate(ax, ann: Data, *, fontsize: float = 7, center: np.ndarray | None = None, off: float = 5) -> None:
    """Labels pushed away from ``center`` (default: the middle of the labelled points) to limit overlaps."""
    xy = np.asarray(ann["xy"], dtype=float)
    if len(xy) == 0:
        return
    if xy.shape[1] == 3:
        for p, text in zip(xy, ann["text"], strict=True):
            ax.text(*p, " " + text, fontsize=fontsize)
        return
    lo, hi = xy.min(0), xy.max(0)
    c = (lo + hi) / 2 if center is None else np.asarray(center, dtype=float)
    span = np.maximum(hi - lo, 1e-9 + 0.3 * (hi - lo).max())
    for p, text in zip(xy, ann["text"], strict=True):
        v = (p - c) / span
        n = np.linalg.norm(v)
        v = np.array([0.6, 0.8]) if n < 1e-6 else v / n
        shift = ScaledTranslation(off * v[0] / 72, off * v[1] / 72, ax.figure.dpi_scale_trans)
        ax.text(p[0], p[1], text, transform=ax.transData + shift, fontsize=fontsize, color="0.15", clip_on=True,
                ha="left" if v[0] > 0.05 else "right" if v[0] < -0.05 else "center",
                va="bottom" if v[1] > -0.3 else "top")  # Text + offset transform: cheaper than annotate


def _corner(ax, text: str, **kw) -> None:
    """Small note in the lower-left corner (2-D or 3-D axes)."""
    if not hasattr(ax, "zaxis"):  # no free corner on 3-D panels
        ax.text(0.02, 0.02, text, transform=ax.transAxes, fontsize=7, **kw)


def _origin(ax, data: Data) -> None:
    if data["frame"]["dim"] == 2:
        ax.plot([0], [0], "+", color="0.4", ms=7, mew=1, zorder=0)


def _marker_legend(ax, items: list[tuple[str, str]], loc: str = "best") -> None:
    if hasattr(ax, "zaxis"):  # 3-D panels: a legend would cover the title
        return
    handles = [Line2D([], [], ls="", marker=m, mfc="0.75", mec="k", mew=0.5, ms=6, label=lab) for m, lab in items]
    ax.legend(handles=handles, fontsize=7, loc=loc, handletextpad=0.2, borderaxespad=0.2)


# ----------------------------------------------------------------------------------------------- draw functions
def draw_tokens(ax, d: Data) -> None:
    _origin(ax, d)
    _scatter(ax, d["points"], c=[class_color(v) for v in d["values"]], marker="o", s=70, zorder=3)
    ann = {"xy": d["annotations"]["xy"], "text": [f"$E({t})$" if "," not in t else t for t in d["annotations"]["text"]]}
    _annotate(ax, ann, fontsize=9, center=np.zeros(2))
    _pad_limits(ax, d["points"])
    _geometry(ax, d)


def draw_positions(ax, d: Data) -> None:
    _origin(ax, d)
    _by_marker(ax, d["points"], d["markers"], palette(d["color_index"], 20, POSITION_COLORS), s=46, zorder=3)
    _annotate(ax, d["annotations"], fontsize=8, center=np.zeros(2))
    _pad_limits(ax, d["points"])
    _geometry(ax, d)
    _marker_legend(ax, [("o", "informative $t\\leq k$"), ("s", "spurious $t>k$")])


def _token_cloud(ax, d: Data, center: np.ndarray | None = None) -> None:
    _by_marker(ax, d["points"], d["markers"], palette(d["color_index"], 20, POSITION_COLORS), s=34, zorder=3)
    _annotate(ax, d["annotations"], fontsize=6.5, center=center)
    _pad_limits(ax, d["points"])
    _geometry(ax, d)


def draw_embeddings(ax, d: Data) -> None:
    _origin(ax, d)
    _token_cloud(ax, d, center=np.zeros(2))
    _corner(ax, f"min ‖E(x)+P(t)‖ = {d['min_norm']:.3g}", color="0.3")


def draw_normalized(ax, d: Data) -> None:
    r = d["radius"]
    q = d["query"]["vector"]
    if d["frame"]["dim"] == 3:
        u, v = np.mgrid[0 : 2 * np.pi : 25j, 0 : np.pi : 13j]
        ax.plot_wireframe(r * np.cos(u) * np.sin(v), r * np.sin(u) * np.sin(v), r * np.cos(v), color="0.85", lw=0.4)
        ax.quiver(0, 0, 0, *q, color=QUERY_COLOR, lw=2, arrow_length_ratio=0.15)
        ax.set_aspect("equal")
    else:
        th = np.linspace(0, 2 * np.pi, 200)
        ax.plot(r * np.cos(th), r * np.sin(th), color="0.6", lw=0.8, zorder=0)
        ax.annotate("", xy=q, xytext=(0, 0), arrowprops={"arrowstyle": "-|>", "color": QUERY_COLOR, "lw": 2,
                                                          "mutation_scale": 14}, zorder=4)
    _corner(ax, f"$q$ (‖q‖ = {d['query']['norm']:.3g}, rescaled)", color=QUERY_COLOR)
    _token_cloud(ax, d, center=np.zeros(2))
    if d["frame"]["dim"] == 2:
        _pad_limits(ax, np.array([[-r, -r], [r, r]]), pad=0.2)


def draw_value(ax, d: Data) -> None:
    _origin(ax, d)
    _token_cloud(ax, d, center=np.zeros(2))


def draw_attention(ax, d: Data) -> None:
    a = d["attn"]
    n, N = a.shape
    im = ax.imshow(a, cmap="Blues", norm=PowerNorm(0.5, vmin=0.0, vmax=1.0), aspect="auto", interpolation="nearest")
    ax.set_xticks(range(N), [str(t + 1) for t in range(N)], fontsize=7)
    ax.set_yticks(range(n), d["row_labels"], fontsize=6.5, family="monospace")
    ax.set_xlabel("position $t$")
    ax.grid(False)
    inf = d["informative"]
    if len(inf) and list(inf) == list(range(len(inf))) and len(inf) < N:
        ax.axvline(len(inf) - 0.5, color=QUERY_COLOR, lw=1, ls="--")
    ax.set_title(f"{d['title']}\nmass on $t\\leq k$: {d['prefix_mass']:.2f}", fontsize=10)
    cax = ax.inset_axes([1.03, 0.0, 0.05, 1.0])
    cb = ax.get_figure().colorbar(im, cax=cax)
    cb.set_ticks([0, 0.1, 0.25, 0.5, 1.0])
    cb.ax.tick_params(labelsize=6)


def _sentences(ax, d: Data, s: float = 30, legend: bool = False) -> None:
    _by_marker(ax, d["points"], d["markers"], d["colors"], s=s, zorder=3, linewidths=0.4)
    if legend:
        classes = sorted(set(np.asarray(d["classes"]).tolist()))
        _marker_legend(ax, [(CLASS_MARKERS[c % len(CLASS_MARKERS)], f"$y={c}$") for c in classes])


def draw_xi(ax, d: Data) -> None:
    _sentences(ax, d, legend=True)
    _pad_limits(ax, d["points"])
    _geometry(ax, d)


def _light(c, amount: float = 0.55) -> np.ndarray:
    return 1 - amount * (1 - np.asarray(to_rgb(c)))


def draw_psi(ax, d: Data) -> None:
    reg = d["regions"]
    if reg is not None:
        n_cls = int(reg["argmax"].max()) + 1
        cols = np.array([_light(class_color(v), 0.25) for v in range(max(n_cls, 1))])
        ax.imshow(cols[reg["argmax"]], extent=reg["extent"], origin="lower", aspect="auto", zorder=0,
                  interpolation="nearest")
        ax.set_xlim(reg["extent"][:2])
        ax.set_ylim(reg["extent"][2:])
        ax.grid(False)
    _sentences(ax, d)
    if reg is None:
        _pad_limits(ax, d["points"])
    _geometry(ax, d, adjustable="box" if reg is not None else "datalim")


def draw_levels(ax, d: Data) -> None:
    probs, xs, ys = d["probs"], d["xs"], d["ys"]
    n_cls = probs.shape[-1]
    cols = np.array([_light(class_color(v), 0.55) for v in range(n_cls)])
    w = np.clip((probs - 1 / n_cls) / (1 - 1 / n_cls), 0, 1)  # white = undecided, class colour = confident
    rgb = np.clip(1 - w @ (1 - cols), 0, 1)
    ax.imshow(rgb, extent=(xs[0], xs[-1], ys[0], ys[-1]), origin="lower", aspect="auto", zorder=0)
    for v in range(n_cls if n_cls > 2 else 1):
        pv = probs[..., v if n_cls > 2 else 1]
        if pv.min() < 0.5 < pv.max():
            ax.contour(xs, ys, pv, levels=[0.5], colors="k", linewidths=1.3, zorder=1)
        lv = [lv for lv in ((0.1, 0.9) if n_cls == 2 else (0.9,)) if pv.min() < lv < pv.max()]
        if lv:
            ax.contour(xs, ys, pv, levels=lv, colors="k", linewidths=0.7, linestyles="--", zorder=1)
    ax.set_xlim(xs[0], xs[-1])
    ax.set_ylim(ys[0], ys[-1])
    ax.grid(False)
    _sentences(ax, d, s=26)
    _geometry(ax, d, adjustable="box")


def draw_mlp(ax, d: Data) -> None:
    h = len(d["receptors"])
    cols = palette(d["color_index"], h)
    dim = d["frame"]["dim"]
    for pts, mk in ((d["receptors"], "o"), (d["assemblers"], "^")):
        for i in range(h):
            seg = np.stack([np.zeros(dim), pts[i]])
            ax.plot(*seg.T, color=cols[i], lw=0.8, alpha=0.45, zorder=1)
        _scatter(ax, pts, c=cols, marker=mk, s=40, zorder=3)
    _annotate(ax, group_annotations(d["receptors"], [(i + 1,) for i in range(h)]), fontsize=7, center=np.zeros(2))
    _origin(ax, d)
    _pad_limits(ax, np.concatenate([d["receptors"], d["assemblers"], np.zeros((1, dim))]))
    _geometry(ax, d)
    _marker_legend(ax, [("o", "receptor $w_i$"), ("^", "assembler $u_i$")])


def draw_output(ax, d: Data) -> None:
    if d["kind"] == "strip":
        ax.axvline(0.5, color="0.5", lw=0.8, ls="--")
        n_ms = int(np.max(d["multiset_id"])) + 1
        ax.set_yticks(range(n_ms), [f"#1s = {i}" for i in range(n_ms)], fontsize=7)
        ax.set_xlim(-0.05, 1.05)
        ax.set_xlabel(r"$\hat p(y=1|x)$")
    else:
        v = d["vertices"]
        ax.plot(*np.vstack([v, v[:1]]).T, color="0.4", lw=1)
        for i, xy in enumerate(v):
            ax.annotate(f"$y={i}$", xy, xytext=(0, -12 if i < 2 else 4), textcoords="offset points", ha="center",
                        fontsize=8, color=class_color(i))
        ax.set_aspect("equal")
        ax.axis("off")
    _sentences(ax, d, s=24)
    ax.set_title(d["title"], fontsize=10)


def _cursor(ax, d: Data) -> None:
    if d.get("cursor") is not None:
        ax.axvline(d["cursor"], color=CURSOR_COLOR, ls="--", lw=1.2)


def draw_loss(ax, d: Data) -> None:
    styles = {"train_loss": (COLORS[0], "-"), "test_loss": (COLORS[1], "-"), "train_acc": (COLORS[0], ":"),
              "test_acc": (COLORS[1], ":")}
    for name, y in d["series"].items():
        c, ls = styles[name]
        ax.plot(d["epochs"], y, color=c, ls=ls, lw=1.4, label=name.replace("_", " "))
    top = max([1.0] + [float(np.nanmax(y)) for y in d["series"].values() if np.isfinite(y).any()])
    ax.set_ylim(0, 1.05 * top)
    _cursor(ax, d)
    ax.set_xlabel("epoch")
    ax.set_title(d["title"], fontsize=10)
    ax.legend(fontsize=7, loc="center right")


def _log_series(ax, d: Data, ylabel: str) -> None:
    for i, (name, y) in enumerate(d["series"].items()):
        ax.plot(d["epochs"], np.where(y > 0, y, np.nan), color=COLORS[i % len(COLORS)], lw=1.2, label=name)
    ax.set_yscale("log")
    _cursor(ax, d)
    ax.set_xlabel("epoch")
    ax.set_ylabel(ylabel)
    ax.set_title(d["title"], fontsize=10)
    ax.legend(fontsize=7, ncols=2 if len(d["series"]) > 3 else 1, loc="best")


def draw_grads(ax, d: Data) -> None:
    _log_series(ax, d, r"$\|\nabla L\|$")


def draw_min_norm(ax, d: Data) -> None:
    _log_series(ax, d, "norm")


def draw_sparsity(ax, d: Data) -> None:
    ax.axvspan(*d["band"], color="0.9", zorder=0)
    ax.plot(d["eps"], d["sparsity"], color=COLORS[0], marker=".", ms=3)
    ax.set_xscale("log")
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel(r"$\varepsilon$")
    ax.set_ylabel(r"fraction $|\sigma(W\bar\xi)|<\varepsilon$")
    ax.set_title(d["title"], fontsize=10)


def _pad_limits(ax, pts: np.ndarray, pad: float = 0.18) -> None:
    """Make room for ``pts`` (padded) through the data limits, so equal aspect can still adjust them."""
    if pts.shape[1] != 2 or len(pts) == 0:
        return
    lo, hi = pts.min(0), pts.max(0)
    span = np.maximum(hi - lo, max(float((hi - lo).max()), 1e-3) * 0.3)
    mid = (lo + hi) / 2
    ax.update_datalim(np.stack([mid - span * (0.5 + pad), mid + span * (0.5 + pad)]))
    ax.autoscale_view()


DRAW = {"tokens": draw_tokens, "positions": draw_positions, "embeddings": draw_embeddings,
        "normalized": draw_normalized, "attention": draw_attention, "value": draw_value, "xi": draw_xi,
        "psi": draw_psi, "levels": draw_levels, "mlp": draw_mlp, "output": draw_output, "loss": draw_loss,
        "grads": draw_grads, "sparsity": draw_sparsity, "min_norm": draw_min_norm}


RC = {**STYLE, "axes.titley": 1.0}  # a fixed title position skips a costly per-draw title layout


def draw_panel(ax, name: str, data: Data) -> None:
    """Draw panel ``name`` from its ``panels.PANELS[name].compute`` data onto ``ax`` (3-D axes when d = 3)."""
    with plt.rc_context(RC):
        DRAW[name](ax, data)
