"""Scoped search and the agent's RAG block (part of
:class:`~nyla.knowledge.service.KnowledgeService`); the SQL is in :mod:`nyla.knowledge.search`."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from typing import Any

import psycopg
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from nyla.db import Database
from nyla.errors import InvalidQueryError
from nyla.knowledge.search import EstimateCache, search
from nyla.knowledge.search_text import parse_query
from nyla.knowledge.settings import KnowledgeSettings
from nyla.knowledge.tables import FileContentIndex
from nyla.knowledge.text_search import ensure_configs, reanalyze
from nyla.knowledge.vectors import readable_keys
from nyla.models.agent import RunContext
from nyla.models.ai import ModelSpec
from nyla.models.files import Scope
from nyla.models.knowledge import SearchFilters, SearchHit, SearchResult

log = logging.getLogger(__name__)

#: background re-analyses (a task must be referenced until it ends)
_BACKGROUND: set[asyncio.Task[int]] = set()


def unsearchable(query: str) -> None:
    """Raise :class:`InvalidQueryError` when ``query`` leaves nothing to look for: only
    stop words (``where is the``, ``und die``), which match almost every text, or only
    ``-exclusions``."""
    parsed = parse_query(query)
    if parsed.searchable:
        return
    if parsed.excluded and not parsed.stop_words:
        raise InvalidQueryError(
            f"the query {query!r} only says what to leave out: add a word or a phrase to look for"
        )
    words = ", ".join(dict.fromkeys(w.lower() for w in parsed.stop_words))
    raise InvalidQueryError(
        f"the query {query!r} has only common words ({words}), which occur in almost every "
        "text: add a word that names what you are looking for"
    )


class Retrieval:
    """Semantic search (the query embedded, or a vector given), file index rows and the
    agent context, always within what the caller's context may read."""

    db: Database
    ai: Any
    settings: KnowledgeSettings
    embedding_spec: Callable[[RunContext | None], ModelSpec]
    _vector_indexes: set[tuple[str, int]]
    _estimates: EstimateCache
    _text_search_ready: bool = False

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
        unsearchable(query)
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

    async def ensure_text_search(self, *, background: bool = True) -> None:
        """Make sure the text search configurations exist (once per service) and move the
        lookup rows an older nyla built to the language-aware terms in the background
        (:meth:`reanalyze_text`; meanwhile they are searched as ``simple`` text), unless
        ``background=False``."""
        if self._text_search_ready:
            return
        async with self.db.session() as s:
            await ensure_configs(s)
            stale = (
                await s.execute(
                    text("SELECT 1 FROM knowledge_chunk_lookup WHERE language IS NULL LIMIT 1")
                )
            ).first()
        self._text_search_ready = True
        if stale is not None and background:
            task = asyncio.create_task(self.reanalyze_text())
            _BACKGROUND.add(task)
            task.add_done_callback(_BACKGROUND.discard)

    async def reanalyze_text(self, batch: int = 1000) -> int:
        """Rebuild, batch by batch, the full-text terms of chunks an older nyla indexed
        (detecting each one's language); returns how many were rebuilt."""
        done = 0
        try:
            while True:
                async with self.db.session() as s:
                    count = await reanalyze(s, batch)
                if not count:
                    break
                done += count
        except Exception:
            log.exception("re-analysing the full text of older chunks stopped")
        if done:
            log.info("full text of %d older chunks rebuilt in their languages", done)
        return done

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
        await self.ensure_text_search()
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

    async def build_agent_context(
        self, prompt: str, context: RunContext, *, used: list[SearchHit] | None = None
    ) -> str:
        """The RAG block for an agent round (empty string when embedding or the DB fails);
        the hits it quotes are appended to ``used``."""
        from nyla.knowledge.context import build_agent_context

        return await build_agent_context(self, prompt, context, used=used)
