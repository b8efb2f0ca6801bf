"""Scoped semantic search: exact ranking for small scopes, HNSW with iterative scans for
large ones, and hybrid search fusing full-text and vector ranks (reciprocal rank fusion).

Every query carries the caller's scope filter ``owner_key = ANY(:keys)`` and one embedding
model, inside the SQL, on typed columns. Which vector path serves a query is decided by the
number of readable, filtered chunks and files, from the file index (``chunk_count`` of the
files the scope's btree finds): for a small scope the exact path reaches exactly those
files' chunks through their primary-key ranges and ranks them (recall 1.0, always a full
k; its cost is one range probe per file plus one distance per chunk); for a large one the
model's HNSW index answers with ``hnsw.iterative_scan = relaxed_order``, which keeps
scanning the graph until k rows pass the filter (pgvector >= 0.8). The chunk table itself carries no secondary index (see
:mod:`nyla.knowledge.tables`).

The service runs searches on :meth:`nyla.db.Database.read_driver`: on the psycopg
connection itself, every statement prepared once per connection (the ranking's text holds
no per-query values: the limit and the model are literals, the rest are parameters), the
query vector sent in pgvector's binary form, the HNSW settings set only when they change.
"""

from __future__ import annotations

import contextlib
import functools
import math
import re
import time
from collections.abc import Sequence
from typing import Any

from psycopg.adapt import Dumper
from psycopg.pq import Format
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession

from nyla.knowledge.settings import KnowledgeSettings
from nyla.knowledge.tables import TS_CONFIG
from nyla.knowledge.vectors import (
    FILE_NO_OF,
    IN_FILE,
    SEQ_OF,
    hnsw_index_name,
    index_expr,
    sql_literal,
    vector_binary,
    vector_expr,
    vector_literal,
)
from nyla.models.files import Scope
from nyla.models.knowledge import SearchFilters, SearchHit, SearchResult
from nyla.read_pool import ReadConnection

#: where a search runs: a connection of :meth:`nyla.db.Database.read_driver` (the
#: service's path), a SQLAlchemy connection or a session
Executor = ReadConnection | AsyncConnection | AsyncSession


#: a ``:name`` bind of SQLAlchemy's ``text()`` (not ``::type``, not inside ``a:b``)
_BIND = re.compile(r"(?<![:\w\\]):(\w+)(?!:)")


@functools.lru_cache(maxsize=256)
def driver_sql(sql: str) -> str:
    """``sql`` with ``:name`` binds written as the driver's ``%(name)s``."""
    return _BIND.sub(r"%(\1)s", sql.replace("%", "%%"))


class QueryVector:
    """A query vector as a statement parameter: pgvector's binary form on the driver path
    (no text to format or parse), its text form through SQLAlchemy."""

    __slots__ = ("values",)

    def __init__(self, values: Sequence[float]) -> None:
        self.values = values


class _QueryVectorDumper(Dumper):
    # oid 0: the server takes the type from the statement's CAST (vector or halfvec)
    format = Format.BINARY
    oid = 0

    def dump(self, obj: QueryVector) -> bytes:
        return vector_binary(obj.values)


async def _rows(executor: Executor, sql: str, params: dict[str, Any]) -> list[Any]:
    """The rows of one statement. On the driver path it is prepared on first use per
    connection; on a SQLAlchemy connection it goes to the driver as it is
    (``exec_driver_sql``: no statement compilation)."""
    if isinstance(executor, ReadConnection):
        if "vector_dumper" not in executor.info:
            executor.driver.adapters.register_dumper(QueryVector, _QueryVectorDumper)
            executor.info["vector_dumper"] = True
        return await executor.rows(driver_sql(sql), params)
    params = {
        name: vector_literal(v.values) if isinstance(v, QueryVector) else v
        for name, v in params.items()
    }
    if isinstance(executor, AsyncConnection):
        return list(await executor.exec_driver_sql(driver_sql(sql), params))
    return list(await executor.execute(text(sql), params))


async def _info(executor: Executor) -> dict[Any, Any]:
    """The pooled connection's ``info`` (it outlives the checkout)."""
    if isinstance(executor, AsyncSession):
        return (await executor.connection()).info
    return executor.info


def _where(model: str, filters: SearchFilters | None) -> tuple[str, str, dict[str, Any]]:
    """(condition on the file index ``f``, condition on the chunks ``c``, parameters).
    The chunk condition alone is complete; the file condition narrows the files first."""
    files = ["f.owner_key = ANY(:keys)"]
    # the model as a literal: the partial HNSW index's predicate must match it
    chunks = ["c.owner_key = ANY(:keys)", f"c.embedding_model = {sql_literal(model)}"]
    params: dict[str, Any] = {}
    if filters is not None:
        # file-level filters: on a chunk through its file number (a hashed subplan)
        if filters.file_ids is not None:
            files.append("f.file_id = ANY(:file_ids)")
            chunks.append(
                f"{FILE_NO_OF} IN (SELECT file_no FROM knowledge_file_index "
                "WHERE file_id = ANY(:file_ids))"
            )
            params["file_ids"] = list(filters.file_ids)
        if filters.data_source_ids is not None:
            files.append("f.data_source_id = ANY(:data_source_ids)")
            chunks.append(
                f"{FILE_NO_OF} IN (SELECT file_no FROM knowledge_file_index "
                "WHERE data_source_id = ANY(:data_source_ids))"
            )
            params["data_source_ids"] = list(filters.data_source_ids)
        if filters.content_types is not None:
            chunks.append("c.content_type = ANY(:content_types)")
            params["content_types"] = list(filters.content_types)
    return " AND ".join(files), " AND ".join(chunks), params


class EstimateCache:
    """Candidate counts per (filter, keys) for ``ttl`` seconds (bounded size)."""

    def __init__(self, ttl: float = 30.0, size: int = 4096) -> None:
        self.ttl = ttl
        self.size = size
        self._items: dict[Any, tuple[float, Any]] = {}

    def get(self, key: Any) -> Any:
        """The cached estimate, or ``None`` when missing or expired."""
        item = self._items.get(key)
        if item is None or time.monotonic() - item[0] > self.ttl:
            return None
        return item[1]

    def put(self, key: Any, value: Any) -> None:
        """Remember ``value`` (the oldest entry goes when full)."""
        if len(self._items) >= self.size:
            self._items.pop(next(iter(self._items)))
        self._items[key] = (time.monotonic(), value)

    def clear(self) -> None:
        """Forget everything (after bulk loads change the row counts)."""
        self._items.clear()


async def table_rows(session: Executor) -> int:
    """The planner's row count of the chunk table (all models)."""
    rows = await _rows(
        session,
        # to_regclass at run time: a prepared statement would keep the table's old oid
        "SELECT greatest(reltuples, 0)::bigint FROM pg_class "
        "WHERE oid = to_regclass('knowledge_chunk')",
        {},
    )
    return int(rows[0][0] or 0) if rows else 0


#: what the exact path's range probe of one file costs, in distance computations of one
#: chunk (measured on 10k one-chunk files, load ~6: a 10 % scope ranks exactly in 10 ms,
#: on HNSW in 4.8 ms; a 1 % scope exactly in 2-3 ms, on HNSW in 23-29 ms)
FILE_PROBE_COST = 5.0


def prefer_exact(
    candidates: int,
    total: int,
    limit: int,
    settings: KnowledgeSettings,
    files: int = 0,
) -> bool:
    """Exact ranking when it costs less than an iterative HNSW scan would.

    Exact probes the ``files``' primary-key ranges (:data:`FILE_PROBE_COST` each) and
    computes ``candidates`` distances; HNSW with iterative scans visits about
    ``limit * total / candidates`` graph nodes, each costing several distance computations
    (``exact_cost_factor`` squared). Exact wins while its cost is at most ``factor**2 *
    limit * total / candidates``, and always at or below ``exact_threshold``. Measured (2
    cores): 10k readable rows of 100k rank faster on HNSW, 10k of 1M faster exactly; a 10 %
    scope of 10k one-chunk files faster on HNSW (1,000 probes), a 1 % one exactly.
    """
    cost = candidates + FILE_PROBE_COST * files
    if cost <= settings.exact_threshold:
        return True
    hnsw = settings.exact_cost_factor**2 * limit * max(total, candidates) / max(candidates, 1)
    return cost <= hnsw


async def count_candidates(
    session: Executor, file_where: str, params: dict[str, Any]
) -> tuple[int, int]:
    """(readable filtered chunks, their files), counted from the file index (no chunk is
    read; a content-type filter is not counted, which only errs towards the HNSW path)."""
    rows = await _rows(
        session,
        "SELECT coalesce(sum(f.chunk_count), 0), count(*) FROM knowledge_file_index f "
        f"WHERE {file_where}",
        params,
    )
    return int(rows[0][0]), int(rows[0][1])


#: table size up to which ``ef_search`` is used as configured
EF_REFERENCE_ROWS = 100_000
EF_MAX = 1000


def effective_ef_search(base: int, total: int, candidates: int) -> int:
    """The ``hnsw.ef_search`` of one search: ``base`` on tables up to 100k rows, growing as
    ``(total / 100k) ** 0.35`` beyond and as ``(total / candidates) ** 0.45`` under a filter.

    Measured (bench/rag.py, bench/rag_sweep.py; m=16, ef_construction=64): ef 100 gives
    recall 0.98 at 100k but 0.87 at 1M, where 200 gives 0.949 and 225 0.956. An iterative
    scan under a 10 % filter of 1M reaches 0.86 at ef 200, 0.944 at 400, 0.973 at 600 and
    0.988 at 800: a filter passing a tenth of the rows needs about three times the
    candidates (1M: 224 unfiltered, 631 under a 10 % filter)."""
    size = max(1.0, total / EF_REFERENCE_ROWS) ** 0.35
    narrowing = max(1.0, total / max(candidates, 1)) ** 0.45
    return min(EF_MAX, max(base, math.ceil(base * size * narrowing)))


async def vector_ranks(
    session: Executor,
    *,
    file_where: str,
    where: str,
    params: dict[str, Any],
    dims: int,
    vector: Sequence[float],
    limit: int,
    exact: bool,
    settings: KnowledgeSettings,
    ef_search: int | None = None,
) -> list[SearchHit]:
    """The ``limit`` nearest readable chunks, nearest first, with their details (one
    round trip for the ranking and the rows)."""
    expr = f"{vector_expr(dims, 'c.embedding')} <=> CAST(:q AS vector({int(dims)}))"
    # the limit as a literal: a prepared statement's generic plan then knows it is small
    bound = {**params, "q": QueryVector(vector)}
    setup = None
    if exact:
        # The scope's files (btree on the file index), then each file's chunks by its
        # primary-key range, ranked exactly. LATERAL + OFFSET 0 keeps the per-file range
        # scans: as a plain join the planner, not knowing how few chunks a range holds,
        # prefers one sequential scan of the whole chunk table (measured 32 ms vs 1 ms for
        # 1,000 of 100,000 chunks). "+ 0" keeps it off the HNSW index.
        inner = (
            "SELECT x.id, x.distance FROM knowledge_file_index f CROSS JOIN LATERAL ("
            f"SELECT c.id, {expr} AS distance FROM knowledge_chunk c "
            f"WHERE {IN_FILE} AND {where} OFFSET 0) x "
            f"WHERE {file_where} ORDER BY x.distance + 0 LIMIT {int(limit)}"
        )
    else:
        setup = await _hnsw_settings_change(session, ef_search or settings.ef_search, settings)
        # the index orders by half precision; the reported distance is the exact one
        order = f"{index_expr(dims, 'c.embedding')} <=> CAST(:q AS halfvec({int(dims)}))"
        inner = (
            f"SELECT c.id, {expr} AS distance FROM knowledge_chunk c WHERE {where} "
            f"ORDER BY {order} LIMIT {int(limit)}"
        )
    # relaxed_order may return rows slightly out of order (and half precision may swap
    # near ties): the outer query sorts by the exact distance
    sql = (
        f"WITH nearest AS MATERIALIZED ({inner}) "
        f"SELECT {_HIT_COLUMNS}, n.distance FROM nearest n "
        "JOIN knowledge_chunk c ON c.id = n.id "
        f"JOIN knowledge_file_index f ON f.file_no = {FILE_NO_OF} ORDER BY n.distance"
    )
    if setup is None:
        rows = await _rows(session, sql, bound)
    elif isinstance(session, ReadConnection):
        # the settings and the ranking in one round trip
        rows = await session.rows_after(driver_sql(setup[0]), setup[1], driver_sql(sql), bound)
    else:
        await _rows(session, setup[0], setup[1])
        rows = await _rows(session, sql, bound)
    if setup is not None:
        (await _info(session))["nyla_hnsw_settings"] = setup[2]
    return [_hit(r) for r in rows]


async def _hnsw_settings_change(
    session: Executor, ef_search: int, settings: KnowledgeSettings
) -> tuple[str, dict[str, Any], tuple[int, int]] | None:
    """The statement that sets the HNSW search settings on the pooled connection, or
    ``None`` when they are set already: they only affect HNSW index scans, which only the
    knowledge store runs, so they are set when they change, not in every query."""
    wanted = (int(ef_search), int(settings.max_scan_tuples))
    if (await _info(session)).get("nyla_hnsw_settings") == wanted:
        return None
    return (
        "SELECT set_config('hnsw.ef_search', :ef, false), "
        "set_config('hnsw.iterative_scan', 'relaxed_order', false), "
        "set_config('hnsw.max_scan_tuples', :mst, false)",
        {"ef": str(wanted[0]), "mst": str(wanted[1])},
        wanted,
    )


def keyword_query(query: str) -> str:
    """A ``to_tsquery`` expression matching any word of ``query`` (a question rarely has
    all its words in one chunk; ranking rewards chunks that match more of them)."""
    words = list(dict.fromkeys(w for w in re.findall(r"\w+", query.lower()) if len(w) > 1))
    return " | ".join(f"'{w}'" for w in words[:32])


async def text_ranks(
    session: Executor, *, where: str, params: dict[str, Any], query: str, limit: int
) -> list[int]:
    """Chunk ids matching words of ``query`` in full text, best first (same scope filter)."""
    tsquery = keyword_query(query)
    if not tsquery:
        return []
    rows = await _rows(
        session,
        "SELECT c.id FROM knowledge_chunk_lookup t "
        "JOIN knowledge_chunk c ON c.id = t.chunk_id, "
        f"to_tsquery('{TS_CONFIG}', :tsq) AS tq "
        f"WHERE t.tsv @@ tq AND t.owner_key = ANY(:keys) AND {where} "
        f"ORDER BY ts_rank_cd(t.tsv, tq, 1) DESC, c.id LIMIT {int(limit)}",
        {**params, "tsq": tsquery},
    )
    return [int(r[0]) for r in rows]


def reciprocal_rank_fusion(
    rankings: Sequence[Sequence[int]], k: int = 60
) -> list[tuple[int, float]]:
    """Ids ordered by the sum of ``1 / (k + rank)`` over the rankings (rank from 1)."""
    scores: dict[int, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + rank)
    return sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))


async def search(
    session: Executor,
    *,
    keys: list[str],
    model: str,
    dims: int,
    vector: Sequence[float],
    query: str,
    k: int,
    filters: SearchFilters | None,
    hybrid: bool,
    settings: KnowledgeSettings,
    known_indexes: set[tuple[str, int]] | None = None,
    estimates: EstimateCache | None = None,
) -> SearchResult:
    """One scoped search in ``session``. ``known_indexes`` lists (model, dims) whose HNSW
    index is known to exist; ``estimates`` caches the candidate counts briefly (they
    only choose the path: both paths return correct results)."""
    if not keys or k <= 0:
        return SearchResult(embedding_model=model, hybrid=hybrid)
    file_where, where, params = _where(model, filters)
    params["keys"] = keys
    candidates, files, total = await _sizes(session, file_where, where, params, estimates)
    pool = max(k, settings.hybrid_candidates) if hybrid else k
    exact = prefer_exact(candidates, total, pool, settings, files)
    if not exact and (model, dims) not in (known_indexes or set()):
        exact = not await _index_exists(session, model, dims)
        if not exact and known_indexes is not None:
            known_indexes.add((model, dims))
    try:
        nearest = await vector_ranks(
            session,
            file_where=file_where,
            where=where,
            params=params,
            dims=dims,
            vector=vector,
            limit=pool,
            exact=exact,
            settings=settings,
            ef_search=(
                effective_ef_search(settings.ef_search, total, candidates)
                if settings.adaptive_ef_search
                else settings.ef_search
            ),
        )
    except BaseException:
        # a rolled-back transaction also rolls back the connection's HNSW settings (an
        # invalidated connection has no info left to clear: it will not be reused)
        with contextlib.suppress(Exception):
            (await _info(session)).pop("nyla_hnsw_settings", None)
        raise
    if hybrid and query.strip():
        keyword = await text_ranks(session, where=where, params=params, query=query, limit=pool)
        fused = reciprocal_rank_fusion([[h.chunk_id for h in nearest], keyword], settings.rrf_k)
        ranked = fused[:k]
    else:
        ranked = [(h.chunk_id, 1.0 - (h.distance or 0.0)) for h in nearest[:k]]
    return SearchResult(
        hits=await _ordered_hits(session, ranked, nearest, dims, vector),
        path="exact" if exact else "hnsw",
        hybrid=hybrid,
        candidates=candidates,
        embedding_model=model,
    )


async def _index_exists(session: Executor, model: str, dims: int) -> bool:
    """True when the model's HNSW index exists in the current schema."""
    rows = await _rows(
        session, "SELECT to_regclass(:name) IS NOT NULL", {"name": hnsw_index_name(model, dims)}
    )
    return bool(rows[0][0])


async def _sizes(
    session: Executor,
    file_where: str,
    where: str,
    params: dict[str, Any],
    estimates: EstimateCache | None,
) -> tuple[int, int, int]:
    """(readable filtered chunks, their files, chunks in the table), from ``estimates``
    when fresh."""
    cache_key = (where, repr(sorted(params.items())))
    counted = estimates.get(cache_key) if estimates is not None else None
    if counted is None:
        counted = await count_candidates(session, file_where, params)
        if estimates is not None:
            estimates.put(cache_key, counted)
    total = estimates.get(("total",)) if estimates is not None else None
    if total is None:
        total = await table_rows(session)
        if estimates is not None:
            estimates.put(("total",), total)
    return counted[0], counted[1], total


async def _ordered_hits(
    session: Executor,
    ranked: list[tuple[int, float]],
    nearest: list[SearchHit],
    dims: int,
    vector: Sequence[float],
) -> list[SearchHit]:
    """The ranked chunks as hits with their scores (details of chunks only the full-text
    ranking found are read here)."""
    by_id = {h.chunk_id: h for h in nearest}
    missing = [i for i, _ in ranked if i not in by_id]
    for found in await _hits(session, missing, dims, vector):
        by_id[found.chunk_id] = found
    ordered = []
    for chunk_id, score in ranked:
        hit = by_id.get(chunk_id)
        if hit is not None:
            hit.score = score
            ordered.append(hit)
    return ordered


_HIT_COLUMNS = (
    f"c.id, f.file_id, f.name, {SEQ_OF}, c.data, c.context_ref, c.content_type, "
    "split_part(c.owner_key, ':', 1), c.embedding_model"
)


def _hit(r: Any) -> SearchHit:
    return SearchHit(
        chunk_id=r[0],
        file_id=r[1],
        file_name=r[2],
        seq=r[3],
        text=r[4],
        context_ref=r[5],
        content_type=r[6],
        scope=Scope(r[7]),
        embedding_model=r[8],
        distance=float(r[9]),
    )


async def _hits(
    session: Executor, ids: list[int], dims: int, vector: Sequence[float]
) -> list[SearchHit]:
    """Details of chunks found by full text only (their vector distance computed too)."""
    if not ids:
        return []
    rows = await _rows(
        session,
        f"SELECT {_HIT_COLUMNS}, "
        f"{vector_expr(dims, 'c.embedding')} <=> CAST(:q AS vector({int(dims)})) "
        f"FROM knowledge_chunk c JOIN knowledge_file_index f ON f.file_no = {FILE_NO_OF} "
        "WHERE c.id = ANY(:ids)",
        {"ids": ids, "q": QueryVector(vector)},
    )
    return [_hit(r) for r in rows]
