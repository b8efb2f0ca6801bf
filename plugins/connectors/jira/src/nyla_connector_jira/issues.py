"""Jira's wire format and ours: issues as :class:`Item` blocks, Atlassian Document Format
(ADF) to text and back, and the JQL the adapter sends (always bounded, strings quoted)."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo

from nyla.sdk.connectors import (
    Item,
    TaskComment,
    TaskQuery,
    VendorBadRequestError,
    confine_path,
)

#: what a listing asks for (Jira returns only these: smaller answers, fewer points)
LIST_FIELDS = (
    "summary",
    "status",
    "assignee",
    "reporter",
    "duedate",
    "priority",
    "project",
    "issuetype",
    "labels",
    "updated",
)
#: what the walker indexes in addition (the text and the embedded comments)
SYNC_FIELDS = (*LIST_FIELDS, "description", "comment")
#: what reading one issue needs in addition
READ_FIELDS = (*SYNC_FIELDS, "attachment")

#: a project key (letters, digits and ``_``, a letter first) and an issue id or key
PROJECT = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,99}", re.ASCII)
ISSUE = re.compile(r"[0-9]{1,18}|[A-Za-z][A-Za-z0-9_]{0,99}-[0-9]{1,18}", re.ASCII)

#: when nothing else restricts a query (Jira refuses unbounded JQL on /search/jql)
DEFAULT_BOUND = "updated >= -365d"


def quote(value: str) -> str:
    """A JQL string literal."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def project_of(scope: str) -> str:
    """The project key a scope names (``/KEY``, ``KEY`` or ``/KEY/KEY-12``), or ``""``;
    a clear error for anything that is not a project key."""
    clean = confine_path("", scope.strip(), service="jira")
    key = clean.split("/", 1)[0]
    if key and not PROJECT.fullmatch(key):
        raise VendorBadRequestError(f"jira: {scope!r} names no project key", service="jira")
    return key


def parse_time(value: str | None) -> datetime | None:
    """Jira's timestamps (``2026-01-05T09:30:00.000+0000``) as aware datetimes."""
    if not value:
        return None
    for pattern in ("%Y-%m-%dT%H:%M:%S.%f%z", "%Y-%m-%dT%H:%M:%S%z"):
        try:
            return datetime.strptime(value, pattern)
        except ValueError:
            continue
    return datetime.fromisoformat(value)


def jql_time(moment: datetime, zone: str) -> str:
    """``moment`` as a JQL date literal: JQL reads dates in the user's profile time zone."""
    try:
        tz = ZoneInfo(zone)
    except (KeyError, ValueError):
        tz = ZoneInfo("UTC")
    return quote(moment.astimezone(tz).strftime("%Y-%m-%d %H:%M"))


def with_scope(project: str, *clauses: str) -> str:
    """``clauses`` and the project restriction joined by AND (bounded: never empty)."""
    parts = [f"project = {quote(project)}"] if project else []
    parts += [c for c in clauses if c]
    return " AND ".join(f"({p})" if " OR " in p.upper() else p for p in parts) or DEFAULT_BOUND


def text_jql(query: str, project: str) -> str:
    """A free-text search (``jql:`` runs the rest as JQL, restricted to the project)."""
    query = query.strip()
    if query.lower().startswith("jql:"):
        raw = query[4:].strip()
        where, _, order = raw.partition(" ORDER BY ")
        body = with_scope(project, where.strip())
        return f"{body} ORDER BY {order}" if order else f"{body} ORDER BY updated DESC"
    clause = f"text ~ {quote(query)}" if query else ""
    return f"{with_scope(project, clause)} ORDER BY updated DESC"


def task_jql(query: TaskQuery, project: str) -> str:
    """The JQL of a structured task search, due date first."""
    clauses = [f"text ~ {quote(query.text)}"] if query.text.strip() else []
    if query.mine:
        clauses.append("assignee = currentUser()")
    if query.open_only:
        clauses.append("statusCategory != Done")
    if query.due_from:
        clauses.append(f'duedate >= "{query.due_from.isoformat()}"')
    if query.due_to:
        clauses.append(f'duedate <= "{query.due_to.isoformat()}"')
    container = project_of(query.container) or project
    return f"{with_scope(container, *clauses)} ORDER BY duedate ASC, updated DESC"


def sync_jql(project: str, since: datetime | None, zone: str, overlap: timedelta) -> str:
    """Issues updated since ``since`` less the overlap (everything when ``None``), oldest
    change first so a checkpoint can move forward page by page."""
    clause = f"updated >= {jql_time(since - overlap, zone)}" if since else ""
    if not project and not clause:
        clause = 'updated >= "1970-01-01 00:00"'
    return f"{with_scope(project, clause)} ORDER BY updated ASC, id ASC"


# ---- Atlassian Document Format ------------------------------------------------------------


def adf_text(node: Any) -> str:
    """The plain text of an ADF document: every textual node rendered — link targets, link
    cards, mentions, emoji, status lozenges, dates, expand titles, task states, table cells —
    with blocks on their own lines (developer.atlassian.com/cloud/jira/platform/apis/document/structure/)."""
    if not isinstance(node, dict):
        return str(node or "")
    kind = node.get("type")
    attrs: dict[str, Any] = _dict(node.get("attrs"))
    inline = _ADF_INLINE.get(str(kind))
    if inline is not None:
        return inline(node, attrs)
    inner = "".join(adf_text(child) for child in node.get("content") or [] if child)
    if kind in ("expand", "nestedExpand") and attrs.get("title"):
        inner = f"{attrs['title']}\n{inner}"
    if kind == "taskItem":
        inner = ("[x] " if attrs.get("state") == "DONE" else "[ ] ") + inner
    if kind in ("tableCell", "tableHeader"):
        return inner.strip().replace("\n", " ") + " | "
    if kind == "tableRow":
        return inner.rstrip(" |") + "\n"
    return inner + "\n" if kind in _ADF_BLOCKS else inner


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _adf_plain(node: dict[str, Any], attrs: dict[str, Any]) -> str:
    text = str(node.get("text", ""))
    for mark in node.get("marks") or []:
        href = (mark.get("attrs") or {}).get("href") if isinstance(mark, dict) else None
        if mark.get("type") == "link" and href and href != text:
            text = f"{text} ({href})"
    return text


def _adf_card(node: dict[str, Any], attrs: dict[str, Any]) -> str:
    data = _dict(attrs.get("data"))
    return str(attrs.get("url") or data.get("url") or data.get("name") or "")


def _adf_date(node: dict[str, Any], attrs: dict[str, Any]) -> str:
    stamp = str(attrs.get("timestamp") or "")
    if not stamp.isdigit() or len(stamp) > 16:
        return stamp
    return datetime.fromtimestamp(int(stamp) / 1000, tz=UTC).date().isoformat()


_ADF_INLINE: dict[str, Any] = {
    "text": _adf_plain,
    "hardBreak": lambda node, attrs: "\n",
    "mention": lambda node, attrs: str(attrs.get("text") or attrs.get("id") or ""),
    "emoji": lambda node, attrs: str(attrs.get("text") or attrs.get("shortName") or ""),
    "status": lambda node, attrs: f"[{attrs.get('text', '')}]" if attrs.get("text") else "",
    "placeholder": lambda node, attrs: str(attrs.get("text") or ""),
    "inlineCard": _adf_card,
    "blockCard": lambda node, attrs: _adf_card(node, attrs) + "\n",
    "embedCard": lambda node, attrs: _adf_card(node, attrs) + "\n",
    "date": _adf_date,
    "media": lambda node, attrs: str(attrs.get("alt") or ""),
    "mediaInline": lambda node, attrs: str(attrs.get("alt") or ""),
    "rule": lambda node, attrs: "\n",
}
_ADF_BLOCKS = frozenset(
    {
        "paragraph", "heading", "listItem", "codeBlock", "blockquote", "panel", "taskItem",
        "decisionItem", "expand", "nestedExpand", "table", "mediaSingle", "mediaGroup",
    }
)  # fmt: skip


def adf(text: str) -> dict[str, Any]:
    """Text as an ADF document: one paragraph per line."""
    paragraphs = [
        {"type": "paragraph", "content": [{"type": "text", "text": line}] if line else []}
        for line in text.split("\n")
    ]
    return {"type": "doc", "version": 1, "content": paragraphs}


# ---- issues as items ----------------------------------------------------------------------


def _person(value: Any) -> str | None:
    if not isinstance(value, dict):
        return None
    return value.get("displayName") or value.get("emailAddress") or value.get("accountId")


def _site(raw: dict[str, Any], site_url: str | None) -> str:
    if site_url:
        return site_url.rstrip("/")
    parts = urlsplit(str(raw.get("self") or ""))
    return f"{parts.scheme}://{parts.netloc}" if parts.netloc else ""


def issue_item(raw: dict[str, Any], site_url: str | None = None, with_text: bool = False) -> Item:
    """One issue of a search or read answer as an item; ``with_text`` adds the description
    and embedded comments as ``content`` (what the walker indexes)."""
    f = raw.get("fields") or {}
    key = str(raw.get("key") or raw.get("id"))
    status = f.get("status") or {}
    project = (f.get("project") or {}).get("key") or key.split("-")[0]
    extra: dict[str, Any] = {
        "status": status.get("name"),
        "assignee": _person(f.get("assignee")) or "unassigned",
        "due": f.get("duedate"),
        "priority": (f.get("priority") or {}).get("name"),
        "project": project,
        "labels": list(f.get("labels") or []),
        "vendor": {
            "key": key,
            "statusCategory": (status.get("statusCategory") or {}).get("key"),
            "issueType": (f.get("issuetype") or {}).get("name"),
        },
    }
    site = _site(raw, site_url)
    item = Item(
        id=str(raw.get("id") or key),
        title=str(f.get("summary") or key),
        kind="task",
        path=f"/{project}/{key}",
        url=f"{site}/browse/{key}" if site else None,
        modified=parse_time(f.get("updated")),
        author=_person(f.get("reporter")),
        version=f.get("updated"),
        mime="text/plain",
        extra={k: v for k, v in extra.items() if v not in (None, [], "")},
    )
    if with_text:
        text = issue_text(raw)
        item = item.model_copy(update={"content": text, "size": len(text.encode("utf-8"))})
    return item


def issue_text(raw: dict[str, Any]) -> str:
    """What the walker indexes of an issue: the description, then its comments."""
    f = raw.get("fields") or {}
    parts = [adf_text(f.get("description")).strip()]
    for comment in (f.get("comment") or {}).get("comments") or []:
        c = to_comment(comment)
        parts.append(f"Comment by {c.author}: {c.text}")
    return "\n\n".join(p for p in parts if p)


def to_comment(raw: dict[str, Any]) -> TaskComment:
    """A Jira comment (ADF body) as a task comment."""
    return TaskComment(
        id=str(raw.get("id", "")),
        author=_person(raw.get("author")) or "",
        created=parse_time(raw.get("created")),
        text=adf_text(raw.get("body")).strip(),
    )


def attachment_item(raw: dict[str, Any], issue_key: str | None = None) -> Item:
    """An attachment of an issue (its ``url`` is the content link; ``download`` takes its
    id). Attachment metadata read on its own names no issue: the path is then the name."""
    name = str(raw.get("filename") or raw.get("id"))
    where = f"/{issue_key.split('-')[0]}/{issue_key}" if issue_key else ""
    return Item(
        id=f"attachment:{raw.get('id')}",
        title=name,
        kind="file",
        path=f"{where}/{name}",
        url=raw.get("content"),
        modified=parse_time(raw.get("created")),
        author=_person(raw.get("author")),
        size=raw.get("size"),
        mime=raw.get("mimeType"),
    )


def newest(items: list[Item], current: datetime | None) -> datetime | None:
    """The latest ``modified`` of ``items`` and ``current``."""
    times = [i.modified for i in items if i.modified] + ([current] if current else [])
    return max(times) if times else None
