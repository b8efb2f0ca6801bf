"""Indexing one file: extract, neutralize at rest, chunk, dedupe, embed, write atomically.

Order matters for "a failure leaves nothing half-indexed": everything slow or fallible
(extraction, neutralization, embedding) happens before the write transaction; the transaction
then replaces the file's index row and all of its chunks at once (binary COPY, see
:mod:`nyla.knowledge.writing`). A failure before it leaves the previous index of the file as
it was and records the reason.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from array import array
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from nyla.cpu import off_loop
from nyla.db import Database
from nyla.errors import ExtractionError, NylaError
from nyla.knowledge.batch_writer import BatchWriter
from nyla.knowledge.chunking import Chunk, chunk_objects, title_text
from nyla.knowledge.extract import detect_kind, extract
from nyla.knowledge.precomputed import PrecomputedEmbeddings
from nyla.knowledge.provenance import ConsentError, provenance
from nyla.knowledge.settings import KnowledgeSettings
from nyla.knowledge.vector_memo import Memo, Vectors, remember
from nyla.knowledge.vectors import MAX_CHUNKS_PER_FILE, ChunkRow, delete_file_chunks, owner_key
from nyla.knowledge.writing import (
    PreparedFile,
    build_lookups,
    consent_refusals,
    failure_row,
    index_row,
    indexed_vectors,
    refused_result,
    upsert_index,
    write_prepared,
)
from nyla.models.agent import RunContext
from nyla.models.ai import ModelSpec
from nyla.models.files import FileItem
from nyla.models.knowledge import ContentObject, ExtractedDocument, IndexResult, IndexStatus

if TYPE_CHECKING:
    from nyla.ai.service import AiService

__all__ = [
    "BatchWriter",
    "ConsentError",
    "Indexer",
    "Memo",
    "PrecomputedEmbeddings",
    "PreparedFile",
    "build_lookups",
    "consent_refusals",
    "write_prepared",
]

log = logging.getLogger(__name__)


#: a text file up to this size is extracted on the event loop: handing it to a worker thread
#: costs more than reading it (PDF, DOCX, HTML and larger files always go to a thread)
INLINE_EXTRACT_BYTES = 64 * 1024


def _chars(document: ExtractedDocument) -> int:
    """The text a document's chunking or neutralization reads."""
    return sum(len(o.text) for o in document.objects)


def _chunk_rows(
    file_id: str, chunks: list[Chunk], vectors: list[Any], key: str, model: str
) -> list[ChunkRow]:
    """The rows a file's chunks are written as, each with its vector."""
    return [
        ChunkRow(
            file_id,
            c.seq,
            c.text,
            c.context_ref,
            c.content_type,
            c.token_count,
            c.content_hash,
            key,
            model,
            v,
            c.language,
        )
        for c, v in zip(chunks, vectors, strict=True)
    ]


#: a step of :meth:`Indexer.prepare` by name (``extract``, ``embed``), e.g. under a timeout
Phase = Callable[[str], AbstractAsyncContextManager[Any]]


def _no_phase(name: str) -> AbstractAsyncContextManager[Any]:
    return contextlib.nullcontext()


class _Failed(Exception):
    """A preparation step failed; ``reason`` is recorded on the file."""

    def __init__(self, reason: str, **record: Any) -> None:
        super().__init__(reason)
        self.reason = reason
        self.record = record


class Indexer:
    """Indexes files: :meth:`prepare` does everything slow or fallible, :meth:`write` stores
    prepared files in one transaction.

    It is given only what it needs: the database, the AI service (embedding and
    neutralization), the knowledge settings, the embedding model choice and the hook that
    builds a model's vector index after a write."""

    def __init__(
        self,
        *,
        db: Database,
        ai: AiService,
        settings: KnowledgeSettings,
        embedding_spec: Callable[[RunContext | None], ModelSpec],
        ensure_vector_index: Callable[[str, int], Awaitable[None]],
    ) -> None:
        self.db = db
        self.ai = ai
        self.settings = settings
        self.embedding_spec = embedding_spec
        self.ensure_vector_index = ensure_vector_index

    async def index_file(
        self,
        file: FileItem,
        content: bytes,
        *,
        context: RunContext,
        source_path: str | None = None,
        connection_id: str | None = None,
        build_index: bool = True,
        embeddings: PrecomputedEmbeddings | None = None,
    ) -> IndexResult:
        """Index ``file`` (its bytes in ``content``). Scope and owner ids come from the
        FileItem. Returns the result; a failure is a result with ``status=failed`` and the
        reason, never an exception (the rest of a batch goes on)."""
        prepared = await self.prepare(
            file,
            content,
            context=context,
            source_path=source_path,
            connection_id=connection_id,
            embeddings=embeddings,
        )
        if isinstance(prepared, IndexResult):
            return prepared
        results = await self.write([prepared])
        if build_index and prepared.dims and results[0].status == IndexStatus.INDEXED:
            await self.ensure_vector_index(prepared.result.embedding_model or "", prepared.dims)
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
        embeddings: PrecomputedEmbeddings | None = None,
        phase: Phase | None = None,
        consent_checked: bool = False,
    ) -> PreparedFile | IndexResult:
        """Extract, neutralize (when asked), chunk, dedupe and embed one file (chunks found
        in ``embeddings`` are not embedded); returns the prepared rows, or a failed
        :class:`IndexResult` (its failure already recorded). ``phase("extract")`` and
        ``phase("embed")`` wrap the two steps (a walker's per-item timeouts).
        ``consent_checked``: the caller (a sync, which holds the rows) checked the file's
        consent and gives its source path and connection; they are not read again."""
        phase = phase or _no_phase
        base: dict[str, Any] = {"file_id": file.id, "name": file.name, "bytes": len(content)}
        try:
            key = owner_key(
                file.scope,
                user_id=file.user_id,
                mandate_id=file.mandate_id,
                feature_instance_id=file.feature_instance_id,
            )
            if not consent_checked:
                source_path, connection_id = await provenance(
                    self.db, file, source_path, connection_id
                )
        except (ValueError, ConsentError) as exc:
            return IndexResult(**base, status=IndexStatus.FAILED, error=str(exc))
        row = index_row(file, content, key, source_path, connection_id)
        try:
            async with phase("extract"):
                document, neutralized = await self._document(file, content, context)
                chunks = await off_loop(_chars(document), self._chunks, document, file.name)
            async with phase("embed"):
                model, dims, (vectors, reused, embedded, cost) = await self._embed(
                    chunks, key, context, memo, embeddings
                )
        except _Failed as failed:
            await self._record_failure(row, failed.reason, **failed.record)
            return IndexResult(**base, status=IndexStatus.FAILED, error=failed.reason)
        dims = len(vectors[0]) if vectors else dims
        row.update(
            structure=document.structure,
            object_summary=document.summary,
            status=IndexStatus.INDEXED.value,
            error=None,
            is_neutralized=neutralized,
            neutralization_status="neutralized" if neutralized else "none",
            embedding_model=model,
            chunk_count=len(chunks),
            token_count=sum(c.token_count for c in chunks),
            indexed_at=datetime.now(UTC),
        )
        rows = _chunk_rows(file.id, chunks, vectors, key, model)
        result = IndexResult(
            **base,
            status=IndexStatus.INDEXED,
            chunks=len(chunks),
            embedded=embedded,
            reused=reused,
            tokens=row["token_count"],
            embedding_model=model,
            cost_chf=cost,
            is_neutralized=neutralized,
        )
        return PreparedFile(row=row, chunks=rows, result=result, dims=dims)

    async def _document(
        self, file: FileItem, content: bytes, context: RunContext
    ) -> tuple[ExtractedDocument, bool]:
        """The extracted document, neutralized when the file asks for it."""
        try:
            if len(content) <= INLINE_EXTRACT_BYTES and detect_kind(file.name, file.mime_type) in (
                "text",
                "markdown",
                "csv",
                "json",
            ):
                document = extract(file.name, content, file.mime_type)
            else:
                document = await asyncio.to_thread(extract, file.name, content, file.mime_type)
        except ExtractionError as exc:
            raise _Failed(str(exc), drop_chunks=True) from exc
        if not file.neutralize:
            return document, False
        try:
            return await off_loop(_chars(document), self._neutralize, document, context), True
        except Exception as exc:
            raise _Failed(
                f"neutralization failed, nothing stored: {exc}", neutralization="failed"
            ) from exc

    def _chunks(self, document: ExtractedDocument, name: str = "") -> list[Chunk]:
        chunks = chunk_objects(
            document.objects,
            self.settings.chunk_tokens,
            self.settings.overlap_tokens,
            title=title_text(name, document.structure),
        )
        if len(chunks) > MAX_CHUNKS_PER_FILE:
            raise _Failed(
                f"{len(chunks)} chunks, more than the {MAX_CHUNKS_PER_FILE} a file may have"
            )
        return chunks

    async def _embed(
        self,
        chunks: list[Chunk],
        key: str,
        context: RunContext,
        memo: Memo | None,
        embeddings: PrecomputedEmbeddings | None,
    ) -> tuple[str, int, tuple[list[Sequence[float]], int, int, float]]:
        """The embedding model, its dimensions and (vectors, reused, embedded, cost CHF) of
        the chunks; precomputed vectors count as reused."""
        memo = memo if memo is not None else {}
        try:
            if embeddings is not None:
                model, dims = embeddings.model, embeddings.dims
                for c in chunks:
                    vector = embeddings.get(c.content_hash)
                    if vector is not None:
                        remember(memo, (key, model, c.content_hash), vector)
            else:
                spec = self.embedding_spec(context)
                model, dims = spec.id, spec.capabilities.embedding_dimensions or 0
            return model, dims, await self._vectors(chunks, key, model, context, memo)
        except Exception as exc:
            raise _Failed(f"embedding failed: {type(exc).__name__}: {exc}") from exc

    async def write(
        self, prepared: list[PreparedFile], *, lookups: bool = True
    ) -> list[IndexResult]:
        """Store prepared files in ONE transaction: their index rows upserted, their old
        chunks deleted and all new chunks written with one binary COPY (their lookup rows too
        unless ``lookups=False``, see :func:`~nyla.knowledge.writing.build_lookups`). If that
        transaction fails, each file is retried in its own transaction, so one bad file fails
        alone and never leaves anything half-written."""
        if not prepared:
            return []
        try:
            async with self.db.session() as s:
                refused = await write_prepared(s, prepared, lookups=lookups)
            return [refused_result(p, refused) for p in prepared]
        except Exception as exc:
            if len(prepared) > 1:
                log.warning("batch write failed (%s); writing file by file", exc)
                return [r for p in prepared for r in await self.write([p], lookups=lookups)]
            reason = f"write failed, nothing stored: {type(exc).__name__}: {exc}"
            log.warning("%s: %s", prepared[0].row["file_id"], reason)
            await self._record_failure(failure_row(prepared[0].row), reason)
            return [
                prepared[0].result.model_copy(
                    update={"status": IndexStatus.FAILED, "error": reason}
                )
            ]

    def _neutralize(self, document: ExtractedDocument, context: RunContext) -> ExtractedDocument:
        """The document with personal data replaced (data at rest). Required: a failing or
        missing neutralizer raises, so raw data is never stored for a ``neutralize`` file."""
        strict = context.model_copy(update={"require_neutralization": True})
        session = None
        objects = []
        for obj in document.objects:
            text, session = self.ai.neutralize_text(obj.text, context=strict, session=session)
            objects.append(ContentObject(**{**obj.model_dump(), "text": text}))
        structure_text, session = self.ai.neutralize_text(
            json.dumps(document.structure, ensure_ascii=False), context=strict, session=session
        )
        try:
            structure = json.loads(structure_text)
        except json.JSONDecodeError:
            structure = {}
        summary, _ = self.ai.neutralize_text(document.summary, context=strict, session=session)
        return ExtractedDocument(
            kind=document.kind, objects=objects, structure=structure, summary=summary
        )

    async def _vectors(
        self, chunks: list[Chunk], key: str, model: str, context: RunContext, memo: Memo
    ) -> tuple[list[Sequence[float]], int, int, float]:
        """A vector per chunk: reused when the same content is already indexed in the same
        scope with the same model, embedded (in batches, once per distinct text) otherwise.
        Indexed content is found through the lookup rows and ``memo`` (this batch's files);
        a chunk still waiting for another bulk load's lookup pass is embedded again.
        Returns (vectors, reused, embedded, cost CHF)."""
        if not chunks:
            return [], 0, 0, 0.0
        known: Vectors = {
            c.content_hash: memo[(key, model, c.content_hash)]
            for c in chunks
            if (key, model, c.content_hash) in memo
        }
        await self._indexed_vectors(known, {c.content_hash for c in chunks}, key, model, memo)
        missing: dict[str, str] = {}
        for c in chunks:
            if c.content_hash not in known:
                missing.setdefault(c.content_hash, c.text)
        cost = await self._embed_missing(known, missing, model, context)
        for content_hash, vector in known.items():
            remember(memo, (key, model, content_hash), vector)
        dims = {len(v) for v in known.values()}
        if len(dims) > 1:
            raise NylaError(f"{model} returned vectors of different dimensions: {sorted(dims)}")
        vectors = [known[c.content_hash] for c in chunks]
        reused = sum(1 for c in chunks if c.content_hash not in missing)
        return vectors, reused, len(missing), cost

    async def _indexed_vectors(
        self, known: Vectors, hashes: set[str], key: str, model: str, memo: Memo
    ) -> None:
        """Add to ``known`` the vectors already indexed for ``hashes`` in the same scope. A
        scope with no indexed vector of ``model`` is noted in ``memo`` after one look, so a
        first bulk load (its own lookup rows come after the batch) asks once, not per file."""
        wanted = sorted(hashes - set(known))
        if not wanted or (key, model, "") in memo:
            return
        async with self.db.session() as s:
            if (key, model, "*") not in memo:
                any_indexed = await indexed_vectors(s, key, model, None)
                memo[(key, model, "*" if any_indexed else "")] = []
                if not any_indexed:
                    return
            for content_hash, vector in (await indexed_vectors(s, key, model, wanted)).items():
                known.setdefault(content_hash, vector)

    async def _embed_missing(
        self, known: Vectors, missing: dict[str, str], model: str, context: RunContext
    ) -> float:
        """Embed the ``missing`` texts (in batches) into ``known``; returns the cost CHF."""
        cost = 0.0
        batch = self.settings.embed_batch
        items = list(missing.items())
        for start in range(0, len(items), batch):
            part = items[start : start + batch]
            response = await self.ai.embed([t for _, t in part], context=context, model=model)
            if response.model != model:
                raise NylaError(f"asked for {model} embeddings, got {response.model}")
            cost += float(getattr(response, "cost_chf", 0.0) or 0.0)
            for (content_hash, _), vector in zip(part, response.vectors, strict=True):
                # float4, as stored: an eighth of a list of Python floats while it waits
                known[content_hash] = array("f", vector)
        return cost

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
            async with self.db.session() as s:
                if drop_chunks:
                    failed["chunk_count"] = 0
                file_no = await upsert_index(s, failed, keep_previous=not drop_chunks)
                if drop_chunks:
                    await delete_file_chunks(s, [file_no])
        except Exception:
            log.exception("could not record the failure of %s", row["file_id"])
