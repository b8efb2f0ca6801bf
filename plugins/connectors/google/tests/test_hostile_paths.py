"""Hostile ids and paths never reshape a Google API request: a Drive file, a Gmail message,
an attachment, an event or a contact id is one path segment of its API, every request is
recorded at the wire and stays on Google's hosts below the API's prefix."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from nyla.sdk.connectors import MailQuery
from nyla.testing.hostile_ids import (
    HOSTILE,
    WireContext,
    failures,
    http_check,
    probe_all,
    tally,
    wire_context,
)
from nyla_connector_google import GoogleConnector

DATA = Path(__file__).parent / "data"
#: where each API lives (Google's documented hosts and prefixes)
BASES = [
    "https://gmail.googleapis.com/gmail/v1/users/me/",
    "https://www.googleapis.com/drive/v3/",
    "https://www.googleapis.com/calendar/v3/calendars/",
    "https://people.googleapis.com/v1/people/",
]


def sample(name: str) -> Any:
    return json.loads((DATA / name).read_text())


def google(request: httpx.Request) -> httpx.Response:
    """Google's APIs answering each request with the resource their docs show."""
    path = request.url.path
    if request.url.params.get("alt") == "media" or path.endswith("/export"):
        return httpx.Response(200, content=b"bytes")
    if path.startswith("/drive/v3/files"):
        if path == "/drive/v3/files":
            return httpx.Response(200, json={"files": []})
        return httpx.Response(200, json=sample("drive_file.json"))
    if path.startswith("/drive/v3/changes"):
        return httpx.Response(200, json={"startPageToken": "1", "changes": []})
    if "/attachments/" in path:
        return httpx.Response(200, json={"size": 5, "data": "aGVsbG8"})
    if "/messages/" in path or "/threads/" in path:
        return httpx.Response(200, json=sample("gmail_message.json"))
    if path.startswith("/calendar/v3/") and not path.endswith("/events"):
        return httpx.Response(200, json=sample("calendar_event.json"))
    if path.startswith("/v1/people/"):
        return httpx.Response(200, json=sample("person.json"))
    return httpx.Response(200, json={"items": [], "messages": [], "labels": []})


async def _first(pages: Any) -> Any:
    async for page in pages:
        return page
    return None


def calls(ctx: WireContext) -> dict[str, Callable[[str], Awaitable[Any]]]:
    """Each operation with the hostile value in the id part or path a tool call fills."""
    g = GoogleConnector()
    return {
        "download file": lambda v: g.download(ctx, f"file:{v}"),
        "file metadata": lambda v: g.item(ctx, f"file:{v}"),
        "download message": lambda v: g.download(ctx, f"mail:{v}"),
        "read message": lambda v: g.read_message(ctx, f"mail:{v}"),
        "flag message": lambda v: g.flag(ctx, f"mail:{v}", flagged=True),
        "attachment part": lambda v: g.download(ctx, f"attachment:18c2a:{v}"),
        "attachment of message": lambda v: g.download(ctx, f"attachment:{v}:1"),
        "event": lambda v: g.download(ctx, f"event:primary:{v}"),
        "event of calendar": lambda v: g.download(ctx, f"event:{v}:evt1"),
        "contact": lambda v: g.download(ctx, f"contact:{v}"),
        "browse folder": lambda v: g.browse(ctx, f"/drive/{v}"),
        "browse shared drive": lambda v: g.browse(ctx, f"/drives/{v}"),
        "search folder": lambda v: g.search(ctx, "budget", f"/drive/{v}"),
        "browse label": lambda v: g.browse(ctx, f"/mail/{v}"),
        "browse thread": lambda v: g.browse(ctx, f"/threads/{v}"),
        "browse calendar": lambda v: g.browse(ctx, f"/calendar/{v}"),
        "search mail folder": lambda v: g.search_mail(ctx, MailQuery(text="x", folder=v)),
        "sync folder": lambda v: _first(g.sync(ctx, f"/drive/{v}", None)),
    }


def _ctx() -> WireContext:
    return wire_context("google", google)


#: a path's ``?`` starts its query (``/mail/INBOX?from=2026-01-01``): grammar, not an escape
QUERY_PATHS = {"browse folder", "browse shared drive", "search folder", "sync folder"} | {
    "browse label",
    "browse thread",
    "browse calendar",
}


@pytest.mark.parametrize("operation", list(calls(_ctx())))
async def test_google_requests_keep_their_shape(operation: str) -> None:
    ctx = _ctx()
    table = [h for h in HOSTILE if operation not in QUERY_PATHS or "?" not in h.value]
    probes = await probe_all(calls(ctx)[operation], ctx.requests, http_check(BASES), table)
    assert failures(probes) == [], tally(probes)


async def test_real_ids_still_reach_google() -> None:
    ctx = _ctx()
    g = GoogleConnector()
    await g.item(ctx, "file:1Bxi-MVs0XRA5nFMdKvBd_BZjgmUUqptlbs74OgvE2upms")
    await g.download(ctx, "event:en.swiss#holiday@group.v.calendar.google.com:evt_1")
    paths = [r.url.raw_path.decode().split("?")[0] for r in ctx.requests]
    assert paths == [
        "/drive/v3/files/1Bxi-MVs0XRA5nFMdKvBd_BZjgmUUqptlbs74OgvE2upms",
        "/calendar/v3/calendars/en.swiss%23holiday%40group.v.calendar.google.com/events/evt_1",
    ]
