"""The toy study in the sandbox: one opener per experiment, turning a run's stored arrays into a view whose panels
are plain Plotly figures (``attnlab.sandbox.traces`` builds the traces).

Frames are the steps (one per stored position), one variant. Two panels: the walk in the plane of its first two
coordinates up to the frame's step (a frame panel), and its distance from the origin over all the steps against
the theory's root mean square √E|x_t|² (``my_study.theory``; a series panel)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from attnlab.sandbox import traces as T
from attnlab.sandbox.plugin import Figure, PanelSpec, StudyPlugin, View, register
from my_study.theory import mean_square


@dataclass
class WalkView(View):
    path: np.ndarray | None = None
    dim: int = 1
    drift: float = 0.0

    def frame(self, index: int, variant: int, names: Sequence[str]) -> dict[str, Figure]:
        """The path up to step ``index + 1`` in the plane of its first two coordinates."""
        xy = self.path[: index + 1, :2]
        return {"walk": {"data": [T.line(xy[:, 0], xy[:, 1], mode="lines+markers")],
                         "layout": T.layout("walk", xlabel="x₁", ylabel="x₂")}}

    def series(self, variant: int, names: Sequence[str]) -> dict[str, Figure]:
        """|x_t| against the step, with the theory's √E|x_t|²."""
        norm = np.linalg.norm(self.path, axis=1)
        data = [T.line(self.times, norm, name="|x_t|"),
                T.line(self.times, np.sqrt(mean_square(self.dim, self.times, self.drift)), name="theory", dash="dash")]
        return {"norm": {"data": data, "layout": T.layout("norm", xlabel="step", showlegend=True)}}


def open_walk(experiment: str, arrays: Mapping[str, np.ndarray], summary: Mapping[str, Any],
              config: Mapping[str, Any]) -> View:
    """The view of a ``toy.walk`` run (a 1-D walk gets a zero second coordinate to be drawn in the plane)."""
    path = np.asarray(arrays["path"])
    dim = path.shape[1]
    if dim < 2:
        path = np.concatenate([path, np.zeros((len(path), 1))], 1)
    return WalkView(times=np.arange(1, len(path) + 1, dtype=float), time_label="step", variants=["walk"],
                    panels=[PanelSpec("walk", "walk"), PanelSpec("norm", "distance from the origin", "series")],
                    path=path, dim=dim, drift=float(config.get("drift", 0.0)))


class WalkPlugin(StudyPlugin):
    study = "toy"
    openers = {"walk": open_walk}
    forms = {"toy.walk": ("steps", "dim", "drift", "seed")}  # the start form's fields


PLUGIN = register(WalkPlugin())
