"""Agent runs detached from the HTTP connection.

A run is an asyncio task that consumes ``kernel.agent.run`` and numbers each event (1, 2, ...,
the SSE id). Events are kept in memory for live subscribers and written to
``host_run_events`` in batches (every :data:`CHUNK_BATCH` events, :data:`FLUSH_DELAY_S` after
the first unsaved one, and with the run's end in the transaction that records its status), so
a finished run — or a run held by another worker process — replays from the database. A subscriber's
disconnect never touches the run; ``cancel`` is its own call. A server that dies mid-run
leaves ``running`` rows behind: :meth:`RunManager.recover_interrupted` marks them
``interrupted`` at the next boot and closes their event stream with an ERROR event.

Every run belongs to a conversation (a chat workflow of the kernel): its prompt, with the
files attached to it, is stored there before the run starts, and its answer (with the
citations of the FINAL event) or its error when it ends, so a reload shows both. The agent
runs with the conversation's workflow id (history and round memory) and with the caller's
account applied (``kernel.agent.user_context``: connection toolboxes, model allow-list)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, NamedTuple

from sqlalchemy import func, select, update

from nyla import AgentConfig, AgentEvent, EventType, RunContext
from nyla_host.identity import Identity
from nyla_host.links import PURPOSE, LinkSigner, with_urls
from nyla_host.tables import HostRunEventRow, HostRunRow

if TYPE_CHECKING:
    from nyla import Kernel

log = logging.getLogger(__name__)

RUNNING, INTERRUPTED = "running", "interrupted"
CHUNK_BATCH = 32
#: how long an event may stay unsaved (what a crash can lose; a follower in another process lags)
FLUSH_DELAY_S = 2.0


@dataclass
class _LiveRun:
    run_id: str
    user_id: str
    #: the conversation (a ChatWorkflow) the run's prompt and answer go to
    workflow: Any = None
    citations: list[dict[str, Any]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    unsaved: list[dict[str, Any]] = field(default_factory=list)
    done: bool = False
    changed: asyncio.Condition = field(default_factory=asyncio.Condition)
    task: asyncio.Task[None] | None = None
    saving: asyncio.Lock = field(default_factory=asyncio.Lock)
    flush: asyncio.Task[None] | None = None


class RunRecord(NamedTuple):
    """A run as the reads of the API get it: the columns of ``host_runs`` read straight
    from the driver (no ORM objects: listing 50 runs through the ORM cost a request ~4 ms)."""

    run_id: str
    user_id: str
    mandate_id: str | None
    status: str
    prompt: str
    final_text: str
    cost_chf: float
    last_seq: int
    timezone: str
    error: str | None
    started_at: datetime | None
    finished_at: datetime | None


_SELECT_RUNS = f"SELECT {', '.join(RunRecord._fields)} FROM host_runs"


def run_dict(row: HostRunRow | RunRecord) -> dict[str, Any]:
    """A run as the API shows it (camelCase)."""
    return {
        "runId": row.run_id,
        "userId": row.user_id,
        "mandateId": row.mandate_id,
        "status": row.status,
        "prompt": row.prompt,
        "finalText": row.final_text,
        "costChf": row.cost_chf,
        "lastEventId": row.last_seq,
        "timezone": row.timezone,
        "error": row.error,
        "startedAt": row.started_at.isoformat() if row.started_at else None,
        "finishedAt": row.finished_at.isoformat() if row.finished_at else None,
    }


class RunNotFound(LookupError):
    """No such run for this caller."""


class RunManager:
    """Starts, streams, cancels and recovers the host's agent runs."""

    def __init__(self, kernel: Kernel, *, poll_interval: float = 0.5) -> None:
        self.kernel = kernel
        self.poll_interval = poll_interval
        self._live: dict[str, _LiveRun] = {}
        #: signs the download links of the files a run's answer cites
        self.links = LinkSigner(lambda: kernel.derived_key(PURPOSE))

    # ---- lifecycle --------------------------------------------------------------------

    async def start(
        self,
        prompt: str,
        identity: Identity,
        *,
        config: AgentConfig,
        timezone: str,
        conversation_id: str,
        files: list[Any] | None = None,
    ) -> HostRunRow:
        """Record a run, store its prompt in the conversation and start it in the
        background; returns its row. ``files`` (the caller's, checked) are attached to the
        prompt and named in what the agent reads."""
        run_id = uuid.uuid4().hex
        context = await self.kernel.agent.user_context(
            RunContext(
                user_id=identity.user_id,
                mandate_id=identity.mandate_id,
                timezone=timezone,
                workflow_id=conversation_id,
            )
        )
        workflows = self.kernel.files.workflows
        workflow = await workflows.load(conversation_id, context)
        row = HostRunRow(
            run_id=run_id,
            user_id=identity.user_id,
            mandate_id=identity.mandate_id,
            status=RUNNING,
            prompt=prompt,
            timezone=timezone,
            started_at=datetime.now(UTC),
        )
        async with self.kernel.db.session() as s:
            s.add(row)
        await workflows.add_turn(
            workflow, role="user", status="prompt", text=prompt, run_id=run_id, files=files
        )
        live = _LiveRun(run_id=run_id, user_id=identity.user_id, workflow=workflow)
        self._live[run_id] = live
        live.task = asyncio.create_task(
            self._drive(live, agent_prompt(prompt, files or []), config, context)
        )
        return row

    async def _drive(
        self, live: _LiveRun, prompt: str, config: AgentConfig, context: RunContext
    ) -> None:
        status, final_text, cost, error = "error", "", 0.0, None
        try:
            async for event in self.kernel.agent.run(prompt, config, context, run_id=live.run_id):
                if event.type is EventType.FINAL:
                    final_text, status = event.text, str(event.data.get("status") or status)
                    live.citations = list(event.data.get("citations") or [])
                    event.data["citations"] = await with_urls(
                        self.kernel, self.links, live.citations, context
                    )
                elif event.type is EventType.AGENT_SUMMARY:
                    status = str(event.data.get("status") or status)
                    cost = float(event.data.get("costChf") or 0.0)
                await self._emit(live, event)
        except asyncio.CancelledError:
            status, error = INTERRUPTED, "the server stopped during the run"
            await self._emit(live, AgentEvent(type=EventType.ERROR, text=error))
        except Exception as exc:  # the run fails, the host keeps serving
            log.exception("run %s failed", live.run_id)
            status, error = "error", f"{type(exc).__name__}: {exc}"
            await self._emit(live, AgentEvent(type=EventType.ERROR, text=error))
        finally:
            await self._finish(live, status, final_text, cost, error)

    async def _emit(self, live: _LiveRun, event: AgentEvent) -> None:
        payload = {"seq": len(live.events) + 1, "runId": live.run_id, **event.to_wire()}
        async with live.changed:
            live.events.append(payload)
            live.unsaved.append(payload)
            live.changed.notify_all()
        if len(live.unsaved) >= CHUNK_BATCH:
            await self._save(live)
        elif live.flush is None:
            live.flush = asyncio.create_task(self._flush_later(live))

    async def _flush_later(self, live: _LiveRun) -> None:
        await asyncio.sleep(FLUSH_DELAY_S)
        live.flush = None
        if live.unsaved and not live.done:
            await self._save(live)

    async def _save(self, live: _LiveRun, **values: Any) -> None:
        # one writer at a time: the run's end must commit after every earlier batch, so a
        # follower that sees the final status also sees every event
        async with live.saving:
            batch, live.unsaved = live.unsaved, []
            if not batch and not values:
                return
            async with self.kernel.db.session() as s:
                s.add_all(
                    HostRunEventRow(run_id=live.run_id, seq=e["seq"], type=e["type"], payload=e)
                    for e in batch
                )
                values.setdefault("last_seq", func.greatest(HostRunRow.last_seq, len(live.events)))
                await s.execute(
                    update(HostRunRow).where(HostRunRow.run_id == live.run_id).values(**values)
                )

    async def _finish(
        self, live: _LiveRun, status: str, final_text: str, cost: float, error: str | None
    ) -> None:
        try:
            await asyncio.shield(self._answer(live, status, final_text, error))
            await asyncio.shield(
                self._save(
                    live,
                    status=status,
                    final_text=final_text,
                    cost_chf=cost,
                    error=error,
                    finished_at=datetime.now(UTC),
                )
            )
        finally:
            if live.flush is not None:
                live.flush.cancel()
            async with live.changed:
                live.done = True
                live.changed.notify_all()
            self._live.pop(live.run_id, None)

    async def _answer(
        self, live: _LiveRun, status: str, final_text: str, error: str | None
    ) -> None:
        """The run's answer (or its error) into the conversation; a failure to store it is
        logged (the run's row still records how it ended)."""
        failed = status in ("error", INTERRUPTED) or not final_text
        text = (error or final_text or f"The run ended: {status}") if failed else final_text
        try:
            await self.kernel.files.workflows.add_turn(
                live.workflow,
                role="assistant",
                status="error" if failed else "answer",
                text=text,
                run_id=live.run_id,
                citations=live.citations or None,
            )
        except Exception:
            log.exception("storing the answer of run %s failed", live.run_id)

    async def cancel(self, run_id: str, identity: Identity) -> bool:
        """Cancel a running run of the caller (a sysadmin may cancel any); False when it is
        not running here."""
        row = await self.get(run_id, identity)
        live = self._live.get(run_id)
        if live is None or row.status != RUNNING:
            return False
        return bool(self.kernel.agent.cancel(run_id))

    async def recover_interrupted(self) -> int:
        """At boot: every run still ``running`` belongs to a server that died; mark it
        ``interrupted`` and end its event stream. Returns how many."""
        async with self.kernel.db.session() as s:
            rows = list(
                (await s.execute(select(HostRunRow).where(HostRunRow.status == RUNNING))).scalars()
            )
            for row in rows:
                if row.run_id in self._live:
                    continue
                last = (
                    await s.scalar(
                        select(func.coalesce(func.max(HostRunEventRow.seq), 0)).where(
                            HostRunEventRow.run_id == row.run_id
                        )
                    )
                    or 0
                )
                message = "interrupted: the server stopped during the run"
                event = {"seq": last + 1, "runId": row.run_id, "type": "ERROR", "round": 0}
                event.update(text=message, data={"status": INTERRUPTED})
                s.add(HostRunEventRow(run_id=row.run_id, seq=last + 1, type="ERROR", payload=event))
                row.status, row.error, row.last_seq = INTERRUPTED, message, last + 1
                row.finished_at = datetime.now(UTC)
        for row in rows:
            if row.status == INTERRUPTED:
                await self._answer_interrupted(row)
        return len(rows)

    async def _answer_interrupted(self, row: HostRunRow) -> None:
        """The error of a run a dead server left, in its conversation (where a reload
        shows it under the prompt)."""
        workflows = self.kernel.files.workflows
        try:
            workflow_id = await workflows.workflow_of_run(row.run_id)
            if workflow_id is None:
                return
            context = RunContext(user_id=row.user_id, mandate_id=row.mandate_id)
            workflow = await workflows.load(workflow_id, context)
            await workflows.add_turn(
                workflow,
                role="assistant",
                status="error",
                text=row.error or INTERRUPTED,
                run_id=row.run_id,
            )
        except Exception:
            log.exception("recording the interruption of run %s failed", row.run_id)

    async def aclose(self) -> None:
        """Stop the runs in progress (they end ``interrupted``)."""
        tasks = [live.task for live in self._live.values() if live.task is not None]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    # ---- reading ----------------------------------------------------------------------

    async def get(self, run_id: str, identity: Identity) -> RunRecord:
        """A run the caller may see (its own; a sysadmin sees all)."""
        sql = f"{_SELECT_RUNS} WHERE run_id = %s"
        rows = await self.kernel.db.read_driver(lambda conn: conn.rows(sql, (run_id,)))
        row = RunRecord(*rows[0]) if rows else None
        if row is None or (row.user_id != identity.user_id and not identity.is_sysadmin):
            raise RunNotFound(run_id)
        return row

    async def list(self, identity: Identity, *, limit: int = 50) -> list[RunRecord]:
        """The caller's runs, newest first."""
        sql = f"{_SELECT_RUNS} WHERE user_id = %s ORDER BY started_at DESC LIMIT %s"
        params = (identity.user_id, limit)
        rows = await self.kernel.db.read_driver(lambda conn: conn.rows(sql, params))
        return [RunRecord(*row) for row in rows]

    async def events(
        self, run_id: str, after: int, *, keepalive: float
    ) -> AsyncIterator[dict[str, Any] | None]:
        """The run's events with ``seq > after``, live until it ends. Yields ``None`` when
        nothing happened for ``keepalive`` seconds (the SSE ping)."""
        live = self._live.get(run_id)
        if live is not None:
            async for item in self._live_events(live, after, keepalive):
                yield item
            return
        async for item in self._stored_events(run_id, after, keepalive):
            yield item

    async def _live_events(
        self, live: _LiveRun, after: int, keepalive: float
    ) -> AsyncIterator[dict[str, Any] | None]:
        sent = after
        while True:
            async with live.changed:
                if len(live.events) <= sent and not live.done:
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(live.changed.wait(), keepalive)
                batch, done = live.events[sent:], live.done
            if not batch and not done:
                yield None
            for event in batch:
                yield event
            sent += len(batch)
            if done and sent >= len(live.events):
                return

    async def _stored_events(
        self, run_id: str, after: int, keepalive: float
    ) -> AsyncIterator[dict[str, Any] | None]:
        """Replay from the database; follows a run another process holds by polling."""
        idle = 0.0
        while True:
            async with self.kernel.db.session() as s:
                # status first: a run that ended committed its last events with its status
                status = await s.scalar(
                    select(HostRunRow.status).where(HostRunRow.run_id == run_id)
                )
                rows = list(
                    (
                        await s.execute(
                            select(HostRunEventRow.payload)
                            .where(HostRunEventRow.run_id == run_id, HostRunEventRow.seq > after)
                            .order_by(HostRunEventRow.seq)
                        )
                    ).scalars()
                )
            for payload in rows:
                yield payload
                after = payload["seq"]
            if status != RUNNING and not rows:
                return
            if rows:
                idle = 0.0
                continue
            await asyncio.sleep(self.poll_interval)
            idle += self.poll_interval
            if idle >= keepalive:
                idle = 0.0
                yield None


def agent_prompt(prompt: str, files: list[Any]) -> str:
    """What the agent reads: the prompt and, when files are attached, their names and ids
    (its file tools read them by id)."""
    if not files:
        return prompt
    lines = [f"- {f.name} (file id {f.id}, {f.size} bytes, {f.mime_type})" for f in files]
    return f"{prompt}\n\nAttached files (read them with the file tools, by file id):\n" + "\n".join(
        lines
    )
