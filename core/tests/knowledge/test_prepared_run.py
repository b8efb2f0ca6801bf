"""``ReadConnection.run``: the search's hot statement prepared once per connection and
sent by name with its parameters dumped, without a cursor. Its rows, its errors and the
notifications that arrive meanwhile are what a cursor gives; a statement deallocated
behind its back is prepared again, and a connection keeps at most ``PREPARED_MAX``."""

from __future__ import annotations

import asyncio

import psycopg
import pytest
from psycopg.pq import Format
from sqlalchemy import text

from nyla import read_pool
from nyla.read_pool import Statement

ROW = Statement("SELECT $1::int + 1, 'x'::text, 2.5::float8, NULL::text", [Format.TEXT])


async def _ours(conn) -> set[str]:
    rows = await conn.rows("SELECT name FROM pg_prepared_statements WHERE name LIKE 'nyla_%%'")
    return {r[0] for r in rows}


async def test_a_statement_is_prepared_once_and_gives_a_cursors_rows(kernel):
    async def work(conn):
        first = await conn.run(ROW, [b"41"])
        again = await conn.run(ROW, [b"1"])
        cursor = await conn.rows(
            "SELECT %(a)s::int + 1, 'x'::text, 2.5::float8, NULL::text", {"a": 41}
        )
        return first, again, cursor, await _ours(conn)

    first, again, cursor, names = await kernel.db.read_driver(work)
    assert first == cursor == [(42, "x", 2.5, None)]
    assert again == [(2, "x", 2.5, None)]
    assert names == {ROW.name.decode()}


async def test_an_error_is_psycopgs_own_and_the_connection_is_kept(kernel):
    divide = Statement("SELECT 1 / $1::int", [Format.TEXT])

    async def fails(conn):
        await conn.run(divide, [b"0"])

    async def pid(conn):
        return (await conn.rows("SELECT pg_backend_pid()"))[0][0], await conn.run(divide, [b"1"])

    before = await kernel.db.read_driver(pid)
    with pytest.raises(psycopg.errors.DivisionByZero):
        await kernel.db.read_driver(fails)
    assert await kernel.db.read_driver(pid) == before == (before[0], [(1,)])


async def test_a_statement_deallocated_behind_its_back_is_prepared_again(kernel):
    async def work(conn):
        await conn.run(ROW, [b"1"])
        await conn.driver.execute("DEALLOCATE ALL")
        return await conn.run(ROW, [b"2"]), await _ours(conn)

    assert await kernel.db.read_driver(work) == ([(3, "x", 2.5, None)], {ROW.name.decode()})


async def test_a_connection_keeps_at_most_prepared_max_statements(kernel, monkeypatch):
    monkeypatch.setattr(read_pool, "PREPARED_MAX", 2)
    made = [Statement(f"SELECT {n} + $1::int", [Format.TEXT]) for n in range(3)]

    async def work(conn):
        answers = [await conn.run(s, [b"10"]) for s in made]
        kept = await _ours(conn)
        # the first was deallocated: it is prepared again (and the second goes)
        answers.append(await conn.run(made[0], [b"10"]))
        return answers, kept, await _ours(conn)

    answers, kept, after = await kernel.db.read_driver(work)
    assert answers == [[(10,)], [(11,)], [(12,)], [(10,)]]
    assert kept == {made[1].name.decode(), made[2].name.decode()}
    assert after == {made[2].name.decode(), made[0].name.decode()}


async def test_notifications_reach_their_handlers_during_a_run(kernel):
    heard: list[str] = []

    async def listen(conn):
        await conn.driver.execute("LISTEN nyla_run_test")
        conn.driver.add_notify_handler(lambda n: heard.append(n.payload))

    await kernel.db.read_driver(listen)
    async with kernel.db.session() as s:
        await s.execute(text("SELECT pg_notify('nyla_run_test', 'changed')"))

    async def run(conn):
        return await conn.run(ROW, [b"0"])

    # delivered with the next statement's answer (a moment later if the server's listener
    # had not sent it yet when the statement went)
    for _ in range(50):
        assert await kernel.db.read_driver(run) == [(1, "x", 2.5, None)]
        if heard:
            break
        await asyncio.sleep(0.02)
    assert heard == ["changed"]


async def test_rows_asked_for_in_binary_are_the_same_values(kernel):
    # the search's statements load their ids and distances without parsing text
    binary = Statement(
        "SELECT $1::bigint << 20, 'ä x'::text, 0.1::float8 / 3, NULL::text, 7::int",
        [Format.TEXT],
        Format.BINARY,
    )
    as_text = Statement(binary.sql.decode() + " ", [Format.TEXT])

    async def work(conn):
        return await conn.run(binary, [b"5"]), await conn.run(as_text, [b"5"])

    in_binary, in_text = await kernel.db.read_driver(work)
    assert in_binary == in_text == [(5 << 20, "ä x", 0.1 / 3, None, 7)]
    assert [type(v) for v in in_binary[0]] == [int, str, float, type(None), int]
