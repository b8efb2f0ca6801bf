"""A connector revoked for a source's owner stops its syncs (issue 35, service access): the
next scheduled sync is a job that ends ``error`` naming the permission, before the folder is
read; granted again, the schedule syncs it as before. The decision is the kernel's one
(``kernel.service_access``); the job body asks it on either backend."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from localfs_helpers import local_source, make_kernel, make_tree

from nyla.testing.tables import FileContentIndex, Job

pytestmark = pytest.mark.db


async def _ended(db, job_id: str) -> Job:
    for _ in range(600):
        async with db.session() as s:
            job = await s.get(Job, job_id, populate_existing=True)
        if job is not None and job.status in ("done", "error", "cancelled"):
            return job
        await asyncio.sleep(0.05)
    raise AssertionError(f"job {job_id} did not end")


async def _indexed(db) -> int:
    from sqlalchemy import func, select

    async with db.session() as s:
        query = select(func.count()).select_from(FileContentIndex)
        return int((await s.execute(query.where(FileContentIndex.status == "indexed"))).scalar())


async def test_a_revoked_connector_gets_no_more_scheduled_syncs(db, tmp_path: Path) -> None:
    kernel = make_kernel(db)
    make_tree(tmp_path / "a", 3)
    ds = await local_source(kernel, tmp_path / "a")
    scheduler = kernel.sync.scheduler
    scheduler.interval_s = 60.0
    first = await scheduler.tick()  # a source that never ran is due at once
    assert (await _ended(db, first[ds])).status == "done"
    assert await _indexed(db) == 3

    await kernel.service_access.set("user", "u1", "service.connector.localfs", False)
    make_tree(tmp_path / "a", 5)  # two new files the refused sync must not read
    refused = await scheduler.tick(now=datetime.now(UTC) + timedelta(minutes=2))
    job = await _ended(db, refused[ds])
    assert job.status == "error" and job.user_id == "u1"
    assert "ServiceAccessDenied" in job.error and "service.connector.localfs" in job.error
    assert await _indexed(db) == 3

    # granted again: the next scheduled sync reads the folder
    await kernel.service_access.set("user", "u1", "service.connector.localfs", True)
    again = await scheduler.tick(now=datetime.now(UTC) + timedelta(minutes=4))
    assert (await _ended(db, again[ds])).status == "done"
    assert await _indexed(db) == 5


async def test_a_revoked_knowledge_store_refuses_the_sync_run_by_hand(db, tmp_path: Path) -> None:
    kernel = make_kernel(db)
    make_tree(tmp_path / "b", 2)
    ds = await local_source(kernel, tmp_path / "b")
    await kernel.service_access.set("user", "u1", "service.knowledge", False)
    with pytest.raises(Exception, match=r"service\.knowledge") as refused:
        await kernel.sync.run(ds, user_id="u1")
    assert type(refused.value).__name__ == "ServiceAccessDenied"
    assert await _indexed(db) == 0
