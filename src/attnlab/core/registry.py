"""The registry of experiments the CLI, the sandbox and claims read, and the loading of studies into it.

Each study is found through its entry point (group ``attnlab.studies``); loading it registers the experiments its
:class:`~attnlab.core.study.Study` lists and imports the modules of its claims. :func:`get` looks one up by name or
object, :func:`experiments` lists them. The decorators :func:`experiment` and :func:`memory_model` (and
:func:`attach`) remain for a third-party study that registers by decorating its run functions.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from attnlab.core.config import Config, ConfigError
from attnlab.core.experiment import Experiment, FigureFn, Result, SweepFigureFn

if TYPE_CHECKING:
    from attnlab.core.context import RunContext

_REGISTRY: dict[str, Experiment] = {}


def register(exp: Experiment) -> Experiment:
    """Put ``exp`` in the registry the CLI, the sandbox and claims read (what a :class:`Study` does for each of its
    experiments when it is loaded)."""
    _REGISTRY[exp.key] = exp
    return exp


def attach(key: str, **parts: Any) -> Experiment:
    """Give the registered experiment ``key`` its ``memory``, ``cost`` or ``outputs`` declared in another module
    (the decorators :func:`memory_model` and :func:`attnlab.core.costs.cost_model` of a study not declared whole in
    one place)."""
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
