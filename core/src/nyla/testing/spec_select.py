"""Partial answers: a request that names the fields it wants gets only those.

Vendors let a client ask for some fields only, and then answer with no others. A fake that
answers the whole object anyway hides a connector that reads a field it never asked for
(which the real vendor leaves out). Each projection here checks an answer against the
request's selection, in its vendor's syntax:

- ``google-fields``: the ``fields`` parameter of Google APIs
  (https://developers.google.com/drive/api/guides/fields-parameter,
  https://developers.google.com/gmail/api/guides/performance#partial-response):
  ``a,b(c,d),e/f``, ``*`` for all;
- ``odata-select``: OData's ``$select`` as Microsoft Graph answers it
  (https://learn.microsoft.com/en-us/graph/query-parameters#select-parameter): the selected
  properties, ``id``, and instance annotations (``@odata.etag``, ``@removed``, ...);
- ``jira-fields``: Jira's ``fields`` parameter of issue reads and searches
  (https://developer.atlassian.com/cloud/jira/platform/rest/v3/api-group-issue-search/#api-rest-api-3-search-jql-get):
  an issue's ``fields`` holds only the fields listed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx

#: a selection tree: field name -> what is selected below it (``None``: all of it)
Selection = dict[str, "Selection | None"]


def parse_google_fields(text: str) -> Selection:
    """The tree of a Google ``fields`` value (``files(id,name),nextPageToken``)."""
    tree, rest = _parse(text.replace(" ", ""), 0)
    if rest != len(text.replace(" ", "")):
        raise ValueError(f"unbalanced fields selector {text!r}")
    return tree


def _parse(text: str, at: int) -> tuple[Selection, int]:
    tree: Selection = {}
    name = ""
    while at < len(text):
        char = text[at]
        if char == "(":
            sub, at = _parse(text, at + 1)
            _add(tree, name, sub)
            name = ""
        elif char == ")":
            _add(tree, name, None)
            return tree, at
        elif char == ",":
            _add(tree, name, None)
            name = ""
        else:
            name += char
        at += 1
    _add(tree, name, None)
    return tree, at


def _add(tree: Selection, path: str, sub: Selection | None) -> None:
    if not path:
        return
    head, _, rest = path.partition("/")
    if rest:
        child = tree.get(head)
        child = {} if child is None and head not in tree else child
        if child is not None:
            _add(child, rest, sub)
            tree[head] = child
        return
    tree[head] = sub if head not in tree or tree[head] is not None else None


def outside(value: Any, tree: Selection | None, where: str = "") -> list[str]:
    """The fields of ``value`` (objects, lists of them) that ``tree`` does not select."""
    if tree is None or "*" in tree:
        return []
    if isinstance(value, list):
        return [p for i, item in enumerate(value) for p in outside(item, tree, f"{where}[{i}]")]
    if not isinstance(value, dict):
        return []
    out = []
    for key, sub in value.items():
        if key not in tree:
            out.append(f"{where}.{key}".lstrip("."))
        else:
            out += outside(sub, tree[key], f"{where}.{key}")
    return out


def keep_selected(value: Any, tree: Selection | None) -> Any:
    """``value`` with only the fields ``tree`` selects: how a vendor answers a partial
    request (a fake answers with it what the real vendor would)."""
    if tree is None or "*" in tree:
        return value
    if isinstance(value, list):
        return [keep_selected(item, tree) for item in value]
    if not isinstance(value, dict):
        return value
    return {k: keep_selected(v, tree[k]) for k, v in value.items() if k in tree}


def keep_odata_selected(body: Any, select: str) -> Any:
    """An OData answer (an entity, or a collection's ``value``) with only the selected
    properties, ``id`` and instance annotations, as Graph answers it."""
    wanted = {s.strip().split("/")[0] for s in select.split(",")} | {"id"}

    def keep(item: Any) -> Any:
        if not isinstance(item, dict):
            return item
        return {k: v for k, v in item.items() if k in wanted or "@" in k}

    if isinstance(body, dict) and isinstance(body.get("value"), list):
        return {**body, "value": [keep(item) for item in body["value"]]}
    return keep(body)


def google_fields(op: Any, request: httpx.Request, body: Any) -> list[str]:
    """Fields of a Google answer that its ``fields`` parameter did not ask for."""
    text = request.url.params.get("fields")
    if not text:
        return []
    extra = outside(body, parse_google_fields(text))
    return [f"{name!r} is answered but not in fields={text!r}" for name in extra]


def odata_select(op: Any, request: httpx.Request, body: Any) -> list[str]:
    """Properties of a Graph answer (an entity, or each of a collection's) outside
    ``$select``."""
    text = request.url.params.get("$select")
    if not text or not isinstance(body, dict):
        return []
    wanted = {s.strip().split("/")[0] for s in text.split(",")} | {"id"}
    value = body.get("value")
    items: list[Any] = value if isinstance(value, list) else [body]
    out = []
    for item in items:
        if isinstance(item, dict):
            extra = [k for k in item if k not in wanted and "@" not in k]
            out += [f"{k!r} is answered but not in $select={text!r}" for k in extra]
    return out


def jira_fields(op: Any, request: httpx.Request, body: Any) -> list[str]:
    """Issue fields of a Jira answer that its ``fields`` parameter did not list."""
    text = request.url.params.get("fields")
    if not text or not isinstance(body, dict):
        return []
    names = [n.strip() for n in text.split(",")]
    if any(n.startswith(("*", "-")) for n in names):
        return []
    found = body.get("issues")
    issues: list[Any] = found if isinstance(found, list) else [body]
    out = []
    for issue in issues:
        extra = [k for k in (issue.get("fields") or {}) if k not in names]
        out += [f"issue field {k!r} is answered but not in fields={text!r}" for k in extra]
    return out


#: the projections a spec can name in ``x-vendor.projection``
PROJECTIONS: dict[str, Callable[[Any, httpx.Request, Any], list[str]]] = {
    "google-fields": google_fields,
    "odata-select": odata_select,
    "jira-fields": jira_fields,
}
