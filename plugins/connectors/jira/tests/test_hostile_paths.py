"""Hostile issue, attachment and project ids never reshape a Jira request: each id is one
path segment below the site's ``/rest/api/3``, every request recorded at the wire."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from nyla.sdk.connectors import TaskChange
from nyla.testing.hostile_ids import (
    WireContext,
    failures,
    http_check,
    probe_all,
    tally,
    wire_context,
)
from nyla_connector_jira import JiraConnector

SITE = "https://api.atlassian.com/ex/jira/11223344-a1b2-3b33-c444-def123456789"
DATA = Path(__file__).parent / "data"


def sample(name: str) -> Any:
    return json.loads((DATA / name).read_text())


def jira(request: httpx.Request) -> httpx.Response:
    """Jira Cloud's REST v3 answering each request with the payload its docs show."""
    path = request.url.path
    if path.endswith("/myself"):
        return httpx.Response(200, json=sample("myself.json"))
    if "/attachment/content/" in path:
        return httpx.Response(200, content=b"bytes")
    if "/attachment/" in path:
        return httpx.Response(200, json=sample("attachment.json"))
    if path.endswith("/comment"):
        return httpx.Response(200, json={"comments": []})
    if path.endswith("/search/jql"):
        return httpx.Response(200, json=sample("search_jql.json"))
    if path.endswith("/project/search"):
        return httpx.Response(200, json=sample("project_search.json"))
    if path.endswith("/transitions"):
        return httpx.Response(200, json=sample("transitions.json"))
    if request.method == "POST" and path.endswith("/issue"):
        return httpx.Response(201, json={"id": "10002", "key": "ED-1"})
    if request.method in ("PUT", "POST"):
        return httpx.Response(204)
    return httpx.Response(200, json=sample("issue.json"))


def calls(ctx: WireContext) -> dict[str, Callable[[str], Awaitable[Any]]]:
    """Each operation with the hostile value where a tool call puts it."""
    j = JiraConnector()
    return {
        "issue": lambda v: j.item(ctx, v),
        "download issue": lambda v: j.download(ctx, v),
        "read task": lambda v: j.read_task(ctx, v),
        "update task": lambda v: j.update_task(ctx, v, TaskChange(comment="done")),
        "download attachment": lambda v: j.download(ctx, f"attachment:{v}"),
        "browse project": lambda v: j.browse(ctx, f"/{v}"),
        "search project": lambda v: j.search(ctx, "checkout", f"/{v}"),
        "create in project": lambda v: j.create_task(ctx, v, TaskChange(title="t")),
    }


def _ctx() -> WireContext:
    return wire_context("jira", jira, base_url=SITE, settings={"baseUrl": SITE})


@pytest.mark.parametrize("operation", list(calls(_ctx())))
async def test_jira_requests_keep_their_shape(operation: str) -> None:
    ctx = _ctx()
    probes = await probe_all(
        calls(ctx)[operation], ctx.requests, http_check([f"{SITE}/rest/api/3/"])
    )
    assert failures(probes) == [], tally(probes)


async def test_the_cloud_id_setting_is_one_segment() -> None:
    ctx = wire_context("jira", jira, settings={"cloudId": "../../evil"})
    from nyla.sdk.connectors import ConnectorError

    with pytest.raises(ConnectorError):
        await JiraConnector().item(ctx, "ED-1")
    assert ctx.requests == []
