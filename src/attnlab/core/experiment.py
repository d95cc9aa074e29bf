"""Experiments (one per paper figure) and the registry the CLI reads.

A study registers each experiment with :func:`experiment`::

    @experiment("specialization", "fig1", Fig1Config, ref="Fig. 1", figure=figures.fig1, headline=True)
    def fig1(config: Fig1Config, ctx: RunContext) -> Result: ...

The function takes its validated config and a :class:`~attnlab.core.runs.RunContext` (named random
streams, device, checkpoints, progress) and returns a :class:`Result` — tables and arrays, no
plotting. ``figure(result, config)`` turns a result into matplotlib figures.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import numpy as np
import pandas as pd

from attnlab.core.config import Config, ConfigError
from attnlab.core.display import html_block, text_block

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from attnlab.core.outputs import Outputs
    from attnlab.core.runs import RunContext
    from attnlab.core.summaries import Summary

S = TypeVar("S", bound="Summary")


@dataclass
class Result:
    """What an experiment returns.

    ``metrics``: a table in any form the figures need; the store writes it in the tidy schema of
    :mod:`attnlab.core.metrics` (``docs/data.md``).
    ``arrays``: named numpy arrays (stored in ``arrays.npz``).
    ``summary``: numbers, booleans, text (or lists of them; see :func:`summary_value`) that ``run --json``,
    sweep tables and claims read (a claim reads it typed: ``ctx.summary(EXPERIMENT)``, :mod:`attnlab.core.summaries`).
    ``config``: the run's config where a claim context loaded the result (never stored; what the typed summary of a
    study's templated keys needs).
    """

    metrics: pd.DataFrame = field(default_factory=pd.DataFrame)
    arrays: dict[str, np.ndarray] = field(default_factory=dict)
    summary: dict[str, float] = field(default_factory=dict)
    config: Any = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.summary = {k: summary_value(k, v) for k, v in self.summary.items()}
        self.arrays = {k: np.asarray(v) for k, v in self.arrays.items()}

    def _rows(self) -> list[tuple[str, Any]]:
        return [("metrics", f"{len(self.metrics)} rows × {len(self.metrics.columns)} columns"),
                *((f"arrays[{k!r}]", v) for k, v in self.arrays.items()), *self.summary.items()]

    def _title(self) -> str:
        return f"Result({len(self.summary)} summary values, {len(self.arrays)} arrays, {len(self.metrics)} metric rows)"

    def __repr__(self) -> str:
        return text_block(self._title(), self._rows())

    def _repr_html_(self) -> str:
        return html_block(self._title(), self._rows())


def summary_value(key: str, v: Any) -> Any:
    """``v`` as a summary value: a Python bool, int, float, str or None, or a list of them. A tensor or numpy
    value of one element becomes its number (``tensor([6])`` → 6), a 1-D one or a tuple a list; NaN becomes None
    ("never happened", stored as null so that summary.json stays valid JSON); anything else is a TypeError."""
    if hasattr(v, "detach"):
        v = v.detach().cpu().numpy()
    if isinstance(v, np.ndarray | np.generic):
        if v.size == 1:
            v = v.reshape(()).item()
        elif v.ndim == 1:
            v = v.tolist()
    if isinstance(v, list | tuple):
        return [summary_value(f"{key}[{i}]", x) for i, x in enumerate(v)]
    if isinstance(v, float) and v != v:
        return None
    if isinstance(v, bool | int | float | str) or v is None:
        return v
    raise TypeError(f"summary[{key!r}] must be a number, bool, text or a list of them, got {type(v).__name__}")


FigureFn = Callable[[Result, Any], "Figure | Mapping[str, Figure]"]
SweepFigureFn = Callable[[pd.DataFrame, list[str]], "Figure"]


@dataclass(frozen=True, eq=False)  # compared and hashed as itself: a dict of overrides may be keyed by it
class Experiment(Generic[S]):
    """One experiment, whole: its config class, run function, figure, memory and time models, declared outputs and
    paper reference. A study declares each as a module-level constant beside its config and run (``FIG2 =
    Experiment("potts", "fig2", Fig2Config, fig2, ...)``) and lists them in its :class:`~attnlab.core.study.Study`;
    claims pass the object to ``ctx.run`` (go-to-definition lands on it). The ``title`` defaults to the first line
    of ``fn``'s docstring. ``summary``: the typed summary class (:mod:`attnlab.core.summaries`) that claims read
    (``ctx.summary(FIG2)``) and from which the declared summary keys come (``outputs=declare(arrays=...)``): it
    names them at every scale. Summary templates still written in an older ``declare(summary=...)`` are left
    aside (some named only the keys of the tiny test config; they stay in modules that are measured code,
    :mod:`attnlab.core.fingerprint`, until the study is next re-measured)."""

    study: str
    name: str
    config: type[Config]
    fn: Callable[[Any, RunContext], Result]
    ref: str = ""
    title: str = ""
    figure: FigureFn | None = None
    sweep_figure: SweepFigureFn | None = None
    headline: bool = False
    memory: Callable[[Any], int | tuple[int, str]] | None = None
    resources: Callable[[Any], dict[str, float]] | None = None
    cost: Callable[[Any], float] | None = None  # work as a formula in the config's sizes (core.costs)
    outputs: Outputs | None = None  # declared summary keys and arrays (``<study>/outputs.py``, core.outputs)
    summary: type[S] | None = None  # the typed summary (core.summaries): attributes for the flat keys

    def __post_init__(self) -> None:
        if not self.title:
            doc = (self.fn.__doc__ or "").strip().splitlines()
            object.__setattr__(self, "title", doc[0] if doc else self.name)
        if self.summary is not None and self.outputs is not None:
            import dataclasses

            object.__setattr__(self, "outputs", dataclasses.replace(self.outputs, summary=self.summary.keys))

    @property
    def key(self) -> str:
        return f"{self.study}.{self.name}"


_REGISTRY: dict[str, Experiment] = {}


def register(exp: Experiment) -> Experiment:
    """Put ``exp`` in the registry the CLI, the sandbox and claims read (what a :class:`Study` does for each of its
    experiments when it is loaded)."""
    _REGISTRY[exp.key] = exp
    return exp


def attach(key: str, **parts: Any) -> Experiment:
    """Give the registered experiment ``key`` its ``memory``, ``cost`` or ``outputs`` declared in another module
    (the decorators :func:`memory_model`, :func:`attnlab.core.costs.cost_model` and
    :func:`attnlab.core.outputs.outputs` of studies not yet declared whole in one place)."""
    import dataclasses

    if key not in _REGISTRY and (study := key.partition(".")[0]) in study_modules():
        load_studies([study])  # the declarations imported before the experiments
    if key not in _REGISTRY:
        raise KeyError(f"{', '.join(parts)} declared for {key!r}, which is not a registered experiment")
    _REGISTRY[key] = dataclasses.replace(_REGISTRY[key], **parts)
    return _REGISTRY[key]


def experiment(
    study: str,
    name: str,
    config: type[Config],
    *,
    ref: str = "",
    title: str = "",
    figure: FigureFn | None = None,
    sweep_figure: SweepFigureFn | None = None,
    headline: bool = False,
    memory: Callable[[Any], int | tuple[int, str]] | None = None,
    resources: Callable[[Any], dict[str, float]] | None = None,
) -> Callable[[Callable[[Any, RunContext], Result]], Callable[[Any, RunContext], Result]]:
    """Decorator registering an experiment function under ``study.name``.

    ``memory(config)``: the run's peak bytes on its device (or ``(bytes, "what to reduce")``), checked against
    the device's free memory before the run starts (:mod:`attnlab.core.memory`). ``resources(config)``: dask
    worker resources a sweep task of this config claims, added to ``{"GPU": 1}`` for a CUDA device
    (:func:`attnlab.core.sweep.task_resources`).
    """

    def add(fn: Callable[[Any, RunContext], Result]) -> Callable[[Any, RunContext], Result]:
        register(Experiment(study, name, config, fn, ref, title, figure, sweep_figure, headline, memory, resources))
        return fn

    return add


MemoryFn = Callable[[Any], "int | tuple[int, str]"]


def memory_model(*keys: str) -> Callable[[MemoryFn], MemoryFn]:
    """Decorator attaching ``fn(config) -> peak bytes`` as the memory model of the registered experiments ``keys``
    (what ``experiment(..., memory=fn)`` does), for a study's ``memory.py`` kept apart from its experiments."""

    def add(fn: MemoryFn) -> MemoryFn:
        for key in keys:
            attach(key, memory=fn)
        return fn

    return add


STUDY_GROUP = "attnlab.studies"  # entry points: study name → its package (rooms below) or one registering module
_DEPRECATED_SAID: set[str] = set()


def deprecated_env(var: str, instead: str) -> list[str]:
    """The comma-separated module names of environment variable ``var`` (deprecated: one line on stderr, once per
    process, says what replaces it)."""
    modules = [m.strip() for m in os.environ.get(var, "").split(",") if m.strip()]
    if modules and var not in _DEPRECATED_SAID:
        _DEPRECATED_SAID.add(var)
        print(f"attnlab: ${var} is deprecated and will be removed in the next release; {instead}", file=sys.stderr)
    return modules


def entry_point_modules(group: str, builtin: Mapping[str, str]) -> dict[str, str]:
    """name → module of the installed entry points of ``group``: the ``builtin`` names first (in their order, their
    modules where an entry point is missing, e.g. in an uninstalled checkout), then the others by name."""
    from importlib.metadata import entry_points

    found = {ep.name: ep.module for ep in entry_points(group=group)}
    return {**{n: found.get(n, m) for n, m in builtin.items()}, **dict(sorted(found.items()))}


def study_modules() -> dict[str, str]:
    """Every study by name with the module that registers it (group ``attnlab.studies``; built-ins first)."""
    from attnlab import STUDIES

    return entry_point_modules(STUDY_GROUP, {s: f"attnlab.{s}" for s in STUDIES})


def import_plugin(module: str, source: str) -> Any:
    """Import ``module`` named by ``source`` (an entry point or a variable); one line if it cannot be imported."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        raise ConfigError(f"{source} names {module!r}, which cannot be imported: {exc}") from None


def load_studies(studies: list[str] | tuple[str, ...] | None = None) -> None:
    """Load each study: the module of its entry point (group ``attnlab.studies``); where that module defines a
    :class:`~attnlab.core.study.Study` ``STUDY``, the experiments and claims modules it lists (nothing else);
    otherwise, for a package, its ``experiments``, ``claims``, ``memory``, ``costs`` and ``outputs`` rooms. A
    third-party study registers itself the same way (``examples/my_study``); the modules named in the deprecated
    ``$ATTNLAB_PLUGINS`` (comma-separated) are still imported for one release.
    """
    for module in deprecated_env("ATTNLAB_PLUGINS", "register the study under the entry-point group "
                                 f"'{STUDY_GROUP}' instead (see examples/my_study)"):
        declared = getattr(import_plugin(module, "ATTNLAB_PLUGINS"), "STUDY", None)
        if _is_study(declared):
            _load(declared)
    known = study_modules()
    for study in studies or known:
        if study not in known:
            raise ConfigError(f"unknown study {study!r}; allowed: {', '.join(known)}")
        package = import_plugin(known[study], f"the {STUDY_GROUP} entry point {study!r}")
        declared = getattr(package, "STUDY", None)
        if declared is None and hasattr(package, "__path__"):  # a package whose study object is in its ``study``
            declared = getattr(_optional(f"{package.__name__}.study"), "STUDY", None)
        if _is_study(declared):
            _load(declared)
            continue
        if not hasattr(package, "__path__"):
            continue
        for room in ("experiments", "claims", "memory", "costs", "outputs"):
            _optional(f"{package.__name__}.{room}")


def _load(study: Any) -> None:
    """Register a :class:`~attnlab.core.study.Study`'s experiments and import the modules of its claims."""
    for exp in study.experiments:
        register(exp)
    for module in study.claims:
        import_plugin(module, f"study {study.name!r} (its claims)")


def _optional(module: str) -> Any:
    """``module`` imported, or None where it does not exist (an error inside it still raises)."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name != module:
            raise
        return None


def _is_study(obj: Any) -> bool:
    from attnlab.core.study import Study

    return isinstance(obj, Study)


def experiments(study: str | None = None) -> list[Experiment]:
    """Registered experiments, of one study or all, in registration order."""
    load_studies()
    check_study(study)
    return [e for e in _REGISTRY.values() if study is None or e.study == study]


def get(key: str | Experiment) -> Experiment:
    """Look up ``STUDY.EXPERIMENT`` (an :class:`Experiment` is itself, as registered); unknown names raise
    :class:`ConfigError` listing the choices."""
    if isinstance(key, Experiment):
        key = key.key
    study, sep, _ = key.partition(".")
    if not sep:
        raise ConfigError(f"experiment {key!r} must be STUDY.EXPERIMENT, e.g. specialization.fig1")
    if key not in _REGISTRY:
        load_studies([study] if study in study_modules() else None)
    if key not in _REGISTRY:
        known = ", ".join(sorted(e for e in _REGISTRY if e.startswith(study + "."))) or ", ".join(sorted(_REGISTRY))
        raise ConfigError(f"unknown experiment {key!r}; known: {known or 'none'}")
    return _REGISTRY[key]


def known_studies() -> list[str]:
    """The package's studies, then those of other installed entry points and of experiments registered otherwise."""
    load_studies()
    return list(dict.fromkeys([*study_modules(), *(e.study for e in _REGISTRY.values())]))


def check_study(study: str | None) -> None:
    """Raise :class:`ConfigError` naming the allowed studies if ``study`` is unknown."""
    if study is not None and study not in (known := known_studies()):
        raise ConfigError(f"unknown study {study!r}; allowed: {', '.join(known)}")
