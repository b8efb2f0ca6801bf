"""Scoped semantic search: exact ranking for small scopes, HNSW with iterative scans for
large ones, and hybrid search fusing full-text and vector ranks (reciprocal rank fusion).

Every query carries the caller's scope filter ``owner_key = ANY(:keys)`` and one embedding
model, inside the SQL, on typed columns. Which vector path serves a query is decided by the
number of readable, filtered chunks and files, from the file index (``chunk_count`` of the
files the scope's btree finds): for a small scope the exact path reaches exactly those
files' chunks through their primary-key ranges and ranks them (recall 1.0, always a full
k; its cost is one range probe per file plus one distance per chunk); for a large one the
model's HNSW index answers with ``hnsw.iterative_scan = relaxed_order``, which keeps
scanning the graph until k rows pass the filter (pgvector >= 0.8), or without the iterative
scan where the counts say (nearly) every row is readable (the filter stays; a search that
gets too few rows runs again with it). The chunk table itself carries no secondary index
(see :mod:`nyla.tables.knowledge`).

The service runs searches on :meth:`nyla.db.Database.read_driver`: on the psycopg
connection itself, every statement prepared once per connection (the ranking's text holds
no per-query values: the limit and the model are literals, the rest are parameters; the
exact ranking's owner keys too are a literal, so it is planned once per scope), the query
vector sent in pgvector's binary form, the HNSW settings set only when they change.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from nyla.knowledge.file_rows import FileRows
from nyla.knowledge.search_driver import (
    Executor,
    OwnerKeys,
    QueryVector,
    ReadConnection,
    adapt,
    driver_rows,
    driver_sql,
)
from nyla.knowledge.search_driver import info as _info
from nyla.knowledge.search_driver import rows as _rows
from nyla.knowledge.search_hits import (
    HIT_COLUMNS,
    hit,
    merged,
    rescored,
    result,
)
from nyla.knowledge.search_plan import (
    EF_MAX,
    EF_REFERENCE_ROWS,
    FILE_PROBE_COST,
    EstimateCache,
    SearchPlan,
    count_candidates,
    effective_ef_search,
    hnsw_settings_change,
    needs_iterative_scan,
    plan_key,
    plan_search,
    prefer_exact,
    table_rows,
)
from nyla.knowledge.search_ready import held_hits, ready_ranking, ready_ranks
from nyla.knowledge.search_sql import filter_where as _where
from nyla.knowledge.search_sql import ranking_sql, ranking_with_files_sql, with_keys
from nyla.knowledge.search_sql import scope_where as _scope_where
from nyla.knowledge.search_text import text_ranks
from nyla.knowledge.settings import KnowledgeSettings
from nyla.knowledge.vector_index import VectorIndexes
from nyla.knowledge.vectors import (
    FILE_NO_OF,
    vector_expr,
)
from nyla.models.knowledge import SearchFilters, SearchHit, SearchResult

__all__ = [
    "EF_MAX",
    "EF_REFERENCE_ROWS",
    "FILE_PROBE_COST",
    "EstimateCache",
    "Executor",
    "QueryVector",
    "ScopedQuery",
    "count_candidates",
    "driver_sql",
    "effective_ef_search",
    "needs_iterative_scan",
    "prefer_exact",
    "reciprocal_rank_fusion",
    "search",
    "table_rows",
    "text_ranks",
    "vector_ranks",
]


async def vector_ranks(
    session: Executor,
    *,
    file_where: str,
    where: str,
    params: dict[str, Any],
    dims: int,
    vector: Sequence[float],
    model: str,
    limit: int,
    exact: bool,
    settings: KnowledgeSettings,
    ef_search: int | None = None,
    scoped: bool = False,
    files: FileRows | None = None,
    iterative: bool = True,
) -> list[SearchHit]:
    """The ``limit`` nearest readable chunks of ``model`` (``where`` selects it), nearest
    first, with their details: one round trip for the ranking and the rows, or with
    ``files`` (enabled, on the driver path) the chunks ranked alone and their files'
    details from ``files`` (a second round trip only for files it does not hold).
    ``iterative=False``: an HNSW scan without pgvector's iterative scan (see
    :func:`~nyla.knowledge.search_plan.needs_iterative_scan`)."""
    driver = session if isinstance(session, ReadConnection) else None
    # the file details from ``files`` (None: joined in the ranking statement)
    held = (
        files
        if files is not None
        and files.enabled
        and (scoped or not exact)
        and driver is not None
        and (files.listening(driver) or await files.listen(driver))
        else None
    )
    # the files joined in the ranking while most searches' hits' files are not held
    joined_at = None if held is None or held.worth_holding() else held.generation
    shape = (file_where, where, int(dims), int(limit), exact, scoped)
    if joined_at is not None:
        sql = ranking_with_files_sql(*shape)
    else:
        sql = ranking_sql(*shape, held is not None)
    bound = {**params, "q": QueryVector(vector)}
    setup = info = None
    if not exact:
        info = driver.info if driver is not None else await _info(session)
        setup = hnsw_settings_change(info, ef_search or settings.ef_search, settings, iterative)
    if exact and driver is not None:
        # The scope's keys written into the exact ranking's text: prepared with the keys as
        # a parameter it gets no good generic plan (the scope's size is unknown), so
        # PostgreSQL planned it again on every execution (0.25 ms of a 1 % scope's 0.6 ms
        # on the server); with the keys in its text it is planned once per connection and
        # scope (measured: 0.60 -> 0.37 ms server CPU at 1 % of 10k, 1.40 -> 1.24 at 10 %)
        rows = await driver_rows(driver, with_keys(sql, tuple(params["keys"])), bound)
    elif setup is None and driver is not None:
        adapt(driver)
        rows = await driver.rows(driver_sql(sql), bound)
    elif setup is None:
        rows = await _rows(session, sql, bound)
    elif driver is not None:
        # the settings and the ranking in one round trip (the first statement of a new
        # connection when the counts are known already: its parameters adapted first)
        adapt(driver)
        rows = await driver.rows_after(driver_sql(setup[0]), setup[1], driver_sql(sql), bound)
    else:
        await _rows(session, setup[0], setup[1])
        rows = await _rows(session, sql, bound)
    if setup is not None and info is not None:
        info["nyla_hnsw_settings"] = setup[2]
    if held is not None and driver is not None:
        return await held_hits(driver, rows, held, model, not exact, joined_at)
    return [hit(r, model) for r in rows]


def reciprocal_rank_fusion(
    rankings: Sequence[Sequence[int]], k: int = 60, weights: Sequence[float] | None = None
) -> list[tuple[int, float]]:
    """Ids ordered by the sum of ``weight / (k + rank)`` over the rankings (rank from 1;
    each ranking weighs 1 unless ``weights`` says otherwise)."""
    scores: dict[int, float] = {}
    for n, ranking in enumerate(rankings):
        weight = 1.0 if weights is None else weights[n]
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + weight / (k + rank)
    return sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))


@dataclass(slots=True)
class ScopedQuery:
    """A :class:`~nyla.models.knowledge.SearchQuery` made ready to run: the owner ``keys``
    its context may read, its ``vector`` and embedding ``model``, and ``hybrid`` decided."""

    keys: list[str]
    model: str
    vector: Sequence[float]
    text: str
    k: int
    filters: SearchFilters | None
    hybrid: bool
    #: the vector ranking's weight in the fusion (less when the query's language is not
    #: one the embedding model knows)
    vector_weight: float = 1.0


async def search(
    session: Executor,
    query: ScopedQuery,
    *,
    settings: KnowledgeSettings,
    indexes: VectorIndexes,
    short: bool = False,
) -> SearchResult:
    """One scoped search in ``session``. ``indexes`` knows which HNSW indexes exist and
    caches the candidate counts briefly (they only choose the path: both paths return
    correct results). ``short``: the kept plan's ready ranking found too few already
    (:func:`~nyla.knowledge.search_ready.ready_search`), the scan starts iterative."""
    model, k, hybrid, dims = query.model, query.k, query.hybrid, len(query.vector)
    if not query.keys or k <= 0:
        return SearchResult(embedding_model=model, hybrid=hybrid)
    files = indexes.files if settings.file_rows_cache else None
    memo = plan = None
    if query.filters is None:
        # an unfiltered search's plan is kept while its counts are fresh: most searches
        # repeat a scope, and planning again cost about a tenth of the client's Python
        memo = plan_key(model, query.keys, k, hybrid, dims, settings)
        plan = indexes.estimates.plan(memo)
    done: tuple[SearchPlan, list[SearchHit]] | None = None
    try:
        if (
            plan is not None
            and plan.ready is not None
            and files is not None
            and type(session) is ReadConnection
            and not short
        ):
            # kept and made ready: the statement runs with no decision taken again
            nearest = await ready_ranks(session, plan.ready, query.vector, model, files)
            if nearest is not None:
                if plan.enough(len(nearest)):
                    done = plan, nearest
                short = done is None  # too few passed the filter
        if done is None:
            done = await _planned_ranks(session, query, plan, memo, files, settings, indexes, short)
    except BaseException:
        # a rolled-back transaction also rolls back the connection's HNSW settings (an
        # invalidated connection has no info left to clear: it will not be reused)
        with contextlib.suppress(Exception):
            (await _info(session)).pop("nyla_hnsw_settings", None)
        raise
    ran, nearest = done
    exact, candidates, pool = ran.exact, ran.counted[0], ran.pool
    if hybrid and query.text.strip():
        _, where, params = _filtered(query)
        hits = await _fused(session, query, nearest, where, params, pool, ran.counted, settings)
    else:
        # each hit carries its score already (1 - distance)
        hits = merged(nearest, k)
    return result(hits, "exact" if exact else "hnsw", hybrid, candidates, model)


def _filtered(query: ScopedQuery) -> tuple[str, str, dict[str, Any]]:
    """(file condition, chunk condition, parameters) of ``query``'s scope and filters."""
    if query.filters is None:
        file_where, where = _scope_where(query.model)
        return file_where, where, {"keys": OwnerKeys(query.keys)}
    file_where, where, params = _where(query.model, query.filters)
    params["keys"] = OwnerKeys(query.keys)
    return file_where, where, params


async def _planned_ranks(
    session: Executor,
    query: ScopedQuery,
    plan: SearchPlan | None,
    memo: tuple[Any, ...] | None,
    files: FileRows | None,
    settings: KnowledgeSettings,
    indexes: VectorIndexes,
    short: bool = False,
) -> tuple[SearchPlan, list[SearchHit]]:
    """The plan (``plan`` when kept, else made) and the nearest chunks of ``query``, on
    the general path: every decision taken again (and a kept plan made ready). ``short``:
    the plan's scan without the iterative mode found too few, it starts with it."""
    file_where, where, params = _filtered(query)
    model, dims = query.model, len(query.vector)
    if plan is None:
        plan = await plan_search(
            session,
            model=model,
            dims=dims,
            k=query.k,
            hybrid=query.hybrid,
            file_where=file_where,
            where=where,
            params=params,
            settings=settings,
            estimates=indexes.estimates,
            built=indexes.built,
            memo=memo,
            watched=await _watched(session, files),
        )
    if memo is not None and plan.ready is None:
        plan.ready = ready_ranking(plan, query.keys, dims, model, settings)
    iterative, candidates = plan.iterative or short, plan.counted[0]
    while True:
        nearest = await vector_ranks(
            session,
            file_where=file_where,
            where=where,
            params=params,
            dims=dims,
            vector=query.vector,
            model=model,
            limit=plan.pool,
            exact=plan.exact,
            scoped=plan.scoped,
            settings=settings,
            files=files,
            ef_search=plan.ef_search,
            iterative=iterative,
        )
        if iterative or len(nearest) >= min(plan.pool, candidates):
            return plan, nearest
        # the filter passed fewer of the scan's rows than the counts said: the iterative
        # scan goes on until enough pass
        iterative = True


async def _watched(session: Executor, files: FileRows | None) -> bool:
    """Whether ``session`` listens for changes to the file index (made to, where it can):
    then the candidate counts stay fresh while no change is notified."""
    if files is None or not files.enabled or not isinstance(session, ReadConnection):
        return False
    return files.listening(session) or await files.listen(session)


async def _fused(
    session: Executor,
    query: ScopedQuery,
    nearest: list[SearchHit],
    where: str,
    params: dict[str, Any],
    pool: int,
    counted: tuple[int, int, int],
    settings: KnowledgeSettings,
) -> list[SearchHit]:
    """The hits of a hybrid search: the ``nearest`` chunks fused with the full-text ranking
    of ``query``'s text (``counted``: the readable chunks, files and tokens)."""
    candidates, _, tokens = counted
    keyword = await text_ranks(
        session,
        where=where,
        params=params,
        query=query.text,
        limit=pool,
        total=candidates,
        avg_tokens=tokens / max(candidates, 1),
        method=settings.text_rank,
    )
    fused = reciprocal_rank_fusion(
        [[h.chunk_id for h in nearest], keyword], settings.rrf_k, (query.vector_weight, 1.0)
    )
    # twice k: room for the copies of a file indexed from two places, merged into one
    dims = len(query.vector)
    ranked = await _ordered_hits(
        session, fused[: 2 * query.k], nearest, dims, query.vector, query.model
    )
    return merged(ranked, query.k)


async def _ordered_hits(
    session: Executor,
    ranked: list[tuple[int, float]],
    nearest: list[SearchHit],
    dims: int,
    vector: Sequence[float],
    model: str,
) -> list[SearchHit]:
    """The ranked chunks as hits with their scores (details of chunks only the full-text
    ranking found are read here)."""
    by_id = {h.chunk_id: h for h in nearest}
    missing = [i for i, _ in ranked if i not in by_id]
    for found in await _hits(session, missing, dims, vector, model):
        by_id[found.chunk_id] = found
    return [rescored(by_id[i], score) for i, score in ranked if i in by_id]


async def _hits(
    session: Executor, ids: list[int], dims: int, vector: Sequence[float], model: str
) -> list[SearchHit]:
    """Details of chunks of ``model`` found by full text only (their vector distance
    computed too)."""
    if not ids:
        return []
    rows = await _rows(
        session,
        f"SELECT {HIT_COLUMNS}, "
        f"{vector_expr(dims, 'c.embedding')} <=> CAST(:q AS vector({int(dims)})) "
        f"FROM knowledge_chunk c JOIN knowledge_file_index f ON f.file_no = {FILE_NO_OF} "
        "WHERE c.id = ANY(:ids)",
        {"ids": ids, "q": QueryVector(vector)},
    )
    return [hit(r, model) for r in rows]
