"""Google's discovery documents as the OpenAPI subset :mod:`nyla.testing.vendor_spec` checks.

Google describes each API in a discovery document
(https://developers.google.com/discovery/v1/reference/apis), not OpenAPI: methods under
resources, each with its HTTP method, path, parameters and the schema ids of its request and
answer, plus parameters every method takes (``fields``, ``alt``, ``prettyPrint``, ...).
:func:`discovery_subset` turns the methods a connector calls into the same shape
:func:`nyla.testing.spec_extract.openapi_subset` writes, so one validator reads both:

- path: ``/`` + ``servicePath`` + the method's ``path`` (``{+name}`` may span segments);
- parameters: the method's and the document's own; ``repeated`` ones are arrays given as
  repeated keys; ``integer`` / ``boolean`` / ``enum`` / ``pattern`` kept;
- answer: ``200`` with the response schema (``204`` without one for ``DELETE``); a method
  that ``supportsMediaDownload`` also answers bytes with ``alt=media``;
- schemas: discovery types are JSON Schema types already (64-bit integers are strings with
  ``format: int64``); ``any`` allows anything; ``additionalProperties`` keeps a map open.
  Google leaves empty fields out rather than sending ``null``, so nothing is nullable.
"""

from __future__ import annotations

from typing import Any

#: discovery parameter types as JSON Schema types
_TYPES = {"string": "string", "integer": "integer", "number": "number", "boolean": "boolean"}


def find_method(doc: dict[str, Any], method_id: str) -> dict[str, Any]:
    """The method ``method_id`` (``gmail.users.messages.list``) of a discovery document."""
    stack = [doc]
    while stack:
        node = stack.pop()
        for method in node.get("methods", {}).values():
            if method.get("id") == method_id:
                return dict(method)
        stack.extend(node.get("resources", {}).values())
    raise KeyError(f"{method_id} is not in {doc.get('id')}")


def _param(name: str, raw: dict[str, Any]) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": _TYPES.get(raw.get("type", "string"), "string")}
    for key in ("enum", "pattern", "format"):
        if key in raw:
            schema[key] = raw[key]
    if raw.get("repeated"):
        schema = {"type": "array", "items": schema}
    return {
        "name": name,
        "in": raw.get("location", "query"),
        "required": bool(raw.get("required")),
        "schema": schema,
    }


def schema_of(raw: Any) -> Any:
    """A discovery schema as JSON Schema (``$ref`` to ``#/components/schemas``)."""
    if not isinstance(raw, dict):
        return raw
    if "$ref" in raw:
        return {"$ref": f"#/components/schemas/{raw['$ref']}"}
    out: dict[str, Any] = {}
    kind = raw.get("type")
    if kind and kind != "any":
        out["type"] = kind
    for key in ("enum", "format", "pattern"):
        if key in raw:
            out[key] = raw[key]
    if "properties" in raw:
        out["properties"] = {k: schema_of(v) for k, v in raw["properties"].items()}
    if "items" in raw:
        out["items"] = schema_of(raw["items"])
    if "additionalProperties" in raw:
        out["additionalProperties"] = schema_of(raw["additionalProperties"])
    return out


def _refs(node: Any, found: set[str]) -> None:
    if isinstance(node, dict):
        if "$ref" in node and isinstance(node["$ref"], str):
            found.add(node["$ref"])
        for value in node.values():
            _refs(value, found)
    elif isinstance(node, list):
        for value in node:
            _refs(value, found)


def _schemas(doc: dict[str, Any], roots: set[str]) -> dict[str, Any]:
    """The schemas ``roots`` name and every one they reach."""
    wanted, todo = set(), list(roots)
    while todo:
        name = todo.pop()
        if name in wanted:
            continue
        wanted.add(name)
        found: set[str] = set()
        _refs(doc["schemas"][name], found)
        todo.extend(found - wanted)
    return {name: schema_of(doc["schemas"][name]) for name in sorted(wanted)}


def _operation(doc: dict[str, Any], method: dict[str, Any], docs: str) -> dict[str, Any]:
    shared = doc.get("parameters", {})
    params = {**shared, **method.get("parameters", {})}
    op: dict[str, Any] = {
        "operationId": method["id"],
        "parameters": [_param(name, raw) for name, raw in params.items()],
        "x-docs": docs,
    }
    if "request" in method:
        op["requestBody"] = {
            "required": True,
            "content": {"application/json": {"schema": schema_of(method["request"])}},
        }
    if "response" in method:
        content = {"application/json": {"schema": schema_of(method["response"])}}
        if method.get("supportsMediaDownload"):
            content["*/*"] = {}
        op["responses"] = {"200": {"content": content}}
    elif method.get("httpMethod") == "DELETE":
        op["responses"] = {"204": {}}
    else:
        op["responses"] = {"200": {"content": {"*/*": {}}}}
    return op


def discovery_subset(
    doc: dict[str, Any],
    method_ids: list[str],
    *,
    source: dict[str, Any],
    vendor: dict[str, Any],
    docs_url: str,
) -> dict[str, Any]:
    """The OpenAPI-shaped subset of ``doc`` for ``method_ids``. ``docs_url`` is formatted
    with ``resource`` and ``method`` (``users.messages`` / ``list``) for each page."""
    paths: dict[str, Any] = {}
    roots: set[str] = set()
    for method_id in method_ids:
        method = find_method(doc, method_id)
        resource, _, name = method_id.split(".", 1)[1].rpartition(".")
        page = docs_url.format(resource=resource, method=name)
        path = "/" + doc.get("servicePath", "") + method["path"]
        paths.setdefault(path, {})[method["httpMethod"].lower()] = _operation(doc, method, page)
        _refs({k: method.get(k) for k in ("request", "response")}, roots)
    return {
        "openapi": "3.1.0",
        "info": {"title": doc.get("title", doc.get("id", "")), "version": doc.get("revision", "")},
        "x-source": {**source, "discovery": doc.get("id"), "revision": doc.get("revision")},
        "x-vendor": vendor,
        "paths": paths,
        "components": {"schemas": _schemas(doc, {r for r in roots if "/" not in r})},
    }
