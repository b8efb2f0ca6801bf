"""NYLA_JOBS=procrastinate with two `nyla worker` processes on the embedded PostgreSQL: two
data sources go to the two workers, one data source never twice at once."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import uuid
from datetime import datetime
from typing import Any

from localfs_helpers import KEY, local_source, make_tree
from sqlalchemy import text

from nyla.testing import installed_kernel, open_database
from nyla.testing.tables import Job


async def _wait(db: Any, job_ids: list[str], seconds: float = 240) -> list[Job]:
    for _ in range(int(seconds * 5)):
        async with db.session() as s:
            jobs = [await s.get(Job, j, populate_existing=True) for j in job_ids]
        if all(j.status in ("done", "error", "cancelled") for j in jobs):
            return jobs
        await asyncio.sleep(0.2)
    raise AssertionError(f"jobs did not finish: {[(j.id, j.status, j.error) for j in jobs]}")


async def _wait_workers(db: Any, count: int, seconds: float = 120) -> None:
    """Until ``count`` procrastinate workers have registered in the test's schema."""
    for _ in range(int(seconds * 5)):
        async with db.session() as s:
            found = (await s.execute(text("SELECT count(*) FROM procrastinate_workers"))).scalar()
        if found >= count:
            return
        await asyncio.sleep(0.2)
    raise AssertionError(f"{count} workers did not start within {seconds:g} s")


def _picked(job: Job) -> datetime:
    return datetime.fromisoformat(job.details["pickedUpAt"])


async def test_two_workers_two_sources_never_one_twice(embedded_pg, tmp_path, monkeypatch) -> None:
    schema = f"pq_{uuid.uuid4().hex[:8]}"
    env = {
        "NYLA_DATABASE_URL": embedded_pg,
        "NYLA_DATABASE_SCHEMA": schema,
        "NYLA_EMBEDDING_MODEL": "local:hash-384",
        "NYLA_JOBS": "procrastinate",
        "NYLA_SECRET_KEY": KEY,
        "NYLA_HOME": str(tmp_path / "home"),
        # the workers' periodic resync would sync A and B on its own (a source that never
        # ran is due at once), so the syncs this test queues would find nothing to index
        "NYLA_RESYNC_INTERVAL": "0",
    }
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    db = open_database(embedded_pg, schema)
    kernel = installed_kernel(db, settings={"jobs": "procrastinate"})
    make_tree(tmp_path / "a", 200)
    make_tree(tmp_path / "b", 200)
    ds_a = await local_source(kernel, tmp_path / "a")
    ds_b = await local_source(kernel, tmp_path / "b")
    make_tree(tmp_path / "c", 1)
    ds_c = await local_source(kernel, tmp_path / "c")
    job_c = await kernel.sync.start(ds_c, user_id="u1")
    assert await kernel.sync.start(ds_c, user_id="u1") == job_c, "queueing_lock: one waits"
    cmd = [
        sys.executable,
        "-c",
        "from nyla.cli import main; main()",
        "worker",
        "--concurrency",
        "1",
    ]
    # both workers listen, idle, before A and B are queued: a worker that starts late on a
    # busy machine would otherwise find the first one has taken both sources in turn
    workers = [subprocess.Popen(cmd, env={**os.environ, **env}) for _ in range(2)]
    try:
        await _wait_workers(db, 2)
        assert [j.status for j in await _wait(db, [job_c])] == ["done"]
        job_a = await kernel.sync.start(ds_a, user_id="u1")
        job_b = await kernel.sync.start(ds_b, user_id="u1")
        for _ in range(600):  # once A runs, a second sync of A may queue but must wait for it
            if "pickedUpAt" in ((await kernel.jobs.store.get(job_a)).details or {}):
                break
            await asyncio.sleep(0.1)
        job_a2 = await kernel.sync.start(ds_a, user_id="u1")
        assert job_a2 != job_a, [
            (j.id, j.status, j.error, j.details) for j in await kernel.jobs.store.recent(limit=9)
        ]
        a, b, a2 = await _wait(db, [job_a, job_b, job_a2])
    finally:
        for proc in workers:
            proc.send_signal(signal.SIGTERM)
        for proc in workers:
            proc.wait(timeout=60)
        await kernel.aclose()
    assert [j.status for j in (a, b, a2)] == ["done"] * 3, [(j.status, j.error) for j in (a, b, a2)]
    assert a.worker != b.worker, "the two data sources went to the same worker"
    # whether the two syncs also overlap in time is up to the machine's scheduling, not
    # the queue: what the queue promises is that each went to its own idle worker
    assert _picked(a2) >= a.finished_at, "one data source ran twice at once"
    assert a.details["result"]["itemsIndexed"] == 200 and b.details["result"]["itemsIndexed"] == 200
    assert a2.details["result"]["itemsUnchanged"] == 200
