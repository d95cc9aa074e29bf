"""Typed arrays: the arrays of an experiment's run as a frozen dataclass whose fields name their dimensions.

The store keeps writing the arrays it always wrote (``Result.arrays``: name → numpy array); an :class:`Arrays`
subclass names the arrays a claim reads once, as fields, each with its named dimensions, the way a typed summary
(:mod:`attnlab.core.summaries`) names the flat keys::

    @dataclass(frozen=True, eq=False)
    class MarkovArrays(Arrays):
        y_test: np.ndarray = dims("test_point")
        theory_U: np.ndarray = dims("width", "path", "path_prime", observable="U")   # U*(N), Eq. (13)
        sim_U: dict[int, np.ndarray] = dims("path", "path_prime", key="sim_U_N{sample_widths}")

    a = MarkovArrays.from_result(ctx.run(FIG2C))    # a claim's measure: every field checked, then an attribute
    a.theory_U[i]                                   # the array result.arrays["theory_U"], as it is stored
    MarkovArrays.dims("theory_U")                   # ("width", "path", "path_prime")

A field is one of

* an array ``dims("width", "path", "path_prime")``: stored under the field's name, or under ``key="theory_U"``;
* a family ``dims(..., key="{activations}/time")``: a mapping keyed by the values of each ``{name}`` that takes
  several (a config field that is a list, or a choice of its own: ``dims(..., key="{src}_b", src=("sim",
  "theory"))``, or a function of the config), tuples in the template's order where there are several
  (``a.curves["flip", "softmax"]``);
* a nested class ``nested("{net}/*", NetArrays, net=names)``: the arrays whose names replace ``*``, one object per
  value of its names (a mapping), or a single one (a template without names).

``when=lambda config: ...`` marks a family (empty where false) or an array or nested object (None where false) that
only some configs produce. ``observable="U"`` says that the array's last dimensions are those the experiment's
declared ``index`` gives the metrics' observable ``U`` (:mod:`attnlab.core.outputs`); ``tests/core/test_arrays.py``
checks every study's class against its experiments' declared outputs (as many dimensions as declared axes, the same
index names), so a declaration and a class cannot disagree. Placeholders are formatted as
:func:`attnlab.core.outputs.expand` formats them (floats with ``g``). Reading only checks and names: the values are
the stored arrays themselves, so a claim reading ``a.theory_U`` reads what ``result.arrays["theory_U"]`` held.
A world that edits a run's arrays writes on the same class (:func:`edit_arrays`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

import numpy as np

from attnlab.core.summaries import KeySpec, family_members, fill, template_names

A = TypeVar("A", bound="Arrays")
_DIMS = "attnlab_arrays"
_NONE = object()  # a path step into a field that is not a mapping


class MissingArray(KeyError):
    """An array an :class:`Arrays` class names that the run lacks; ``args[0]`` is the array's name."""

    def __init__(self, name: str, message: str) -> None:
        super().__init__(name)
        self.message = message

    def __str__(self) -> str:
        return self.message


@dataclass(frozen=True)
class _Dims:
    names: tuple[str, ...]
    spec: KeySpec  # the array's name (a template), its own choices, when
    observable: str | None = None
    child: type[Arrays] | None = None  # a nested class


def dims(*names: str, key: str | None = None, observable: str | None = None,
         when: Callable[[Any], bool] | None = None, **choices: Any) -> Any:
    """A field holding the array (or the family of arrays, if ``key`` has ``{name}``s) whose axes are ``names``."""
    return _field(_Dims(tuple(names), KeySpec(key or "", choices, when), observable))


def nested(template: str, child: type[Arrays], *, when: Callable[[Any], bool] | None = None, **choices: Any) -> Any:
    """A field holding :class:`Arrays` objects of ``child`` whose array names replace the ``*`` of ``template``: a
    mapping keyed by the values of its names, or one object (None where ``when`` is false)."""
    if "*" not in template:
        raise ValueError(f"nested template {template!r} has no '*' for the nested arrays' names")
    return _field(_Dims((), KeySpec(template, choices, when), child=child))


def _field(d: _Dims) -> Any:
    meta = {_DIMS: d}
    if d.spec.when is None:
        return dataclasses.field(metadata=meta)
    if template_names(d.spec.template):
        return dataclasses.field(default_factory=dict, metadata=meta)
    return dataclasses.field(default=None, metadata=meta)


class Arrays:
    """Base of typed arrays (subclasses are frozen dataclasses, ``eq=False``: numpy arrays do not compare to one
    truth value): stored array names ↔ attributes with named dimensions."""

    __dataclass_fields__: ClassVar[dict[str, Any]]

    @classmethod
    def from_arrays(cls: type[A], arrays: Mapping[str, np.ndarray], config: Any = None) -> A:
        """The typed arrays of a run of ``config`` whose arrays are ``arrays``: each named array must be there
        (:class:`MissingArray` naming it and the arrays there are) with one axis per named dimension (a
        ``ValueError`` naming the array, its shape and its dimensions)."""
        def get(name: str, d: _Dims, path: tuple) -> Any:
            if name not in arrays:
                raise MissingArray(name, f"{cls.__name__}: array {name!r} missing; the run has: "
                                         f"{', '.join(sorted(arrays)) or 'nothing'}")
            value = arrays[name]
            if np.ndim(value) != len(d.names):
                raise ValueError(f"{cls.__name__}: array {name!r} has shape {np.shape(value)}, "
                                 f"{np.ndim(value)} axes for the {len(d.names)} dimensions {d.names}")
            return value

        return _read(cls, config, "*", get, ())

    @classmethod
    def from_result(cls: type[A], result: Any) -> A:
        """The typed arrays of ``result``: a run that a claim context loaded, which carries its config."""
        return cls.from_arrays(result.arrays, getattr(result, "config", None))

    @classmethod
    def dims(cls, name: str) -> tuple[str, ...]:
        """The named dimensions of the field ``name`` (of each member, for a family)."""
        fields = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
        if name not in fields:
            raise KeyError(f"{cls.__name__} has no field {name!r}; it has {', '.join(fields)}")
        d = _dims(fields[name])
        if d.child is not None:
            raise TypeError(f"{cls.__name__}.{name} holds {d.child.__name__} objects: ask that class")
        return d.names

    @classmethod
    def names(cls, config: Any = None) -> dict[str, tuple[str, ...]]:
        """Array name → its named dimensions, for every array a run of ``config`` gives this class."""
        return {name: d.names for name, d, _ in _walk(cls, config)}

    @classmethod
    def observables(cls, config: Any = None) -> dict[str, str]:
        """Array name → the metrics' observable whose declared index names its last dimensions (where given)."""
        return {name: d.observable for name, d, _ in _walk(cls, config) if d.observable is not None}

    def to_arrays(self, config: Any = None) -> dict[str, np.ndarray]:
        """The stored arrays (name → array) this object stands for: the inverse of :meth:`from_arrays`."""
        out = {}
        for name, _, path in _walk(type(self), config):
            value: Any = self
            for field, k in path:
                value = getattr(value, field) if k is _NONE else getattr(value, field)[k]
            out[name] = value
        return out


def edit_arrays(cls: type[A], fn: Callable[[A], A]) -> Callable[[str, Any], Any]:
    """A world's result function (:class:`~attnlab.core.claims.World`) written on typed arrays: ``fn(arrays)`` returns
    the changed ``cls`` object (``dataclasses.replace``), whose arrays replace the run's of the same names (the twin
    of :func:`attnlab.core.summaries.edit_summary`; a renamed field fails the world, not a silent key)."""

    def world(experiment: str, result: Any) -> Any:
        config = getattr(result, "config", None)
        result.arrays = {**result.arrays, **fn(cls.from_arrays(result.arrays, config)).to_arrays(config)}
        return result

    return world


def _dims(f: dataclasses.Field) -> _Dims:
    if _DIMS not in f.metadata:
        raise TypeError(f"field {f.name!r} of a typed arrays class needs dims(...) or nested(...)")
    return f.metadata[_DIMS]


def _read(cls: type[A], config: Any, wrap: str, get: Callable[[str, _Dims, tuple], Any], path: tuple) -> A:
    """``cls`` built by ``get(name, dims, path)`` for every array it names (``path``: the fields and keys that lead
    to the array from the outermost object)."""
    kwargs = {}
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        d = _dims(f)
        spec, child = d.spec, d.child
        template = spec.template or f.name
        full = wrap.replace("*", template)
        if spec.when is not None and not spec.when(config):
            continue  # the field's default: an empty family, or None
        if not template_names(template):
            step = (*path, (f.name, _NONE))
            kwargs[f.name] = get(full, d, step) if child is None else _read(child, config, full, get, step)
            continue
        if config is None:
            raise ValueError(f"{cls.__name__}.{f.name}: the family {template!r} needs the run's config")
        members = {}
        for k, values in family_members(dataclasses.replace(spec, template=template), config):
            name, step = fill(full, values), (*path, (f.name, k))
            members[k] = get(name, d, step) if child is None else _read(child, config, name, get, step)
        kwargs[f.name] = members
    return cls(**kwargs)


def _walk(cls: type[Arrays], config: Any) -> Iterator[tuple[str, _Dims, tuple]]:
    """(name, dims, path) of every array a run of ``config`` gives ``cls``, in field order."""
    seen: list[tuple[str, _Dims, tuple]] = []
    _read(cls, config, "*", lambda name, d, path: seen.append((name, d, path)), ())
    return iter(seen)
