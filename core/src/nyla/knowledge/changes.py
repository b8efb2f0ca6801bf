"""Whether the knowledge an agent's context block quotes may have changed since it was built:
a generation number held in this process, read with no database round trip.

It moves when

- a commit anywhere changes the chunks, their lookup rows or the file index (:data:`TABLES`):
  a statement trigger on each notifies :attr:`KnowledgeChanges.channel`, and this process
  listens on a connection of its own (one per database and event loop, opened when a context
  builder first asks). PostgreSQL sends a committed notification to an idle listener at once,
  so another process's write is seen within a round trip's time of its commit;
- this process commits such a change through the database's engine: a statement that writes
  one of the tables marks its connection (raw ``COPY`` writes are marked by
  :func:`mark_written`), and when the connection goes back to the pool (after its commit) the
  generation moves at once, before the notification arrives — a file a tool just indexed is
  in the next round's context;
- the listener connects or is lost (what was committed meanwhile was not heard).

Memory rows are not in :data:`TABLES`: a block that reads round or workflow memory is built
every round (its run writes memory every round), only the blocks that read the chunks alone
are kept. A change that reaches the tables only by a cascade from another table is heard
through the notification alone.

:meth:`KnowledgeChanges.stamp` is ``None`` while the process is not listening: before the
listener connected, after it was lost (it is opened again :data:`RETRY_S` later), where the
server refuses (``LISTEN`` on a standby, a role that may not create the trigger), or when
``knowledge.context_notify`` is off (where notifications do not reach the connection, e.g.
PgBouncer in transaction mode). The caller then reads the WAL position every round instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import weakref
from typing import Any

import psycopg
from sqlalchemy import event
from sqlalchemy.engine import make_url

from nyla.db import Database, connect_timeout_s

log = logging.getLogger(__name__)

#: the tables whose changes a kept context block must hear of
TABLES = ("knowledge_chunk", "knowledge_chunk_lookup", "knowledge_file_index")
#: the statement trigger (and its function) on each of :data:`TABLES`
TRIGGER = "nyla_knowledge_changed"
#: the notification channel's base name (the schema's name is appended)
CHANNEL = "nyla_knowledge_changed"
#: seconds before a lost or failed listener is opened again
RETRY_S = 5.0
#: the mark a connection's ``info`` carries while its transaction wrote :data:`TABLES`
WRITTEN = "nyla_knowledge_written"
_WRITE_VERBS = ("insert", "update", "delete", "truncate", "copy", "merge", "with")

_CHANGES: weakref.WeakKeyDictionary[Database, KnowledgeChanges] = weakref.WeakKeyDictionary()


def writes_knowledge(statement: str) -> bool:
    """Whether ``statement`` may write one of :data:`TABLES` (a ``WITH`` naming one counts)."""
    if "knowledge_" not in statement:
        return False
    if not statement.lstrip()[:8].lower().startswith(_WRITE_VERBS):
        return False
    return any(table in statement for table in TABLES)


def mark_written(connection: Any) -> None:
    """Note that the transaction of ``connection`` (a SQLAlchemy connection) writes
    :data:`TABLES` outside SQLAlchemy's statements (a ``COPY`` on its driver connection)."""
    connection.info[WRITTEN] = True


class KnowledgeChanges:
    """The change generation of one database's knowledge tables in this process (see the
    module); :meth:`of` gives the one of a database."""

    def __init__(self, db: Database) -> None:
        self._db = weakref.ref(db)
        self.channel = f"{CHANNEL}_{db.schema}"[:63] if db.schema else CHANNEL
        #: moves with every change heard of (see the module)
        self.generation = 0
        #: why the server will not notify this process (then never listening)
        self.refused: str | None = None
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
    def of(cls, db: Database) -> KnowledgeChanges:
        """The changes of ``db`` (one per database object: its engine's events are hooked
        once)."""
        changes = _CHANGES.get(db)
        if changes is None:
            changes = _CHANGES[db] = cls(db)
        return changes

    def stamp(self) -> int | None:
        """The generation while this process listens on the running event loop, else
        ``None`` (the caller must find out about changes another way)."""
        if self._listening and self._loop is _running_loop():
            return self.generation
        return None

    async def start(self) -> int | None:
        """:meth:`stamp`, after opening the listener when it is not open and may be (waits
        until it listens or failed; ``None`` when it failed or waits for its retry)."""
        stamp = self.stamp()
        if stamp is not None or self.refused is not None:
            return stamp
        loop = asyncio.get_running_loop()
        if self._loop is not loop:
            self._forget_other_loop()
        elif self._task is not None and not self._task.done():
            return None  # opening (another caller waits for it)
        elif time.monotonic() < self._retry_at:
            return None
        db = self._db()
        if db is None:
            return None
        self._loop = loop
        ready: asyncio.Future[None] = loop.create_future()
        self._task = loop.create_task(self._listen(db, ready), name="nyla-knowledge-changes")
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(ready), connect_timeout_s() + 5)
        return self.stamp()

    def notified(self, _note: Any = None) -> None:
        """A change was committed somewhere (a notification arrived)."""
        self.generation += 1

    async def close(self) -> None:
        """Stop listening (opened again when asked for)."""
        task, self._task = self._task, None
        self._listening = False
        self.generation += 1
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
        if "knowledge_" in statement and writes_knowledge(statement):
            conn.info[WRITTEN] = True

    def _checkin(self, _dbapi: Any, record: Any) -> None:
        # back in the pool: its transaction committed (or rolled back) by now
        if record.info.pop(WRITTEN, None):
            self.generation += 1

    # ---- the listener -------------------------------------------------------------------

    async def _listen(self, db: Database, ready: asyncio.Future[None]) -> None:
        conn: psycopg.AsyncConnection[Any] | None = None
        try:
            await db.ensure_ready()
            conn = await psycopg.AsyncConnection.connect(**_connect_kwargs(db))
            try:
                await _ensure_trigger(conn, self.channel)
                await conn.execute(f'LISTEN "{self.channel}"')
            except psycopg.Error as exc:
                if not isinstance(exc, psycopg.OperationalError):
                    self.refused = f"{type(exc).__name__}: {exc}"
                    log.warning(
                        "the agent's knowledge context reads the WAL position every round "
                        "(no change notifications: %s)",
                        self.refused,
                    )
                raise
            self._conn = conn
            self.generation += 1  # commits before LISTEN were not heard
            self._listening = True
            ready.set_result(None)
            async for note in conn.notifies():
                self.notified(note)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            if self.refused is None:
                log.info("knowledge change listener lost (%s); opened again when asked", exc)
        finally:
            self._listening = False
            self.generation += 1
            self._conn = None
            self._retry_at = time.monotonic() + RETRY_S
            if not ready.done():
                ready.set_result(None)
            if conn is not None:
                with contextlib.suppress(Exception):
                    await conn.close()

    def _forget_other_loop(self) -> None:
        """Drop a listener opened on another (finished) event loop: its socket is closed
        without a goodbye, as nothing of that loop can be awaited here."""
        conn, self._conn, self._task = self._conn, None, None
        self._listening = False
        self.generation += 1
        if conn is not None:
            conn.pgconn.finish()


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


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
    "ARRAY[to_regclass('knowledge_chunk'), to_regclass('knowledge_chunk_lookup'), "
    "to_regclass('knowledge_file_index')])) = 3 AND EXISTS (SELECT 1 FROM pg_proc "
    "WHERE proname = %(name)s AND pronamespace = current_schema()::regnamespace "
    "AND strpos(prosrc, %(channel)s) > 0)"
)


async def _ensure_trigger(conn: psycopg.AsyncConnection[Any], channel: str) -> None:
    """The statement triggers on :data:`TABLES` that notify ``channel`` (created once;
    two processes creating them take turns)."""
    params = {"name": TRIGGER, "channel": f"'{channel}'"}
    if (await (await conn.execute(_TRIGGERS_PRESENT, params)).fetchone() or (False,))[0]:
        return
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock(hashtext('nyla.knowledge-changes'))")
        if (await (await conn.execute(_TRIGGERS_PRESENT, params)).fetchone() or (False,))[0]:
            return
        await conn.execute(
            f"CREATE OR REPLACE FUNCTION {TRIGGER}() RETURNS trigger LANGUAGE plpgsql AS "
            f"$$BEGIN PERFORM pg_notify('{channel}', ''); RETURN NULL; END$$"
        )
        for table in TABLES:
            await conn.execute(f"DROP TRIGGER IF EXISTS {TRIGGER} ON {table}")
            await conn.execute(
                f"CREATE TRIGGER {TRIGGER} AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE "
                f"ON {table} FOR EACH STATEMENT EXECUTE FUNCTION {TRIGGER}()"
            )
