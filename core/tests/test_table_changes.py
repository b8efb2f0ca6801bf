"""One listener per database hears the changes of every watched set of tables: a watch that
joins while it listens has it opened again with its tables' triggers, and a notification
moves only the watches of the table it names."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest
from sqlalchemy import text

from nyla.db import Database
from nyla.table_changes import TableChanges, writes_tables

pytestmark = pytest.mark.db


async def _until(done: Callable[[], bool], timeout: float = 15.0) -> None:
    async with asyncio.timeout(timeout):
        while not done():
            await asyncio.sleep(0.01)


async def test_a_joining_watch_is_heard_and_each_hears_its_own_tables(db) -> None:
    changes = TableChanges.of(db)
    chunks = changes.watch(["knowledge_chunk"])
    assert changes.watch(["knowledge_chunk"]) is chunks
    assert await chunks.start() is not None
    first_conn = changes._conn
    users = changes.watch(["user_connection"])
    assert users.stamp() is None  # its table has no trigger on this listener yet
    assert await users.start() is not None
    assert changes._conn is not first_conn and chunks.stamp() is not None

    other = Database(db.url, schema=db.schema)
    try:
        before = (chunks.generation, users.generation)
        async with other.session() as s:  # another process's write: heard as a notification
            await s.execute(text("DELETE FROM user_connection WHERE false"))
        await _until(lambda: users.generation != before[1])
        assert chunks.generation == before[0]
    finally:
        await other.dispose()


def test_which_statements_write_which_tables() -> None:
    tables = ("user_connection", "mcp_servers")
    assert writes_tables("UPDATE user_connection SET status = 'x'", tables) == {"user_connection"}
    assert writes_tables(' insert into "s".mcp_servers (name) values (1)', tables) == {
        "mcp_servers"
    }
    assert writes_tables("SELECT * FROM user_connection", tables) == set()
    assert writes_tables("DELETE FROM connection_credential", tables) == set()


async def test_a_write_through_another_object_of_the_database_counts_at_once(db, monkeypatch):
    """A CLI command run in a host's process writes through a database object of its own:
    the host's kept reads must not wait for the notification (here there is none)."""
    monkeypatch.setenv("NYLA_DB_NOTIFY", "off")
    host, command = Database(db.url, schema=db.schema), Database(db.url, schema=db.schema)
    try:
        kept = TableChanges.of(host).watch(["user_connection"])
        TableChanges.of(command).watch(["user_connection"])
        before = kept.generation
        async with command.session() as s:
            await s.execute(text("DELETE FROM user_connection WHERE false"))
        assert kept.generation == before + 1
    finally:
        await host.dispose()
        await command.dispose()


async def test_an_idle_listener_arms_no_timer_and_still_hears(db) -> None:
    """psycopg's ``notifies()`` re-arms a 0.1 s timer for as long as it waits, which woke an
    idle process ten times a second and cut every agent tool's wait in two; the listener
    waits on its socket alone, and a commit still reaches it."""
    changes = TableChanges.of(db)
    users = changes.watch(["user_connection"])
    assert await users.start() is not None
    await asyncio.sleep(0.25)  # the listener is parked in its wait
    loop = asyncio.get_running_loop()
    timers = [h for h in loop._scheduled if not h.cancelled()]  # type: ignore[attr-defined]
    assert not [h for h in timers if "psycopg" in getattr(h._callback, "__module__", "")]

    other = Database(db.url, schema=db.schema)
    try:
        before = users.generation
        async with other.session() as s:
            await s.execute(text("DELETE FROM user_connection WHERE false"))
        await _until(lambda: users.generation != before)
    finally:
        await other.dispose()
