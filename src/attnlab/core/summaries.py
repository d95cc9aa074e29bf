"""Typed summaries: an experiment's summary as a frozen dataclass whose attributes the claims read.

The store keeps writing the flat ``summary.json`` it always wrote (``Result.summary``: key → number); a
:class:`Summary` subclass names those keys once, as fields, and converts both ways::

    @dataclass(frozen=True)
    class Fig2dSummary(Summary):
        optimal_loss: float
        best_a: float
        test: dict[float, float] = key("test_a{a_values}")        # one value per a of the config's a_values
        corr: dict[float, float] = key("corr_a{a_values}")

    FIG2D = Experiment("potts", "fig2d", Fig2dConfig, fig2d, summary=Fig2dSummary, outputs=declare(arrays=...))
    s = ctx.summary(FIG2D)                                          # a Fig2dSummary (a claim's measure)
    s.test[1.0] - s.test[0.0]

A field is one of

* a number: its key is the field's name, or the literal ``key("epochs_to_gap_0.1")``;
* a family ``key("corr_a{a_values}")``: a mapping keyed by the values of each ``{name}`` that takes several (a
  config field that is a list, or ``key(..., weight=("paper", "exact"))``: choices of its own, or a function of the
  config returning them); a template of several such names is keyed by tuples in their order
  (``s.peak_alpha[3.0, 1e-3]``);
* a group ``group("{models}_*", ModelFit)``: a nested summary whose keys replace ``*`` (``s.models["factored"].gap``
  reads ``factored_gap``), one per value of its names, or a single one (a template without names).

``when=lambda config: ...`` marks a family (empty where false) or a group (None where false) that only some configs
produce. A summary value is what ``summary.json`` holds: a number, or None for NaN ("never happened").
:meth:`Summary.keys` gives the flat keys a config makes, which is the experiment's declared summary
(:mod:`attnlab.core.outputs`): the typed class and the declaration cannot disagree. Placeholders are formatted as
:func:`attnlab.core.outputs.expand` formats them (floats with ``g``).
"""

from __future__ import annotations

import dataclasses
import itertools
import string
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar, overload

if TYPE_CHECKING:
    from attnlab.core.experiment import Experiment

S = TypeVar("S", bound="Summary")
_SPEC = "attnlab_summary"


@dataclass(frozen=True)
class KeySpec:
    """What a field of a typed summary (or of typed arrays, :mod:`attnlab.core.arrays`) is stored under: its key
    ``template`` (``{name}`` placeholders: config fields or ``choices``), the configs that make it (``when``) and,
    for a group, its nested class."""

    template: str
    choices: Mapping[str, Any]
    when: Callable[[Any], bool] | None = None
    child: type[Summary] | None = None


def key(template: str, *, when: Callable[[Any], bool] | None = None, **choices: Any) -> Any:
    """A field whose flat key is ``template``: a number (no ``{name}``) or a family keyed by the values of its
    names (config fields, or ``choices``: a sequence or a function of the config)."""
    return _field(KeySpec(template, choices, when), family=bool(template_names(template)))


def group(template: str, child: type[Summary], *, when: Callable[[Any], bool] | None = None, **choices: Any) -> Any:
    """A field holding nested :class:`Summary` objects whose keys replace the ``*`` of ``template``: a mapping keyed
    by the values of its names, or one object (None where ``when`` is false)."""
    if "*" not in template:
        raise ValueError(f"group template {template!r} has no '*' for the nested keys")
    return _field(KeySpec(template, choices, when, child), family=bool(template_names(template)))


def _field(spec: KeySpec, family: bool) -> Any:
    """The dataclass field of ``spec``: required, unless only some configs make it (``when``): then an empty family,
    or None."""
    meta = {_SPEC: spec}
    if spec.when is None:
        return dataclasses.field(metadata=meta)
    if family:
        return dataclasses.field(default_factory=dict, metadata=meta)
    if spec.child is None:
        raise ValueError(f"key {spec.template!r}: a number that only some configs make belongs in a group "
                         "(None where absent); a stored NaN is None too")
    return dataclasses.field(default=None, metadata=meta)


class Summary:
    """Base of typed summaries (subclasses are frozen dataclasses): flat keys ↔ attributes."""

    __dataclass_fields__: ClassVar[dict[str, Any]]

    def to_summary(self) -> dict[str, Any]:
        """The flat summary (``summary.json``) this object stands for: exactly the keys and values it came from."""
        out: dict[str, Any] = {}
        _write(self, "*", out)
        return out

    @classmethod
    def from_summary(cls: type[S], summary: Mapping[str, Any], config: Any) -> S:
        """The typed summary of a run of ``config`` (a missing key raises a ``KeyError`` naming it and the keys
        there are)."""
        def get(k: str) -> Any:
            if k not in summary:
                raise KeyError(f"{cls.__name__}: summary key {k!r} missing; the summary has: "
                               f"{', '.join(sorted(summary)) or 'nothing'}")
            return summary[k]

        return _read(cls, config, "*", get)

    @classmethod
    def from_result(cls: type[S], result: Any) -> S:
        """The typed summary of ``result``: a run that a claim context loaded, which carries its config."""
        if getattr(result, "config", None) is None:
            raise ValueError(f"{cls.__name__}: the result carries no config (a typed summary needs the run's config)")
        return cls.from_summary(result.summary, result.config)

    @classmethod
    def keys(cls, config: Any) -> list[str]:
        """The flat keys a run of ``config`` writes (the experiment's declared summary)."""
        seen: list[str] = []
        _read(cls, config, "*", lambda k: seen.append(k))
        return seen


def template_names(template: str) -> list[str]:
    """The ``{name}`` placeholders of a key template, in order."""
    return [n for _, n, _, _ in string.Formatter().parse(template) if n is not None]


def fill(template: str, values: Mapping[str, Any]) -> str:
    """``template`` with each ``{name}`` that ``values`` holds formatted as :func:`~attnlab.core.outputs.expand`
    does (floats with ``g``); other text, ``*`` included, kept."""
    out = ""
    for literal, name, spec, _ in string.Formatter().parse(template):
        out += literal
        if name is None:
            continue
        if name not in values:
            out += "{" + name + (":" + spec if spec else "") + "}"
            continue
        value = values[name]
        out += format(value, spec or ("g" if isinstance(value, float) else ""))
    return out


def _spec(f: dataclasses.Field) -> KeySpec:
    return f.metadata.get(_SPEC) or KeySpec(f.name, {})


def _values(spec: KeySpec, config: Any) -> dict[str, list[Any] | Any]:
    """Each name of the template: its values (a list: a dimension of the family's key) or its one value."""
    out = {}
    for name in template_names(spec.template):
        own = name in spec.choices
        v = spec.choices[name] if own else getattr(config, name)
        v = v(config) if callable(v) else v
        if not own and not isinstance(v, list | tuple):
            raise TypeError(f"summary template {spec.template!r}: config field {name!r} is not a list (a family's "
                            "names each take several values; give a fixed one as a choice)")
        out[name] = list(v) if isinstance(v, list | tuple) else v
    return out


def family_members(spec: KeySpec, config: Any) -> list[tuple[Any, dict[str, Any]]]:
    """(key of the mapping, values of the names) for every member of a family or group a run of ``config`` has."""
    values = _values(spec, config)
    dims = [n for n, v in values.items() if isinstance(v, list)]
    out = []
    for combo in itertools.product(*(values[n] for n in dims)):
        filled = {**values, **dict(zip(dims, combo, strict=True))}
        out.append((combo[0] if len(dims) == 1 else combo, filled))
    return out


def _read(cls: type[S], config: Any, wrap: str, get: Callable[[str], Any]) -> S:
    kwargs = {}
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        spec = _spec(f)
        full = wrap.replace("*", spec.template)
        if spec.when is not None and not spec.when(config):
            continue  # the field's default: an empty family, or None
        if not template_names(spec.template):
            kwargs[f.name] = get(full) if spec.child is None else _read(spec.child, config, full, get)
            continue
        members = {}
        for k, values in family_members(spec, config):
            name = fill(full, values)
            members[k] = get(name) if spec.child is None else _read(spec.child, config, name, get)
        kwargs[f.name] = members
    return cls(**kwargs)


def _write(obj: Summary, wrap: str, out: dict[str, Any]) -> None:
    for f in dataclasses.fields(obj):  # type: ignore[arg-type]
        spec, value = _spec(f), getattr(obj, f.name)
        full = wrap.replace("*", spec.template)
        names = template_names(spec.template)
        if not names:
            if spec.child is None:
                out[full] = value
            elif value is not None:
                _write(value, full, out)
            continue
        for k, member in value.items():
            parts = k if isinstance(k, tuple) else (k,)
            fixed = {n: c for n, c in spec.choices.items() if _fixed(c)}
            dims = [n for n in names if n not in fixed]
            if len(parts) != len(dims):
                raise ValueError(f"{type(obj).__name__}.{f.name}: key {k!r} does not give {', '.join(dims)}")
            name = fill(full, {**fixed, **dict(zip(dims, parts, strict=True))})
            if spec.child is None:
                out[name] = member
            else:
                _write(member, name, out)


def _fixed(choice: Any) -> bool:
    """Whether a name's own choices are one fixed value rather than a dimension of the family's key."""
    return not (callable(choice) or isinstance(choice, list | tuple))


@overload
def typed(experiment: Experiment[S], result: Any) -> S: ...


@overload
def typed(experiment: str | Experiment, result: Any) -> Summary: ...


def typed(experiment: str | Experiment, result: Any) -> Summary:
    """The typed summary of ``result`` (a run of ``experiment``, whose config the claim context put on it)."""
    from attnlab.core.registry import get

    exp = get(experiment)
    if exp.summary is None:
        raise TypeError(f"{exp.key} declares no typed summary (Experiment(..., summary=...)); read result.summary")
    return exp.summary.from_result(result)


def edit_summary(fn: Callable[[Any], Any]) -> Callable[[str, Any], Any]:
    """A world's result function (:class:`~attnlab.core.claims.World`) written on the typed summary: ``fn(summary)``
    returns the changed summary (``dataclasses.replace``), whose flat keys replace the run's."""

    def world(experiment: str, result: Any) -> Any:
        result.summary = {**result.summary, **fn(typed(experiment, result)).to_summary()}
        return result

    return world


def swap_entries(name: str, a: Any, b: Any) -> Callable[[str, Any], Any]:
    """A world's result function exchanging the entries ``a`` and ``b`` of the typed summary's family ``name`` (the
    two arms of a comparison swapped): :func:`edit_summary`'s most common edit, the typed twin of
    :func:`attnlab.core.worlds.swap_summary`."""

    def swapped(summary: Any) -> Any:
        values = getattr(summary, name)
        return dataclasses.replace(summary, **{name: {**values, a: values[b], b: values[a]}})

    return edit_summary(swapped)
