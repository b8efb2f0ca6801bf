"""Gmail specifics over the fake at the wire: ``q=`` scoped to the label, metadata resolved
in parallel, quota units budgeted, the history id taken before the sweep, an expired history
id (404) becoming a full re-sync, reading a message with its attachment, threads."""

from __future__ import annotations

import asyncio
import contextlib
from datetime import UTC, datetime
from typing import Any

import httpx

from nyla.sdk.connectors import MailQuery, sync_pages
from nyla_connector_google import gmail

from .google_wire import GmailWire, GoogleCorpus, one


def mailbox(n: int = 7, page_size: int = 3) -> GoogleCorpus:
    corpus = GoogleCorpus("mail:", "18c2f1a9b3e", page_size=page_size)
    for i in range(n):
        corpus.add(f"Budget {i:02d}", f"Budget figures {i}, revenue grew.", "/mail/INBOX")
    return corpus


def gets(vendor: Any) -> list[httpx.Request]:
    return [r for r in vendor.data_requests if "/messages/" in r.url.path]


async def run(session: Any, scope: str, checkpoint: Any) -> tuple[list[Any], Any]:
    pages = [p async for p in sync_pages(session.adapter, session, scope, checkpoint)]
    return pages, pages[-1].checkpoint


async def test_search_is_scoped_to_the_label_with_gmail_operators(google):
    corpus = mailbox()
    async with google(GmailWire(), corpus) as (session, vendor):
        query = MailQuery(
            text="revenue",
            sender="adele@example.com",
            subject="Budget",
            folder="inbox",
            since=datetime(2026, 1, 1, tzinfo=UTC),
            until=datetime(2026, 1, 31, tzinfo=UTC),
            unread_only=True,
        )
        await session.adapter.search_mail(session, query)
    listing = vendor.data_requests[0]
    assert listing.url.path == "/gmail/v1/users/me/messages"
    assert one(listing, "labelIds") == "INBOX", "the connected label scopes the search"
    assert one(listing, "q") == (
        "revenue from:(adele@example.com) subject:(Budget) after:2026/01/01 "
        "before:2026/02/01 is:unread"
    )
    assert all(one(r, "format") == "metadata" for r in gets(vendor))


async def test_metadata_is_resolved_in_parallel_not_one_by_one(google):
    corpus = mailbox(n=12, page_size=25)
    state = {"now": 0, "peak": 0}
    crowd = asyncio.Event()

    def wrap(vendor: Any) -> Any:
        async def handler(request: httpx.Request) -> httpx.Response:
            if "/messages/" not in request.url.path:
                return vendor(request)
            state["now"] += 1
            state["peak"] = max(state["peak"], state["now"])
            if state["now"] >= 4:
                crowd.set()
            # one-by-one requests never meet here: the wait runs out, the peak stays 1
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(crowd.wait(), timeout=2)
            state["now"] -= 1
            return vendor(request)

        return handler

    async with google(GmailWire(), corpus, wrap) as (session, vendor):
        page = await session.adapter.search(session, "budget", "/mail/INBOX")
    assert len(page.items) == 12 and len(gets(vendor)) == 12
    assert 4 <= state["peak"] <= gmail.PARALLEL, state
    assert [i.title for i in page.items] == [f"Budget {i:02d}" for i in range(12)], "order kept"
    first = page.items[0]
    assert first.extra["from"] == "Ada Muster <ada@example.com>"
    assert first.extra["date"] == "2026-01-05T09:30:00Z"


async def test_quota_units_are_counted_and_waited_for(google, sleeps):
    corpus = mailbox(n=5, page_size=25)
    async with google(GmailWire(), corpus) as (session, vendor):
        budget = gmail.mailbox_budget(session)
        before = budget.remaining
        await session.adapter.search(session, "budget", "/mail/INBOX")
        # messages.list 5 units + 5 x messages.get 5 units
        assert before - budget.remaining == 5 + 5 * 5
        # nearly used up: the next call waits for the window instead of meeting a 429
        for _ in range(budget.remaining - 3):
            await budget.acquire()
        sleeps.delays.clear()
        await session.adapter.search(session, "budget 1", "/mail/INBOX")
    assert sleeps.delays and sum(sleeps.delays) <= gmail.QUOTA_WINDOW_S
    assert budget.remaining >= 0
    assert all(r.url.path.startswith("/gmail/") for r in vendor.data_requests)


async def test_history_id_is_taken_before_the_sweep(google):
    corpus = mailbox()
    arrived: list[str] = []

    def wrap(vendor: Any) -> Any:
        def handler(request: httpx.Request) -> httpx.Response:
            if request.url.path.endswith("/messages") and not arrived:
                arrived.append(corpus.add("Arrived during the sweep", "late news").id)
            return vendor(request)

        return handler

    async with google(GmailWire(), corpus, wrap) as (session, vendor):
        pages, checkpoint = await run(session, "/mail/INBOX", None)
        paths = [r.url.path.rsplit("/", 1)[-1] for r in vendor.data_requests]
        assert paths.index("profile") < paths.index("messages"), "historyId read first"
        pages, _ = await run(session, "/mail/INBOX", checkpoint)
    titles = {i.title for p in pages for i in p.items}
    assert "Arrived during the sweep" in titles, "a message of the sweep's time was lost"
    assert not any(p.full_listing for p in pages)


async def test_expired_history_id_404_becomes_a_full_resync(google):
    corpus = mailbox()
    async with google(GmailWire(), corpus) as (session, vendor):
        _, checkpoint = await run(session, "/mail/INBOX", None)
        corpus.expire_cursors()
        corpus.remove(corpus.live()[0].id)
        vendor.data_requests.clear()
        pages, after = await run(session, "/mail/INBOX", checkpoint)
    history = [r for r in vendor.data_requests if r.url.path.endswith("/history")]
    assert one(history[0], "startHistoryId") == checkpoint["historyId"]
    assert all(p.full_listing for p in pages), "after the 404 everything is listed again"
    assert {i.id for p in pages for i in p.items} == {d.id for d in corpus.live()}
    assert after["historyId"] == str(corpus.stamp()) and not after.get("page")


async def test_history_reports_additions_and_deletions(google):
    corpus = mailbox()
    async with google(GmailWire(), corpus) as (session, vendor):
        _, checkpoint = await run(session, "/mail/INBOX", None)
        gone = corpus.live()[2]
        corpus.remove(gone.id)
        new = corpus.add("Fresh", "fresh mail", "/mail/INBOX")
        vendor.data_requests.clear()
        pages, _ = await run(session, "/mail/INBOX", checkpoint)
    assert [i.id for p in pages for i in p.items] == [new.id]
    assert {t for p in pages for t in p.tombstones} == {gone.id}
    history = [r for r in vendor.data_requests if r.url.path.endswith("/history")]
    assert one(history[0], "labelId") == "INBOX"
    assert len(gets(vendor)) == 1, "only the added message is fetched"


async def test_read_message_with_attachment_and_download(google):
    corpus = mailbox(n=1)
    doc = corpus.live()[0]
    doc.extra["attachment"] = ("q4-budget.csv", b"quarter,revenue\nQ4,1200000\n")

    async with google(GmailWire(), corpus) as (session, vendor):
        msg = await session.adapter.read_message(session, doc.id)
        assert msg.body == doc.content.decode() and msg.body_type == "text"
        assert msg.cc == ["Alex Wilber <alex@example.com>"]
        [att] = msg.attachments
        assert att.title == "q4-budget.csv" and att.size == 27
        got = await session.adapter.download(session, att.id)
    assert got.content == b"quarter,revenue\nQ4,1200000\n"
    fetched = [r for r in vendor.data_requests if "/attachments/" in r.url.path]
    assert len(fetched) == 1 and fetched[0].url.path.endswith(f"x{corpus.raw(doc.id)}")


async def test_labels_and_threads(google):
    corpus = mailbox(n=3)
    first, second, third = corpus.live()
    second.extra["threadId"] = third.extra["threadId"] = "18c2f1a9b3eaaaaa"
    async with google(GmailWire(), corpus) as (session, vendor):
        labels = await session.adapter.browse(session, "/mail")
        threads = await session.adapter.browse(session, "/threads?label=inbox")
        thread = await session.adapter.browse(session, "/threads/18c2f1a9b3eaaaaa")
    assert [(i.title, i.path) for i in labels.items] == [
        ("INBOX", "/mail/INBOX"),
        ("Finance", "/mail/Label_12"),
    ]
    assert {i.id for i in threads.items} == {
        f"thread:{corpus.raw(first.id)}",
        "thread:18c2f1a9b3eaaaaa",
    }
    listing = next(r for r in vendor.data_requests if r.url.path.endswith("/threads"))
    assert one(listing, "labelIds") == "INBOX"
    assert [i.title for i in thread.items] == [second.name, third.name]
    assert one(vendor.data_requests[-1], "format") == "metadata"
