"""A quick yes for the tool schemas that are plainly valid JSON Schema (2020-12).

Plugin discovery checks every tool's argument schema against the 2020-12 meta-schema before a
model API sees it. jsonschema's check resolves the meta-schema's dynamic references for every
keyword (about 10 ms per tool, half of a discovery with the installed plugins), although the
schemas tools declare (pydantic's output: ``type``, ``properties``, ``anyOf``, ``title``,
``default``, ``$defs`` with local ``$ref`` s ...) use a handful of keywords whose rules are
simple. :func:`plainly_valid` accepts a schema only when every keyword in it is one of those
and holds a value the meta-schema allows; anything else (a keyword it does not know, a
``$ref`` elsewhere than ``#/$defs/``, a wrong value) answers ``False`` and the caller runs the
full check, which also words the error.
"""

from __future__ import annotations

import re
from typing import Any

_TYPES = frozenset({"array", "boolean", "integer", "null", "number", "object", "string"})
_LOCAL_REF = re.compile(r"#/\$defs/[A-Za-z0-9_.-]+")


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _is_type(value: Any) -> bool:
    if isinstance(value, str):
        return value in _TYPES
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(v, str) and v in _TYPES for v in value)
        and len(set(value)) == len(value)
    )


def _is_schema_list(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(_valid(v) for v in value)


def _is_properties(value: Any) -> bool:
    return isinstance(value, dict) and all(
        isinstance(k, str) and _valid(v) for k, v in value.items()
    )


def _is_local_ref(value: Any) -> bool:
    # a URI reference under any format checker ("uri-reference"): pydantic's "#/$defs/Model"
    return isinstance(value, str) and _LOCAL_REF.fullmatch(value) is not None


def _is_regex(value: Any) -> bool:
    # what the meta-schema's "format": "regex" asks of a pattern, as jsonschema checks it
    if not isinstance(value, str):
        return False
    try:
        re.compile(value)
    except re.error:
        return False
    return True


def _is_names(value: Any) -> bool:
    return (
        isinstance(value, list)
        and all(isinstance(v, str) for v in value)
        and len(set(value)) == len(value)
    )


#: keyword -> what the meta-schema requires of its value
_RULES: dict[str, Any] = {
    "type": _is_type,
    "title": lambda v: isinstance(v, str),
    "description": lambda v: isinstance(v, str),
    "$comment": lambda v: isinstance(v, str),
    "format": lambda v: isinstance(v, str),
    "default": lambda v: True,
    "const": lambda v: True,
    "examples": lambda v: isinstance(v, list),
    "enum": lambda v: isinstance(v, list),
    "deprecated": lambda v: isinstance(v, bool),
    "readOnly": lambda v: isinstance(v, bool),
    "writeOnly": lambda v: isinstance(v, bool),
    "uniqueItems": lambda v: isinstance(v, bool),
    "properties": _is_properties,
    "$defs": _is_properties,
    "$ref": _is_local_ref,
    "pattern": _is_regex,
    "additionalProperties": lambda v: _valid(v),
    "items": lambda v: _valid(v),
    "required": _is_names,
    "anyOf": _is_schema_list,
    "oneOf": _is_schema_list,
    "allOf": _is_schema_list,
    "minimum": _is_number,
    "maximum": _is_number,
    "exclusiveMinimum": _is_number,
    "exclusiveMaximum": _is_number,
    "multipleOf": lambda v: _is_number(v) and v > 0,
    "minLength": _is_count,
    "maxLength": _is_count,
    "minItems": _is_count,
    "maxItems": _is_count,
    "minProperties": _is_count,
    "maxProperties": _is_count,
}


def plainly_valid(schema: Any) -> bool:
    """``True`` when ``schema`` is valid JSON Schema 2020-12 by the simple rules above;
    ``False`` means "not known": run the full meta-schema check."""
    try:
        return _valid(schema)
    except RecursionError:
        return False


def _valid(schema: Any) -> bool:
    if isinstance(schema, bool):
        return True
    if not isinstance(schema, dict):
        return False
    for keyword, value in schema.items():
        rule = _RULES.get(keyword)
        if rule is None or not rule(value):
            return False
    return True
