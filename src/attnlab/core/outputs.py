"""Declared outputs: the summary keys and arrays each experiment means to produce, checked against what it does.

An experiment declares them beside its run (``Experiment(..., outputs=declare(...), summary=Fig2dSummary)``)::

    declare(tiny={"a_values": [0.0, 1.0], "seeds": 2, "epochs": 2},
            arrays={"a": ("len(a_values) * seeds",), "map": ("len(a_values) * seeds", "L", "L")})

its summary keys coming from its typed summary (:mod:`attnlab.core.summaries`), or from a ``summary=`` template
(``"best_a corr_a{a_values} test_a{a_values}"``).

A summary key or array name is a template: each ``{name}`` (or ``{name:spec}``) takes every value of the config's
field ``name`` (each element of a list field; floats formatted with ``g`` unless a spec says otherwise), and the
template stands for every combination; one string holds any number of them, separated by spaces. An array name
may hold ``*`` (``"run/*"``: every array under the prefix, e.g. a stored clustering History, whose own format fixes
the rest). A shape holds ints, expressions over the config's fields (``"n_seeds"``, ``"len(Ls)"``, ``"T + 1"``)
or None for an axis no field fixes alone; a shape of None leaves the shape free. ``summary`` (``arrays``) may also
be a function of the config returning the names (the shapes). ``index`` names the index axes of the metrics'
array-valued observables (``{"m q": ("head", "feature"), "U": ("path", "path_prime")}``; keys are observable
templates or ``fnmatch`` patterns): the store writes those names instead of ``i``, ``j``, … (:func:`tidy`'s
``axes``, ``docs/data.md``), and :func:`check` then names every axis left unnamed. ``tiny``: the overrides (on
the quick scale) under which ``tests/core/test_outputs.py`` runs every declared experiment in seconds and
:func:`check` compares what it produced with its declaration, so a renamed key fails there at once.
"""

from __future__ import annotations

import fnmatch
import itertools
import re
import string
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from attnlab.core.metrics import tidy, unnamed_axes
from attnlab.core.result import Result

Shape = tuple[int | str | None, ...] | None
Names = Iterable[str] | Callable[[Any], Iterable[str]]
Arrays = Mapping[str, Shape] | Callable[[Any], Mapping[str, Shape]]
_FIELD = re.compile(r"^[A-Za-z_]\w*$")


@dataclass(frozen=True)
class Outputs:
    """What a registered experiment produces: summary key templates, array name templates → shapes, and the tiny
    overrides its fast test runs under."""

    summary: Names | None  # None: the keys of the experiment's typed summary (``Experiment(..., summary=...)``)
    arrays: Arrays
    tiny: Mapping[str, Any] = field(default_factory=dict)
    index: Mapping[str, tuple[str, ...]] | None = None

    def keys(self, config: Any) -> set[str]:
        """The summary keys ``config`` makes."""
        if self.summary is None:
            raise ValueError("no summary keys declared: give the experiment a typed summary, or declare summary=")
        names = self.summary(config) if callable(self.summary) else self.summary
        return {k for text in names for t in text.split() for k in expand(t, config)}

    def shapes(self, config: Any) -> dict[str, tuple[int | None, ...] | None]:
        """Array name (or ``*`` pattern) → shape (None: any size, or any shape) for ``config``."""
        arrays = self.arrays(config) if callable(self.arrays) else self.arrays
        ns = _Namespace(config)
        return {name: None if shape is None else tuple(_axis(a, ns) for a in shape)
                for t, shape in arrays.items() for name in t.split() for name in expand(name, config)}

    def axes(self, config: Any) -> dict[str, tuple[str, ...]] | None:
        """Observable (or pattern) → the names of its index axes under ``config`` (None: none declared)."""
        if self.index is None:
            return None
        return {name: tuple(names) for t, names in self.index.items() for name in t.split()
                for name in expand(name, config)}


def declare(*, summary: Names | None = None, arrays: Arrays, tiny: Mapping[str, Any] | None = None,
            index: Mapping[str, tuple[str, ...]] | None = None) -> Outputs:
    """The :class:`Outputs` of an experiment declared whole (``Experiment(..., outputs=declare(...))``); without
    ``summary``, the keys are those of the experiment's typed summary (``Experiment(..., summary=...)``,
    :mod:`attnlab.core.summaries`)."""
    names = (summary if summary is None or callable(summary) else (summary,) if isinstance(summary, str)
             else tuple(summary))
    return Outputs(names, arrays, dict(tiny or {}), None if index is None else dict(index))


def expand(template: str, config: Any) -> list[str]:
    """Every name a template stands for under ``config`` (a template without fields is itself)."""
    pieces = list(string.Formatter().parse(template))
    names = [name for _, name, _, _ in pieces if name is not None]
    if not names:
        return [template]
    ns = _Namespace(config)
    choices = []
    for name in names:
        if not _FIELD.match(name):
            raise ValueError(f"template {template!r}: {{{name}}} is not a config field")
        value = ns[name]
        choices.append(list(value) if isinstance(value, list | tuple) else [value])
    out = []
    for combo in itertools.product(*choices):
        values, text = iter(combo), ""
        for literal, name, spec, _ in pieces:
            text += literal
            if name is not None:
                value = next(values)
                text += format(value, spec or ("g" if isinstance(value, float) else ""))
        out.append(text)
    return out


def check(declared: Outputs, config: Any, result: Result) -> list[str]:
    """What differs between ``result`` and its declaration under ``config``: one line each (empty: it conforms)."""
    problems = []
    keys, made = declared.keys(config), set(result.summary)
    problems += [f"summary key {k!r} declared, not produced" for k in sorted(keys - made)]
    problems += [f"summary key {k!r} produced, not declared" for k in sorted(made - keys)]
    shapes = declared.shapes(config)
    patterns = {k: v for k, v in shapes.items() if "*" in k}
    exact = set(shapes) - set(patterns)
    problems += [f"array {k!r} declared, not produced" for k in sorted(exact - set(result.arrays))]
    problems += [f"arrays {k!r} declared, none produced" for k in patterns if not fnmatch.filter(result.arrays, k)]
    for name, array in sorted(result.arrays.items()):
        match = name if name in shapes else next((k for k in patterns if fnmatch.fnmatchcase(name, k)), None)
        if match is None:
            problems.append(f"array {name!r} produced, not declared")
            continue
        want, got = shapes[match], array.shape
        if want is not None and (len(want) != len(got) or any(w is not None and w != g for w, g in zip(want, got,
                                                                                                      strict=False))):
            problems.append(f"array {name!r} has shape {got}, declared {want}")
    axes = declared.axes(config)
    if axes is not None:
        frame = tidy(result.metrics, axes)
        observables = set(frame["observable"]) if "observable" in frame.columns else set()
        problems += [f"index declared for observable {k!r}, which the metrics lack" for k in sorted(axes)
                     if not fnmatch.filter(observables, k)]
        problems += [f"metrics observable {obs!r}: index columns {', '.join(cols)} not named"
                     for obs, cols in sorted(unnamed_axes(frame).items())]
    return problems


class _Namespace(dict):
    """A config's fields and properties by name, with ``len``, ``max``, ``min``, ``sum`` for shape expressions."""

    def __init__(self, config: Any) -> None:
        super().__init__(len=len, max=max, min=min, sum=sum, int=int, round=round)
        self.config = config

    def __missing__(self, name: str) -> Any:
        try:
            return getattr(self.config, name)
        except AttributeError:
            raise KeyError(f"{type(self.config).__name__} has no field {name!r}") from None


def _axis(axis: int | str | None, ns: _Namespace) -> int | None:
    if axis is None or isinstance(axis, int):
        return axis
    return int(eval(axis, {"__builtins__": {}}, ns))  # the declarations are the package's own code
