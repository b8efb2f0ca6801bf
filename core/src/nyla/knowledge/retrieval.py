"""Scoped search and the agent's RAG block (``kernel.knowledge.retrieval``); the SQL is in
:mod:`nyla.knowledge.search`."""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import psycopg
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from nyla.db import Database
from nyla.errors import InvalidQueryError, NylaError
from nyla.knowledge.language import detect
from nyla.knowledge.search import ScopedQuery, search
from nyla.knowledge.search_calibration import calibrated_ef
from nyla.knowledge.search_plan import plan_key
from nyla.knowledge.search_ready import ready_search
from nyla.knowledge.search_text import parse_query
from nyla.knowledge.settings import KnowledgeSettings
from nyla.knowledge.text_search import ensure_configs, reanalyze
from nyla.knowledge.vector_index import VectorIndexes
from nyla.knowledge.vectors import readable_key_tuple, readable_keys
from nyla.models.agent import RunContext
from nyla.models.ai import ModelSpec
from nyla.models.knowledge import SearchHit, SearchQuery, SearchResult
from nyla.tables.knowledge import FileContentIndex

if TYPE_CHECKING:
    from nyla.ai.service import AiService

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

    def __init__(
        self,
        db: Database,
        ai: AiService,
        settings: KnowledgeSettings,
        embedding_spec: Callable[[RunContext | None], ModelSpec],
        indexes: VectorIndexes,
    ) -> None:
        self.db = db
        self.ai = ai
        self.settings = settings
        self.embedding_spec = embedding_spec
        self.indexes = indexes
        self._text_search_ready = False
        self._file_rows_checked = False
        # a model's dimension, looked up once: asking the AI service for the model's spec
        # cost about 12 µs of every search (measured)
        self._dims: dict[str, int | None] = {}
        self._model_languages: dict[str, frozenset[str]] = {}
        #: the background measurement of scopes' ef_search (search_calibration)
        self._calibrating: asyncio.Task[None] | None = None

    async def search(self, query: SearchQuery) -> SearchResult:
        """The ``query.k`` chunks nearest to the query that its context may read (optionally
        only in ``query.scopes``), fused with full-text ranks unless ``hybrid`` is off. The
        text is embedded unless the query carries its vector; a vector whose dimension does
        not fit its model raises :class:`ValueError` (never a database error with SQL in
        it), a text with nothing to look for :class:`InvalidQueryError`."""
        vector = query.vector
        if vector is None:
            vector, model = await self._embed(query)
        else:  # SearchQuery made sure a vector comes with its model
            model = query.model or ""
        dims = self._dims
        expected = dims[model] if model in dims else self._dimensions(model)
        if not vector or (expected and len(vector) != expected):
            raise ValueError(
                f"the query vector has {len(vector)} dimensions; {model} vectors have "
                f"{expected or 'at least one'}"
            )
        settings = self.settings
        rerank = settings.rerank if query.rerank is None else query.rerank
        k = max(query.k, settings.rerank_candidates) if rerank else query.k
        try:
            result = await self._search(query, vector, model, k)
        except (DBAPIError, psycopg.DataError) as exc:
            if "dimension" not in str(getattr(exc, "orig", exc)):
                raise
            raise ValueError(
                f"the query vector has {len(vector)} dimensions, which the indexed vectors of "
                f"{model} do not have"
            ) from None
        if not rerank:
            return result
        from nyla.ai.rerank import RerankOperations
        from nyla.knowledge.reranking import reranked

        try:
            return await reranked(
                RerankOperations(self.ai),
                query,
                result,
                candidates=self.settings.rerank_candidates,
                model=self.settings.rerank_model,
            )
        except NylaError as exc:
            if query.rerank:  # asked for on this search: say why it could not be done
                raise
            # the store's setting: every search (the agent's context too) goes on unreranked
            log.warning("search not reranked (the rerank setting is on): %s", exc)
            return result.model_copy(update={"hits": result.hits[: query.k]})

    def _dimensions(self, model: str) -> int | None:
        """The dimension of ``model``'s vectors, when the AI service knows the model."""
        if model not in self._dims:
            spec = self.ai.model_spec(model)
            self._dims[model] = spec.capabilities.embedding_dimensions if spec else None
        return self._dims[model]

    def _languages(self, model: str) -> frozenset[str]:
        """The languages ``model`` was trained on (empty: any, or unknown)."""
        if model not in self._model_languages:
            spec = self.ai.model_spec(model)
            self._model_languages[model] = frozenset(spec.capabilities.languages if spec else ())
        return self._model_languages[model]

    async def _embed(self, query: SearchQuery) -> tuple[Sequence[float], str]:
        """(vector, model) of the query's text, after refusing a text with nothing to find."""
        if not any(ch.isalnum() for ch in query.text):
            raise InvalidQueryError(
                f"the query {query.text!r} has no words to search for: give a word or a phrase"
            )
        unsearchable(query.text)
        spec = self.embedding_spec(query.context)
        response = await self.ai.embed([query.text], context=query.context, model=spec.id)
        if not any(response.vectors[0]):
            raise InvalidQueryError(
                f"the embedding model {response.model} gives {query.text!r} no direction to "
                "search (a zero vector): rephrase the query"
            )
        return response.vectors[0], response.model

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
        self, query: SearchQuery, vector: Sequence[float], model: str, k: int
    ) -> SearchResult:
        settings = self.settings
        hybrid = settings.hybrid if query.hybrid is None else query.hybrid
        found: SearchResult | bool = False
        if (
            self._file_rows_checked
            and self._text_search_ready
            and settings.file_rows_cache
            and query.filters is None
            and not (hybrid and query.text.strip())
        ):
            # the fast path: a kept plan made ready runs its statement and makes the hits
            # with no other layer (issue 32: building the general path's query, its
            # closure and its checks cost more than the statement's own Python, measured)
            key = plan_key(
                model,
                readable_key_tuple(query.context, query.scopes),
                k,
                hybrid,
                len(vector),
                settings,
            )
            plan = self.indexes.estimates.plan(key)
            if plan is not None and plan.ready is not None:
                files = self.indexes.files
                found = await self.db.read_driver(
                    lambda conn: ready_search(conn, plan, vector, model, k, hybrid, files)
                )
        if isinstance(found, bool):
            # not ready, or too few passed the filter (True: the scan goes on iterative)
            found = await self._general(query, vector, model, k, hybrid, found)
        if self.indexes.estimates.wanted and self._measuring() is None:
            self._calibrating = asyncio.create_task(self._calibrate())
        return found

    async def _general(
        self,
        query: SearchQuery,
        vector: Sequence[float],
        model: str,
        k: int,
        hybrid: bool,
        short: bool,
    ) -> SearchResult:
        """A search with every decision taken (:func:`~nyla.knowledge.search.search`),
        the store made ready for it first (``short``: see there)."""
        if not self._text_search_ready:
            await self.ensure_text_search()
        if self.settings.file_rows_cache and not self._file_rows_checked:
            self._file_rows_checked = True
            await self.indexes.files.ensure_trigger(self.db)
        vector_weight = 1.0
        if hybrid:
            known = self._languages(model)
            if known and detect(query.text) not in known:
                # the model's vectors of a text in a language it was not trained on (or
                # too short to tell) carry little meaning: the full-text ranking leads
                # (tuned on bench/retrieval/ndcg/tuning.tsv, see docs/knowledge.md)
                vector_weight = self.settings.foreign_vector_weight
        plan = ScopedQuery(
            keys=readable_keys(query.context, query.scopes),
            model=model,
            vector=vector,
            text=query.text,
            k=k,
            filters=query.filters,
            hybrid=hybrid,
            vector_weight=vector_weight,
        )
        return await self.db.read_driver(
            lambda conn: search(
                conn, plan, settings=self.settings, indexes=self.indexes, short=short
            )
        )

    def _measuring(self) -> asyncio.Task[None] | None:
        """The background measurement running on this event loop, if any (one left on a
        loop that has ended never finishes: a command or test that ran before, on its own
        loop)."""
        task = self._calibrating
        if task is None or task.done() or task.get_loop() is not asyncio.get_running_loop():
            return None
        return task

    async def calibrated(self) -> None:
        """Wait until the scopes' ef_search noted by the searches so far are learned
        (:mod:`nyla.knowledge.search_calibration`; measuring runs in the background)."""
        while (task := self._measuring()) is not None:
            await asyncio.shield(task)

    async def _calibrate(self) -> None:
        """Learn the ef_search of every scope a search noted, one after the other, on the
        read pool (a failure keeps the rule's ef for that scope)."""
        estimates = self.indexes.estimates
        try:
            while estimates.wanted:
                scope, ceiling = next(iter(estimates.wanted.items()))
                model, dims, keys, k = scope
                measure = functools.partial(
                    calibrated_ef,
                    model=model,
                    dims=dims,
                    keys=keys,
                    k=k,
                    ceiling=ceiling,
                    max_scan_tuples=self.settings.max_scan_tuples,
                )
                try:
                    learned = await self.db.read_driver(measure)
                except Exception as exc:
                    log.warning("the ef_search of a scope could not be measured: %s", exc)
                    learned = None
                estimates.learn(scope, ceiling if learned is None else learned)
        finally:
            if self._calibrating is asyncio.current_task():
                self._calibrating = None

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
