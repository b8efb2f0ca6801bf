"""Jira specifics over the fake site: /search/jql paged by nextPageToken to the end (never
the removed /search, which answers 410), bounded JQL with only the needed fields, the sync
cursor in the account's time zone with an overlap, a stale page token, reading and writing
issues, and Atlassian's rotating refresh tokens raced by two processes."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio
from cryptography.fernet import Fernet

import nyla_connector_jira
from nyla.sdk.connectors import (
    CursorExpiredError,
    TaskChange,
    TaskQuery,
    TokenGrant,
    VendorBadRequestError,
)
from nyla.testing import connection_service
from nyla_connector_jira.issues import LIST_FIELDS

from .fake_jira import FakeJira, sample
from .jira_wire import BASE, SITE

KEY = Fernet.generate_key().decode()


def issues(n: int = 7) -> list[dict[str, Any]]:
    """``n`` issues of project ED: due one day apart, every third one done, mine when odd."""
    out = []
    for i in range(1, n + 1):
        issue = sample("issue")
        issue["id"], issue["key"] = str(10000 + i), f"ED-{i}"
        f = issue["fields"]
        f["summary"] = f"Checkout step {i}"
        f["duedate"] = (date(2026, 1, 5) + timedelta(days=i)).isoformat()
        f["updated"] = f"2026-01-05T{8 + i:02d}:00:00.000+0000"
        if i % 2 == 0:
            f["assignee"] = None
        if i % 3 == 0:
            f["status"] = {**f["status"], "name": "Done", "statusCategory": {"key": "done"}}
        out.append(issue)
    return out


@pytest.fixture
def jira() -> FakeJira:
    return FakeJira(issues(), page_size=3)


class Sleeps:
    async def __call__(self, seconds: float) -> None:
        return None


def _service(db: Any, handler: Any) -> Any:
    return connection_service(
        nyla_connector_jira, db=db, vendor=handler, secret_key=KEY, sleep=Sleeps(), names=["jira"]
    )


@pytest_asyncio.fixture
async def session(db: Any, jira: FakeJira, monkeypatch: Any) -> AsyncIterator[Any]:
    monkeypatch.setenv("NYLA_JIRA_CLIENT_ID", "client-id")
    service = _service(db, jira)
    grant = TokenGrant(access_token="a", expires_at=datetime.now(UTC) + timedelta(hours=1))
    conn = await service.add(
        "jira", user_id="u1", grant=grant, settings={"baseUrl": BASE, "siteUrl": SITE}
    )
    async with service.open(conn.id, user_id="u1") as opened:
        yield opened


def _searches(jira: FakeJira) -> list[httpx.QueryParams]:
    return [r.url.params for r in jira.requests if r.url.path.endswith("/search/jql")]


async def test_search_follows_next_page_token_to_the_end(session, jira):
    seen, cursor, pages = [], None, 0
    while True:
        page = await session.adapter.search(session, "checkout", "/ED", cursor)
        seen += page.items
        pages += 1
        if not (cursor := page.cursor):
            break
    assert pages == 3 and len(seen) == 7 and len({i.id for i in seen}) == 7
    params = _searches(jira)
    assert [p.get("nextPageToken") for p in params] == [None, "1:3", "1:6"]
    assert params[0]["jql"] == 'project = "ED" AND text ~ "checkout" ORDER BY updated DESC'
    assert params[0]["fields"] == ",".join(LIST_FIELDS), "only the fields a listing shows"
    assert not any(r.url.path.endswith("/rest/api/3/search") for r in jira.requests)
    first = seen[0]
    assert first.kind == "task" and first.url == f"{SITE}/browse/{first.extra['vendor']['key']}"
    assert first.extra["status"] == "To Do" and first.extra["assignee"] == "Mia Krystof"


async def test_the_removed_search_endpoint_answers_410(session, jira):
    with pytest.raises(CursorExpiredError) as caught:  # what a 410 means to the HTTP layer
        await session.http.get_json("/rest/api/3/search", params={"jql": "project = ED"})
    assert "migrate to the /rest/api/3/search/jql" in str(caught.value)


async def test_queries_are_bounded_and_structured(session, jira):
    page = await session.adapter.search_tasks(session, TaskQuery())
    assert page.items, "an empty query is bounded, not refused"
    assert _searches(jira)[-1]["jql"].startswith("updated >= -365d ORDER BY duedate ASC")
    week = TaskQuery(mine=True, open_only=True, due_from=date(2026, 1, 6), due_to=date(2026, 1, 12))
    found = [
        i.extra["vendor"]["key"] for i in (await session.adapter.search_tasks(session, week)).items
    ]
    assert found == ["ED-1", "ED-5", "ED-7"], "open, mine, due in the window, due date first"
    raw = await session.adapter.search(session, 'jql:duedate <= "2026-01-07"', "/ED")
    assert {i.extra["vendor"]["key"] for i in raw.items} == {"ED-1", "ED-2"}


async def test_sync_cursor_uses_the_accounts_time_zone_and_an_overlap(session, jira):
    pages = [p async for p in session.adapter.sync(session, "/ED", None)]
    assert [p.full_listing for p in pages] == [True] * 3 and pages[-1].done
    checkpoint = pages[-1].checkpoint
    assert checkpoint["since"] == "2026-01-05T15:00:00+00:00", "the newest `updated` seen"
    assert not checkpoint["full"] and checkpoint["token"] is None
    jira.issues[0]["fields"]["updated"] = "2026-01-05T16:30:00.000+0000"
    again = [p async for p in session.adapter.sync(session, "/ED", checkpoint)]
    # 15:00 UTC is 16:00 in Zurich (the account's zone), less five minutes of overlap
    assert _searches(jira)[-1]["jql"] == (
        'project = "ED" AND updated >= "2026-01-05 15:55" ORDER BY updated ASC, id ASC'
    )
    assert [i.id for p in again for i in p.items] == ["10007", "10001"]
    assert not any(p.full_listing for p in again)
    assert "Main order flow broken" in again[0].items[0].content


async def test_a_stale_page_token_restarts_the_query(session, jira):
    pages = session.adapter.sync(session, "/ED", None)
    first = await anext(pages)
    await pages.aclose()
    jira.generation += 1  # the token in the checkpoint is no longer valid
    rest = [p async for p in session.adapter.sync(session, "/ED", first.checkpoint)]
    assert {i.id for p in rest for i in p.items} == {i["id"] for i in jira.issues}
    assert all(p.full_listing for p in rest), "a resumed full listing stays one"


async def test_read_with_comments_and_attachments(session, jira):
    jira.comments["ED-2"] = [sample("comment")]
    jira.issues[1]["fields"]["attachment"] = [
        {
            "id": "10001",
            "filename": "flow.png",
            "mimeType": "image/png",
            "size": 2048,
            "created": "2026-01-05T10:00:00.000+0000",
            "content": f"{SITE}/rest/api/3/attachment/content/10001",
        }
    ]
    detail = await session.adapter.read_task(session, "ED-2")
    assert detail.item.title == "Checkout step 2" and detail.description == "Main order flow broken"
    assert [(c.author, c.text) for c in detail.comments] == [
        ("Mia Krystof", "Lorem ipsum dolor sit amet.")
    ]
    assert detail.attachments[0].title == "flow.png" and detail.attachments[0].size == 2048


async def test_attachments_download_without_the_media_redirect(session, jira):
    jira.attach(jira.issues[1], "10050", "flow.png", b"\x89PNG\r\n\x00\xff", "image/png")
    detail = await session.adapter.read_task(session, "ED-2")
    [att] = detail.attachments
    assert att.id == "attachment:10050" and att.path == "/ED/ED-2/flow.png"
    got = await session.adapter.download(session, att.id)
    assert got.content == b"\x89PNG\r\n\x00\xff" and got.mime == "image/png"
    assert got.item.title == "flow.png" and got.item.size == len(got.content) == 8
    sent = [r for r in jira.requests if "/attachment/content/" in r.url.path]
    assert [r.url.params.get("redirect") for r in sent] == ["false"], "Jira would answer 303"
    issue = await session.adapter.download(session, "ED-2")
    assert issue.mime == "application/json" and json.loads(issue.content)["key"] == "ED-2"
    with pytest.raises(VendorBadRequestError):
        await session.adapter.download(session, "attachment:../x")


async def test_writes_create_update_transition_comment(session, jira):
    created = await session.adapter.create_task(
        session,
        "/ED",
        TaskChange(title="Ship it", description="Line one\nLine two", due=date(2026, 2, 1)),
    )
    assert created.title == "Ship it" and created.extra["due"] == "2026-02-01"
    kind, _, fields = jira.writes[0]
    assert kind == "create" and fields["issuetype"] == {"name": "Task"}
    assert fields["description"]["content"][1]["content"][0]["text"] == "Line two"
    updated = await session.adapter.update_task(
        session, "ED-1", TaskChange(status="In Progress", assignee="me", comment="On it")
    )
    assert updated.extra["status"] == "In Progress"
    assert [w[0] for w in jira.writes[1:]] == ["edit", "transition", "comment"]
    with pytest.raises(VendorBadRequestError, match="possible: Done, In Progress, To Do"):
        await session.adapter.update_task(session, "ED-1", TaskChange(status="Archived"))
    with pytest.raises(VendorBadRequestError, match="needs a title"):
        await session.adapter.create_task(session, "/ED", TaskChange())


async def test_rotating_refresh_tokens_raced_by_two_processes(db, tmp_path: Path, monkeypatch):
    monkeypatch.setenv("NYLA_JIRA_CLIENT_ID", "client-id")
    service = _service(db, lambda r: httpx.Response(500))
    expired = TokenGrant(
        access_token="access-1", refresh_token="refresh-1",
        expires_at=datetime.now(UTC) - timedelta(minutes=1),
    )  # fmt: skip
    conn = await service.add("jira", user_id="u1", grant=expired, settings={"baseUrl": BASE})
    state, log, go = tmp_path / "state.json", tmp_path / "refreshes.log", tmp_path / "go"
    state.write_text(json.dumps({"n": 1, "refresh": "refresh-1"}))
    log.touch()
    worker = Path(__file__).with_name("refresh_worker.py")
    env = {**os.environ, "NYLA_JIRA_CLIENT_ID": "client-id"}
    args = [
        sys.executable,
        str(worker),
        db.url,
        db.schema,
        KEY,
        conn.id,
        str(state),
        str(log),
        str(go),
    ]
    procs = [subprocess.Popen(args, stdout=subprocess.PIPE, env=env, text=True) for _ in range(2)]
    await asyncio.sleep(1.0)  # both processes up and waiting (correctness does not depend on it)
    go.touch()
    outputs = [p.communicate(timeout=120)[0].strip() for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert log.read_text().splitlines() == ["refresh-1"], "a rotated token was used twice"
    assert outputs == ["access-2", "access-2"]
    assert (await service.get(conn.id, user_id="u1")).status == "active"
    async with db.session() as s:
        grant = await service.store.read_grant(s, conn.id)
    assert grant.refresh_token == "refresh-2", "the rotated refresh token was saved"
