"""NYLA_JOBS=procrastinate with a `nyla worker` process: switching indexing on runs a first
slice and then the whole folder in the same queued job, and the periodic re-sync task defers
the syncs that are due to the worker."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from localfs_helpers import KEY, local_source, make_tree

from nyla.testing import installed_kernel, open_database
from nyla.testing.tables import Job


async def _ended(db: Any, job_id: str, seconds: float = 240) -> Job:
    for _ in range(int(seconds * 5)):
        async with db.session() as s:
            job = await s.get(Job, job_id, populate_existing=True)
        if job is not None and job.status in ("done", "error", "cancelled"):
            return job
        await asyncio.sleep(0.2)
    raise AssertionError(f"job {job_id} did not end")


async def test_first_slice_then_whole_folder_and_the_periodic_resync(
    embedded_pg, tmp_path, monkeypatch
) -> None:
    schema = f"pq_{uuid.uuid4().hex[:8]}"
    env = {
        "NYLA_DATABASE_URL": embedded_pg,
        "NYLA_DATABASE_SCHEMA": schema,
        "NYLA_EMBEDDING_MODEL": "local:hash-384",
        "NYLA_JOBS": "procrastinate",
        "NYLA_SECRET_KEY": KEY,
        "NYLA_HOME": str(tmp_path / "home"),
    }
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    db = open_database(embedded_pg, schema)
    kernel = installed_kernel(db, settings={"jobs": "procrastinate"})
    make_tree(tmp_path / "a", 120)
    ds_id = await local_source(kernel, tmp_path / "a")
    job_id = await kernel.sync.start(ds_id, user_id="u1", first_slice=50)
    cmd = [sys.executable, "-c", "from nyla.cli import main; main()", "worker"]
    worker = subprocess.Popen(cmd, env={**os.environ, **env})
    try:
        job = await _ended(db, job_id)
        assert job.status == "done", job.error
        assert job.details["firstSlice"]["itemsIndexed"] == 50
        assert job.details["result"]["itemsIndexed"] == 70
        assert job.details["result"]["itemsUnchanged"] == 50
        periodic = kernel.jobs.app.periodic_registry.periodic_tasks
        assert ("nyla.resync", "nyla.resync") in periodic
        resync = kernel.jobs.app.tasks["nyla.resync"]
        assert await resync(timestamp=0) == 0, "nothing is due right after a sync"
        (tmp_path / "a" / "added.txt").write_text("A note added later.\n")
        later = datetime.now(UTC) + timedelta(hours=2)
        started = await kernel.sync.scheduler.tick(now=later)
        assert list(started) == [ds_id]
        again = await _ended(db, started[ds_id])
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.wait(timeout=60)
        await kernel.aclose()
    assert again.status == "done", again.error
    assert again.details["result"]["itemsIndexed"] == 1
    assert again.details["result"]["itemsUnchanged"] == 120
