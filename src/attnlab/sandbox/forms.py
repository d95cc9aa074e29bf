"""The start form: which fields a study shows, their defaults at a scale, and validation by the CLI's own path.

Values arrive as the page's text; each string is parsed exactly like ``--set KEY=VALUE`` (``parse_value``), an
empty one means "keep the default". ``validate`` resolves the config with ``core.config.resolve`` (the CLI's
call, the experiment's pydantic model) and, when it fails, lists every problem by field so that the page shows
each one next to its input.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from attnlab.core.config import Config, ConfigError, parse_value, resolve
from attnlab.core.experiment import Experiment


@dataclass(frozen=True)
class FieldError:
    field: str
    value: Any
    message: str  # one line naming the key, the value and what is allowed

    def to_json(self) -> dict[str, Any]:
        return {"field": self.field, "value": self.value, "message": self.message}


def parse_values(values: Mapping[str, Any]) -> dict[str, Any]:
    """Page values → config overrides: strings parsed as ``--set`` values, empty strings dropped."""
    out: dict[str, Any] = {}
    for key, value in values.items():
        if isinstance(value, str):
            if not value.strip():
                continue
            value = parse_value(value)
        out[key] = value
    return out


def validate(exp: Experiment, scale: str, values: Mapping[str, Any]) -> tuple[Config | None, list[FieldError]]:
    """The resolved config, or every problem found (none is started or written either way)."""
    overrides, errors = {}, []
    for key, value in values.items():
        try:
            overrides.update(parse_values({key: value}))
        except ConfigError as exc:
            errors.append(FieldError(key, value, f"key {key!r}: {' '.join(str(exc).split())}"))
    if errors:
        return None, errors
    unknown = [k for k in overrides if k not in exp.config.model_fields]
    if unknown:
        allowed = ", ".join(exp.config.model_fields)
        return None, [FieldError(k, overrides[k], f"unknown key {k!r}; allowed keys: {allowed}") for k in unknown]
    try:
        return resolve(exp.config, scale, overrides), []
    except ConfigError as exc:
        first = str(exc)
    errors = _all_errors(exp.config, scale, overrides)
    if not errors or not first.startswith(errors[0].message):  # the CLI's line always comes first
        errors = [FieldError(_field_of(first) or "<config>", None, first),
                  *[e for e in errors if e.message != first]]
    return None, errors


def _all_errors(cls: type[Config], scale: str, overrides: dict[str, Any]) -> list[FieldError]:
    values = {**cls.scales.get(scale, {}), **overrides}
    try:
        cls(**values)
    except ValidationError as exc:
        out = []
        for err in exc.errors():
            loc = err.get("loc") or ()
            msg = str(err.get("msg", "invalid value")).removeprefix("Value error, ")
            if loc:
                key = str(loc[0])
                value = values.get(key, err.get("input"))
                text = msg if msg.startswith("key '") else f"key {'.'.join(map(str, loc))!r} = {value!r}: {msg}"
                out.append(FieldError(key, value, " ".join(text.split())))
            else:
                key = _field_of(msg) or "<config>"
                out.append(FieldError(key, values.get(key), " ".join(msg.split())))
        firsts: dict[str, FieldError] = {}  # one message a field: pydantic follows a bad element with its own
        for e in out:                        # complaint about what is left ("at least 1 item, not 0")
            firsts.setdefault(e.field, e)
        return list(firsts.values())
    except (ConfigError, ValueError) as exc:
        return [FieldError(_field_of(str(exc)) or "<config>", None, " ".join(str(exc).split()))]
    return []


def _field_of(message: str) -> str | None:
    m = re.match(r"(?:--set )?key '([^']+)'", message) or re.search(r"\bkey '([^']+)'", message)
    return m.group(1).split(".")[0] if m else None


def fields(exp: Experiment, scale: str, names: tuple[str, ...]) -> list[dict[str, Any]]:
    """Form rows for ``names``: default at ``scale``, kind (choice / bool / text), choices, constraint hint."""
    defaults = resolve(exp.config, scale).model_dump(mode="json")
    schema = exp.config.model_json_schema()
    props = schema.get("properties", {})
    rows = []
    for name in names:
        if name not in exp.config.model_fields:
            raise ConfigError(f"form field {name!r} is not a parameter of {exp.key}")
        prop = _unwrap(props.get(name, {}), schema)
        enum = prop.get("enum")
        kind = "choice" if enum else "bool" if prop.get("type") == "boolean" else "text"
        rows.append({"name": name, "kind": kind, "default": defaults[name], "choices": enum,
                     "description": exp.config.model_fields[name].description or "", "hint": _hint(prop)})
    return rows


def _unwrap(prop: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """The non-null branch of an Optional field and a resolved $ref (Literal aliases)."""
    if "anyOf" in prop:
        branches = [b for b in prop["anyOf"] if b.get("type") != "null"]
        prop = {**prop, **(branches[0] if branches else {})}
    ref = prop.get("$ref")
    if ref:
        prop = {**prop, **schema.get("$defs", {}).get(ref.rsplit("/", 1)[-1], {})}
    return prop


def _hint(prop: dict[str, Any]) -> str:
    parts = [str(prop.get("type", ""))]
    for key, sym in (("minimum", "≥"), ("exclusiveMinimum", ">"), ("maximum", "≤"), ("exclusiveMaximum", "<")):
        if key in prop:
            parts.append(f"{sym} {prop[key]:g}")
    if prop.get("type") == "array":
        parts = ["list, e.g. [a, b]"]
    return " ".join(p for p in parts if p)
