"""Calendar and Contacts specifics over the fake at the wire: 410 on an expired sync token
becomes a full re-sync, cancelled events are tombstones, a date range becomes
``timeMin``/``timeMax``, an expired People sync token (400 ``EXPIRED_SYNC_TOKEN``) becomes a
full re-sync, and the seeds' inline fields (start, end, place; e-mail, phone, company)."""

from __future__ import annotations

from typing import Any

from nyla.sdk.connectors import inline_line, sync_pages

from .calendar_wire import CalendarWire, ContactsWire
from .google_wire import GoogleCorpus, one


def corpus_of(prefix: str, raw: str, scope: str) -> GoogleCorpus:
    corpus = GoogleCorpus(prefix, raw, page_size=3)
    for i in range(5):
        corpus.add(f"Budget review {i}", f"Walk through figures {i}.", scope)
    return corpus


async def run(session: Any, scope: str, checkpoint: Any) -> tuple[list[Any], Any]:
    pages = [p async for p in sync_pages(session.adapter, session, scope, checkpoint)]
    return pages, pages[-1].checkpoint


async def test_calendar_410_means_a_full_resync_and_cancelled_events_are_tombstones(google):
    corpus = corpus_of("event:primary:", "4eahs9ghkhrv", "/calendar/primary")
    async with google(CalendarWire(), corpus) as (session, vendor):
        _, checkpoint = await run(session, "/calendar/primary", None)
        assert checkpoint["syncToken"] == str(corpus.stamp())
        gone = corpus.live()[0]
        corpus.remove(gone.id)
        pages, checkpoint = await run(session, "/calendar/primary", checkpoint)
        assert [t for p in pages for t in p.tombstones] == [gone.id]
        assert not any(p.full_listing for p in pages)
        corpus.expire_cursors()
        vendor.data_requests.clear()
        pages, after = await run(session, "/calendar/primary", checkpoint)
    first, second = vendor.data_requests[0], vendor.data_requests[1]
    assert one(first, "syncToken") == checkpoint["syncToken"], "the stored token was tried"
    assert one(second, "syncToken") is None, "after 410 the sync starts over without it"
    assert all(p.full_listing for p in pages)
    assert {i.id for p in pages for i in p.items} == {d.id for d in corpus.live()}
    assert after["syncToken"] == str(corpus.stamp())


async def test_calendar_date_range_and_inline_fields(google):
    corpus = corpus_of("event:primary:", "4eahs9ghkhrv", "/calendar/primary")
    async with google(CalendarWire(), corpus) as (session, vendor):
        page = await session.adapter.browse(
            session, "/calendar/primary?from=2026-01-12&to=2026-01-19"
        )
    request = vendor.data_requests[0]
    assert one(request, "timeMin") == "2026-01-12T00:00:00Z"
    assert one(request, "timeMax") == "2026-01-19T00:00:00Z"
    assert one(request, "singleEvents") == "true" and one(request, "orderBy") == "startTime"
    line = inline_line(page.items[0])
    assert line.startswith("📅 Budget review 0 — start 2026-01-12T10:00:00+01:00; ")
    assert "end 2026-01-12T11:00:00+01:00; at Room 4.12, Zurich" in line


async def test_contacts_expired_sync_token_means_a_full_resync(google):
    corpus = corpus_of("contact:", "c42867937209", "/contacts")
    async with google(ContactsWire(), corpus) as (session, vendor):
        _, checkpoint = await run(session, "/contacts", None)
        assert one(vendor.data_requests[0], "requestSyncToken") == "true"
        corpus.remove(corpus.live()[1].id)
        pages, checkpoint = await run(session, "/contacts", checkpoint)
        assert len([t for p in pages for t in p.tombstones]) == 1
        corpus.expire_cursors()
        vendor.data_requests.clear()
        pages, after = await run(session, "/contacts", checkpoint)
    assert one(vendor.data_requests[0], "syncToken") == checkpoint["syncToken"]
    assert one(vendor.data_requests[1], "syncToken") is None
    assert all(p.full_listing for p in pages)
    assert {i.id for p in pages for i in p.items} == {d.id for d in corpus.live()}
    assert after["syncToken"] == str(corpus.stamp())


async def test_contacts_inline_fields(google):
    corpus = corpus_of("contact:", "c42867937209", "/contacts")
    async with google(ContactsWire(), corpus) as (session, _):
        page = await session.adapter.search(session, "review 3", "/contacts")
    [person] = page.items
    assert inline_line(person) == (
        "👤 Budget review 3 — e-mail budget.review.3@example.com; phone +41 44 123 45 67; "
        f"company Contoso AG [id: {person.id}]"
    )


async def test_calendar_list_and_an_id_with_reserved_characters(google):
    corpus = corpus_of("event:primary:", "4eahs9ghkhrv", "/calendar/primary")
    async with google(CalendarWire(), corpus) as (session, vendor):
        page = await session.adapter.browse(session, "/calendar")
        holidays = page.items[1].path
        await session.adapter.browse(session, holidays)
    assert [i.title for i in page.items] == ["megan@example.com", "Holidays in Switzerland"]
    assert holidays == "/calendar/en.swiss#holiday@group.v.calendar.google.com"
    # the calendar id is one path segment: '#' and '@' are escaped
    assert vendor.data_requests[-1].url.raw_path.startswith(
        b"/calendar/v3/calendars/en.swiss%23holiday%40group.v.calendar.google.com/events"
    )
