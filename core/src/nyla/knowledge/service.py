"""The knowledge store service, built lazily as ``kernel.knowledge``.

One object for hosts and tools, assembled from one module per concern:

- :mod:`~nyla.knowledge.ingest` — indexing entry points (a file, a batch, local paths, a
  walker's download); the work is done by :class:`~nyla.knowledge.indexing.Indexer`
- :mod:`~nyla.knowledge.retrieval` — scoped search and the agent's RAG block
- :mod:`~nyla.knowledge.remembering` — round and workflow memory
- :mod:`~nyla.knowledge.governance` — connections, data sources, consent, purge
- :mod:`~nyla.knowledge.source_settings` — RAG limits, settings and cost of a data source

This module keeps what they share: the embedding model choice, the vector indexes, the
planner statistics and the inventory.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from sqlalchemy import text

from nyla.knowledge.governance import Governance
from nyla.knowledge.indexing import Indexer
from nyla.knowledge.ingest import (
    ANALYZE_AFTER_ROWS,
    Ingestion,
    ProgressFn,
    expand_paths,
    file_item_for_path,
)
from nyla.knowledge.inventory import inventory
from nyla.knowledge.remembering import Memory
from nyla.knowledge.retrieval import Retrieval
from nyla.knowledge.search import EstimateCache
from nyla.knowledge.settings import KnowledgeSettings
from nyla.knowledge.source_settings import SourceSettings
from nyla.knowledge.vectors import MAX_INDEXED_DIMS, create_hnsw_index, hnsw_index_exists
from nyla.models.agent import RunContext
from nyla.models.ai import ModelSpec, OperationType
from nyla.models.knowledge import Inventory, ReindexResult

if TYPE_CHECKING:
    from nyla.knowledge.ports import KnowledgeHost

__all__ = [
    "ANALYZE_AFTER_ROWS",
    "KnowledgeService",
    "ProgressFn",
    "expand_paths",
    "file_item_for_path",
]

log = logging.getLogger(__name__)


class KnowledgeService(Ingestion, Retrieval, Memory, Governance, SourceSettings):
    """Indexing, scoped semantic search, agent context, round/workflow memory, consent and
    purge, RAG limits and cost estimates, inventory. Embeddings go through the AI service.

    The kernel is read once, here: every part works on the database, the AI service and
    the knowledge settings it is given."""

    def __init__(self, kernel: KnowledgeHost) -> None:
        self.kernel = kernel
        self.db = kernel.db
        self.ai = kernel.ai
        self.settings = KnowledgeSettings.from_kernel_settings(kernel.settings)
        self._vector_indexes: set[tuple[str, int]] = set()
        self._unindexable: set[tuple[str, int]] = set()  # beyond MAX_INDEXED_DIMS
        self._estimates = EstimateCache()
        self.indexer = Indexer(
            db=self.db,
            ai=self.ai,
            settings=self.settings,
            embedding_spec=self.embedding_spec,
            ensure_vector_index=self.ensure_vector_index,
        )

    def embedding_spec(self, context: RunContext | None = None) -> ModelSpec:
        """The embedding model in use: ``knowledge.embedding_model`` (or
        ``NYLA_EMBEDDING_MODEL``) when set, else the AI service's choice."""
        return self.ai.select_model(
            OperationType.EMBEDDING, context=context, model=self.settings.embedding_model
        )

    async def ensure_vector_index(self, model: str, dims: int) -> None:
        """Build the model's HNSW index if it does not exist yet (call after bulk loads).
        A model beyond :data:`~nyla.knowledge.vectors.MAX_INDEXED_DIMS` gets none (its
        searches rank exactly) and a warning."""
        if (model, dims) in self._vector_indexes or (model, dims) in self._unindexable:
            return
        async with self.db.session() as s:
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

    async def reindex(
        self, model: str | None = None, *, on_progress: Callable[[int, int], None] | None = None
    ) -> ReindexResult:
        """Embed everything stored under another model again with ``model`` (default: the
        model in use), build its vector index and refresh the planner statistics."""
        from nyla.knowledge.reindex import reindex

        target = model or self.embedding_spec().id
        result = await reindex(self.db, self.ai, target, on_progress=on_progress)
        if result.dimensions:
            await self.ensure_vector_index(target, result.dimensions)
        await self.analyze()
        return result

    async def inventory(self, level: str = "user", subject: str | None = None) -> Inventory:
        """Files, chunks, bytes, last indexed and running jobs for a user, a mandate or the
        platform."""
        async with self.db.session() as s:
            return await inventory(s, level, subject)

    async def analyze(self) -> None:
        """Refresh the planner statistics of the knowledge tables (the table size the search
        path choice uses, the join plans of the exact path); run after bulk loads."""
        async with self.db.engine.connect() as conn:
            for table in ("knowledge_chunk", "knowledge_file_index", "knowledge_chunk_lookup"):
                await conn.execute(text(f"ANALYZE {table}"))
            await conn.commit()
        self._estimates.clear()
