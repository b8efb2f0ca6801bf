"""Job records: progress, cancellation, interrupted-job recovery, zombie killing."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import update

from nyla.jobs.store import JobStore
from nyla.jobs.tables import Job


async def test_progress_cancel_and_finish(db):
    jobs = JobStore(db)
    job = await jobs.start("index", user_id="u1", mandate_id="m1", total=4)
    await jobs.progress(job, 2, message="b.txt")
    [running] = await jobs.running(user_id="u1")
    assert (running.progress, running.total, running.message) == (2, 4, "b.txt")
    assert await jobs.cancel(job) and await jobs.is_cancelled(job)
    assert not await jobs.cancel(job)  # only running jobs can be cancelled
    await jobs.finish(job)  # a cancelled job stays cancelled
    assert await jobs.is_cancelled(job) and await jobs.running() == []


async def test_recovery_and_zombies(db):
    jobs = JobStore(db)
    stale = await jobs.start("walk", user_id="u1", connection_id="c1")
    fresh = await jobs.start("walk", user_id="u1", connection_id="c1")
    async with db.session() as s:
        await s.execute(
            update(Job)
            .where(Job.id == stale)
            .values(updated_at=datetime.now(UTC) - timedelta(hours=1))
        )
    assert await jobs.kill_zombies(max_age_seconds=1800) == 1
    assert [j.id for j in await jobs.running()] == [fresh]
    assert await jobs.recover_interrupted() == 1
    assert await jobs.running() == []
    done = await jobs.start("walk", user_id="u2")
    await jobs.finish(done, error="boom")
    async with db.session() as s:
        row = await s.get(Job, done)
    assert row.status == "error" and row.error == "boom" and row.finished_at is not None
