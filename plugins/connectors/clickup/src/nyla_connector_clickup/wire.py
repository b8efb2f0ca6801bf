"""ClickUp's wire format and ours: Unix-millisecond times, tasks as :class:`Item` blocks,
comments, attachments, and the paths that address the hierarchy.

Paths: ``/<team>`` a workspace, ``/<team>/<space>``, ``/<team>/<space>/<folder>``, and
``/<team>/<space>/<folder>/<list>`` a list (``-`` for the folder of a folderless list); a
task sits below its list.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from nyla.sdk.connectors import Item, TaskComment, VendorBadRequestError, confine_path

#: the folder segment of a folderless list
NO_FOLDER = "-"
#: ClickUp's priorities by name (``priority`` is 1..4 on the wire)
PRIORITIES = {"urgent": 1, "high": 2, "normal": 3, "low": 4}
#: status types of finished tasks
CLOSED_TYPES = ("closed", "done")


@dataclass(frozen=True)
class ListRef:
    """A list found while walking the hierarchy, with its place in it."""

    team: str
    space: str
    folder: str
    id: str
    name: str

    @property
    def path(self) -> str:
        """The list's path."""
        return f"/{self.team}/{self.space}/{self.folder}/{self.id}"


@dataclass(frozen=True)
class Scope:
    """A parsed path: the ids it names, from the workspace down (empty: not restricted)."""

    team: str = ""
    space: str = ""
    folder: str = ""
    list: str = ""


def parse_scope(path: str) -> Scope:
    """The ids a path names (``/9001/790/-/124`` is a folderless list)."""
    clean = confine_path("", (path or "").strip(), service="clickup")
    parts = clean.split("/") if clean else []
    if len(parts) > 5 or any(p != NO_FOLDER and not is_id(p) for p in parts):
        raise VendorBadRequestError(f"clickup: {path!r} is not a ClickUp path", service="clickup")
    parts += [""] * (4 - len(parts[:4]))
    return Scope(team=parts[0], space=parts[1], folder=parts[2], list=parts[3])


def is_id(value: str) -> bool:
    """Whether ``value`` is a ClickUp id: ASCII letters, digits, ``_`` and ``-`` only
    (``str.isalnum`` alone takes ``²`` and full-width letters)."""
    return (
        0 < len(value) <= 64
        and value.isascii()
        and value.replace("_", "").replace("-", "").isalnum()
    )


def ms_time(value: Any) -> datetime | None:
    """A ClickUp timestamp (Unix milliseconds, as a string or number) as an aware datetime."""
    if value in (None, ""):
        return None
    try:
        return datetime.fromtimestamp(int(value) / 1000, tz=UTC)
    except (TypeError, ValueError):
        return None


def to_ms(moment: datetime) -> int:
    """An aware datetime as Unix milliseconds."""
    return int(moment.timestamp() * 1000)


def day_start_ms(day: date, zone: str) -> int:
    """Midnight of ``day`` in ``zone`` as Unix milliseconds."""
    return to_ms(datetime.combine(day, datetime.min.time(), tzinfo=_zone(zone)))


def due_day(value: Any, zone: str) -> str | None:
    """A due timestamp as the date it falls on in the user's time zone."""
    moment = ms_time(value)
    return moment.astimezone(_zone(zone)).date().isoformat() if moment else None


def _zone(zone: str) -> ZoneInfo:
    try:
        return ZoneInfo(zone or "UTC")
    except (KeyError, ValueError):
        return ZoneInfo("UTC")


def _person(value: Any) -> str | None:
    if not isinstance(value, dict):
        return None
    return (
        value.get("username") or value.get("email") or (str(value["id"]) if "id" in value else None)
    )


def task_path(raw: dict[str, Any]) -> str:
    """The path of a task: its list's path and its id."""
    folder = raw.get("folder") or {}
    folder_id = NO_FOLDER if folder.get("hidden") or not folder.get("id") else str(folder["id"])
    space = str((raw.get("space") or {}).get("id", ""))
    lst = str((raw.get("list") or {}).get("id", ""))
    return f"/{raw.get('team_id', '')}/{space}/{folder_id}/{lst}/{raw.get('id')}"


def task_item(raw: dict[str, Any], zone: str = "UTC", with_text: bool = False) -> Item:
    """One task of a listing or read as an item; ``with_text`` adds the text the walker
    indexes as ``content``."""
    status = raw.get("status") or {}
    assignees = [p for p in (_person(a) for a in raw.get("assignees") or []) if p]
    extra: dict[str, Any] = {
        "status": status.get("status"),
        "assignee": ", ".join(assignees) or "unassigned",
        "due": due_day(raw.get("due_date"), zone),
        "priority": (raw.get("priority") or {}).get("priority"),
        "project": (raw.get("list") or {}).get("name"),
        "labels": [t["name"] for t in raw.get("tags") or [] if t.get("name")],
        "vendor": {
            "statusType": status.get("type"),
            "listId": str((raw.get("list") or {}).get("id", "")),
            "customId": raw.get("custom_id"),
            "teamId": raw.get("team_id"),
        },
    }
    item = Item(
        id=str(raw["id"]),
        title=str(raw.get("name") or raw["id"]),
        kind="task",
        path=task_path(raw),
        url=raw.get("url"),
        modified=ms_time(raw.get("date_updated")),
        author=_person(raw.get("creator")),
        version=str(raw.get("date_updated") or ""),
        mime="text/plain",
        extra={k: v for k, v in extra.items() if v not in (None, [], "")},
    )
    if with_text:
        text = task_text(raw)
        item = item.model_copy(update={"content": text, "size": len(text.encode("utf-8"))})
    return item


def task_text(raw: dict[str, Any]) -> str:
    """What the walker indexes of a task: its name, status, tags and description."""
    head = str(raw.get("name") or "")
    status = (raw.get("status") or {}).get("status")
    tags = ", ".join(t["name"] for t in raw.get("tags") or [] if t.get("name"))
    lines = [head, f"Status: {status}" if status else "", f"Tags: {tags}" if tags else ""]
    body = str(raw.get("text_content") or raw.get("description") or "").strip()
    return "\n".join(line for line in lines if line) + (f"\n\n{body}" if body else "")


def is_open(raw: dict[str, Any]) -> bool:
    """Whether a task is not finished (its status type is neither ``closed`` nor ``done``)."""
    return (raw.get("status") or {}).get("type") not in CLOSED_TYPES


def matches(raw: dict[str, Any], words: list[str]) -> bool:
    """Whether every word occurs in the task's name, description or custom id."""
    text = " ".join(
        str(raw.get(k) or "") for k in ("name", "text_content", "description", "custom_id")
    ).lower()
    return all(w in text for w in words)


def to_comment(raw: dict[str, Any]) -> TaskComment:
    """A ClickUp comment as a task comment."""
    text = raw.get("comment_text")
    if not text:
        text = "".join(str(part.get("text", "")) for part in raw.get("comment") or [])
    return TaskComment(
        id=str(raw.get("id", "")),
        author=_person(raw.get("user")) or "",
        created=ms_time(raw.get("date")),
        text=str(text).strip(),
    )


def attachment_id(task_id: str, raw: dict[str, Any]) -> str:
    """The item id of a task's attachment (``download`` takes it)."""
    return f"attachment:{task_id}:{raw.get('id')}"


def attachment_item(raw: dict[str, Any], task: dict[str, Any]) -> Item:
    """An attachment of a task."""
    name = str(raw.get("title") or raw.get("id"))
    return Item(
        id=attachment_id(str(task["id"]), raw),
        title=name,
        kind="file",
        path=f"{task_path(task)}/{name}",
        url=raw.get("url"),
        modified=ms_time(raw.get("date")),
        author=_person(raw.get("user")),
        size=raw.get("size") if isinstance(raw.get("size"), int) else None,
        mime=raw.get("mimetype"),
    )


def folder_item(kind: str, raw: dict[str, Any], path: str) -> Item:
    """A workspace, space, folder or list as a container to browse."""
    return Item(
        id=f"{kind}:{raw['id']}",
        title=str(raw.get("name") or raw["id"]),
        kind="folder",
        path=path,
        extra={"vendor": {"type": kind}},
    )


def newest(items: list[Item], current: datetime | None) -> datetime | None:
    """The latest ``modified`` of ``items`` and ``current``."""
    times = [i.modified for i in items if i.modified] + ([current] if current else [])
    return max(times) if times else None


def overlap_ms(since: datetime, overlap: timedelta) -> int:
    """``since`` less the overlap, as ``date_updated_gt``."""
    return to_ms(since - overlap)
