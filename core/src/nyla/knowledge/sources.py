"""Read views of connections and their data-source trees for hosts (the write side is in
:mod:`nyla.knowledge.consent` and :class:`~nyla.knowledge.service.KnowledgeService`)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import Field
from sqlalchemy import select

from nyla.knowledge.policy import effective_policy
from nyla.knowledge.tables import DataSource, UserConnection
from nyla.models.base import WireModel


class ConnectionView(WireModel):
    """A user's connection as a host lists it."""

    id: str
    service: str
    user_id: str
    mandate_id: str | None = None
    label: str = ""
    knowledge_ingestion_enabled: bool = True
    created_at: datetime | None = None


class DataSourceView(WireModel):
    """A tree element of a connection: its explicit policy values (``None`` = inherited)
    and the effective ``rag_index_enabled`` the policy resolver gives it."""

    id: str
    connection_id: str
    path: str
    label: str = ""
    user_id: str
    mandate_id: str | None = None
    scope: str | None = None
    rag_index_enabled: bool | None = None
    rag_index_effective: bool = False
    neutralize: bool | None = None
    last_indexed: float | None = None
    settings: dict[str, Any] = Field(default_factory=dict)


def _connection(row: UserConnection) -> ConnectionView:
    return ConnectionView(
        id=row.id,
        service=row.service,
        user_id=row.user_id,
        mandate_id=row.mandate_id,
        label=row.label,
        knowledge_ingestion_enabled=row.knowledge_ingestion_enabled,
        created_at=row.created_at,
    )


def _source(row: DataSource, siblings: list[DataSource]) -> DataSourceView:
    return DataSourceView(
        id=row.id,
        connection_id=row.connection_id,
        path=row.path,
        label=row.label,
        user_id=row.user_id,
        mandate_id=row.mandate_id,
        scope=row.scope,
        rag_index_enabled=row.rag_index_enabled,
        rag_index_effective=bool(effective_policy(siblings, row.path, "rag_index_enabled").value),
        neutralize=row.neutralize,
        last_indexed=row.last_indexed,
        settings=dict(row.settings or {}),
    )


async def list_connections(db: Any, user_id: str) -> list[ConnectionView]:
    """The connections of ``user_id``, oldest first."""
    query = (
        select(UserConnection)
        .where(UserConnection.user_id == user_id)
        .order_by(UserConnection.created_at, UserConnection.id)
    )
    async with db.session() as s:
        return [_connection(r) for r in (await s.execute(query)).scalars()]


async def get_connection(db: Any, connection_id: str) -> ConnectionView | None:
    """One connection, or ``None``."""
    async with db.session() as s:
        row = await s.get(UserConnection, connection_id)
        return _connection(row) if row is not None else None


async def list_data_sources(db: Any, connection_id: str) -> list[DataSourceView]:
    """The tree elements of a connection, ordered by path."""
    query = select(DataSource).where(DataSource.connection_id == connection_id)
    async with db.session() as s:
        rows = list((await s.execute(query.order_by(DataSource.path))).scalars())
    return [_source(r, rows) for r in rows]


async def get_data_source(db: Any, data_source_id: str) -> DataSourceView | None:
    """One tree element with its effective policy, or ``None``."""
    async with db.session() as s:
        row = await s.get(DataSource, data_source_id)
        if row is None:
            return None
        siblings = list(
            (
                await s.execute(
                    select(DataSource).where(DataSource.connection_id == row.connection_id)
                )
            ).scalars()
        )
    return _source(row, siblings)


async def remove_connection(db: Any, connection_id: str, *, actor: str) -> dict[str, int]:
    """Remove a connection of ``actor``: its indexed files and chunks are purged, its
    running jobs cancelled, its data sources deleted with it, an audit record written."""
    from sqlalchemy import delete, func, update

    from nyla.jobs.tables import Job
    from nyla.knowledge.consent import NotFoundError, PermissionDeniedError, audit, purge_files
    from nyla.knowledge.tables import FileContentIndex

    async with db.session() as s:
        row = await s.get(UserConnection, connection_id, with_for_update=True)
        if row is None:
            raise NotFoundError(f"no connection {connection_id}")
        if row.user_id != actor:
            raise PermissionDeniedError(f"only the owner may remove connection {connection_id}")
        ids = list(
            (
                await s.execute(
                    select(FileContentIndex.file_id).where(
                        FileContentIndex.connection_id == connection_id
                    )
                )
            ).scalars()
        )
        purged = await purge_files(s, ids, "connection removed")
        cancelled = (
            await s.execute(
                update(Job)
                .where(Job.connection_id == connection_id, Job.status == "running")
                .values(status="cancelled", finished_at=func.now(), updated_at=func.now())
            )
        ).rowcount or 0
        await s.execute(delete(DataSource).where(DataSource.connection_id == connection_id))
        await s.delete(row)
        details = {"purgedFiles": purged.files, "purgedChunks": purged.chunks}
        details["cancelledJobs"] = int(cancelled)
        audit(s, "connection_removed", actor, connection_id, details)
    return details
