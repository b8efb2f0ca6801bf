"""Bringing a schema up to the tables nyla declares: create what is missing, widen and add
columns an older nyla created otherwise, rebuild derived tables of another layout.

Runs on a synchronous connection inside :meth:`nyla.db.Database.ensure_ready`'s transaction.
The DDL of the missing tables is compiled once per process and set of tables and sent in one
round trip: compiling ~90 statements costs ~80 ms of CPU and ~90 round trips each time, and a
process that creates many schemas (a test suite, a host serving several) would pay that each
time. Sent as one text it runs in the same transaction, so a failure rolls all of it back.
"""

from __future__ import annotations

import logging
from typing import Any

from sqlalchemy import MetaData, Sequence, String, create_mock_engine, text

from nyla.errors import DatabaseUnavailableError

log = logging.getLogger(__name__)

# pg_catalog rather than information_schema.columns: the view joins and checks privileges on
# every column of the database, ~30 ms a call on a server holding many schemas.
_COLUMNS = text(
    "SELECT c.relname, a.attname, "
    "CASE WHEN a.atttypid IN ('varchar'::regtype, 'bpchar'::regtype) AND a.atttypmod > 4 "
    "THEN a.atttypmod - 4 END "
    "FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid "
    "WHERE c.relnamespace = current_schema()::regnamespace "
    "AND c.relkind IN ('r', 'p', 'v', 'f') AND a.attnum > 0 AND NOT a.attisdropped"
)

#: compiled DDL per (dialect, tables): see the module docstring
_DDL: dict[tuple[str, tuple[str, ...]], str] = {}


def is_derived(table: Any) -> bool:
    """A table whose rows can be rebuilt from elsewhere (``info={"derived": True}``)."""
    return bool(table.info.get("derived"))


def create_missing_tables(conn: Any, metadata: MetaData) -> None:
    """Create, widen, extend or rebuild the tables of ``metadata`` in the connection's current
    schema (the first on its search path)."""
    # Existence is checked in the schema new tables go to only: SQLAlchemy's own check looks
    # along the whole search path and would skip a table that exists in ``public``.
    existing: dict[str, set[str]] = {}
    widths: dict[tuple[str, str], int] = {}
    for table, column, width in conn.execute(_COLUMNS):
        existing.setdefault(table, set()).add(column)
        if width is not None:
            widths[(table, column)] = width
    _widen_columns(conn, metadata, widths)
    drifted = [
        t
        for t in metadata.sorted_tables
        if t.name in existing and existing[t.name] != {c.name for c in t.columns}
    ]
    drifted = [t for t in drifted if not _add_columns(conn, t, existing[t.name])]
    if drifted:
        _rebuild_derived(conn, metadata, drifted)
        existing = {
            name: columns
            for name, columns in existing.items()
            if name not in metadata.tables or not is_derived(metadata.tables[name])
        }
    missing = [t for t in metadata.sorted_tables if t.name not in existing]
    if missing:
        conn.exec_driver_sql(ddl_script(conn, metadata, missing))


def ddl_script(conn: Any, metadata: MetaData, tables: list[Any]) -> str:
    """The statements ``metadata.create_all(tables=tables, checkfirst=False)`` would run on
    ``conn`` (its dialect, its table events), as one text; compiled once per process."""
    key = (conn.dialect.name, tuple(t.name for t in tables))
    script = _DDL.get(key)
    if script is None:
        statements: list[str] = []

        def collect(element: Any, *_: Any, **__: Any) -> None:
            statements.append(str(element.compile(dialect=conn.dialect)).strip())

        recorder = create_mock_engine(conn.engine.url, collect)
        metadata.create_all(recorder, tables=tables, checkfirst=False)
        script = _DDL[key] = ";\n".join(statements)
    return script


def _widen_columns(conn: Any, metadata: MetaData, widths: dict[tuple[str, str], int]) -> None:
    """Widen the ``varchar(n)`` columns an older nyla created narrower than the tables now
    declare (``text`` or a longer ``varchar``): the rows stay, and PostgreSQL changes a
    varchar's width, or makes it text, without rewriting the table."""
    if not widths:
        return
    for table in metadata.sorted_tables:
        for column in table.columns:
            width = widths.get((table.name, column.name))
            if width is None or not isinstance(column.type, String):
                continue
            wanted = column.type.length
            if wanted is not None and wanted <= width:
                continue
            kind = column.type.compile(dialect=conn.dialect)
            log.info("widening %s.%s from varchar(%d) to %s", table.name, column.name, width, kind)
            conn.execute(
                text(f'ALTER TABLE "{table.name}" ALTER COLUMN "{column.name}" TYPE {kind}')
            )


def _add_columns(conn: Any, table: Any, present: set[str]) -> bool:
    """Bring a table up to date when the only change is new columns that carry a server
    default or may be null (added with ``ALTER TABLE ... ADD COLUMN``); False otherwise."""
    wanted = {c.name: c for c in table.columns}
    if present - set(wanted):
        return False
    new = [wanted[name] for name in wanted if name not in present]
    if any(not c.nullable and c.server_default is None for c in new):
        return False
    for column in new:
        kind = column.type.compile(dialect=conn.dialect)
        default = ""
        if column.server_default is not None:
            default = " DEFAULT " + conn.dialect.statement_compiler(
                conn.dialect, None
            ).render_literal_value(str(column.server_default.arg), String())
        conn.execute(text(f'ALTER TABLE "{table.name}" ADD COLUMN "{column.name}" {kind}{default}'))
    return True


def _rebuild_derived(conn: Any, metadata: MetaData, drifted: list[Any]) -> None:
    """An older nyla created some tables with another layout. Derived tables (the knowledge
    index: rebuilt by indexing again) are dropped together and recreated; any other table is
    an error the user has to resolve."""
    kept = [t.name for t in drifted if not is_derived(t)]
    if kept:
        raise DatabaseUnavailableError(
            "these tables were created by another version of nyla and have other "
            f"columns: {', '.join(kept)}; migrate or drop them"
        )
    derived = [t for t in metadata.sorted_tables if is_derived(t)]
    log.warning(
        "the knowledge index has an older layout (%s); it is dropped and recreated empty: "
        "index your files again",
        ", ".join(t.name for t in drifted),
    )
    schema = conn.execute(text("SELECT current_schema()")).scalar_one()
    for table in reversed(derived):
        conn.execute(text(f'DROP TABLE IF EXISTS "{schema}"."{table.name}" CASCADE'))
        for column in table.columns:
            if isinstance(column.default, Sequence):
                conn.execute(text(f'DROP SEQUENCE IF EXISTS "{schema}"."{column.default.name}"'))
