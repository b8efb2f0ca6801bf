"""Statements longer than psycopg converts once (hybrid search's full-text ranking) go to
the server with ``$n`` binds through a raw cursor: the same rows, the binds written once,
prepared on the connection like every other statement of the driver path."""

from __future__ import annotations

from nyla.knowledge.search_driver import CACHED_STATEMENT_LENGTH, OwnerKeys, positional_sql, rows


def test_binds_become_numbered_parameters_once_each():
    query, names = positional_sql(
        "SELECT CAST(:a AS int) + :b, 'a:c', x::text, :a FROM t WHERE y LIKE 'p%' AND z = ANY(:keys)"
    )
    assert query == (
        b"SELECT CAST($1 AS int) + $2, 'a:c', x::text, $1 FROM t WHERE y LIKE 'p%' AND z = ANY($3)"
    )
    assert names == ("a", "b", "keys")


def _long(sql: str) -> str:
    padded = sql + " " + "AND true " * (CACHED_STATEMENT_LENGTH // 9 + 1)
    assert len(padded) > CACHED_STATEMENT_LENGTH
    return padded


async def test_a_long_statement_runs_prepared_with_its_binds(kernel):
    sql = _long(
        "SELECT CAST(:n AS int) * 2, CAST(:n AS int) + 1, 'a%b' LIKE 'a%' || :tail, "
        "'x' = ANY(:keys), cardinality(:keys) WHERE CAST(:n AS int) > 0"
    )

    async def run(conn):
        found = [
            await rows(
                conn, sql, {"n": n, "tail": "b", "keys": OwnerKeys(["x", 'q"u,o']), "unused": 1}
            )
            for n in (3, 4)
        ]
        prepared = await conn.rows(
            "SELECT count(*) FROM pg_prepared_statements WHERE statement LIKE %s",
            ["SELECT CAST($1 AS int) * 2%"],
        )
        return found, prepared[0][0], "nyla_raw_cursor" in conn.info

    found, prepared, raw = await kernel.db.read_driver(run)
    assert raw  # psycopg's own parsing of the binds was not asked for
    assert [list(r) for r in found[0]] == [[6, 4, True, True, 2]]
    assert [list(r) for r in found[1]] == [[8, 5, True, True, 2]]
    assert prepared == 1
