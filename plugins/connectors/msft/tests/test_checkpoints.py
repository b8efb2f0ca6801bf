"""Stored checkpoints: the shape today's nyla writes resumes where it stopped; a checkpoint of
the wrong shape (or another scope's) starts a full listing instead of failing the sync."""

from __future__ import annotations

import json

import httpx
import pytest

from .graph_wire import GRAPH, sample
from .test_drive_paths import DELTA, DRIVE, SCOPE, first_listing, serve_delta

MAIL_DELTA = "/me/mailFolders/inbox/messages/delta"


def serve_mail(graph) -> None:
    """The first delta page holds one message; the stored token d1 answers one change."""
    raw = sample("message")
    raw.update(id="AAMk001", changeKey="ck1")
    later = dict(raw, id="AAMk002", changeKey="ck2")

    def answer(request: httpx.Request) -> httpx.Response:
        if request.url.params.get("$deltatoken") == "d1":
            body = {"value": [later], "@odata.deltaLink": f"{GRAPH}{MAIL_DELTA}?$deltatoken=d2"}
        else:
            body = {"value": [raw], "@odata.deltaLink": f"{GRAPH}{MAIL_DELTA}?$deltatoken=d1"}
        return httpx.Response(200, json=body)

    graph.routes[("GET", MAIL_DELTA)] = answer


async def test_todays_mail_checkpoint_resumes(open_session, graph):
    serve_mail(graph)
    stored = {"link": f"{GRAPH}{MAIL_DELTA}?$deltatoken=d1", "full": False, "scope": "/mail/inbox"}
    async with open_session() as s:
        [page] = [p async for p in s.adapter.sync(s, "/mail/inbox", stored)]
    assert not page.full_listing and [i.id for i in page.items] == ["mail:AAMk002"]
    assert json.loads(json.dumps(page.checkpoint))["link"].endswith("$deltatoken=d2")


@pytest.mark.parametrize(
    "stored",
    [
        {"link": 42, "full": "maybe"},
        {"link": f"{GRAPH}{MAIL_DELTA}?$deltatoken=d1", "full": False, "scope": "/mail/other"},
        {"unknown": "shape"},
    ],
)
async def test_a_mail_checkpoint_of_the_wrong_shape_starts_over(open_session, graph, stored):
    serve_mail(graph)
    async with open_session() as s:
        [page] = [p async for p in s.adapter.sync(s, "/mail/inbox", stored)]
    assert page.full_listing and [i.id for i in page.items] == ["mail:AAMk001"]
    assert "$deltatoken" not in str(graph.requests[-1].url)


async def test_todays_drive_checkpoint_resumes(open_session, graph):
    first_listing(graph)
    async with open_session() as s:
        stored = [p async for p in s.adapter.sync(s, SCOPE, None)][-1].checkpoint
        stored = json.loads(json.dumps(stored))  # as the runner keeps it
        serve_delta(graph, {"d1": {"value": [], "@odata.deltaLink": f"{GRAPH}{DELTA}?token=d2"}})
        [page] = [p async for p in s.adapter.sync(s, SCOPE, stored)]
    assert set(stored) >= {"link", "full", "drive", "tree", "scope"}
    assert not page.full_listing and page.checkpoint["link"].endswith("token=d2")


@pytest.mark.parametrize(
    "stored",
    [
        {"link": f"{GRAPH}{DELTA}?token=d1", "full": False, "drive": DRIVE, "tree": "broken"},
        {"link": f"{GRAPH}{DELTA}?token=d1", "full": False, "tree": {}, "scope": "/drive/x"},
    ],
)
async def test_a_drive_checkpoint_of_the_wrong_shape_starts_over(open_session, graph, stored):
    first_listing(graph)
    async with open_session() as s:
        pages = [p async for p in s.adapter.sync(s, SCOPE, stored)]
    assert all(p.full_listing for p in pages)
    assert len({i.path for p in pages for i in p.items if i.kind == "file"}) == 3
