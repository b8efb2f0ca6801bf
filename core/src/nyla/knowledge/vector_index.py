"""The vector indexes of the knowledge store and what the search plans from: which models'
HNSW indexes exist, the planner statistics, and the briefly cached candidate counts."""

from __future__ import annotations

import logging

from sqlalchemy import text

from nyla.db import Database
from nyla.knowledge.file_rows import FileRows
from nyla.knowledge.search_plan import SCOPE_INDEX_KEY, EstimateCache
from nyla.knowledge.vectors import (
    MAX_INDEXED_DIMS,
    create_hnsw_index,
    create_scope_index,
    hnsw_index_exists,
)

log = logging.getLogger(__name__)

__all__ = ["SCOPE_INDEX_KEY", "VectorIndexes"]


class VectorIndexes:
    """Builds each embedding model's HNSW index (and the chunks' scope btree) once,
    refreshes the planner statistics, and holds what searches learn of them (``built``:
    HNSW indexes known to exist; ``estimates``: candidate counts and whether the scope
    btree exists, cleared when the statistics change; ``files``: the hits' file details,
    see :mod:`nyla.knowledge.file_rows`)."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.built: set[tuple[str, int]] = set()
        self.estimates = EstimateCache()
        self.files = FileRows(on_change=self.estimates.changed)
        self._unindexable: set[tuple[str, int]] = set()  # beyond MAX_INDEXED_DIMS

    async def ensure_vector_index(self, model: str, dims: int) -> None:
        """Build the model's HNSW index and the scope btree if they do not exist yet (call
        after bulk loads). A model beyond :data:`~nyla.knowledge.vectors.MAX_INDEXED_DIMS` gets none (its
        searches rank exactly) and a warning."""
        if (model, dims) in self.built or (model, dims) in self._unindexable:
            return
        async with self.db.session() as s:
            # two processes creating the same index race in the catalog (IF NOT EXISTS does
            # not cover it): one builds, the other waits and finds it
            await s.execute(text("SELECT pg_advisory_xact_lock(hashtext('nyla.hnsw-index'))"))
            built = await hnsw_index_exists(s, model, dims) or await create_hnsw_index(
                s, model, dims
            )
            await create_scope_index(s)
        self.estimates.put(SCOPE_INDEX_KEY, True)
        if built:
            self.built.add((model, dims))
            return
        log.warning(
            "%s has %d dimensions, more than an HNSW index takes (%d): its searches rank exactly",
            model,
            dims,
            MAX_INDEXED_DIMS,
        )
        self._unindexable.add((model, dims))

    async def analyze(self) -> None:
        """Refresh the planner statistics of the knowledge tables (the table size the search
        path choice uses, the join plans of the exact path); run after bulk loads."""
        async with self.db.engine.connect() as conn:
            for table in ("knowledge_chunk", "knowledge_file_index", "knowledge_chunk_lookup"):
                await conn.execute(text(f"ANALYZE {table}"))
            await conn.commit()
        self.estimates.clear()
