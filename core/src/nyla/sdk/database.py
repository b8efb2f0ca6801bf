"""The kernel's PostgreSQL for a plugin that keeps rows of its own
(``from nyla.sdk.database import configured_database``).

Inside a kernel a plugin is handed the kernel's database (a feature's data provider and a
:class:`~nyla.sdk.run_toolboxes.RunToolboxes` through ``bind(db)``); a plugin's own command
(``nyla_cli_commands``) opens the database every ``nyla`` command of this configuration
uses with :func:`configured_database`. Either is a ``nyla.host.Database``: ``engine`` (an async
SQLAlchemy engine), ``schema`` (create your tables there, as the kernel does), ``session()``
(one transaction), ``ensure_ready()`` and ``read_driver(work)`` (``await work(conn)`` on a
pooled psycopg connection in autocommit, ``conn.rows(sql, params)`` one prepared statement:
for a read every agent run makes, where SQLAlchemy's session costs more than the query);
keep your tables on your own ``MetaData``. :func:`kept_reads` keeps what a plugin reads of
its tables in the process until another process (or this one) changes them."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = ["configured_database", "kept_reads"]


def configured_database() -> Any:
    """The configured database (``NYLA_DATABASE_URL``, else the embedded server; the schema
    of ``NYLA_DATABASE_SCHEMA``), connected on first use; ``await db.dispose()`` when done."""
    from nyla.db import Database

    return Database()


def kept_reads(db: Any, tables: Iterable[str], size: int = 1024) -> Any:
    """Values read from ``tables`` of the kernel's database ``db``, kept per key until a
    commit changes one of them here or in any other process (``await reads.get(key, read)``;
    see :class:`nyla.table_changes.KeptReads`): for rows every agent run reads that change
    rarely. The tables must exist (a statement trigger on each notifies the process)."""
    from nyla.table_changes import KeptReads, TableChanges

    return KeptReads(TableChanges.of(db).watch(tables), size)
