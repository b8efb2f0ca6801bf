"""One inline line per connector item, the same for every service: what a tool shows the
model so it can decide (and answer) without downloading (seeds: inline metadata).

Mail shows date and sender, events start, end and place, contacts e-mail, phone and company,
tasks status, assignee and due date, files their path, size and last change.
"""

from __future__ import annotations

from typing import Any

from nyla.models.datasource import Item

ICONS = {"mail": "✉️", "event": "📅", "contact": "👤", "task": "☑️", "folder": "📁"}
#: what the model is told about each kind, once per listing
HINTS = {
    "mail": "mail lines show the subject only: read the message for its full text",
    "event": "event lines are complete: do not download single events",
    "contact": "contact lines are complete: download the vCard only when needed",
    "task": "task lines are complete: download the task JSON only for details",
}


def _size(size: int | None) -> str:
    if size is None:
        return ""
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024  # type: ignore[assignment]
    return ""


def _fields(item: Item) -> list[str]:
    e: dict[str, Any] = item.extra
    if item.kind == "mail":
        return [f"date {e.get('date') or item.modified or '?'}", f"from {e.get('from') or '?'}"]
    if item.kind == "event":
        out = [f"start {e.get('start') or '?'}", f"end {e.get('end') or '?'}"]
        return out + ([f"at {e['location']}"] if e.get("location") else [])
    if item.kind == "contact":
        keys = (("email", "e-mail"), ("phone", "phone"), ("company", "company"))
        return [f"{label} {e[k]}" for k, label in keys if e.get(k)]
    if item.kind == "task":
        keys = (("status", "status"), ("assignee", "assignee"), ("due", "due"))
        return [f"{label} {e[k]}" for k, label in keys if e.get(k)]
    out = [f"path {item.path}"] if item.path else []
    if item.kind != "folder" and item.size is not None:
        out.append(_size(item.size))
    if item.modified:
        out.append(f"modified {item.modified.isoformat(timespec='minutes')}")
    if item.author:
        out.append(f"by {item.author}")
    return out


def inline_line(item: Item) -> str:
    """``<icon> <title> — <metadata> [id: …]`` for one item."""
    icon = ICONS.get(item.kind, "📄")
    fields = "; ".join(f for f in _fields(item) if f)
    return (
        f"{icon} {item.title} — {fields} [id: {item.id}]"
        if fields
        else (f"{icon} {item.title} [id: {item.id}]")
    )


def inline_listing(items: list[Item], cursor: str | None = None) -> str:
    """Lines for a page of items, the hints for the kinds present, and the next cursor."""
    if not items:
        return "no items"
    lines = [inline_line(i) for i in items]
    kinds = dict.fromkeys(i.kind for i in items)
    lines += [f"({HINTS[k]})" for k in kinds if k in HINTS]
    if cursor:
        lines.append(f"more results: pass cursor={cursor!r}")
    return "\n".join(lines)
