"""Hostile task, list and attachment ids and paths never reshape a ClickUp request: each
id is one path segment below ``/api/v2``, every request recorded at the wire."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from nyla.sdk.connectors import TaskChange, TaskQuery
from nyla.testing.hostile_ids import (
    WireContext,
    failures,
    http_check,
    probe_all,
    tally,
    wire_context,
)
from nyla_connector_clickup import ClickUpConnector

API = "https://api.clickup.com/api/v2"
DATA = Path(__file__).parent / "data"


def sample(name: str) -> Any:
    return json.loads((DATA / name).read_text())


def clickup(request: httpx.Request) -> httpx.Response:
    """ClickUp's API v2 answering each request with the payload its docs show."""
    path = request.url.path.removeprefix("/api/v2")
    if path == "/user":
        return httpx.Response(200, json=sample("user.json"))
    if path == "/team":
        return httpx.Response(200, json=sample("teams.json"))
    if path.endswith("/comment"):
        return httpx.Response(200, json={"comments": []})
    if path.startswith("/task/") or request.method == "POST":
        return httpx.Response(200, json=sample("task.json"))
    if path.endswith("/task"):
        return httpx.Response(200, json={"tasks": [], "last_page": True})
    if path.endswith("/space"):
        return httpx.Response(200, json=sample("spaces.json"))
    if path.endswith("/folder"):
        return httpx.Response(200, json=sample("folders.json"))
    return httpx.Response(200, json=sample("lists.json"))


def calls(ctx: WireContext) -> dict[str, Callable[[str], Awaitable[Any]]]:
    """Each operation with the hostile value where a tool call puts it."""
    c = ClickUpConnector()
    return {
        "task": lambda v: c.item(ctx, v),
        "download task": lambda v: c.download(ctx, v),
        "read task": lambda v: c.read_task(ctx, v),
        "update task": lambda v: c.update_task(ctx, v, TaskChange(comment="done")),
        "attachment of task": lambda v: c.download(ctx, f"attachment:{v}:att1"),
        "browse path": lambda v: c.browse(ctx, v),
        "browse list": lambda v: c.browse(ctx, f"/9001/790/-/{v}"),
        "create in list": lambda v: c.create_task(ctx, v, TaskChange(title="t")),
        "search in list": lambda v: c.search_tasks(ctx, TaskQuery(text="x", container=v)),
    }


def _ctx() -> WireContext:
    return wire_context("clickup", clickup, base_url=API, settings={"timeZone": "UTC"})


@pytest.mark.parametrize("operation", list(calls(_ctx())))
async def test_clickup_requests_keep_their_shape(operation: str) -> None:
    ctx = _ctx()
    probes = await probe_all(calls(ctx)[operation], ctx.requests, http_check([API]))
    assert failures(probes) == [], tally(probes)


async def test_a_malformed_attachment_id_is_a_typed_error() -> None:
    from nyla.sdk.connectors import ConnectorError

    with pytest.raises(ConnectorError):
        await ClickUpConnector().download(_ctx(), "attachment:86c0abc1")
