"""Experiments (one per paper figure): what one is, whole.

A study declares each experiment as a module-level constant beside its config and run function::

    FIG1 = Experiment("specialization", "fig1", Fig1Config, fig1, ref="Fig. 1", figure=figures.fig1, headline=True)

The function takes its validated config and a :class:`~attnlab.core.context.RunContext` (named random
streams, device, checkpoints, progress) and returns a :class:`~attnlab.core.result.Result` — tables and arrays, no
plotting. ``figure(result, config)`` turns a result into matplotlib figures. The registry the CLI, the sandbox and
claims read, and the loading of studies, are :mod:`attnlab.core.registry`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

import pandas as pd

from attnlab.core.config import Config
from attnlab.core.result import Result, summary_value

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from attnlab.core.context import RunContext
    from attnlab.core.outputs import Outputs

__all__ = ["Experiment", "FigureFn", "Result", "SweepFigureFn", "summary_value"]


class TypedSummary(Protocol):
    """What an experiment needs of its typed summary class (:class:`attnlab.core.summaries.Summary`): the flat keys
    it names for a config."""

    @classmethod
    def keys(cls, config: Any) -> list[str]: ...


S = TypeVar("S", bound=TypedSummary)


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
    names them at every scale; a ``declare(summary=...)`` template beside it is left aside (a study without a typed
    summary declares its keys that way)."""

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


#: names this module held before the registry moved to its own module (:mod:`attnlab.core.registry`)
MOVED = ("register", "attach", "experiment", "memory_model", "deprecated_env", "entry_point_modules", "study_modules",
         "import_plugin", "load_studies", "experiments", "get", "known_studies", "check_study", "STUDY_GROUP")


def __getattr__(name: str) -> Any:
    """A name that moved says where it went (an ImportError, so ``from attnlab.core.experiment import get`` in a
    study written before the move tells its author the one line to change)."""
    if name in MOVED:
        raise ImportError(f"attnlab.core.experiment.{name} moved to attnlab.core.registry: write `from "
                          f"attnlab.core.registry import {name}`", name=name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
