"""Indexing entry points of the knowledge store (part of
:class:`~nyla.knowledge.service.KnowledgeService`): one file, a batch, local paths, a walker's
download. The work itself is done by :class:`~nyla.knowledge.indexing.Indexer`."""

from __future__ import annotations

import hashlib
import mimetypes
import os
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from sqlalchemy import select

from nyla.db import Database
from nyla.knowledge.batch_writer import BatchWriter
from nyla.knowledge.consent import NotFoundError
from nyla.knowledge.extract import MIME_BY_KIND, detect_kind
from nyla.knowledge.indexing import Indexer, Memo
from nyla.knowledge.local_paths import count_paths, iter_paths
from nyla.knowledge.policy import effective_policy, normalize_path
from nyla.knowledge.precomputed import PrecomputedEmbeddings
from nyla.knowledge.settings import KnowledgeSettings
from nyla.knowledge.vector_index import VectorIndexes
from nyla.knowledge.writing import PreparedFile, build_lookups
from nyla.models.agent import RunContext
from nyla.models.datasource import DownloadedFile
from nyla.models.files import FileItem, Scope
from nyla.models.knowledge import IndexResult, IndexStatus
from nyla.tables.knowledge import DataSource
from nyla.text import clean_text

ProgressFn = Callable[[IndexResult, int, int], Any]

#: a batch that wrote at least this many chunks refreshes the planner statistics
ANALYZE_AFTER_ROWS = 1000

#: seconds between two progress writes (and cancellation checks) of a batch job
JOB_UPDATE_S = 0.5


class Ingestion:
    """Indexing entry points; each file is prepared and written by ``indexer``, and a bulk
    load ends with the lookup rows, the vector index and fresh statistics (``indexes``)."""

    def __init__(
        self,
        db: Database,
        settings: KnowledgeSettings,
        indexer: Indexer,
        indexes: VectorIndexes,
    ) -> None:
        self.db = db
        self.settings = settings
        self.indexer = indexer
        self.indexes = indexes

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
        """Index one file (scope from the FileItem; neutralized at rest when
        ``file.neutralize``). Failures come back as ``status=failed`` with the reason.
        ``build_index=False`` defers the HNSW index (bulk loads build it once at the end);
        ``embeddings`` supplies vectors the caller already has (see
        :class:`~nyla.knowledge.precomputed.PrecomputedEmbeddings`)."""
        return await self.indexer.index_file(
            file,
            content,
            context=context,
            source_path=source_path,
            connection_id=connection_id,
            build_index=build_index,
            embeddings=embeddings,
        )

    async def index_files(
        self,
        items: Iterable[tuple[FileItem, bytes | Path]],
        *,
        context: RunContext,
        progress: ProgressFn | None = None,
        total: int | None = None,
        job_kind: str | None = None,
        embeddings: PrecomputedEmbeddings | None = None,
        keep_results: bool = True,
    ) -> list[IndexResult]:
        """Index a batch (contents as bytes, or paths read one at a time); one file's failure
        does not stop the rest. Prepared files are written together in the background while
        the next ones are prepared, one transaction per ``write_batch_rows`` chunks (see
        :class:`~nyla.knowledge.batch_writer.BatchWriter`); the lookup rows (full text,
        dedupe) and the HNSW index are built once after the batch (the chunks are found by
        vector meanwhile), so every result returned is searchable by every path. With
        ``job_kind`` the batch is recorded as a job (shown in the inventory) and stops early
        when that job is cancelled. ``embeddings`` supplies vectors the caller already has
        (see :class:`~nyla.knowledge.precomputed.PrecomputedEmbeddings`).
        ``keep_results=False``: each result goes only to ``progress`` and none is returned,
        so the batch's memory does not grow with its files (given ``items`` as an iterator
        and ``total``)."""
        items = list(items) if total is None else items
        total = len(items) if total is None else total  # type: ignore[arg-type]
        job = await _BatchJob.start(self.db, job_kind, context, total)
        run = _BatchRun(total, progress, keep=keep_results)
        writer = BatchWriter(
            self.indexer.write, batch_rows=self.settings.write_batch_rows, on_written=run.written
        )
        error: str | None = None
        try:
            memo: Memo = {}
            for file, content in items:
                data = _read(file, content)
                prepared = (
                    data
                    if isinstance(data, IndexResult)
                    else await self.indexer.prepare(
                        file, data, context=context, memo=memo, embeddings=embeddings
                    )
                )
                if isinstance(prepared, IndexResult):
                    run.add(prepared)
                else:
                    await writer.add(prepared, run.add(None))
                if await job.progress(run.count, total, file.name):
                    break
            await writer.flush()
            await self._make_searchable(run)
        except BaseException as exc:
            writer.cancel()
            error = f"{type(exc).__name__}: {exc}"
            raise
        finally:
            await job.finish(error)
        return run.finished()

    async def _make_searchable(self, run: _BatchRun) -> None:
        """After a bulk load: the lookup rows, each model's HNSW index, fresh statistics."""
        await self.build_lookups()
        for model, dims in run.models.items():
            await self.indexes.ensure_vector_index(model, dims)
        if run.written_chunks() >= ANALYZE_AFTER_ROWS:
            await self.indexes.analyze()

    async def build_lookups(self) -> int:
        """Write the lookup rows (full-text terms, dedupe hashes) of files a bulk load left
        waiting (``index_files`` does
        this before it returns; an interrupted one leaves them to the next call). Returns
        the number of files."""
        async with self.db.session() as s:
            return await build_lookups(s)

    async def index_paths(
        self,
        paths: Iterable[str | Path],
        *,
        context: RunContext,
        scope: Scope | str = Scope.PERSONAL,
        neutralize: bool = False,
        progress: ProgressFn | None = None,
        embeddings: PrecomputedEmbeddings | None = None,
        keep_results: bool = True,
    ) -> list[IndexResult]:
        """Index local files (directories recursively, supported types only), building
        FileItems owned by the context's user/mandate/feature instance. Recorded as a job.
        This is what ``nyla knowledge index`` calls; ``embeddings`` and ``keep_results`` as
        in :meth:`index_files`."""
        # the files are found as they are indexed (a first walk only counts them): a run's
        # memory does not grow with its files (see nyla.knowledge.local_paths)
        roots = list(paths)
        total = count_paths(roots)
        items = (
            (file_item_for_path(p, context=context, scope=scope, neutralize=neutralize), p)
            for p in iter_paths(roots)
        )
        return await self.index_files(
            items,
            context=context,
            progress=progress,
            total=total,
            job_kind="index",
            embeddings=embeddings,
            keep_results=keep_results,
        )

    async def ingest(
        self,
        downloaded: DownloadedFile,
        *,
        data_source_id: str,
        entry_id: str,
        context: RunContext,
        entry_path: str | None = None,
    ) -> IndexResult:
        """Index a file a walker downloaded from a data source: ``neutralize`` and ``scope``
        are inherited along the tree (policy resolver); refused when indexing is off."""
        async with self.db.session() as s:
            ds = await s.get(DataSource, data_source_id)
            if ds is None:
                raise NotFoundError(f"no data source {data_source_id}")
            siblings = list(
                (
                    await s.execute(
                        select(DataSource).where(DataSource.connection_id == ds.connection_id)
                    )
                ).scalars()
            )
        path = normalize_path(entry_path or f"{ds.path}/{downloaded.name}")
        scope = Scope(effective_policy(siblings, path, "scope").value)
        file = FileItem(
            id=f"{ds.connection_id}:{entry_id}",
            name=downloaded.name,
            mime_type=downloaded.mime_type,
            size=len(downloaded.content),
            content_hash=hashlib.sha256(downloaded.content).hexdigest(),
            scope=scope,
            user_id=ds.user_id,
            mandate_id=ds.mandate_id,
            feature_instance_id=ds.feature_instance_id,
            neutralize=bool(effective_policy(siblings, path, "neutralize").value),
            data_source_id=data_source_id,
        )
        result = await self.index_file(
            file,
            downloaded.content,
            context=context,
            source_path=path,
            connection_id=ds.connection_id,
        )
        if result.status == "indexed":
            async with self.db.session() as s:
                source = await s.get(DataSource, data_source_id)
                if source is not None:
                    source.last_indexed = time.time()
        return result


class _BatchRun:
    """The results of one batch in input order, reported to ``progress`` as they complete;
    kept for the caller unless ``keep`` is false (then a run holds only the files still
    being written, whatever its size)."""

    def __init__(self, total: int, progress: ProgressFn | None, *, keep: bool = True) -> None:
        self.total = total
        self.progress = progress
        self.keep = keep
        self.kept: list[IndexResult] = []
        self.pending: list[IndexResult | None] = []  # slots from ``done`` on
        self.models: dict[str, int] = {}
        self.done = 0
        self.indexed_chunks = 0

    @property
    def count(self) -> int:
        """Files seen so far."""
        return self.done + len(self.pending)

    def add(self, result: IndexResult | None) -> int:
        """Append a result (``None``: still being written); returns its slot."""
        self.pending.append(result)
        self._report()
        return self.count - 1

    def written(self, items: list[tuple[Any, PreparedFile, IndexResult]]) -> None:
        """Fill the slots of files the batch writer stored."""
        for slot, prepared, result in items:
            self.pending[slot - self.done] = result
            if result.status == "indexed" and prepared.dims and result.embedding_model:
                self.models[result.embedding_model] = prepared.dims
        self._report()

    def written_chunks(self) -> int:
        """Chunks of the files indexed so far."""
        return self.indexed_chunks + sum(
            r.chunks for r in self.pending if r is not None and r.status == "indexed"
        )

    def finished(self) -> list[IndexResult]:
        """Every completed result, in input order (none when they are not kept)."""
        return self.kept + [r for r in self.pending if r is not None]

    def _report(self) -> None:
        ready = 0
        for result in self.pending:
            if result is None:
                break
            ready += 1
            self.done += 1
            if result.status == "indexed":
                self.indexed_chunks += result.chunks
            if self.keep:
                self.kept.append(result)
            if self.progress is not None:
                self.progress(result, self.done, self.total)
        del self.pending[:ready]


class _BatchJob:
    """The job record of a batch (or nothing when the batch is not a job). Progress is
    written, and cancellation checked, at most every :data:`JOB_UPDATE_S` seconds: two
    transactions per file cost more than indexing a small file."""

    def __init__(self, jobs: Any, job_id: str | None) -> None:
        self.jobs = jobs
        self.job_id = job_id
        self._last = 0.0
        self._done = (0, 0, "")

    @classmethod
    async def start(
        cls, db: Database, kind: str | None, context: RunContext, total: int
    ) -> _BatchJob:
        """Record the batch as a job of ``kind`` (no job when ``kind`` is ``None``)."""
        if not kind:
            return cls(None, None)
        from nyla.jobs.store import JobStore

        jobs = JobStore(db)
        job_id = await jobs.start(
            kind, user_id=context.user_id, mandate_id=context.mandate_id, total=total
        )
        return cls(jobs, job_id)

    async def progress(self, done: int, total: int, name: str) -> bool:
        """Note progress (written when the last write is old enough); True when the job
        was cancelled."""
        if not self.job_id:
            return False
        self._done = (done, total, name)
        if time.monotonic() - self._last < JOB_UPDATE_S:
            return False
        self._last = time.monotonic()
        await self.jobs.progress(self.job_id, done, total, name)
        return bool(await self.jobs.is_cancelled(self.job_id))

    async def finish(self, error: str | None) -> None:
        """Write the final progress and close the job record (with the error that ended
        it, if any)."""
        if self.job_id:
            await self.jobs.progress(self.job_id, *self._done)
            await self.jobs.finish(self.job_id, error=error)


def _read(file: FileItem, content: bytes | Path) -> bytes | IndexResult:
    """The bytes to index, or the failed result of a local file that cannot be read (gone
    since it was listed, no permission): that file fails alone, the batch goes on."""
    if not isinstance(content, Path):
        return content
    try:
        return content.read_bytes()
    except OSError as exc:
        return IndexResult(
            file_id=file.id,
            name=file.name,
            status=IndexStatus.FAILED,
            error=f"cannot read the file: {exc.strerror or type(exc).__name__}",
        )


def file_item_for_path(
    path: Path,
    *,
    context: RunContext,
    scope: Scope | str = Scope.PERSONAL,
    neutralize: bool = False,
) -> FileItem:
    """A FileItem for a local file; its id is stable per (owner scope, absolute path) so
    re-indexing the same file replaces it. A name that is not valid UTF-8 (possible on
    POSIX file systems) is shown with U+FFFD where its undecodable bytes are; the id is
    taken from the path's bytes, so it stays distinct and stable."""
    resolved = path.resolve()
    try:
        size = resolved.stat().st_size
    except OSError:
        size = 0  # reading it fails too, and says why (see _read)
    scope = Scope(scope)
    kind = detect_kind(path.name)
    mime = (
        MIME_BY_KIND.get(kind or "")
        or mimetypes.guess_type(path.name)[0]
        or "application/octet-stream"
    )
    owner = {
        Scope.PERSONAL: context.user_id,
        Scope.MANDATE: context.mandate_id,
        Scope.FEATURE_INSTANCE: context.feature_instance_id,
        Scope.GLOBAL: "global",
    }[scope]
    key = f"{scope}:{owner}:".encode() + os.fsencode(resolved)
    digest = hashlib.sha1(key).hexdigest()[:24]
    return FileItem(
        id=f"local-{digest}",
        name=clean_text(path.name),
        mime_type=mime,
        size=size,
        scope=scope,
        user_id=context.user_id,
        mandate_id=context.mandate_id,
        feature_instance_id=context.feature_instance_id,
        neutralize=neutralize,
    )
