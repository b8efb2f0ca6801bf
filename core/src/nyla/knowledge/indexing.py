"""Indexing one file: extract, neutralize at rest, chunk, dedupe, embed, write atomically.

Order matters for "a failure leaves nothing half-indexed": everything slow or fallible
(extraction, neutralization, embedding) happens before the write transaction; the transaction
then replaces the file's index row and all of its chunks at once (binary COPY). A failure
before it leaves the previous index of the file as it was and records the reason.

Lookup rows (full-text terms and the dedupe hash, :class:`~nyla.knowledge.tables.ChunkLookup`):
a single file gets them in the same transaction; a bulk load writes its batches without them
(``lookups=False``: the file is marked ``lookups_ready = false`` and is found by vector and
exact search meanwhile) and fills them for all its files in one pass at the end,
:func:`build_lookups`.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import Text, cast, select, text, update
from sqlalchemy.dialects.postgresql import insert

from nyla.errors import NylaError
from nyla.knowledge.chunking import Chunk, chunk_objects
from nyla.knowledge.extract import ExtractionError, extract
from nyla.knowledge.tables import (
    ChunkLookup,
    ContentChunk,
    DataSource,
    FileContentIndex,
    UserConnection,
)
from nyla.knowledge.vectors import (
    MAX_CHUNKS_PER_FILE,
    ChunkRow,
    copy_chunks,
    delete_file_chunks,
    owner_key,
    write_lookups,
)
from nyla.models.agent import RunContext
from nyla.models.files import FileItem
from nyla.models.knowledge import ContentObject, ExtractedDocument, IndexResult, IndexStatus

if TYPE_CHECKING:
    from nyla.knowledge.service import KnowledgeService

log = logging.getLogger(__name__)


class ConsentError(NylaError):
    """Indexing was refused: the data source or connection does not allow it."""


@dataclass
class PreparedFile:
    """A file ready to write: its index row, its chunk rows and the result to report."""

    row: dict[str, Any]
    chunks: list[ChunkRow]
    result: IndexResult
    dims: int = 0


#: (owner key, model, content hash) -> vector, shared by the files of one batch
Memo = dict[tuple[str, str, str], list[float]]


class Indexer:
    """Indexes files for a :class:`KnowledgeService`: :meth:`prepare` does everything slow
    or fallible, :meth:`write` stores prepared files in one transaction."""

    def __init__(self, service: KnowledgeService) -> None:
        self.service = service

    async def index_file(
        self,
        file: FileItem,
        content: bytes,
        *,
        context: RunContext,
        source_path: str | None = None,
        connection_id: str | None = None,
        build_index: bool = True,
    ) -> IndexResult:
        """Index ``file`` (its bytes in ``content``). Scope and owner ids come from the
        FileItem. Returns the result; a failure is a result with ``status=failed`` and the
        reason, never an exception (the rest of a batch goes on)."""
        prepared = await self.prepare(
            file, content, context=context, source_path=source_path, connection_id=connection_id
        )
        if isinstance(prepared, IndexResult):
            return prepared
        results = await self.write([prepared])
        if build_index and prepared.dims and results[0].status == IndexStatus.INDEXED:
            await self.service.ensure_vector_index(
                prepared.result.embedding_model or "", prepared.dims
            )
        return results[0]

    async def prepare(
        self,
        file: FileItem,
        content: bytes,
        *,
        context: RunContext,
        source_path: str | None = None,
        connection_id: str | None = None,
        memo: Memo | None = None,
    ) -> PreparedFile | IndexResult:
        """Extract, neutralize (when asked), chunk, dedupe and embed one file; returns the
        prepared rows, or a failed :class:`IndexResult` (its failure already recorded)."""
        service = self.service
        base = {"file_id": file.id, "name": file.name, "bytes": len(content)}
        try:
            key = owner_key(
                file.scope,
                user_id=file.user_id,
                mandate_id=file.mandate_id,
                feature_instance_id=file.feature_instance_id,
            )
            source_path, connection_id = await self._provenance(file, source_path, connection_id)
        except (ValueError, ConsentError) as exc:
            return IndexResult(**base, status=IndexStatus.FAILED, error=str(exc))

        row = {
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

        try:
            document = await asyncio.to_thread(extract, file.name, content, file.mime_type)
        except ExtractionError as exc:
            await self._record_failure(row, str(exc), drop_chunks=True)
            return IndexResult(**base, status=IndexStatus.FAILED, error=str(exc))

        neutralized = False
        if file.neutralize:
            try:
                document = self._neutralize(document, context)
                neutralized = True
            except Exception as exc:
                reason = f"neutralization failed, nothing stored: {exc}"
                await self._record_failure(row, reason, neutralization="failed")
                return IndexResult(**base, status=IndexStatus.FAILED, error=reason)

        chunks = chunk_objects(
            document.objects, service.settings.chunk_tokens, service.settings.overlap_tokens
        )
        if len(chunks) > MAX_CHUNKS_PER_FILE:
            reason = f"{len(chunks)} chunks, more than the {MAX_CHUNKS_PER_FILE} a file may have"
            await self._record_failure(row, reason)
            return IndexResult(**base, status=IndexStatus.FAILED, error=reason)
        try:
            spec = service.embedding_spec(context)
            vectors, reused, embedded, cost = await self._vectors(
                chunks, key, spec.id, context, memo if memo is not None else {}
            )
        except Exception as exc:
            reason = f"embedding failed: {type(exc).__name__}: {exc}"
            await self._record_failure(row, reason)
            return IndexResult(**base, status=IndexStatus.FAILED, error=reason)

        dims = len(vectors[0]) if vectors else (spec.capabilities.embedding_dimensions or 0)
        row.update(
            structure=document.structure,
            object_summary=document.summary,
            status=IndexStatus.INDEXED.value,
            error=None,
            is_neutralized=neutralized,
            neutralization_status="neutralized" if neutralized else "none",
            embedding_model=spec.id,
            chunk_count=len(chunks),
            token_count=sum(c.token_count for c in chunks),
            indexed_at=datetime.now(UTC),
        )
        rows = [
            ChunkRow(
                file.id,
                c.seq,
                c.text,
                c.context_ref,
                c.content_type,
                c.token_count,
                c.content_hash,
                key,
                spec.id,
                v,
            )
            for c, v in zip(chunks, vectors, strict=True)
        ]
        result = IndexResult(
            **base,
            status=IndexStatus.INDEXED,
            chunks=len(chunks),
            embedded=embedded,
            reused=reused,
            tokens=row["token_count"],
            embedding_model=spec.id,
            cost_chf=cost,
            is_neutralized=neutralized,
        )
        return PreparedFile(row=row, chunks=rows, result=result, dims=dims)

    async def write(
        self, prepared: list[PreparedFile], *, lookups: bool = True
    ) -> list[IndexResult]:
        """Store prepared files in ONE transaction: their index rows upserted, their old
        chunks deleted and all new chunks written with one binary COPY (their lookup rows too
        unless ``lookups=False``, see :func:`build_lookups`). If that transaction fails,
        each file is retried in its own transaction, so one bad file fails alone and never
        leaves anything half-written."""
        if not prepared:
            return []
        try:
            async with self.service.kernel.db.session() as s:
                refused = await write_prepared(s, prepared, lookups=lookups)
            return [_refused_result(p, refused) for p in prepared]
        except Exception as exc:
            if len(prepared) > 1:
                log.warning("batch write failed (%s); writing file by file", exc)
                return [r for p in prepared for r in await self.write([p], lookups=lookups)]
            reason = f"write failed, nothing stored: {type(exc).__name__}: {exc}"
            log.warning("%s: %s", prepared[0].row["file_id"], reason)
            await self._record_failure(_failure_row(prepared[0].row), reason)
            return [
                prepared[0].result.model_copy(
                    update={"status": IndexStatus.FAILED, "error": reason}
                )
            ]

    async def _provenance(
        self, file: FileItem, source_path: str | None, connection_id: str | None
    ) -> tuple[str | None, str | None]:
        """Source path and connection of a file from a data source; refuses a file whose
        data source or connection has indexing switched off."""
        from nyla.knowledge.policy import effective_policy

        if not file.data_source_id:
            if connection_id is not None:
                async with self.service.kernel.db.session() as s:
                    conn = await s.get(UserConnection, connection_id)
                if conn is None or not conn.knowledge_ingestion_enabled:
                    raise ConsentError(
                        f"knowledge ingestion is not allowed for connection {connection_id}"
                    )
            return source_path, connection_id
        async with self.service.kernel.db.session() as s:
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

    def _neutralize(self, document: ExtractedDocument, context: RunContext) -> ExtractedDocument:
        """The document with personal data replaced (data at rest). Required: a failing or
        missing neutralizer raises, so raw data is never stored for a ``neutralize`` file."""
        ai = self.service.kernel.ai
        strict = context.model_copy(update={"require_neutralization": True})
        session = None
        objects = []
        for obj in document.objects:
            text, session = ai.neutralize_text(obj.text, context=strict, session=session)
            objects.append(ContentObject(**{**obj.model_dump(), "text": text}))
        structure_text, session = ai.neutralize_text(
            json.dumps(document.structure, ensure_ascii=False), context=strict, session=session
        )
        try:
            structure = json.loads(structure_text)
        except json.JSONDecodeError:
            structure = {}
        summary, _ = ai.neutralize_text(document.summary, context=strict, session=session)
        return ExtractedDocument(
            kind=document.kind, objects=objects, structure=structure, summary=summary
        )

    async def _vectors(
        self, chunks: list[Chunk], key: str, model: str, context: RunContext, memo: Memo
    ) -> tuple[list[list[float]], int, int, float]:
        """A vector per chunk: reused when the same content is already indexed in the same
        scope with the same model, embedded (in batches, once per distinct text) otherwise.
        Indexed content is found through the lookup rows and ``memo`` (this batch's files);
        a chunk still waiting for another bulk load's lookup pass is embedded again.
        Returns (vectors, reused, embedded, cost CHF)."""
        if not chunks:
            return [], 0, 0, 0.0
        known: dict[str, list[float]] = {
            c.content_hash: memo[(key, model, c.content_hash)]
            for c in chunks
            if (key, model, c.content_hash) in memo
        }
        hashes = sorted({c.content_hash for c in chunks} - set(known))
        async with self.service.kernel.db.session() as s:
            found = await s.execute(
                select(ChunkLookup.content_hash, cast(ContentChunk.embedding, Text))
                .join(ContentChunk, ContentChunk.id == ChunkLookup.chunk_id)
                .where(
                    ChunkLookup.owner_key == key,
                    ChunkLookup.content_hash.in_([bytes.fromhex(h) for h in hashes]),
                    ContentChunk.embedding_model == model,
                )
            )
            for digest, vector_text in found:
                content_hash = digest.hex()
                if content_hash not in known:
                    known[content_hash] = json.loads(vector_text)
        missing: dict[str, str] = {}
        for c in chunks:
            if c.content_hash not in known:
                missing.setdefault(c.content_hash, c.text)
        cost = 0.0
        batch = self.service.settings.embed_batch
        items = list(missing.items())
        for start in range(0, len(items), batch):
            part = items[start : start + batch]
            response = await self.service.kernel.ai.embed(
                [t for _, t in part], context=context, model=model
            )
            if response.model != model:
                raise NylaError(f"asked for {model} embeddings, got {response.model}")
            cost += float(getattr(response, "cost_chf", 0.0) or 0.0)
            for (content_hash, _), vector in zip(part, response.vectors, strict=True):
                known[content_hash] = list(vector)
        for content_hash, vector in known.items():
            memo[(key, model, content_hash)] = vector
        dims = {len(v) for v in known.values()}
        if len(dims) > 1:
            raise NylaError(f"{model} returned vectors of different dimensions: {sorted(dims)}")
        vectors = [known[c.content_hash] for c in chunks]
        reused = sum(1 for c in chunks if c.content_hash not in missing)
        return vectors, reused, len(missing), cost

    async def _record_failure(
        self,
        row: dict[str, Any],
        reason: str,
        *,
        drop_chunks: bool = False,
        neutralization: str | None = None,
    ) -> None:
        """Mark a file failed with ``reason``. Its previous chunks stay searchable unless
        ``drop_chunks`` (the file itself became unreadable)."""
        failed = {
            **row,
            "status": IndexStatus.FAILED.value,
            "error": reason,
            "structure": {},
            "object_summary": "",
        }
        if neutralization:
            failed["neutralization_status"] = neutralization
        try:
            async with self.service.kernel.db.session() as s:
                if drop_chunks:
                    failed["chunk_count"] = 0
                file_no = await _upsert_index(s, failed, keep_previous=not drop_chunks)
                if drop_chunks:
                    await delete_file_chunks(s, [file_no])
        except Exception:
            log.exception("could not record the failure of %s", row["file_id"])


class BatchWriter:
    """Writes prepared files in the background, in transactions of about ``batch_rows``
    chunks (or ``max_files`` files), one transaction in flight: the caller prepares (reads,
    extracts, embeds) the next batch while the database stores the last. ``on_written``
    receives ``(tag, prepared, result)`` triples in the order the files were added."""

    def __init__(
        self,
        indexer: Indexer,
        *,
        batch_rows: int,
        on_written: Callable[[list[tuple[Any, PreparedFile, IndexResult]]], None],
        max_files: int = 200,
        lookups: bool = False,
    ) -> None:
        self.indexer = indexer
        self.batch_rows = batch_rows
        self.max_files = max_files
        self.lookups = lookups
        self.on_written = on_written
        self._pending: list[tuple[Any, PreparedFile]] = []
        self._rows = 0
        self._task: asyncio.Task[None] | None = None

    async def add(self, prepared: PreparedFile, tag: Any = None) -> None:
        """Queue a file; starts a write once a batch is full (after the previous one)."""
        self._pending.append((tag, prepared))
        self._rows += len(prepared.chunks)
        if self._rows >= self.batch_rows or len(self._pending) >= self.max_files:
            await self._start()

    async def flush(self) -> None:
        """Write what is queued and wait until every write has finished."""
        await self._start()
        await self._wait()

    def cancel(self) -> None:
        """Abandon the write in flight (its transaction rolls back: nothing half-written)."""
        if self._task is not None and not self._task.done():
            self._task.cancel()

    async def _start(self) -> None:
        batch, self._pending, self._rows = self._pending, [], 0
        await self._wait()
        if batch:
            self._task = asyncio.create_task(self._write(batch))

    async def _wait(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            await task

    async def _write(self, batch: list[tuple[Any, PreparedFile]]) -> None:
        results = await self.indexer.write([p for _, p in batch], lookups=self.lookups)
        self.on_written([(tag, p, r) for (tag, p), r in zip(batch, results, strict=True)])


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
        from nyla.knowledge.consent import purge_files

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
    from nyla.knowledge.policy import effective_policy

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
        if not effective_policy(siblings.get(connection_id, []), path, "rag_index_enabled").value:
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


def _refused_result(prepared: PreparedFile, refused: dict[str, str]) -> IndexResult:
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


def _failure_row(row: dict[str, Any]) -> dict[str, Any]:
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


async def _upsert_index(session: Any, row: dict[str, Any], *, keep_previous: bool = False) -> int:
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
