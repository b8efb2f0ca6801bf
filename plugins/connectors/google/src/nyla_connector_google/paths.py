"""The path and id grammar of the Google connector, and where each Google API lives.

One connection reaches every surface of the account, so paths name the surface first:

==================================  ==================================================
path                                what it is
==================================  ==================================================
``/`` (or ``""``)                   the surfaces below
``/mail``                           Gmail labels
``/mail/<labelId>``                 messages with that label (``INBOX``, ``SENT``,
                                    ``Label_12`` ...)
``/threads``                        threads (``?label=INBOX`` narrows them)
``/threads/<threadId>``             the messages of one thread
``/drive``, ``/drive/<folderId>``   My Drive's root, a folder by id (any drive)
``/drives``                         shared drives
``/drives/<driveId>[/<folderId>]``  a shared drive's root, a folder in it
``/calendar``                       calendars
``/calendar/<calendarId>``          events (``primary`` is the user's calendar)
``/contacts``                       contacts (People API connections)
==================================  ==================================================

``?from=2026-01-01&to=2026-02-01`` narrows mail (``after:``/``before:``) and calendar
(``timeMin``/``timeMax``) listings.

Item ids carry what the API needs to reach the item again: ``mail:<messageId>``,
``attachment:<messageId>:<partId>``, ``draft:<draftId>:<messageId>``, ``thread:<threadId>``,
``file:<fileId>``, ``event:<calendarId>:<eventId>``, ``contact:<personId>``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qsl

from nyla.sdk.connectors import (
    ConnectorContext,
    VendorBadRequestError,
    confine_path,
    safe_segment,
    url_segment,
)

#: where each API lives (Google's documented hosts); a connection with ``baseUrl`` (a
#: proxy or a test server) serves all of them below that root under these prefixes
APIS = {
    "gmail": ("https://gmail.googleapis.com", "/gmail/v1"),
    "drive": ("https://www.googleapis.com", "/drive/v3"),
    "calendar": ("https://www.googleapis.com", "/calendar/v3"),
    "people": ("https://people.googleapis.com", "/v1"),
}
#: the prefix of the People API below a connection's ``baseUrl`` (its own host otherwise)
PEOPLE_UNDER_BASE = "/people/v1"

#: mail folder names the email toolbox uses, as Gmail's system labels
WELL_KNOWN_LABELS = {
    "inbox": "INBOX",
    "sentitems": "SENT",
    "sent": "SENT",
    "drafts": "DRAFT",
    "junkemail": "SPAM",
    "spam": "SPAM",
    "deleteditems": "TRASH",
    "trash": "TRASH",
    "starred": "STARRED",
    "important": "IMPORTANT",
}


def api(ctx: ConnectorContext, name: str, path: str) -> str:
    """The URL of ``path`` in API ``name`` (``gmail``, ``drive``, ``calendar``, ``people``)."""
    host, prefix = APIS[name]
    if ctx.connection.base_url:
        return f"{PEOPLE_UNDER_BASE if name == 'people' else prefix}{path}"
    return f"{host}{prefix}{path}"


def label_id(name: str) -> str:
    """A label id from a folder name (``inbox`` -> ``INBOX``); ids pass through, checked
    as one segment (``UnsafePathError`` for ``..`` and the like)."""
    if not name:
        return ""
    return WELL_KNOWN_LABELS.get(name.lower()) or safe_segment(name, what="label", service="google")


@dataclass(frozen=True)
class Target:
    """What a path points at. ``kind`` is one of ``root``, ``labels``, ``mail``, ``threads``,
    ``thread``,
    ``drive``, ``drives``, ``calendars``, ``calendar``, ``contacts``."""

    kind: str
    path: str
    ident: str = ""
    drive: str = ""
    params: dict[str, str] = field(default_factory=dict)

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
            f"google: {name}={value!r} is not an ISO date (e.g. 2026-01-31)", service="google"
        ) from exc
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def parse(path: str) -> Target:
    """The target of a browse path or sync scope; a clear error for anything else."""
    raw, _, query = (path or "").partition("?")
    params = dict(parse_qsl(query))
    clean_path = confine_path("", raw.strip(), service="google")  # no `..`, no look-alikes
    parts = clean_path.split("/") if clean_path else []
    clean = "/" + "/".join(parts) if parts else "/"
    if not parts:
        return Target("root", clean)
    head, rest = parts[0], parts[1:]
    if head == "mail":
        if not rest:
            return Target("labels", clean)
        return Target("mail", clean, ident=label_id(rest[0]), params=params)
    if head == "threads" and len(rest) <= 1:
        if not rest:
            return Target("threads", clean, ident=label_id(params.get("label", "")))
        return Target("thread", clean, ident=rest[0])
    if head == "drive" and len(rest) <= 1:
        return Target("drive", clean, ident=rest[0] if rest else "root")
    if head == "drives":
        if not rest:
            return Target("drives", clean)
        if len(rest) <= 2:
            return Target("drive", clean, ident=rest[-1], drive=rest[0])
    if head == "calendar" and len(rest) <= 1:
        if not rest:
            return Target("calendars", clean)
        return Target("calendar", clean, ident=rest[0], params=params)
    if head == "contacts" and not rest:
        return Target("contacts", clean)
    raise VendorBadRequestError(
        f"google: unknown path {path!r}; paths are /mail[/<label>], /threads/<id>, "
        "/drive[/<folderId>], /drives[/<driveId>[/<folderId>]], /calendar[/<calendarId>], "
        "/contacts",
        service="google",
    )


_ARITY = {"mail": 1, "thread": 1, "file": 1, "contact": 1, "event": 2, "attachment": 2, "draft": 2}


def split_id(item_id: str) -> tuple[str, list[str]]:
    """``kind:a:b`` -> (``kind``, [``a``, ``b``]); a clear error for ids of no known kind."""
    kind, _, rest = item_id.partition(":")
    if kind not in _ARITY or not rest:
        raise VendorBadRequestError(
            f"google: {item_id!r} is not an item id of this connector (mail:…, "
            "attachment:<message>:<part>, draft:<draft>:<message>, thread:…, file:…, "
            "event:<calendar>:<event>, contact:…)",
            service="google",
        )
    parts = rest.split(":", _ARITY[kind] - 1)
    if len(parts) != _ARITY[kind] or not all(parts):
        raise VendorBadRequestError(f"google: malformed {kind} id {item_id!r}", service="google")
    for part in parts:
        safe_segment(part, what=f"{kind} id", service="google", max_bytes=4096)
    return kind, parts


def quoted(value: str) -> str:
    """An id as one URL path segment, checked and percent-encoded (calendar ids carry ``@``
    and ``#``; a hostile id's ``../`` or ``?`` must not reshape the URL)."""
    return url_segment(value, service="google")


def rfc3339(value: datetime) -> str:
    """A datetime as Google's APIs take it (UTC, ``Z``)."""
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def getter(ctx: ConnectorContext, url: str) -> Callable[[dict[str, Any]], Awaitable[Any]]:
    """GETs of ``url`` with a query, for :func:`nyla.sdk.connectors.token_pages`."""
    return lambda params: ctx.http.get_json(url, params=params)
