"""Cutting the part nyla uses out of a vendor's OpenAPI document.

A vendor's whole description is megabytes (Jira's is 2.4 MB); a connector's tests keep only
the operations it calls and the schemas those reach, as one small JSON file with where it
came from (``x-source``: repository, path, commit). A plugin keeps a short script beside
that file (``tests/data/spec/extract.py``) that names the operations and calls
:func:`openapi_subset`, so the file can be cut again from a newer document.

What the subset keeps of each operation: parameters (``$ref`` ones inlined), request body
and answers with their schemas; references into ``components.schemas`` are kept as such,
references elsewhere in the document (ClickUp points into other operations) become named
components. A schema given only as an example becomes the schema of that example
(:func:`nyla.testing.spec_schema.from_example`). Prose, examples and vendor extensions are
left out; each operation gets ``x-docs``, the page that documents it.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from nyla.testing.spec_examples import example_of, reconcile
from nyla.testing.spec_schema import from_example, pointer

#: keys of an operation the subset keeps
_OP_KEYS = ("operationId", "summary", "parameters", "requestBody", "responses", "deprecated")
#: schema keys that carry structure (a schema with none of them is an example at most)
_STRUCTURE = ("type", "properties", "$ref", "allOf", "anyOf", "oneOf", "items", "enum")
_PROSE = ("description", "example", "examples", "externalDocs", "xml", "title")
#: keys whose values are schemas (or lists of them)
_SUBSCHEMA = ("schema", "items", "additionalProperties", "not", "allOf", "anyOf", "oneOf")
#: keys whose values are data, never schemas or prose
_VERBATIM = ("enum", "required", "type", "default", "const", "statuses")
_SCHEMA_SCALARS = ("format", "nullable", "readOnly", "writeOnly", "minimum", "maximum")


class _Collector:
    """Walks operations, gathering the components their schemas reach."""

    def __init__(self, doc: dict[str, Any]) -> None:
        self.doc = doc
        self.schemas: dict[str, Any] = {}
        self._names: dict[str, str] = {}

    def take(self, node: Any, schema: bool = False) -> Any:
        """``node`` with prose dropped, example-only schemas made schemas, and every
        ``$ref`` it reaches collected (and renamed where it pointed outside components).
        ``schema`` says whether ``node`` is a schema (rather than an operation's part)."""
        if isinstance(node, list):
            return [self.take(v, schema) for v in node]
        if not isinstance(node, dict):
            return node
        if "$ref" in node:
            return {"$ref": self._ref(node["$ref"])}
        if schema and _example_only(node):
            return self.take(from_example(_example(node)), True)
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key in _PROSE or (key.startswith("x-") and key != "x-from-example"):
                continue
            if key in ("properties", "patternProperties"):
                out[key] = {name: self.take(sub, True) for name, sub in value.items()}
            elif key in _SUBSCHEMA:
                out[key] = self.take(value, True)
            elif key in _VERBATIM:
                out[key] = value
            else:
                out[key] = self.take(value, schema and key not in _SCHEMA_SCALARS)
        return out

    def _ref(self, ref: str) -> str:
        if ref.startswith("#/components/parameters/"):
            raise ValueError("parameter references are inlined before taking")
        if ref.startswith("#/components/schemas/"):
            name = ref.removeprefix("#/components/schemas/")
        else:
            name = self._names.get(ref) or self._name_for(ref)
            self._names[ref] = name
        if name not in self.schemas:
            self.schemas[name] = {}  # placeholder: a schema may refer to itself
            self.schemas[name] = self.take(pointer(self.doc, ref), True)
        return f"#/components/schemas/{name}"

    def _name_for(self, ref: str) -> str:
        target = pointer(self.doc, ref)
        base = target.get("title") if isinstance(target, dict) else None
        base = re.sub(r"\W", "_", base or ref.rsplit("/", 1)[-1])
        name, n = base, 1
        while name in self.schemas or name in self.doc.get("components", {}).get("schemas", {}):
            n += 1
            name = f"{base}_{n}"
        return name


def _example_only(node: dict[str, Any]) -> bool:
    has_example = "example" in node or bool(node.get("examples"))
    return has_example and not any(k in node for k in _STRUCTURE if k != "type")


def _example(node: dict[str, Any]) -> Any:
    if "example" in node:
        return node["example"]
    return node["examples"][0]


def openapi_subset(
    doc: dict[str, Any],
    operations: list[tuple[str, str]],
    *,
    source: dict[str, Any],
    docs: Callable[[str, str, dict[str, Any]], str],
    vendor: dict[str, Any] | None = None,
    corrections: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The part of the OpenAPI ``doc`` that ``operations`` (``(METHOD, path)``) need.

    ``source`` names where ``doc`` came from; ``docs(method, path, op)`` gives an
    operation's documentation page; ``vendor`` becomes ``x-vendor`` (vendor-wide errors,
    projection; its schemas are collected too). ``corrections`` (:func:`correct`) mend
    places where the document contradicts itself; they are kept in ``x-corrections``."""
    doc = correct(doc, corrections or [])
    widened = _reconcile(doc, operations)
    taker = _Collector(doc)
    paths: dict[str, Any] = {}
    for method, path in operations:
        raw = doc["paths"][path][method.lower()]
        op = {k: copy.deepcopy(raw[k]) for k in _OP_KEYS if k in raw}
        shared = doc["paths"][path].get("parameters", [])
        params = [_inline(doc, p) for p in [*shared, *op.get("parameters", [])]]
        op["parameters"] = [_param(p) for p in params]
        op = taker.take(op)
        op["x-docs"] = docs(method, path, raw)
        paths.setdefault(path, {})[method.lower()] = op
    extra = taker.take(vendor or {})
    info = doc.get("info", {})
    return {
        "openapi": doc.get("openapi", "3.0.0"),
        "info": {"title": info.get("title", ""), "version": info.get("version", "")},
        "x-source": source,
        "x-corrections": [*(corrections or []), *widened],
        "x-vendor": extra,
        "paths": paths,
        "components": {"schemas": dict(sorted(taker.schemas.items()))},
    }


def _reconcile(doc: dict[str, Any], operations: list[tuple[str, str]]) -> list[str]:
    """Widen each answer's schema to admit the example the same operation documents."""
    notes: list[str] = []
    for method, path in operations:
        for status, reply in doc["paths"][path][method.lower()].get("responses", {}).items():
            for kind, content in reply.get("content", {}).items():
                example = example_of(content)
                if example is not None and "schema" in content:
                    where = f"{method} {path} {status} {kind}"
                    notes += reconcile(doc, content["schema"], example, where)
    return notes


def correct(doc: dict[str, Any], corrections: list[dict[str, Any]]) -> dict[str, Any]:
    """A copy of ``doc`` with each correction applied: ``{"at": <JSON pointer>, "why": ...}``
    and one of ``"rename": <new key>``, ``"set": <value>``, ``"delete": true``. Each says
    why (the vendor's own page that shows the document wrong)."""
    doc = copy.deepcopy(doc)
    for fix in corrections:
        parent_ref, _, last = fix["at"].rpartition("/")
        parent = pointer(doc, parent_ref)
        key = unquote(last).replace("~1", "/").replace("~0", "~")
        if key not in parent and "set" not in fix:
            raise KeyError(f"correction {fix['at']!r} names nothing in the document")
        if "rename" in fix:
            parent[fix["rename"]] = parent.pop(key)
        elif "set" in fix:
            parent[key] = fix["set"]
        elif fix.get("delete"):
            del parent[key]
    return doc


def _inline(doc: dict[str, Any], param: dict[str, Any]) -> dict[str, Any]:
    return copy.deepcopy(pointer(doc, param["$ref"])) if "$ref" in param else param


def _param(raw: dict[str, Any]) -> dict[str, Any]:
    keep = ("name", "in", "required", "schema", "style", "explode")
    return {k: raw[k] for k in keep if k in raw}


def write_spec(path: str | Path, spec: dict[str, Any]) -> None:
    """Write an extracted spec as stable, reviewable JSON."""
    text = json.dumps(spec, indent=1, sort_keys=False, ensure_ascii=False)
    Path(path).write_text(text + "\n", encoding="utf-8")
