"""Google Calendar v3 (calendar list, events by date range with ``timeMin``/``timeMax``,
``q`` search, ``syncToken`` sync: 410 Gone means a full re-sync) and Contacts over the People
API (connections with ``requestSyncToken``/``syncToken``; an expired token, 400
``EXPIRED_SYNC_TOKEN``, means a full re-sync too)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from nyla.sdk.connectors import (
    Checkpoint,
    ConnectorContext,
    CursorExpiredError,
    Download,
    Item,
    ItemPage,
    SyncPage,
    VendorBadRequestError,
    token_pages,
)
from nyla_connector_google import items
from nyla_connector_google.gmail import check_size
from nyla_connector_google.paths import Target, api, getter, quoted, rfc3339

PAGE = 250
PERSON_FIELDS = "names,emailAddresses,phoneNumbers,organizations,biographies,metadata"


def events_url(ctx: ConnectorContext, calendar: str) -> str:
    """The events collection of a calendar."""
    return api(ctx, "calendar", f"/calendars/{quoted(calendar)}/events")


async def browse_calendars(ctx: ConnectorContext, cursor: str | None) -> ItemPage:
    """The user's calendar list."""
    params = {"maxResults": "250", **({"pageToken": cursor} if cursor else {})}
    body = await ctx.http.get_json(api(ctx, "calendar", "/users/me/calendarList"), params=params)
    found = [items.calendar_item(raw) for raw in body.get("items") or []]
    return ItemPage(items=found, cursor=body.get("nextPageToken"))


async def events(
    ctx: ConnectorContext, target: Target, cursor: str | None, q: str = ""
) -> ItemPage:
    """A calendar's events: within ``?from=&to=`` as single events by start time, else all
    of them; ``q`` matches summary, description, place and attendees."""
    since, until = target.date_range()
    params: dict[str, str] = {"maxResults": str(PAGE)}
    if since or until:
        params.update(singleEvents="true", orderBy="startTime")
        if since:
            params["timeMin"] = rfc3339(since)
        if until:
            params["timeMax"] = rfc3339(until)
    if q:
        params["q"] = q
    if cursor:
        params["pageToken"] = cursor
    body = await ctx.http.get_json(events_url(ctx, target.ident), params=params)
    found = [
        items.event_item(raw, target.ident)
        for raw in body.get("items") or []
        if raw.get("status") != "cancelled"
    ]
    return ItemPage(items=found, cursor=body.get("nextPageToken"))


async def download_event(
    ctx: ConnectorContext, calendar: str, event_id: str, max_bytes: int | None
) -> Download:
    """An event as its Calendar JSON."""
    raw = await ctx.http.get_json(f"{events_url(ctx, calendar)}/{quoted(event_id)}")
    return _json_download(items.event_item(raw, calendar), raw, max_bytes)


def _json_download(meta: Any, raw: dict[str, Any], max_bytes: int | None) -> Download:
    data = json.dumps(raw, ensure_ascii=False, indent=1).encode()
    meta = meta.model_copy(update={"title": f"{meta.title}.json", "size": len(data)})
    check_size(meta, max_bytes)
    return Download(item=meta, content=data, mime="application/json")


class TokenCheckpoint(Checkpoint):
    """Where a ``syncToken`` feed (events, connections) resumes: the token of the last
    completed run and, while a run pages, its page token and whether it lists in full."""

    syncToken: str | None = None  # the key nyla has always stored
    page: str | None = None
    full: bool = False

    @property
    def listing_all(self) -> bool:
        """The run lists everything (no token yet, or a full listing under way)."""
        return not self.syncToken or self.full


#: one page of a feed, fetched with these query parameters
Fetch = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]
#: a page's entries split into live items and tombstone ids
Sort = Callable[[dict[str, Any]], tuple[list[Item], list[str]]]


async def _token_feed(
    target: Target,
    checkpoint: dict[str, Any] | None,
    base: dict[str, str],
    fetch: Fetch,
    sort: Sort,
) -> AsyncIterator[SyncPage]:
    """The pages of a feed with ``syncToken``/``pageToken``/``nextSyncToken`` (Calendar
    events, People connections): only the changes since the stored token, or everything."""
    cp = TokenCheckpoint.load(checkpoint, scope=target.path)
    full = cp.listing_all
    if cp.syncToken and not full:
        base = {**base, "syncToken": cp.syncToken}
    async for body in token_pages(fetch, base, start=cp.page):
        found, gone = sort(body)
        page = body.get("nextPageToken")
        state = (
            TokenCheckpoint(syncToken=cp.syncToken, page=page, full=full, scope=target.path)
            if page
            else TokenCheckpoint(syncToken=body.get("nextSyncToken"), scope=target.path)
        )
        yield SyncPage(
            items=found,
            tombstones=gone,
            checkpoint=state.dump(),
            done=page is None,
            full_listing=full,
            deletions_reported=not full,  # a syncToken feed returns deleted entries too
        )


async def sync_events(
    ctx: ConnectorContext, target: Target, checkpoint: dict[str, Any] | None
) -> AsyncIterator[SyncPage]:
    """``events.list`` with the stored ``syncToken`` (changes, cancelled events as
    tombstones), or in full; ``nextSyncToken`` on the last page is the checkpoint. Calendar
    answers 410 Gone for a token it dropped: the HTTP layer raises CursorExpiredError."""

    def sort(body: dict[str, Any]) -> tuple[list[Item], list[str]]:
        found, gone = [], []
        for raw in body.get("items") or []:
            if raw.get("status") == "cancelled":
                gone.append(f"event:{target.ident}:{raw['id']}")
            else:
                found.append(items.event_item(raw, target.ident, synced=True))
        return found, gone

    base = {"maxResults": str(PAGE), "showDeleted": "true"}
    fetch = getter(ctx, events_url(ctx, target.ident))
    async for page in _token_feed(target, checkpoint, base, fetch, sort):
        yield page


async def event_ids(ctx: ConnectorContext, target: Target) -> AsyncIterator[list[str]]:
    """Every (not cancelled) event id of the calendar."""
    params = {"maxResults": "2500", "fields": "nextPageToken,items(id,status)"}
    async for body in token_pages(getter(ctx, events_url(ctx, target.ident)), params):
        yield [
            f"event:{target.ident}:{raw['id']}"
            for raw in body.get("items") or []
            if raw.get("status") != "cancelled"
        ]


# ---- contacts (People API) ---------------------------------------------------------------


def connections_url(ctx: ConnectorContext) -> str:
    """The user's contacts."""
    return api(ctx, "people", "/people/me/connections")


async def browse_contacts(ctx: ConnectorContext, cursor: str | None) -> ItemPage:
    """``people.connections.list``."""
    params = {"personFields": PERSON_FIELDS, "pageSize": "100"}
    if cursor:
        params["pageToken"] = cursor
    body = await ctx.http.get_json(connections_url(ctx), params=params)
    found = [items.person_item(raw) for raw in body.get("connections") or []]
    return ItemPage(items=found, cursor=body.get("nextPageToken"))


async def search_contacts(ctx: ConnectorContext, query: str) -> ItemPage:
    """``people.searchContacts`` (name, e-mail, phone, company prefixes; one page of up to
    30, the API's maximum)."""
    body = await ctx.http.get_json(
        api(ctx, "people", "/people:searchContacts"),
        params={"query": query, "readMask": PERSON_FIELDS, "pageSize": "30"},
    )
    return ItemPage(items=[items.person_item(r["person"]) for r in body.get("results") or []])


async def download_contact(
    ctx: ConnectorContext, person_id: str, max_bytes: int | None
) -> Download:
    """A contact as its People JSON."""
    raw = await ctx.http.get_json(
        api(ctx, "people", f"/people/{quoted(person_id)}"), params={"personFields": PERSON_FIELDS}
    )
    return _json_download(items.person_item(raw), raw, max_bytes)


async def sync_contacts(
    ctx: ConnectorContext, target: Target, checkpoint: dict[str, Any] | None
) -> AsyncIterator[SyncPage]:
    """Connections with ``requestSyncToken``; with a stored ``syncToken`` only the changes
    (deleted people carry ``metadata.deleted``). An expired token (400
    ``FAILED_PRECONDITION``/``EXPIRED_SYNC_TOKEN``) becomes CursorExpiredError."""

    async def fetch(params: dict[str, Any]) -> dict[str, Any]:
        try:
            body: dict[str, Any] = await ctx.http.get_json(connections_url(ctx), params=params)
        except VendorBadRequestError as exc:
            if "syncToken" not in params:
                raise
            raise CursorExpiredError(
                f"google: the contacts sync token expired ({exc}); full re-sync",
                service="google",
                status_code=exc.status_code,
            ) from exc
        return body

    def sort(body: dict[str, Any]) -> tuple[list[Item], list[str]]:
        found, gone = [], []
        for raw in body.get("connections") or []:
            if (raw.get("metadata") or {}).get("deleted"):
                gone.append(f"contact:{raw['resourceName'].removeprefix('people/')}")
            else:
                found.append(items.person_item(raw, synced=True))
        return found, gone

    base = {"personFields": PERSON_FIELDS, "pageSize": "100", "requestSyncToken": "true"}
    async for page in _token_feed(target, checkpoint, base, fetch, sort):
        yield page


async def contact_ids(ctx: ConnectorContext) -> AsyncIterator[list[str]]:
    """Every contact id."""
    params = {"personFields": "metadata", "pageSize": "1000"}
    async for body in token_pages(getter(ctx, connections_url(ctx)), params):
        yield [
            f"contact:{raw['resourceName'].removeprefix('people/')}"
            for raw in body.get("connections") or []
        ]
