"""The knobs study in the sandbox (tests only): the walk's run turned into a view whose panels are plain Plotly
figures (``attnlab.sandbox.traces`` builds the traces).

Frames are the steps (one per stored position), one variant. The panels are a gallery of what the page draws, which
the browser tests compare with Plotly: the walk itself, legends outside (``spread``) and inside (``inset``) the
plot, error bars, log axes over a decade or several (``decades``, ``digits``), category axes (``kinds``), a series
over the steps (``norm``), and ``boom``, hidden by default, which raises to show that a failing panel is reported in
one line while the others draw.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from attnlab.sandbox import traces as T
from attnlab.sandbox.plugin import Figure, PanelSpec, StudyPlugin, View, register


@dataclass
class WalkView(View):
    path: np.ndarray | None = None

    def frame(self, index: int, variant: int, names: Sequence[str]) -> dict[str, Figure]:
        if "boom" in names:
            raise RuntimeError("the boom panel always fails")
        xy = self.path[: index + 1, :2]
        return {"walk": {"data": [T.line(xy[:, 0], xy[:, 1], mode="lines+markers")], "layout": T.layout("walk")},
                "spread": self._spread(xy), "inset": self._inset(xy), "decades": self._decades(index),
                "digits": self._digits(index), "kinds": self._kinds(xy)}

    @staticmethod
    def _kinds(xy: np.ndarray) -> Figure:
        """Category x axes (text coordinates, as signal's observables panel): 8 names, every second labelled."""
        names = ["ρ", "ρ_mid", "q_sa", "S/log T", "q_SA out", "q_MLP out", "g", "h"]
        y = np.resize(xy[:, 0], len(names))
        data = [T.line(names, y, mode="markers", name="simulation",
                       error_y={"type": "data", "array": np.full(len(names), 0.1), "visible": True}),
                T.line(names[:4], y[:4] + 0.5, mode="markers", name="theory")]
        return {"data": data, "layout": T.layout("kinds", ylabel="value")}

    @staticmethod
    def _decades(index: int) -> Figure:
        """Log axes: x within one decade (linear steps), y over six (powers of ten with SI prefixes)."""
        x = np.linspace(0.2, 0.9, 8)
        y = 10.0 ** np.linspace(-6 - 0.1 * index, -1, 8)
        return {"data": [T.line(x, y, mode="lines+markers")],
                "layout": T.layout("decades", xaxis={"type": "log"}, yaxis={"type": "log"})}

    @staticmethod
    def _digits(index: int) -> Figure:
        """Log axes over 1.3 decades (every digit labelled) and 2.5 decades (1, 2, 5)."""
        x = np.geomspace(1, 20, 6)
        y = np.geomspace(1, 300 + 10 * index, 6)
        return {"data": [T.scatter(np.stack([x, y], 1), name="digits")],
                "layout": T.layout("digits", xaxis={"type": "log"}, yaxis={"type": "log"})}

    @staticmethod
    def _spread(xy: np.ndarray) -> Figure:
        """Legend outside on the right (Plotly's default place) and vertical error bars."""
        k = np.arange(len(xy), dtype=float)
        data = [T.line(k, xy[:, 0], name="x of the walk", mode="lines+markers",
                       error_y={"type": "data", "array": 0.1 + 0.05 * k, "visible": True, "thickness": 1}),
                T.line(k, xy[:, 1], name="y", dash="dash")]
        lay = T.layout("spread", xlabel="step", showlegend=True, legend={"font": {"size": 9}})
        return {"data": data, "layout": lay}

    @staticmethod
    def _inset(xy: np.ndarray) -> Figure:
        """Legend inside the plot, anchored bottom right, and horizontal error bars."""
        pts = T.scatter(xy, name="walk", color="#2ca02c", symbol="diamond",
                        error_x={"type": "constant", "value": 0.2, "visible": True})
        return {"data": [pts], "layout": T.layout("inset", showlegend=True, legend={
            "x": 0.98, "y": 0.02, "xanchor": "right", "yanchor": "bottom", "font": {"size": 8}})}

    def series(self, variant: int, names: Sequence[str]) -> dict[str, Figure]:
        norm = np.linalg.norm(self.path, axis=1)
        return {"norm": {"data": [T.line(self.times, norm)], "layout": T.layout("norm", xlabel="step")}}


def open_walk(experiment: str, arrays: Mapping[str, np.ndarray], summary: Mapping[str, Any],
              config: Mapping[str, Any]) -> View:
    """The view of a ``knobs.walk`` run (a 1-D walk gets a zero second coordinate to be drawn in the plane)."""
    path = np.asarray(arrays["path"])
    if path.shape[1] < 2:
        path = np.concatenate([path, np.zeros((len(path), 1))], 1)
    return WalkView(times=np.arange(1, len(path) + 1, dtype=float), time_label="step", variants=["walk"],
                    panels=[PanelSpec("walk", "walk"), PanelSpec("spread", "spread"), PanelSpec("inset", "inset"),
                            PanelSpec("decades", "decades"), PanelSpec("digits", "digits"),
                            PanelSpec("kinds", "kinds"),
                            PanelSpec("norm", "norm", "series"),
                            PanelSpec("boom", "always fails", default=False)], path=path)


class WalkPlugin(StudyPlugin):
    study = "knobs"
    openers = {"walk": open_walk}
    forms = {"knobs.walk": ("steps", "dim", "sleep", "fail_at", "seed")}  # the start form's fields


PLUGIN = register(WalkPlugin())
