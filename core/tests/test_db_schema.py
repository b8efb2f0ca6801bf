"""The compiled, one-round-trip DDL builds exactly what SQLAlchemy's own ``create_all`` builds."""

from __future__ import annotations

import uuid

import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from nyla import db_schema
from nyla.db import Database, import_table_modules, metadata

# Everything a schema holds that a table declaration or a table event decides, with the
# schema's name taken out so two schemas compare.
_CATALOG = """
SELECT 'column', c.relname || '.' || a.attname,
       format_type(a.atttypid, a.atttypmod) || ' ' || a.attnotnull || ' ' || a.attstorage::text
       || ' ' || coalesce(pg_get_expr(d.adbin, d.adrelid), '')
FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
WHERE c.relnamespace = current_schema()::regnamespace AND a.attnum > 0
  AND NOT a.attisdropped AND c.relkind = 'r'
UNION ALL
SELECT 'index', i.relname, pg_get_indexdef(i.oid)
FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid
WHERE i.relnamespace = current_schema()::regnamespace
UNION ALL
SELECT 'constraint', r.relname || '.' || k.conname, pg_get_constraintdef(k.oid)
FROM pg_constraint k JOIN pg_class r ON r.oid = k.conrelid
WHERE k.connamespace = current_schema()::regnamespace
UNION ALL
SELECT 'relation', c.relname, c.relkind::text || ' ' || coalesce(array_to_string(c.reloptions, ','), '')
FROM pg_class c WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'S')
"""


async def _catalog(database: Database) -> set[tuple[str, str, str]]:
    async with database.engine.connect() as conn:
        rows = (await conn.execute(text(_CATALOG))).all()
    schema = database.schema or ""
    return {(kind, name, detail.replace(f"{schema}.", "")) for kind, name, detail in rows}


async def test_the_cached_script_builds_what_create_all_builds(embedded_pg):
    import_table_modules()
    reference = Database(embedded_pg, schema=f"t_ref_{uuid.uuid4().hex[:8]}")
    fresh = [Database(embedded_pg, schema=f"t_new_{uuid.uuid4().hex[:8]}") for _ in range(2)]
    try:
        async with reference.engine.begin() as conn:
            await conn.execute(text(f'CREATE SCHEMA "{reference.schema}"'))
            await conn.run_sync(lambda sync: metadata.create_all(sync, checkfirst=False))
        expected = await _catalog(reference)
        for database in fresh:  # the first compiles (unless another test did), the second reuses
            await database.ensure_ready()
            assert await _catalog(database) == expected
        assert db_schema._DDL, "the script was not kept for the next schema"
        kinds = {kind for kind, _, _ in expected}
        assert kinds == {"column", "index", "constraint", "relation"}
        # the table event (knowledge_chunk's vector kept in the row) is part of the script
        assert ("column", "knowledge_chunk.embedding") in {(k, n) for k, n, _ in expected}
        assert any(
            n == "knowledge_chunk.embedding" and " m " in d for k, n, d in expected if k == "column"
        )
    finally:
        for database in (reference, *fresh):
            await database.drop_schema()
            await database.dispose()


async def test_a_failing_statement_in_the_script_leaves_no_table_behind(embedded_pg):
    """The script runs in ensure_ready's transaction: one bad statement and nothing stays."""
    import_table_modules()
    database = Database(embedded_pg, schema=f"t_bad_{uuid.uuid4().hex[:8]}")
    tables = list(metadata.sorted_tables)
    try:
        async with database.engine.begin() as conn:
            await conn.execute(text(f'CREATE SCHEMA "{database.schema}"'))
        # an unrelated table under one of the names the script will create, half-way through
        clash = tables[len(tables) // 2].name
        async with database.engine.begin() as conn:
            await conn.execute(text(f'CREATE TABLE "{clash}" (only_column int)'))
        with pytest.raises(DBAPIError, match=clash):
            async with database.engine.begin() as conn:
                script = await conn.run_sync(lambda s: db_schema.ddl_script(s, metadata, tables))
                await conn.exec_driver_sql(script)
        async with database.engine.connect() as conn:
            left = set(
                (
                    await conn.execute(
                        text(
                            "SELECT relname FROM pg_class WHERE relkind = 'r' "
                            "AND relnamespace = current_schema()::regnamespace"
                        )
                    )
                ).scalars()
            )
        assert left == {clash}
    finally:
        await database.drop_schema()
        await database.dispose()
