"""The storage snapshot is taken once a day without anyone asking: a periodic task of the
kernel's job runner (in process, or on the queue's workers) that takes it when none was
taken that day, once even when servers check at the same moment."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import func, select

from nyla.billing.schedule import CHECK_CRON, SNAPSHOT_TASK, daily_snapshot
from nyla.billing.tables import StorageSnapshot
from nyla.jobs.runtime import JobRunner, Periodic
from nyla.models.agent import RunContext
from nyla.models.files import FileItem, Scope
from nyla.testing.kernels import plugin_kernel

pytestmark = pytest.mark.db

DAY = datetime(2026, 3, 14, 9, 30, tzinfo=UTC)


def vectors(texts: list[str]) -> list[list[float]]:
    return [[float(len(t)), 1.0, 0.0] for t in texts]


async def _indexed_kernel(scripted, make_kernel, db):
    provider = scripted(lambda r, i: "ok", embed_fn=vectors)
    kernel = make_kernel(
        provider, db=db, settings={"knowledge": {"embedding_model": "scripted:model"}}
    )
    item = FileItem(
        id="f1",
        name="f1.txt",
        mime_type="text/plain",
        scope=Scope.PERSONAL,
        user_id="alice",
        mandate_id="m1",
    )
    context = RunContext(user_id="alice", mandate_id="m1")
    result = await kernel.knowledge.indexing.index_file(item, b"VAT is due. " * 20, context=context)
    assert result.status.value == "indexed", result
    return kernel


async def _snapshots(db) -> list[datetime]:
    async with db.session() as s:
        return list(
            (await s.scalars(select(StorageSnapshot.at).order_by(StorageSnapshot.at))).all()
        )


async def test_the_snapshot_is_taken_once_a_day(scripted, make_kernel, db):
    kernel = await _indexed_kernel(scripted, make_kernel, db)
    (line,) = await daily_snapshot(kernel.billing, DAY)
    assert (line.user_id, line.mandate_id) == ("alice", "m1") and line.bytes == 240
    assert await daily_snapshot(kernel.billing, DAY + timedelta(hours=14)) == []
    assert await _snapshots(db) == [DAY]
    assert len(await daily_snapshot(kernel.billing, DAY + timedelta(days=1))) == 1
    assert await _snapshots(db) == [DAY, DAY + timedelta(days=1)]


async def test_servers_checking_at_once_take_one_snapshot(scripted, make_kernel, db):
    kernel = await _indexed_kernel(scripted, make_kernel, db)
    taken = await asyncio.gather(*(daily_snapshot(kernel.billing, DAY) for _ in range(4)))
    assert sorted(len(lines) for lines in taken) == [0, 0, 0, 1]
    async with db.session() as s:
        assert await s.scalar(select(func.count()).select_from(StorageSnapshot)) == 1


async def test_the_kernels_job_runner_schedules_it(scripted, make_kernel, db):
    kernel = await _indexed_kernel(scripted, make_kernel, db)
    periodic = kernel.jobs.periodic[SNAPSHOT_TASK]
    assert periodic.every_s == 3600
    assert await periodic.fn() == 1  # today's snapshot
    assert await periodic.fn() == 0  # once
    assert len(await _snapshots(db)) == 1


async def test_the_in_process_runner_runs_its_periodic_tasks(db):
    ticks: list[float] = []
    ticked = asyncio.Event()

    async def tick() -> None:
        ticks.append(asyncio.get_running_loop().time())
        if len(ticks) == 1:
            raise RuntimeError("the database is away")  # the schedule goes on
        ticked.set()

    runner = JobRunner(db)
    runner.periodic["probe"] = Periodic(every_s=0.01, cron="* * * * *", fn=tick, first_after_s=0)
    await runner.start()
    try:
        await asyncio.wait_for(ticked.wait(), 10)
    finally:
        await runner.aclose()
    assert len(ticks) >= 2


def test_the_queues_workers_run_it_on_its_cron(embedded_pg):
    from nyla.db import Database

    kernel = plugin_kernel(
        db=Database(embedded_pg, schema="unused_q"), settings={"jobs": "procrastinate"}
    )
    found = kernel.jobs.app.periodic_registry.periodic_tasks
    assert found[(SNAPSHOT_TASK, SNAPSHOT_TASK)].cron == CHECK_CRON
