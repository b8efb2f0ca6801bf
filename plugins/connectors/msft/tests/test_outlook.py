"""Outlook specifics over a scripted Graph: nextLink paging over five pages with a 429 on
page 3, KQL and date-range queries, 401 -> refresh -> retry, delta pages with a repeated item,
``@removed`` and an expired token, attachments with the size checked first, drafts, send,
move, flag, calendarView and contacts."""

from __future__ import annotations

import json
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from nyla.sdk.connectors import (
    CursorExpiredError,
    ItemTooLargeError,
    MailQuery,
    OutgoingMessage,
    sync_pages,
)

from .graph_wire import GRAPH, graph_error, sample

INBOX = "/me/mailFolders/inbox/messages"


def message(n: int, **kw) -> dict:
    raw = sample("message")
    raw.update(id=f"AAMk{n:03d}", subject=f"Invoice {n}", changeKey=f"ck{n}", **kw)
    return raw


def params(request: httpx.Request) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlsplit(str(request.url)).query).items()}


def five_pages(graph) -> None:
    """Five pages of two messages; page 3 is throttled once with Retry-After: 3."""
    pages = []
    for p in range(5):
        body = {"value": [message(2 * p), message(2 * p + 1)]}
        if p < 4:
            body["@odata.nextLink"] = f"{GRAPH}{INBOX}?$top=2&$skip={2 * (p + 1)}"
        pages.append(body)

    def answer(request: httpx.Request) -> httpx.Response:
        skip = int(params(request).get("$skip", 0))
        page = skip // 2
        if page == 2 and not getattr(answer, "throttled", False):
            answer.throttled = True  # type: ignore[attr-defined]
            return graph_error(429, 429, {"Retry-After": "3"})
        return httpx.Response(200, json=pages[page])

    graph.routes[("GET", INBOX)] = answer


async def test_next_links_to_the_end_with_429_on_page_3(open_session, graph, sleeps):
    five_pages(graph)
    async with open_session() as s:
        ids, cursor = [], None
        for _ in range(10):
            page = await s.adapter.browse(s, "/mail/inbox", cursor=cursor)
            ids += [i.id for i in page.items]
            cursor = page.cursor
            if not cursor:
                break
    assert ids == [f"mail:AAMk{n:03d}" for n in range(10)]
    assert len(graph.requests) == 6, "five pages and one retry"
    assert any(3 <= d <= 4 for d in sleeps.delays), sleeps.delays


async def test_kql_search_and_date_range_listing(open_session, graph):
    graph.routes[("GET", INBOX)] = httpx.Response(200, json={"value": [message(1)]})
    async with open_session() as s:
        query = MailQuery(sender="adele@contoso.com", subject="quarterly report", folder="inbox")
        page = await s.adapter.search_mail(s, query)
        listed = await s.adapter.browse(s, "/mail/inbox?from=2026-01-01&to=2026-02-01")
    searched, ranged = (params(r) for r in graph.requests)
    assert searched["$search"] == '"from:adele@contoso.com subject:(quarterly report)"'
    assert "$filter" not in searched, "Graph refuses $filter together with $search on messages"
    assert ranged["$filter"] == (
        "receivedDateTime ge 2026-01-01T00:00:00Z and receivedDateTime lt 2026-02-01T00:00:00Z"
    )
    assert ranged["$orderby"] == "receivedDateTime desc"
    item = page.items[0]
    assert item.extra["from"] == "Adele Vance <AdeleV@contoso.onmicrosoft.com>"
    assert item.extra["date"] == "2026-01-05T09:30:00Z"
    assert item.extra["to"] == ["Megan Bowen <MeganB@contoso.onmicrosoft.com>"]
    assert listed.items[0].path == f"/mail/inbox/{item.id.removeprefix('mail:')}"


async def test_401_refreshes_and_retries(open_session, graph):
    graph.routes[("GET", INBOX)] = httpx.Response(200, json={"value": [message(1)]})
    graph.access = "rotated-by-the-vendor"
    async with open_session() as s:
        page = await s.adapter.browse(s, "/mail/inbox")
    assert [i.title for i in page.items] == ["Invoice 1"]
    assert len(graph.token_requests) == 1
    form = parse_qs(graph.token_requests[0].content.decode())
    assert form["grant_type"] == ["refresh_token"] and form["refresh_token"] == ["refresh-1"]
    assert [r.headers["authorization"] for r in graph.requests] == [
        "Bearer access-1",
        "Bearer access-2",
    ]


async def test_delta_repeats_removed_and_expired_token(open_session, graph):
    delta = f"{INBOX.replace('messages', 'messages/delta')}"
    repeated = message(2)
    pages = [
        {"value": [message(1), repeated], "@odata.nextLink": f"{GRAPH}{delta}?$skiptoken=p2"},
        {
            "value": [
                repeated,
                {
                    "@odata.type": "#microsoft.graph.message",
                    "id": "AAMk009",
                    "@removed": {"reason": "deleted"},
                },
            ],
            "@odata.deltaLink": f"{GRAPH}{delta}?$deltatoken=d1",
        },
    ]

    def answer(request: httpx.Request) -> httpx.Response:
        p = params(request)
        if p.get("$deltatoken") == "d1":
            return graph_error("syncStateNotFound", 400)
        return httpx.Response(200, json=pages[1] if p.get("$skiptoken") == "p2" else pages[0])

    graph.routes[("GET", delta)] = answer
    async with open_session() as s:
        got = [p async for p in s.adapter.sync(s, "/mail/inbox", None)]
        assert [i.id for p in got for i in p.items] == ["mail:AAMk001", "mail:AAMk002"]
        assert got[-1].tombstones == ["mail:AAMk009"]
        assert got[-1].done and got[-1].checkpoint["link"].endswith("$deltatoken=d1")
        assert graph.requests[0].headers["prefer"].startswith("odata.maxpagesize=50")
        with pytest.raises(CursorExpiredError):
            async for _ in s.adapter.sync(s, "/mail/inbox", got[-1].checkpoint):
                pass
        again = [p async for p in sync_pages(s.adapter, s, "/mail/inbox", got[-1].checkpoint)]
    assert all(p.full_listing for p in again), "an expired token means a full re-sync"
    assert {i.id for p in again for i in p.items} == {"mail:AAMk001", "mail:AAMk002"}


async def test_read_message_and_attachments_with_size_checked_first(open_session, graph):
    raw = message(5, hasAttachments=True)
    graph.routes[("GET", "/me/messages/AAMk005")] = httpx.Response(200, json=raw)
    attachment = sample("attachment")
    graph.routes[("GET", "/me/messages/AAMk005/attachments")] = httpx.Response(
        200, json={"value": [attachment]}
    )
    att_url = f"/me/messages/AAMk005/attachments/{attachment['id']}"
    graph.routes[("GET", att_url)] = httpx.Response(200, json=attachment)
    graph.routes[("GET", f"{att_url}/$value")] = httpx.Response(200, content=b"%PDF-1.7 figures")
    async with open_session() as s:
        read = await s.adapter.read_message(s, "mail:AAMk005")
        assert read.body == "Hi team, the quarterly report is attached."
        assert [a.title for a in read.attachments] == ["Q4-figures.pdf"]
        assert graph.requests[0].headers["prefer"] == 'outlook.body-content-type="text"'
        att = read.attachments[0]
        with pytest.raises(ItemTooLargeError):
            await s.adapter.download(s, att.id, max_bytes=1000)
        assert not any(r.url.path.endswith("/$value") for r in graph.requests), "size first"
        got = await s.adapter.download(s, att.id, max_bytes=20_000)
    assert got.content == b"%PDF-1.7 figures" and got.mime == "application/pdf"


async def test_draft_send_move_flag(open_session, graph):
    created = message(7, isDraft=True)
    graph.routes[("POST", "/me/messages")] = httpx.Response(201, json=created)
    graph.routes[("POST", "/me/messages/AAMk007/send")] = httpx.Response(202)
    graph.routes[("POST", "/me/messages/AAMk007/move")] = httpx.Response(201, json=message(8))
    graph.routes[("PATCH", "/me/messages/AAMk008")] = httpx.Response(
        200, json=message(8, flag={"flagStatus": "flagged"}, isRead=True)
    )
    async with open_session() as s:
        draft = await s.adapter.draft(
            s, OutgoingMessage(to=["pavel@fabrikam.com"], subject="Figures", body="Attached.")
        )
        sent = await s.adapter.send_draft(s, draft.id)
        moved = await s.adapter.move(s, "mail:AAMk007", "archive")
        flagged = await s.adapter.flag(s, moved.id, flagged=True, read=True)
    body = json.loads(graph.requests[0].content)
    assert body["toRecipients"] == [{"emailAddress": {"address": "pavel@fabrikam.com"}}]
    assert body["body"] == {"contentType": "Text", "content": "Attached."}
    assert sent == "mail:AAMk007"
    assert json.loads(graph.requests[2].content) == {"destinationId": "archive"}
    assert moved.id == "mail:AAMk008", "Graph gives a moved message a new id"
    assert json.loads(graph.requests[3].content) == {
        "flag": {"flagStatus": "flagged"},
        "isRead": True,
    }
    assert flagged.extra["vendor"]["flag"] == "flagged"


async def test_calendar_view_and_contacts(open_session, graph):
    graph.routes[("GET", "/me/calendarView")] = httpx.Response(
        200, json={"value": [sample("event")]}
    )
    graph.routes[("GET", "/me/contacts")] = httpx.Response(200, json={"value": [sample("contact")]})
    async with open_session() as s:
        events = await s.adapter.browse(s, "/calendar/default?from=2026-01-01&to=2026-01-31")
        contacts = await s.adapter.browse(s, "/contacts")
    view = params(graph.requests[0])
    assert (view["startDateTime"], view["endDateTime"]) == (
        "2026-01-01T00:00:00Z",
        "2026-01-31T00:00:00Z",
    )
    event = events.items[0]
    assert event.kind == "event" and event.title == "Budget review"
    assert event.extra["start"] == "2026-01-12T14:00:00Z"
    assert event.extra["location"] == "Conference Room 4"
    contact = contacts.items[0].extra
    assert (contact["email"], contact["phone"], contact["company"]) == (
        "pavelb@fabrikam.onmicrosoft.com",
        "+41 44 555 01 02",
        "Fabrikam AG",
    )


async def test_bad_paths_and_ids_are_clear_errors(open_session):
    from nyla.sdk.connectors import VendorBadRequestError

    async with open_session() as s:
        with pytest.raises(VendorBadRequestError, match="paths start with"):
            await s.adapter.browse(s, "/nowhere")
        with pytest.raises(VendorBadRequestError, match="not an item id"):
            await s.adapter.download(s, "AAMk005")
        with pytest.raises(VendorBadRequestError, match="ISO date"):
            await s.adapter.browse(s, "/mail/inbox?from=yesterday")
