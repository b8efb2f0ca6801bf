"""Where a file being indexed comes from (its data source's path and connection), and whether
consent lets it be indexed: the connection's knowledge-ingestion switch and the RAG switch of
the data-source tree it sits in."""

from __future__ import annotations

from sqlalchemy import select

from nyla.db import Database
from nyla.errors import NylaError
from nyla.knowledge.policy import effective_policy
from nyla.models.files import FileItem
from nyla.tables.knowledge import DataSource, UserConnection


class ConsentError(NylaError):
    """Indexing was refused: the data source or connection does not allow it."""


async def provenance(
    db: Database, file: FileItem, source_path: str | None, connection_id: str | None
) -> tuple[str | None, str | None]:
    """Source path and connection of a file from a data source; refuses a file whose
    data source or connection has indexing switched off."""
    if not file.data_source_id:
        if connection_id is not None:
            async with db.session() as s:
                conn = await s.get(UserConnection, connection_id)
            if conn is None or not conn.knowledge_ingestion_enabled:
                raise ConsentError(
                    f"knowledge ingestion is not allowed for connection {connection_id}"
                )
        return source_path, connection_id
    async with db.session() as s:
        ds = await s.get(DataSource, file.data_source_id)
        if ds is None:
            return source_path, connection_id
        conn = await s.get(UserConnection, ds.connection_id)
        if conn is not None and not conn.knowledge_ingestion_enabled:
            raise ConsentError(f"knowledge ingestion is switched off for connection {conn.id}")
        path = source_path or f"{ds.path.rstrip('/')}/{file.name}"
        siblings = list(
            (
                await s.execute(
                    select(DataSource).where(DataSource.connection_id == ds.connection_id)
                )
            ).scalars()
        )
    if not effective_policy(siblings, path, "rag_index_enabled").value:
        raise ConsentError(f"RAG indexing is switched off for {path}")
    return path, ds.connection_id
