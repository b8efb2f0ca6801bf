"""Agent runs detached from the HTTP connection, over the kernel's durable runs
(``kernel.runs``, :mod:`nyla.agent.durable`).

A run is recorded with everything it needs, then driven in this process (the default) or by
a ``nyla worker`` (``NYLA_JOBS=procrastinate``). Its events are numbered (1, 2, ..., the SSE
id) and written to ``host_run_events`` before any stream sends them. A stream of a run this
process drives reads the committed events from memory; any other stream (a run on a worker
or on another host, or one that ended) reads them from the database, woken by PostgreSQL
``NOTIFY``, so every host serves every run and ``Last-Event-ID`` resumes on any of them. A
subscriber's disconnect never touches the run; ``cancel`` is its own call and works from
any host. A run whose holder died is marked ``interrupted`` by the sweep every host and
worker runs (at boot and every few seconds), never run again.

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
from datetime import datetime
from typing import TYPE_CHECKING, Any, NamedTuple

from nyla import AgentConfig, RunContext
from nyla.host import (
    ChatWorkflow,
    RunNotFound,
    RunNotResumable,  # noqa: F401  (the routes answer it)
    UnfinishedWrites,  # noqa: F401  (the routes answer it)
    resumption,
)
from nyla_host.identity import Identity
from nyla_host.links import PURPOSE, LinkSigner, with_urls
from nyla_host.start_gate import StartGate
from nyla_host.tables import HostRunRow

if TYPE_CHECKING:
    from nyla import Kernel

log = logging.getLogger(__name__)

RUNNING, INTERRUPTED = "running", "interrupted"


@dataclass
class _LiveRun:
    """A run this process drives: its committed events, for this process's streams."""

    run_id: str
    #: whose run it is (a stream of it is checked against this, without a read)
    user_id: str = ""
    events: list[dict[str, Any]] = field(default_factory=list)
    done: bool = False
    #: set (and replaced) whenever events commit or the run ends
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task[Any] | None = None

    def committed(self, batch: list[dict[str, Any]]) -> None:
        self.events.extend(batch)
        self._wake()

    def ended(self, _task: Any = None) -> None:
        self.done = True
        self._wake()

    def _wake(self) -> None:
        wake, self.wake = self.wake, asyncio.Event()
        wake.set()


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


class RunManager:
    """Starts, streams, cancels and recovers the host's agent runs over the kernel's durable
    runs (``kernel.runs``). ``poll_interval`` is accepted for older callers and unused: a
    stream of a run another process holds is woken by ``NOTIFY``."""

    def __init__(self, kernel: Kernel, *, poll_interval: float | None = None) -> None:
        self.kernel = kernel
        self._live: dict[str, _LiveRun] = {}
        #: run starts in arrival order, a few at a time (a full queue is a 503)
        self.gate = StartGate()
        #: signs the download links of the files a run's answer cites
        self.links = LinkSigner(lambda: kernel.derived_key(PURPOSE))

    # ---- lifecycle --------------------------------------------------------------------

    async def context(
        self,
        identity: Identity,
        *,
        timezone: str,
        workflow_id: str | None = None,
        allowed_models: list[str] | None = None,
        models_read: bool = False,
    ) -> RunContext:
        """The context a run of ``identity`` gets from their account (``kernel.agent.
        user_context``: service denials, raising ``ServiceAccessDenied`` without
        ``service.agent``; connections; the model allow-list, unless ``models_read``: the
        caller read it already, ``allowed_models``, ``None`` for every model)."""
        context = RunContext(
            user_id=identity.user_id,
            mandate_id=identity.mandate_id,
            role=identity.role.value,
            timezone=timezone,
            workflow_id=workflow_id,
            allowed_models=allowed_models,
        )
        return await self.kernel.agent.user_context(context, models_read=models_read)

    async def start(
        self,
        prompt: str,
        identity: Identity,
        *,
        config: AgentConfig,
        timezone: str,
        conversation_id: str,
        files: list[Any] | None = None,
        agent_text: str | None = None,
        continued: list[Any] | None = None,
        context: RunContext | None = None,
        new_conversation: bool = False,
    ) -> HostRunRow:
        """Record a run, store its prompt in the conversation and start it (here, or on a
        worker with ``NYLA_JOBS=procrastinate``); returns its row. ``files`` (the
        caller's, checked) are attached to the prompt and named in what the agent reads.
        ``context``: the caller's, from :meth:`context` (read here without);
        ``new_conversation``: the conversation was just created empty (not read again)."""
        runs = self.kernel.runs
        if context is None:
            context = await self.context(identity, timezone=timezone)
        context = context.model_copy(update={"workflow_id": conversation_id})
        workflows = self.kernel.files.workflows
        if new_conversation:
            workflow = ChatWorkflow(
                id=conversation_id,
                user_id=context.user_id,
                mandate_id=context.mandate_id,
                feature_instance_id=context.feature_instance_id,
            )
        else:
            workflow = await workflows.load(conversation_id, context)
        run_id = uuid.uuid4().hex
        # the prompt first: a run recorded is a run that goes on (nothing may fail between)
        await workflows.add_turn(
            workflow, role="user", status="prompt", text=prompt, run_id=run_id, files=files
        )
        row = await runs.create(
            agent_text or agent_prompt(prompt, files or []),
            config,
            context,
            shown_prompt=prompt,
            run_id=run_id,
            continued=continued,
        )
        if runs.queued:
            await runs.launch(row)
            return row
        live = _LiveRun(run_id=row.run_id, user_id=row.user_id)
        self._live[row.run_id] = live
        live.task = await runs.launch(row, on_commit=live.committed)
        if live.task is not None:
            live.task.add_done_callback(live.ended)
            live.task.add_done_callback(lambda _t: self._live.pop(row.run_id, None))
        return row

    async def resume(self, run_id: str, identity: Identity, *, confirm_writes: bool) -> HostRunRow:
        """Run an ``interrupted`` run of the caller again, as a new run in its conversation
        (the agent sees the earlier prompt and the interruption there) with the same config,
        going on after the rounds it completed (their tools are not called again);
        the caller's account applies as it is now. Refused (:class:`UnfinishedWrites`) while
        it left writes unfinished and the caller did not confirm them."""
        again = await resumption(  # the checks `nyla runs resume` makes too
            self.kernel.runs,
            run_id,
            user_id=identity.user_id,
            any_user=identity.is_sysadmin,
            confirm_writes=confirm_writes,
        )
        return await self.start(
            again.shown_prompt,
            identity,
            config=again.config,
            timezone=again.context.timezone,
            conversation_id=again.conversation_id,
            agent_text=again.agent_text,
            continued=again.continued,
        )

    async def cancel(self, run_id: str, identity: Identity) -> bool:
        """Cancel a queued or running run of the caller (a sysadmin may cancel any), held by
        any process; False when it already ended."""
        await self.get(run_id, identity)
        return await self.kernel.runs.cancel(run_id)

    async def recover_interrupted(self) -> int:
        """At boot, and every few seconds after: runs whose holder process is gone are
        marked ``interrupted`` (:mod:`nyla.agent.run_sweep`). Returns how many at boot."""
        runs = self.kernel.runs
        swept = await runs.sweep()
        runs.sweeper.start()
        return swept

    async def aclose(self) -> None:
        """Stop the runs in progress here (they end ``interrupted``) and the sweeps."""
        tasks = [live.task for live in self._live.values() if live.task is not None]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        if "runs" in self.kernel.__dict__:
            await self.kernel.runs.aclose()

    # ---- reading ----------------------------------------------------------------------

    async def get(self, run_id: str, identity: Identity) -> RunRecord:
        """A run the caller may see (its own; a sysadmin sees all)."""
        row = await self._record(run_id)
        if row is None or (row.user_id != identity.user_id and not identity.is_sysadmin):
            raise RunNotFound(run_id)
        return row

    async def check_visible(self, run_id: str, identity: Identity) -> None:
        """Raise :class:`RunNotFound` unless the caller may see the run: one this process
        drives is checked from memory (a stream starts without a statement), else as
        :meth:`get`."""
        live = self._live.get(run_id)
        if live is None:
            await self.get(run_id, identity)
        elif live.user_id != identity.user_id and not identity.is_sysadmin:
            raise RunNotFound(run_id)

    async def _record(self, run_id: str) -> RunRecord | None:
        sql = f"{_SELECT_RUNS} WHERE run_id = %s"
        rows = await self.kernel.db.read_driver(lambda conn: conn.rows(sql, (run_id,)))
        return RunRecord(*rows[0]) if rows else None

    async def list(self, identity: Identity, *, limit: int = 50) -> list[RunRecord]:
        """The caller's runs, newest first."""
        sql = f"{_SELECT_RUNS} WHERE user_id = %s ORDER BY started_at DESC LIMIT %s"
        params = (identity.user_id, limit)
        rows = await self.kernel.db.read_driver(lambda conn: conn.rows(sql, params))
        return [RunRecord(*row) for row in rows]

    async def events(
        self, run_id: str, after: int, *, keepalive: float
    ) -> AsyncIterator[dict[str, Any] | None]:
        """The run's events with ``seq > after``, live until it ends; from this process's
        memory for a run it drives (events there are committed ones), else from the
        database. Yields ``None`` when nothing happened for ``keepalive`` seconds (the SSE
        ping). The citations of a FINAL event get their links here, for the run's owner."""
        live = self._live.get(run_id)
        if live is not None:
            source = self._live_events(live, after, keepalive)
        else:
            source = self.kernel.runs.follow(run_id, after, keepalive=keepalive)
        async for item in source:
            if item is not None and item.get("type") == "FINAL":
                item = await self._linked(run_id, item)
            yield item

    async def _live_events(
        self, live: _LiveRun, after: int, keepalive: float
    ) -> AsyncIterator[dict[str, Any] | None]:
        sent = after
        while True:
            wake, done = live.wake, live.done
            batch = live.events[sent:]
            for event in batch:
                yield event
            sent += len(batch)
            if done and sent >= len(live.events):
                return
            if not batch:
                try:
                    await asyncio.wait_for(wake.wait(), keepalive)
                except TimeoutError:
                    yield None

    async def _linked(self, run_id: str, event: dict[str, Any]) -> dict[str, Any]:
        """A FINAL event whose citations carry links that open each source for the run's
        owner (signed now: a replay gets fresh ones)."""
        citations = (event.get("data") or {}).get("citations")
        if not citations:
            return event
        row = await self._record(run_id)
        if row is None:
            return event
        owner = RunContext(user_id=row.user_id, mandate_id=row.mandate_id)
        linked = await with_urls(self.kernel, self.links, citations, owner)
        return {**event, "data": {**event["data"], "citations": linked}}


def agent_prompt(prompt: str, files: list[Any]) -> str:
    """What the agent reads: the prompt and, when files are attached, their names and ids
    (its file tools read them by id)."""
    if not files:
        return prompt
    lines = [f"- {f.name} (file id {f.id}, {f.size} bytes, {f.mime_type})" for f in files]
    return f"{prompt}\n\nAttached files (read them with the file tools, by file id):\n" + "\n".join(
        lines
    )
