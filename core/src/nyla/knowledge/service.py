"""The knowledge store service, built lazily as ``kernel.knowledge``."""

from __future__ import annotations

import hashlib
import logging
import mimetypes
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from sqlalchemy import select, text
from sqlalchemy.exc import DBAPIError

from nyla.errors import InvalidQueryError, ModelNotAvailableError
from nyla.knowledge import memory
from nyla.knowledge.consent import (
    NotFoundError,
    PermissionDeniedError,
    audit,
    purge_files,
    set_knowledge_consent,
    set_rag_index_enabled,
)
from nyla.knowledge.cost import estimate_cost
from nyla.knowledge.extract import MIME_BY_KIND, detect_kind
from nyla.knowledge.indexing import BatchWriter, Indexer, PreparedFile, build_lookups
from nyla.knowledge.inventory import inventory
from nyla.knowledge.limits import (
    LimitKind,
    get_rag_limits,
    get_stored_overrides,
    kind_for_service,
    merge_settings_patch,
)
from nyla.knowledge.policy import effective_policy, normalize_path
from nyla.knowledge.search import EstimateCache, search
from nyla.knowledge.settings import KnowledgeSettings
from nyla.knowledge.tables import DataSource, FileContentIndex, UserConnection
from nyla.knowledge.vectors import (
    MAX_INDEXED_DIMS,
    create_hnsw_index,
    hnsw_index_exists,
    readable_keys,
)
from nyla.models.agent import RunContext
from nyla.models.ai import ModelSpec, OperationType
from nyla.models.datasource import DownloadedFile
from nyla.models.files import FileItem, Scope
from nyla.models.knowledge import (
    CostEstimate,
    IndexResult,
    Inventory,
    PolicyValue,
    PurgeResult,
    SearchFilters,
    SearchResult,
)

log = logging.getLogger(__name__)

ProgressFn = Callable[[IndexResult, int, int], Any]

#: a batch that wrote at least this many chunks refreshes the planner statistics
ANALYZE_AFTER_ROWS = 1000


class KnowledgeService:
    """Indexing, scoped semantic search, agent context, round/workflow memory, consent and
    purge, RAG limits and cost estimates, inventory. Embeddings go through ``kernel.ai``."""

    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel
        self.settings = KnowledgeSettings.from_kernel_settings(kernel.settings)
        self.indexer = Indexer(self)
        self._vector_indexes: set[tuple[str, int]] = set()
        self._unindexable: set[tuple[str, int]] = set()  # beyond MAX_INDEXED_DIMS
        self._estimates = EstimateCache()

    # ---- embedding model ------------------------------------------------------------------

    def embedding_spec(self, context: RunContext | None = None) -> ModelSpec:
        """The embedding model in use: ``knowledge.embedding_model`` (or
        ``NYLA_EMBEDDING_MODEL``) when set, else the AI service's choice."""
        return self.kernel.ai.select_model(
            OperationType.EMBEDDING, context=context, model=self.settings.embedding_model
        )

    async def ensure_vector_index(self, model: str, dims: int) -> None:
        """Build the model's HNSW index if it does not exist yet (call after bulk loads).
        A model beyond :data:`~nyla.knowledge.vectors.MAX_INDEXED_DIMS` gets none (its
        searches rank exactly) and a warning."""
        if (model, dims) in self._vector_indexes or (model, dims) in self._unindexable:
            return
        async with self.kernel.db.session() as s:
            # two processes creating the same index race in the catalog (IF NOT EXISTS does
            # not cover it): one builds, the other waits and finds it
            await s.execute(text("SELECT pg_advisory_xact_lock(hashtext('nyla.hnsw-index'))"))
            built = await hnsw_index_exists(s, model, dims) or await create_hnsw_index(
                s, model, dims
            )
        if built:
            self._vector_indexes.add((model, dims))
            return
        log.warning(
            "%s has %d dimensions, more than an HNSW index takes (%d): its searches rank exactly",
            model,
            dims,
            MAX_INDEXED_DIMS,
        )
        self._unindexable.add((model, dims))

    # ---- indexing -------------------------------------------------------------------------

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
        """Index one file (scope from the FileItem; neutralized at rest when
        ``file.neutralize``). Failures come back as ``status=failed`` with the reason.
        ``build_index=False`` defers the HNSW index (bulk loads build it once at the end)."""
        return await self.indexer.index_file(
            file,
            content,
            context=context,
            source_path=source_path,
            connection_id=connection_id,
            build_index=build_index,
        )

    async def index_files(
        self,
        items: Iterable[tuple[FileItem, bytes | Path]],
        *,
        context: RunContext,
        progress: ProgressFn | None = None,
        total: int | None = None,
        job_kind: str | None = None,
    ) -> list[IndexResult]:
        """Index a batch (contents as bytes, or paths read one at a time); one file's failure
        does not stop the rest. Prepared files are written together in the background while
        the next ones are prepared, one transaction per ``write_batch_rows`` chunks (see
        :class:`~nyla.knowledge.indexing.BatchWriter`); the lookup rows (full text, dedupe) and the HNSW index
        are built once
        after the batch (the chunks are found by vector meanwhile). With
        ``job_kind`` the batch is recorded as a job (shown in the inventory) and stops
        early when that job is cancelled."""
        from nyla.jobs.store import JobStore

        items = list(items) if total is None else items
        total = len(items) if total is None else total  # type: ignore[arg-type]
        jobs = JobStore(self.kernel.db) if job_kind else None
        job_id = (
            await jobs.start(
                job_kind, user_id=context.user_id, mandate_id=context.mandate_id, total=total
            )
            if jobs and job_kind
            else None
        )
        results: list[IndexResult | None] = []
        memo: dict[Any, Any] = {}
        models: dict[str, int] = {}
        error: str | None = None
        done = 0

        def report() -> None:
            nonlocal done
            for result in results[done:]:
                if result is None:
                    break
                done += 1
                if progress is not None:
                    progress(result, done, total)

        def written(items: list[tuple[Any, PreparedFile, IndexResult]]) -> None:
            for slot, prepared, result in items:
                results[slot] = result
                if result.status == "indexed" and prepared.dims and result.embedding_model:
                    models[result.embedding_model] = prepared.dims
            report()

        writer = BatchWriter(
            self.indexer, batch_rows=self.settings.write_batch_rows, on_written=written
        )
        try:
            for file, content in items:
                data = content.read_bytes() if isinstance(content, Path) else content
                prepared = await self.indexer.prepare(file, data, context=context, memo=memo)
                if isinstance(prepared, IndexResult):
                    results.append(prepared)
                    report()
                else:
                    results.append(None)
                    await writer.add(prepared, len(results) - 1)
                if jobs and job_id:
                    await jobs.progress(job_id, len(results), total, file.name)
                    if await jobs.is_cancelled(job_id):
                        break
            await writer.flush()
            await self.build_lookups()
            for model, dims in models.items():
                await self.ensure_vector_index(model, dims)
            written_chunks = sum(
                r.chunks for r in results if r is not None and r.status == "indexed"
            )
            if written_chunks >= ANALYZE_AFTER_ROWS:
                await self.analyze()
        except BaseException as exc:
            writer.cancel()
            error = f"{type(exc).__name__}: {exc}"
            raise
        finally:
            if jobs and job_id:
                await jobs.finish(job_id, error=error)
        return [r for r in results if r is not None]

    async def build_lookups(self) -> int:
        """Write the lookup rows (full-text terms, dedupe hashes) of files a bulk load left
        waiting (``index_files`` does
        this before it returns; an interrupted one leaves them to the next call). Returns
        the number of files."""
        async with self.kernel.db.session() as s:
            return await build_lookups(s)

    async def index_paths(
        self,
        paths: Iterable[str | Path],
        *,
        context: RunContext,
        scope: Scope | str = Scope.PERSONAL,
        neutralize: bool = False,
        progress: ProgressFn | None = None,
    ) -> list[IndexResult]:
        """Index local files (directories recursively, supported types only), building
        FileItems owned by the context's user/mandate/feature instance. Recorded as a job."""
        files = expand_paths(paths)
        items = (
            (file_item_for_path(p, context=context, scope=scope, neutralize=neutralize), p)
            for p in files
        )
        return await self.index_files(
            items, context=context, progress=progress, total=len(files), job_kind="index"
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
        async with self.kernel.db.session() as s:
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
            async with self.kernel.db.session() as s:
                source = await s.get(DataSource, data_source_id)
                if source is not None:
                    source.last_indexed = time.time()
        return result

    # ---- search ---------------------------------------------------------------------------

    async def semantic_search(
        self,
        query: str,
        *,
        context: RunContext,
        scopes: Sequence[Scope | str] | None = None,
        k: int = 10,
        filters: SearchFilters | None = None,
        hybrid: bool | None = None,
    ) -> SearchResult:
        """The ``k`` chunks nearest to ``query`` that ``context`` may read (optionally only
        in ``scopes``), fused with full-text ranks unless ``hybrid=False``."""
        if not any(ch.isalnum() for ch in query):
            raise InvalidQueryError(
                f"the query {query!r} has no words to search for: give a word or a phrase"
            )
        spec = self.embedding_spec(context)
        response = await self.kernel.ai.embed([query], context=context, model=spec.id)
        if not any(response.vectors[0]):
            raise InvalidQueryError(
                f"the embedding model {response.model} gives {query!r} no direction to search "
                "(a zero vector): rephrase the query"
            )
        return await self.search_vector(
            query,
            vector=response.vectors[0],
            model=response.model,
            context=context,
            scopes=scopes,
            k=k,
            filters=filters,
            hybrid=hybrid,
        )

    async def search_vector(
        self,
        query: str,
        *,
        vector: Sequence[float],
        model: str,
        context: RunContext,
        scopes: Sequence[Scope | str] | None = None,
        k: int = 10,
        filters: SearchFilters | None = None,
        hybrid: bool | None = None,
    ) -> SearchResult:
        """Like :meth:`semantic_search` with the query already embedded by ``model``. A vector
        whose dimension does not fit ``model`` raises :class:`ValueError` (never a database
        error with SQL in it)."""
        keys = readable_keys(context, scopes)
        spec = self.kernel.ai.model_spec(model)
        expected = spec.capabilities.embedding_dimensions if spec is not None else None
        if not vector or (expected and len(vector) != expected):
            raise ValueError(
                f"the query vector has {len(vector)} dimensions; {model} vectors have "
                f"{expected or 'at least one'}"
            )
        try:
            return await self._search(query, vector, model, keys, k, filters, hybrid)
        except DBAPIError as exc:
            if "dimension" not in str(exc.orig):
                raise
            raise ValueError(
                f"the query vector has {len(vector)} dimensions, which the indexed vectors of "
                f"{model} do not have"
            ) from None

    async def _search(
        self,
        query: str,
        vector: Sequence[float],
        model: str,
        keys: list[str],
        k: int,
        filters: SearchFilters | None,
        hybrid: bool | None,
    ) -> SearchResult:
        async with self.kernel.db.read_session() as s:
            return await search(
                s,
                keys=keys,
                model=model,
                dims=len(vector),
                vector=vector,
                query=query,
                k=k,
                filters=filters,
                hybrid=self.settings.hybrid if hybrid is None else hybrid,
                settings=self.settings,
                known_indexes=self._vector_indexes,
                estimates=self._estimates,
            )

    async def file_index(self, file_id: str, context: RunContext) -> FileContentIndex | None:
        """A file's index row (structure, summary, status) if ``context`` may read it."""
        async with self.kernel.db.session() as s:
            row = await s.get(FileContentIndex, file_id)
        if row is None or row.owner_key not in readable_keys(context):
            return None
        return row

    # ---- agent context and memory ---------------------------------------------------------

    async def build_agent_context(self, prompt: str, context: RunContext) -> str:
        """The RAG block for an agent round (empty string when embedding or the DB fails)."""
        from nyla.knowledge.context import build_agent_context

        return await build_agent_context(self, prompt, context)

    async def record_round(
        self,
        *,
        run_id: str,
        round: int,
        context: RunContext,
        file_refs: Sequence[str] = (),
        tool_results: Sequence[Any] = (),
        decisions: Sequence[Any] = (),
    ) -> None:
        """Write the RoundMemory of one agent round. The summary is embedded when possible;
        without an embedding the row is still written (it then only serves "known files")."""
        summary = memory.round_summary(file_refs, tool_results, decisions)
        model: str | None = None
        vector: list[float] | None = None
        if summary:
            try:
                spec = self.embedding_spec(context)
                response = await self.kernel.ai.embed([summary], context=context, model=spec.id)
                model, vector = response.model, list(response.vectors[0])
            except Exception as exc:
                level = (
                    logging.DEBUG if isinstance(exc, ModelNotAvailableError) else logging.WARNING
                )
                log.log(
                    level, "round memory of %s/%s stored without embedding: %s", run_id, round, exc
                )
        async with self.kernel.db.session() as s:
            await memory.insert_round(
                s,
                run_id=run_id,
                round=round,
                context=context,
                file_refs=file_refs,
                tool_results=tool_results,
                decisions=decisions,
                summary=summary,
                model=model,
                vector=vector,
            )

    async def remember(
        self,
        key: str,
        value: Any,
        *,
        context: RunContext,
        kind: str = "entity",
        embed: bool = False,
    ) -> None:
        """Store ``key`` = ``value`` in the context's workflow memory (optionally embedded)."""
        model: str | None = None
        vector: list[float] | None = None
        if embed:
            spec = self.embedding_spec(context)
            response = await self.kernel.ai.embed(
                [f"{key}: {value}"], context=context, model=spec.id
            )
            model, vector = response.model, list(response.vectors[0])
        async with self.kernel.db.session() as s:
            await memory.put_workflow_value(
                s, context=context, key=key, value=value, kind=kind, model=model, vector=vector
            )

    async def workflow_entities(self, context: RunContext) -> list[tuple[str, str, Any]]:
        """(key, kind, value) stored for the context's workflow."""
        async with self.kernel.db.session() as s:
            return await memory.workflow_entries(s, context)

    # ---- connections, data sources, consent -----------------------------------------------

    async def add_connection(
        self,
        connection_id: str,
        service: str,
        *,
        user_id: str,
        mandate_id: str | None = None,
        label: str = "",
        knowledge_ingestion_enabled: bool = True,
    ) -> None:
        """Register a user's connection (the host's connection store mirrors it here)."""
        async with self.kernel.db.session() as s:
            s.add(
                UserConnection(
                    id=connection_id,
                    service=service,
                    user_id=user_id,
                    mandate_id=mandate_id,
                    label=label,
                    knowledge_ingestion_enabled=knowledge_ingestion_enabled,
                )
            )

    async def add_data_source(
        self,
        data_source_id: str,
        connection_id: str,
        path: str,
        *,
        user_id: str,
        mandate_id: str | None = None,
        feature_instance_id: str | None = None,
        rag_index_enabled: bool | None = None,
        neutralize: bool | None = None,
        scope: Scope | str | None = None,
        settings: dict[str, Any] | None = None,
        label: str = "",
    ) -> None:
        """Register a tree element of a connection with its explicit policy values."""
        async with self.kernel.db.session() as s:
            s.add(
                DataSource(
                    id=data_source_id,
                    connection_id=connection_id,
                    path=normalize_path(path),
                    label=label,
                    user_id=user_id,
                    mandate_id=mandate_id,
                    feature_instance_id=feature_instance_id,
                    rag_index_enabled=rag_index_enabled,
                    neutralize=neutralize,
                    scope=str(Scope(scope)) if scope is not None else None,
                    settings=settings or {},
                )
            )

    async def resolve_policy(self, connection_id: str, path: str, field: str) -> PolicyValue:
        """The effective ``rag_index_enabled`` / ``neutralize`` / ``scope`` at ``path``."""
        async with self.kernel.db.session() as s:
            rows = list(
                (
                    await s.execute(
                        select(DataSource).where(DataSource.connection_id == connection_id)
                    )
                ).scalars()
            )
        return effective_policy(rows, path, field)

    async def set_rag_index_enabled(
        self, data_source_id: str, enabled: bool | None, *, actor: str
    ) -> PurgeResult:
        """Toggle indexing of a tree element; off purges synchronously in one transaction."""
        async with self.kernel.db.session() as s:
            return await set_rag_index_enabled(s, data_source_id, enabled, actor=actor)

    async def set_knowledge_consent(
        self, connection_id: str, enabled: bool, *, actor: str
    ) -> PurgeResult:
        """Toggle a connection's ingestion consent; off purges and cancels its jobs."""
        async with self.kernel.db.session() as s:
            return await set_knowledge_consent(s, connection_id, enabled, actor=actor)

    async def purge(
        self,
        *,
        actor: str,
        file_ids: Sequence[str] | None = None,
        data_source_id: str | None = None,
        connection_id: str | None = None,
        owner_user_id: str | None = None,
        mandate_id: str | None = None,
        is_mandate_admin: bool = False,
        is_platform_admin: bool = False,
    ) -> PurgeResult:
        """Delete indexed files (and their chunks) matching every given criterion, in one
        transaction, with an audit record. At least one criterion is required.

        The actor may purge the files it owns; a mandate admin also the mandate-scoped files
        of its mandate (``mandate_id`` must be given), a platform admin any file. When any
        matching file is beyond that, nothing is deleted (``PermissionDeniedError``)."""
        f = FileContentIndex
        where = []
        if file_ids is not None:
            where.append(f.file_id.in_(list(file_ids)))
        if data_source_id is not None:
            where.append(f.data_source_id == data_source_id)
        if connection_id is not None:
            where.append(f.connection_id == connection_id)
        if owner_user_id is not None:
            where.append(f.user_id == owner_user_id)
        if mandate_id is not None:
            where.append(f.mandate_id == mandate_id)
        if not where:
            raise ValueError("purge needs at least one criterion")
        async with self.kernel.db.session() as s:
            rows = (
                await s.execute(select(f.file_id, f.user_id, f.scope, f.mandate_id).where(*where))
            ).all()
            if not is_platform_admin:
                foreign = [
                    r.file_id
                    for r in rows
                    if r.user_id != actor
                    and not (
                        is_mandate_admin
                        and mandate_id is not None
                        and r.scope == Scope.MANDATE.value
                        and r.mandate_id == mandate_id
                    )
                ]
                if foreign:
                    raise PermissionDeniedError(
                        f"{actor} may not purge {len(foreign)} of the {len(rows)} matching "
                        f"files (e.g. {foreign[0]}); nothing was deleted"
                    )
            result = await purge_files(s, [r.file_id for r in rows], "purge")
            audit(
                s,
                "knowledge_purged",
                actor,
                data_source_id or connection_id or owner_user_id or mandate_id or "files",
                {"files": result.files, "chunks": result.chunks},
            )
        return result

    # ---- limits and cost ------------------------------------------------------------------

    async def _data_source(self, s: Any, data_source_id: str) -> tuple[DataSource, LimitKind]:
        ds = await s.get(DataSource, data_source_id)
        if ds is None:
            raise NotFoundError(f"no data source {data_source_id}")
        conn = await s.get(UserConnection, ds.connection_id)
        return ds, kind_for_service(conn.service if conn else None)

    async def get_rag_limits(self, data_source_id: str) -> dict[str, int]:
        """Defaults merged with the data source's stored overrides (API / cost path)."""
        async with self.kernel.db.session() as s:
            ds, kind = await self._data_source(s, data_source_id)
            return get_rag_limits(ds, kind)

    async def get_stored_overrides(self, data_source_id: str) -> dict[str, int]:
        """Only the explicitly stored overrides (walkers merge them onto their ``limits=``)."""
        async with self.kernel.db.session() as s:
            ds, kind = await self._data_source(s, data_source_id)
            return get_stored_overrides(ds, kind)

    async def update_settings(
        self,
        data_source_id: str,
        patch: dict[str, Any],
        *,
        actor: str,
        is_mandate_admin: bool = False,
    ) -> dict[str, Any]:
        """Partial update of a data source's settings: only ``ragLimits`` is accepted
        (anything else raises ``SettingsValidationError``). Owner-only; a mandate admin may
        also change a mandate-scoped source. Writes an audit record; returns the settings."""
        async with self.kernel.db.session() as s:
            ds, kind = await self._data_source(s, data_source_id)
            mandate_scoped = ds.scope == Scope.MANDATE.value
            if ds.user_id != actor and not (mandate_scoped and is_mandate_admin):
                raise PermissionDeniedError(
                    f"{actor} may not change the settings of data source {data_source_id}"
                )
            before = dict(ds.settings or {})
            ds.settings = merge_settings_patch(before, patch, kind)
            audit(
                s,
                "datasource_settings_changed",
                actor,
                data_source_id,
                {"before": before, "after": ds.settings},
            )
            return dict(ds.settings)

    async def estimate_cost(self, data_source_id: str) -> CostEstimate:
        """Indicative CHF for a full sync with the current limits. Priced with the configured
        embedding model when one is set and priced, else ``text-embedding-3-small``."""
        async with self.kernel.db.session() as s:
            ds, kind = await self._data_source(s, data_source_id)
        price = model = None
        if self.settings.embedding_model:
            try:
                spec = self.embedding_spec()
                price, model = spec.price_input_chf_per_mtok, spec.id
            except Exception:
                price = None
        return estimate_cost(
            ds, kind, source_id=data_source_id, price_chf_per_mtok=price, price_model=model
        )

    # ---- inventory ------------------------------------------------------------------------

    async def inventory(self, level: str = "user", subject: str | None = None) -> Inventory:
        """Files, chunks, bytes, last indexed and running jobs for a user, a mandate or the
        platform."""
        async with self.kernel.db.session() as s:
            return await inventory(s, level, subject)

    async def analyze(self) -> None:
        """Refresh the planner statistics of the knowledge tables (the table size the search
        path choice uses, the join plans of the exact path); run after bulk loads."""
        from sqlalchemy import text

        async with self.kernel.db.engine.connect() as conn:
            for table in ("knowledge_chunk", "knowledge_file_index", "knowledge_chunk_lookup"):
                await conn.execute(text(f"ANALYZE {table}"))
            await conn.commit()
        self._estimates.clear()

    async def _model_dims(self, model: str) -> int:
        from sqlalchemy import text

        async with self.kernel.db.session() as s:
            dims = (
                await s.execute(
                    text(
                        "SELECT vector_dims(embedding) FROM knowledge_chunk "
                        "WHERE embedding_model = :m LIMIT 1"
                    ),
                    {"m": model},
                )
            ).scalar()
        return int(dims or 0)


def expand_paths(paths: Iterable[str | Path]) -> list[Path]:
    """Files under ``paths`` (directories recursively, hidden entries and unsupported types
    skipped), sorted."""
    out: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            for child in sorted(path.rglob("*")):
                rel = child.relative_to(path).parts
                hidden = any(p.startswith(".") for p in rel)
                if child.is_file() and not hidden and detect_kind(child.name) is not None:
                    out.append(child)
        elif path.is_file():
            out.append(path)
        else:
            raise FileNotFoundError(f"no such file or directory: {path}")
    return out


def file_item_for_path(
    path: Path,
    *,
    context: RunContext,
    scope: Scope | str = Scope.PERSONAL,
    neutralize: bool = False,
) -> FileItem:
    """A FileItem for a local file; its id is stable per (owner scope, absolute path) so
    re-indexing the same file replaces it."""
    resolved = path.resolve()
    stat = resolved.stat()
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
    digest = hashlib.sha1(f"{scope}:{owner}:{resolved}".encode()).hexdigest()[:24]
    return FileItem(
        id=f"local-{digest}",
        name=path.name,
        mime_type=mime,
        size=stat.st_size,
        scope=scope,
        user_id=context.user_id,
        mandate_id=context.mandate_id,
        feature_instance_id=context.feature_instance_id,
        neutralize=neutralize,
    )
