"""A sync talks to the database per page, not per file: the statements and transactions of a
50-file localfs sync stay under a bound the per-item job-detail writes and per-file row reads
of earlier versions exceeded (519 statements in 217 transactions); the job's current item,
written at most once a second, still names a phase that hangs."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from localfs_helpers import local_source, make_kernel, make_tree
from sqlalchemy import event

from nyla.testing.tables import JobHandle


class Counter:
    """Statements and commits sent by a database's engine."""

    def __init__(self, db: Any) -> None:
        self.statements = 0
        self.commits = 0
        self.engine = db.engine.sync_engine
        event.listen(self.engine, "before_cursor_execute", self._statement)
        event.listen(self.engine, "commit", self._commit)

    def _statement(self, *args: Any) -> None:
        self.statements += 1

    def _commit(self, *args: Any) -> None:
        self.commits += 1

    def close(self) -> None:
        event.remove(self.engine, "before_cursor_execute", self._statement)
        event.remove(self.engine, "commit", self._commit)


async def test_a_sync_of_50_files_sends_few_statements(db, tmp_path: Path) -> None:
    make_tree(tmp_path / "root", 50, per_folder=25)
    kernel = make_kernel(db)
    ds_id = await local_source(kernel, tmp_path / "root")
    counter = Counter(db)
    try:
        _, result = await kernel.sync.run(ds_id, user_id="u1")
    finally:
        counter.close()
    assert result.items_indexed == 50 and result.errors == []
    # 519 statements in 217 transactions before: a job-detail write per item phase, three
    # reads of the data source, connection and siblings per file; now about 70 in 20
    assert counter.statements <= 150, counter.statements
    assert counter.commits <= 40, counter.commits


async def test_a_resync_of_50_touched_files_sends_few_statements(db, tmp_path: Path) -> None:
    root = tmp_path / "root"
    make_tree(root, 50, per_folder=25)
    kernel = make_kernel(db)
    ds_id = await local_source(kernel, root)
    await kernel.sync.run(ds_id, user_id="u1")
    for path in root.rglob("*.txt"):  # new times, same content: downloaded, not embedded
        os.utime(path, (path.stat().st_atime, path.stat().st_mtime + 60))
    counter = Counter(db)
    try:
        _, result = await kernel.sync.run(ds_id, user_id="u1")
    finally:
        counter.close()
    assert result.items_unchanged == 50 and result.items_indexed == 0, result
    # an UPDATE per item renamed its index row before (85 statements); now one per page (35)
    assert counter.statements <= 60, counter.statements


async def test_a_phase_that_hangs_is_named_within_a_second(db) -> None:
    store = make_kernel(db).jobs.store
    job_id = await store.start("sync", user_id="u1")
    handle = JobHandle(store, job_id)
    async with handle.item("a.txt", "download"):
        pass
    async with handle.item("b.txt", "extract"):  # within a second of a.txt: written later
        for _ in range(50):  # about a second; a loaded machine may take longer
            current = (await store.get(job_id)).details["current"]
            if current["item"] == "b.txt":
                break
            await asyncio.sleep(0.1)
    assert (current["item"], current["phase"]) == ("b.txt", "extract")
