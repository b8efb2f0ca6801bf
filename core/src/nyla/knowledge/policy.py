"""The policy resolver: longest-prefix inheritance of ``rag_index_enabled``, ``neutralize``
and ``scope`` along a connection's tree of data sources (seeds: ``subPolicyResolver``).

A data source that sets a field explicitly (not ``None``) decides it for its own path and
every path below it, until a deeper data source sets it again. Prefixes match on whole path
segments: ``/a/b`` covers ``/a/b`` and ``/a/b/c`` but not ``/a/bc``. RAG limits are *not*
resolved here: they never inherit (see :mod:`nyla.knowledge.limits`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from nyla.models.knowledge import PolicyValue

#: the fields the resolver serves and their value when no data source sets them
POLICY_DEFAULTS: dict[str, Any] = {
    "rag_index_enabled": False,
    "neutralize": False,
    "scope": "personal",
}


def normalize_path(path: str) -> str:
    """``path`` with one leading slash, no trailing slash, no empty segments."""
    parts = [p for p in path.replace("\\", "/").split("/") if p]
    return "/" + "/".join(parts)


def covers(prefix: str, path: str) -> bool:
    """True when ``prefix`` is ``path`` or one of its ancestors (whole segments)."""
    prefix, path = normalize_path(prefix), normalize_path(path)
    return prefix == "/" or path == prefix or path.startswith(prefix + "/")


def effective_policy(data_sources: Iterable[Any], path: str, field: str) -> PolicyValue:
    """The value of ``field`` at ``path``: from the data source with the longest path that
    covers ``path`` and sets the field, else the default. ``data_sources`` are rows or objects
    with ``id``, ``path`` and the field (all of one connection)."""
    if field not in POLICY_DEFAULTS:
        raise ValueError(f"unknown policy field {field!r}; one of {sorted(POLICY_DEFAULTS)}")
    best: Any = None
    best_depth = -1
    for ds in data_sources:
        value = getattr(ds, field, None)
        if value is None or not covers(ds.path, path):
            continue
        depth = len([p for p in normalize_path(ds.path).split("/") if p])
        if depth > best_depth:
            best, best_depth = ds, depth
    if best is None:
        return PolicyValue(field=field, value=POLICY_DEFAULTS[field])
    return PolicyValue(
        field=field,
        value=getattr(best, field),
        source_id=best.id,
        source_path=normalize_path(best.path),
    )
