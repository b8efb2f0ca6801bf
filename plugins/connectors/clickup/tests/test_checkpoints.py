"""Stored checkpoints: the shapes today's nyla writes resume (a finished run's ``since``, a
run stopped between pages with its workspace and keyset); a checkpoint of the wrong shape
starts a full listing instead of failing the sync."""

from __future__ import annotations

import json

import pytest

from .test_clickup import clock, fake, paths, session, synced  # noqa: F401 - the fixtures

LIST = "/9001/790/-/901"


def task_queries(fake):  # noqa: F811
    return [r.url.params for r in fake.requests if r.url.path.endswith("/task")]


async def test_a_finished_runs_since_resumes_with_the_changes(session, fake):  # noqa: F811
    _, first = await synced(session, LIST)
    stored = json.loads(json.dumps({"since": first["since"]}))  # today's last page, as kept
    fake.requests.clear()
    items, _ = await synced(session, LIST, stored)
    assert "date_updated_gt" in task_queries(fake)[0]
    assert len(items) < 2, "only the tasks within the overlap, not the whole list"


async def test_a_run_stopped_between_pages_resumes_at_its_keyset(session, fake):  # noqa: F811
    fake.page_size = 3
    pages = session.adapter.sync(session, "/9001", None)
    first = await anext(pages)
    await pages.aclose()
    stored = json.loads(json.dumps(first.checkpoint))
    assert set(stored) >= {"full", "bound", "seen", "team", "keyset"}
    fake.requests.clear()
    rest = [p async for p in session.adapter.sync(session, "/9001", stored)]
    assert all(p.full_listing for p in rest)
    assert int(task_queries(fake)[0]["date_created_gt"]) == stored["keyset"]["after"] - 1
    listed = {i.id for p in [first, *rest] for i in p.items}
    everything, _ = await synced(session, "/9001")
    assert listed == {i.id for i in everything}


@pytest.mark.parametrize(
    "stored",
    [
        {"since": "yesterday"},
        {"full": False, "bound": None, "team": "first", "keyset": {}},
        {"since": "2026-01-05T15:00:00+00:00", "keyset": {"after": "soon"}},
    ],
)
async def test_a_checkpoint_of_the_wrong_shape_starts_a_full_listing(session, fake, stored):  # noqa: F811
    items, _ = await synced(session, LIST, stored)
    assert "date_updated_gt" not in task_queries(fake)[0]
    assert {i.id for i in items} == {"86a9010", "86a9011"}
