"""Google resources (Gmail message, label, thread; Drive file and shared drive; Calendar
event and calendar; People person) as the kernel's one metadata block,
:class:`~nyla.sdk.connectors.Item`."""

from __future__ import annotations

import base64
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

from nyla.sdk.connectors import Item
from nyla.sdk.text import charset_of, decode_text, html_to_text

FOLDER_MIME = "application/vnd.google-apps.folder"


def when(value: str | None) -> datetime | None:
    """An RFC 3339 timestamp (``2026-01-05T09:30:00.000Z``) as a datetime."""
    if not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def b64decode(data: str) -> bytes:
    """Gmail's base64url (padding optional)."""
    return base64.urlsafe_b64decode(data + "=" * (-len(data) % 4))


def headers(raw: dict[str, Any]) -> dict[str, str]:
    """A message's top-level headers by lower-case name."""
    payload = raw.get("payload") or {}
    return {h["name"].lower(): h.get("value", "") for h in payload.get("headers") or []}


def walk_parts(part: dict[str, Any]) -> list[dict[str, Any]]:
    """Every MIME part of a payload, depth first."""
    out = [part]
    for child in part.get("parts") or []:
        out.extend(walk_parts(child))
    return out


def text_body(raw: dict[str, Any]) -> tuple[str, str]:
    """The message's body as text: its first ``text/plain`` part, else its ``text/html`` part
    turned into text; each decoded by the charset its ``Content-Type`` declares (Gmail's
    ``body.data`` is the part's bytes, base64url-encoded)."""
    parts = walk_parts(raw.get("payload") or {})
    for mime in ("text/plain", "text/html"):
        for part in parts:
            data = (part.get("body") or {}).get("data")
            if part.get("mimeType") == mime and data and not part.get("filename"):
                text = decode_text(b64decode(data), charset_of(part_header(part, "content-type")))
                return (html_to_text(text) if mime == "text/html" else text), "text"
    return "", "text"


def part_header(part: dict[str, Any], name: str) -> str | None:
    """One header of a MIME part (by lower-case name)."""
    for header in part.get("headers") or []:
        if str(header.get("name", "")).lower() == name:
            return str(header.get("value", ""))
    return None


def received(raw: dict[str, Any]) -> datetime | None:
    """``internalDate`` (ms since the epoch), else the ``Date`` header."""
    stamp = raw.get("internalDate")
    if stamp and str(stamp).isdigit():
        return datetime.fromtimestamp(int(stamp) / 1000, tz=UTC)
    try:
        return parsedate_to_datetime(headers(raw).get("date", ""))
    except (TypeError, ValueError):
        return None


def message_item(raw: dict[str, Any], label: str = "", with_body: bool = False) -> Item:
    """A message (``kind=mail``): sender, recipients and received time inline; with the body
    fetched (``format=full``) the item carries its text, else the snippet."""
    head = headers(raw)
    labels = list(raw.get("labelIds") or [])
    got = received(raw)
    body = text_body(raw)[0] if with_body else ""
    folder = label or (labels[0] if labels else "")
    return Item(
        id=f"mail:{raw['id']}",
        title=head.get("subject") or "(no subject)",
        kind="mail",
        path=f"/mail/{folder}/{raw['id']}" if folder else f"/mail/{raw['id']}",
        url=f"https://mail.google.com/mail/#all/{raw['id']}",
        modified=got,
        author=head.get("from") or None,
        # with the body fetched the size is that text's (what a walker indexes); a listing
        # only has Gmail's estimate of the whole MIME message (under vendor)
        size=len(body.encode()) if with_body else None,
        mime="text/plain" if with_body else "message/rfc822",
        version=str(raw.get("historyId") or "") or None,
        extra={
            "from": head.get("from", ""),
            "to": [a.strip() for a in head.get("to", "").split(",") if a.strip()],
            "date": got.isoformat().replace("+00:00", "Z") if got else head.get("date"),
            "labels": labels,
            "vendor": {
                "threadId": raw.get("threadId"),
                "isRead": "UNREAD" not in labels,
                "starred": "STARRED" in labels,
                "sizeEstimate": raw.get("sizeEstimate"),
            },
        },
        content=body if with_body else raw.get("snippet"),
    )


def attachment_items(raw: dict[str, Any]) -> list[Item]:
    """The file attachments of a ``format=full`` message (downloadable by their ids)."""
    out = []
    for part in walk_parts(raw.get("payload") or {}):
        body = part.get("body") or {}
        if part.get("filename") and (body.get("attachmentId") or body.get("data")):
            out.append(
                Item(
                    id=f"attachment:{raw['id']}:{part.get('partId', '')}",
                    title=part["filename"],
                    kind="file",
                    path=f"/mail/attachments/{raw['id']}/{part['filename']}",
                    size=body.get("size"),
                    mime=part.get("mimeType"),
                    modified=received(raw),
                )
            )
    return out


def label_item(raw: dict[str, Any]) -> Item:
    """A Gmail label (browse ``/mail/<id>`` for its messages)."""
    return Item(
        id=f"label:{raw['id']}",
        title=raw.get("name") or raw["id"],
        kind="folder",
        path=f"/mail/{raw['id']}",
        extra={"vendor": {"type": raw.get("type"), "messagesTotal": raw.get("messagesTotal")}},
    )


def thread_item(raw: dict[str, Any], label: str = "") -> Item:
    """A thread (browse ``/threads/<id>`` for its messages)."""
    return Item(
        id=f"thread:{raw['id']}",
        title=raw.get("snippet") or raw["id"],
        kind="folder",
        path=f"/threads/{raw['id']}",
        version=str(raw.get("historyId") or "") or None,
        extra={"vendor": {"label": label}},
    )


def file_item(raw: dict[str, Any], prefix: str = "") -> Item:
    """A Drive file or folder. ``prefix`` is the browsed container's path; without it the
    file's drive decides (``/drives/<driveId>`` for shared-drive items, else ``/drive``)."""
    is_folder = raw.get("mimeType") == FOLDER_MIME
    if not prefix:
        prefix = f"/drives/{raw['driveId']}" if raw.get("driveId") else "/drive"
    size = raw.get("size")
    user = raw.get("lastModifyingUser") or {}
    owners = raw.get("owners") or [{}]
    return Item(
        id=f"file:{raw['id']}",
        title=raw.get("name") or raw["id"],
        kind="folder" if is_folder else "file",
        path=f"{prefix.rstrip('/')}/{raw.get('name') or raw['id']}",
        url=raw.get("webViewLink"),
        modified=when(raw.get("modifiedTime")),
        author=user.get("displayName") or owners[0].get("displayName"),
        size=None if is_folder or size is None else int(size),
        mime=raw.get("mimeType"),
        version=str(raw.get("version") or raw.get("md5Checksum") or "") or None,
        extra={
            "vendor": {
                "driveId": raw.get("driveId"),
                "parents": list(raw.get("parents") or []),
                "md5Checksum": raw.get("md5Checksum"),
            }
        },
    )


def shared_drive_item(raw: dict[str, Any]) -> Item:
    """A shared drive (browse ``/drives/<id>`` for its root)."""
    return Item(
        id=f"drive:{raw['id']}",
        title=raw.get("name") or raw["id"],
        kind="folder",
        path=f"/drives/{raw['id']}",
        modified=when(raw.get("createdTime")),
    )


def _event_time(value: dict[str, Any] | None) -> str | None:
    if not value:
        return None
    return value.get("dateTime") or value.get("date")


def event_item(raw: dict[str, Any], calendar: str, synced: bool = False) -> Item:
    """A calendar event (``kind=event``): start, end and place inline; its text (summary,
    place, description) as content so walkers index it without a download (a synced item's
    size is that text's; listings have no size)."""
    organizer = raw.get("organizer") or {}
    text = "\n".join(
        p for p in (raw.get("summary"), raw.get("location"), raw.get("description")) if p
    )
    return Item(
        id=f"event:{calendar}:{raw['id']}",
        title=raw.get("summary") or "(no title)",
        kind="event",
        path=f"/calendar/{calendar}/{raw['id']}",
        url=raw.get("htmlLink"),
        modified=when(raw.get("updated")),
        author=organizer.get("displayName") or organizer.get("email"),
        size=len(text.encode()) if synced else None,
        mime="text/plain",
        version=raw.get("etag"),
        extra={
            "start": _event_time(raw.get("start")),
            "end": _event_time(raw.get("end")),
            "location": raw.get("location") or "",
            "vendor": {
                "status": raw.get("status"),
                "recurringEventId": raw.get("recurringEventId"),
            },
        },
        content=text,
    )


def calendar_item(raw: dict[str, Any]) -> Item:
    """A calendar of the user's calendar list (browse ``/calendar/<id>`` for its events)."""
    return Item(
        id=f"calendar:{raw['id']}",
        title=raw.get("summaryOverride") or raw.get("summary") or raw["id"],
        kind="folder",
        path=f"/calendar/{raw['id']}",
        extra={"vendor": {"accessRole": raw.get("accessRole"), "primary": raw.get("primary")}},
    )


def _first(raw: dict[str, Any], key: str, field: str) -> str:
    values = raw.get(key) or []
    primary = [v for v in values if (v.get("metadata") or {}).get("primary")]
    return str(((primary or values or [{}])[0]).get(field) or "")


def person_item(raw: dict[str, Any], synced: bool = False) -> Item:
    """A contact (``kind=contact``): e-mail, phone and company inline (Google's ``emails``
    are ``emailAddresses`` in the People API); name, addresses and notes as content."""
    person_id = raw["resourceName"].removeprefix("people/")
    name = _first(raw, "names", "displayName")
    email = _first(raw, "emailAddresses", "value")
    phone = _first(raw, "phoneNumbers", "value")
    company = _first(raw, "organizations", "name")
    notes = _first(raw, "biographies", "value")
    text = "\n".join(p for p in (name, email, phone, company, notes) if p)
    sources = (raw.get("metadata") or {}).get("sources") or [{}]
    return Item(
        id=f"contact:{person_id}",
        title=name or email or "(no name)",
        kind="contact",
        path=f"/contacts/{person_id}",
        modified=when(sources[0].get("updateTime")),
        size=len(text.encode()) if synced else None,
        mime="text/plain",
        version=raw.get("etag"),
        extra={
            "email": email,
            "phone": phone,
            "company": company,
            "vendor": {"emails": [e.get("value") for e in raw.get("emailAddresses") or []]},
        },
        content=text,
    )
