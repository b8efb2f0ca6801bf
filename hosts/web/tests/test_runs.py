"""Agent runs over the API: detached from the connection, streamed as SSE with sequence ids,
resumable, cancellable, replayed from the database, interrupted by a dead server; the
request's timezone reaches the prompt's date block."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime

import pytest
from sqlalchemy import select

from nyla import ChatResponse, ToolCall
from nyla_host.runs import RunManager
from nyla_host.tables import HostRunEventRow, HostRunRow

from .conftest import wait_run

pytestmark = pytest.mark.db


def parse_sse(text: str) -> list[dict]:
    """SSE messages as dicts (``id``, ``event``, ``data``); comments as ``{"comment": ...}``."""
    messages = []
    for block in text.split("\n\n"):
        if not block.strip():
            continue
        message: dict = {}
        for line in block.split("\n"):
            if line.startswith(":"):
                message["comment"] = line[1:].strip()
            else:
                key, _, value = line.partition(": ")
                message[key] = value
        messages.append(message)
    return messages


async def start(client, headers, prompt="hello", **body) -> dict:
    response = await client.post("/api/runs", json={"prompt": prompt, **body}, headers=headers)
    assert response.status_code == 202, response.text
    return response.json()


async def test_a_run_streams_and_replays_after_it_ended(state, client, token_for, replies):
    replies.extend([[("listFiles", {})], "The folder is empty."])
    headers = await token_for("alice")
    run = await start(client, headers, "what files do I have?")
    await wait_run(state, run["runId"])  # nobody listened: the run went on by itself
    response = await client.get(run["eventsUrl"], headers=headers)
    assert response.headers["content-type"].startswith("text/event-stream")
    assert response.headers["x-accel-buffering"] == "no"
    messages = parse_sse(response.text)
    events = [m for m in messages if "id" in m]
    assert [int(m["id"]) for m in events] == list(range(1, len(events) + 1))
    kinds = [m["event"] for m in events]
    assert "TOOL_CALL" in kinds and "TOOL_RESULT" in kinds and "CHUNK" in kinds
    assert kinds[-2:] == ["FINAL", "AGENT_SUMMARY"]
    final = json.loads(events[-2]["data"])
    assert final["text"] == "The folder is empty." and final["runId"] == run["runId"]
    assert messages[-1]["event"] == "end"
    assert json.loads(messages[-1]["data"])["status"] == "completed"
    shown = (await client.get(f"/api/runs/{run['runId']}", headers=headers)).json()
    assert shown["status"] == "completed" and shown["finalText"] == "The folder is empty."
    assert shown["trace"]["toolCalls"][0]["toolName"] == "listFiles"
    assert shown["costChf"] > 0


async def test_resume_after_last_event_id(state, client, token_for):
    headers = await token_for("alice")
    run = await start(client, headers)
    await wait_run(state, run["runId"])
    full = [m for m in parse_sse((await client.get(run["eventsUrl"], headers=headers)).text)]
    ids = [int(m["id"]) for m in full if "id" in m]
    resumed = await client.get(run["eventsUrl"], headers={**headers, "Last-Event-ID": str(ids[2])})
    again = [int(m["id"]) for m in parse_sse(resumed.text) if "id" in m]
    assert again == ids[3:]
    by_query = await client.get(f"{run['eventsUrl']}?lastEventId={ids[-2]}", headers=headers)
    assert [int(m["id"]) for m in parse_sse(by_query.text) if "id" in m] == ids[-1:]


async def test_only_the_owner_sees_a_run(state, client, token_for):
    alice, bob = await token_for("alice"), await token_for("bob")
    run = await start(client, alice)
    await wait_run(state, run["runId"])
    assert (await client.get(f"/api/runs/{run['runId']}", headers=bob)).status_code == 404
    assert (await client.get(run["eventsUrl"], headers=bob)).status_code == 404
    assert [r["runId"] for r in (await client.get("/api/runs", headers=bob)).json()["runs"]] == []
    listed = (await client.get("/api/runs", headers=alice)).json()["runs"]
    assert [r["runId"] for r in listed] == [run["runId"]]


async def test_live_events_ping_while_waiting_and_cancel_is_its_own_call(
    state, client, token_for, provider
):
    gate = asyncio.Event()
    original = provider.chat

    async def slow_chat(request):
        await gate.wait()
        return await original(request)

    provider.chat = slow_chat
    headers = await token_for("alice")
    run = await start(client, headers)
    seen = []
    stream = state.runs.events(run["runId"], 0, keepalive=0.01)
    async for item in stream:
        if item is None and not seen:
            continue  # (a ping before the first event is committed)
        seen.append(item)
        if item is None:
            break  # the model is blocked: the stream can only ping
    assert seen[0]["type"] == "STATUS" and seen[-1] is None
    await stream.aclose()  # a subscriber leaving does not stop the run
    assert (await client.get(f"/api/runs/{run['runId']}", headers=headers)).json()[
        "status"
    ] == "running"
    cancel = await client.post(f"/api/runs/{run['runId']}/cancel", headers=headers)
    assert cancel.json()["cancelled"] is True
    await wait_run(state, run["runId"])
    shown = (await client.get(f"/api/runs/{run['runId']}", headers=headers)).json()
    assert shown["status"] == "cancelled"
    again = await client.post(f"/api/runs/{run['runId']}/cancel", headers=headers)
    assert again.json()["cancelled"] is False


async def test_sse_frames_pings():
    from nyla_host.sse import _frames

    async def events():
        yield None
        yield {"seq": 1, "type": "CHUNK", "text": "a"}

    async def end():
        return {"status": "completed"}

    frames = [f async for f in _frames(events(), end)]
    assert frames[1] == ": ping\n\n"
    assert frames[2].startswith("id: 1\nevent: CHUNK\ndata: ")
    assert frames[-1] == 'event: end\ndata: {"status": "completed"}\n\n'


async def test_a_run_left_running_by_a_dead_server_is_interrupted_at_boot(state, token_for):
    async with state.kernel.db.session() as s:
        s.add(
            HostRunRow(
                run_id="dead1",
                user_id="alice",
                status="running",
                prompt="p",
                started_at=datetime.now(UTC),
            )
        )
        await s.flush()
        s.add(
            HostRunEventRow(
                run_id="dead1",
                seq=1,
                type="STATUS",
                payload={"seq": 1, "type": "STATUS", "runId": "dead1"},
            )
        )
    fresh = RunManager(state.kernel)  # the next boot
    assert await fresh.recover_interrupted() == 1
    async with state.kernel.db.session() as s:
        row = await s.get(HostRunRow, "dead1")
        events = list(
            (
                await s.execute(
                    select(HostRunEventRow.payload)
                    .where(HostRunEventRow.run_id == "dead1")
                    .order_by(HostRunEventRow.seq)
                )
            ).scalars()
        )
    assert row.status == "interrupted" and row.finished_at is not None
    assert [e["type"] for e in events] == ["STATUS", "ERROR"] and events[1]["seq"] == 2
    replay = [e async for e in fresh.events("dead1", 0, keepalive=1)]
    assert [e["seq"] for e in replay] == [1, 2]
    assert await fresh.recover_interrupted() == 0


@pytest.mark.parametrize(
    ("header", "zone"), [("Asia/Tokyo", "Asia/Tokyo"), ("Not/AZone", "UTC"), (None, "UTC")]
)
async def test_request_timezone_reaches_the_date_block(
    state, client, token_for, provider, header, zone
):
    headers = await token_for("alice")
    if header:
        headers["X-User-Timezone"] = header
    me = (await client.get("/api/me", headers=headers)).json()
    assert me["timezone"] == zone
    run = await start(client, headers)
    await wait_run(state, run["runId"])
    system = provider.requests[-1].messages[0].text
    assert f"({zone}, UTC" in system
    assert run["timezone"] == zone


async def test_bad_run_requests_are_refused(client, token_for):
    headers = await token_for("alice")
    assert (await client.post("/api/runs", json={"prompt": ""}, headers=headers)).status_code == 422
    bad = await client.post("/api/runs", json={"prompt": "x", "maxRounds": 0}, headers=headers)
    assert bad.status_code == 422
    assert (await client.get("/api/runs/nope/events", headers=headers)).status_code == 404


async def test_tool_call_events_carry_the_tool(state, client, token_for, replies):
    replies.extend(
        [ChatResponse(tool_calls=[ToolCall(id="c1", name="listFiles", arguments="{}")]), "done"]
    )
    headers = await token_for("alice")
    run = await start(client, headers)
    await wait_run(state, run["runId"])
    events = [
        json.loads(m["data"])
        for m in parse_sse((await client.get(run["eventsUrl"], headers=headers)).text)
        if "id" in m
    ]
    call = next(e for e in events if e["type"] == "TOOL_CALL")
    result = next(e for e in events if e["type"] == "TOOL_RESULT")
    assert call["data"]["toolName"] == "listFiles" and result["data"]["success"] is True


async def test_the_demo_model_streams_word_by_word_and_calls_a_tool(db, make_kernel, run_events):
    from nyla import AgentConfig, EventType
    from nyla_host.demo_model import MODEL_ID, DemoPlugin

    kernel = make_kernel(DemoPlugin(delay_s=0), db=db)
    events = await run_events(
        kernel.agent.run("which files do I have?", AgentConfig(model=MODEL_ID))
    )
    kinds = [e.type for e in events]
    assert EventType.TOOL_CALL in kinds and kinds.count(EventType.CHUNK) > 5
    final = next(e for e in events if e.type is EventType.FINAL)
    assert final.text.startswith("You asked: which files do I have?")
    assert final.data["status"] == "completed"


async def test_another_process_follows_a_run_from_the_database(state, client, token_for, provider):
    gate = asyncio.Event()
    original = provider.chat

    async def slow_chat(request):
        await gate.wait()
        return await original(request)

    provider.chat = slow_chat
    headers = await token_for("alice")
    run = await start(client, headers)
    other = RunManager(state.kernel, poll_interval=0.01)  # a second worker: no live state

    async def follow():
        return [e async for e in other.events(run["runId"], 0, keepalive=30) if e is not None]

    follower = asyncio.create_task(follow())
    gate.set()
    await wait_run(state, run["runId"])
    followed = await asyncio.wait_for(follower, 30)
    replayed = [e async for e in state.runs.events(run["runId"], 0, keepalive=30)]
    assert [e["seq"] for e in followed] == list(range(1, len(followed) + 1))
    assert followed == replayed and followed[-1]["type"] == "AGENT_SUMMARY"


async def test_an_interrupted_run_is_resumed_only_with_its_unfinished_writes_confirmed(
    state, client, token_for, provider
):
    import subprocess
    import sys

    from nyla.host import StoredRunEvent

    gate = asyncio.Event()
    original = provider.chat

    async def slow_chat(request):
        await gate.wait()
        return await original(request)

    provider.chat = slow_chat
    headers = await token_for("alice")
    run = await start(client, headers, prompt="book the room")
    async for item in state.runs.events(run["runId"], 0, keepalive=30):
        if item and item["type"] == "STATUS" and item["data"].get("status") == "round":
            break  # the run waits for its model
    too_early = await client.post(f"/api/runs/{run['runId']}/resume", headers=headers)
    assert too_early.status_code == 409 and "running" in too_early.json()["detail"]
    # its process dies while a writing call was under way: a dead holder, a call without result
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    async with state.kernel.db.session() as s:
        row = await s.get(HostRunRow, run["runId"])
        row.worker = f"{row.worker.rpartition(':')[0]}:{gone}"
        payload = {
            "seq": row.last_seq + 1,
            "type": "TOOL_CALL",
            "round": 1,
            "data": {"callId": "c9", "toolName": "bookRoom", "readOnly": False},
        }
        s.add(
            StoredRunEvent(
                run_id=run["runId"], seq=row.last_seq + 1, type="TOOL_CALL", payload=payload
            )
        )
    assert await state.kernel.runs.sweep() == 1
    gate.set()
    await wait_run(state, run["runId"])  # the task finds its run taken and stops
    shown = (await client.get(f"/api/runs/{run['runId']}", headers=headers)).json()
    assert shown["status"] == "interrupted" and "bookRoom (call c9)" in shown["error"]
    unconfirmed = await client.post(f"/api/runs/{run['runId']}/resume", headers=headers)
    assert unconfirmed.status_code == 409
    assert unconfirmed.json()["detail"]["unfinishedWrites"][0]["toolName"] == "bookRoom"
    other = await token_for("bob")
    stranger = await client.post(f"/api/runs/{run['runId']}/resume", headers=other)
    assert stranger.status_code == 404
    resumed = await client.post(
        f"/api/runs/{run['runId']}/resume", json={"confirmWrites": True}, headers=headers
    )
    assert resumed.status_code == 202, resumed.text
    again = resumed.json()
    assert again["resumedFrom"] == run["runId"] and again["runId"] != run["runId"]
    await wait_run(state, again["runId"])
    body = (await client.get(again["eventsUrl"], headers=headers)).text
    assert "AGENT_SUMMARY" in body
    conversation = await state.kernel.files.workflows.workflow_of_run(again["runId"])
    assert conversation == run["conversationId"]
