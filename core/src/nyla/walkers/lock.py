"""One sync per data source at a time, whichever process or job backend runs it.

Two locks, both PostgreSQL advisory locks keyed by the data source (and the database schema,
so that instances sharing one server never wait for each other):

- :func:`source_lock` — held by a sync from start to end, on a connection of its own
  (session level: a process that dies releases it with its connection). A second sync of the
  same source waits for it; :class:`~nyla.walkers.runner.WalkerRunner` first lets a request
  in the same process join the running sync instead.
- :func:`write_lock` — taken first by every transaction that writes a page or sweeps, so
  those of two syncs that ever overlap (a lock lost with its connection, an older nyla) run
  one after the other and never deadlock on each other's rows.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from sqlalchemy import text

log = logging.getLogger(__name__)

#: how often a waiting sync asks for the lock again (and checks whether it was cancelled)
POLL_S = 0.5


def lock_key(db: Any, ds_id: str, purpose: str) -> int:
    """The advisory-lock key of a data source for ``purpose`` (a stable signed 64-bit
    number)."""
    digest = hashlib.sha256(f"nyla.{purpose}:{db.schema or ''}:{ds_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


class LockWait:
    """What acquiring the lock took: ``waited_s``; ``given_up`` when ``keep_waiting``
    said no before the lock came free."""

    def __init__(self) -> None:
        self.waited_s = 0.0
        self.given_up = False


@contextlib.asynccontextmanager
async def source_lock(
    db: Any, ds_id: str, keep_waiting: Callable[[], Awaitable[bool]] | None = None
) -> AsyncIterator[LockWait]:
    """Hold the data source's sync lock for the block; waits while another sync holds it
    (asking ``keep_waiting()`` between tries: ``False`` gives up and the block runs with
    ``given_up`` set and no lock)."""
    key = lock_key(db, ds_id, "sync")
    wait = LockWait()
    await db.ensure_ready()
    async with db.engine.connect() as conn:
        await conn.execution_options(isolation_level="AUTOCOMMIT")
        began = time.monotonic()
        query = text("SELECT pg_try_advisory_lock(:key)")
        while not (await conn.execute(query, {"key": key})).scalar():
            if keep_waiting is not None and not await keep_waiting():
                wait.given_up = True
                break
            await asyncio.sleep(POLL_S)
        wait.waited_s = round(time.monotonic() - began, 2)
        try:
            yield wait
        finally:
            if not wait.given_up:
                await _unlock(conn, key)


async def _unlock(conn: Any, key: int) -> None:
    try:
        await conn.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": key})
    except BaseException:
        # a connection that could not say unlock must not go back to the pool holding it
        log.warning("releasing the sync lock failed; closing its connection", exc_info=True)
        await conn.invalidate()
        raise


async def write_lock(session: Any, ds_id: str) -> None:
    """Take the data source's write lock for the caller's transaction (keyed in SQL by the
    session's schema, which the caller's session already has on its search path)."""
    await session.execute(
        text(
            "SELECT pg_advisory_xact_lock("
            "hashtextextended('nyla.sync-write:' || current_schema() || ':' || :ds, 0))"
        ),
        {"ds": ds_id},
    )
