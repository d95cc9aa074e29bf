"""Offline matplotlib renderer of the visual sandbox (paper Secs. 4.1–4.4, Figs. 1–6, 8, 10–13).

``draw.draw_panel(ax, name, data)`` draws one panel from the pure data of ``panels.py``; ``SnapshotRenderer`` lays
out a list of panels in a grid and redraws the same figure for successive snapshots (animations);
``render_snapshot`` is the one-shot version, ``render_strip`` the Fig. 8 strip and ``render_ideal`` Fig. 1.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from attnlab.clustering.data import Task
from attnlab.clustering.model import ModelSpec
from attnlab.clustering.render import panels as P
from attnlab.clustering.render.draw import CURSOR_COLOR, DRAW, RC
from attnlab.clustering.train.history import History
from attnlab.core.config import ConfigError
from attnlab.core.plotting import COLORS, figure

log = logging.getLogger(__name__)


def _reset(ax) -> None:
    """Remove a panel's artists but keep its axes and tick objects (much faster than ``cla`` per frame)."""
    if hasattr(ax, "zaxis"):
        ax.cla()
        return
    for a in (*ax.child_axes, *ax.collections, *ax.lines, *ax.texts, *ax.images, *ax.patches, *ax.artists):
        a.remove()
    if ax.legend_ is not None:
        ax.legend_.remove()
    ax.ignore_existing_data_limits = True
    ax.set_autoscale_on(True)


# ----------------------------------------------------------------------------------------------- layouts
def resolve_panels(panels: str | Sequence[str]) -> list[str]:
    if isinstance(panels, str):
        if panels == "all":
            return list(P.PANELS)
        if panels == "default":
            return list(P.DEFAULT_LAYOUT)
        panels = [p.strip() for p in panels.split(",") if p.strip()]
    unknown = [p for p in panels if p not in P.PANELS]
    if unknown:
        raise ConfigError(f"unknown panel(s) {unknown}; known: all, default, {', '.join(P.PANELS)}")
    return list(panels)


class SnapshotRenderer:
    """One figure for a run (``History``) or a single model (params + spec + task), redrawn per snapshot."""

    def __init__(self, source: History | dict, spec: ModelSpec | None = None, task: Task | None = None, *,
                 panels: str | Sequence[str] = "default", seed: int = 0, ncols: int | None = None,
                 panel_size: tuple[float, float] = (3.4, 3.2), title: str | None = None,
                 layout: str = "grid", **opts: Any):
        self.history = source if isinstance(source, History) else None
        if self.history is not None:
            spec, task = self.history.spec, self.history.task
            if not 0 <= seed < self.history.n_seeds:
                raise ConfigError(f"seed index {seed} outside the run: allowed 0..{self.history.n_seeds - 1}")
        elif spec is None or task is None:
            raise ConfigError("rendering bare parameters needs spec= and task=")
        self.spec, self.task, self.seed, self.opts, self.title = spec, task, seed, opts, title
        self.params = None if self.history is not None else source
        self.names = resolve_panels(panels)
        self.ncols, self.panel_size, self.layout = ncols, panel_size, layout
        self.fig: Figure | None = None
        self.axes: dict[str, Any] = {}

    def snapshot(self, index: int | None = None, epoch: float | None = None) -> tuple[dict, float | None, int | None]:
        """Parameters (S = 1), epoch and index of the requested snapshot."""
        if self.history is None:
            params = self.params
            S = np.shape(params["E"])[0] if np.ndim(params["E"]) == 3 else 1
            if not 0 <= self.seed < S:
                raise ConfigError(f"seed index {self.seed} outside the ensemble: allowed 0..{S - 1}")
            if S > 1:  # an ensemble: pick one seed
                params = {k: v[self.seed : self.seed + 1] for k, v in params.items()}
            return params, None, None
        h = self.history
        T = len(h.snapshot_epochs)
        if index is None:
            index = h.snapshot_index(epoch) if epoch is not None else T - 1
        if not -T <= index < T:
            raise ConfigError(f"snapshot index {index} outside the run: allowed 0..{T - 1}")
        index %= T
        return h.params_at(index, self.seed), float(h.snapshot_epochs[index]), index

    def _layout(self, data: dict[str, P.Data]) -> None:
        names = list(data)
        n = max(len(names), 1)
        ncols = self.ncols or min(n, 5)
        nrows = math.ceil(n / ncols)
        w, h = self.panel_size
        kw = {}
        if self.layout == "grid":  # fixed margins (inches) per cell: much cheaper than constrained layout per draw
            W, H, sup = w * ncols, h * nrows + 0.35, 0.35
            left, right, top, bottom = 0.8, 0.5, 0.6, 0.55
            kw["gridspec_kw"] = {"left": left / W, "right": 1 - right / W, "bottom": bottom / H,
                                 "top": 1 - (top + sup) / H, "wspace": (left + right) / (w - left - right),
                                 "hspace": (top + bottom) / (h - top - bottom)}
        fig, axes = figure(ncols, nrows, width=w, height=h, **kw)
        if self.layout == "grid":
            fig.set_layout_engine(None)  # None, not "none": a placeholder engine costs an extra draw per savefig
            fig.set_size_inches(W, H)
        flat = np.array(axes, dtype=object).reshape(-1)
        for i, ax in enumerate(flat):
            if i >= len(names):
                ax.remove()
                continue
            if data[names[i]].get("frame", {}).get("dim") == 3:
                spec = ax.get_subplotspec()
                ax.remove()
                ax = fig.add_subplot(spec, projection="3d")
            self.axes[names[i]] = ax
        self.fig = fig

    def draw(self, index: int | None = None, epoch: float | None = None) -> Figure:
        """Compute every panel at the snapshot and (re)draw the figure in place; returns the figure."""
        params, ep, _ = self.snapshot(index, epoch)
        kw = {"history": self.history, "seed": self.seed, "epoch": ep, **self.opts}
        data, skipped = P.compute_panels(self.names, params, self.spec, self.task, **kw)
        first = self.fig is None
        if first:
            for name, why in skipped.items():
                log.warning("sandbox: panel %r skipped: %s", name, why)
            if self.spec.d > 3 and any(P.PANELS[n].needs_planar for n in data):
                log.info("sandbox: d = %d, geometry panels shown as 2-D PCA projections", self.spec.d)
            self._layout(data)
        with plt.rc_context(RC):
            for name, ax in self.axes.items():
                if not first:
                    _reset(ax)
                if name in data:
                    DRAW[name](ax, data[name])
                else:
                    ax.text(0.5, 0.5, f"{name}: unavailable", ha="center", transform=ax.transAxes)
            self.fig.suptitle(self._suptitle(ep), fontsize=11)
        return self.fig

    def _suptitle(self, epoch: float | None) -> str:
        t, s = self.task, self.spec
        head = self.title or ("snapshot" if epoch is None else f"epoch {epoch:g}")
        seed = "" if self.history is None else f" · seed {self.history.seeds[self.seed]}"
        return f"{head}{seed} · p={t.p}, k={t.k}, N={t.N}, d={s.d}, h={s.h}"


def render_snapshot(source: History | dict, spec: ModelSpec | None = None, task: Task | None = None, *,
                    panels: str | Sequence[str] = "default", index: int | None = None, epoch: float | None = None,
                    seed: int = 0, ncols: int | None = None, **opts: Any) -> Figure:
    """A grid of panels for one snapshot of a run (``index`` or nearest ``epoch``; default last) or one model."""
    r = SnapshotRenderer(source, spec, task, panels=panels, seed=seed, ncols=ncols, **opts)
    return r.draw(index, epoch)


def strip_epochs(history: History, seed: int = 0, n: int = 4) -> list[int]:
    """Fig. 8 snapshot indices: t_cluster−5, t_cluster+1, (t_cluster+t_fit)/2, t_fit+5 when the run
    clusters (cluster_score ≥ 0.9) and fits (test_acc ≥ 0.9); else ``n`` evenly spaced snapshots."""
    em, ep, T = history.epoch_metrics, np.asarray(history.epochs), len(history.snapshot_epochs)
    if n == 4 and "cluster_score" in em and "test_acc" in em:
        cs, ta = em["cluster_score"][:, seed] >= 0.9, em["test_acc"][:, seed] >= 0.9
        if cs.any() and ta.any():
            tc, tf = float(ep[cs.argmax()]), float(ep[ta.argmax()])
            idx = [history.snapshot_index(e) for e in (tc - 5, tc + 1, (tc + tf) / 2, tf + 5)]
            if len(set(idx)) == 4:
                return idx
    return sorted({int(i) for i in np.linspace(0, T - 1, min(n, T)).round()})


def render_strip(history: History, epochs: Sequence[float] | None = None, seed: int = 0, *,
                 panel: str = "levels", **opts: Any) -> Figure:
    """Fig. 8: a ξ panel (default: ξ over the level lines) at 4 snapshots + train loss with red dashed lines."""
    if epochs is None:
        idx = strip_epochs(history, seed)
    else:
        lo, hi = float(history.snapshot_epochs[0]), float(history.snapshot_epochs[-1])
        bad = [e for e in epochs if not lo <= e <= hi]
        if bad:
            raise ConfigError(f"epochs {bad} outside the run: allowed {lo:g}..{hi:g}")
        idx = [history.snapshot_index(e) for e in epochs]
    shown = [float(history.snapshot_epochs[i]) for i in idx]
    fig, axes = figure(len(idx) + 1, 1, width=3.2, height=3.1)
    axes = list(np.array(axes, dtype=object).reshape(-1))
    with plt.rc_context(RC):
        for k, (i, e) in enumerate(zip(idx, shown, strict=True)):
            d = P.PANELS[panel].compute(history.params_at(i, seed), history.spec, history.task, history=history,
                                        seed=seed, epoch=e, **opts)
            ax = axes[k]
            if d.get("frame", {}).get("dim") == 3:
                ax.remove()
                ax = axes[k] = fig.add_subplot(1, len(idx) + 1, k + 1, projection="3d")
            DRAW[panel](ax, d)
            ax.set_title(f"({k + 1}) epoch {e:g}", fontsize=10)
            if k:
                ax.set_ylabel("")
            if ax.get_legend() is not None and k < len(idx) - 1:
                ax.get_legend().remove()
        ax = axes[-1]
        ep = np.asarray(history.epochs, dtype=float)
        for name, c in (("train_loss", COLORS[0]), ("test_loss", COLORS[1])):
            if name in history.epoch_metrics:
                ax.plot(ep, history.epoch_metrics[name][:, seed], color=c, lw=1.5, label=name.replace("_", " "),
                        alpha=1.0 if name == "train_loss" else 0.5)
        for k, e in enumerate(shown):
            ax.axvline(e, color=CURSOR_COLOR, ls="--", lw=1.2)
            ax.annotate(f"({k + 1})", (e, 1.0), xycoords=("data", "axes fraction"), xytext=(2, -10),
                        textcoords="offset points", fontsize=8, color=CURSOR_COLOR)
        ax.set_xlabel("epoch")
        ax.set_ylabel("loss")
        ax.set_ylim(bottom=0)
        ax.set_title("loss profile", fontsize=10)
        ax.legend(fontsize=7, loc="center right")
        fig.suptitle(f"two-phase learning (Fig. 8) · seed {history.seeds[seed]}", fontsize=11)
    fig.strip_epochs = shown
    return fig


def render_ideal(p: int = 2, k: int = 5, N: int = 12, *, d: int | None = None, h: int | None = None,
                 head: tuple[dict, ModelSpec] | None = None, panels: str | Sequence[str] = P.IDEAL_LAYOUT,
                 **opts: Any) -> Figure:
    """Fig. 1: the hand-built clustering head from ``theory.build_clustering_head(p, N, k, d, h)``,
    or from an explicit ``head=(params, spec)``."""
    if head is None:
        from attnlab.clustering.theory.construction import build_clustering_head

        d = d if d is not None else (2 if p == 2 else p + 1)
        h = h if h is not None else max(4 * d, k * (p - 1) + 1)
        head = build_clustering_head(p, N, k, d, h)
    params, spec = head
    return render_snapshot(params, spec, Task(p, N, k), panels=panels,
                           title="ideal clustering head (Fig. 1)", **opts)
