"""Infomaniak calendars over CalDAV (RFC 4791) with WebDAV sync (RFC 6578), through the
kernel's HTTP layer; events parsed with ``icalendar``.

``/calendar`` lists the calendars of the account's calendar home
(``{caldavUrl}/calendars/{account}/``), ``/calendar/<name>`` its events over a date range
(``?from=&to=``, clamped to the vendor's limit of under three months), and a sync of
``/calendar/<name>`` runs ``sync-collection`` with the sync token as the checkpoint. An
invalid token (403 ``valid-sync-token``) raises ``CursorExpiredError``.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import AsyncIterator
from datetime import UTC, date, datetime, timedelta
from typing import Any
from urllib.parse import parse_qsl
from xml.sax.saxutils import escape

from pydantic import Field

from nyla.sdk.connectors import (
    ConnectorContext,
    CursorExpiredError,
    DeltaCheckpoint,
    Download,
    Item,
    ItemPage,
    SyncPage,
    VendorBadRequestError,
    VendorBadResponseError,
    VendorForbiddenError,
    confine_url,
    url_segment,
)

DEFAULT_CALDAV = "https://sync.infomaniak.com"
NS = {"d": "DAV:", "c": "urn:ietf:params:xml:ns:caldav"}
#: Infomaniak answers ranges of three months or more with an error: stay under it
MAX_RANGE = timedelta(days=89)
DEFAULT_PAST = timedelta(days=30)
SYNC_PAGE = 100
PROPS = "<d:prop><d:getetag/><d:getcontentlength/><c:calendar-data/></d:prop>"
HEAD = '<?xml version="1.0" encoding="utf-8"?>'
XMLNS = 'xmlns:d="DAV:" xmlns:c="urn:ietf:params:xml:ns:caldav"'


def home(ctx: ConnectorContext) -> str:
    """The account's calendar home URL."""
    base = str(ctx.connection.settings.get("caldavUrl") or DEFAULT_CALDAV).rstrip("/")
    user = str(ctx.connection.settings.get("caldavUser") or ctx.connection.account)
    if not user:
        raise VendorBadRequestError(
            "infomaniak: the connection names no CalDAV user (account or caldavUser setting)",
            service="infomaniak",
        )
    return f"{base}/calendars/{url_segment(user, what='CalDAV user', service='infomaniak')}/"


def calendar_url(ctx: ConnectorContext, path: str) -> tuple[str, str, dict[str, str]]:
    """(collection URL, calendar name, query) of ``/calendar/<name>?from=&to=``."""
    raw, _, query = path.partition("?")
    parts = [p for p in raw.split("/") if p]
    if parts[:1] != ["calendar"] or len(parts) != 2:
        raise VendorBadRequestError(
            f"infomaniak: {path!r} is not a calendar (/calendar/<name>)", service="infomaniak"
        )
    name = url_segment(parts[1], what="calendar name", service="infomaniak")
    return f"{home(ctx)}{name}/", parts[1], dict(parse_qsl(query))


def clamp(since: datetime | None, until: datetime | None) -> tuple[datetime, datetime]:
    """A range the vendor accepts: at most :data:`MAX_RANGE` long, from ``since``."""
    start = since or datetime.now(UTC) - DEFAULT_PAST
    end = until or start + MAX_RANGE
    if end <= start:
        raise VendorBadRequestError(
            "infomaniak: the range ends before it starts", service="infomaniak"
        )
    return start, min(end, start + MAX_RANGE)


def _when(value: str | None, name: str) -> datetime | None:
    if not value:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError as exc:
        raise VendorBadRequestError(
            f"infomaniak: {name}={value!r} is not an ISO date", service="infomaniak"
        ) from exc
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _stamp(value: datetime) -> str:
    return value.astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")


def _iso(value: Any) -> str | None:
    if value is None:
        return None
    dt = value.dt
    if isinstance(dt, datetime):
        return (
            dt.astimezone(UTC).isoformat().replace("+00:00", "Z") if dt.tzinfo else dt.isoformat()
        )
    return dt.isoformat() if isinstance(dt, date) else str(dt)


def event_item(
    href: str, etag: str | None, ics: str, calendar: str, size: int | None = None
) -> Item:
    """The first VEVENT of an iCalendar object as an event item (``size``: the stored
    object's length, when the server said)."""
    from icalendar import Calendar

    name = href.rstrip("/").rsplit("/", 1)[-1]
    try:
        event = next(iter(Calendar.from_ical(ics).walk("VEVENT")), None)
    except ValueError:  # not iCalendar: still the stored object, shown by its name
        event = None
    if event is None:
        return Item(
            id=f"caldav:{href}", title=name, kind="other", path=f"/calendar/{calendar}/{name}"
        )
    changed = event.get("LAST-MODIFIED") or event.get("DTSTAMP")
    title = str(event.get("SUMMARY") or "(no title)")
    start, end = _iso(event.get("DTSTART")), _iso(event.get("DTEND"))
    where = str(event.get("LOCATION") or "")
    # the text a walker indexes: what the event is, when, where, and its description
    text = f"{title}\n{start or ''} – {end or ''}\n{where}\n\n{event.get('DESCRIPTION') or ''}"
    organizer = str(event.get("ORGANIZER") or "").removeprefix("mailto:").removeprefix("MAILTO:")
    return Item(
        id=f"caldav:{href}",
        title=title,
        kind="event",
        path=f"/calendar/{calendar}/{name}",
        modified=changed.dt if changed is not None and isinstance(changed.dt, datetime) else None,
        author=organizer or None,
        size=size,
        mime="text/plain",
        version=etag,
        extra={
            "start": start,
            "end": end,
            "location": where,
            "vendor": {"uid": str(event.get("UID") or "")},
        },
        content=text,
    )


Found = tuple[str, str, str | None, str | None, int | None]


def _xml(body: bytes) -> ET.Element:
    """A multistatus answer's root; an answer that is no XML is the server's fault, typed."""
    try:
        return ET.fromstring(body)
    except ET.ParseError as exc:
        raise VendorBadResponseError(
            f"infomaniak: the CalDAV server's answer is not XML ({exc})", service="infomaniak"
        ) from exc


def _responses(body: bytes) -> tuple[list[Found], str | None]:
    """(href, status, etag, calendar-data, length) of each response, and the sync token."""
    root = _xml(body)
    out = []
    for response in root.findall("d:response", NS):
        href = response.findtext("d:href", "", NS)
        status = response.findtext("d:status", "", NS)
        etag = data = length = None
        for propstat in response.findall("d:propstat", NS):
            status = propstat.findtext("d:status", status, NS)
            etag = propstat.findtext("d:prop/d:getetag", None, NS)
            data = propstat.findtext("d:prop/c:calendar-data", None, NS)
            raw_length = propstat.findtext("d:prop/d:getcontentlength", "", NS)
            length = int(raw_length) if raw_length.strip().isdigit() else None
        out.append((href, status, etag, data, length))
    return out, root.findtext("d:sync-token", None, NS)


async def report(ctx: ConnectorContext, url: str, body: str) -> bytes:
    """A REPORT (Depth 1); an invalid sync token becomes CursorExpiredError."""
    headers = {"Depth": "1", "Content-Type": "application/xml; charset=utf-8"}
    try:
        response = await ctx.http.request("REPORT", url, content=body.encode(), headers=headers)
    except VendorForbiddenError as exc:
        if "valid-sync-token" in str(exc):
            raise CursorExpiredError(str(exc), service="infomaniak") from exc
        raise
    return response.content


async def calendars(ctx: ConnectorContext) -> ItemPage:
    """The calendars of the home (PROPFIND Depth 1)."""
    body = (
        f"{HEAD}<d:propfind {XMLNS}><d:prop><d:displayname/><d:resourcetype/></d:prop></d:propfind>"
    )
    response = await ctx.http.request(
        "PROPFIND",
        home(ctx),
        content=body.encode(),
        headers={"Depth": "1", "Content-Type": "application/xml"},
    )
    items = []
    for node in _xml(response.content).findall("d:response", NS):
        if node.find("d:propstat/d:prop/d:resourcetype/c:calendar", NS) is None:
            continue
        name = node.findtext("d:href", "", NS).rstrip("/").rsplit("/", 1)[-1]
        title = node.findtext("d:propstat/d:prop/d:displayname", None, NS) or name
        items.append(
            Item(id=f"calendar:{name}", title=title, kind="folder", path=f"/calendar/{name}")
        )
    return ItemPage(items=items)


async def events(ctx: ConnectorContext, path: str) -> ItemPage:
    """Events of a calendar in a (clamped) date range (``calendar-query``)."""
    url, name, query = calendar_url(ctx, path)
    start, end = clamp(_when(query.get("from"), "from"), _when(query.get("to"), "to"))
    body = (
        f'{HEAD}<c:calendar-query {XMLNS}>{PROPS}<c:filter><c:comp-filter name="VCALENDAR">'
        f'<c:comp-filter name="VEVENT"><c:time-range start="{_stamp(start)}" end="{_stamp(end)}"/>'
        "</c:comp-filter></c:comp-filter></c:filter></c:calendar-query>"
    )
    found, _ = _responses(await report(ctx, url, body))
    return ItemPage(items=[event_item(h, e, d, name, n) for h, _, e, d, n in found if d])


async def search(ctx: ConnectorContext, query: str, path: str) -> ItemPage:
    """Events whose title contains ``query`` (``text-match`` on SUMMARY)."""
    url, name, _ = calendar_url(ctx, path)
    body = (
        f'{HEAD}<c:calendar-query {XMLNS}>{PROPS}<c:filter><c:comp-filter name="VCALENDAR">'
        '<c:comp-filter name="VEVENT"><c:prop-filter name="SUMMARY">'
        f'<c:text-match collation="i;unicode-casemap">{escape(query)}</c:text-match>'
        "</c:prop-filter></c:comp-filter></c:comp-filter></c:filter></c:calendar-query>"
    )
    found, _ = _responses(await report(ctx, url, body))
    return ItemPage(items=[event_item(h, e, d, name, n) for h, _, e, d, n in found if d])


async def download(ctx: ConnectorContext, href: str, max_bytes: int | None) -> Download:
    """One event's iCalendar object, from the calendar server (the href is the server's
    path; one that leads off the account's calendar home is refused)."""
    url = confine_url(home(ctx), href, service="infomaniak", query=False)
    data = await ctx.http.download(url, max_bytes=max_bytes)
    name = href.rstrip("/").split("/")[-2] if href.count("/") > 1 else ""
    return Download(
        item=event_item(href, None, data.decode("utf-8", "replace"), name, len(data)),
        content=data,
        mime="text/calendar",
    )


class CalDavCheckpoint(DeltaCheckpoint):
    """Where a calendar's ``sync-collection`` resumes: the sync token (stored as ``token``;
    empty: the initial sync, RFC 6578) and whether the run lists the whole calendar."""

    cursor: str | None = Field(None, validation_alias="token", serialization_alias="token")


async def sync(
    ctx: ConnectorContext, path: str, checkpoint: dict[str, Any] | None
) -> AsyncIterator[SyncPage]:
    """``sync-collection`` pages (a 507 on the collection means more follow); the sync token
    is the checkpoint; 404 responses are tombstones."""
    url, name, _ = calendar_url(ctx, path)
    cp = CalDavCheckpoint.load(checkpoint, scope=path)
    token, full = cp.cursor or "", cp.listing_all
    seen: set[tuple[str, str | None]] = set()
    while True:
        body = (
            f"{HEAD}<d:sync-collection {XMLNS}><d:sync-token>{escape(token)}</d:sync-token>"
            f"<d:sync-level>1</d:sync-level><d:limit><d:nresults>{SYNC_PAGE}</d:nresults>"
            f"</d:limit>{PROPS}</d:sync-collection>"
        )
        found, new_token = _responses(await report(ctx, url, body))
        items, gone, more = [], [], False
        for href, status, etag, data, length in found:
            if " 507" in status:
                more = True
            elif " 404" in status:
                gone.append(f"caldav:{href}")
            elif data and (href, etag) not in seen:
                seen.add((href, etag))
                items.append(event_item(href, etag, data, name, length))
        token = new_token or token
        yield SyncPage(
            items=items,
            tombstones=gone,
            checkpoint=cp.then(token, more).dump(),
            done=not more,
            full_listing=full,
            deletions_reported=not full,  # sync-collection answers every removed href 404
        )
        if not more:
            return
