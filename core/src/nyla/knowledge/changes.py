"""Whether the knowledge an agent's context block quotes may have changed since it was built:
the generation of a watch (:mod:`nyla.table_changes`) on the chunks, their lookup rows and the
file index (:data:`TABLES`), read with no database round trip.

It moves when another process commits a change to those tables (heard through their
statement triggers' notification), when this process commits one (at once, when the
connection goes back to the pool: a file a tool just indexed is in the next round's
context; a raw ``COPY`` is marked by :func:`mark_written`), and when the listener connects
or is lost. Memory rows are not in :data:`TABLES`: a block that reads round or workflow
memory is built every round (its run writes memory every round), only the blocks that read
the chunks alone are kept. A change that reaches the tables only by a cascade from another
table is heard through the notification alone.

The watch's stamp is ``None`` while the process is not listening (see
:mod:`nyla.table_changes`), or the caller does not ask it when ``knowledge.context_notify``
is off (where notifications do not reach the connection, e.g. PgBouncer in transaction
mode): the caller then reads the WAL position every round instead.
"""

from __future__ import annotations

from typing import Any

from nyla.db import Database
from nyla.table_changes import TableChanges, Watch, writes_tables
from nyla.table_changes import mark_written as mark_tables_written

#: the tables whose changes a kept context block must hear of
TABLES = ("knowledge_chunk", "knowledge_chunk_lookup", "knowledge_file_index")

#: the watch of :data:`TABLES` (the type a context builder is handed)
KnowledgeChanges = Watch


def knowledge_changes(db: Database) -> Watch:
    """The watch of ``db``'s knowledge tables in this process (one per database object)."""
    return TableChanges.of(db).watch(TABLES)


def writes_knowledge(statement: str) -> bool:
    """Whether ``statement`` may write one of :data:`TABLES` (a ``WITH`` naming one counts)."""
    return "knowledge_" in statement and bool(writes_tables(statement, TABLES))


def mark_written(connection: Any) -> None:
    """Note that the transaction of ``connection`` (a SQLAlchemy connection) writes
    :data:`TABLES` outside SQLAlchemy's statements (a ``COPY`` on its driver connection)."""
    mark_tables_written(connection, TABLES)
