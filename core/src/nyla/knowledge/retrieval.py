"""Scoped search and the agent's RAG block (part of
:class:`~nyla.knowledge.service.KnowledgeService`); the SQL is in :mod:`nyla.knowledge.search`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import psycopg
from sqlalchemy.exc import DBAPIError

from nyla.db import Database
from nyla.errors import InvalidQueryError
from nyla.knowledge.search import EstimateCache, search
from nyla.knowledge.settings import KnowledgeSettings
from nyla.knowledge.tables import FileContentIndex
from nyla.knowledge.vectors import readable_keys
from nyla.models.agent import RunContext
from nyla.models.ai import ModelSpec
from nyla.models.files import Scope
from nyla.models.knowledge import SearchFilters, SearchResult


class Retrieval:
    """Semantic search (the query embedded, or a vector given), file index rows and the
    agent context, always within what the caller's context may read."""

    db: Database
    ai: Any
    settings: KnowledgeSettings
    embedding_spec: Callable[[RunContext | None], ModelSpec]
    _vector_indexes: set[tuple[str, int]]
    _estimates: EstimateCache

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
        response = await self.ai.embed([query], context=context, model=spec.id)
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
        spec = self.ai.model_spec(model)
        expected = spec.capabilities.embedding_dimensions if spec is not None else None
        if not vector or (expected and len(vector) != expected):
            raise ValueError(
                f"the query vector has {len(vector)} dimensions; {model} vectors have "
                f"{expected or 'at least one'}"
            )
        try:
            return await self._search(query, vector, model, keys, k, filters, hybrid)
        except (DBAPIError, psycopg.DataError) as exc:
            if "dimension" not in str(getattr(exc, "orig", exc)):
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
        return await self.db.read_driver(
            lambda conn: search(
                conn,
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
        )

    async def file_index(self, file_id: str, context: RunContext) -> FileContentIndex | None:
        """A file's index row (structure, summary, status) if ``context`` may read it."""
        async with self.db.session() as s:
            row = await s.get(FileContentIndex, file_id)
        if row is None or row.owner_key not in readable_keys(context):
            return None
        return row

    async def build_agent_context(self, prompt: str, context: RunContext) -> str:
        """The RAG block for an agent round (empty string when embedding or the DB fails)."""
        from nyla.knowledge.context import build_agent_context

        return await build_agent_context(self, prompt, context)
