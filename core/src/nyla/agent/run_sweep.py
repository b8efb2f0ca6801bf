"""What becomes of a run whose holder died: it is marked ``interrupted``, never run again.

Every process that holds runs (a host in its default mode, a ``nyla worker``) sweeps every
:data:`SWEEP_S`, and a host at start: a ``running`` run whose holder (``host:pid``) is a
process of this machine that no longer exists, or whose heartbeat is older than
:data:`STALE_S` (a holder on another machine), is marked ``interrupted``. The run's stream
ends with an ERROR event that names every call of a writing tool that started without a
TOOL_RESULT (``unfinishedWrites``; the holder records a writing call in the run's row before
its handler runs, :mod:`nyla.agent.write_gate`): such a call may or may not have taken
effect, and the user decides. Nothing is re-run automatically, so no write runs twice."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy import func, select, text

from nyla.agent.run_tables import StoredRun, StoredRunEvent
from nyla.jobs.store import worker_alive
from nyla.models.agent import RunContext

if TYPE_CHECKING:
    from nyla.db import Database

log = logging.getLogger(__name__)

INTERRUPTED = "interrupted"
#: seconds between two sweeps of a process
SWEEP_S = float(os.environ.get("NYLA_RUN_SWEEP_S") or 10.0)
#: a run whose heartbeat is older than this is its holder's no more (holders beat every 5 s)
STALE_S = float(os.environ.get("NYLA_RUN_STALE_S") or 60.0)
MESSAGE = "interrupted: the process running it stopped during the run; nothing was run again"


def unfinished_writes(
    payloads: list[dict[str, Any]], started: list[dict[str, Any]] | None = None
) -> list[dict[str, Any]]:
    """The calls of writing tools that started without a TOOL_RESULT: those the run's row
    recorded before their handlers ran (``started``), then any other TOOL_CALL event's."""
    finished = {
        (p.get("data") or {}).get("callId") for p in payloads if p.get("type") == "TOOL_RESULT"
    }
    open_calls = [dict(w) for w in started or () if w.get("callId") not in finished]
    finished |= {w.get("callId") for w in open_calls}
    for p in payloads:
        data = p.get("data") or {}
        if p.get("type") != "TOOL_CALL" or data.get("readOnly", False):
            continue
        if data.get("callId") not in finished:
            open_calls.append(
                {
                    "callId": data.get("callId"),
                    "toolName": data.get("toolName"),
                    "round": p.get("round"),
                }
            )
    return open_calls


def interruption_text(writes: list[dict[str, Any]]) -> str:
    """The error a user reads for an interrupted run."""
    if not writes:
        return MESSAGE
    names = ", ".join(f"{w['toolName']} (call {w['callId']})" for w in writes)
    return (
        f"{MESSAGE}. These writing tool calls started and may or may not have taken effect; "
        f"check before asking again: {names}"
    )


class RunSweeper:
    """Finds the runs of dead holders in ``db`` and ends them ``interrupted``."""

    def __init__(self, db: Database, conversations: Any, channel: str) -> None:
        self.db, self.conversations, self.channel = db, conversations, channel
        self._task: asyncio.Task[None] | None = None
        self._also: list[Callable[[], Awaitable[Any]]] = []

    def also(self, work: Callable[[], Awaitable[Any]]) -> None:
        """Do ``work`` with every sweep too (a worker rescues its queue's stalled jobs)."""
        self._also.append(work)

    def start(self, every_s: float = SWEEP_S) -> None:
        """Sweep every ``every_s`` seconds in the background (once per process)."""
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._every(every_s), name="nyla-run-sweep")

    async def _every(self, every_s: float) -> None:
        while True:
            await asyncio.sleep(every_s)
            for work in (self.sweep, *self._also):
                try:
                    await work()
                except Exception:
                    log.exception("sweeping interrupted runs failed")

    async def sweep(self) -> int:
        """End every run whose holder is gone; how many."""
        async with self.db.session() as s:
            rows = (
                await s.execute(
                    select(
                        StoredRun.run_id,
                        StoredRun.worker,
                        # the database's clock, which every holder's heartbeat was set by
                        StoredRun.heartbeat_at < func.now() - timedelta(seconds=STALE_S),
                    ).where(StoredRun.status == "running")
                )
            ).all()
        dead = [
            (run_id, worker)
            for run_id, worker, silent in rows
            if not worker_alive(worker) or bool(silent)
        ]
        ended = 0
        for run_id, worker in dead:
            ended_as = await self._interrupt(run_id, worker)
            if ended_as is not None:
                ended += 1
                context, message = ended_as
                await answer_in_conversation(
                    self.conversations, run_id, context, status=INTERRUPTED, error=message
                )
        return ended

    async def _interrupt(self, run_id: str, worker: str | None) -> tuple[RunContext, str] | None:
        """Mark one run interrupted (if it is still as seen) with its closing ERROR event;
        whose it was and the message, or ``None`` when another process was first."""
        async with self.db.session() as s:
            row = await s.scalar(
                select(StoredRun)
                .where(StoredRun.run_id == run_id, StoredRun.status == "running")
                .where(StoredRun.worker.is_(None) if worker is None else StoredRun.worker == worker)
                .with_for_update(skip_locked=True)
            )
            if row is None:
                return None
            payloads = list(
                (
                    await s.execute(
                        select(StoredRunEvent.payload)
                        .where(StoredRunEvent.run_id == run_id)
                        .where(StoredRunEvent.type.in_(("TOOL_CALL", "TOOL_RESULT")))
                    )
                ).scalars()
            )
            last = await s.scalar(
                select(func.coalesce(func.max(StoredRunEvent.seq), 0)).where(
                    StoredRunEvent.run_id == run_id
                )
            )
            last = max(int(last or 0), row.last_seq or 0)
            writes = unfinished_writes(payloads, row.started_writes)
            message = interruption_text(writes)
            event = {"seq": last + 1, "runId": run_id, "type": "ERROR", "round": 0, "text": message}
            event["data"] = {"status": INTERRUPTED, "unfinishedWrites": writes}
            s.add(StoredRunEvent(run_id=run_id, seq=last + 1, type="ERROR", payload=event))
            row.status, row.error, row.last_seq = INTERRUPTED, message, last + 1
            row.finished_at = datetime.now(UTC)
            await s.execute(text("SELECT pg_notify(:c, :p)"), {"c": self.channel, "p": run_id})
            spec = row.spec or {}
        log.warning("run %s: %s", run_id, message)
        return _context(spec, row), message

    async def aclose(self) -> None:
        """Stop sweeping."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
            self._task = None


def _context(spec: dict[str, Any], row: StoredRun) -> RunContext:
    try:
        return RunContext.model_validate(spec["context"])
    except (KeyError, TypeError, ValueError):  # a run of an older nyla: no spec stored
        return RunContext(user_id=row.user_id, mandate_id=row.mandate_id)


async def answer_in_conversation(
    conversations: Any,
    run_id: str,
    context: RunContext,
    *,
    status: str,
    text: str = "",
    error: str | None = None,
    citations: list[dict[str, Any]] | None = None,
) -> None:
    """The run's answer (or its error) as the assistant's turn of the conversation its
    prompt was stored in; a failure is logged (the run's row still records its end)."""
    failed = status in ("error", INTERRUPTED) or not text
    shown = (error or text or f"The run ended: {status}") if failed else text
    try:
        workflow_id = context.workflow_id or await conversations.workflow_of_run(run_id)
        if workflow_id is None:
            return
        workflow = await conversations.for_turn(workflow_id, context)
        await conversations.add_turn(
            workflow,
            role="assistant",
            status="error" if failed else "answer",
            text=shown,
            run_id=run_id,
            citations=citations or None,
        )
    except Exception:
        log.exception("storing the end of run %s in its conversation failed", run_id)
