"""Stored checkpoints of kDrive and CalDAV: the shape today's nyla writes resumes (the
cursor, the sync token); a checkpoint of the wrong shape, or one taken on another directory
or calendar, starts a full listing instead of failing the sync."""

from __future__ import annotations

import re

import httpx
import pytest

from .test_vendor import LISTING
from .wires import budget_event, multistatus, sample

CALENDAR = "/calendars/ada@example.ch/work/"


def serve_kdrive(vendor) -> None:
    """The full listing names one file; ``continue`` from c-1 names a deletion."""
    vendor.routes[("GET", "/3/drive/140946/files/57")] = lambda r: httpx.Response(
        200, json={"result": "success", "data": sample("kdrive_dir.json")}
    )
    full = {"files": [sample("kdrive_file.json")], "actions": [], "cursor": "c-1"}
    later = {"files": [], "actions": [{"action": "file_delete", "file_id": 9}], "cursor": "c-2"}
    vendor.routes[("GET", LISTING)] = lambda r: httpx.Response(
        200, json={"result": "success", "data": {**full, "has_more": False}}
    )
    vendor.routes[("GET", f"{LISTING}/continue")] = lambda r: httpx.Response(
        200, json={"result": "success", "data": {**later, "has_more": False}}
    )


async def test_todays_kdrive_checkpoint_resumes(open_session, vendor):
    serve_kdrive(vendor)
    async with open_session() as s:
        stored = {"cursor": "c-1", "full": False}  # as nyla stored it before the scope tag
        [page] = [p async for p in s.adapter.sync(s, "/kdrive/57", stored)]
    assert not page.full_listing and page.tombstones == ["kdrive:9"]
    assert vendor.requests[-1].url.params["cursor"] == "c-1"
    assert (page.checkpoint["cursor"], page.checkpoint["scope"]) == ("c-2", "/kdrive/57")


@pytest.mark.parametrize(
    "stored",
    [{"cursor": ["c-1"], "full": False}, {"cursor": "c-1", "full": False, "scope": "/kdrive/58"}],
)
async def test_a_kdrive_checkpoint_of_the_wrong_shape_starts_over(open_session, vendor, stored):
    serve_kdrive(vendor)
    async with open_session() as s:
        [page] = [p async for p in s.adapter.sync(s, "/kdrive/57", stored)]
    assert page.full_listing and [i.id for i in page.items] == ["kdrive:1043"]
    assert not any(r.url.path.endswith("/continue") for r in vendor.requests)


def serve_calendar(vendor) -> list[str]:
    """The initial sync names one event; from token t-1 one event is gone. Returns the
    tokens the requests carried."""
    sent: list[str] = []
    event = budget_event()
    one = (
        f'<d:response><d:href>{CALENDAR}e1.ics</d:href><d:propstat><d:prop><d:getetag>"1"'
        f"</d:getetag><cal:calendar-data>{event}</cal:calendar-data></d:prop>"
        "<d:status>HTTP/1.1 200 OK</d:status></d:propstat></d:response>"
    )
    gone = (
        f"<d:response><d:href>{CALENDAR}e0.ics</d:href>"
        "<d:status>HTTP/1.1 404 Not Found</d:status></d:response>"
    )

    def answer(request: httpx.Request) -> httpx.Response:
        token = re.search(r"<d:sync-token>(.*?)</d:sync-token>", request.content.decode())
        sent.append(token.group(1) if token else "")
        return multistatus([gone], "t-2") if sent[-1] == "t-1" else multistatus([one], "t-1")

    vendor.routes[("REPORT", CALENDAR)] = answer
    return sent


async def test_todays_caldav_checkpoint_resumes(open_session, vendor):
    sent = serve_calendar(vendor)
    async with open_session() as s:
        [page] = [p async for p in s.adapter.sync(s, "/calendar/work", {"token": "t-1"})]
    assert sent == ["t-1"] and not page.full_listing
    assert page.tombstones == [f"caldav:{CALENDAR}e0.ics"] and page.checkpoint["token"] == "t-2"


@pytest.mark.parametrize(
    "stored", [{"token": 1, "full": False}, {"token": "t-1", "scope": "/calendar/home"}]
)
async def test_a_caldav_checkpoint_of_the_wrong_shape_starts_over(open_session, vendor, stored):
    sent = serve_calendar(vendor)
    async with open_session() as s:
        [page] = [p async for p in s.adapter.sync(s, "/calendar/work", stored)]
    assert sent == [""] and page.full_listing
    assert [i.title for i in page.items] == ["Budget review"]
