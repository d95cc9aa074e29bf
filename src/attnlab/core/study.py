"""A study declared in one place: its experiments (objects), the modules of its claims, its sandbox views.

A study's package defines one ``STUDY``::

    STUDY = Study("potts", "What self-attention learns from masked language modelling (paper 2)",
                  experiments=(fig2.FIG2, fig2.FIG2D, ...),
                  claims=("attnlab.potts.claims.training", ...),
                  views="attnlab.potts.views.plugin")

and its entry point in the group ``attnlab.studies`` names that object (``potts = "attnlab.potts:STUDY"``).
Loading the study registers exactly the experiments it lists and imports exactly the claims modules it names, in
that order; nothing is found by importing a module for what it registers on the way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the registry imports this module to recognise a Study: no import loop
    from attnlab.core.experiment import Experiment


@dataclass(frozen=True)
class Study:
    """What a study has: ``experiments`` (each one :class:`~attnlab.core.experiment.Experiment`, whole), the
    ``claims`` modules that define its claims (imported when the study loads), and its sandbox ``views``
    plug-in module (also named under the entry-point group ``attnlab.views``, which the sandbox reads)."""

    name: str
    title: str
    experiments: tuple[Experiment, ...]
    claims: tuple[str, ...] = ()
    views: str | None = None

    def __post_init__(self) -> None:
        keys = [e.key for e in self.experiments]
        if dup := sorted({k for k in keys if keys.count(k) > 1}):
            raise ValueError(f"study {self.name!r} lists {', '.join(dup)} more than once")
        if other := [k for e, k in zip(self.experiments, keys, strict=True) if e.study != self.name]:
            raise ValueError(f"study {self.name!r} lists experiments of another study: {', '.join(other)}")

    def experiment(self, name: str) -> Experiment:
        """The experiment called ``name`` (``KeyError`` naming the study's experiments otherwise)."""
        for e in self.experiments:
            if e.name == name:
                return e
        raise KeyError(f"study {self.name!r} has no experiment {name!r}; it has "
                       f"{', '.join(e.name for e in self.experiments)}")
