"""The vector ranking statements of a knowledge search (their text holds no per-query
value: built once per filter shape, model, size and path, prepared once per connection)."""

from __future__ import annotations

import functools
from typing import Any

from nyla.knowledge.search_driver import driver_sql, keys_sql
from nyla.knowledge.search_hits import (
    CHUNK_COLUMNS,
    FILE_DETAIL_COLUMNS,
    FILE_OF_RANKED,
    HIT_COLUMNS,
    RANKED_HIT_COLUMNS,
)
from nyla.knowledge.vectors import FILE_NO_OF, IN_FILE, index_expr, sql_literal, vector_expr
from nyla.models.knowledge import SearchFilters


@functools.lru_cache(maxsize=256)
def ranking_sql(
    file_where: str,
    where: str,
    dims: int,
    limit: int,
    exact: bool,
    scoped: bool = False,
    lean: bool = False,
) -> str:
    """The ranking statement. The limit is a literal: a prepared statement's generic plan
    then knows it is small. ``scoped``: the exact path may read the scope's chunks through
    the scope btree. ``lean``: the chunks alone (:data:`CHUNK_COLUMNS` and the distance),
    their files' details looked up afterwards (:mod:`nyla.knowledge.file_rows`); on the
    HNSW path not sorted by the exact distance either (the caller sorts the k rows)."""
    expr = f"{vector_expr(dims, 'c.embedding')} <=> CAST(:q AS vector({dims}))"
    if exact and scoped:
        # The scope's chunks by the btree on (owner key, model), ranked exactly on their id
        # and distance alone, the k nearest then read by primary key: carrying the text
        # columns of every scope row through the ranking cost ~0.15 µs a row. The distance
        # is computed once a row on the stored column as it is (the model's condition
        # keeps other dimensions out; a cast to vector(dims) cost ~0.2 µs a row) and
        # sorted on outside a subquery (OFFSET 0 keeps it one), which no vector index can
        # serve. Measured on the server, 1 % of 100k (1,000 rows), load 8-9, interleaved:
        # 1.48 ms with the columns carried and the cast, 1.21 ms this way, 1.15 ms for
        # PostgreSQL's own plan on a plain (id, owner, text, vector) table.
        plain = f"c.embedding <=> CAST(:q AS vector({dims}))"
        ranked = (
            f"SELECT {CHUNK_COLUMNS}, n.distance FROM (SELECT * FROM (SELECT c.id, "
            f"{plain} AS distance FROM knowledge_chunk c WHERE {where} OFFSET 0) n "
            f"ORDER BY n.distance LIMIT {limit}) n "
            "JOIN knowledge_chunk c ON c.id = n.id ORDER BY n.distance"
        )
        if lean:
            return ranked
        return (
            f"SELECT {RANKED_HIT_COLUMNS}, n.distance FROM ({ranked}) n "
            f"JOIN knowledge_file_index f ON {FILE_OF_RANKED} ORDER BY n.distance"
        )
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
            f"WHERE {file_where} ORDER BY x.distance + 0 LIMIT {limit}"
        )
        return (
            f"WITH nearest AS MATERIALIZED ({inner}) "
            f"SELECT {HIT_COLUMNS}, n.distance FROM nearest n "
            "JOIN knowledge_chunk c ON c.id = n.id "
            f"JOIN knowledge_file_index f ON f.file_no = {FILE_NO_OF} ORDER BY n.distance"
        )
    # The index orders by half precision; the reported distance is the exact one. The
    # ranking carries the chunk's columns (the index scan has read its row already). A
    # subquery with a LIMIT is never merged into the outer query, so the plan stays an
    # index scan under the limit whatever the join.
    order = f"{index_expr(dims, 'c.embedding')} <=> CAST(:q AS halfvec({dims}))"
    ranked = (
        f"SELECT {CHUNK_COLUMNS}, {expr} AS distance FROM knowledge_chunk c WHERE {where} "
        f"ORDER BY {order} LIMIT {limit}"
    )
    if lean:
        return ranked
    # relaxed_order may return rows slightly out of order (and half precision may swap
    # near ties): the outer query sorts by the exact distance
    return (
        f"SELECT {RANKED_HIT_COLUMNS}, n.distance FROM ({ranked}) n "
        f"JOIN knowledge_file_index f ON {FILE_OF_RANKED} ORDER BY n.distance"
    )


@functools.lru_cache(maxsize=256)
def ranking_with_files_sql(
    file_where: str, where: str, dims: int, limit: int, exact: bool, scoped: bool = False
) -> str:
    """The lean ranking (:func:`ranking_sql`) with each row followed by its file's details
    (:data:`FILE_DETAIL_COLUMNS`), in no particular order."""
    lean = ranking_sql(file_where, where, dims, limit, exact, scoped, True)
    return (
        f"SELECT n.*, {FILE_DETAIL_COLUMNS} FROM ({lean}) n "
        f"JOIN knowledge_file_index f ON {FILE_OF_RANKED}"
    )


@functools.lru_cache(maxsize=256)
def with_keys(sql: str, keys: tuple[str, ...]) -> str:
    """``sql`` for the driver with the owner keys as a ``text[]`` literal in place of the
    ``:keys`` parameter (substituted after the bind conversion: a key's own ``:`` or
    ``%`` is never read as a parameter)."""
    return driver_sql(sql).replace("%(keys)s", keys_sql(keys).replace("%", "%%"))


@functools.lru_cache(maxsize=64)
def scope_where(model: str) -> tuple[str, str]:
    """:func:`filter_where` without filters (most searches), built once per model."""
    file_where, where, _ = filter_where(model, None)
    return file_where, where


def filter_where(model: str, filters: SearchFilters | None) -> tuple[str, str, dict[str, Any]]:
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
