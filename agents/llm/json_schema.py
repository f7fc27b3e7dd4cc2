"""The JSON-schema subset the local model's grammars are built from, and a validator for it:
every output is checked here, never guessed; a schema using a keyword outside the subset is
refused before the model runs (agents/llm/engine.py)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from gateway.errors import HealthGWError


class SchemaError(HealthGWError, ValueError):
    """The schema uses a keyword this validator does not check."""


_CHECKED = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "enum",
        "const",
        "minLength",
        "maxLength",
        "items",
        "minItems",
        "maxItems",
        "minimum",
        "maximum",
    }
)
_ANNOTATIONS = frozenset({"title", "description", "$schema", "$comment", "default", "examples"})
_TYPE_NAMES = frozenset({"object", "array", "string", "boolean", "integer", "number", "null"})


def check_schema(schema: Mapping[str, Any]) -> None:
    """Raise SchemaError if `schema` uses anything `validate` would not enforce."""
    if not isinstance(schema, Mapping):
        raise SchemaError("a schema must be an object")
    unknown = set(schema) - _CHECKED - _ANNOTATIONS
    if unknown:
        raise SchemaError(f"unsupported keyword(s): {', '.join(sorted(unknown))}")
    types = schema.get("type")
    names = types if isinstance(types, list) else [types] if types is not None else []
    for t in names:
        if t not in _TYPE_NAMES:
            raise SchemaError(f"unknown type {t!r}")
    if "enum" in schema and not isinstance(schema["enum"], list):
        raise SchemaError("enum must be a list")
    for sub in (schema.get("properties") or {}).values():
        check_schema(sub)
    for key in ("items", "additionalProperties"):
        sub = schema.get(key)
        if isinstance(sub, Mapping):
            check_schema(sub)
        elif sub is not None and not isinstance(sub, bool):
            raise SchemaError(f"{key} must be a schema or a boolean")


def _is_type(value: Any, t: str) -> bool:
    if t == "object":
        return isinstance(value, dict)
    if t == "array":
        return isinstance(value, list)
    if t == "string":
        return isinstance(value, str)
    if t == "boolean":
        return isinstance(value, bool)
    if t == "null":
        return value is None
    if isinstance(value, bool):  # JSON true is not a number
        return False
    if t == "integer":
        return isinstance(value, int) or (isinstance(value, float) and value.is_integer())
    if t == "number":
        return isinstance(value, int) or (isinstance(value, float) and math.isfinite(value))
    return False


def _json_equal(a: Any, b: Any) -> bool:
    """Equality as JSON means it: True is not 1, 1 is 1.0."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_json_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    return type(a) is type(b) and bool(a == b)


def validate(value: Any, schema: Mapping[str, Any], path: str = "$") -> list[str]:
    """Everything wrong with `value` under `schema` (empty list: valid).

    Supports type (one or a list), enum, const, minLength/maxLength, properties, required,
    additionalProperties (false or a schema), items, minItems/maxItems, minimum/maximum."""
    errors: list[str] = []
    types = schema.get("type")
    if types is not None:
        names = types if isinstance(types, list) else [types]
        if not any(_is_type(value, t) for t in names):
            return [f"{path}: expected {'|'.join(names)}, got {type(value).__name__}"]
    if "const" in schema and not _json_equal(value, schema["const"]):
        errors.append(f"{path}: must be {schema['const']!r}")
    if "enum" in schema and not any(_json_equal(value, v) for v in schema["enum"]):
        errors.append(f"{path}: {value!r} not in enum")
    if isinstance(value, str):
        if "maxLength" in schema and len(value) > int(schema["maxLength"]):
            errors.append(f"{path}: longer than {schema['maxLength']}")
        if "minLength" in schema and len(value) < int(schema["minLength"]):
            errors.append(f"{path}: shorter than {schema['minLength']}")
    if _is_type(value, "number"):
        if "minimum" in schema and value < schema["minimum"]:
            errors.append(f"{path}: below {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            errors.append(f"{path}: above {schema['maximum']}")
    if isinstance(value, dict):
        props: Mapping[str, Any] = schema.get("properties") or {}
        for key in schema.get("required") or ():
            if key not in value:
                errors.append(f"{path}: missing {key!r}")
        extra = schema.get("additionalProperties", True)
        for key, item in value.items():
            if key in props:
                errors.extend(validate(item, props[key], f"{path}.{key}"))
            elif extra is False:
                errors.append(f"{path}: unexpected {key!r}")
            elif isinstance(extra, Mapping):
                errors.extend(validate(item, extra, f"{path}.{key}"))
    if isinstance(value, list):
        if "minItems" in schema and len(value) < int(schema["minItems"]):
            errors.append(f"{path}: fewer than {schema['minItems']} items")
        if "maxItems" in schema and len(value) > int(schema["maxItems"]):
            errors.append(f"{path}: more than {schema['maxItems']} items")
        items = schema.get("items")
        if isinstance(items, Mapping):
            for i, item in enumerate(value):
                errors.extend(validate(item, items, f"{path}[{i}]"))
    return errors
