"""Outlook over Graph: mail folders, messages (search, date-range listing, delta sync),
attachments, drafts, sending, moving and flagging; calendars, events and contacts."""

from __future__ import annotations

import base64
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from pydantic import Field

from nyla.sdk.connectors import (
    ConnectorContext,
    CursorExpiredError,
    DeltaCheckpoint,
    Download,
    Item,
    ItemPage,
    MailMessage,
    MailQuery,
    OutgoingMessage,
    SyncPage,
    VendorBadRequestError,
    VendorNotFoundError,
    odata_pages,
)
from nyla_connector_msft import items
from nyla_connector_msft.paths import Target, graph_time, seg

MESSAGE_FIELDS = (
    "id,subject,bodyPreview,receivedDateTime,sentDateTime,from,sender,toRecipients,"
    "hasAttachments,webLink,isRead,flag,parentFolderId,changeKey,lastModifiedDateTime,"
    "importance,categories,isDraft,conversationId"
)
PAGE = 25
#: Graph pages delta answers by this header, not by ``$top``
DELTA_PAGE = {"Prefer": 'odata.maxpagesize=50, outlook.body-content-type="text"'}
TEXT_BODY = {"Prefer": 'outlook.body-content-type="text"'}
#: how Graph says a delta token is gone when it answers 400/404 instead of 410
_EXPIRED = re.compile(r"resync|sync ?state|delta ?token", re.IGNORECASE)


def page_of(body: dict[str, Any], convert: Any) -> ItemPage:
    """An OData collection page as an ItemPage (the next link is the cursor)."""
    return ItemPage(
        items=[convert(v) for v in body.get("value", [])], cursor=body.get("@odata.nextLink")
    )


def messages_url(folder: str) -> str:
    """Messages of one folder, or of the whole mailbox for ``""``."""
    return f"/me/mailFolders/{seg(folder, 'folder')}/messages" if folder else "/me/messages"


def _unquote(text: str) -> str:
    """Words without double quotes: ``$search`` wraps the whole KQL string in them."""
    return " ".join(text.replace('"', " ").split())


def kql(query: MailQuery) -> str:
    """The KQL ``$search`` string of a structured query ("" when nothing is searched for)."""
    terms = [_unquote(query.text)] if query.text.strip() else []
    if query.sender:
        terms.append(f"from:{_unquote(query.sender)}")
    if query.subject:
        terms.append(f"subject:({_unquote(query.subject)})")
    if terms and query.since:
        terms.append(f"received>={query.since.date().isoformat()}")
    if terms and query.until:
        terms.append(f"received<={query.until.date().isoformat()}")
    return " ".join(terms)


def received_filter(since: datetime | None, until: datetime | None, unread: bool) -> str:
    """The ``$filter`` of a date-range listing (``receivedDateTime``)."""
    parts = []
    if since:
        parts.append(f"receivedDateTime ge {graph_time(since)}")
    if until:
        parts.append(f"receivedDateTime lt {graph_time(until)}")
    if unread:
        parts.append("isRead eq false")
    return " and ".join(parts)


async def search_mail(
    ctx: ConnectorContext, query: MailQuery, cursor: str | None = None
) -> ItemPage:
    """``$search`` (KQL) when there are words, else a ``$filter`` listing by received time."""
    folder = query.folder
    if cursor:
        body = await ctx.http.get_json(cursor)
    else:
        params = {"$top": str(PAGE), "$select": MESSAGE_FIELDS}
        search = kql(query)
        if search:
            params["$search"] = f'"{search}"'
        else:
            params["$orderby"] = "receivedDateTime desc"
            if flt := received_filter(query.since, query.until, query.unread_only):
                params["$filter"] = flt
        body = await ctx.http.get_json(messages_url(folder), params=params)
    page = page_of(body, lambda raw: items.message_item(raw, folder))
    if query.unread_only and kql(query):  # KQL has no read state: narrowed here
        page.items = [i for i in page.items if not i.extra["vendor"].get("isRead")]
    return page


async def browse_mail(ctx: ConnectorContext, target: Target, cursor: str | None) -> ItemPage:
    """Mail folders, or a folder's messages newest first (within ``?from=&to=``)."""
    if target.kind == "mail_folders":
        body = await ctx.http.get_json(
            cursor or "/me/mailFolders", params=None if cursor else {"$top": "50"}
        )
        return page_of(body, items.mail_folder_item)
    since, until = target.date_range()
    query = MailQuery(folder=target.folder, since=since, until=until)
    return await search_mail(ctx, query, cursor)


async def message(ctx: ConnectorContext, message_id: str) -> Item:
    """One message's metadata."""
    raw = await ctx.http.get_json(
        f"/me/messages/{seg(message_id)}", params={"$select": MESSAGE_FIELDS}
    )
    return items.message_item(raw)


async def read_message(ctx: ConnectorContext, message_id: str) -> MailMessage:
    """One message with its text body and its attachments as downloadable items."""
    raw = await ctx.http.get_json(
        f"/me/messages/{seg(message_id)}",
        params={"$select": f"{MESSAGE_FIELDS},body,ccRecipients"},
        headers=TEXT_BODY,
    )
    attachments: list[Item] = []
    if raw.get("hasAttachments"):
        body = await ctx.http.get_json(
            f"/me/messages/{seg(message_id)}/attachments",
            params={"$select": "id,name,contentType,size,isInline,lastModifiedDateTime"},
        )
        attachments = [items.attachment_item(message_id, a) for a in body.get("value", [])]
    content = raw.get("body") or {}
    return MailMessage(
        item=items.message_item(raw),
        body=content.get("content") or "",
        body_type=(content.get("contentType") or "text").lower(),
        to=[items.address(r) for r in raw.get("toRecipients") or []],
        cc=[items.address(r) for r in raw.get("ccRecipients") or []],
        attachments=attachments,
    )


async def download_message(
    ctx: ConnectorContext, message_id: str, max_bytes: int | None
) -> Download:
    """The message as MIME (``.eml``)."""
    meta = await message(ctx, message_id)
    data = await ctx.http.download(f"/me/messages/{seg(message_id)}/$value", max_bytes=max_bytes)
    meta = meta.model_copy(update={"title": f"{meta.title}.eml", "size": len(data)})
    return Download(item=meta, content=data, mime="message/rfc822")


async def download_attachment(
    ctx: ConnectorContext, message_id: str, attachment_id: str, max_bytes: int | None
) -> Download:
    """A file attachment's bytes; its listed size is checked against ``max_bytes`` first."""
    url = f"/me/messages/{seg(message_id)}/attachments/{seg(attachment_id)}"
    raw = await ctx.http.get_json(url, params={"$select": "id,name,contentType,size,isInline"})
    meta = items.attachment_item(message_id, raw)
    check_size(meta, max_bytes)
    data = await ctx.http.download(f"{url}/$value", max_bytes=max_bytes)
    return Download(item=meta, content=data, mime=meta.mime or "application/octet-stream")


def check_size(meta: Item, max_bytes: int | None) -> None:
    """Refuse before downloading when the listed size is past the cap."""
    from nyla.sdk.connectors import ItemTooLargeError

    if max_bytes is not None and meta.size is not None and meta.size > max_bytes:
        raise ItemTooLargeError(
            f"msft: {meta.title} has {meta.size} bytes, more than the limit of {max_bytes}",
            size=meta.size,
            limit=max_bytes,
            service="msft",
        )


def _recipients(addresses: list[str]) -> list[dict[str, Any]]:
    return [{"emailAddress": {"address": a}} for a in addresses]


def message_body(message: OutgoingMessage) -> dict[str, Any]:
    """A Graph message resource for a new draft (attachments inline, base64)."""
    return {
        "subject": message.subject,
        "body": {"contentType": "Text", "content": message.body},
        "toRecipients": _recipients(message.to),
        "ccRecipients": _recipients(message.cc),
        "attachments": [
            {
                "@odata.type": "#microsoft.graph.fileAttachment",
                "name": a.name,
                "contentType": a.mime,
                "contentBytes": base64.b64encode(a.content).decode(),
            }
            for a in message.attachments
        ],
    }


async def create_draft(ctx: ConnectorContext, message: OutgoingMessage) -> Item:
    """``POST /me/messages``: a draft in the Drafts folder; nothing is sent."""
    response = await ctx.http.request("POST", "/me/messages", json=message_body(message))
    return items.message_item(response.json(), "drafts")


async def send_draft(ctx: ConnectorContext, message_id: str) -> str:
    """``POST /me/messages/{id}/send`` (202: accepted for delivery)."""
    await ctx.http.request("POST", f"/me/messages/{seg(message_id)}/send")
    return f"mail:{message_id}"


async def move(ctx: ConnectorContext, message_id: str, folder: str) -> Item:
    """``POST /me/messages/{id}/move``; Graph gives the moved message a new id."""
    response = await ctx.http.request(
        "POST", f"/me/messages/{seg(message_id)}/move", json={"destinationId": folder}
    )
    return items.message_item(response.json(), folder)


async def flag(
    ctx: ConnectorContext, message_id: str, flagged: bool | None, read: bool | None
) -> Item:
    """``PATCH /me/messages/{id}`` with the follow-up flag and the read state."""
    patch: dict[str, Any] = {}
    if flagged is not None:
        patch["flag"] = {"flagStatus": "flagged" if flagged else "notFlagged"}
    if read is not None:
        patch["isRead"] = read
    if not patch:
        raise VendorBadRequestError("msft: nothing to change (flagged or read)", service="msft")
    response = await ctx.http.request("PATCH", f"/me/messages/{seg(message_id)}", json=patch)
    return items.message_item(response.json())


def graph_get(ctx: ConnectorContext) -> Callable[[str, dict[str, str] | None], Awaitable[Any]]:
    """A plain GET of a Graph listing, for :func:`odata_pages`."""
    return lambda url, params: ctx.http.get_json(url, params=params)


async def delta_get(ctx: ConnectorContext, url: str, params: dict[str, str] | None = None) -> Any:
    """One delta page; the ways Graph says a token expired all become CursorExpiredError."""
    try:
        return await ctx.http.get_json(url, params=params, headers=DELTA_PAGE)
    except (VendorBadRequestError, VendorNotFoundError) as exc:
        if _EXPIRED.search(str(exc)):
            raise CursorExpiredError(str(exc), service="msft", status_code=exc.status_code) from exc
        raise


class MailCheckpoint(DeltaCheckpoint):
    """Where a mail folder's delta sync resumes: the next or delta link (stored as
    ``link``) and whether the run lists the whole folder."""

    cursor: str | None = Field(None, validation_alias="link", serialization_alias="link")


async def sync_messages(
    ctx: ConnectorContext, target: Target, checkpoint: dict[str, Any] | None
) -> AsyncIterator[SyncPage]:
    """``messages/delta`` of one folder: the deltaLink is the checkpoint; ``@removed`` entries
    are tombstones; an item met again on a later page with the same changeKey is skipped."""
    state = MailCheckpoint.load(checkpoint, scope=target.path)
    full = state.listing_all
    url, params = (
        (state.cursor, None)
        if state.cursor
        else (
            f"/me/mailFolders/{seg(target.folder, 'folder')}/messages/delta",
            {"$select": f"{MESSAGE_FIELDS},body"},
        )
    )
    seen: set[tuple[str, str | None]] = set()
    async for body in odata_pages(lambda link, query: delta_get(ctx, link, query), url, params):
        page_items, gone = [], []
        for raw in body.get("value", []):
            if "@removed" in raw:
                gone.append(f"mail:{raw['id']}")
                continue
            item = items.message_item(raw, target.folder)
            if (item.id, item.version) not in seen:
                seen.add((item.id, item.version))
                page_items.append(item)
        nxt, delta = body.get("@odata.nextLink"), body.get("@odata.deltaLink")
        yield SyncPage(
            items=page_items,
            tombstones=gone,
            checkpoint=state.then(nxt or delta, more=bool(nxt)).dump(),
            done=nxt is None,
            full_listing=full,
            deletions_reported=not full,  # messages/delta names every removed message
        )


async def message_ids(ctx: ConnectorContext, target: Target) -> AsyncIterator[list[str]]:
    """Every message id of a folder (a slim listing; raises on any failed page)."""
    query = {"$select": "id", "$top": "100"}
    async for body in odata_pages(graph_get(ctx), messages_url(target.folder), query):
        yield [f"mail:{raw['id']}" for raw in body.get("value", [])]


# ---- calendar and contacts -------------------------------------------------------------

#: the window of a calendar listing without ``?from=&to=``
DEFAULT_PAST = timedelta(days=30)
DEFAULT_AHEAD = timedelta(days=90)


async def browse_calendar(ctx: ConnectorContext, target: Target, cursor: str | None) -> ItemPage:
    """Calendars, or one calendar's ``calendarView`` over a date range."""
    if cursor:
        body = await ctx.http.get_json(cursor)
    elif target.kind == "calendars":
        body = await ctx.http.get_json("/me/calendars", params={"$top": "50"})
    else:
        since, until = target.date_range()
        now = datetime.now(UTC)
        since = since or now - DEFAULT_PAST
        until = until or since + DEFAULT_PAST + DEFAULT_AHEAD
        url = (
            "/me/calendarView"
            if target.folder == "default"
            else (f"/me/calendars/{seg(target.folder, 'calendar id')}/calendarView")
        )
        body = await ctx.http.get_json(
            url,
            params={
                "startDateTime": graph_time(since),
                "endDateTime": graph_time(until),
                "$top": "50",
                "$orderby": "start/dateTime",
            },
        )
    if target.kind == "calendars":
        return page_of(body, items.calendar_item)
    return page_of(body, lambda raw: items.event_item(raw, target.folder))


async def search_events(ctx: ConnectorContext, query: str, cursor: str | None) -> ItemPage:
    """Events whose subject contains the words (``$filter contains``)."""
    if cursor:
        return page_of(await ctx.http.get_json(cursor), items.event_item)
    words = [w.replace("'", "''") for w in query.split()]
    flt = " and ".join(f"contains(subject,'{w}')" for w in words)
    body = await ctx.http.get_json("/me/events", params={"$filter": flt, "$top": "50"})
    return page_of(body, items.event_item)


async def browse_contacts(ctx: ConnectorContext, target: Target, cursor: str | None) -> ItemPage:
    """The user's contacts (or a contact folder's)."""
    url = (
        f"/me/contactFolders/{seg(target.folder, 'folder')}/contacts"
        if target.folder
        else "/me/contacts"
    )
    body = await ctx.http.get_json(cursor or url, params=None if cursor else {"$top": "50"})
    return page_of(body, items.contact_item)


async def search_contacts(ctx: ConnectorContext, query: str, cursor: str | None) -> ItemPage:
    """Contacts by name or e-mail (``$search``)."""
    if cursor:
        return page_of(await ctx.http.get_json(cursor), items.contact_item)
    body = await ctx.http.get_json(
        "/me/contacts", params={"$search": f'"{_unquote(query)}"', "$top": "50"}
    )
    return page_of(body, items.contact_item)
