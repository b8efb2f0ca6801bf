"""The path and id grammar of the Microsoft 365 connector.

One connection reaches every Graph surface of the account, so paths name the surface first:

==================================  ==================================================
path                                what it is
==================================  ==================================================
``/`` (or ``""``)                   the surfaces below
``/mail``                           mail folders
``/mail/<folder>``                  messages of a folder (id or well-known name:
                                    ``inbox``, ``sentitems``, ``drafts``, ``archive``)
``/calendar``                       calendars
``/calendar/<calendarId>``          events (``default`` is the user's calendar)
``/contacts``                       contacts
``/drive/<folder path>``            the user's OneDrive
``/drives/<driveId>/<folder path>`` any drive by id
``/sites``                          SharePoint sites
``/sites/<siteId>``                 a site's document libraries
``/sites/<siteId>/<driveId>/<..>``  a library's folders and files
==================================  ==================================================

A date range narrows mail and calendar listings: ``/mail/inbox?from=2026-01-01&to=2026-02-01``.

Item ids carry what Graph needs to reach the item again: ``mail:<messageId>``,
``attachment:<messageId>:<attachmentId>``, ``event:<eventId>``, ``contact:<contactId>``,
``file:<driveId>:<itemId>``, ``site:<siteId>``, ``library:<driveId>``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from urllib.parse import parse_qsl

from nyla.sdk.connectors import (
    VendorBadRequestError,
    confine_path,
    confine_url,
    safe_segment,
    url_path,
    url_segment,
)

GRAPH = "https://graph.microsoft.com/v1.0"
#: well-known mail folder names Graph accepts in place of an id
WELL_KNOWN_FOLDERS = ("inbox", "sentitems", "drafts", "archive", "deleteditems", "junkemail")


@dataclass(frozen=True)
class Target:
    """What a path points at. ``kind`` is one of ``root``, ``mail_folders``, ``mail``,
    ``calendars``, ``calendar``, ``contacts``, ``sites``, ``site``, ``drive``."""

    kind: str
    path: str
    folder: str = ""
    #: the drive's id as Graph gave it (``""``: the user's own OneDrive)
    drive: str = ""
    drive_api: str = ""
    drive_prefix: str = ""
    subpath: str = ""
    site: str = ""
    params: dict[str, str] = field(default_factory=dict)

    def folder_api(self) -> str:
        """The Graph URL of the drive folder (``.../root`` or ``.../root:/a/b:``)."""
        if not self.subpath:
            return f"{self.drive_api}/root"
        return f"{self.drive_api}/root:/{url_path(self.subpath)}:"

    def date_range(self) -> tuple[datetime | None, datetime | None]:
        """``?from=``/``?to=`` as UTC datetimes (``None`` when absent)."""
        return _date(self.params.get("from"), "from"), _date(self.params.get("to"), "to")


def _date(value: str | None, name: str) -> datetime | None:
    if not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError as exc:
        raise VendorBadRequestError(
            f"msft: {name}={value!r} is not an ISO date (e.g. 2026-01-31)", service="msft"
        ) from exc
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def seg(value: str, what: str = "id") -> str:
    """A Graph id or name as one URL path segment (checked and percent-encoded)."""
    return url_segment(value, what=what, service="msft")


def follow(cursor: str | None) -> str | None:
    """A cursor as this connector hands them out: a Graph ``@odata.nextLink`` (followed
    only on Graph, below ``/v1.0``: the token goes with it) or ``from:<offset>``."""
    if cursor is None or cursor.startswith("from:"):
        return cursor
    return confine_url(GRAPH, cursor, service="msft")


def offset(cursor: str | None) -> int:
    """The offset in a ``from:<n>`` cursor (0 without one)."""
    if not cursor:
        return 0
    value = cursor.removeprefix("from:")
    if not (value.isascii() and value.isdigit() and len(value) < 10):
        raise VendorBadRequestError(f"msft: {cursor[:40]!r} is not a search cursor", service="msft")
    return int(value)


def _segments(raw: str) -> list[str]:
    """The segments of a path, each checked: no ``..``, no encoded or look-alike
    separator, no control character (:func:`~nyla.sdk.paths.confine_path`)."""
    clean = confine_path("", raw.strip(), service="msft")
    return clean.split("/") if clean else []


def parse(path: str) -> Target:
    """The target of a browse path or sync scope; a clear error for anything else."""
    raw, _, query = (path or "").partition("?")
    params = dict(parse_qsl(query))
    parts = _segments(raw)
    clean = "/" + "/".join(parts) if parts else "/"
    if not parts:
        return Target("root", clean)
    head, rest = parts[0], parts[1:]
    if head == "mail":
        if not rest:
            return Target("mail_folders", clean)
        return Target("mail", clean, folder=rest[0], params=params)
    if head == "calendar":
        if not rest:
            return Target("calendars", clean)
        return Target("calendar", clean, folder=rest[0], params=params)
    if head == "contacts":
        return Target("contacts", clean, folder=rest[0] if rest else "")
    if head == "drive":
        return Target(
            "drive", clean, drive_api="/me/drive", drive_prefix="/drive", subpath="/".join(rest)
        )
    if head == "drives" and rest:
        return Target(
            "drive",
            clean,
            drive=rest[0],
            drive_api=f"/drives/{seg(rest[0], 'drive id')}",
            drive_prefix=f"/drives/{rest[0]}",
            subpath="/".join(rest[1:]),
        )
    if head == "sites":
        if not rest:
            return Target("sites", clean)
        if len(rest) == 1:
            return Target("site", clean, site=rest[0])
        return Target(
            "drive",
            clean,
            site=rest[0],
            drive=rest[1],
            drive_api=f"/drives/{seg(rest[1], 'drive id')}",
            drive_prefix=f"/sites/{rest[0]}/{rest[1]}",
            subpath="/".join(rest[2:]),
        )
    raise VendorBadRequestError(
        f"msft: unknown path {path!r}; paths start with /mail, /calendar, /contacts, /drive, "
        "/drives/<driveId> or /sites",
        service="msft",
    )


def split_id(item_id: str) -> tuple[str, list[str]]:
    """``kind:a:b`` -> (``kind``, [``a``, ``b``]); a clear error for ids of no known kind."""
    kind, _, rest = item_id.partition(":")
    arity = {"mail": 1, "event": 1, "contact": 1, "file": 2, "attachment": 2}
    if kind not in arity or not rest:
        raise VendorBadRequestError(
            f"msft: {item_id!r} is not an item id of this connector (mail:…, event:…, "
            "contact:…, file:<drive>:<item>, attachment:<message>:<attachment>)",
            service="msft",
        )
    parts = rest.split(":", arity[kind] - 1)
    if len(parts) != arity[kind] or not all(parts):
        raise VendorBadRequestError(f"msft: malformed {kind} id {item_id!r}", service="msft")
    for part in parts:
        safe_segment(part, what=f"{kind} id", service="msft", max_bytes=4096)
    return kind, parts


def graph_time(value: datetime) -> str:
    """A datetime as Graph's filters and calendarView take it (UTC, ``Z``)."""
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
