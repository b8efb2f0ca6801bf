"""The agent's kept context block hears of changed knowledge without a database round trip a
round: another process's commit through the tables' NOTIFY, this process's own at once; where
it cannot listen it reads the WAL position every round, as before."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from nyla import table_changes
from nyla.db import Database
from nyla.knowledge import changes as changes_module
from nyla.knowledge import context as context_module

from .conftest import NeutralizerPlugin, ctx, item

pytestmark = pytest.mark.db

PAYROLL = b"Payroll runs on the 25th; salary slips by mail."
DECEMBER = b"Payroll of December runs on the 20th, salary slips earlier."


async def _until(done: Callable[[], bool], timeout: float = 15.0) -> None:
    """Wait for ``done()`` (a notification arriving), failing after ``timeout``."""
    async with asyncio.timeout(timeout):
        while not done():
            await asyncio.sleep(0.01)


def _wal_reads(
    monkeypatch: pytest.MonkeyPatch, *, fail: bool = False, seen: list[Any] | None = None
) -> list[int]:
    """Count the WAL position reads (or make any read fail the test); ``seen`` gets each
    position read."""
    reads = [0]
    real = context_module.wal_position

    async def counting(db: Any) -> str | None:
        if fail:
            raise AssertionError("the WAL position was read while listening")
        reads[0] += 1
        position = await real(db)
        if seen is not None:
            seen.append(position)
        return position

    monkeypatch.setattr(context_module, "wal_position", counting)
    return reads


@pytest.fixture
async def other(db, make_kernel, scripted, embedder):
    """A second kernel on the same schema with a database object (and connections) of its
    own: its writes reach the first kernel's process only as notifications."""
    database = Database(db.url, schema=db.schema)
    provider = scripted(lambda request, index: "ok", embed_fn=embedder)
    kernel = make_kernel(provider, NeutralizerPlugin(), db=database, builtins=False)
    try:
        yield kernel
    finally:
        await database.dispose()


async def test_another_connections_write_is_heard_without_a_round_trip(kernel, other, monkeypatch):
    me = ctx("u1", "m1")
    await kernel.knowledge.indexing.index_file(item("a", "payroll.txt"), PAYROLL, context=me)
    _wal_reads(monkeypatch, fail=True)
    build = kernel.knowledge.agent_context_builder([])
    first = await build("payroll", me)
    assert "payroll.txt" in first
    changes = kernel.knowledge.changes
    assert changes.stamp() is not None  # listening from the first round on
    assert await build("payroll", me) == first

    before = changes.generation
    await other.knowledge.indexing.index_file(item("b", "payroll-12.txt"), DECEMBER, context=me)
    await _until(lambda: changes.generation != before)
    assert "payroll-12.txt" in await build("payroll", me)


async def test_own_write_counts_before_its_notification_arrives(kernel, monkeypatch):
    me = ctx("u1", "m1")
    await kernel.knowledge.indexing.index_file(item("a", "payroll.txt"), PAYROLL, context=me)
    build = kernel.knowledge.agent_context_builder([])
    first = await build("payroll", me)
    changes = kernel.knowledge.changes
    assert changes.stamp() is not None
    monkeypatch.setattr(changes, "notified", lambda note=None: None)  # notifications late

    before = changes.generation
    await kernel.knowledge.indexing.index_file(item("b", "payroll-12.txt"), DECEMBER, context=me)
    assert changes.generation != before
    block = await build("payroll", me)
    assert block != first and "payroll-12.txt" in block


async def test_switched_off_it_reads_the_wal_position_every_round(kernel, other, monkeypatch):
    me = ctx("u1", "m1")
    kernel.knowledge.settings.context_notify = False
    await kernel.knowledge.indexing.index_file(item("a", "payroll.txt"), PAYROLL, context=me)
    positions: list[Any] = []
    reads = _wal_reads(monkeypatch, seen=positions)
    build = kernel.knowledge.agent_context_builder([])
    first = await build("payroll", me)
    second = await build("payroll", me)
    assert reads[0] == 2
    # the WAL position is the whole server's: anything written between the two rounds
    # (autovacuum, a checkpoint) moves it, and the block is then built again
    if positions[0] == positions[1]:
        assert second == first
    await other.knowledge.indexing.index_file(item("b", "payroll-12.txt"), DECEMBER, context=me)
    assert "payroll-12.txt" in await build("payroll", me)


async def test_a_lost_listener_falls_back_then_listens_again(kernel, other, monkeypatch):
    me = ctx("u1", "m1")
    await kernel.knowledge.indexing.index_file(item("a", "payroll.txt"), PAYROLL, context=me)
    build = kernel.knowledge.agent_context_builder([])
    await build("payroll", me)
    changes = kernel.knowledge.changes
    assert changes.source._conn is not None
    pid = changes.source._conn.info.backend_pid
    async with other.db.session() as s:
        from sqlalchemy import text

        await s.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
    await _until(lambda: changes.stamp() is None)

    reads = _wal_reads(monkeypatch)
    await other.knowledge.indexing.index_file(item("b", "payroll-12.txt"), DECEMBER, context=me)
    assert "payroll-12.txt" in await build("payroll", me)  # lost: the WAL position says so
    assert reads[0] == 1

    monkeypatch.setattr(table_changes, "RETRY_S", 0.0)
    changes.source._retry_at = 0.0
    await build("payroll", me)  # opened again (waited for), no WAL position read
    assert changes.stamp() is not None and reads[0] == 1
    before = changes.generation
    await other.knowledge.indexing.index_file(
        item("c", "payroll-11.txt"), b"Payroll of November: the 24th.", context=me
    )
    await _until(lambda: changes.generation != before)
    assert "payroll-11.txt" in await build("payroll", me)
    assert reads[0] == 1


def test_which_statements_write_the_knowledge():
    writes = changes_module.writes_knowledge
    assert writes("INSERT INTO knowledge_file_index (file_id) VALUES (%s)")
    assert writes("  delete from knowledge_chunk c WHERE c.id = 1")
    assert writes("COPY knowledge_chunk (id) FROM STDIN")
    assert writes("WITH d AS (DELETE FROM knowledge_chunk_lookup) SELECT 1")
    assert not writes("SELECT * FROM knowledge_chunk")
    assert not writes("INSERT INTO knowledge_round_memory (summary) VALUES ('x')")
    assert not writes("UPDATE agent_runs SET status = 'done'")
