"""A user's connections, read by every agent run, are kept in the process until the table
changes: a change another process commits is heard through its notification (and the other
kernel's next run sees it), this process's own at once; without notifications every run
reads them again."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from nyla import table_changes
from nyla.connections.store import ConnectionStore
from nyla.db import Database

pytestmark = pytest.mark.db


async def _no_purge(*_args: object) -> None:
    return None


async def _until(done: Callable[[], bool], timeout: float = 15.0) -> None:
    async with asyncio.timeout(timeout):
        while not done():
            await asyncio.sleep(0.01)


def _counting(store: ConnectionStore) -> list[int]:
    reads = [0]
    real = store._read_list

    async def read(user_id: str):  # type: ignore[no-untyped-def]
        reads[0] += 1
        return await real(user_id)

    store._read_list = read  # type: ignore[method-assign]
    return reads


@pytest.fixture
async def other_db(db):
    """The same schema through a database object (and connections) of its own, as another
    process has: its writes reach the first one only as notifications."""
    database = Database(db.url, schema=db.schema)
    try:
        yield database
    finally:
        await database.dispose()


async def test_another_kernels_change_is_in_the_next_runs_list(db, other_db, make_kernel):
    mine, theirs = make_kernel(db=db), make_kernel(db=other_db)
    reads = _counting(mine.connections.store)
    assert await mine.connections.list("ada") == []
    assert await mine.connections.list("ada") == []  # the second read opens the listener
    watch = mine.connections.store._lists.watch
    assert watch.stamp() is not None
    assert await mine.connections.list("ada") == [] and reads[0] == 2  # kept: no read

    before = watch.generation
    added = await theirs.connections.store.add(service="msft", user_id="ada", label="Mail")
    await _until(lambda: watch.generation != before)
    assert [c.id for c in await mine.connections.list("ada")] == [added.id]
    assert reads[0] == 3

    before = watch.generation
    await theirs.connections.store.remove(added.id, actor="ada")
    await _until(lambda: watch.generation != before)
    assert await mine.connections.list("ada") == []


async def test_own_change_counts_before_its_notification(db, monkeypatch) -> None:
    store = ConnectionStore(db, cipher=None, purge_index=_no_purge)  # type: ignore[arg-type]
    await store.list("ada")
    await store.list("ada")
    assert store._lists is not None
    watch = store._lists.watch
    assert watch.stamp() is not None
    monkeypatch.setattr(watch, "notified", lambda note=None: None)  # notifications late
    added = await store.add(service="gdrive", user_id="ada")
    assert [c.id for c in await store.list("ada")] == [added.id]
    await store.set_status(added.id, "needs_reconsent", "token revoked")
    assert [c.status for c in await store.list("ada")] == ["needs_reconsent"]


async def test_without_notifications_every_list_reads(db, monkeypatch) -> None:
    monkeypatch.setenv(table_changes.NOTIFY_VAR, "off")
    store = ConnectionStore(db, cipher=None, purge_index=_no_purge)  # type: ignore[arg-type]
    reads = _counting(store)
    for _ in range(3):
        assert await store.list("ada") == []
    assert reads[0] == 3
    assert store._lists is not None and store._lists.watch.stamp() is None
