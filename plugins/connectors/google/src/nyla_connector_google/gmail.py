"""Gmail: search (``q=`` scoped to the connected label), labels, threads, messages with
their metadata resolved in parallel, attachments, drafts, sending, labels as folders and
flags, and ``history.list`` sync from the stored ``historyId``.

Every call spends Gmail quota units (``messages.get`` 5, ``messages.list`` 5,
``history.list`` 2, ``messages.send`` 100 ...) from a per-mailbox budget of 15,000 units per
minute, so a large sync slows down before Gmail answers ``userRateLimitExceeded``.
"""

from __future__ import annotations

import asyncio
import base64
from datetime import timedelta
from email.message import EmailMessage
from typing import Any

from nyla.sdk.connectors import (
    ConnectorContext,
    Download,
    Item,
    ItemPage,
    ItemTooLargeError,
    MailMessage,
    MailQuery,
    OutgoingMessage,
    VendorBadRequestError,
    VendorForbiddenError,
    VendorNotFoundError,
)
from nyla_connector_google import items
from nyla_connector_google.paths import Target, api, label_id, quoted

#: Gmail's per-user limit: 15,000 quota units per user per minute
QUOTA_UNITS = 15_000
QUOTA_WINDOW_S = 60.0
#: quota units per method (Gmail API "Usage limits")
UNITS = {
    "getProfile": 1,
    "labels.list": 1,
    "history.list": 2,
    "messages.list": 5,
    "messages.get": 5,
    "messages.attachments.get": 5,
    "messages.modify": 5,
    "threads.list": 10,
    "threads.get": 10,
    "drafts.create": 10,
    "drafts.send": 100,
    "messages.send": 100,
}
#: messages resolved at once (the HTTP layer's per-account cap applies as well)
PARALLEL = 8
PAGE = 25
METADATA = {"format": "metadata", "metadataHeaders": ["From", "To", "Subject", "Date"]}
HISTORY_TYPES = ["messageAdded", "messageDeleted", "labelAdded", "labelRemoved"]


def mailbox_budget(ctx: ConnectorContext) -> Any:
    """The connection's quota-unit budget (one per mailbox, shared by its sessions)."""
    return ctx.http.limiter.budget(
        f"google-gmail-units:{ctx.connection.id}", QUOTA_UNITS, QUOTA_WINDOW_S, 0.8
    )


async def spend(ctx: ConnectorContext, method: str) -> None:
    """Wait until ``method``'s quota units fit the mailbox's budget, then count them."""
    budget = mailbox_budget(ctx)
    for _ in range(UNITS[method]):
        await budget.acquire()


async def call(ctx: ConnectorContext, method: str, path: str, **kw: Any) -> Any:
    """One budgeted Gmail GET returning JSON."""
    await spend(ctx, method)
    return await ctx.http.get_json(api(ctx, "gmail", f"/users/me{path}"), **kw)


async def post(ctx: ConnectorContext, method: str, path: str, body: dict[str, Any]) -> Any:
    """One budgeted Gmail POST returning JSON."""
    await spend(ctx, method)
    response = await ctx.http.request("POST", api(ctx, "gmail", f"/users/me{path}"), json=body)
    return response.json()


def gmail_q(query: MailQuery) -> str:
    """Gmail's search operators for a structured query."""
    terms = [query.text.strip()] if query.text.strip() else []
    if query.sender:
        terms.append(f"from:({query.sender})")
    if query.subject:
        terms.append(f"subject:({query.subject})")
    if query.since:
        terms.append(f"after:{query.since.strftime('%Y/%m/%d')}")
    if query.until:  # before: excludes the day itself
        terms.append(f"before:{(query.until + timedelta(days=1)).strftime('%Y/%m/%d')}")
    if query.unread_only:
        terms.append("is:unread")
    return " ".join(terms)


async def resolve(
    ctx: ConnectorContext, ids: list[str], fmt: dict[str, Any],
    failed: dict[str, str] | None = None,
) -> list[Any]:  # fmt: skip
    """``messages.get`` for every id at once (bounded, never one after the other); a
    message deleted since it was listed comes back as ``None``, and so does one the
    account may not read when ``failed`` collects those (id -> reason). Any other failure
    raises as itself (the first one), never as an exception group."""
    gate = asyncio.Semaphore(PARALLEL)

    async def one(message_id: str) -> Any:
        async with gate:
            try:
                return await call(
                    ctx, "messages.get", f"/messages/{quoted(message_id)}", params=fmt
                )
            except VendorNotFoundError:
                return None
            except VendorForbiddenError as exc:
                if failed is None:
                    raise
                failed[message_id] = str(exc)
                return None

    try:
        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(one(i)) for i in ids]
    except BaseExceptionGroup as errors:
        raise errors.exceptions[0] from None
    return [t.result() for t in tasks]


async def list_ids(
    ctx: ConnectorContext, label: str, q: str, cursor: str | None, size: int = PAGE
) -> tuple[list[str], str | None]:
    """One page of ``messages.list`` (ids) in ``label`` matching ``q``."""
    params: dict[str, Any] = {"maxResults": str(size)}
    if label:
        params["labelIds"] = label
    if q:
        params["q"] = q
    if cursor:
        params["pageToken"] = cursor
    body = await call(ctx, "messages.list", "/messages", params=params)
    return [m["id"] for m in body.get("messages") or []], body.get("nextPageToken")


async def search_mail(
    ctx: ConnectorContext, query: MailQuery, cursor: str | None = None
) -> ItemPage:
    """``messages.list`` with ``q=`` in the label, metadata resolved in parallel."""
    label = label_id(query.folder)
    ids, nxt = await list_ids(ctx, label, gmail_q(query), cursor)
    raws = await resolve(ctx, ids, METADATA)
    return ItemPage(items=[items.message_item(r, label) for r in raws if r], cursor=nxt)


async def browse_mail(ctx: ConnectorContext, target: Target, cursor: str | None) -> ItemPage:
    """Labels, a label's messages (within ``?from=&to=``), or one thread's messages."""
    if target.kind == "labels":
        body = await call(ctx, "labels.list", "/labels")
        return ItemPage(items=[items.label_item(raw) for raw in body.get("labels") or []])
    if target.kind == "thread":
        raw = await call(ctx, "threads.get", f"/threads/{quoted(target.ident)}", params=METADATA)
        return ItemPage(items=[items.message_item(m) for m in raw.get("messages") or []])
    since, until = target.date_range()
    return await search_mail(ctx, MailQuery(folder=target.ident, since=since, until=until), cursor)


async def threads(ctx: ConnectorContext, label: str, q: str, cursor: str | None) -> ItemPage:
    """``threads.list``: conversations in a label matching ``q``."""
    params: dict[str, Any] = {"maxResults": str(PAGE)}
    if label:
        params["labelIds"] = label
    if q:
        params["q"] = q
    if cursor:
        params["pageToken"] = cursor
    body = await call(ctx, "threads.list", "/threads", params=params)
    found = [items.thread_item(raw, label) for raw in body.get("threads") or []]
    return ItemPage(items=found, cursor=body.get("nextPageToken"))


async def message(ctx: ConnectorContext, message_id: str) -> Item:
    """One message's metadata."""
    return items.message_item(
        await call(ctx, "messages.get", f"/messages/{quoted(message_id)}", params=METADATA)
    )


async def read_message(ctx: ConnectorContext, message_id: str) -> MailMessage:
    """One message (``format=full``) with its text body and its attachments."""
    raw = await call(
        ctx, "messages.get", f"/messages/{quoted(message_id)}", params={"format": "full"}
    )
    body, kind = items.text_body(raw)
    head = items.headers(raw)
    return MailMessage(
        item=items.message_item(raw),
        body=body,
        body_type=kind,
        to=[a.strip() for a in head.get("to", "").split(",") if a.strip()],
        cc=[a.strip() for a in head.get("cc", "").split(",") if a.strip()],
        attachments=items.attachment_items(raw),
    )


def check_size(meta: Item, max_bytes: int | None) -> None:
    """Refuse before downloading when the listed size is past the cap."""
    if max_bytes is not None and meta.size is not None and meta.size > max_bytes:
        raise ItemTooLargeError(
            f"google: {meta.title} has {meta.size} bytes, more than the limit of {max_bytes}",
            size=meta.size,
            limit=max_bytes,
            service="google",
        )


async def download_message(
    ctx: ConnectorContext, message_id: str, max_bytes: int | None
) -> Download:
    """The message as MIME (``format=raw``, ``.eml``); ``sizeEstimate`` is checked first."""
    meta = await message(ctx, message_id)
    estimate = meta.extra["vendor"].get("sizeEstimate")
    check_size(meta.model_copy(update={"size": estimate}), max_bytes)
    raw = await call(
        ctx, "messages.get", f"/messages/{quoted(message_id)}", params={"format": "raw"}
    )
    data = items.b64decode(raw.get("raw") or "")
    meta = meta.model_copy(update={"title": f"{meta.title}.eml", "size": len(data)})
    check_size(meta, max_bytes)
    return Download(item=meta, content=data, mime="message/rfc822")


async def download_attachment(
    ctx: ConnectorContext, message_id: str, part_id: str, max_bytes: int | None
) -> Download:
    """An attachment's bytes: the part (and its current ``attachmentId``, which Gmail does
    not keep stable) from the message, its size checked, then ``attachments.get``."""
    raw = await call(
        ctx, "messages.get", f"/messages/{quoted(message_id)}", params={"format": "full"}
    )
    part = next(
        (p for p in items.walk_parts(raw.get("payload") or {}) if p.get("partId") == part_id),
        None,
    )
    meta = next((a for a in items.attachment_items(raw) if a.id.endswith(f":{part_id}")), None)
    if part is None or meta is None:
        raise VendorNotFoundError(
            f"google: message {message_id} has no attachment part {part_id}", service="google"
        )
    check_size(meta, max_bytes)
    body = part.get("body") or {}
    data = body.get("data")
    if not data:
        att = await call(
            ctx,
            "messages.attachments.get",
            f"/messages/{quoted(message_id)}/attachments/{quoted(body['attachmentId'])}",
        )
        data = att.get("data") or ""
    content = items.b64decode(data)
    check_size(meta.model_copy(update={"size": len(content)}), max_bytes)
    return Download(item=meta, content=content, mime=meta.mime or "application/octet-stream")


def mime_message(message: OutgoingMessage) -> str:
    """The RFC 2822 message Gmail takes, base64url-encoded (``raw``)."""
    mail = EmailMessage()
    mail["To"] = ", ".join(message.to)
    if message.cc:
        mail["Cc"] = ", ".join(message.cc)
    mail["Subject"] = message.subject
    mail.set_content(message.body)
    for att in message.attachments:
        major, _, minor = (att.mime or "application/octet-stream").partition("/")
        mail.add_attachment(
            att.content, maintype=major, subtype=minor or "octet-stream", filename=att.name
        )
    return base64.urlsafe_b64encode(mail.as_bytes()).decode()


async def create_draft(ctx: ConnectorContext, message: OutgoingMessage) -> Item:
    """``drafts.create``: a draft; nothing is sent. Its id carries the draft and message."""
    body = await post(ctx, "drafts.create", "/drafts", {"message": {"raw": mime_message(message)}})
    inner = body.get("message") or {}
    return Item(
        id=f"draft:{body['id']}:{inner.get('id', '')}",
        title=message.subject,
        kind="mail",
        path=f"/mail/DRAFT/{inner.get('id', '')}",
        extra={"to": message.to, "labels": inner.get("labelIds") or ["DRAFT"]},
    )


async def send_draft(ctx: ConnectorContext, draft_id: str) -> str:
    """``drafts.send``; returns the sent message's id."""
    body = await post(ctx, "drafts.send", "/drafts/send", {"id": draft_id})
    return f"mail:{body['id']}"


async def send(ctx: ConnectorContext, message: OutgoingMessage) -> str:
    """``messages.send``; returns the sent message's id."""
    body = await post(ctx, "messages.send", "/messages/send", {"raw": mime_message(message)})
    return f"mail:{body['id']}"


async def modify(ctx: ConnectorContext, message_id: str, add: list[str], remove: list[str]) -> Item:
    """``messages.modify`` (labels); returns the message."""
    if not add and not remove:
        raise VendorBadRequestError("google: nothing to change (flagged or read)", service="google")
    body = {"addLabelIds": add, "removeLabelIds": remove}
    raw = await post(ctx, "messages.modify", f"/messages/{quoted(message_id)}/modify", body)
    return items.message_item(raw)


async def move(ctx: ConnectorContext, message_id: str, folder: str) -> Item:
    """Gmail has labels, not folders: ``archive`` takes ``INBOX`` away, any other folder
    adds its label and takes ``INBOX`` away."""
    if folder.lower() == "archive":
        return await modify(ctx, message_id, [], ["INBOX"])
    target = label_id(folder)
    return await modify(ctx, message_id, [target], [] if target == "INBOX" else ["INBOX"])


async def flag(
    ctx: ConnectorContext, message_id: str, flagged: bool | None, read: bool | None
) -> Item:
    """The follow-up flag is ``STARRED``; unread is the ``UNREAD`` label."""
    add: list[str] = []
    remove: list[str] = []
    if flagged is not None:
        (add if flagged else remove).append("STARRED")
    if read is not None:
        (remove if read else add).append("UNREAD")
    return await modify(ctx, message_id, add, remove)
