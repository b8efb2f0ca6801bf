"""Files deleted while a sync runs: each fails (or is gone) alone, the rest is indexed and
the result names them (issue 27, fault 4)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from localfs_helpers import local_source, make_kernel, make_tree
from sqlalchemy import func, select

from nyla.testing.tables import FileContentIndex, JobHandle


async def test_files_deleted_during_the_first_sync_fail_alone(db, tmp_path: Path) -> None:
    kernel = make_kernel(db)
    make_tree(tmp_path, 360, per_folder=180)
    ds = await local_source(kernel, tmp_path)
    # listed on page 2 (the walk has read folder-000's names, not yet their metadata)
    unstatted = [tmp_path / "folder-000" / f"note-{i:05d}.txt" for i in (120, 140, 160)]
    # listed, then deleted just before their download
    undownloaded = {f"folder-001/note-{i:05d}.txt" for i in (200, 250, 300, 350)}

    class DeletingWhileSyncing(JobHandle):
        async def progress(self, done: int, total: int | None = None, message: str = "") -> None:
            await super().progress(done, total, message)
            for path in unstatted:
                path.unlink(missing_ok=True)

        @contextlib.asynccontextmanager
        async def item(
            self, name: str, phase: str, timeout_s: float | None = None
        ) -> AsyncIterator[None]:
            if phase == "download" and name.lstrip("/") in undownloaded:
                (tmp_path / name.lstrip("/")).unlink()
            async with super().item(name, phase, timeout_s):
                yield

    async def job(handle: JobHandle) -> Any:
        return await kernel.sync.runner.sync(ds, DeletingWhileSyncing(handle.store, handle.id))

    _, result = await kernel.jobs.run("sync", job, user_id="u1", data_source_id=ds)
    async with db.session() as s:
        indexed = (
            await s.execute(
                select(func.count())
                .select_from(FileContentIndex)
                .where(FileContentIndex.status == "indexed")
            )
        ).scalar()
    assert indexed == 360 - 3 - 4, f"{indexed} of 353 remaining files indexed: {result}"
    assert result.items_failed == 4, result
    for name in undownloaded:
        assert any(name in e for e in result.errors), (name, result.errors)
    assert result.sweep.startswith("complete"), result.sweep
