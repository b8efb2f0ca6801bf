"""A run's event journal: every event is numbered (1, 2, ... per run) and written to the
database before anyone streams it.

Events queue while a write is in flight and go together in the next one, so a run waits for
no write (the loop only appends) and a burst costs one write; writes of one run are at least
:data:`MIN_GAP_S` apart (a streamed answer costs at most 40 writes a second). A write is one statement on an
autocommit driver connection (one round trip): a data-modifying ``WITH`` that advances the
run's ``last_seq`` and heartbeat, inserts the batch and ``pg_notify``-s the run's channel;
PostgreSQL delivers the notification when the statement commits, so a listener woken by it
finds the events there. The update is guarded by the holder (``worker``), ``status =
'running'`` and the previous ``last_seq``: a run another process took over (marked
interrupted) gets nothing more, and a batch is never applied twice."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from psycopg.types.json import Jsonb

if TYPE_CHECKING:
    from nyla.db import Database
    from nyla.models.agent import AgentEvent

log = logging.getLogger(__name__)

#: attempts at writing one batch before the journal gives up (the run then fails)
WRITE_ATTEMPTS = 3
#: seconds at least between two writes of one run: a model streaming a token every few
#: milliseconds costs at most 40 writes a second (the first event of a burst goes at once)
MIN_GAP_S = 0.025

_WRITE = """
WITH upd AS (
  UPDATE host_runs SET last_seq = %(last)s, heartbeat_at = now(){extra}
  WHERE run_id = %(run)s AND worker = %(worker)s AND status = 'running'
    AND last_seq = %(prev)s
  RETURNING run_id
), ins AS (
  INSERT INTO host_run_events (run_id, seq, type, payload)
  SELECT upd.run_id, e.seq, e.type, e.payload
  FROM upd, jsonb_to_recordset(%(events)s) AS e(seq integer, type text, payload jsonb)
)
SELECT pg_notify(%(channel)s, upd.run_id || ':' || %(last)s) FROM upd
"""
_END = (
    ", status = %(status)s, final_text = %(final_text)s, cost_chf = %(cost)s,"
    " error = %(error)s, finished_at = now()"
)
_WRITE_ON = _WRITE.replace("{extra}", "")
_WRITE_END = _WRITE.replace("{extra}", _END)
_CHECK = "SELECT worker, status, last_seq FROM host_runs WHERE run_id = %s"


class RunLost(RuntimeError):
    """The run is no longer this process's (another process marked it interrupted)."""


def _dumps(value: Any) -> str:
    return json.dumps(value, default=str)


class RunJournal:
    """The events of run ``run_id`` held by ``worker``, written in order to ``channel``'s
    tables; ``on_commit`` gets each batch once it is committed (this process's subscribers
    stream from there). ``last_seq`` is where the run's numbering stands."""

    def __init__(
        self,
        db: Database,
        run_id: str,
        worker: str,
        channel: str,
        *,
        last_seq: int = 0,
        on_commit: Callable[[list[dict[str, Any]]], None] | None = None,
    ) -> None:
        self.db, self.run_id, self.worker, self.channel = db, run_id, worker, channel
        self.on_commit = on_commit
        self._seq = self._written = last_seq
        self._pending: list[dict[str, Any]] = []
        self._writer: asyncio.Task[None] | None = None
        self._last_write = float("-inf")
        self.error: BaseException | None = None

    @property
    def last_seq(self) -> int:
        """The number of the last event added."""
        return self._seq

    def add(self, event: AgentEvent) -> dict[str, Any]:
        """Number ``event`` and queue it for the next write; its wire form is returned.
        Raises the write's error once one failed for good (:class:`RunLost` among them)."""
        if self.error is not None:
            raise self.error
        self._seq += 1
        payload = {"seq": self._seq, "runId": self.run_id, **event.to_wire()}
        self._pending.append(payload)
        if self._writer is None or self._writer.done():
            self._writer = asyncio.create_task(self._write_pending())
        return payload

    async def flush(self) -> None:
        """Until every event added so far is committed."""
        while self._writer is not None and not self._writer.done():
            await asyncio.shield(self._writer)
        if self.error is not None:
            raise self.error

    async def finish(
        self, status: str, *, final_text: str = "", cost_chf: float = 0.0, error: str | None = None
    ) -> None:
        """Commit what is left with the run's end (one statement: a subscriber that sees
        the end has seen every event)."""
        if self._writer is not None and not self._writer.done():
            await asyncio.wait({self._writer})
        if self.error is not None:
            raise self.error
        batch, self._pending = self._pending, []
        end = {"status": status, "final_text": final_text, "cost": cost_chf, "error": error}
        await self._commit(batch, end)

    async def _write_pending(self) -> None:
        try:
            while self._pending:
                wait = self._last_write + MIN_GAP_S - time.monotonic()
                if wait > 0:  # events that come meanwhile join this batch
                    await asyncio.sleep(wait)
                batch, self._pending = self._pending, []
                await self._commit(batch, None)
                self._last_write = time.monotonic()
        except BaseException as exc:
            self.error = exc
            if not isinstance(exc, Exception):
                raise

    async def _commit(self, batch: list[dict[str, Any]], end: dict[str, Any] | None) -> None:
        last = batch[-1]["seq"] if batch else self._written
        params = {
            "run": self.run_id,
            "worker": self.worker,
            "prev": self._written,
            "last": last,
            "channel": self.channel,
            "events": Jsonb(
                [{"seq": e["seq"], "type": e["type"], "payload": e} for e in batch], _dumps
            ),
            **(end or {}),
        }
        sql = _WRITE_END if end is not None else _WRITE_ON
        for attempt in range(1, WRITE_ATTEMPTS + 1):
            try:
                rows = await self.db.read_driver(lambda conn: conn.rows(sql, params))
                break
            except Exception as exc:
                if attempt == WRITE_ATTEMPTS:
                    raise
                log.warning("writing events of run %s failed (%s); again", self.run_id, exc)
                await asyncio.sleep(0.2 * attempt)
        if not rows and not await self._applied(last):
            raise RunLost(f"run {self.run_id} is no longer held by {self.worker}")
        self._written = last
        if self.on_commit is not None and batch:
            self.on_commit(batch)

    async def _applied(self, last: int) -> bool:
        """Whether a write that matched no row had been applied already (a retry after a
        lost answer), rather than the run having been taken away."""
        rows = await self.db.read_driver(lambda conn: conn.rows(_CHECK, (self.run_id,)))
        return bool(rows) and rows[0][0] == self.worker and rows[0][2] >= last
