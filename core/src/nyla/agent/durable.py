"""Durable runs (``kernel.runs``): a run recorded in the database, driven by whichever
process holds it, its events written before they are streamed and streamed from the
database by any process.

- **Start**: :meth:`DurableRuns.create` stores the run with everything it needs (the
  agent's prompt, its :class:`AgentConfig` and the :class:`RunContext` the caller's account
  gave it: identity, budget, model allow-list, providers, neutralisation), then either this
  process drives it (:meth:`DurableRuns.start_here`, the default) or a ``nyla worker`` does
  (the job ``nyla.agent_run``, :mod:`nyla.agent.run_job`). Either way the run is driven from
  the stored row by :meth:`DurableRuns.drive`, so both run it alike.
- **Events**: numbered per run, written by the run's :class:`RunJournal` before anyone sees
  them; :meth:`DurableRuns.follow` reads them, woken by ``NOTIFY`` (:mod:`nyla.agent.run_bus`),
  so any process streams any run and ``Last-Event-ID`` resumes anywhere.
- **Cancel**: :meth:`DurableRuns.cancel` flags the row and notifies; the holder stops it.
- **A holder that dies**: :mod:`nyla.agent.run_sweep` marks its runs ``interrupted``; a run
  is never run twice (see ``docs/host.md``, "Running more than one").
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from psycopg.types.json import Jsonb

from nyla.agent import events
from nyla.agent.journal import RunJournal, RunLost
from nyla.agent.run_bus import RunBus
from nyla.agent.run_rounds import completed_rounds, loaded_messages, stored_messages
from nyla.agent.run_spec import loaded_spec, stored_spec
from nyla.agent.run_sweep import RunSweeper, answer_in_conversation, unfinished_writes
from nyla.agent.run_tables import StoredRun
from nyla.agent.write_gate import BEFORE_WRITE
from nyla.jobs.store import this_worker
from nyla.models.agent import AgentConfig, AgentEvent, EventType, RunContext
from nyla.models.ai import Message, ToolCall

if TYPE_CHECKING:
    from nyla.agent.runtime import AgentRuntime
    from nyla.db import Database

log = logging.getLogger(__name__)

QUEUED, RUNNING, INTERRUPTED, CANCELLED = "queued", "running", "interrupted", "cancelled"
OPEN = (QUEUED, RUNNING)
#: seconds between two heartbeats of a run (each also looks for a cancel flag)
HEARTBEAT_S = float(os.environ.get("NYLA_RUN_HEARTBEAT_S") or 5.0)
#: events one read returns at most (a stream reads again at once while there are more)
READ_LIMIT = 500

_INSERT = """
INSERT INTO host_runs (run_id, user_id, mandate_id, status, prompt, timezone, started_at, worker,
  spec, final_text, cost_chf, last_seq) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, '', 0, 0)
ON CONFLICT (run_id) DO NOTHING RETURNING run_id
"""
_CLAIM = """
UPDATE host_runs SET status = 'running', worker = %(worker)s, heartbeat_at = now()
WHERE run_id = %(run)s AND (status = 'queued' OR (status = 'running' AND worker = %(worker)s))
RETURNING spec, last_seq, cancel_requested_at IS NOT NULL
"""
_UNQUEUE = """
UPDATE host_runs SET status = 'error', error = %s, finished_at = now()
WHERE run_id = %s AND status = 'queued' RETURNING run_id
"""
_BEAT = """
UPDATE host_runs SET heartbeat_at = now()
WHERE run_id = %s AND worker = %s AND status = 'running'
RETURNING cancel_requested_at IS NOT NULL
"""
_CANCEL = """
WITH upd AS (
  UPDATE host_runs SET cancel_requested_at = now(),
    status = CASE WHEN status = 'queued' THEN 'cancelled' ELSE status END,
    finished_at = CASE WHEN status = 'queued' THEN now() ELSE finished_at END
  WHERE run_id = %s AND status IN ('queued', 'running') AND cancel_requested_at IS NULL
  RETURNING run_id
)
SELECT pg_notify(%s, run_id) FROM upd
"""
_STARTED_WRITE = """
UPDATE host_runs SET started_writes = coalesce(started_writes, '[]'::jsonb) || %s
WHERE run_id = %s AND worker = %s AND status = 'running' RETURNING run_id
"""
_OPEN_WRITES = """
SELECT r.started_writes, (
  SELECT jsonb_agg(e.payload ORDER BY e.seq) FROM host_run_events e
  WHERE e.run_id = r.run_id AND e.type IN ('TOOL_CALL', 'TOOL_RESULT')
) FROM host_runs r WHERE r.run_id = %s
"""
_INTERRUPTION = """
SELECT r.status, r.spec, (
  SELECT payload FROM host_run_events e
  WHERE e.run_id = r.run_id AND e.type = 'ERROR' ORDER BY e.seq DESC LIMIT 1
) FROM host_runs r WHERE r.run_id = %s
"""
_READ = """
SELECT r.status, e.payload FROM host_runs r
LEFT JOIN LATERAL (
  SELECT payload, seq FROM host_run_events
  WHERE run_id = r.run_id AND seq > %s ORDER BY seq LIMIT %s
) e ON true
WHERE r.run_id = %s ORDER BY e.seq
"""


@dataclass
class _Outcome:
    """How a run ended, as its row records it."""

    status: str | None = "error"
    final_text: str = ""
    cost_chf: float = 0.0
    error: str | None = None
    citations: list[dict[str, Any]] = field(default_factory=list)
    #: this process stopped the run (it ends ``interrupted``)
    stopped: bool = False


class DurableRuns:
    """Runs recorded in ``db``, driven by ``agent``; their answers go to the conversation
    store ``conversations`` (``files.workflows``); ``defer(run_id, user_id)`` queues a run
    for a worker (``None``: runs are driven in the process that starts them)."""

    def __init__(
        self,
        db: Database,
        agent: AgentRuntime,
        conversations: Any,
        *,
        defer: Callable[[str, str], Awaitable[Any]] | None = None,
    ) -> None:
        self.db, self.agent, self.conversations, self.defer = db, agent, conversations, defer
        self.worker = this_worker()
        self.bus = RunBus(db)
        self.bus.on_cancel(self._cancel_here)
        self.sweeper = RunSweeper(db, conversations, self.bus.events_channel)

    @property
    def queued(self) -> bool:
        """Whether runs go to workers (``NYLA_JOBS=procrastinate``)."""
        return self.defer is not None

    # ---- start --------------------------------------------------------------------------

    async def create(
        self,
        prompt: str,
        config: AgentConfig,
        context: RunContext,
        *,
        shown_prompt: str | None = None,
        run_id: str | None = None,
        continued: list[Message] | None = None,
    ) -> StoredRun:
        """Record a run: ``queued`` for a worker, or ``running`` held by this process
        (``continued``: the completed rounds of the interrupted run it resumes)."""
        spec = stored_spec(prompt, config, context)
        if continued:
            spec["continued"] = stored_messages(continued)
        row = StoredRun(
            run_id=run_id or uuid.uuid4().hex,
            user_id=context.user_id,
            mandate_id=context.mandate_id,
            status=QUEUED if self.queued else RUNNING,
            prompt=shown_prompt if shown_prompt is not None else prompt,
            timezone=context.timezone,
            started_at=datetime.now(UTC),
            spec=spec,
            worker=None if self.queued else self.worker,
            heartbeat_at=None,  # set by the database clock with the first write
            last_seq=0,
            cost_chf=0.0,
            final_text="",
        )
        # one autocommit statement, not a session's three (a retry finds the row there)
        names = ("run_id", "user_id", "mandate_id", "status", "prompt", "timezone", "started_at")
        params = [getattr(row, n) for n in (*names, "worker")] + [Jsonb(spec)]
        await self.db.read_driver(lambda conn: conn.rows(_INSERT, params))
        return row

    async def launch(
        self,
        row: StoredRun,
        on_commit: Callable[[list[dict[str, Any]]], None] | None = None,
    ) -> asyncio.Task[str | None] | None:
        """Hand a created run to a worker, or drive it here (the task is returned). A run
        the queue refused ends ``error`` (no run is left waiting for nothing)."""
        if self.defer is not None:
            try:
                await self.defer(row.run_id, row.user_id)
            except Exception as exc:
                error = f"the run could not be queued: {type(exc).__name__}: {exc}"
                await self.db.read_driver(lambda conn: conn.rows(_UNQUEUE, (error, row.run_id)))
                raise
            return None
        return asyncio.create_task(self.drive(row.run_id, on_commit=on_commit, created=row))

    # ---- drive --------------------------------------------------------------------------

    async def drive(
        self,
        run_id: str,
        *,
        on_commit: Callable[[list[dict[str, Any]]], None] | None = None,
        created: StoredRun | None = None,
    ) -> str | None:
        """Run a stored run to its end in this process; its status, or ``None`` when it
        was not this process's to run (taken, ended, or not there). ``created``: the row
        this process just recorded as its own, driven without claiming it again (a cancel
        meanwhile is heard by the first heartbeat)."""
        if created is not None and created.spec and created.worker == self.worker:
            spec, last_seq, cancel_requested = created.spec, created.last_seq, False
        else:
            rows = await self.db.read_driver(
                lambda conn: conn.rows(_CLAIM, {"run": run_id, "worker": self.worker})
            )
            if not rows:
                log.info("run %s is not waiting for a worker; left alone", run_id)
                return None
            spec, last_seq, cancel_requested = rows[0]
        self.bus.start()  # hear cancels from other processes
        journal = RunJournal(
            self.db,
            run_id,
            self.worker,
            self.bus.events_channel,
            last_seq=last_seq,
            on_commit=on_commit,
        )
        outcome = _Outcome()
        beat = asyncio.create_task(self._beat(run_id))
        try:
            if cancel_requested:
                outcome.status = CANCELLED
                journal.add(events.status(0, CANCELLED))
            else:
                await self._play(run_id, spec, journal, outcome)
        finally:
            beat.cancel()
            await asyncio.shield(self._end(run_id, spec, journal, outcome))
        return outcome.status

    async def _play(
        self, run_id: str, spec: dict[str, Any], journal: RunJournal, outcome: _Outcome
    ) -> None:
        prompt, config, context = loaded_spec(spec)
        gate = BEFORE_WRITE.set(functools.partial(self._write_starts, run_id))
        continued = loaded_messages(spec) or None
        run = self.agent.run(prompt, config, context, run_id=run_id, continued=continued)
        try:
            try:
                async for event in run:
                    if event.type is EventType.FINAL:
                        outcome.final_text = event.text
                        outcome.status = str(event.data.get("status") or outcome.status)
                        outcome.citations = list(event.data.get("citations") or [])
                    elif event.type is EventType.AGENT_SUMMARY:
                        outcome.status = str(event.data.get("status") or outcome.status)
                        outcome.cost_chf = float(event.data.get("costChf") or 0.0)
                    if journal.add(event)["seq"] == 1:
                        await asyncio.sleep(0)  # its write goes out before the run's reads
            finally:
                await run.aclose()  # a run taken away stops here, not when collected
                BEFORE_WRITE.reset(gate)
        except RunLost:
            log.warning("run %s was taken from this process; stopped", run_id)
            outcome.status = None
        except asyncio.CancelledError:  # this process stops: the run ends here, recorded
            outcome.status, outcome.error = INTERRUPTED, "the server stopped during the run"
            outcome.stopped = True  # its closing ERROR names its unfinished writes (_end)
        except Exception as exc:  # the run fails, the process goes on
            log.exception("run %s failed", run_id)
            outcome.status, outcome.error = "error", f"{type(exc).__name__}: {exc}"
            with contextlib.suppress(Exception):
                journal.add(AgentEvent(type=EventType.ERROR, text=outcome.error))

    async def _write_starts(self, run_id: str, call: ToolCall, ctx: Any) -> None:
        """Record that run ``run_id`` starts the writing ``call`` (one statement, before its
        handler runs): a crash from here on lists it among the run's unfinished writes. A
        sub-agent's own calls are not the run's (the call that started it is)."""
        if getattr(ctx, "run_id", run_id) != run_id:
            return
        entry = {"callId": call.id, "toolName": call.name, "round": getattr(ctx, "round", 0)}
        params = (Jsonb([entry]), run_id, self.worker)
        rows = await self.db.read_driver(lambda conn: conn.rows(_STARTED_WRITE, params))
        if not rows:
            raise RunLost(f"run {run_id} is no longer held by {self.worker}; {call.name} not run")

    async def _end(
        self, run_id: str, spec: dict[str, Any], journal: RunJournal, outcome: _Outcome
    ) -> None:
        """The answer into the conversation, then the row's end with the last events."""
        if outcome.status is None or isinstance(journal.error, RunLost):
            outcome.status = None  # taken from here (maybe while its last events were written)
            return
        try:  # a run taken from this process meanwhile shows here, before its answer is kept
            await journal.flush()
        except RunLost:
            log.warning("run %s was taken from this process before its end; left", run_id)
            outcome.status = None
            return
        except Exception:
            log.exception("writing the last events of run %s failed", run_id)
        if outcome.stopped:
            await self._stopped(run_id, journal, outcome)
        _, _, context = loaded_spec(spec)
        await answer_in_conversation(
            self.conversations,
            run_id,
            context,
            status=outcome.status,
            text=outcome.final_text,
            error=outcome.error,
            citations=outcome.citations,
        )
        try:
            await journal.finish(
                outcome.status,
                final_text=outcome.final_text,
                cost_chf=outcome.cost_chf,
                error=outcome.error,
            )
        except RunLost:
            log.warning("run %s was taken from this process at its end", run_id)
            outcome.status = None
        except Exception:
            log.exception("recording the end of run %s failed", run_id)

    async def _stopped(self, run_id: str, journal: RunJournal, outcome: _Outcome) -> None:
        """The closing ERROR of a run this process stops, naming the writing calls it
        started without a result (as the sweep does for a dead holder's runs)."""
        writes: list[dict[str, Any]] = []
        try:
            await journal.flush()
            rows = await self.db.read_driver(lambda conn: conn.rows(_OPEN_WRITES, (run_id,)))
            if rows:
                writes = unfinished_writes(list(rows[0][1] or []), rows[0][0])
        except Exception:
            log.exception("reading the unfinished writes of run %s failed", run_id)
        if writes:
            names = ", ".join(f"{w['toolName']} (call {w['callId']})" for w in writes)
            outcome.error = (
                f"{outcome.error}; these writing tool calls started and may or may not have "
                f"taken effect, check before asking again: {names}"
            )
        data = {"status": INTERRUPTED, "unfinishedWrites": writes}
        with contextlib.suppress(Exception):  # (a journal that failed: the end still goes in)
            journal.add(AgentEvent(type=EventType.ERROR, text=outcome.error or "", data=data))

    async def _beat(self, run_id: str) -> None:
        """Liveness of the run and a look for a cancel flag (the safety net of the cancel
        notification), every :data:`HEARTBEAT_S`."""
        while True:
            await asyncio.sleep(HEARTBEAT_S)
            try:
                rows = await self.db.read_driver(
                    lambda conn: conn.rows(_BEAT, (run_id, self.worker))
                )
            except Exception as exc:
                log.warning("heartbeat of run %s failed: %s", run_id, exc)
                continue
            if not rows or rows[0][0]:
                self.agent.cancel(run_id)

    # ---- cancel -------------------------------------------------------------------------

    async def cancel(self, run_id: str) -> bool:
        """Ask a queued or running run to stop, from any process; False when it already
        ended (or a cancel was asked before)."""
        channel = self.bus.cancel_channel
        rows = await self.db.read_driver(lambda conn: conn.rows(_CANCEL, (run_id, channel)))
        if rows:
            self._cancel_here(run_id)
        return bool(rows)

    def _cancel_here(self, run_id: str) -> None:
        self.agent.cancel(run_id)

    async def interruption(
        self, run_id: str
    ) -> tuple[str, AgentConfig, RunContext, list[dict[str, Any]], list[Message]] | None:
        """What an ``interrupted`` run ran with (prompt, config, context), the writes it
        left unfinished (its closing ERROR event's ``unfinishedWrites``) and the rounds it
        completed (:mod:`nyla.agent.run_rounds`), to run it again from there with the
        user's consent; ``None`` for a run that did not end ``interrupted``."""
        rows = await self.db.read_driver(lambda conn: conn.rows(_INTERRUPTION, (run_id,)))
        if not rows or rows[0][0] != INTERRUPTED or not rows[0][1]:
            return None
        _, spec, last = rows[0]
        prompt, config, context = loaded_spec(spec)
        writes = list(((last or {}).get("data") or {}).get("unfinishedWrites") or [])
        return prompt, config, context, writes, await completed_rounds(self.db, run_id, spec)

    # ---- read ---------------------------------------------------------------------------

    async def read(self, run_id: str, after: int) -> tuple[str | None, list[dict[str, Any]]]:
        """The run's status and its events after ``after`` (at most :data:`READ_LIMIT`),
        read in one snapshot: a status that ended means every event is there."""
        rows = await self.db.read_driver(lambda conn: conn.rows(_READ, (after, READ_LIMIT, run_id)))
        if not rows:
            return None, []
        return rows[0][0], [payload for _, payload in rows if payload is not None]

    async def follow(
        self, run_id: str, after: int, *, keepalive: float
    ) -> AsyncIterator[dict[str, Any] | None]:
        """The run's events after ``after`` until it ends, from the database, woken by
        ``NOTIFY`` (re-read every :data:`~nyla.agent.run_bus.FALLBACK_POLL_S` anyway);
        ``None`` after ``keepalive`` seconds without an event (the SSE ping)."""
        with self.bus.subscribe(run_id) as wake:
            quiet_since = time.monotonic()
            while True:
                wake.clear()
                status, batch = await self.read(run_id, after)
                for payload in batch:
                    yield payload
                    after = payload["seq"]
                if batch:
                    quiet_since = time.monotonic()
                    continue
                if status not in OPEN:
                    return
                left = keepalive - (time.monotonic() - quiet_since)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(
                        wake.wait(), max(0.0, min(self.bus.poll_interval(), left))
                    )
                if not wake.is_set() and time.monotonic() - quiet_since >= keepalive:
                    quiet_since = time.monotonic()
                    yield None

    # ---- upkeep -------------------------------------------------------------------------

    async def sweep(self) -> int:
        """Mark the runs of dead holders ``interrupted`` (see :mod:`nyla.agent.run_sweep`)."""
        return await self.sweeper.sweep()

    async def aclose(self) -> None:
        """Stop listening and sweeping."""
        await self.sweeper.aclose()
        await self.bus.aclose()
