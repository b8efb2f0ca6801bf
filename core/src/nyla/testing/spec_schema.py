"""OpenAPI schemas as strict JSON Schema, for validating what fakes answer and nyla sends.

A vendor's OpenAPI document says which fields an object has; it rarely says that no other
field may appear (``additionalProperties`` is left out). A fake that invents a field would
pass such a schema, so :func:`strict` closes every object that lists its properties
(``unevaluatedProperties: false``, which sees through ``allOf`` / ``$ref``), unless the
document leaves it open on purpose (``additionalProperties`` given). OpenAPI 3.0's
``nullable`` becomes a ``"null"`` type, and ``#/components/schemas/X`` becomes
``#/$defs/X``, so one JSON Schema 2020-12 document holds a whole spec.

Some vendors document a payload by an example only (ClickUp's Get Task). :func:`from_example`
turns such an example into a schema of exactly the fields it shows, marked
``x-from-example`` so a reader knows the document gave no more.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote

#: the keys whose values are schemas, and those whose values are lists or maps of schemas
_ONE = ("items", "not", "additionalProperties", "unevaluatedProperties", "contains")
_MANY = ("allOf", "anyOf", "oneOf", "prefixItems")
_MAP = ("properties", "patternProperties", "$defs")
#: keys an object schema never needs for validation (they only make the data files larger)
_DROP = ("description", "example", "examples", "xml", "externalDocs", "contentEncoding")


def strict(schema: Any, *, close: bool = True) -> Any:
    """``schema`` (OpenAPI 3.0 or 3.1) as closed JSON Schema 2020-12 (see the module doc).

    ``close=False`` leaves the top object open: for the members of an ``allOf`` of several
    objects, whose fields the parent closes together."""
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _DROP or (key.startswith("x-") and key != "x-from-example"):
            continue
        if key == "$ref":
            out[key] = _ref(value, close)
        elif key in _ONE:
            out[key] = strict(value)
        elif key in _MANY:
            several = key == "allOf" and len(value) > 1
            # documents write oneOf where any one fits (ClickUp: an object, a string, or
            # anything); what is checked here is fields and types, not exclusivity
            out["anyOf" if key == "oneOf" else key] = [strict(v, close=not several) for v in value]
        elif key in _MAP:
            out[key] = {k: strict(v) for k, v in value.items()}
        else:
            out[key] = value
    if out.pop("nullable", False):
        out = _nullable(out)
    if close and _is_object(out) and not _open(out):
        out["unevaluatedProperties"] = False
    return out


def _ref(value: str, close: bool) -> str:
    target = value.replace("#/components/schemas/", "#/$defs/")
    return target if close else f"{target}~open"


def _is_object(schema: dict[str, Any]) -> bool:
    return "properties" in schema or (schema.get("type") == "object" and "allOf" in schema)


def _open(schema: dict[str, Any]) -> bool:
    return "additionalProperties" in schema or "unevaluatedProperties" in schema


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    kind = schema.get("type")
    if isinstance(kind, str):
        return {**schema, "type": [kind, "null"]}
    if isinstance(kind, list):
        return {**schema, "type": [*kind, "null"]}
    return {"anyOf": [schema, {"type": "null"}]}


def pointer(doc: Any, ref: str) -> Any:
    """The node a local JSON pointer (``#/a/b~1c``) names in ``doc``."""
    node = doc
    for part in ref.removeprefix("#").removeprefix("/").split("/"):
        key = unquote(part).replace("~1", "/").replace("~0", "~")
        node = node[int(key)] if isinstance(node, list) else node[key]
    return node


def strict_defs(schemas: dict[str, Any]) -> dict[str, Any]:
    """A spec's ``components.schemas`` as closed ``$defs``, each also as ``<name>~open``
    (what a multi-member ``allOf`` refers to, see :func:`strict`)."""
    defs = {name: strict(schema) for name, schema in schemas.items()}
    defs.update({f"{name}~open": strict(schema, close=False) for name, schema in schemas.items()})
    return defs


def from_example(example: Any) -> dict[str, Any]:
    """A schema of exactly the fields and JSON types ``example`` shows (``null`` and empty
    lists say nothing about the type, so they allow any)."""
    schema = _from_example(example)
    schema["x-from-example"] = True
    return schema


def _from_example(value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    if isinstance(value, bool):
        return {"type": "boolean"}
    if isinstance(value, int | float):
        return {"type": "number"}
    if isinstance(value, str):
        return {"type": "string"}
    if isinstance(value, list):
        items = [_from_example(v) for v in value]
        return {"type": "array", "items": _merge(items)} if items else {"type": "array"}
    props = {k: _from_example(v) for k, v in value.items()}
    return {"type": "object", "properties": props}


def _merge(schemas: list[dict[str, Any]]) -> dict[str, Any]:
    """One schema for the items of an example list: objects merge their fields; items of
    different JSON types allow any."""
    typed = [s for s in schemas if s]
    if not typed:
        return {}
    kinds = {s.get("type") for s in typed}
    if kinds != {"object"}:
        return typed[0] if len(kinds) == 1 else {}
    props: dict[str, Any] = {}
    for s in typed:
        for name, sub in s["properties"].items():
            props[name] = _merge([props[name], sub]) if name in props else sub
    return {"type": "object", "properties": props}
