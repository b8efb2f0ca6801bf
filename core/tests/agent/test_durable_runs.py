"""Durable runs (``kernel.runs``): a run driven by another process (a worker) runs with the
same identity, budget, model restrictions and neutralisation as in the process that started
it; events are in the database before anyone streams them and a follower elsewhere is woken
by NOTIFY; a cancel from another process stops the holder's run; a run is never driven
twice; the runs of a dead holder end ``interrupted``, naming writes started without a
result."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import subprocess
import sys
from datetime import UTC, datetime, timedelta

import pytest
from pydantic import BaseModel
from sqlalchemy import select

from nyla.agent import run_bus
from nyla.agent.durable import DurableRuns
from nyla.agent.journal import RunJournal, RunLost
from nyla.agent.run_tables import StoredRun, StoredRunEvent
from nyla.ai.scripted import ScriptedPlugin, ScriptedProvider
from nyla.hookspecs import hookimpl
from nyla.models.agent import AgentConfig, AgentEvent, EventType, RunContext
from nyla.models.ai import Role, ToolCall
from nyla.models.tools import Tool, Toolbox

pytestmark = pytest.mark.db


class NoArgs(BaseModel):
    pass


async def whoami(args: NoArgs, ctx) -> str:
    run = ctx.run
    return json.dumps(
        {
            "userId": run.user_id,
            "mandateId": run.mandate_id,
            "timezone": run.timezone,
            "allowedModels": run.allowed_models,
            "allowedProviders": run.allowed_providers,
            "requireNeutralization": run.require_neutralization,
            "remainingBudgetChf": ctx.remaining_budget_chf,
            "remainingRounds": ctx.remaining_rounds,
            "model": ctx.model,
            "neutralizing": ctx.neutralization is not None,
        },
        sort_keys=True,
    )


class WhoamiTools:
    @hookimpl
    def nyla_toolboxes(self):
        tool = Tool.from_model("whoami", "Who runs this.", NoArgs, whoami, read_only=True)
        return [Toolbox(id="who", tools=[tool], default_active=True)]


def script(request, index):
    if not any(m.role is Role.TOOL for m in request.messages):
        return [ToolCall(id="c1", name="whoami", arguments="{}")]
    return "done"


def kernel_with(make_kernel, db, provider):
    return make_kernel(ScriptedPlugin(provider), WhoamiTools(), db=db)


async def events_of(db, run_id):
    async with db.session() as s:
        rows = await s.execute(
            select(StoredRunEvent.payload)
            .where(StoredRunEvent.run_id == run_id)
            .order_by(StoredRunEvent.seq)
        )
        return list(rows.scalars())


async def test_a_run_on_a_worker_runs_as_it_would_in_the_process_that_started_it(db, make_kernel):
    here = kernel_with(make_kernel, db, ScriptedProvider(script))
    starter = kernel_with(make_kernel, db, ScriptedProvider(script))
    worker = kernel_with(make_kernel, db, ScriptedProvider(script))
    queued: list[tuple[str, str]] = []

    async def defer(run_id: str, user_id: str) -> None:
        queued.append((run_id, user_id))

    queue = DurableRuns(db, starter.agent, starter.files.workflows, defer=defer)
    context = RunContext(
        user_id="u1",
        mandate_id="m1",
        timezone="Europe/Zurich",
        allowed_providers=["scripted"],
        allowed_models=["scripted:model"],
        require_neutralization=True,
    )
    config = AgentConfig(max_rounds=7, max_cost_chf=2.5, model="scripted:model")
    local = await here.runs.create("who am I?", config, context)
    assert local.status == "running"
    assert await here.runs.drive(local.run_id) == "completed"
    remote = await queue.create("who am I?", config, context)
    assert remote.status == "queued" and remote.worker is None
    assert await queue.launch(remote) is None and queued == [(remote.run_id, "u1")]
    assert await worker.runs.drive(remote.run_id) == "completed"
    assert await worker.runs.drive(remote.run_id) is None, "a run is driven once"

    def seen(payloads):
        return [json.loads(p["text"]) for p in payloads if p["type"] == "TOOL_RESULT"]

    in_process = seen(await events_of(db, local.run_id))
    on_worker = seen(await events_of(db, remote.run_id))
    assert in_process == on_worker and len(on_worker) == 1
    who = on_worker[0]
    assert (who["userId"], who["mandateId"], who["timezone"]) == ("u1", "m1", "Europe/Zurich")
    assert who["allowedModels"] == ["scripted:model"] and who["allowedProviders"] == ["scripted"]
    assert who["requireNeutralization"] is True and who["neutralizing"] is True
    assert 0 < who["remainingBudgetChf"] < 2.5 and who["remainingRounds"] == 6
    for kernel in (here, starter, worker):
        await kernel.aclose()
    await queue.aclose()


def gated_script(gate: asyncio.Event):
    provider = ScriptedProvider(lambda request, index: "the answer")
    original = provider.chat

    async def chat(request):
        await gate.wait()
        return await original(request)

    provider.chat = chat
    return provider


async def test_events_are_stored_before_they_stream_and_notify_wakes_a_follower(
    db, make_kernel, monkeypatch
):
    monkeypatch.setattr(run_bus, "FALLBACK_POLL_S", 600.0)  # only NOTIFY can wake it in time
    gate = asyncio.Event()
    holder = kernel_with(make_kernel, db, gated_script(gate))
    other = kernel_with(make_kernel, db, ScriptedProvider(script))
    assert await other.runs.bus.wait_connected()
    unstored: list[int] = []
    checks: list[asyncio.Task] = []

    def committed(batch):
        async def check():
            stored = {p["seq"] for p in await events_of(db, row.run_id)}
            unstored.extend(e["seq"] for e in batch if e["seq"] not in stored)

        checks.append(asyncio.create_task(check()))

    row = await holder.runs.create("hello", AgentConfig(model="scripted:model"), RunContext())
    driving = asyncio.create_task(holder.runs.drive(row.run_id, on_commit=committed))
    followed: list[dict] = []

    async def follow():
        async for item in other.runs.follow(row.run_id, 0, keepalive=600):
            followed.append(item)
            if item["type"] == "STATUS" and item["data"].get("status") == "round":
                gate.set()  # the model answers once the follower has seen the first round

    await asyncio.wait_for(follow(), 30)
    assert await driving == "completed"
    await asyncio.gather(*checks)
    assert unstored == [], "an event reached a subscriber before it was stored"
    stored = await events_of(db, row.run_id)
    assert followed == stored and [e["seq"] for e in stored] == list(range(1, len(stored) + 1))
    assert stored[-1]["type"] == "AGENT_SUMMARY"
    resumed = [e async for e in other.runs.follow(row.run_id, 2, keepalive=1)]
    assert resumed == stored[2:]
    await holder.aclose()
    await other.aclose()


async def test_a_cancel_from_another_process_stops_the_run(db, make_kernel):
    gate = asyncio.Event()
    holder = kernel_with(make_kernel, db, gated_script(gate))
    other = kernel_with(make_kernel, db, ScriptedProvider(script))
    assert await holder.runs.bus.wait_connected()
    row = await holder.runs.create("hello", AgentConfig(model="scripted:model"), RunContext())
    driving = asyncio.create_task(holder.runs.drive(row.run_id))
    async for item in other.runs.follow(row.run_id, 0, keepalive=600):
        if item["type"] == "STATUS" and item["data"].get("status") == "round":
            break  # the run waits for its model
    assert await other.runs.cancel(row.run_id) is True
    assert await asyncio.wait_for(driving, 30) == "cancelled"
    assert await other.runs.cancel(row.run_id) is False
    async with db.session() as s:
        assert (await s.get(StoredRun, row.run_id)).status == "cancelled"
    await holder.aclose()
    await other.aclose()


def dead_worker() -> str:
    proc = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    return f"{socket.gethostname()}:{proc.stdout.strip()}"


def call_event(seq: int, call_id: str, tool: str, read_only: bool) -> StoredRunEvent:
    payload = {
        "seq": seq,
        "type": "TOOL_CALL",
        "round": 1,
        "data": {"callId": call_id, "toolName": tool, "readOnly": read_only},
    }
    return StoredRunEvent(run_id="r1", seq=seq, type="TOOL_CALL", payload=payload)


async def test_a_dead_holders_run_is_interrupted_naming_the_writes_it_started(db, make_kernel):
    kernel = kernel_with(make_kernel, db, ScriptedProvider(script))
    now = datetime.now(UTC)
    async with db.session() as s:
        for run_id, worker, beat in [
            ("r1", dead_worker(), now),  # its process is gone
            ("r2", "elsewhere:1", now - timedelta(hours=1)),  # another machine, silent
            ("r3", kernel.runs.worker, now),  # alive: this process
        ]:
            s.add(
                StoredRun(
                    run_id=run_id,
                    user_id="u1",
                    status="running",
                    prompt="p",
                    worker=worker,
                    heartbeat_at=beat,
                    last_seq=3,
                )
            )
        await s.flush()
        s.add(StoredRunEvent(run_id="r1", seq=1, type="STATUS", payload={"seq": 1}))
        s.add(call_event(2, "c1", "note", read_only=False))
        s.add(call_event(3, "c2", "tick", read_only=True))
    assert await kernel.runs.sweep() == 2
    assert await kernel.runs.sweep() == 0
    async with db.session() as s:
        status = {r.run_id: r.status for r in (await s.execute(select(StoredRun))).scalars()}
    assert status == {"r1": "interrupted", "r2": "interrupted", "r3": "running"}
    last = (await events_of(db, "r1"))[-1]
    assert last["seq"] == 4 and last["type"] == "ERROR"
    assert last["data"]["unfinishedWrites"] == [{"callId": "c1", "toolName": "note", "round": 1}]
    assert "note (call c1)" in last["text"]
    await kernel.aclose()


async def test_a_journal_of_a_run_taken_away_writes_nothing(db):
    async with db.session() as s:
        s.add(
            StoredRun(
                run_id="t1",
                user_id="u1",
                status="running",
                prompt="p",
                worker="someone:1",
                last_seq=0,
            )
        )
    journal = RunJournal(db, "t1", "me:2", "nyla_run_events_test")
    journal.add(AgentEvent(type=EventType.STATUS, text="started"))
    with pytest.raises(RunLost):
        await journal.flush()
    assert await events_of(db, "t1") == []


async def test_a_run_the_queue_refuses_ends_in_error_not_queued_forever(db, make_kernel):
    kernel = kernel_with(make_kernel, db, ScriptedProvider(script))

    async def refuse(run_id: str, user_id: str) -> None:
        raise ConnectionError("the queue is down")

    queue = DurableRuns(db, kernel.agent, kernel.files.workflows, defer=refuse)
    row = await queue.create("hello", AgentConfig(), RunContext())
    with pytest.raises(ConnectionError):
        await queue.launch(row)
    async with db.session() as s:
        stored = await s.get(StoredRun, row.run_id)
    assert stored.status == "error" and "the queue is down" in stored.error
    await kernel.aclose()
    await queue.aclose()


async def test_a_run_job_a_dead_queue_worker_held_is_delivered_again_only_if_unclaimed(
    db, make_kernel
):
    from sqlalchemy import text

    from nyla.agent.run_job import rescue_unclaimed

    kernel = make_kernel(
        ScriptedPlugin(ScriptedProvider(script)),
        WhoamiTools(),
        db=db,
        settings={"jobs": "procrastinate"},
    )
    await kernel.jobs._open()
    config = AgentConfig(model="scripted:model")
    unclaimed = await kernel.runs.create("one", config, RunContext())
    claimed = await kernel.runs.create("two", config, RunContext())
    for row in (unclaimed, claimed):
        await kernel.runs.launch(row)
    async with db.session() as s:  # the run's row is its record: no nyla job row besides
        assert await s.scalar(text("SELECT count(*) FROM jobs")) == 0
        assert await s.scalar(text("SELECT count(*) FROM procrastinate_jobs")) == 2
    async with db.session() as s:  # a worker took both jobs, claimed one run, and died
        worker = await s.scalar(
            text(
                "INSERT INTO procrastinate_workers (last_heartbeat) "
                "VALUES (now() - interval '1 hour') RETURNING id"
            )
        )
        await s.execute(
            text(
                "UPDATE procrastinate_jobs SET status = 'doing', worker_id = :w "
                "WHERE task_name = 'nyla.agent_run'"
            ),
            {"w": worker},
        )
        await s.execute(
            text("UPDATE host_runs SET status = 'running', worker = 'gone:1' WHERE run_id = :r"),
            {"r": claimed.run_id},
        )
    assert await rescue_unclaimed(kernel.jobs, db) == 1
    async with db.session() as s:
        jobs = dict(
            (
                await s.execute(
                    text("SELECT args->'args'->>'runId', status::text FROM procrastinate_jobs")
                )
            ).all()
        )
    assert jobs == {unclaimed.run_id: "todo", claimed.run_id: "failed"}
    assert await rescue_unclaimed(kernel.jobs, db) == 0
    assert await kernel.runs.drive(unclaimed.run_id) == "completed"  # the next delivery
    await kernel.aclose()


async def test_a_write_is_recorded_before_its_handler_runs_so_a_crash_there_is_reported(
    db, make_kernel, monkeypatch
):
    """The holder dies while a writing tool runs and before the TOOL_CALL event is stored
    (the journal is held): the interruption still names the call, and only the write."""
    entered, release = asyncio.Event(), asyncio.Event()

    async def note(args: NoArgs, ctx) -> str:
        entered.set()
        await release.wait()
        return "noted"

    class NoteTools:
        @hookimpl
        def nyla_toolboxes(self):
            tools = [
                Tool.from_model("whoami", "Who runs this.", NoArgs, whoami, read_only=True),
                Tool.from_model("note", "Write a note.", NoArgs, note, read_only=False),
            ]
            return [Toolbox(id="notes", tools=tools, default_active=True)]

    def two_calls(request, index):
        if not any(m.role is Role.TOOL for m in request.messages):
            return [
                ToolCall(id="c1", name="whoami", arguments="{}"),
                ToolCall(id="c2", name="note", arguments="{}"),
            ]
        return "done"

    original = RunJournal._commit

    async def held(self, batch, end):
        if any(e["type"] in ("TOOL_CALL", "TOOL_RESULT") for e in batch):
            await release.wait()  # the call's events are not stored before the "crash"
        await original(self, batch, end)

    monkeypatch.setattr(RunJournal, "_commit", held)
    holder = make_kernel(ScriptedPlugin(ScriptedProvider(two_calls)), NoteTools(), db=db)
    other = kernel_with(make_kernel, db, ScriptedProvider(script))
    row = await holder.runs.create("note it", AgentConfig(model="scripted:model"), RunContext())
    driving = asyncio.create_task(holder.runs.drive(row.run_id))
    await asyncio.wait_for(entered.wait(), 30)
    async with db.session() as s:  # the holder is killed here: its process is gone
        stored = await s.get(StoredRun, row.run_id)
        assert stored.started_writes == [{"callId": "c2", "toolName": "note", "round": 1}]
        stored.worker = dead_worker()
    assert await other.runs.sweep() == 1
    payloads = await events_of(db, row.run_id)
    assert not [p for p in payloads if p["type"] == "TOOL_CALL"], "the gap was not open"
    last = payloads[-1]
    assert last["type"] == "ERROR" and last["data"]["status"] == "interrupted"
    assert last["data"]["unfinishedWrites"] == [{"callId": "c2", "toolName": "note", "round": 1}]
    assert "note (call c2)" in last["text"]
    release.set()
    assert await asyncio.wait_for(driving, 30) is None, "the run was taken from its holder"
    await holder.aclose()
    await other.aclose()


@pytest.mark.parametrize("writer_failed_first", [False, True])
async def test_an_interrupted_run_resumed_goes_on_after_its_completed_rounds(
    db, make_kernel, monkeypatch, writer_failed_first
):
    """Round 1 (a read) completed, round 2's write was under way when the holder died: run
    again, the run starts with round 1's messages, calls the read no more and plays round 2
    again (the write the person confirmed); its rounds are counted on. ``writer_failed_first``:
    the holder's journal learnt it lost the run only after its loop ended (its last events
    were being written), before the run's end was written — the holder still reports it
    was not its run to end (as it did by chance on a loaded CI machine)."""
    if writer_failed_first:
        end, commit = DurableRuns._end, RunJournal._commit

        async def slow_commit(self, batch, finish):  # the loop ends before a write fails
            await asyncio.sleep(0.2)
            await commit(self, batch, finish)

        monkeypatch.setattr(RunJournal, "_commit", slow_commit)

        async def end_after_the_writer(self, run_id, spec, journal, outcome):
            with contextlib.suppress(RunLost):
                await journal.flush()
            await end(self, run_id, spec, journal, outcome)

        monkeypatch.setattr(DurableRuns, "_end", end_after_the_writer)
    calls: list[str] = []
    entered, release = asyncio.Event(), asyncio.Event()

    async def look(args: NoArgs, ctx) -> str:
        calls.append("look")
        return "the room is free"

    async def book(args: NoArgs, ctx) -> str:
        calls.append("book")
        if len(calls) == 2:  # the first time: the holder dies while it books
            entered.set()
            await release.wait()
        return "booked"

    class RoomTools:
        @hookimpl
        def nyla_toolboxes(self):
            tools = [
                Tool.from_model("look", "Is the room free?", NoArgs, look, read_only=True),
                Tool.from_model("book", "Book the room.", NoArgs, book, read_only=False),
            ]
            return [Toolbox(id="rooms", tools=tools, default_active=True)]

    requests = []

    def rooms(request, index):
        requests.append(request)
        answered = {m.tool_call_id for m in request.messages if m.role is Role.TOOL}
        if "r1" not in answered:
            return [ToolCall(id="r1", name="look", arguments="{}")]
        if "r2" not in answered:
            return [ToolCall(id="r2", name="book", arguments="{}")]
        return "booked it"

    def kernel():
        return make_kernel(ScriptedPlugin(ScriptedProvider(rooms)), RoomTools(), db=db)

    holder, other = kernel(), kernel()
    config = AgentConfig(model="scripted:model", max_rounds=5)
    row = await holder.runs.create("book the room", config, RunContext(user_id="u1"))
    driving = asyncio.create_task(holder.runs.drive(row.run_id))
    await asyncio.wait_for(entered.wait(), 30)

    async def round_one_stored() -> None:  # the journal writes round 1's result meanwhile
        while not any(p["type"] == "TOOL_RESULT" for p in await events_of(db, row.run_id)):
            await asyncio.sleep(0.02)

    await asyncio.wait_for(round_one_stored(), 30)
    async with db.session() as s:
        (await s.get(StoredRun, row.run_id)).worker = dead_worker()
    assert await other.runs.sweep() == 1
    release.set()
    assert await asyncio.wait_for(driving, 30) is None
    prompt, config_again, context, writes, rounds = await other.runs.interruption(row.run_id)
    assert [w["callId"] for w in writes] == ["r2"]
    assert [(m.role, m.tool_call_id) for m in rounds] == [(Role.ASSISTANT, None), (Role.TOOL, "r1")]
    assert rounds[0].tool_calls[0].name == "look" and rounds[1].text == "the room is free"
    requests.clear()
    again = await other.runs.create(prompt, config_again, context, continued=rounds)
    assert await other.runs.drive(again.run_id) == "completed"
    assert calls == ["look", "book", "book"], "the completed read ran once, the write again"
    first = requests[0].messages
    assert [m.tool_call_id for m in first if m.role is Role.TOOL] == ["r1"]
    payloads = await events_of(db, again.run_id)
    played = [
        p["round"] for p in payloads if p["type"] == "STATUS" and p["data"].get("status") == "round"
    ]
    assert played[0] == 2, "round 1 was the interrupted run's"
    summary = payloads[-1]
    assert summary["type"] == "AGENT_SUMMARY" and summary["data"]["rounds"] == 3
    await holder.aclose()
    await other.aclose()


async def test_a_run_its_own_process_stops_names_the_write_under_way(db, make_kernel):
    """A server stopping (its run's task cancelled) while a writing tool runs: the run ends
    interrupted naming the write, so running it again asks the person first."""
    entered = asyncio.Event()

    async def note(args: NoArgs, ctx) -> str:
        entered.set()
        await asyncio.Event().wait()  # until the process stops it
        return "noted"

    class NoteTools:
        @hookimpl
        def nyla_toolboxes(self):
            tool = Tool.from_model("note", "Write a note.", NoArgs, note, read_only=False)
            return [Toolbox(id="notes", tools=[tool], default_active=True)]

    def one_note(request, index):
        if not any(m.role is Role.TOOL for m in request.messages):
            return [ToolCall(id="n1", name="note", arguments="{}")]
        return "done"

    kernel = make_kernel(ScriptedPlugin(ScriptedProvider(one_note)), NoteTools(), db=db)
    row = await kernel.runs.create("note it", AgentConfig(model="scripted:model"), RunContext())
    driving = asyncio.create_task(kernel.runs.drive(row.run_id))
    await asyncio.wait_for(entered.wait(), 30)
    driving.cancel()  # the server stops
    assert await driving == "interrupted"
    async with db.session() as s:
        assert (await s.get(StoredRun, row.run_id)).status == "interrupted"
    last = (await events_of(db, row.run_id))[-1]
    assert last["type"] == "ERROR" and "note (call n1)" in last["text"]
    assert last["data"]["unfinishedWrites"] == [{"callId": "n1", "toolName": "note", "round": 1}]
    *_, writes, rounds = await kernel.runs.interruption(row.run_id)
    assert [w["callId"] for w in writes] == ["n1"] and rounds == []
    await kernel.aclose()
