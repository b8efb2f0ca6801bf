"""The knowledge search's database access: statements on the psycopg connection of
:meth:`nyla.db.Database.read_driver` (prepared once per connection, the query vector in
pgvector's binary form) or, the same statements, through SQLAlchemy."""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from typing import Any

from psycopg import AsyncRawCursor, postgres
from psycopg.adapt import Dumper
from psycopg.pq import Format
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession

from nyla.knowledge.vectors import vector_binary, vector_literal
from nyla.read_pool import ReadConnection, Statement

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


class OwnerKeys(list[str]):
    """The owner keys a search may read, as a statement parameter: on the driver path
    written as its ``text[]`` literal at once (psycopg inspects a plain list's items for
    every statement to choose the array's type, a few microseconds a search)."""

    __slots__ = ()


class _OwnerKeysDumper(Dumper):
    oid = postgres.types["text"].array_oid

    def dump(self, obj: OwnerKeys) -> bytes:
        return keys_array(tuple(obj))


@functools.lru_cache(maxsize=1024)
def keys_array(keys: tuple[str, ...]) -> bytes:
    """The ``text[]`` literal of ``keys`` (a caller's keys repeat from search to search)."""
    quoted = (key.replace("\\", "\\\\").replace('"', '\\"') for key in keys)
    return ("{" + ",".join(f'"{key}"' for key in quoted) + "}").encode()


class _QueryVectorDumper(Dumper):
    # oid 0: the server takes the type from the statement's CAST (vector or halfvec)
    format = Format.BINARY
    oid = 0

    def dump(self, obj: QueryVector) -> bytes:
        return vector_binary(obj.values)


#: psycopg keeps its conversion of a statement's ``%(name)s`` binds only for statements up
#: to this length (``psycopg._queries.MAX_CACHED_STATEMENT_LENGTH``); a longer one is
#: parsed again on every execution
CACHED_STATEMENT_LENGTH = 4096


@functools.lru_cache(maxsize=256)
def positional_sql(sql: str) -> tuple[bytes, tuple[str, ...]]:
    """``sql`` with its ``:name`` binds written as PostgreSQL's own ``$n`` (a name used
    twice is one parameter), and the names in ``$n`` order."""
    numbered, names = _numbered(sql, None)
    return numbered.encode(), names


@functools.lru_cache(maxsize=256)
def prepared(sql: str, keys: tuple[str, ...] | None = None) -> tuple[Statement, tuple[str, ...]]:
    """``sql`` as a :class:`~nyla.read_pool.Statement` with ``$n`` parameters (and their
    names in ``$n`` order): the query vector ``q`` sent in pgvector's binary form
    (:func:`~nyla.knowledge.vectors.vector_binary`), the others as text; ``keys``: the
    owner keys written in its text in place of ``:keys`` (:func:`keys_sql`). Its rows
    come in binary (a ranking's ids and distances loaded without parsing their text)."""
    numbered, names = _numbered(sql, None if keys is None else keys_sql(keys))
    formats = [Format.BINARY if name == "q" else Format.TEXT for name in names]
    return Statement(numbered, formats, Format.BINARY), names


def _numbered(sql: str, keys: str | None) -> tuple[str, tuple[str, ...]]:
    names: dict[str, int] = {}

    def number(bind: re.Match[str]) -> str:
        if keys is not None and bind.group(1) == "keys":
            return keys  # substituted in the same pass: never read as a bind itself
        return f"${names.setdefault(bind.group(1), len(names) + 1)}"

    return _BIND.sub(number, sql), tuple(names)


def keys_sql(keys: tuple[str, ...]) -> str:
    """The SQL literal of ``keys`` as a ``text[]``."""
    quoted = (key.replace("\\", "\\\\").replace('"', '\\"') for key in keys)
    array = "{" + ",".join(f'"{key}"' for key in quoted) + "}"
    # an E'' literal reads its backslashes the same whatever standard_conforming_strings
    # the server runs with, so no key can end the literal early
    return "E'" + array.replace("\\", "\\\\").replace("'", "''") + "'::text[]"


async def rows(executor: Executor, sql: str, params: dict[str, Any]) -> list[Any]:
    """The rows of one statement. On the driver path it is prepared on first use per
    connection; on a SQLAlchemy connection it goes to the driver as it is
    (``exec_driver_sql``: no statement compilation)."""
    if isinstance(executor, ReadConnection):
        if len(sql) > CACHED_STATEMENT_LENGTH:
            return await _long_rows(executor, sql, params)
        return await driver_rows(executor, driver_sql(sql), params)
    params = {name: _plain(v) for name, v in params.items()}
    if isinstance(executor, AsyncConnection):
        return list(await executor.exec_driver_sql(driver_sql(sql), params))
    return list(await executor.execute(text(sql), params))


async def driver_rows(conn: ReadConnection, sql: str, params: dict[str, Any]) -> list[Any]:
    """The rows of ``sql``, written for the driver already (``%(name)s`` binds), prepared
    on first use on ``conn``."""
    adapt(conn)
    return await conn.rows(sql, params)


async def _long_rows(conn: ReadConnection, sql: str, params: dict[str, Any]) -> list[Any]:
    """The rows of a statement longer than psycopg converts once
    (:data:`CACHED_STATEMENT_LENGTH`; hybrid search's full-text ranking has ~11,000
    characters: parsing its binds took 1.45 ms a search, measured at load 6), sent with
    ``$n`` binds through a raw cursor, which parses nothing, and prepared on first use."""
    adapt(conn)
    query, names = positional_sql(sql)
    # a cursor per connection, made after adapt() registered the parameter types
    cursor = conn.info.get("nyla_raw_cursor")
    if cursor is None or cursor.closed:
        cursor = conn.info["nyla_raw_cursor"] = AsyncRawCursor(conn.driver)
    await cursor.execute(query, [params[name] for name in names], prepare=True)
    return await cursor.fetchall()


def adapt(conn: ReadConnection) -> None:
    """Make ``conn`` send :class:`QueryVector` and :class:`OwnerKeys` parameters (once per
    connection; every statement of the driver path with such a parameter calls it first)."""
    if "vector_dumper" not in conn.info:
        conn.register_dumper(QueryVector, _QueryVectorDumper)
        conn.register_dumper(OwnerKeys, _OwnerKeysDumper)
        conn.info["vector_dumper"] = True


def _plain(value: Any) -> Any:
    """A parameter as SQLAlchemy's path takes it."""
    if isinstance(value, QueryVector):
        return vector_literal(value.values)
    return list(value) if isinstance(value, OwnerKeys) else value


async def info(executor: Executor) -> dict[Any, Any]:
    """The pooled connection's ``info`` (it outlives the checkout)."""
    if isinstance(executor, AsyncSession):
        return (await executor.connection()).info
    return executor.info
