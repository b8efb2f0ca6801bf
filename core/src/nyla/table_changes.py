"""Whether rows of some tables may have changed since this process read them: a generation
number per watched set of tables, held in this process and read with no database round trip.
A per-process cache of data another process may change (the knowledge a kept context block
quotes, a user's connections, an MCP plugin's servers) is trusted while its generation stands.

A watch's generation (:meth:`TableChanges.watch`) moves when

- a commit anywhere changes one of its tables: a statement trigger on each watched table
  notifies the database's channel (:data:`CHANNEL` and the schema's name) with the table's
  name, and this process listens on one connection of its own per database and event loop
  (opened when a watch is first started). PostgreSQL sends a committed notification to an
  idle listener at once, so another process's commit is seen within a round trip's time;
- this process commits such a change through the database's engine: a write statement that
  names one of the tables marks its connection, and when the connection goes back to the pool
  (after its commit) the generation moves at once, before the notification arrives, for every
  database object of the same database in this process (a CLI command run in a host's
  process writes through its own); a write on a driver connection of its own is marked by
  :func:`mark_written`;
- the listener connects, is lost, or opens again for a watch that joined (its tables'
  triggers are created then): what was committed meanwhile was not heard.

:meth:`Watch.stamp` is ``None`` while the process is not listening: before the listener
connected, after it was lost (it is opened again :data:`RETRY_S` later), where the server
refuses (``LISTEN`` on a standby, a role that may not create the triggers), or where
notifications cannot reach this process (``NYLA_DB_NOTIFY=off``, e.g. PgBouncer in
transaction mode). The caller then reads what it would have kept, every time.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
import weakref
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from typing import Any, Generic, TypeVar

import psycopg
from sqlalchemy import event
from sqlalchemy.engine import make_url

from nyla.db import Database, connect_timeout_s

log = logging.getLogger(__name__)

#: the notification channel's base name (the schema's name is appended)
CHANNEL = "nyla_changed"
#: the statement trigger on each watched table, and its function
TRIGGER = "nyla_changed"
#: triggers of an earlier nyla this one replaces (one per watched set, a channel each)
LEGACY_TRIGGERS = ("nyla_knowledge_changed",)
#: seconds before a lost or failed listener is opened again
RETRY_S = 5.0
#: ``off``: never listen (notifications do not reach this process's connections)
NOTIFY_VAR = "NYLA_DB_NOTIFY"
#: the mark (a set of tables) a connection's ``info`` carries while its transaction wrote
WRITTEN = "nyla_tables_written"
_WRITE_VERBS = ("insert", "update", "delete", "truncate", "copy", "merge", "with")

_CHANGES: weakref.WeakKeyDictionary[Database, TableChanges] = weakref.WeakKeyDictionary()
K = TypeVar("K")
V = TypeVar("V")


def writes_tables(statement: str, tables: Iterable[str]) -> set[str]:
    """The ``tables`` a statement may write (named in a write, or in a ``WITH``)."""
    if not statement.lstrip()[:8].lower().startswith(_WRITE_VERBS):
        return set()
    return {table for table in tables if table in statement}


def mark_written(connection: Any, tables: Iterable[str]) -> None:
    """Note that the transaction of ``connection`` (a SQLAlchemy connection) writes
    ``tables`` outside SQLAlchemy's statements (a ``COPY`` on its driver connection)."""
    connection.info.setdefault(WRITTEN, set()).update(tables)


class Watch:
    """The change generation of some tables of a database in this process (see the module)."""

    def __init__(self, source: TableChanges, tables: frozenset[str]) -> None:
        self.source = source
        self.tables = tables
        #: moves with every change heard of
        self.generation = 0

    @property
    def refused(self) -> str | None:
        """Why the server will not notify this process (then never listening)."""
        return self.source.refused

    def stamp(self) -> int | None:
        """The generation while this process listens for these tables on the running event
        loop, else ``None`` (the caller must find out about changes another way)."""
        if self.source.listening(self):
            return self.generation
        return None

    async def start(self) -> int | None:
        """:meth:`stamp`, after opening the listener when it is not open and may be (waits
        until it listens or failed; ``None`` when it failed or waits for its retry)."""
        stamp = self.stamp()
        if stamp is not None:
            return stamp
        await self.source.start()
        return self.stamp()

    def notified(self, _note: Any = None) -> None:
        """A change of these tables was committed somewhere (a notification arrived)."""
        self.generation += 1


class KeptReads(Generic[K, V]):
    """Values read from watched tables, kept per key while the watch's generation stands (the
    ``size`` keys used last): :meth:`get` reads again after any change of the tables, and
    every time while this process does not listen. A process asks its listener to open at
    its second read (a command that reads once opens no connection for it). A kept value is
    handed out again as it is: a caller must not change it."""

    def __init__(self, watch: Watch, size: int = 1024) -> None:
        self.watch = watch
        self.size = size
        self._held: OrderedDict[K, tuple[int, V]] = OrderedDict()
        self._asked = False

    async def get(self, key: K, read: Callable[[], Awaitable[V]]) -> V:
        """The value of ``key``: kept, or ``await read()`` (kept with the generation seen
        before it read: a change committed while it reads is read again next time)."""
        watch = self.watch
        stamp = watch.stamp()
        if stamp is None and self._asked:
            stamp = await watch.start()
        self._asked = True
        if stamp is not None:
            held = self._held.get(key)
            if held is not None and held[0] == stamp:
                self._held.move_to_end(key)
                return held[1]
        value = await read()
        if stamp is not None:
            self._held[key] = (stamp, value)
            self._held.move_to_end(key)
            while len(self._held) > self.size:
                self._held.popitem(last=False)
        return value


class TableChanges:
    """The watches of one database in this process and their one listener; :meth:`of`
    gives the one of a database, :meth:`watch` a watch of some of its tables."""

    def __init__(self, db: Database) -> None:
        self._db = weakref.ref(db)
        #: the database this is the changes of: every database object of it in this process
        #: hears this process's writes through any of them at once
        self.target = (db.url, db.schema)
        self.channel = f"{CHANNEL}_{db.schema}"[:63] if db.schema else CHANNEL
        self.watches: list[Watch] = []
        #: why the server will not notify this process (then never listening)
        self.refused: str | None = None
        if os.environ.get(NOTIFY_VAR, "").lower() in ("off", "0", "false", "no"):
            self.refused = f"{NOTIFY_VAR} is off"
        self._tables: frozenset[str] = frozenset()
        self._heard: frozenset[str] = frozenset()  # the tables the listener has triggers on
        self._listening = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[None] | None = None
        self._conn: psycopg.AsyncConnection[Any] | None = None
        self._retry_at = 0.0
        engine = db.engine.sync_engine
        event.listen(engine, "before_cursor_execute", self._statement)
        event.listen(engine, "checkin", self._checkin)
        db.on_dispose(self.close)

    @classmethod
    def of(cls, db: Database) -> TableChanges:
        """The changes of ``db`` (one per database object: its engine's events are hooked
        once)."""
        changes = _CHANGES.get(db)
        if changes is None:
            changes = _CHANGES[db] = cls(db)
        return changes

    def watch(self, tables: Iterable[str]) -> Watch:
        """The watch of ``tables`` (the same object for the same tables). A table not heard
        yet is heard once the listener opens again (at the watch's first :meth:`Watch.start`,
        which creates its trigger)."""
        wanted = frozenset(tables)
        for found in self.watches:
            if found.tables == wanted:
                return found
        watch = Watch(self, wanted)
        self.watches.append(watch)
        self._tables = self._tables | wanted
        return watch

    def listening(self, watch: Watch) -> bool:
        """Whether ``watch``'s tables are heard on the running event loop."""
        return self._listening and self._loop is _running_loop() and watch.tables <= self._heard

    async def start(self) -> None:
        """Open the listener for every watch's tables unless it listens for them already,
        is opening, failed for good or waits for its retry (waits until it listens or
        failed)."""
        if self.refused is not None:
            return
        loop = asyncio.get_running_loop()
        if self._loop is not loop:
            self._forget_other_loop()
        elif self._task is not None and not self._task.done():
            if not self._listening or self._tables <= self._heard:
                return  # opening (another caller waits for it), or listening for all
            await self.close()  # a watch joined: open again with its tables' triggers
        elif time.monotonic() < self._retry_at:
            return
        db = self._db()
        if db is None:
            return
        self._loop = loop
        ready: asyncio.Future[None] = loop.create_future()
        self._task = loop.create_task(self._listen(db, ready), name="nyla-table-changes")
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(ready), connect_timeout_s() + 5)

    async def close(self) -> None:
        """Stop listening (opened again when asked for)."""
        task, self._task = self._task, None
        self._stopped()
        if task is None or task.done():
            return
        if self._loop is _running_loop():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        else:
            self._forget_other_loop()

    # ---- this process's writes ----------------------------------------------------------

    def _statement(self, conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        if self._tables:
            written = writes_tables(statement, self._tables)
            if written:
                conn.info.setdefault(WRITTEN, set()).update(written)

    def _checkin(self, _dbapi: Any, record: Any) -> None:
        # back in the pool: its transaction committed (or rolled back) by now
        written = record.info.pop(WRITTEN, None)
        if written:
            for changes in list(_CHANGES.values()):
                if changes.target == self.target:
                    changes.written(written)

    def written(self, tables: set[str]) -> None:
        """This process committed a write of ``tables`` (through any object of the database)."""
        for watch in self.watches:
            if watch.tables & tables:
                watch.generation += 1

    # ---- the listener -------------------------------------------------------------------

    def _stopped(self) -> None:
        self._listening = False
        for watch in self.watches:  # what is committed from now on is not heard
            watch.generation += 1

    async def _listen(self, db: Database, ready: asyncio.Future[None]) -> None:
        conn: psycopg.AsyncConnection[Any] | None = None
        try:
            await db.ensure_ready()
            conn = await psycopg.AsyncConnection.connect(**_connect_kwargs(db))
            tables = self._tables
            try:
                await _ensure_triggers(conn, self.channel, sorted(tables))
                await conn.execute(f'LISTEN "{self.channel}"')
            except psycopg.Error as exc:
                if not isinstance(exc, psycopg.OperationalError):
                    self.refused = f"{type(exc).__name__}: {exc}"
                    log.warning(
                        "cached table reads are read again every time "
                        "(no change notifications: %s)",
                        self.refused,
                    )
                raise
            self._conn, self._heard = conn, tables
            for watch in self.watches:  # commits before LISTEN were not heard
                watch.generation += 1
            self._listening = True
            ready.set_result(None)
            async for note in _notifications(conn):
                for watch in self.watches:
                    if note.payload in watch.tables:
                        watch.notified(note)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self._retry_at = time.monotonic() + RETRY_S
            if self.refused is None:
                log.info("table change listener lost (%s); opened again when asked", exc)
        finally:
            self._stopped()
            self._conn = None
            if not ready.done():
                ready.set_result(None)
            if conn is not None:
                with contextlib.suppress(Exception):
                    await conn.close()

    def _forget_other_loop(self) -> None:
        """Drop a listener opened on another (finished) event loop: its socket is closed
        without a goodbye, as nothing of that loop can be awaited here."""
        conn, self._conn, self._task = self._conn, None, None
        self._stopped()
        if conn is not None:
            conn.pgconn.finish()


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


async def _notifications(conn: psycopg.AsyncConnection[Any]) -> AsyncIterator[psycopg.Notify]:
    """The listener connection's notifications as they arrive, from a wait on its socket that
    arms no timer. psycopg's own ``notifies()`` wakes the event loop every 0.1 s to look for an
    interrupt, so every process that listens woke ten times a second while idle, and an agent
    run's tool waits were cut in two (each wake-up paid in CPU). Cancelling the task ends the
    wait; a lost connection ends it with the error ``consume_input`` raises."""
    loop = asyncio.get_running_loop()
    pgconn, encoding = conn.pgconn, conn.info.encoding
    while True:
        readable: asyncio.Future[None] = loop.create_future()
        fd = pgconn.socket
        loop.add_reader(fd, _set_once, readable)
        try:
            await readable
        finally:
            loop.remove_reader(fd)
        pgconn.consume_input()
        while (note := pgconn.notifies()) is not None:
            yield psycopg.Notify(
                note.relname.decode(encoding), note.extra.decode(encoding), note.be_pid
            )


def _set_once(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def _connect_kwargs(db: Database) -> dict[str, Any]:
    url = make_url(db.url).set(drivername="postgresql")
    kwargs: dict[str, Any] = {
        "conninfo": url.render_as_string(hide_password=False),
        "autocommit": True,
        "connect_timeout": connect_timeout_s(),
        # a connection that died silently (no reset from the peer) must not be taken for
        # one that hears nothing: the kernel notices within about a minute
        "keepalives": 1,
        "keepalives_idle": 30,
        "keepalives_interval": 10,
        "keepalives_count": 3,
    }
    if db.connect_options:
        kwargs["options"] = db.connect_options
    return kwargs


_TRIGGERS_PRESENT = (
    "SELECT (SELECT count(*) FROM pg_trigger WHERE tgname = %(name)s AND tgrelid = ANY("
    "ARRAY(SELECT to_regclass(t) FROM unnest(%(tables)s::text[]) AS t))) = "
    "cardinality(%(tables)s::text[]) AND EXISTS (SELECT 1 FROM pg_proc WHERE proname = "
    "%(name)s AND pronamespace = current_schema()::regnamespace "
    "AND strpos(prosrc, %(channel)s) > 0)"
)


async def _ensure_triggers(
    conn: psycopg.AsyncConnection[Any], channel: str, tables: list[str]
) -> None:
    """The statement triggers on ``tables`` that notify ``channel`` with the table's name
    (created once; two processes creating them take turns)."""
    params = {"name": TRIGGER, "channel": f"'{channel}'", "tables": tables}
    if (await (await conn.execute(_TRIGGERS_PRESENT, params)).fetchone() or (False,))[0]:
        return
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock(hashtext('nyla.table-changes'))")
        if (await (await conn.execute(_TRIGGERS_PRESENT, params)).fetchone() or (False,))[0]:
            return
        await conn.execute(
            f"CREATE OR REPLACE FUNCTION {TRIGGER}() RETURNS trigger LANGUAGE plpgsql AS "
            f"$$BEGIN PERFORM pg_notify('{channel}', TG_TABLE_NAME); RETURN NULL; END$$"
        )
        for table in tables:
            for old in LEGACY_TRIGGERS:
                await conn.execute(f"DROP TRIGGER IF EXISTS {old} ON {table}")
            await conn.execute(f"DROP TRIGGER IF EXISTS {TRIGGER} ON {table}")
            await conn.execute(
                f"CREATE TRIGGER {TRIGGER} AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE "
                f"ON {table} FOR EACH STATEMENT EXECUTE FUNCTION {TRIGGER}()"
            )
