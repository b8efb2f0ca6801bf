"""Database.read_session: autocommit reads that take a connection only at their first
statement, and leave no autocommit behind on the pooled connection."""

from __future__ import annotations

import pytest
from sqlalchemy import text

pytestmark = pytest.mark.db


async def test_a_read_session_without_statements_takes_no_connection(db) -> None:
    pool = db.engine.sync_engine.pool
    async with db.read_session():
        assert pool.checkedout() == 0
    async with db.read_session() as s:
        assert (await s.execute(text("SELECT 1"))).scalar() == 1
        assert pool.checkedout() == 1
    assert pool.checkedout() == 0


async def test_read_sessions_autocommit_and_sessions_still_roll_back(db) -> None:
    async with db.session() as s:
        await s.execute(text("CREATE TABLE probe (n int)"))
    async with db.read_session() as s:
        await s.execute(text("INSERT INTO probe VALUES (1)"))
        async with db.read_session() as other:  # seen at once: no transaction is open
            assert (await other.execute(text("SELECT count(*) FROM probe"))).scalar() == 1
    with pytest.raises(RuntimeError):
        async with db.session() as s:  # likely the same pooled connection, transactional again
            await s.execute(text("INSERT INTO probe VALUES (2)"))
            raise RuntimeError("roll back")
    async with db.read_session() as s:
        assert (await s.execute(text("SELECT array_agg(n) FROM probe"))).scalar() == [1]
