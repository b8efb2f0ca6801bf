"""Storing prepared files: the one write transaction of a batch, its consent re-check, and
the lookup pass of bulk loads.

A single file gets its lookup rows (full-text terms and the dedupe hash,
:class:`~nyla.tables.knowledge.ChunkLookup`) in its own write transaction; a bulk load writes
its batches without them (``lookups=False``: the file is marked ``lookups_ready = false`` and
is found by vector and exact search meanwhile) and fills them for all its files in one pass at
the end, :func:`build_lookups`.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Text, cast, select, text, update
from sqlalchemy.dialects.postgresql import insert

from nyla.knowledge.consent import purge_files
from nyla.knowledge.policy import effective_policy
from nyla.knowledge.text_search import write_lookups
from nyla.knowledge.vectors import ChunkRow, copy_chunks, delete_file_chunks
from nyla.models.files import FileItem
from nyla.models.knowledge import IndexResult, IndexStatus
from nyla.tables.knowledge import (
    ChunkLookup,
    ContentChunk,
    DataSource,
    FileContentIndex,
    UserConnection,
)


@dataclass
class PreparedFile:
    """A file ready to write: its index row, its chunk rows and the result to report."""

    row: dict[str, Any]
    chunks: list[ChunkRow]
    result: IndexResult
    dims: int = 0


async def write_prepared(
    session: Any, prepared: list[PreparedFile], *, lookups: bool = True
) -> dict[str, str]:
    """The write path in the caller's transaction: re-check consent (see
    :func:`consent_refusals`), upsert the allowed files' index rows (one statement; it locks
    them, so concurrent writers of one file queue up), delete their old chunks by id range,
    COPY every new chunk (one binary COPY) and, with ``lookups``, add their lookup rows.

    Returns ``{file_id: reason}`` of the files consent refused: nothing of them is written
    and whatever of them was indexed before is purged in the same transaction."""
    refused = await consent_refusals(session, prepared)
    if refused:
        await purge_files(session, sorted(refused), "consent withdrawn before the write")
        prepared = [p for p in prepared if p.row["file_id"] not in refused]
    if not prepared:
        return refused
    rows = [{**p.row, "lookups_ready": lookups} for p in prepared]
    columns = list(rows[0])
    # one JSON parameter instead of a multi-row VALUES: compiling 24 binds per file cost
    # more client time than the COPY of the file's chunks
    numbers = await session.execute(
        text(
            f"INSERT INTO knowledge_file_index ({', '.join(columns)}) "
            f"SELECT {', '.join(columns)} FROM "
            "jsonb_populate_recordset(NULL::knowledge_file_index, CAST(:rows AS jsonb)) "
            "ON CONFLICT (file_id) DO UPDATE SET "
            + ", ".join(f"{c} = EXCLUDED.{c}" for c in columns if c != "file_id")
            + ", updated_at = now() "
            # xmax = 0: the row was inserted, not updated (nothing of it to replace)
            "RETURNING file_id, file_no, xmax = 0"
        ),
        {"rows": json.dumps(rows, default=_json_value)},
    )
    file_nos: dict[str, int] = {}
    replaced: list[int] = []
    for file_id, no, inserted in numbers:
        file_nos[file_id] = int(no)
        if not inserted:
            replaced.append(int(no))
    await delete_file_chunks(session, replaced)
    await copy_chunks(session, [row for p in prepared for row in p.chunks], file_nos)
    if lookups:
        await write_lookups(session, list(file_nos.values()))
    return refused


async def consent_refusals(session: Any, prepared: list[PreparedFile]) -> dict[str, str]:
    """``{file_id: reason}`` of the prepared files whose consent no longer holds, read in the
    caller's transaction with the data-source and connection rows locked ``FOR SHARE``.

    A revoke locks the same rows ``FOR UPDATE`` and purges after that, so either the revoke
    committed first (this sees it and refuses) or it waits for this transaction and then
    purges what it wrote: revoke-then-write cannot leave data behind. Call it before the
    transaction touches any index row (a revoke holding its lock waits on those)."""
    source_ids = {p.row.get("data_source_id") for p in prepared} - {None}
    connection_ids = {p.row.get("connection_id") for p in prepared} - {None}
    if not source_ids and not connection_ids:
        return {}
    sources = {
        ds.id: ds
        for ds in (
            await session.execute(
                select(DataSource)
                .where(DataSource.id.in_(source_ids))
                .order_by(DataSource.id)
                .with_for_update(read=True)
            )
        ).scalars()
    }
    connection_ids |= {ds.connection_id for ds in sources.values()}
    enabled = dict(
        (
            await session.execute(
                select(UserConnection.id, UserConnection.knowledge_ingestion_enabled)
                .where(UserConnection.id.in_(connection_ids))
                .order_by(UserConnection.id)
                .with_for_update(read=True)
            )
        ).all()
    )
    siblings: dict[str, list[Any]] = {}
    if sources:
        for ds in (
            await session.execute(
                select(DataSource)
                .where(DataSource.connection_id.in_({d.connection_id for d in sources.values()}))
                .order_by(DataSource.id)
                .with_for_update(read=True)
            )
        ).scalars():
            siblings.setdefault(ds.connection_id, []).append(ds)
    refused: dict[str, str] = {}
    for p in prepared:
        reason = _refusal(p.row, sources, enabled, siblings)
        if reason:
            refused[p.row["file_id"]] = reason
    return refused


def _refusal(
    row: dict[str, Any],
    sources: dict[str, Any],
    enabled: dict[str, bool],
    siblings: dict[str, list[Any]],
) -> str | None:
    """Why consent refuses one file's write, or ``None``."""
    source_id = row.get("data_source_id")
    connection_id = row.get("connection_id")
    if source_id is not None:
        ds = sources.get(source_id)
        if ds is None:
            return f"data source {source_id} no longer exists"
        connection_id = ds.connection_id
    if connection_id is not None:
        if connection_id not in enabled:
            return f"connection {connection_id} no longer exists"
        if not enabled[connection_id]:
            return f"knowledge ingestion is switched off for connection {connection_id}"
    if source_id is not None:
        path = row.get("source_path") or sources[source_id].path
        tree = siblings.get(connection_id or "", [])  # no connection: no siblings
        if not effective_policy(tree, path, "rag_index_enabled").value:
            return f"RAG indexing is switched off for {path}"
    return None


async def build_lookups(session: Any, *, batch_files: int = 2000) -> int:
    """Write the lookup rows of every indexed file still waiting for them (after bulk
    loads wrote with ``lookups=False``); returns the number of files. Files another
    transaction is writing are skipped (their writer handles them)."""
    done = 0
    while True:
        file_nos = list(
            (
                await session.execute(
                    select(FileContentIndex.file_no)
                    .where(FileContentIndex.lookups_ready.is_(False))
                    .order_by(FileContentIndex.file_no)
                    .limit(batch_files)
                    .with_for_update(skip_locked=True)
                )
            ).scalars()
        )
        if not file_nos:
            return done
        await write_lookups(session, file_nos)
        await session.execute(
            update(FileContentIndex)
            .where(FileContentIndex.file_no.in_(file_nos))
            .values(lookups_ready=True)
        )
        done += len(file_nos)


def refused_result(prepared: PreparedFile, refused: dict[str, str]) -> IndexResult:
    """The file's result, failed with the reason when consent refused its write."""
    reason = refused.get(prepared.row["file_id"])
    if reason is None:
        return prepared.result
    return prepared.result.model_copy(
        update={"status": IndexStatus.FAILED, "error": f"not stored: {reason}"}
    )


def _json_value(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    raise TypeError(f"cannot store {type(value).__name__} in the file index")


def failure_row(row: dict[str, Any]) -> dict[str, Any]:
    """The identity columns of an index row (what a failure record keeps)."""
    keep = [
        "file_id",
        "name",
        "mime_type",
        "size",
        "content_hash",
        "scope",
        "owner_key",
        "user_id",
        "mandate_id",
        "feature_instance_id",
        "data_source_id",
        "connection_id",
        "source_path",
    ]
    return {k: row[k] for k in keep if k in row}


async def upsert_index(session: Any, row: dict[str, Any], *, keep_previous: bool = False) -> int:
    """Insert or replace the file's index row; returns its ``file_no``. ``keep_previous``
    updates only status and error of an existing row (its previous index stays valid)."""
    statement = insert(FileContentIndex).values(**row)
    if keep_previous:
        changes = {"status": statement.excluded.status, "error": statement.excluded.error}
    else:
        changes = {k: getattr(statement.excluded, k) for k in row if k != "file_id"}
    result = await session.execute(
        statement.on_conflict_do_update(index_elements=["file_id"], set_=changes).returning(
            FileContentIndex.file_no
        )
    )
    return int(result.scalar_one())


def index_row(
    file: FileItem,
    content: bytes,
    key: str,
    source_path: str | None,
    connection_id: str | None,
) -> dict[str, Any]:
    """The identity columns of the file's index row."""
    return {
        "file_id": file.id,
        "name": file.name,
        "mime_type": file.mime_type,
        "size": len(content),
        "content_hash": file.content_hash or hashlib.sha256(content).hexdigest(),
        "scope": str(file.scope),
        "owner_key": key,
        "user_id": file.user_id,
        "mandate_id": file.mandate_id,
        "feature_instance_id": file.feature_instance_id,
        "data_source_id": file.data_source_id,
        "connection_id": connection_id,
        "source_path": source_path,
    }


async def indexed_vectors(
    s: Any, key: str, model: str, hashes: list[str] | None
) -> dict[str, list[float]]:
    """``model``'s vectors already indexed in scope ``key`` (found through the lookup rows)
    by content hash: those of ``hashes``, or of one chunk at most when ``hashes`` is ``None``
    (whether the scope has any)."""
    query = (
        select(ChunkLookup.content_hash, cast(ContentChunk.embedding, Text))
        .join(ContentChunk, ContentChunk.id == ChunkLookup.chunk_id)
        .where(ChunkLookup.owner_key == key, ContentChunk.embedding_model == model)
    )
    if hashes is None:
        query = query.limit(1)
    else:
        query = query.where(ChunkLookup.content_hash.in_([bytes.fromhex(h) for h in hashes]))
    return {digest.hex(): json.loads(vector) for digest, vector in await s.execute(query)}
