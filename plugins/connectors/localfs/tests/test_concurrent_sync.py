"""Two syncs of one data source at once: one runs, the other joins or waits, and nothing
that still exists is deleted — also when two ever overlap (issue 27, fault 3)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from localfs_helpers import local_source, make_kernel, make_tree
from sqlalchemy import func, select

from nyla.testing.tables import FileContentIndex, JobHandle, LockWait

FILES = 600
#: how long one sync waits for the other at a step of the interleaving before going on
#: (a sync that waits for, or joined, the other never gets there)
STEP_S = 3.0


async def _indexed(db: Any) -> int:
    async with db.session() as s:
        query = select(func.count()).select_from(FileContentIndex)
        return int((await s.execute(query.where(FileContentIndex.status == "indexed"))).scalar())


async def _until(event: asyncio.Event) -> None:
    # on a timeout the other sync is waiting for this one (or joined it): go on
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(event.wait(), STEP_S)


@dataclass
class Interleaving:
    """The order that let two syncs delete what exists: both load the sync state before
    either commits; the first commits its first page; the second runs to its end; then the
    first goes on and sweeps what the second re-marked."""

    a_started: asyncio.Event = field(default_factory=asyncio.Event)
    b_loaded: asyncio.Event = field(default_factory=asyncio.Event)
    a_page: asyncio.Event = field(default_factory=asyncio.Event)
    b_done: asyncio.Event = field(default_factory=asyncio.Event)

    def first(self) -> type[JobHandle]:
        steps = self

        class First(JobHandle):
            started = paged = False

            async def is_cancelled(self) -> bool:
                if not self.started:
                    self.started = True
                    steps.a_started.set()
                    await _until(steps.b_loaded)
                return await super().is_cancelled()

            async def progress(self, done: int, total: int | None = None, msg: str = "") -> None:
                await super().progress(done, total, msg)
                if not self.paged:
                    self.paged = True
                    steps.a_page.set()
                    await _until(steps.b_done)

        return First

    def second(self) -> type[JobHandle]:
        steps = self

        class Second(JobHandle):
            started = False

            async def is_cancelled(self) -> bool:
                if not self.started:
                    self.started = True
                    steps.b_loaded.set()
                    await _until(steps.a_page)
                return await super().is_cancelled()

        return Second


async def _both(a_kernel: Any, b_kernel: Any, ds: str, a_runner: Any = None,
                b_runner: Any = None) -> tuple[Any, Any]:  # fmt: skip
    """Both syncs in the interleaving; their results."""
    steps = Interleaving()

    def job(kernel: Any, runner: Any, handle_type: type[JobHandle]) -> Any:
        async def run(handle: JobHandle) -> Any:
            return await (runner or kernel.sync.runner).sync(
                ds, handle_type(handle.store, handle.id)
            )

        return kernel.jobs.run("sync", run, user_id="u1", data_source_id=ds)

    async def second() -> Any:
        # the first one is under way (an event, not a pause: a busy machine may take longer)
        await asyncio.wait_for(steps.a_started.wait(), 60)
        try:
            return await job(b_kernel, b_runner, steps.second())
        finally:
            steps.b_done.set()

    (_, a), (_, b) = await asyncio.gather(job(a_kernel, a_runner, steps.first()), second())
    return a, b


async def _synced_tree(db: Any, tmp_path: Path) -> tuple[Any, str]:
    kernel = make_kernel(db)
    make_tree(tmp_path, FILES)
    ds = await local_source(kernel, tmp_path)
    await kernel.sync.run(ds, user_id="u1")
    assert await _indexed(db) == FILES
    return kernel, ds


async def test_a_second_sync_in_the_same_process_joins_the_running_one(db, tmp_path: Path) -> None:
    kernel, ds = await _synced_tree(db, tmp_path)
    a, b = await _both(kernel, kernel, ds)
    assert await _indexed(db) == FILES, f"existing files deleted: {a.sweep!r} / {b.sweep!r}"
    assert a.items_deleted == 0 and a.sweep == "complete: nothing deleted", a.sweep
    assert b.joined and b.pages == a.pages, f"the second sync did not join the first: {b}"


async def test_a_second_sync_elsewhere_waits_for_the_running_one(db, tmp_path: Path) -> None:
    first, ds = await _synced_tree(db, tmp_path)
    a, b = await _both(first, make_kernel(db), ds)
    assert await _indexed(db) == FILES, f"existing files deleted: {a.sweep!r} / {b.sweep!r}"
    assert a.items_deleted == b.items_deleted == 0, (a.sweep, b.sweep)
    assert b.waited_s >= 1.0 and not b.joined, f"the second sync did not wait: {b}"


@contextlib.asynccontextmanager
async def _no_lock(db: Any, ds_id: str, keep_waiting: Any = None) -> AsyncIterator[LockWait]:
    """No per-source lock: what two syncs meet if it is ever lost (a dropped connection,
    an older nyla next to this one)."""
    yield LockWait()


async def test_two_syncs_that_overlap_anyway_delete_nothing_that_exists(db, tmp_path: Path) -> None:
    kernel, ds = await _synced_tree(db, tmp_path)
    other = make_kernel(db)
    runners = [k.sync.runner for k in (kernel, other)]
    for runner in runners:
        runner.lock = _no_lock
    a, b = await _both(kernel, other, ds, *runners)
    assert await _indexed(db) == FILES, f"existing files deleted: {a.sweep!r} / {b.sweep!r}"
    assert not a.joined and not b.joined and b.items_seen == FILES, (a, b)
    files = sorted(tmp_path.rglob("*.txt"))
    for round_ in range(3):  # free-running pairs that both write, purge and sweep
        for path in files[round_ * 100 : round_ * 100 + 100]:
            path.write_text(f"Rewritten in round {round_}: {path.name} about tariffs.\n")
        for path in files[-(round_ + 1) * 5 :][:5]:
            path.unlink()
        results = await asyncio.gather(*(r.sync(ds) for r in runners))
        left = FILES - (round_ + 1) * 5
        assert await _indexed(db) == left, [r.sweep for r in results]
        assert sum(r.items_deleted for r in results) == 5, [r.sweep for r in results]
