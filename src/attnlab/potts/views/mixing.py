"""Fig. 2d (fig2d; frames = epochs, variants = the mixing a of Eq. (2)): the test loss vs a at the shown epoch (mean
± std over seeds, the last frame is Fig. 2d), corr(A, J) vs a, loss and corr vs epoch per a."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from attnlab.core.config import ConfigError
from attnlab.core.trajectory import Trajectory
from attnlab.potts.views.common import OPTIMUM, hline, need, pad
from attnlab.sandbox import traces as T
from attnlab.sandbox.plugin import Figure, MethodView, PanelSpec, View


def _mean_band(x: np.ndarray, y: np.ndarray, color: str, name: str, width: float = 1.8, **more: Any) -> list:
    """Mean over the last axis with a min-max band (``figures._band``, the stacked seeds)."""
    y = np.asarray(y, float).reshape(len(x), -1)
    out = []
    if y.shape[1] > 1:
        out.append(T.line(np.concatenate([x, x[::-1]]), np.concatenate([y.min(1), y.max(1)[::-1]]), color=color,
                          width=0, fill="toself", opacity=0.2, hoverinfo="skip", showlegend=False))
    out.append(T.line(x, y.mean(1), name=name, color=color, width=width, **more))
    return out


@dataclass
class MixingView(MethodView):
    """``traj`` observables (T, n_a · seeds), a-major; ``a_values`` the distinct a."""

    traj: Trajectory | None = None
    a_values: np.ndarray = field(default_factory=lambda: np.zeros(0))
    n_seeds: int = 1
    optimal: float | None = None
    corr_range: list[float] = field(default_factory=lambda: [-1.0, 1.0])

    def _by_a(self, name: str) -> np.ndarray:
        y = self.traj[name]
        return y.reshape(len(y), len(self.a_values), self.n_seeds)  # (T, n_a, seeds)

    def _vs_a(self, index: int, variant: int, name: str, title: str, ylabel: str, yaxis: dict) -> Figure:
        y = self._by_a(name)[index]
        a = self.a_values
        data = [T.scatter(np.stack([np.repeat(a, self.n_seeds), y.ravel()], 1), color=T.COLORS[0], size=5,
                          name="seeds", opacity=0.5, hover=[f"a = {av:g}, seed {s + 1}: {v:.4f}" for av, row in
                                                             zip(a, y, strict=True) for s, v in enumerate(row)]),
                T.line(a, y.mean(1), color=T.COLORS[0], width=1.8, mode="lines+markers", name="mean ± std",
                       error_y={"type": "data", "array": y.std(1), "visible": True, "thickness": 1}),
                T.scatter(np.array([[a[variant], y[variant].mean()]]), color=T.COLORS[3], size=12, symbol="diamond",
                          name="selected a", hover=[f"a = {a[variant]:g}: mean {y[variant].mean():.4f}"])]
        if name == "test_loss" and self.optimal is not None:
            data.append(T.line([a[0], a[-1]], [self.optimal] * 2, name="optimal loss", color=OPTIMUM, dash="dash",
                               width=1.2))
        lay = T.layout(f"{title}, epoch {self.times[index]:g}", xlabel="mixing a of eq. (2)", ylabel=ylabel,
                       yaxis=yaxis)
        return {"data": data, "layout": lay}

    def _frame_loss_a(self, index: int, variant: int) -> Figure:
        return self._vs_a(index, variant, "test_loss", "test loss vs a", "test loss", {})

    def _frame_corr_a(self, index: int, variant: int) -> Figure:
        return self._vs_a(index, variant, "corr", "corr(A, J) vs a", "corr(A, J)", {"range": self.corr_range})

    def _series_vs_epoch(self, variant: int, name: str, title: str, ylabel: str, optimal: bool) -> Figure:
        y = self._by_a(name)
        n = len(self.a_values)
        data: list[dict[str, Any]] = []
        for k, a in enumerate(self.a_values):
            chosen = k == variant
            data += _mean_band(self.traj.time, y[:, k], T.hue(k, n), f"a = {a:g}", width=2.6 if chosen else 1.2,
                               opacity=1.0 if chosen else 0.6)
        if optimal and self.optimal is not None:
            data.append(hline(self.times, self.optimal, "optimal loss"))
        lay = T.layout(title, xlabel="epoch", ylabel=ylabel, showlegend=True, hovermode="x",
                       legend={"font": {"size": 9}})
        return {"data": data, "layout": lay}

    def _series_loss(self, variant: int) -> Figure:
        return self._series_vs_epoch(variant, "test_loss", "test loss vs epoch per a (band: seeds)", "test loss",
                                     True)

    def _series_corr(self, variant: int) -> Figure:
        return self._series_vs_epoch(variant, "corr", "corr(A, J) vs epoch per a", "corr(A, J)", False)


def open_fig2d(experiment: str, arrays: Mapping[str, np.ndarray], summary: Mapping[str, Any],
               config: Mapping[str, Any]) -> View:
    need(arrays, ("traj_time", "traj_test_loss", "traj_corr", "a"), experiment)
    traj = Trajectory.from_arrays(arrays, "traj_", time_name="epoch", source="eq2")
    a = np.asarray(arrays["a"], float)
    values = np.asarray(list(dict.fromkeys(a.tolist())), float)
    n_seeds = len(a) // len(values)
    if n_seeds * len(values) != len(a) or not np.array_equal(np.repeat(values, n_seeds), a):
        raise ConfigError(f"this {experiment} run's models are not grouped by a (a = {a.tolist()})")
    if traj["test_loss"].shape[1] != len(a):
        raise ConfigError(f"this {experiment} run stores {traj['test_loss'].shape[1]} models for {len(a)} values of a")
    corr = traj["corr"][np.isfinite(traj["corr"])]
    panels = [PanelSpec("loss_a", "test loss vs a (Fig. 2d)"), PanelSpec("corr_a", "corr(A, J) vs a")]
    notes = ["Fig. 2d is the last frame; frames scrub the same curve through training"]
    panels += [PanelSpec("loss", "test loss vs epoch", "series"), PanelSpec("corr", "corr(A, J) vs epoch", "series")]
    optimal = summary.get("optimal_loss")
    if optimal is None:
        notes.append("no optimal loss stored with this run")
    return MixingView(times=traj.time, time_label="epoch", variants=[f"a = {v:g}" for v in values], panels=panels,
                      notes=notes, traj=traj, a_values=values, n_seeds=n_seeds,
                      optimal=None if optimal is None else float(optimal),
                      corr_range=pad(float(corr.min(initial=0.0)), float(corr.max(initial=1.0))))
