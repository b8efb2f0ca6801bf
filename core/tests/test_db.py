"""The database layer: URL handling, clear errors, schema isolation."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from nyla.db import Database, mask_url, to_sqlalchemy_url
from nyla.errors import DatabaseUnavailableError


def test_libpq_urls_become_psycopg_urls():
    assert to_sqlalchemy_url("postgresql://u:p@h:5432/d") == "postgresql+psycopg://u:p@h:5432/d"
    assert to_sqlalchemy_url("postgres://u@h/d") == "postgresql+psycopg://u@h/d"
    embedded = "postgresql://postgres:@/postgres?host=/tmp/x"
    assert to_sqlalchemy_url(embedded) == "postgresql+psycopg://postgres@/postgres?host=/tmp/x"


def test_password_is_masked():
    masked = mask_url("postgresql+psycopg://alice:s3cret@db.example:5432/nyla")
    assert "s3cret" not in masked and "alice" in masked and "***" in masked


async def test_unreachable_database_is_a_clear_error(tmp_path):
    database = Database(f"postgresql://nobody@/nyla?host={tmp_path}&connect_timeout=2")
    with pytest.raises(DatabaseUnavailableError, match="cannot reach the database at"):
        await database.ensure_ready()
    await database.dispose()


def test_schema_names_are_validated():
    with pytest.raises(ValueError, match="invalid schema name"):
        Database("postgresql://u@h/d", schema="x; DROP TABLE y")


async def test_schemas_isolate_tests(db, embedded_pg):
    other = Database(embedded_pg, schema="t_other_probe")
    await other.ensure_ready()
    try:
        async with db.session() as s:
            await s.execute(text("CREATE TABLE only_here (id int)"))
        assert "only_here" in (await db.info())["tables"]
        assert "only_here" not in (await other.info())["tables"]
    finally:
        await other.drop_schema()
        await other.dispose()


async def test_a_table_in_public_does_not_hide_the_schemas_own(embedded_pg):
    from nyla.db import metadata

    public = Database(embedded_pg)
    await public.ensure_ready()
    scoped = Database(embedded_pg, schema="t_shadow_probe")
    try:
        await scoped.ensure_ready()
        tables = set((await scoped.info())["tables"])
        assert {t.name for t in metadata.sorted_tables} <= tables
    finally:
        await scoped.drop_schema()
        await scoped.dispose()
        async with public.engine.begin() as conn:
            await conn.run_sync(metadata.drop_all)
        await public.dispose()


async def test_an_older_knowledge_layout_is_rebuilt_and_other_drift_is_an_error(embedded_pg):
    """The knowledge index is derived data: an older layout is dropped and recreated (the
    user is told to index again); drift in any other table stops with a clear error."""
    old = Database(embedded_pg, schema="t_drift_probe")
    try:
        async with old.engine.begin() as conn:
            await conn.execute(text('CREATE SCHEMA IF NOT EXISTS "t_drift_probe"'))
            await conn.execute(
                text("CREATE TABLE knowledge_chunk (id bigserial PRIMARY KEY, tsv tsvector)")
            )
            await conn.execute(text("INSERT INTO knowledge_chunk DEFAULT VALUES"))
            # a table nyla's metadata does not know (a feature's own) is left alone
            await conn.execute(text("CREATE TABLE feature_owned (id int)"))
        await old.ensure_ready()
        async with old.session() as s:
            columns = set(
                (
                    await s.execute(
                        text(
                            "SELECT column_name FROM information_schema.columns WHERE "
                            "table_schema = 't_drift_probe' AND table_name = 'knowledge_chunk'"
                        )
                    )
                ).scalars()
            )
            rows = (await s.execute(text("SELECT count(*) FROM knowledge_chunk"))).scalar()
        assert "tsv" not in columns and {"embedding", "owner_key", "content_hash"} <= columns
        assert rows == 0
        assert "feature_owned" in (await old.info())["tables"]
        await old.dispose()

        async with old.engine.begin() as conn:
            await conn.execute(text("ALTER TABLE user_connection ADD COLUMN legacy int"))
        again = Database(embedded_pg, schema="t_drift_probe")
        with pytest.raises(DatabaseUnavailableError, match="user_connection"):
            await again.ensure_ready()
        await again.dispose()
    finally:
        await old.drop_schema()
        await old.dispose()


async def test_columns_an_older_nyla_made_narrower_are_widened_with_their_rows(embedded_pg):
    """A varchar(n) that the tables now declare as text (or a longer varchar) is widened in
    place: the rows stay, and the long values the new width is for can be written."""
    db = Database(embedded_pg, schema="t_widen_probe")
    try:
        await db.ensure_ready()
        async with db.engine.begin() as conn:
            for statement in (
                "ALTER TABLE knowledge_file_index ALTER COLUMN file_id TYPE varchar(128)",
                "ALTER TABLE sync_item ALTER COLUMN item_id TYPE varchar(512)",
                "INSERT INTO sync_item (data_source_id, item_id, item_hash, run_id) "
                "VALUES ('ds', 'short', 'h', 'r')",
            ):
                await conn.execute(text(statement))
        await db.dispose()

        again = Database(embedded_pg, schema="t_widen_probe")
        await again.ensure_ready()
        long_id = "mail:" + "A" * 600
        async with again.session() as s:
            widths = dict(
                (
                    await s.execute(
                        text(
                            "SELECT column_name, data_type FROM information_schema.columns "
                            "WHERE table_schema = 't_widen_probe' AND column_name IN "
                            "('file_id', 'item_id') AND table_name IN "
                            "('knowledge_file_index', 'sync_item')"
                        )
                    )
                ).all()
            )
            await s.execute(
                text(
                    "INSERT INTO sync_item (data_source_id, item_id, item_hash, run_id) "
                    "VALUES ('ds', :id, 'h', 'r')"
                ),
                {"id": long_id},
            )
            kept = set((await s.execute(text("SELECT item_id FROM sync_item"))).scalars())
        assert widths == {"file_id": "text", "item_id": "text"}
        assert kept == {"short", long_id}
        await again.dispose()
    finally:
        await db.drop_schema()
        await db.dispose()
