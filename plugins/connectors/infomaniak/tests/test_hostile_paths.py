"""Hostile ids, paths and settings never take an Infomaniak request elsewhere: kDrive's
REST paths stay on their drive and file, CalDAV requests stay in the account's calendar
home, every request recorded at the wire."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import pytest

from nyla.testing.hostile_ids import (
    HOSTILE,
    WireContext,
    failures,
    http_check,
    probe_all,
    tally,
    wire_context,
)
from nyla_connector_infomaniak import InfomaniakConnector

from .wires import sample

API = "https://api.infomaniak.com"
CALDAV = "https://sync.infomaniak.com"
HOME = f"{CALDAV}/calendars/ada%40example.ch/"
DRIVE = "140946"


def infomaniak(request: httpx.Request) -> httpx.Response:
    """kDrive and CalDAV answering every request as their docs show a success."""
    if request.url.host == "sync.infomaniak.com":
        if request.method == "GET":
            ics = sample("event.ics").replace("{uid}", "1").replace("{summary}", "Standup")
            ics = ics.replace("{description}", "").replace("{modified}", "20260105T093000Z")
            return httpx.Response(200, content=ics.encode())
        xml = '<?xml version="1.0"?><d:multistatus xmlns:d="DAV:"></d:multistatus>'
        return httpx.Response(207, content=xml.encode())
    if request.url.path.endswith("/download"):
        return httpx.Response(200, content=b"bytes")
    if request.url.path.endswith(("/files", "/search")):
        body: Any = {"result": "success", "data": [sample("kdrive_file.json")], "has_more": False}
        return httpx.Response(200, json=body)
    if "/listing" in request.url.path:
        data = {"files": [sample("kdrive_file.json")], "actions": [], "has_more": False}
        return httpx.Response(200, json={"result": "success", "data": data})
    return httpx.Response(200, json={"result": "success", "data": sample("kdrive_file.json")})


async def _first(pages: Any) -> Any:
    async for page in pages:
        return page
    return None


def calls(ctx: WireContext) -> dict[str, Callable[[str], Awaitable[Any]]]:
    """Each operation with the hostile value where a tool call (or a setting) puts it."""
    adapter = InfomaniakConnector()
    return {
        "browse kDrive dir": lambda v: adapter.browse(ctx, f"/kdrive/{v}"),
        "browse path": lambda v: adapter.browse(ctx, v),
        "download kDrive file": lambda v: adapter.download(ctx, f"kdrive:{v}"),
        "download event": lambda v: adapter.download(ctx, f"caldav:{v}"),
        "download event below home": lambda v: adapter.download(
            ctx, f"caldav:/calendars/ada%40example.ch/{v}"
        ),
        "search kDrive dir": lambda v: adapter.search(ctx, "budget", f"/kdrive/{v}"),
        "browse calendar": lambda v: adapter.browse(ctx, f"/calendar/{v}"),
        "search calendar": lambda v: adapter.search(ctx, "standup", f"/calendar/{v}"),
        "sync kDrive dir": lambda v: _first(adapter.sync(ctx, f"/kdrive/{v}", None)),
    }


def _ctx(**settings: str) -> WireContext:
    merged = {"driveId": DRIVE, "caldavUrl": CALDAV, **settings}
    return wire_context(
        "infomaniak", infomaniak, base_url=API, settings=merged, account="ada@example.ch"
    )


#: a calendar path's ``?`` starts its date range (``/calendar/work?from=2026-01-01``), so a
#: value holding one names the calendar before it: grammar, not an escape
RANGE_PATHS = {"browse calendar", "search calendar"}


@pytest.mark.parametrize("operation", list(calls(_ctx())))
async def test_infomaniak_never_leaves_the_drive_or_the_calendar_home(operation: str) -> None:
    ctx = _ctx()
    bases = [f"{API}/3/drive/{DRIVE}/", f"{API}/2/drive/{DRIVE}/", HOME]
    table = [h for h in HOSTILE if operation not in RANGE_PATHS or "?" not in h.value]
    probes = await probe_all(calls(ctx)[operation], ctx.requests, http_check(bases), table)
    assert failures(probes) == [], tally(probes)


@pytest.mark.parametrize("setting", ["driveId", "caldavUser"])
async def test_a_hostile_setting_never_shapes_a_request(setting: str) -> None:
    ctx = _ctx()
    adapter = InfomaniakConnector()
    bases = [f"{API}/3/drive/", f"{API}/2/drive/", f"{CALDAV}/calendars/"]

    async def call(value: str) -> None:
        ctx.connection.settings[setting] = value
        if setting == "driveId":
            await adapter.browse(ctx, "/kdrive")
        else:
            await adapter.browse(ctx, "/calendar")

    probes = await probe_all(call, ctx.requests, http_check(bases))
    assert failures(probes) == [], tally(probes)


async def test_an_event_is_fetched_from_the_calendar_server() -> None:
    ctx = _ctx()
    got = await InfomaniakConnector().download(ctx, "caldav:/calendars/ada%40example.ch/work/1.ics")
    assert got.content.startswith(b"BEGIN:VCALENDAR")
    assert str(ctx.requests[-1].url) == f"{HOME}work/1.ics"
