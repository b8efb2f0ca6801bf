"""Low-level pieces of the vector store: scope keys, per-model HNSW indexes, the binary COPY
write path, and vector literals for queries."""

from __future__ import annotations

import functools
import hashlib
import struct
import sys
from array import array
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple, cast

from sqlalchemy import CursorResult, text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession

from nyla.knowledge.changes import mark_written
from nyla.models.agent import RunContext
from nyla.models.files import Scope

#: HNSW build parameters (pgvector defaults; the benchmark measures them)
HNSW_M = 16
HNSW_EF_CONSTRUCTION = 64

#: bits of a chunk id that hold the chunk's position in its file (at most 2**20 chunks per
#: file: about 500 M tokens, far beyond any file size limit)
CHUNK_ID_BITS = 20
MAX_CHUNKS_PER_FILE = 1 << CHUNK_ID_BITS


def chunk_id(file_no: int, seq: int) -> int:
    """The id of chunk ``seq`` of file ``file_no``."""
    if not 0 <= seq < MAX_CHUNKS_PER_FILE:
        raise ValueError(f"chunk position {seq} out of range (max {MAX_CHUNKS_PER_FILE - 1})")
    return (file_no << CHUNK_ID_BITS) | seq


def chunk_id_range(file_no: int) -> tuple[int, int]:
    """``[low, high)`` of the ids of file ``file_no``'s chunks."""
    return file_no << CHUNK_ID_BITS, (file_no + 1) << CHUNK_ID_BITS


def in_files(file_nos: Iterable[int], column: str = "c.id") -> str:
    """SQL condition: ``column`` (a chunk id) belongs to one of the files ``file_nos``.

    One primary-key range per run of consecutive file numbers, as integer literals: the
    planner then scans exactly those ranges, even on a table that was never analyzed (a
    join against ``unnest(:file_nos)`` there falls back to a sequential scan per batch)."""
    numbers = sorted({int(n) for n in file_nos})
    if not numbers:
        return "false"
    runs: list[tuple[int, int]] = []
    for no in numbers:
        if runs and runs[-1][1] == no:
            runs[-1] = (runs[-1][0], no + 1)
        else:
            runs.append((no, no + 1))
    return (
        "("
        + " OR ".join(
            f"({column} >= {first << CHUNK_ID_BITS} AND {column} < {end << CHUNK_ID_BITS})"
            for first, end in runs
        )
        + ")"
    )


class ChunkRow(NamedTuple):
    """A chunk ready for :func:`copy_chunks`: file and position make its id."""

    file_id: str
    seq: int
    data: str
    context_ref: str
    content_type: str
    token_count: int
    content_hash: str | bytes  # hex digest or its bytes
    owner_key: str
    embedding_model: str
    embedding: Sequence[float] | array | bytes
    #: the language of ``data`` (``de``, ``en``, ``fr``, ``it``; ``""`` unknown), which
    #: chooses the text search configuration of its lookup row
    language: str = ""


CHUNK_COPY_COLUMNS = ("id", *ChunkRow._fields[2:])
CHUNK_COPY_TYPES = [
    "int8",
    "text",
    "text",
    "text",
    "int4",
    "bytea",
    "text",
    "text",
    "bytea",  # the embedding, already in pgvector's binary form (see vector_binary)
    "text",
]

#: SQL of a chunk's file number and position (``c`` the chunk table)
FILE_NO_OF = f"(c.id >> {CHUNK_ID_BITS})"
SEQ_OF = f"(c.id & {(1 << CHUNK_ID_BITS) - 1})::int"
#: SQL condition: chunk ``c`` belongs to file ``f`` (a primary-key range)
IN_FILE = f"c.id >= (f.file_no << {CHUNK_ID_BITS}) AND c.id < ((f.file_no + 1) << {CHUNK_ID_BITS})"


def owner_key(
    scope: Scope | str,
    *,
    user_id: str,
    mandate_id: str | None = None,
    feature_instance_id: str | None = None,
) -> str:
    """The typed scope key stored on every chunk; raises when the scope lacks its owner id."""
    scope = Scope(scope)
    if scope is Scope.GLOBAL:
        return "global"
    if scope is Scope.PERSONAL:
        return f"personal:{user_id}"
    if scope is Scope.MANDATE:
        if not mandate_id:
            raise ValueError("a mandate-scoped file needs a mandate_id")
        return f"mandate:{mandate_id}"
    if not feature_instance_id:
        raise ValueError("a featureInstance-scoped file needs a feature_instance_id")
    return f"featureInstance:{feature_instance_id}"


_ALL_SCOPES = frozenset(Scope)


def readable_keys(context: RunContext, scopes: Iterable[Scope | str] | None = None) -> list[str]:
    """The owner keys ``context`` may read, limited to ``scopes`` (all four when ``None``)."""
    return list(readable_key_tuple(context, scopes))


def readable_key_tuple(
    context: RunContext, scopes: Iterable[Scope | str] | None = None
) -> tuple[str, ...]:
    """:func:`readable_keys` as the tuple noted for the caller (no list made: a search's
    plan is kept under them)."""
    return _readable_keys(
        context.feature_instance_id,
        context.user_id,
        context.mandate_id,
        None if scopes is None else tuple(scopes),
    )


@functools.lru_cache(maxsize=1024)
def _readable_keys(
    feature_instance: str | None,
    user: str | None,
    mandate: str | None,
    scopes: tuple[Scope | str, ...] | None,
) -> tuple[str, ...]:
    # noted per caller: every search asks for them (1.4 -> 0.8 µs a search, measured)
    wanted = {Scope(s) for s in scopes} if scopes is not None else _ALL_SCOPES
    keys: list[str] = []
    if Scope.FEATURE_INSTANCE in wanted and feature_instance:
        keys.append(f"featureInstance:{feature_instance}")
    if Scope.PERSONAL in wanted and user:
        keys.append(f"personal:{user}")
    if Scope.MANDATE in wanted and mandate:
        keys.append(f"mandate:{mandate}")
    if Scope.GLOBAL in wanted:
        keys.append("global")
    return tuple(keys)


def sql_literal(value: str) -> str:
    """``value`` as a SQL string literal (for DDL and index predicates, which take no
    parameters)."""
    return "'" + value.replace("'", "''") + "'"


#: pgvector's HNSW indexes ``halfvec`` up to 4000 dimensions (``vector`` only up to 2000)
MAX_INDEXED_DIMS = 4000


def hnsw_index_name(model: str, dims: int, *, kind: str = "hnswh") -> str:
    """Name of the partial HNSW index of one embedding model."""
    digest = hashlib.sha1(model.encode()).hexdigest()[:10]
    return f"ix_knowledge_chunk_{kind}_{digest}_{int(dims)}"


def _single_precision_index_name(model: str, dims: int) -> str:
    # the index of stores built before the index moved to half precision
    return hnsw_index_name(model, dims, kind="hnsw")


def vector_expr(dims: int, column: str = "embedding") -> str:
    """The stored vector at its model's dimension: exact distances are computed on it."""
    return f"({column}::vector({int(dims)}))"


def index_expr(dims: int, column: str = "embedding") -> str:
    """The half-precision expression the per-model HNSW index is built on and ordered by.

    Half precision takes models up to 4000 dimensions (OpenAI's text-embedding-3-large has
    3072), halves the index and the pages a search reads, and keeps the ranking (float16
    has 11 significant bits; see docs/knowledge.md for the measured recall); the distances
    a search reports are recomputed on the stored single-precision vectors."""
    return f"({column}::halfvec({int(dims)}))"


async def hnsw_index_exists(session: AsyncSession | AsyncConnection, model: str, dims: int) -> bool:
    """True when the model's HNSW index exists in the current schema."""
    found = await session.execute(
        text("SELECT to_regclass(:name) IS NOT NULL"), {"name": hnsw_index_name(model, dims)}
    )
    return bool(found.scalar())


async def create_hnsw_index(session: AsyncSession, model: str, dims: int) -> bool:
    """Build (if missing) the partial HNSW index of ``model`` (cosine distance on
    :func:`index_expr` for the rows of that model only) and drop the single-precision
    index an older store has for it. False, building nothing, beyond
    :data:`MAX_INDEXED_DIMS`: such a model's searches rank exactly."""
    if dims > MAX_INDEXED_DIMS:
        return False
    await session.execute(
        text(
            f"CREATE INDEX IF NOT EXISTS {hnsw_index_name(model, dims)} ON knowledge_chunk "
            f"USING hnsw ({index_expr(dims)} halfvec_cosine_ops) "
            f"WITH (m = {HNSW_M}, ef_construction = {HNSW_EF_CONSTRUCTION}) "
            f"WHERE embedding_model = {sql_literal(model)}"
        )
    )
    await session.execute(text(f"DROP INDEX IF EXISTS {_single_precision_index_name(model, dims)}"))
    return True


#: the btree an exact search reads a scope's chunks through (owner key, then model)
SCOPE_INDEX = "ix_knowledge_chunk_scope"


async def create_scope_index(session: AsyncSession) -> None:
    """Build (if missing) the btree of the chunks by owner key and model. Like the HNSW
    indexes it is built after a bulk load (every COPY row would otherwise pay for it) and
    kept up by later writes; until it exists, exact searches reach a scope's chunks through
    its files' primary-key ranges."""
    await session.execute(
        text(
            f"CREATE INDEX IF NOT EXISTS {SCOPE_INDEX} ON knowledge_chunk "
            "(owner_key, embedding_model)"
        )
    )


async def driver_connection(session: AsyncSession) -> Any:
    """The psycopg ``AsyncConnection`` under a SQLAlchemy session (same transaction), for
    writes: the transaction counts as one that changed the knowledge
    (:func:`~nyla.knowledge.changes.mark_written`)."""
    conn = await session.connection()
    mark_written(conn)
    raw = await conn.get_raw_connection()
    return raw.driver_connection


@functools.cache
def _vector_header(dims: int) -> bytes:
    return struct.pack(">HH", dims, 0)


@functools.cache
def _vector_struct(dims: int) -> struct.Struct:
    return struct.Struct(f">HH{dims}f")


def vector_binary(vector: Sequence[float] | array | bytes) -> bytes:
    """A vector in pgvector's binary wire form (dims, unused, big-endian float4s). In a binary
    COPY the server decodes a field with the target column's receive function, so these bytes
    can be sent as ``bytea`` without registering the vector type on the connection."""
    if isinstance(vector, bytes | bytearray | memoryview):
        return bytes(vector)
    if isinstance(vector, array) and vector.typecode == "f":
        if sys.byteorder == "big":
            return _vector_header(len(vector)) + vector.tobytes()
        swapped = vector.__copy__()
        swapped.byteswap()
        return _vector_header(len(swapped)) + swapped.tobytes()
    # a list of floats (what embedding APIs return): one C call packs it
    return _vector_struct(len(vector)).pack(len(vector), 0, *vector)


async def file_numbers(session: AsyncSession, file_ids: Iterable[str]) -> dict[str, int]:
    """``file_id -> file_no`` of indexed files."""
    rows = await session.execute(
        text("SELECT file_id, file_no FROM knowledge_file_index WHERE file_id = ANY(:ids)"),
        {"ids": sorted(set(file_ids))},
    )
    return {r[0]: int(r[1]) for r in rows}


async def copy_chunks(
    session: AsyncSession,
    rows: Sequence[ChunkRow | Sequence[Any]],
    file_nos: dict[str, int] | None = None,
) -> int:
    """Write chunk rows with binary COPY inside the session's transaction. Each row follows
    :class:`ChunkRow`; the embedding is a sequence of floats (or :func:`vector_binary`
    bytes). ``file_nos`` maps the rows' files to their numbers (looked up when omitted; every
    file needs its index row first)."""
    if not rows:
        return 0
    if file_nos is None:
        file_nos = await file_numbers(session, (r[0] for r in rows))
    pg = await driver_connection(session)
    columns = ", ".join(CHUNK_COPY_COLUMNS)
    statement = f"COPY knowledge_chunk ({columns}) FROM STDIN (FORMAT BINARY)"
    base = {file_id: no << CHUNK_ID_BITS for file_id, no in file_nos.items()}
    async with pg.cursor() as cur, cur.copy(statement) as cp:
        cp.set_types(CHUNK_COPY_TYPES)
        write = cp.write_row
        for row in rows:
            file_id, seq, data, ref, kind, tokens, digest, key, model, vector = row[:10]
            if not 0 <= seq < MAX_CHUNKS_PER_FILE:
                raise ValueError(f"chunk position {seq} out of range")
            await write(
                (
                    base[file_id] | seq,
                    data,
                    ref,
                    kind,
                    tokens,
                    bytes.fromhex(digest) if isinstance(digest, str) else digest,
                    key,
                    model,
                    vector_binary(vector),
                    row[10] if len(row) > 10 else "",
                )
            )
    return len(rows)


async def delete_file_chunks(session: AsyncSession, file_nos: Sequence[int]) -> int:
    """Delete the chunks (and their lookup rows) of the files ``file_nos``; returns the
    number of chunks deleted."""
    if not file_nos:
        return 0
    await session.execute(
        text(f"DELETE FROM knowledge_chunk_lookup t WHERE {in_files(file_nos, 't.chunk_id')}")
    )
    deleted = await session.execute(
        text(f"DELETE FROM knowledge_chunk c WHERE {in_files(file_nos)}")
    )
    return int(cast("CursorResult[Any]", deleted).rowcount or 0)


@functools.cache
def _literal_format(dims: int) -> str:
    return "[" + ",".join(["%.9g"] * dims) + "]"


def vector_literal(vector: Sequence[float]) -> str:
    """A vector as pgvector's text form (``[1,2,3]``), for a bound query parameter.

    Nine significant digits hold any float4 exactly (pgvector stores float4), and one
    cached format string per dimension renders them three times faster than ``repr``
    with about 40 % fewer characters for the server to parse."""
    return _literal_format(len(vector)) % tuple(vector)
