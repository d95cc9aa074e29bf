"""A sandbox plug-in for the test study ``toy.walk`` (tests/plugins/attnlab_toy.py), loaded by the server under test
through ``ATTNLAB_SANDBOX_PLUGINS=sandbox_toy`` exactly as a third-party study's plug-in would be.

Its jobs are cheap (a random walk that sleeps per step), so the job-control tests need no training. The panel
``boom`` raises on purpose: the server must answer 500 with one line and keep serving.
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
        return {"walk": {"data": [T.line(xy[:, 0], xy[:, 1], mode="lines+markers")], "layout": T.layout("walk")}}

    def series(self, variant: int, names: Sequence[str]) -> dict[str, Figure]:
        norm = np.linalg.norm(self.path, axis=1)
        return {"norm": {"data": [T.line(self.times, norm)], "layout": T.layout("norm", xlabel="step")}}


class WalkPlugin(StudyPlugin):
    study = "toy"
    experiments = ("toy.walk",)
    forms = {"toy.walk": ("steps", "dim", "sleep", "fail_at", "seed")}

    def open(self, experiment: str, arrays: Mapping[str, np.ndarray], summary: Mapping[str, Any],
             config: Mapping[str, Any], live: bool) -> View:
        path = np.asarray(arrays["path"])
        if path.shape[1] < 2:
            path = np.concatenate([path, np.zeros((len(path), 1))], 1)
        return WalkView(times=np.arange(1, len(path) + 1, dtype=float), time_label="step", variants=["walk"],
                        panels=[PanelSpec("walk", "walk"), PanelSpec("norm", "norm", "series"),
                                PanelSpec("boom", "always fails", default=False)], path=path)


register(WalkPlugin())
