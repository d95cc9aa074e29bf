"""The plug-in interface through which a study contributes panels to the sandbox, and the plug-in registry.

A study implements :class:`StudyPlugin`: which experiments' runs it opens, which config fields the start form
shows, and ``open(...)``, which turns a run's stored arrays (finished, or the live snapshot of a run still
training) into a :class:`View`. A view has a time axis (one frame per snapshot), variants (seeds, activations,
figure panels: whatever sub-models the run holds) and panels of two kinds:

* ``frame`` panels are redrawn for every snapshot (``View.frame``);
* ``series`` panels are drawn once per variant with the time on their x axis (``View.series``); the page draws
  the cursor at the shown time and jumps to the frame nearest to a click.

Every figure is a plain Plotly figure ``{"data": [trace, ...], "layout": {...}}`` built from the study's own
panel-data functions (numpy arrays allowed; ``traces.to_json`` makes them JSON), so the front end needs no
study-specific code. Plug-ins never touch files: the server hands them arrays read through the run store.

Registration: the module ``attnlab.<study>.views.plugin`` of any study in ``attnlab.STUDIES`` that has one, and
the modules named in ``$ATTNLAB_SANDBOX_PLUGINS`` (comma-separated); each calls :func:`register` on import.
"""

from __future__ import annotations

import importlib
import os
import re
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from attnlab.core.config import ConfigError

Figure = dict[str, Any]  # a Plotly figure: {"data": [...], "layout": {...}}
PANEL_NAME = r"[a-z0-9_]+"  # what the API's ``panels`` parameters accept


@dataclass(frozen=True)
class PanelSpec:
    """One toggleable panel: ``frame`` (redrawn per snapshot) or ``series`` (time on x, drawn once)."""

    name: str
    title: str
    kind: Literal["frame", "series"] = "frame"
    default: bool = True  # shown when a run is opened

    def __post_init__(self) -> None:
        if not re.fullmatch(PANEL_NAME, self.name):
            raise ValueError(f"panel name {self.name!r}: the page and the API take names of [a-z0-9_] only")

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "title": self.title, "kind": self.kind, "default": self.default}


@dataclass
class View(ABC):
    """One run as the sandbox draws it; ``times`` is increasing, one entry per frame."""

    times: np.ndarray
    time_label: str
    variants: list[str]
    panels: list[PanelSpec]
    notes: list[str] = field(default_factory=list)

    @abstractmethod
    def frame(self, index: int, variant: int, names: Sequence[str]) -> dict[str, Figure]:
        """Figures of the named frame panels at frame ``index`` of ``variant``."""

    @abstractmethod
    def series(self, variant: int, names: Sequence[str]) -> dict[str, Figure]:
        """Figures of the named series panels of ``variant`` (x axis in ``time_label`` units)."""

    def render(self, out: Path, indices: Sequence[int], variant: int, names: Sequence[str], fps: float) -> Path:
        """Write frames ``indices`` to ``out`` (.png: the first one, .gif/.mp4: an animation) with the study's
        offline renderer; studies without one keep this default."""
        raise ConfigError(f"export to {out.suffix} is not available for this study's runs")

    def panel_names(self, kind: str) -> list[str]:
        return [p.name for p in self.panels if p.kind == kind]

    def describe(self) -> dict[str, Any]:
        return {"times": self.times, "time_label": self.time_label, "variants": list(self.variants),
                "panels": [p.to_json() for p in self.panels], "notes": list(self.notes)}


@dataclass
class MethodView(View):
    """A view whose panel ``name`` is drawn by its method ``_frame_<name>(index, variant)`` (frame panels) or
    ``_series_<name>(variant)`` (series panels)."""

    def frame(self, index: int, variant: int, names: Sequence[str]) -> dict[str, Figure]:
        return {n: getattr(self, f"_frame_{n}")(index, variant) for n in names}

    def series(self, variant: int, names: Sequence[str]) -> dict[str, Figure]:
        return {n: getattr(self, f"_series_{n}")(variant) for n in names}


class StudyPlugin(ABC):
    """What a study implements to appear in the sandbox."""

    #: the study's name (``attnlab.STUDIES``)
    study: str = ""
    #: experiments (``study.name``) whose runs this plug-in opens
    experiments: tuple[str, ...] = ()
    #: experiment → config fields the start form shows (the others keep their scale defaults); only these start
    forms: Mapping[str, tuple[str, ...]] = {}

    @abstractmethod
    def open(self, experiment: str, arrays: Mapping[str, np.ndarray], summary: Mapping[str, Any],
             config: Mapping[str, Any], live: bool) -> View:
        """The view of one run: its stored arrays (``live``: the snapshot a running run published), summary and
        resolved config. Raise ``ConfigError`` with one line when the arrays cannot be shown."""


_PLUGINS: dict[str, StudyPlugin] = {}
_LOADED = False


def register(plugin: StudyPlugin) -> StudyPlugin:
    """Add (or replace) the plug-in of ``plugin.study``."""
    if not plugin.study or not plugin.experiments:
        raise ValueError("a sandbox plug-in names its study and at least one experiment")
    _PLUGINS[plugin.study] = plugin
    return plugin


def plugins() -> dict[str, StudyPlugin]:
    """Every registered plug-in by study, importing the per-study and ``$ATTNLAB_SANDBOX_PLUGINS`` ones on first
    use."""
    global _LOADED
    if not _LOADED:
        from attnlab import STUDIES

        for study in STUDIES:
            name = f"attnlab.{study}.views.plugin"
            try:
                importlib.import_module(name)
            except ModuleNotFoundError as exc:
                if exc.name not in (name, f"attnlab.{study}", f"attnlab.{study}.views"):
                    raise
        for module in filter(None, (m.strip() for m in os.environ.get("ATTNLAB_SANDBOX_PLUGINS", "").split(","))):
            try:
                importlib.import_module(module)
            except ModuleNotFoundError as exc:
                raise ConfigError(f"ATTNLAB_SANDBOX_PLUGINS names {module!r}, which cannot be imported: "
                                  f"{exc}") from None
        _LOADED = True
    return dict(_PLUGINS)


def plugin_for(experiment: str) -> StudyPlugin | None:
    """The plug-in that opens runs of ``experiment``, or None."""
    return next((p for p in plugins().values() if experiment in p.experiments), None)
