"""A small pool of psycopg connections for millisecond statements: the knowledge store's
searches, and the single-statement writes at an agent run's end (trace, ledger, round memory).

A vector search ranks in about a millisecond on the server; through SQLAlchemy's async
engine the same statement cost about as much again in Python (greenlet hops, result
wrapping, the pool's checkout events). Reads that need none of that run here on the driver
connection itself: autocommit, statements prepared on first use (``prepare=True``: parsed
and planned once per connection), and a per-connection ``info`` dict for session settings
a caller wants to set only when they change.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

import psycopg
from psycopg import abc, errors, pq
from psycopg.adapt import Dumper, Transformer
from psycopg.generators import execute

log = logging.getLogger(__name__)

T = TypeVar("T")


_BAD = pq.ConnStatus.BAD

#: statements of :meth:`ReadConnection.run` a connection keeps prepared (beyond, the
#: least recently prepared is deallocated)
PREPARED_MAX = 100


class Statement:
    """A statement :meth:`ReadConnection.run` prepares once per connection and then
    executes by name: its text with ``$n`` parameters and each parameter's format
    (``formats``: :class:`psycopg.pq.Format`, the caller passes the values dumped in it),
    and the format its rows come in (``result``: binary loads numbers without parsing
    their text, ~1 µs a float8 or int8 value; a type psycopg has no binary loader for
    comes as ``bytes``). Named by its text: the same text is one prepared statement on a
    connection."""

    __slots__ = ("formats", "name", "result", "sql")

    def __init__(
        self, sql: str, formats: Sequence[pq.Format], result: pq.Format = pq.Format.TEXT
    ) -> None:
        self.sql = sql.encode()
        self.formats = list(formats)
        self.result = result
        self.name = b"nyla_" + hashlib.blake2b(self.sql, digest_size=12).hexdigest().encode()


class ReadConnection:
    """A pooled psycopg ``AsyncConnection`` (``driver``) and what the pool remembers about
    it (``info``: lives as long as the connection). It serves one caller at a time, which
    runs its statements one after the other: they share one cursor (a cursor per
    statement cost about 40 µs of Python each, measured)."""

    __slots__ = ("_cursor", "_loader", "_prepared", "driver", "info")

    def __init__(self, driver: psycopg.AsyncConnection[Any]) -> None:
        self.driver = driver
        self.info: dict[str, Any] = {}
        self._cursor: psycopg.AsyncCursor[Any] | None = None
        self._loader: abc.Transformer | None = None
        self._prepared: OrderedDict[bytes, None] = OrderedDict()

    async def run(self, statement: Statement, params: Sequence[bytes | None]) -> list[Any]:
        """The rows (tuples) of ``statement`` with ``params`` already dumped, prepared on
        first use on this connection. The search's hot statement goes this way rather than
        through a cursor: psycopg's ``execute`` converts the query, dumps the parameters
        and consults its prepared-statement cache on every call, which cost 10-45 µs more
        a search than sending the prepared statement and loading its rows (measured, 10k
        rows, ef 10, load ~2). Errors are psycopg's own (``psycopg.errors``), a lost
        connection an ``OperationalError`` as with a cursor."""
        driver = self.driver
        pgconn = driver.pgconn
        async with driver.lock:
            if statement.name not in self._prepared:
                await self._prepare(statement)
            pgconn.send_query_prepared(statement.name, params, statement.formats, statement.result)
            result = (await driver.wait(execute(pgconn)))[-1]
            if result.status == pq.ExecStatus.FATAL_ERROR:
                error = errors.error_from_result(result, encoding=driver.info.encoding)
                if not isinstance(error, errors.InvalidSqlStatementName):
                    raise error
                # deallocated behind our back (DEALLOCATE ALL, DISCARD ALL): again
                self._prepared.pop(statement.name, None)
                await self._prepare(statement)
                pgconn.send_query_prepared(
                    statement.name, params, statement.formats, statement.result
                )
                result = (await driver.wait(execute(pgconn)))[-1]
        if result.status != pq.ExecStatus.TUPLES_OK:
            raise errors.error_from_result(result, encoding=driver.info.encoding)
        loader = self._loader
        if loader is None:
            loader = self._loader = Transformer(driver)
        loader.set_pgresult(result)
        return loader.load_rows(0, result.ntuples, tuple)

    async def _prepare(self, statement: Statement) -> None:
        """Prepare ``statement`` (holding the driver's lock), the oldest deallocated
        beyond :data:`PREPARED_MAX`."""
        pgconn = self.driver.pgconn
        if len(self._prepared) >= PREPARED_MAX:
            oldest, _ = self._prepared.popitem(last=False)
            pgconn.send_query(b"DEALLOCATE " + oldest)
            await self._command()
        pgconn.send_prepare(statement.name, statement.sql)
        await self._command()
        self._prepared[statement.name] = None

    async def _command(self) -> None:
        result = (await self.driver.wait(execute(self.driver.pgconn)))[-1]
        if result.status != pq.ExecStatus.COMMAND_OK:
            raise errors.error_from_result(result, encoding=self.driver.info.encoding)

    def register_dumper(self, cls: type, dumper: type[Dumper]) -> None:
        """Adapt ``cls`` with ``dumper`` in this connection's statements."""
        self.driver.adapters.register_dumper(cls, dumper)
        # a cursor copies the connection's adapters when it is made: make a new one
        self._cursor = None

    async def rows(self, sql: str, params: Any = None) -> list[Any]:
        """The rows of one statement (psycopg placeholders), prepared on this connection."""
        cursor = self._cursor
        if cursor is None or cursor.closed:
            cursor = self._cursor = self.driver.cursor()
        await cursor.execute(sql, params, prepare=True)
        return await cursor.fetchall()

    async def rows_after(self, setup: str, setup_params: Any, sql: str, params: Any) -> list[Any]:
        """The rows of ``sql`` run after ``setup`` (e.g. session settings), both sent in one
        pipeline: one round trip instead of two."""
        async with self.driver.pipeline():
            await self.driver.execute(setup, setup_params, prepare=True)
            cursor = await self.driver.execute(sql, params, prepare=True)
            return await cursor.fetchall()


#: Run once on every new connection: one 4 MiB allocation the backend frees at once. The
#: server's C library (glibc) hands a freed block of more than 128 kB back to the system
#: and faults the pages in again when the next statement allocates as much; freeing a
#: larger block raises that limit to its size (and what it keeps at the heap's top to twice
#: that). An HNSW scan at a large ``ef_search`` allocates such blocks every time: at 100k
#: rows, ef 250-400, the read connection's backend took 17-36 page faults a search, +0.2-0.4
#: ms server CPU over a backend whose history had raised the limit (measured in
#: bench/retrieval_latency.py: 0 faults and +0.02 ms after this statement). Costs ~1 ms
#: once per connection; harmless with another allocator.
KEEP_FREED_MEMORY = "SELECT length(repeat('x', 4194304))"


class ReadPool:
    """Up to ``size`` concurrent connections to ``conninfo``; idle ones are kept (LIFO).

    A connection the server dropped fails on first use (there is no ping on checkout: it
    would cost a round trip per search), so :meth:`run` retries a disconnect once on a
    fresh connection; any other error is raised at once and the connection kept (autocommit:
    nothing is left open). A connection whose work was cancelled mid-statement is closed.
    Connections belong to the event loop that opened them: on another loop the idle ones
    are dropped and new ones opened (tests and CLI commands run one loop after another).
    """

    def __init__(
        self,
        conninfo: str,
        *,
        options: str | None = None,
        connect_timeout: int = 10,
        size: int = 10,
        on_connect: Callable[[psycopg.AsyncConnection[Any]], Awaitable[None]] | None = None,
    ) -> None:
        self.conninfo = conninfo
        self.options = options
        self.connect_timeout = connect_timeout
        self.size = size
        self.on_connect = on_connect
        self._idle: list[ReadConnection] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        # at most ``size`` works at a time, the others wait in turn: a counter, not an
        # asyncio.Semaphore, whose acquire and release cost 1.6 µs a search (measured)
        self._busy = 0
        self._waiting: deque[asyncio.Future[None]] = deque()

    async def run(self, work: Callable[[ReadConnection], Awaitable[T]]) -> T:
        """``await work(connection)`` on a pooled connection; ``work`` is retried once after
        a disconnect, so it must be a read, or a write a repeat cannot harm, or one whose
        writer accepts a rare repeat (the connection may have been lost after the commit)."""
        if self._loop is not asyncio.get_running_loop():
            self._bind_loop()
        if self._busy < self.size and not self._waiting:
            self._busy += 1
        else:
            await self._turn()
        try:
            for attempt in (1, 2):
                conn = self._idle.pop() if self._idle else await self._connect()
                try:
                    result = await work(conn)
                except psycopg.OperationalError as exc:
                    if not conn.driver.broken and not conn.driver.closed:
                        self._idle.append(conn)
                        raise
                    await _close(conn)
                    if attempt == 2:
                        raise
                    log.info("a pooled read connection was gone (%s); retrying", exc)
                    continue
                except psycopg.Error:
                    self._keep(conn)
                    raise
                except BaseException:
                    # cancelled or failed in our own code mid-statement: the connection may
                    # still be busy on the server; never hand it to the next search
                    await _close(conn)
                    raise
                self._keep(conn)
                return result
        finally:
            if self._waiting:
                self._release()
            else:
                self._busy -= 1
        raise AssertionError("unreachable")

    async def _turn(self) -> None:
        """Wait until a finished work hands its turn over (:meth:`_release`)."""
        turn = asyncio.get_running_loop().create_future()
        self._waiting.append(turn)
        try:
            await turn
        except BaseException:
            if turn.done() and not turn.cancelled():
                self._release()  # handed the turn, but cancelled: hand it on
            else:
                with contextlib.suppress(ValueError):
                    self._waiting.remove(turn)
            raise

    def _release(self) -> None:
        while self._waiting:
            turn = self._waiting.popleft()
            if not turn.done():
                turn.set_result(None)  # the turn passes on: as many busy as before
                return
        self._busy -= 1

    def _keep(self, conn: ReadConnection) -> None:
        # closed, broken too (psycopg's ``closed``, without its property: every search)
        if conn.driver.pgconn.status == _BAD or len(self._idle) >= self.size:
            conn.driver.pgconn.finish()
        else:
            self._idle.append(conn)

    def _bind_loop(self) -> None:
        loop = asyncio.get_running_loop()
        if self._loop is not loop:
            # connections of another (finished) loop cannot be awaited here: close their
            # sockets without a goodbye
            for conn in self._idle:
                conn.driver.pgconn.finish()
            self._idle.clear()
            self._loop = loop
            self._busy = 0
            self._waiting.clear()

    async def _connect(self) -> ReadConnection:
        kwargs: dict[str, Any] = {"autocommit": True, "connect_timeout": self.connect_timeout}
        if self.options:
            kwargs["options"] = self.options
        driver = await psycopg.AsyncConnection.connect(self.conninfo, **kwargs)
        try:
            await driver.execute(KEEP_FREED_MEMORY)
            if self.on_connect is not None:
                await self.on_connect(driver)
        except BaseException:
            await driver.close()
            raise
        return ReadConnection(driver)

    async def close(self) -> None:
        """Close the idle connections (the pool opens new ones when used again)."""
        idle, self._idle = self._idle, []
        loop = asyncio.get_running_loop()
        for conn in idle:
            if self._loop is loop:
                await _close(conn)
            else:
                conn.driver.pgconn.finish()


async def _close(conn: ReadConnection) -> None:
    try:
        await conn.driver.close()
    except Exception:  # already gone: nothing to say goodbye to
        conn.driver.pgconn.finish()
