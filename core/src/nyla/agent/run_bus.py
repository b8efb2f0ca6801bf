"""Wake-ups between processes for durable runs (and what else a host must hear at once, such
as a revoked token: :meth:`RunBus.listen`): PostgreSQL ``LISTEN``/``NOTIFY``.

One listening connection per process (psycopg's async ``notifies()``) on two channels of the
database's schema: *events* (``run_id:last_seq``, sent by a run's journal as its events
commit) wakes the streams of that run in this process; *cancel* (``run_id``) asks whichever
process holds the run to stop it. Notifications are only wake-ups, never data: a stream
reads the events from the tables, so a wake-up lost (the listener reconnecting, a
notification for another schema's run) costs at most the fallback poll
(:data:`FALLBACK_POLL_S`), never an event."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nyla.db import Database

log = logging.getLogger(__name__)

#: a stream re-reads the tables after this many seconds without a wake-up (a safety net:
#: a notification can be lost while the listener reconnects)
FALLBACK_POLL_S = float(os.environ.get("NYLA_RUN_FALLBACK_POLL_S") or 5.0)
#: while the listener is not connected, streams poll this often
DISCONNECTED_POLL_S = 1.0
RECONNECT_S = 1.0


def channel_name(db: Database, base: str) -> str:
    """The notification channel ``base`` of ``db``'s schema (a schema is its own world: test
    schemas on one server do not wake each other)."""
    suffix = f"_{db.schema}" if db.schema else ""
    return f"{base}{suffix}"[:63]


def channels(db: Database) -> tuple[str, str]:
    """The events and the cancel channel of ``db``'s schema."""
    return (channel_name(db, "nyla_run_events"), channel_name(db, "nyla_run_cancel"))


def conninfo(db: Database) -> str:
    """A libpq connection string for ``db`` (the URL without SQLAlchemy's driver name)."""
    from sqlalchemy.engine import make_url

    url = make_url(db.url).set(drivername="postgresql")
    return url.render_as_string(hide_password=False)


class RunBus:
    """This process's listener: :meth:`subscribe` to be woken when a run's events commit,
    :meth:`on_cancel` to hear cancels. Started on first use, on the running loop."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.events_channel, self.cancel_channel = channels(db)
        self._subscribers: dict[str, set[asyncio.Event]] = {}
        self._cancel_handlers: list[Callable[[str], Any]] = []
        #: other channels this listener serves (:meth:`listen`): name -> handler
        self._handlers: dict[str, Callable[[str], Any]] = {}
        self._task: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.connected = asyncio.Event()
        #: counts the listener's connections and losses (:meth:`listening`)
        self._epoch = 0

    def start(self) -> None:
        """Listen (once per event loop)."""
        loop = asyncio.get_running_loop()
        if self._task is not None and not self._task.done() and self._loop is loop:
            return
        self._loop = loop
        self.connected = asyncio.Event()
        self._task = asyncio.create_task(self._listen(), name="nyla-run-bus")

    async def wait_connected(self, timeout: float = 10.0) -> bool:
        """Until the listener is connected (True) or ``timeout`` passed (False)."""
        self.start()
        try:
            await asyncio.wait_for(self.connected.wait(), timeout)
        except TimeoutError:
            return False
        return True

    def on_cancel(self, handler: Callable[[str], Any]) -> None:
        """Call ``handler(run_id)`` for every cancel notification."""
        self._cancel_handlers.append(handler)

    def listen(self, base: str, handler: Callable[[str], Any]) -> None:
        """Call ``handler(payload)`` for every notification on the channel ``base`` of this
        database (:func:`channel_name`), on this process's one listening connection (a
        listener already connected reconnects to add it)."""
        self._handlers[channel_name(self.db, base)] = handler
        if self._task is not None and not self._task.done():
            self._task.cancel()
            self._task = None
        self.start()

    @contextlib.contextmanager
    def subscribe(self, run_id: str) -> Iterator[asyncio.Event]:
        """An event set whenever ``run_id``'s events commit (clear it before reading)."""
        self.start()
        wake = asyncio.Event()
        self._subscribers.setdefault(run_id, set()).add(wake)
        try:
            yield wake
        finally:
            waiting = self._subscribers.get(run_id)
            if waiting is not None:
                waiting.discard(wake)
                if not waiting:
                    del self._subscribers[run_id]

    def listening(self) -> int | None:
        """While the listener is connected, a number that stays the same until it loses
        its connection (``None`` meanwhile): what a cache kept since then heard every
        notification sent to it."""
        return self._epoch if self.connected.is_set() else None

    def poll_interval(self) -> float:
        """How long a stream waits for a wake-up before it reads anyway."""
        return FALLBACK_POLL_S if self.connected.is_set() else DISCONNECTED_POLL_S

    def _wake(self, run_id: str | None = None) -> None:
        targets = (
            self._subscribers.get(run_id, ())
            if run_id is not None
            else [w for group in self._subscribers.values() for w in group]
        )
        for wake in targets:
            wake.set()

    async def _listen(self) -> None:
        import psycopg

        while True:
            try:
                conn = await psycopg.AsyncConnection.connect(
                    conninfo(self.db), autocommit=True, connect_timeout=10
                )
                async with conn:
                    await conn.execute(f'LISTEN "{self.events_channel}"')
                    await conn.execute(f'LISTEN "{self.cancel_channel}"')
                    for name in self._handlers:
                        await conn.execute(f'LISTEN "{name}"')
                    self._epoch += 1
                    self.connected.set()
                    self._wake()  # what committed while no one listened
                    async for note in conn.notifies():
                        self._dispatch(note.channel, note.payload)
            except asyncio.CancelledError:
                self._lost()
                raise
            except Exception as exc:
                log.warning("run listener lost its connection (%s); reconnecting", exc)
            self._lost()
            self._wake()
            await asyncio.sleep(RECONNECT_S)

    def _lost(self) -> None:
        self._epoch += 1
        self.connected.clear()

    def _dispatch(self, channel: str, payload: str) -> None:
        handler = self._handlers.get(channel)
        if handler is not None:
            try:
                handler(payload)
            except Exception:
                log.exception("a handler of %s failed", channel)
            return
        run_id = payload.partition(":")[0]
        if channel == self.events_channel:
            self._wake(run_id)
            return
        for handler in self._cancel_handlers:
            try:
                handler(run_id)
            except Exception:
                log.exception("a cancel handler failed for run %s", run_id)

    async def aclose(self) -> None:
        """Stop listening."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
            self._task = None
