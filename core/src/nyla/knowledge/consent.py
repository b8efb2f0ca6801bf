"""Consent and control: switching indexing off purges synchronously, in one transaction.

- ``rag_index_enabled`` on a data-source tree element: turning it off deletes the index rows
  and chunks of every file below that element whose *effective* policy (longest prefix, see
  :mod:`nyla.knowledge.policy`) is now off; a deeper element that keeps indexing on explicitly
  keeps its files.
- ``knowledge_ingestion_enabled`` on a connection: turning it off deletes everything indexed
  from that connection and cancels its running jobs.

Every change writes an audit record in the same transaction.
"""

from __future__ import annotations

from typing import TypeVar

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from nyla.errors import NotFoundError, PermissionDeniedError
from nyla.jobs.store import cancel_jobs
from nyla.jobs.tables import Job
from nyla.knowledge.policy import covers, effective_policy, normalize_path
from nyla.knowledge.vectors import delete_file_chunks
from nyla.models.knowledge import PurgeResult
from nyla.tables.knowledge import DataSource, FileContentIndex, UserConnection, audit

#: a row with an owner (a data source, a connection)
OwnedT = TypeVar("OwnedT", DataSource, UserConnection)


async def purge_files(session: AsyncSession, file_ids: list[str], reason: str) -> PurgeResult:
    """Delete the index rows and chunks of ``file_ids`` in the session's transaction."""
    if not file_ids:
        return PurgeResult(reason=reason)
    deleted = await session.execute(
        delete(FileContentIndex)
        .where(FileContentIndex.file_id.in_(file_ids))
        .returning(FileContentIndex.file_no)
    )
    file_nos = [int(no) for no in deleted.scalars()]
    chunks = await delete_file_chunks(session, file_nos)
    return PurgeResult(files=len(file_nos), chunks=chunks, reason=reason)


async def purge_connection(session: AsyncSession, connection_id: str, reason: str) -> PurgeResult:
    """Delete everything indexed from a connection in the session's transaction (the connection
    store hands this in as its :class:`~nyla.connections.ports.IndexPurge` on removal)."""
    ids = list(
        (
            await session.execute(
                select(FileContentIndex.file_id).where(
                    FileContentIndex.connection_id == connection_id
                )
            )
        ).scalars()
    )
    return await purge_files(session, ids, reason)


async def set_rag_index_enabled(
    session: AsyncSession, data_source_id: str, enabled: bool | None, *, actor: str
) -> PurgeResult:
    """Set (or with ``None`` clear, i.e. inherit) ``rag_index_enabled``; purges what is no
    longer indexed. Owner-only."""
    ds = _owned(
        await session.get(DataSource, data_source_id, with_for_update=True),
        f"data source {data_source_id}",
        actor,
    )
    before = ds.rag_index_enabled
    ds.rag_index_enabled = enabled
    await session.flush()
    result = PurgeResult(reason=f"rag_index_enabled={enabled} on {ds.path}")
    siblings = list(
        (
            await session.execute(
                select(DataSource).where(DataSource.connection_id == ds.connection_id)
            )
        ).scalars()
    )
    if enabled is not True:
        prefix = normalize_path(ds.path)
        files = (
            await session.execute(
                select(FileContentIndex.file_id, FileContentIndex.source_path).where(
                    FileContentIndex.connection_id == ds.connection_id
                )
            )
        ).all()
        off = [
            file_id
            for file_id, path in files
            if path is not None
            and covers(prefix, path)
            and not effective_policy(siblings, path, "rag_index_enabled").value
        ]
        result = await purge_files(session, off, result.reason)
    audit(
        session,
        "datasource_rag_index_changed",
        actor,
        data_source_id,
        {
            "before": before,
            "after": enabled,
            "purgedFiles": result.files,
            "purgedChunks": result.chunks,
        },
    )
    return result


async def set_knowledge_consent(
    session: AsyncSession, connection_id: str, enabled: bool, *, actor: str
) -> PurgeResult:
    """Set a connection's ``knowledge_ingestion_enabled``; off purges everything indexed from
    it and cancels its running jobs. Owner-only."""
    conn = _owned(
        await session.get(UserConnection, connection_id, with_for_update=True),
        f"connection {connection_id}",
        actor,
    )
    before = conn.knowledge_ingestion_enabled
    conn.knowledge_ingestion_enabled = enabled
    result = PurgeResult(reason=f"knowledge_ingestion_enabled={enabled}")
    cancelled = 0
    if not enabled:
        result = await purge_connection(session, connection_id, result.reason)
        cancelled = await cancel_jobs(
            session, Job.connection_id == connection_id, Job.status == "running"
        )
    audit(
        session,
        "connection_knowledge_consent_changed",
        actor,
        connection_id,
        {
            "before": before,
            "after": enabled,
            "purgedFiles": result.files,
            "purgedChunks": result.chunks,
            "cancelledJobs": cancelled,
        },
    )
    return result


def _owned(row: OwnedT | None, what: str, actor: str) -> OwnedT:
    """``row`` when ``actor`` owns it; otherwise the error that says why not."""
    if row is None:
        raise NotFoundError(f"no {what}")
    if row.user_id != actor:
        raise PermissionDeniedError(f"only the owner may change {what}")
    return row
