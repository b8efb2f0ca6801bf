"""Graph resources (message, event, contact, driveItem, site, drive, mailFolder, calendar,
attachment) as the kernel's one metadata block, :class:`~nyla.sdk.connectors.Item`."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from nyla.sdk.connectors import Item


def when(value: str | None) -> datetime | None:
    """A Graph timestamp (``2026-01-05T09:30:00Z`` or with fractions) as a datetime."""
    if not value:
        return None
    text = value.replace("Z", "+00:00")
    head, dot, tail = text.partition(".")
    if dot:  # Graph sends up to 7 fractional digits; Python takes 6
        digits = "".join(c for c in tail if c.isdigit())
        zone = tail[len(digits) :]
        text = f"{head}.{digits[:6]}{zone}"
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        return None


def address(recipient: dict[str, Any] | None) -> str:
    """``Name <address>`` of a Graph recipient (or the part that exists)."""
    email = (recipient or {}).get("emailAddress") or {}
    name, addr = email.get("name") or "", email.get("address") or ""
    if name and addr and name != addr:
        return f"{name} <{addr}>"
    return addr or name


def message_item(raw: dict[str, Any], folder: str = "") -> Item:
    """A message (``kind=mail``): sender, recipients and received time inline; the preview
    as content (the full body comes with ``read_message`` or ``download``)."""
    folder = folder or raw.get("parentFolderId") or ""
    flag = (raw.get("flag") or {}).get("flagStatus")
    vendor = {
        "isRead": raw.get("isRead"),
        "hasAttachments": raw.get("hasAttachments"),
        "importance": raw.get("importance"),
        "flag": flag,
        "isDraft": raw.get("isDraft"),
        "conversationId": raw.get("conversationId"),
    }
    received = raw.get("receivedDateTime") or raw.get("sentDateTime")
    body = (raw.get("body") or {}).get("content")
    return Item(
        id=f"mail:{raw['id']}",
        title=raw.get("subject") or "(no subject)",
        kind="mail",
        path=f"/mail/{folder}/{raw['id']}" if folder else f"/mail/{raw['id']}",
        url=raw.get("webLink"),
        modified=when(raw.get("lastModifiedDateTime") or received),
        author=address(raw.get("from") or raw.get("sender")) or None,
        # with the body selected the item carries its text (what a walker indexes), and its
        # size is that text's; otherwise downloads give the MIME message
        size=len(body.encode()) if body else None,
        mime="text/plain" if body else "message/rfc822",
        version=raw.get("changeKey"),
        extra={
            "from": address(raw.get("from") or raw.get("sender")),
            "to": [address(r) for r in raw.get("toRecipients") or []],
            "date": received,
            "labels": list(raw.get("categories") or []),
            "vendor": {k: v for k, v in vendor.items() if v is not None},
        },
        content=body or raw.get("bodyPreview"),
    )


def attachment_item(message_id: str, raw: dict[str, Any]) -> Item:
    """A file attachment of a message (downloadable by its id)."""
    return Item(
        id=f"attachment:{message_id}:{raw['id']}",
        title=raw.get("name") or "attachment",
        kind="file",
        path=f"/mail/attachments/{message_id}/{raw.get('name') or raw['id']}",
        modified=when(raw.get("lastModifiedDateTime")),
        size=raw.get("size"),
        mime=raw.get("contentType"),
        extra={"vendor": {"isInline": raw.get("isInline"), "type": raw.get("@odata.type")}},
    )


def _event_time(value: dict[str, Any] | None) -> str | None:
    if not value or not value.get("dateTime"):
        return None
    zone = value.get("timeZone") or "UTC"
    stamp = value["dateTime"].split(".")[0]
    return f"{stamp}Z" if zone.upper() == "UTC" else f"{stamp} ({zone})"


def event_item(raw: dict[str, Any], calendar: str = "") -> Item:
    """A calendar event (``kind=event``): start, end and place inline."""
    location = (raw.get("location") or {}).get("displayName") or ""
    return Item(
        id=f"event:{raw['id']}",
        title=raw.get("subject") or "(no title)",
        kind="event",
        path=f"/calendar/{calendar or 'default'}/{raw['id']}",
        url=raw.get("webLink"),
        modified=when(raw.get("lastModifiedDateTime")),
        author=address(raw.get("organizer")) or None,
        version=raw.get("changeKey"),
        extra={
            "start": _event_time(raw.get("start")),
            "end": _event_time(raw.get("end")),
            "location": location,
            "vendor": {"isAllDay": raw.get("isAllDay"), "showAs": raw.get("showAs")},
        },
        content=raw.get("bodyPreview"),
    )


def contact_item(raw: dict[str, Any]) -> Item:
    """A contact (``kind=contact``): e-mail, phone and company inline."""
    emails = [e.get("address") for e in raw.get("emailAddresses") or [] if e.get("address")]
    phones = [
        *(raw.get("businessPhones") or []),
        raw.get("mobilePhone"),
        *(raw.get("homePhones") or []),
    ]
    phones = [p for p in phones if p]
    return Item(
        id=f"contact:{raw['id']}",
        title=raw.get("displayName") or (emails[0] if emails else "(no name)"),
        kind="contact",
        path=f"/contacts/{raw['id']}",
        modified=when(raw.get("lastModifiedDateTime")),
        version=raw.get("changeKey"),
        extra={
            "email": emails[0] if emails else "",
            "phone": phones[0] if phones else "",
            "company": raw.get("companyName") or "",
            "vendor": {"jobTitle": raw.get("jobTitle"), "emails": emails},
        },
    )


def drive_item(
    raw: dict[str, Any], prefix: str = "", folder: str | None = None, drive: str = ""
) -> Item:
    """A driveItem (file or folder). ``prefix`` is the path of the drive's root in this
    connector's grammar (``/drive``, ``/drives/<id>``, ``/sites/<site>/<drive>``); without
    it the item's own drive (and site, when Graph says) decides. ``folder`` (``/A/B``) is
    where the item sits when the caller knows it from ids (delta answers carry no
    ``parentReference.path``); else that path is read, where Graph gives it."""
    parent = raw.get("parentReference") or {}
    drive_id = parent.get("driveId") or drive
    if not prefix:
        site = parent.get("siteId")
        prefix = f"/sites/{site}/{drive_id}" if site else f"/drives/{drive_id}"
    if folder is None:
        folder = (parent.get("path") or "").split("root:", 1)[-1] if parent.get("path") else ""
    is_folder = "folder" in raw
    author = ((raw.get("lastModifiedBy") or raw.get("createdBy") or {}).get("user") or {}).get(
        "displayName"
    )
    return Item(
        id=f"file:{drive_id}:{raw['id']}",
        title=raw.get("name") or raw["id"],
        kind="folder" if is_folder else "file",
        path=f"{prefix.rstrip('/')}{folder.rstrip('/')}/{raw.get('name') or raw['id']}",
        url=raw.get("webUrl"),
        modified=when(raw.get("lastModifiedDateTime")),
        author=author,
        size=None if is_folder else raw.get("size"),
        mime=(raw.get("file") or {}).get("mimeType"),
        version=raw.get("cTag") or raw.get("eTag"),
        extra={"vendor": {"driveId": drive_id, "siteId": parent.get("siteId")}},
    )


def site_item(raw: dict[str, Any]) -> Item:
    """A SharePoint site (a container: browse it for its libraries)."""
    return Item(
        id=f"site:{raw['id']}",
        title=raw.get("displayName") or raw.get("name") or raw["id"],
        kind="folder",
        path=f"/sites/{raw['id']}",
        url=raw.get("webUrl"),
        modified=when(raw.get("lastModifiedDateTime")),
        extra={"vendor": {"description": raw.get("description") or ""}},
    )


def library_item(raw: dict[str, Any], site: str = "") -> Item:
    """A drive (a SharePoint document library or a OneDrive)."""
    prefix = f"/sites/{site}/{raw['id']}" if site else f"/drives/{raw['id']}"
    return Item(
        id=f"library:{raw['id']}",
        title=raw.get("name") or raw["id"],
        kind="folder",
        path=prefix,
        url=raw.get("webUrl"),
        modified=when(raw.get("lastModifiedDateTime")),
        extra={
            "vendor": {"driveType": raw.get("driveType"), "description": raw.get("description")}
        },
    )


def mail_folder_item(raw: dict[str, Any]) -> Item:
    """A mail folder (browse ``/mail/<id>`` for its messages)."""
    return Item(
        id=f"mailfolder:{raw['id']}",
        title=raw.get("displayName") or raw["id"],
        kind="folder",
        path=f"/mail/{raw['id']}",
        extra={
            "vendor": {
                "totalItemCount": raw.get("totalItemCount"),
                "unreadItemCount": raw.get("unreadItemCount"),
            }
        },
    )


def calendar_item(raw: dict[str, Any]) -> Item:
    """A calendar (browse ``/calendar/<id>`` for its events)."""
    return Item(
        id=f"calendar:{raw['id']}",
        title=raw.get("name") or raw["id"],
        kind="folder",
        path=f"/calendar/{raw['id']}",
        author=address(raw.get("owner")) or None,
    )
