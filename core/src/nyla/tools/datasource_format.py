"""Inline metadata of data-source items in tool output (seeds: the ``_dataSourceTools``
formatter): one line per item from the normalised :class:`~nyla.models.datasource.Item`
block, the same for every service, with the hint the model needs per kind."""

from __future__ import annotations

from typing import Any

from nyla.models.datasource import Item

ICONS = {
    "mail": "✉️",
    "event": "📅",
    "contact": "👤",
    "task": "☑️",
    "folder": "📁",
    "file": "📄",
    "page": "📄",
    "other": "•",
}

#: per kind: the ``extra`` keys shown inline, and the hint for the model
INLINE: dict[str, tuple[tuple[str, ...], str]] = {
    "mail": (("date", "from"), "subject only: download for the full text"),
    "event": (("start", "end", "location"), "do not download single events"),
    "contact": (("email", "phone", "company"), "download the vCard only when needed"),
    "task": (("status", "assignee", "due"), "download the task only for details"),
}


def _value(value: Any) -> str:
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    return str(value)


def item_line(item: Item) -> str:
    """One line: icon, title, the kind's inline fields, size/time for files, the id."""
    parts = [f"{ICONS.get(item.kind, '•')} {item.title}"]
    keys, _ = INLINE.get(item.kind, ((), ""))
    for key in keys:
        if item.extra.get(key) not in (None, "", []):
            parts.append(f"{key}: {_value(item.extra[key])}")
    if item.kind in ("file", "page"):
        if item.size is not None:
            parts.append(f"{item.size} bytes")
        if item.modified is not None:
            parts.append(f"modified {item.modified:%Y-%m-%d %H:%M}")
        if item.author:
            parts.append(f"by {item.author}")
    if item.path:
        parts.append(f"path {item.path}")
    parts.append(f"id {item.id}")
    return " | ".join(parts)


def page_text(items: list[Item], cursor: str | None, what: str) -> str:
    """The tool text of a page of items, with the per-kind hints and the next cursor."""
    if not items:
        return f"no {what}"
    lines = [f"{len(items)} {what}:"] + [f"- {item_line(i)}" for i in items]
    hints = sorted({INLINE[i.kind][1] for i in items if i.kind in INLINE})
    lines += [f"({h})" for h in hints]
    if cursor:
        lines.append(f"more results: call again with cursor={cursor!r}")
    return "\n".join(lines)


def item_data(item: Item) -> dict[str, Any]:
    """The item's metadata block as tool data (camelCase, without content)."""
    return item.model_dump(mode="json", by_alias=True, exclude={"content"})
