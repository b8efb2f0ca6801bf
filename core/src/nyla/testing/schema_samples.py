"""Arguments generated from a tool's JSON schema, as pydantic-ai's ``TestModel`` does: the
toolbox contract calls every tool with them, so a schema the model is shown and the
validator the kernel applies cannot drift apart unnoticed."""

from __future__ import annotations

from typing import Any

#: string formats with a value that satisfies them
_FORMATS = {
    "date": "2026-01-15",
    "date-time": "2026-01-15T10:30:00Z",
    "time": "10:30:00",
    "email": "ada@example.ch",
    "uri": "https://example.ch/a",
    "url": "https://example.ch/a",
    "uuid": "123e4567-e89b-42d3-a456-426614174000",
}


class CannotSample(Exception):
    """The schema asks for something this generator does not make (a ``pattern``)."""


def sample_arguments(schema: dict[str, Any], *, full: bool = False) -> dict[str, Any]:
    """A JSON object valid under ``schema``: the required properties only, or every
    property when ``full``. Raises :class:`CannotSample` for constraints it cannot meet."""
    value = _sample(schema, schema, full=full, depth=0)
    if not isinstance(value, dict):
        raise CannotSample("the schema is not an object")
    return value


def _resolve(node: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    ref = node.get("$ref")
    if not isinstance(ref, str):
        return node
    if not ref.startswith("#/"):
        raise CannotSample(f"non-local $ref {ref}")
    target: Any = root
    for part in ref[2:].split("/"):
        target = target[part]
    return {**target, **{k: v for k, v in node.items() if k != "$ref"}}


def _sample(node: Any, root: dict[str, Any], *, full: bool, depth: int) -> Any:
    if depth > 8:
        raise CannotSample("schema nested too deeply")
    if not isinstance(node, dict) or not node:
        return "sample"
    node = _resolve(node, root)
    if "const" in node:
        return node["const"]
    if node.get("enum"):
        return node["enum"][0]
    for key in ("anyOf", "oneOf"):
        if node.get(key):
            options = [o for o in node[key] if _resolve(o, root).get("type") != "null"]
            return _sample((options or node[key])[0], root, full=full, depth=depth + 1)
    if node.get("allOf"):
        merged: dict[str, Any] = {}
        for part in node["allOf"]:
            merged.update(_resolve(part, root))
        return _sample(merged, root, full=full, depth=depth + 1)
    kind = node.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object" or (kind is None and "properties" in node):
        return _object(node, root, full=full, depth=depth)
    if kind == "array":
        count = max(int(node.get("minItems", 1)), 1)
        return [_sample(node.get("items", {}), root, full=full, depth=depth + 1)] * count
    if kind in ("integer", "number"):
        return _number(node, kind)
    if kind == "boolean":
        return True
    if kind == "null":
        return None
    return _string(node)


def _object(node: dict[str, Any], root: dict[str, Any], *, full: bool, depth: int) -> Any:
    properties: dict[str, Any] = node.get("properties", {})
    required = set(node.get("required", []))
    out = {}
    for name, sub in properties.items():
        if name in required or full:
            try:
                out[name] = _sample(sub, root, full=full, depth=depth + 1)
            except CannotSample:
                if name in required:
                    raise
    return out


def _number(node: dict[str, Any], kind: str) -> int | float:
    low = node.get("minimum", node.get("exclusiveMinimum"))
    high = node.get("maximum", node.get("exclusiveMaximum"))
    value: float = 1
    if low is not None:
        value = low + (1 if "exclusiveMinimum" in node and "minimum" not in node else 0)
    if high is not None and value > high:
        value = high - (1 if "exclusiveMaximum" in node and "maximum" not in node else 0)
    return int(value) if kind == "integer" else float(value)


def _string(node: dict[str, Any]) -> str:
    if node.get("pattern"):
        raise CannotSample(f"pattern {node['pattern']!r}")
    text = _FORMATS.get(str(node.get("format", "")), "sample")
    low = int(node.get("minLength", 0))
    high = node.get("maxLength")
    if len(text) < low:
        text = text + "x" * (low - len(text))
    if high is not None and len(text) > int(high):
        text = text[: int(high)]
    return text
