"""Stored checkpoints: the shapes today's nyla writes resume (a finished run's ``since``, a
run stopped between pages); a checkpoint of the wrong shape starts a full listing."""

from __future__ import annotations

import json

import pytest

from .test_jira import _searches, jira, session  # noqa: F401 - the fixtures

UNBOUNDED = 'project = "ED" ORDER BY updated ASC, id ASC'


async def test_a_finished_runs_since_resumes_with_the_changes(session, jira):  # noqa: F811
    stored = {"since": "2026-01-05T15:00:00+00:00"}
    pages = [p async for p in session.adapter.sync(session, "/ED", stored)]
    assert not any(p.full_listing for p in pages)
    assert 'updated >= "2026-01-05 15:55"' in _searches(jira)[-1]["jql"]


async def test_a_run_stopped_between_pages_resumes_at_its_page(session, jira):  # noqa: F811
    pages = session.adapter.sync(session, "/ED", None)
    first = await anext(pages)
    await pages.aclose()
    stored = json.loads(json.dumps(first.checkpoint))
    assert set(stored) >= {"full", "bound", "seen", "token"}
    before = len(_searches(jira))
    rest = [p async for p in session.adapter.sync(session, "/ED", stored)]
    assert all(p.full_listing for p in rest)
    assert _searches(jira)[before].get("nextPageToken") == stored["token"]
    listed = {i.id for p in [first, *rest] for i in p.items}
    assert listed == {i["id"] for i in jira.issues}


async def test_a_stopped_incremental_run_stays_incremental(session, jira):  # noqa: F811
    stored = {"full": False, "bound": "2026-01-05T15:00:00+00:00", "seen": None, "token": None}
    pages = [p async for p in session.adapter.sync(session, "/ED", stored)]
    assert not any(p.full_listing for p in pages)
    assert 'updated >= "2026-01-05 15:55"' in _searches(jira)[-1]["jql"]


@pytest.mark.parametrize(
    "stored",
    [{"since": "not a time"}, {"since": 5, "token": ["x"]}, {"full": "sometimes"}, {"x": 1}],
)
async def test_a_checkpoint_of_the_wrong_shape_starts_a_full_listing(session, jira, stored):  # noqa: F811
    pages = [p async for p in session.adapter.sync(session, "/ED", stored)]
    assert all(p.full_listing for p in pages)
    assert _searches(jira)[0]["jql"] == UNBOUNDED
    assert {i.id for p in pages for i in p.items} == {i["id"] for i in jira.issues}
