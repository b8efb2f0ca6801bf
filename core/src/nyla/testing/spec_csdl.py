"""Microsoft Graph's CSDL metadata as the OpenAPI subset :mod:`nyla.testing.vendor_spec` checks.

Graph describes itself in OData CSDL (``$metadata``, kept in microsoftgraph/msgraph-metadata;
Graph's OpenAPI document is generated from it). CSDL has no list of URLs: a URL is a walk
from the entity container through navigation properties, keys, bound functions and actions
(OData URL conventions, https://docs.oasis-open.org/odata/odata/v4.01/odata-v4.01-part2-url-conventions.html).
:func:`csdl_subset` walks each path template a connector uses (:class:`GraphPath`) and writes
what the walk proves: the answer's type, the request body of a create, update or action, the
OData query options the target takes (``$select`` / ``$orderby`` / ``$expand`` only with the
type's own property names), and closed schemas of the types reached.

What CSDL does not say comes from the page of each operation, given with it: the status of
a success (``202`` for send), query parameters beyond OData's (``search`` on sites,
``token`` on driveItem delta), and path-based addressing (``root:/a/b:``, which Graph
documents on https://learn.microsoft.com/en-us/graph/api/resources/driveitem).
Instance annotations are allowed exactly where Graph documents them: ``@odata.type``,
``@odata.etag``, ``@odata.id`` on objects, ``@removed`` on delta items
(https://learn.microsoft.com/en-us/graph/delta-query-overview), and the collection's
``@odata.context`` / ``nextLink`` / ``deltaLink`` / ``count``
(https://learn.microsoft.com/en-us/graph/paging).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from typing import Any

from nyla.testing.spec_csdl_types import CsdlModel

_EDM = "{http://docs.oasis-open.org/odata/ns/edm}"
#: OData system query options of a collection and of a single entity
_MANY = ("$top", "$skip", "$search", "$filter", "$count", "$orderby", "$select", "$expand")
_ONE = ("$select", "$expand")
#: continuation tokens Graph puts in next and delta links (paging and delta query pages)
_PAGING = ("$skiptoken",)
_DELTA = ("$skiptoken", "$deltatoken")


@dataclass
class GraphPath:
    """One operation a connector calls: ``method``, a path ``template`` (``{x}`` a key or
    id, ``root:/{+path}:`` a path-addressed driveItem), its documentation page, and what
    the page adds to CSDL (``status`` of success, ``query`` parameters with schemas)."""

    method: str
    template: str
    docs: str
    status: int | None = None
    query: dict[str, Any] = field(default_factory=dict)
    #: further statuses its page documents (``302`` to a download URL)
    also: tuple[int, ...] = ()


@dataclass
class _Target:
    """Where a walk has got to: a type (``many``: a collection of it), or a stream."""

    type: str | None
    many: bool = False
    stream: bool = False
    delta: bool = False
    action: ET.Element | None = None


def _walk(model: CsdlModel, template: str) -> _Target:
    parts = [p for p in re.split(r"/(?![^{]*\})", template.strip("/")) if p]
    first = model.container(parts[0])
    at = _Target(first[0], many=first[1])
    index = 1
    while index < len(parts):
        part = parts[index]
        index += 1
        if part.startswith("{") and at.many:
            at = _Target(at.type)
        elif part == "root:" or part.startswith("root:"):
            # root:/a/b: addresses a driveItem by path (driveitem resource page)
            index += 0 if part.endswith(":") and part != "root:" else 1
            at = _Target("microsoft.graph.driveItem")
        elif part == "$value":
            at = _Target(None, stream=True)
        else:
            at = _step(model, at, part)
    return at


def _step(model: CsdlModel, at: _Target, part: str) -> _Target:
    name = part.split("(", 1)[0]
    if at.type and not at.many:
        found = model.member(at.type, name)
        if found is not None:
            kind, many = found
            if kind == "Edm.Stream":
                return _Target(None, stream=True)
            return _Target(kind, many=many)
    bound = model.bound(name, at.type or "", at.many)
    if bound is None:
        raise KeyError(f"{part!r} leads nowhere from {at.type} (many={at.many})")
    returns = bound.find(f"{_EDM}ReturnType")
    if returns is None:
        return _Target(None, action=bound)
    kind, many = model.split(returns.get("Type", ""))
    return _Target(kind, many=many, delta=name == "delta", action=bound)


def _query(model: CsdlModel, at: _Target, extra: dict[str, Any]) -> list[dict[str, Any]]:
    names: tuple[str, ...] = _MANY if at.many else _ONE
    names += _DELTA if at.delta else (_PAGING if at.many else ())
    props = model.names(at.type) if at.type else []
    out = []
    for name in names:
        schema: dict[str, Any] = {"type": "string"}
        explode = True
        if name in ("$select", "$expand") and props:
            schema = {"type": "array", "items": {"enum": props}}
            explode = False
        elif name == "$orderby" and props:
            alternatives = "|".join(map(re.escape, props))
            pattern = rf"^({alternatives})(/\w+)*( (asc|desc))?$"
            schema = {"type": "array", "items": {"type": "string", "pattern": pattern}}
            explode = False
        elif name in ("$top", "$skip"):
            schema = {"type": "integer", "minimum": 0}
        elif name == "$count":
            schema = {"type": "boolean"}
        out.append({"name": name, "in": "query", "schema": schema, "explode": explode})
    out += [{"name": k, "in": "query", "schema": v} for k, v in extra.items()]
    return out


def _body(model: CsdlModel, path: GraphPath, at: _Target) -> dict[str, Any] | None:
    if at.action is not None and at.action.tag == f"{_EDM}Action":
        # Graph matches action parameter names regardless of case: CSDL has move's
        # DestinationId, the message-move page sends destinationId
        params = {
            f"^(?i:{re.escape(p.get('Name', ''))})$": model.schema_of(
                p.get("Type", ""), p.get("Nullable") != "false"
            )
            for p in at.action.findall(f"{_EDM}Parameter")[1:]
        }
        if not params:
            return None
        return {"type": "object", "patternProperties": params, "additionalProperties": False}
    if path.method in ("POST", "PATCH") and at.type:
        return model.ref(at.type, "body")
    return None


def _answer(model: CsdlModel, path: GraphPath, at: _Target) -> dict[str, Any]:
    status = str(path.status or {"POST": 201, "DELETE": 204}.get(path.method, 200))
    also: dict[str, Any] = {str(s): {} for s in path.also}
    if at.stream:
        return {status: {"content": {"*/*": {}}}, **also}
    if at.type is None or status == "204" or status == "202":
        return {status: {}, **also}
    created = path.method == "POST" and at.action is None
    if at.many and not created:
        schema = model.collection(model.ref(at.type, "removed" if at.delta else ""))
    else:
        schema = model.ref(at.type)
    return {status: {"content": {"application/json": {"schema": schema}}}, **also}


def csdl_subset(
    xml: str,
    paths: list[GraphPath],
    *,
    source: dict[str, Any],
    vendor: dict[str, Any],
    narrow: dict[str, list[str]] | None = None,
) -> dict[str, Any]:
    """The OpenAPI-shaped subset of the CSDL document ``xml`` for ``paths``; ``narrow``
    names the types a value CSDL types only as a base (``microsoft.graph.entity``) can have
    in these operations."""
    model = CsdlModel(ET.fromstring(xml), narrow)
    out: dict[str, Any] = {}
    for path in paths:
        at = _walk(model, path.template)
        op: dict[str, Any] = {
            "parameters": [
                {"name": n, "in": "path", "required": True, "schema": {"type": "string"}}
                for n in re.findall(r"\{\+?([^}]+)\}", path.template)
            ]
            + (_query(model, at, path.query) if path.method == "GET" else []),
            "responses": _answer(model, path, at),
            "x-docs": path.docs,
        }
        body = _body(model, path, at)
        if body is not None:
            op["requestBody"] = {"content": {"application/json": {"schema": body}}}
        out.setdefault(path.template, {})[path.method.lower()] = op
    return {
        "openapi": "3.1.0",
        "info": {"title": "Microsoft Graph v1.0", "version": "v1.0"},
        "x-source": source,
        "x-vendor": vendor,
        "x-narrowed": narrow or {},
        "paths": out,
        "components": {"schemas": model.schemas()},
    }
