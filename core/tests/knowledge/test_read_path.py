"""The searches' connection pools (``Database.read`` and ``Database.read_driver``): no pre-ping, so a connection the
server dropped is retried once on a fresh one; other errors are not retried."""

from __future__ import annotations

import pytest
from sqlalchemy import text
from sqlalchemy.exc import ProgrammingError

from nyla.models.knowledge import SearchQuery

from .conftest import ctx, item


async def _backend_pid(kernel) -> int:
    async def pid(conn):
        return (await conn.execute(text("SELECT pg_backend_pid()"))).scalar_one()

    return int(await kernel.db.read(pid))


async def _driver_pid(kernel) -> int:
    async def pid(conn):
        return (await conn.rows("SELECT pg_backend_pid()"))[0][0]

    return int(await kernel.db.read_driver(pid))


@pytest.mark.parametrize("pid_of", [_backend_pid, _driver_pid], ids=["read", "read_driver"])
async def test_a_search_survives_its_pooled_connection_being_dropped(kernel, pid_of):
    body = b"The harbour ferry leaves every hour for the old town."
    [result] = await kernel.knowledge.indexing.index_files(
        [(item("ferry", "ferry.txt"), body)], context=ctx()
    )
    assert result.status == "indexed", result.error
    first = await kernel.knowledge.search(SearchQuery(text="harbour ferry", context=ctx()))
    assert [h.file_id for h in first.hits] == ["ferry"]
    pid = await pid_of(kernel)
    async with kernel.db.session() as s:
        await s.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
    again = await kernel.knowledge.search(SearchQuery(text="harbour ferry", context=ctx()))
    assert [h.file_id for h in again.hits] == ["ferry"]
    assert await pid_of(kernel) != pid
    # the scope filter is unchanged on the new connection
    other = await kernel.knowledge.search(SearchQuery(text="harbour ferry", context=ctx(user="u9")))
    assert other.hits == []


async def test_an_error_that_is_not_a_disconnect_is_raised_at_once(kernel):
    calls = 0

    async def broken(conn):
        nonlocal calls
        calls += 1
        await conn.execute(text("SELECT no_such_column FROM knowledge_chunk"))

    with pytest.raises(ProgrammingError):
        await kernel.db.read(broken)
    assert calls == 1
