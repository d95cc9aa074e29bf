"""Immutable, validated experiment configs and their ``--set`` overrides.

Every experiment has one :class:`Config` subclass whose field defaults are the paper's values and
whose ``scales`` map a scale name ("quick", "paper") to the overrides that scale applies. A config is
resolved in this order: defaults → scale → YAML file → ``--set key=value`` → seed/device. Any bad
value, wrong type or unknown key raises :class:`ConfigError` with one line naming the key, the
value and what is allowed — before any work starts and before anything is written.
"""

from __future__ import annotations

import hashlib
import json
import math
import typing
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, ClassVar

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model, field_validator
from pydantic.fields import FieldInfo

from attnlab.core.device import ALLOWED as DEVICE_ALLOWED
from attnlab.core.device import PATTERN as DEVICE_PATTERN  # noqa: F401 (re-exported: the one spelling of a device)
from attnlab.core.device import check_name as check_device_name
from attnlab.core.errors import ConfigError

SCALES: tuple[str, ...] = ("quick", "paper")


ADDED = "attnlab_added"


def added(default: Any, **kwargs: Any) -> Any:
    """``Field(default, ...)`` for a parameter added to an experiment after runs of it were stored: while it holds
    ``default`` (which must reproduce the old behaviour) it stays out of the run id, so stored runs, claims records
    and sweeps keep their ids; any other value makes a new run."""
    extra = {**kwargs.pop("json_schema_extra", {}), ADDED: True}
    return Field(default, json_schema_extra=extra, **kwargs)


def _json(value: Any) -> Any:
    """A default as ``model_dump(mode="json")`` writes it (tuples as lists)."""
    return json.loads(json.dumps(value, default=str)) if not isinstance(value, BaseModel) else value.model_dump(
        mode="json")


class Config(BaseModel):
    """Base of every experiment config: frozen, strict about unknown keys, hashable.

    Subclasses declare the experiment's parameters as fields with paper defaults and may set
    ``scales = {"quick": {...}, "paper": {...}}``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", validate_default=True)

    seed: int = Field(0, ge=0, description="base seed; named streams derive from it (core.rng)")
    device: str = Field("cpu", description="torch device the run computes on: cpu, cuda or cuda:N",
                        json_schema_extra={"allowed": DEVICE_ALLOWED.replace(", ", " | ")})

    scales: ClassVar[dict[str, dict[str, Any]]] = {"quick": {}, "paper": {}}

    @field_validator("device")
    @classmethod
    def _device_name(cls, v: str) -> str:
        return check_device_name(v)  # the spelling only: the run id keeps the string; core.device.parse builds it

    def hash(self, experiment: str) -> str:
        """Run id: 16 hex digits of the SHA-256 of the experiment name and resolved config. A field declared with
        :func:`added` is left out while it holds its default, so runs stored before it existed keep their ids."""
        values = self.model_dump(mode="json")
        for name, f in type(self).model_fields.items():
            if (f.json_schema_extra or {}).get(ADDED) and values.get(name) == _json(f.default):
                values.pop(name)
        payload = json.dumps({"experiment": experiment, "config": values}, sort_keys=True)
        return hashlib.sha256(payload.encode()).hexdigest()[:16]

    @classmethod
    def with_defaults(
        cls, name: str, scales: dict[str, dict[str, Any]] | None = None, doc: str | None = None, **defaults: Any
    ) -> type[Config]:
        """A subclass named ``name`` whose fields keep their types and constraints but take new defaults.

        One study config serves several figures this way: ``Fig9Config = SimVsTheory.with_defaults(
        "Fig9Config", L=5, activations=(...))``. ``scales`` replaces the inherited scales if given.
        """
        fields: dict[str, Any] = {}
        for key, value in defaults.items():
            if key not in cls.model_fields:
                raise TypeError(f"{cls.__name__} has no field {key!r}")
            info = cls.model_fields[key]
            fields[key] = (info.annotation, FieldInfo.merge_field_infos(info, default=value))
        sub = create_model(name, __base__=cls, __doc__=doc or cls.__doc__, **fields)
        sub.scales = dict(scales) if scales is not None else dict(cls.scales)
        return sub

    @classmethod
    def parameters(cls) -> list[dict[str, Any]]:
        """One row per field for ``attnlab list``: name, type, default, allowed values (a ``Literal``'s choices or
        the field's bounds), the value each scale sets (absent: the default) and the description."""
        rows = []
        for name, f in cls.model_fields.items():
            rows.append(
                {
                    "name": name,
                    "type": _type_name(f.annotation),
                    "default": f.default,
                    "allowed": _allowed(f),
                    **{f"scale_{s}": cls.scales.get(s, {}).get(name, f.default) for s in SCALES},
                    "description": f.description or "",
                }
            )
        return rows


def _type_name(annotation: Any) -> str:
    if typing.get_origin(annotation) is typing.Literal:
        return "choice"
    text = getattr(annotation, "__name__", None) or str(annotation)
    return text.replace("typing.", "")


_BOUNDS = (("gt", ">"), ("ge", "≥"), ("lt", "<"), ("le", "≤"))


def _allowed(f: FieldInfo) -> str:
    """What a field accepts, in words: ``json_schema_extra={"allowed": …}`` where its code validates it, ``a | b``
    for a ``Literal``, ``true | false`` for a flag, ``> 0, ≤ 10`` for bounds, ``each …`` for the elements of a
    tuple, ``or null`` where None is allowed, else ``""``."""
    extra = f.json_schema_extra if isinstance(f.json_schema_extra, dict) else {}
    if extra.get("allowed"):  # a field its code validates (a registry's names, a path): said in words
        return str(extra["allowed"])
    ann, nullable = f.annotation, False
    args = typing.get_args(ann)
    if type(None) in args and len(args) == 2:  # X | None
        ann, nullable = next(a for a in args if a is not type(None)), True
    tail = " or null" if nullable else ""
    if typing.get_origin(ann) is typing.Literal:
        return " | ".join(str(a) for a in typing.get_args(ann)) + tail
    if ann is bool:
        return "true | false" + tail
    bounds = [f"{sign} {getattr(m, attr)}" for m in f.metadata for attr, sign in _BOUNDS if hasattr(m, attr)]
    items = typing.get_args(ann)  # tuple[Annotated[float, Field(gt=0)], ...]: the bounds of each element
    if typing.get_origin(ann) in (tuple, list) and items:
        item = items[0]
        if typing.get_origin(item) is typing.Annotated:
            metas = [x for m in typing.get_args(item)[1:] for x in (m.metadata if isinstance(m, FieldInfo) else [m])]
            each = [f"{sign} {getattr(m, attr)}" for m in metas for attr, sign in _BOUNDS if hasattr(m, attr)]
            bounds += [f"each {', '.join(each)}"] if each else []
        elif typing.get_origin(item) is typing.Literal:
            bounds.append("each " + " | ".join(str(a) for a in typing.get_args(item)))
    return ", ".join(bounds) + (tail if bounds else "")


def parse_value(text: str) -> Any:
    """Parse the value of a ``--set`` pair: int, float, bool, null, YAML list/mapping, else string."""
    s = text.strip()
    for conv in (int, float):
        try:
            return conv(s)
        except ValueError:
            pass
    low = s.lower()
    if low in ("true", "false"):
        return low == "true"
    if low in ("null", "none", "~"):
        return None
    if s[:1] in "[{":
        _check_nesting(s)
        try:
            return _numbers(yaml.load(s, Loader=_YAML_LOADER))
        except yaml.YAMLError as exc:
            detail = " ".join(str(exc).split())[:200]
            raise ConfigError(f"value {_clip(text)} looks like a list/mapping but is not valid YAML: {detail}") \
                from None
    return s


def _numbers(value: Any) -> Any:
    """Inside a YAML list/mapping, a text that reads as a number is that number, as on the command line: YAML
    leaves ``1e308`` and ``nan`` as text, which would otherwise slip past the finite and range checks."""
    if isinstance(value, list):
        return [_numbers(v) for v in value]
    if isinstance(value, dict):
        return {k: _numbers(v) for k, v in value.items()}
    if isinstance(value, str):
        for conv in (int, float):
            try:
                return conv(value.strip())
            except ValueError:
                pass
    return value


MAX_NESTED_CHARS, MAX_DEPTH = 20_000, 32
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _check_nesting(s: str) -> None:
    """A list/mapping value is at most 20 000 characters and 32 levels deep (YAML's parser is slow beyond)."""
    if len(s) > MAX_NESTED_CHARS:
        raise ConfigError(f"value {_clip(s)} holds {len(s)} characters: a list/mapping may hold at most "
                          f"{MAX_NESTED_CHARS}")
    depth = deepest = 0
    for ch in s:
        depth += ch in "[{"
        depth -= ch in "]}"
        deepest = max(deepest, depth)
    if deepest > MAX_DEPTH:
        raise ConfigError(f"value {_clip(s)} is nested {deepest} levels deep: at most {MAX_DEPTH}")


def _clip(value: Any, limit: int = 80) -> str:
    """``repr(value)``, cut to ``limit`` characters: a message never echoes a long value."""
    r = repr(value)
    return r if len(r) <= limit else r[: limit - 1] + "…"


def parse_sets(pairs: Iterable[str]) -> dict[str, Any]:
    """``["H=4", "law=flip"]`` → ``{"H": 4, "law": "flip"}``; a pair without '=' is an error."""
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ConfigError(f"--set {_clip(pair)}: expected KEY=VALUE, e.g. --set H=4")
        out[key] = parse_value(value)
    return out


def load_yaml(path: str | Path) -> dict[str, Any]:
    """Overrides from a YAML file holding one mapping of keys to values."""
    p = Path(path)
    try:
        data = yaml.safe_load(p.read_text())
    except FileNotFoundError:
        raise ConfigError(f"config file {str(p)!r} does not exist") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"config file {str(p)!r} is not valid YAML: {' '.join(str(exc).split())}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"config file {str(p)!r} must hold a mapping of key: value, got {type(data).__name__}")
    return data


def resolve(
    cls: type[Config],
    scale: str = "quick",
    overrides: Mapping[str, Any] | None = None,
    *,
    seed: int | None = None,
    device: str | None = None,
) -> Config:
    """Build ``cls`` at ``scale`` with user ``overrides``; raise :class:`ConfigError` on any problem."""
    if scale not in SCALES:
        raise ConfigError(f"scale {scale!r} is not allowed; allowed: {', '.join(SCALES)}")
    values: dict[str, Any] = dict(cls.scales.get(scale, {}))
    user = dict(overrides or {})
    allowed = list(cls.model_fields)
    for key in user:
        if key not in cls.model_fields:
            raise ConfigError(f"unknown key {_clip(key)} (value {_clip(user[key])}); allowed keys: "
                              f"{', '.join(allowed)}")
    values.update(user)
    for key, value in user.items():
        _finite(key, value)
    if seed is not None:
        values["seed"] = seed
    if device is not None:
        values["device"] = device
    try:
        config = cls(**values)
    except ValidationError as exc:
        raise ConfigError(_one_line(exc, values)) from None
    for key in user:  # after validation too: a text such as 'nan' inside a list became a float on the way
        _finite(key, getattr(config, key))
    return config


def _finite(key: str, value: Any) -> None:
    """NaN and infinity are never parameter values: say so, rather than let a bound check say "should be ≤ 10"."""
    items = value if isinstance(value, list | tuple) else value.values() if isinstance(value, dict) else [value]
    for v in items:
        if isinstance(v, list | tuple | dict):
            _finite(key, v)
        elif isinstance(v, float) and not math.isfinite(v):
            what = "NaN (not a number)" if math.isnan(v) else "infinity"
            raise ConfigError(f"key {key!r} = {_clip(value)}: {what} is not accepted; give a finite number")


def replace(config: Config, **changes: Any) -> Config:
    """A validated copy of ``config`` with ``changes`` (configs are immutable)."""
    return resolve_from(type(config), {**config.model_dump(), **changes})


def resolve_from(cls: type[Config], values: Mapping[str, Any]) -> Config:
    """Validate a complete mapping (e.g. a stored ``config.json``) into ``cls``."""
    unknown = [k for k in values if k not in cls.model_fields]
    if unknown:
        raise ConfigError(f"unknown key {unknown[0]!r}; allowed keys: {', '.join(cls.model_fields)}")
    try:
        return cls(**values)
    except ValidationError as exc:
        raise ConfigError(_one_line(exc, dict(values))) from None


def _one_line(exc: ValidationError, values: Mapping[str, Any]) -> str:
    err = exc.errors()[0]
    loc = err.get("loc") or ()
    key = ".".join(str(p) for p in loc) if loc else "<config>"
    top = str(loc[0]) if loc else None
    value = values.get(top, err.get("input")) if top is not None else err.get("input")
    msg = err.get("msg", "invalid value")
    if msg.startswith("Value error, "):
        msg = msg[len("Value error, ") :]
    more = f" (and {len(exc.errors()) - 1} more problem(s))" if len(exc.errors()) > 1 else ""
    if msg.startswith("key '"):  # a validator's own message already names its key and value
        return f"{msg}{more}".replace("\n", " ")
    return f"key {key!r} = {_clip(value)}: {msg}{more}".replace("\n", " ")
