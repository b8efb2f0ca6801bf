"""Infomaniak specifics: kDrive's listing -> listing/continue with the cursor as the
checkpoint and delete actions as tombstones; a calendar browse clamped to under three months
with the event's start, end and place inline; the API token as the bearer."""

from __future__ import annotations

import re

import httpx

from .wires import HOME, budget_event, sample

LISTING = "/3/drive/140946/files/57/listing"


async def test_kdrive_listing_then_continue(open_session, vendor):
    vendor.routes[("GET", "/3/drive/140946/files/57")] = lambda r: httpx.Response(
        200, json={"result": "success", "data": sample("kdrive_dir.json")}
    )
    budget = sample("kdrive_file.json")
    vendor.routes[("GET", LISTING)] = lambda r: httpx.Response(
        200,
        json={
            "result": "success",
            "data": {"files": [budget], "actions": [], "cursor": "c-1", "has_more": False},
        },
    )
    changed = dict(budget, last_modified_at=budget["last_modified_at"] + 60)
    vendor.routes[("GET", f"{LISTING}/continue")] = lambda r: httpx.Response(
        200,
        json={
            "result": "success",
            "data": {
                "files": [changed, changed],
                "actions": [
                    {"action": "file_delete", "file_id": 1044},
                    {"action": "file_rename", "file_id": 1043},
                ],
                "cursor": "c-2",
                "has_more": False,
            },
        },
    )
    async with open_session() as s:
        first = [p async for p in s.adapter.sync(s, "/kdrive/57", None)]
        second = [p async for p in s.adapter.sync(s, "/kdrive/57", first[-1].checkpoint)]
    item = first[0].items[0]
    assert item.id == "kdrive:1043" and item.path == "/kdrive/57/Budget 2026.xlsx"
    stored = first[-1].checkpoint
    assert (stored["cursor"], stored["full"]) == ("c-1", False) and first[0].full_listing
    assert [i.id for i in second[0].items] == ["kdrive:1043"], "a repeated file is yielded once"
    assert second[0].tombstones == ["kdrive:1044"] and not second[0].full_listing
    cont = next(r for r in vendor.requests if r.url.path.endswith("/continue"))
    assert cont.url.params["cursor"] == "c-1"
    assert all(r.headers["authorization"] == "Bearer pat-1" for r in vendor.requests)


async def test_calendar_range_is_clamped_and_metadata_inline(open_session, vendor):
    event = budget_event()
    body = (
        '<?xml version="1.0"?><d:multistatus xmlns:d="DAV:" xmlns:c="urn:ietf:params:xml:ns:caldav">'
        f'<d:response><d:href>{HOME}e1.ics</d:href><d:propstat><d:prop><d:getetag>"1"</d:getetag>'
        f"<c:calendar-data>{event}</c:calendar-data></d:prop><d:status>HTTP/1.1 200 OK</d:status>"
        "</d:propstat></d:response></d:multistatus>"
    )
    vendor.routes[("REPORT", "/calendars/ada@example.ch/work/")] = lambda r: httpx.Response(
        207, content=body.encode()
    )
    async with open_session() as s:
        page = await s.adapter.browse(s, "/calendar/work?from=2026-01-01&to=2026-12-31")
    sent = vendor.requests[0].content.decode()
    window = re.search(r'start="(\w+)" end="(\w+)"', sent).groups()
    assert window == ("20260101T000000Z", "20260331T000000Z"), (
        "89 days, under the vendor's 3 months"
    )
    assert vendor.requests[0].headers["depth"] == "1"
    assert vendor.requests[0].url.host == "sync.infomaniak.com"
    item = page.items[0]
    assert item.kind == "event" and item.title == "Budget review"
    assert (item.extra["start"], item.extra["end"], item.extra["location"]) == (
        "2026-01-12T14:00:00Z",
        "2026-01-12T15:00:00Z",
        "Salle Léman",
    )
