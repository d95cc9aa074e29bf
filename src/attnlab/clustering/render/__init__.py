"""Visual sandbox of paper 4 (Secs. 4.1–4.4, Figs. 1–6, 8, 10–13): every internal quantity of the d = 2
model drawn in the plane at any snapshot of a run.

``panels`` holds pure panel-data functions (numpy dicts, no matplotlib; registry ``PANELS``; coordinates and
PCA projections in ``geometry``), ``draw`` the matplotlib drawing of each panel, ``render`` the layouts (grid,
the Fig. 8 strip, the Fig. 1 ideal head) and ``animate`` frames / GIF / MP4.
Importing this package does not import matplotlib; ``render``/``animate`` names load it on first use.
"""

from __future__ import annotations

from typing import Any

from attnlab.clustering.render.panels import (
    DEFAULT_LAYOUT,
    IDEAL_LAYOUT,
    PANELS,
    Panel,
    PanelUnavailable,
    compute_panels,
)

_LAZY = {
    "draw_panel": "draw", "render_snapshot": "render", "render_strip": "render", "render_ideal": "render",
    "SnapshotRenderer": "render", "strip_epochs": "render",
    "render_frames": "animate", "render_animation": "animate", "snapshot_indices": "animate",
    "render_run": "runs", "load_history": "runs",
}

__all__ = ["DEFAULT_LAYOUT", "IDEAL_LAYOUT", "PANELS", "Panel", "PanelUnavailable", "compute_panels", *_LAZY]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
