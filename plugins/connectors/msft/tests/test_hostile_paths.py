"""Hostile ids, paths and cursors never reshape a Graph request: every id is one path
segment below ``/v1.0``, OneDrive path addressing (``root:/a/b:``) stays in its drive, and a
cursor is followed only when it is a Graph link. Every request is recorded at the wire."""

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
from nyla_connector_msft import MsftConnector

GRAPH = "https://graph.microsoft.com/v1.0"
DATA = Path(__file__).parent / "data"


def sample(name: str) -> Any:
    return json.loads((DATA / name).read_text())


def graph(request: httpx.Request) -> httpx.Response:
    """Graph answering each request with the resource its docs show (a message, a
    driveItem, an attachment, an event, a contact, a collection)."""
    path = request.url.path
    if path.endswith("/$value") or path.endswith("/content"):
        return httpx.Response(200, content=b"bytes")
    if "/attachments/" in path:
        return httpx.Response(200, json=sample("attachment.json"))
    if "/messages/" in path or path.endswith("/move"):
        return httpx.Response(200, json=sample("message.json"))
    if "/items/" in path:
        return httpx.Response(200, json=sample("drive_item.json"))
    if "/events/" in path:
        return httpx.Response(200, json=sample("event.json"))
    if "/contacts/" in path:
        return httpx.Response(200, json=sample("contact.json"))
    if path.endswith("/me/drive"):
        return httpx.Response(200, json={"id": "b!drive"})
    return httpx.Response(200, json={"value": []})


async def _first(pages: Any) -> Any:
    async for page in pages:
        return page
    return None


def item_calls(ctx: WireContext) -> dict[str, Callable[[str], Awaitable[Any]]]:
    """Operations on one item, the hostile value in each part of its id."""
    msft = MsftConnector()
    return {
        "download message": lambda v: msft.download(ctx, f"mail:{v}"),
        "read message": lambda v: msft.read_message(ctx, f"mail:{v}"),
        "flag message": lambda v: msft.flag(ctx, f"mail:{v}", flagged=True),
        "move message": lambda v: msft.move(ctx, f"mail:{v}", "archive"),
        "download file": lambda v: msft.download(ctx, f"file:b!drive:{v}"),
        "file of drive": lambda v: msft.item(ctx, f"file:{v}:01ITEM"),
        "download attachment": lambda v: msft.download(ctx, f"attachment:AAMk:{v}"),
        "attachment of message": lambda v: msft.download(ctx, f"attachment:{v}:AAMkatt"),
        "download event": lambda v: msft.download(ctx, f"event:{v}"),
        "download contact": lambda v: msft.download(ctx, f"contact:{v}"),
    }


def path_calls(ctx: WireContext) -> dict[str, Callable[[str], Awaitable[Any]]]:
    """Operations on a container, the hostile value in its path or cursor."""
    msft = MsftConnector()
    return {
        "browse mail folder": lambda v: msft.browse(ctx, f"/mail/{v}"),
        "search mail folder": lambda v: msft.search_mail(ctx, MailQuery(text="x", folder=v)),
        "browse OneDrive path": lambda v: msft.browse(ctx, f"/drive/{v}"),
        "browse OneDrive subpath": lambda v: msft.browse(ctx, f"/drive/Reports/{v}/2026"),
        "search OneDrive path": lambda v: msft.search(ctx, "budget", f"/drive/{v}"),
        "browse drive by id": lambda v: msft.browse(ctx, f"/drives/{v}/Reports"),
        "browse site": lambda v: msft.browse(ctx, f"/sites/{v}"),
        "browse library": lambda v: msft.browse(ctx, f"/sites/contoso/{v}"),
        "browse calendar": lambda v: msft.browse(ctx, f"/calendar/{v}"),
        "browse contacts": lambda v: msft.browse(ctx, f"/contacts/{v}"),
        "sync mail folder": lambda v: _first(msft.sync(ctx, f"/mail/{v}", None)),
        "sync drive folder": lambda v: _first(msft.sync(ctx, f"/drive/{v}", None)),
        "browse with cursor": lambda v: msft.browse(ctx, "/drive", cursor=v),
        "search with cursor": lambda v: msft.search(ctx, "budget", "", cursor=v),
    }


def _ctx() -> WireContext:
    return wire_context("msft", graph, base_url=GRAPH)


#: every path's ``?`` starts its query (``/mail/inbox?from=2026-01-01``): a value holding
#: one names the container before it, which is grammar, not an escape
QUERY_PATHS = {
    op for op in path_calls(wire_context("msft", graph)) if op.startswith(("browse ", "sync "))
} - {"browse with cursor"}
OPERATIONS = [*item_calls(_ctx()), *path_calls(_ctx())]


@pytest.mark.parametrize("operation", OPERATIONS)
async def test_graph_requests_keep_their_shape(operation: str) -> None:
    ctx = _ctx()
    call = {**item_calls(ctx), **path_calls(ctx)}[operation]
    table = [h for h in HOSTILE if operation not in QUERY_PATHS or "?" not in h.value]
    probes = await probe_all(call, ctx.requests, http_check([GRAPH]), table)
    assert failures(probes) == [], tally(probes)


async def test_real_ids_and_paths_still_reach_graph() -> None:
    ctx = _ctx()
    msft = MsftConnector()
    await msft.download(ctx, "mail:AAMkAGI2TG93AAA=")
    await msft.browse(ctx, "/drive/Reports 2026/Q3 (final)")
    await msft.browse(ctx, "/drive", cursor=f"{GRAPH}/me/drive/root/children?$skiptoken=X1")
    site = "contoso.sharepoint.com,da60e844-ba1d,712a596e"
    await msft.browse(ctx, f"/sites/{site}")
    paths = [r.url.raw_path.decode().split("?")[0] for r in ctx.requests]
    assert "/v1.0/me/messages/AAMkAGI2TG93AAA%3D/$value" in paths
    assert any(
        p.startswith("/v1.0/me/drive/root:/Reports%202026/Q3%20%28final%29:/") for p in paths
    )
    assert str(ctx.requests[-2].url) == f"{GRAPH}/me/drive/root/children?$skiptoken=X1"
    assert f"/v1.0/sites/{site.replace(',', '%2C')}/drives" in paths
