"""The plug-in interface through which a study contributes panels to the sandbox, and the plug-in registry.

A study subclasses :class:`StudyPlugin`: one opener per experiment whose runs it shows, which turns a run's stored
arrays (finished, or the live snapshot of a run still training) into a :class:`View`, and which config fields the
start form shows. A view has a time axis (one frame per snapshot), variants (seeds, activations,
figure panels: whatever sub-models the run holds) and panels of two kinds:

* ``frame`` panels are redrawn for every snapshot (``View.frame``);
* ``series`` panels are drawn once per variant with the time on their x axis (``View.series``); the page draws
  the cursor at the shown time and jumps to the frame nearest to a click.

Every figure is a plain Plotly figure ``{"data": [trace, ...], "layout": {...}}`` built from the study's own
panel-data functions (numpy arrays allowed; ``traces.to_json`` makes them JSON), so the front end needs no
study-specific code. Plug-ins never touch files: the server hands them arrays read through the run store.

Registration: a study names the module holding its plug-in under the entry-point group ``attnlab.views`` (the five
studies do so in ``pyproject.toml``, as ``examples/my_study`` does in its own); the module calls :func:`register` on
import. ``$ATTNLAB_SANDBOX_PLUGINS`` (comma-separated modules) still works for one release, with a warning.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from attnlab.core.config import ConfigError
from attnlab.core.registry import deprecated_env, entry_point_modules, import_plugin

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


#: ``opener(experiment, arrays, summary, config) -> View``: one study's way of showing one experiment's runs
Opener = Callable[[str, Mapping[str, np.ndarray], Mapping[str, Any], Mapping[str, Any]], View]


class StudyPlugin:
    """What a study implements to appear in the sandbox: its ``openers`` (and the ``forms`` of what it starts)."""

    #: the study's name (``attnlab.STUDIES`` or a plug-in study's)
    study: str = ""
    #: experiment name (without the study) → the opener of its runs
    openers: Mapping[str, Opener] = {}
    #: experiment → config fields the start form shows (the others keep their scale defaults); only these start
    forms: Mapping[str, tuple[str, ...]] = {}
    #: a run still training opens "as-is", with a "note" of its last snapshot, or "refuse"s (no live snapshots)
    when_live: Literal["as-is", "note", "refuse"] = "as-is"

    def render_run(self, run_dir: Path, out: Path, **options: Any) -> Path:
        """Draw a stored run offline (``attnlab render RUN_DIR``): frames, a GIF or an MP4 of its snapshots; a study
        with an offline renderer overrides this (``options``: the command's ``--panels``, ``--epochs``, …)."""
        raise ConfigError(f"the {self.study} study has no offline renderer for `attnlab render`")

    @property
    def experiments(self) -> tuple[str, ...]:
        """The experiments (``study.name``) whose runs this plug-in opens."""
        return tuple(f"{self.study}.{n}" for n in self.openers)

    def open(self, experiment: str, arrays: Mapping[str, np.ndarray], summary: Mapping[str, Any],
             config: Mapping[str, Any], live: bool) -> View:
        """The view of one run: its stored arrays (``live``: the snapshot a running run published), summary and
        resolved config. Arrays it cannot show raise ``ConfigError`` with one line."""
        study, _, name = experiment.partition(".")
        opener = self.openers.get(name) if study == self.study else None
        if opener is None:
            raise ConfigError(f"the {self.study} plug-in does not open {experiment} runs")
        if live and self.when_live == "refuse":
            raise ConfigError(f"{experiment} runs publish no live snapshots: open the run when it has finished")
        try:
            view = opener(experiment, arrays, summary or {}, config or {})
        except ConfigError:
            raise
        except (KeyError, IndexError, ValueError) as exc:
            raise ConfigError(f"this {experiment} run's arrays cannot be shown: {' '.join(str(exc).split())}") from None
        if live and self.when_live == "note":
            view.notes.append(self.live_note(view))
        return view

    def live_note(self, view: View) -> str:
        """The note a run still training gets (``when_live = "note"``)."""
        return f"live: last snapshot at {view.time_label} {view.times[-1]:g}"


_PLUGINS: dict[str, StudyPlugin] = {}
_LOADED = False


def register(plugin: StudyPlugin) -> StudyPlugin:
    """Add (or replace) the plug-in of ``plugin.study``."""
    if not plugin.study or not plugin.experiments:
        raise ValueError("a sandbox plug-in names its study and at least one experiment")
    _PLUGINS[plugin.study] = plugin
    return plugin


VIEW_GROUP = "attnlab.views"  # entry points: study name → the module holding (and registering) its StudyPlugin


def view_modules() -> dict[str, str]:
    """Every study's views module by study (group ``attnlab.views``; the built-in studies first)."""
    from attnlab import STUDIES

    return entry_point_modules(VIEW_GROUP, {s: f"attnlab.{s}.views.plugin" for s in STUDIES})


def plugins() -> dict[str, StudyPlugin]:
    """Every registered plug-in by study, importing the modules of the ``attnlab.views`` entry points (and of the
    deprecated ``$ATTNLAB_SANDBOX_PLUGINS``) on first use."""
    global _LOADED
    if not _LOADED:
        for study, module in view_modules().items():
            import_plugin(module, f"the {VIEW_GROUP} entry point {study!r}")
        for module in deprecated_env("ATTNLAB_SANDBOX_PLUGINS", f"register the plug-in under the entry-point group "
                                     f"'{VIEW_GROUP}' instead (see examples/my_study)"):
            import_plugin(module, "ATTNLAB_SANDBOX_PLUGINS")
        _LOADED = True
    return dict(_PLUGINS)


def plugin_for(experiment: str) -> StudyPlugin | None:
    """The plug-in that opens runs of ``experiment``, or None."""
    return next((p for p in plugins().values() if experiment in p.experiments), None)
