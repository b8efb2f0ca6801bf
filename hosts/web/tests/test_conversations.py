"""Conversations over the API: a run without one starts one titled from the prompt, a run
with one continues it (the model sees the earlier prompts and answers), prompts and answers
(or the error) survive a reload, files attach to a prompt, and another user's conversation
or file is a 404 that changes nothing. Citations: test_citations.py."""

from __future__ import annotations

import json
from typing import Any

import pytest
from cryptography.fernet import Fernet

from nyla import ProviderBadRequestError, RunContext, Tool, Toolbox, hookimpl
from nyla.sdk import WireModel

from .conftest import wait_run
from .memfs import MemoryConnector, MemoryPlugin
from .test_runs import parse_sse, start

pytestmark = pytest.mark.db


@pytest.fixture
def provider(scripted, replies):
    from .memfs import hash_embed

    def script(request, index):
        reply = replies[index] if index < len(replies) else f"answer {index}"
        if isinstance(reply, Exception):
            raise reply
        return reply

    return scripted(script, embed_fn=hash_embed)


class _LinkedConnector(MemoryConnector):
    """The memory drive, with the web address a vendor gives each item (none while
    ``suffix`` is empty, as a local folder's items have none)."""

    suffix = "web"

    def _item(self, path: str) -> Any:
        url = f"https://drive.test{path}?{self.suffix}" if self.suffix else None
        return super()._item(path).model_copy(update={"url": url})


@pytest.fixture
def memory_plugin() -> MemoryPlugin:
    plugin = MemoryPlugin()
    plugin.connector = _LinkedConnector()
    return plugin


@pytest.fixture
def kernel(db, make_kernel, provider, memory_plugin, tmp_path):
    return make_kernel(
        provider,
        memory_plugin,
        db=db,
        settings={
            "knowledge": {"embedding_model": "scripted:model"},
            "data_dir": tmp_path,
            "secret_key": Fernet.generate_key(),
        },
    )


async def finished(state, client, headers, prompt, **body) -> dict:
    run = await start(client, headers, prompt, **body)
    await wait_run(state, run["runId"])
    return run


def user_texts(request) -> list[str]:
    return [m.text for m in request.messages if m.role.value in ("user", "assistant")]


async def test_a_run_starts_a_conversation_titled_from_its_prompt(state, client, token_for):
    alice = await token_for("alice")
    prompt = "  Plan the offsite for the finance team in the mountains next spring, please\nDetails"
    run = await finished(state, client, alice, prompt)
    listed = (await client.get("/api/conversations", headers=alice)).json()["conversations"]
    assert [c["id"] for c in listed] == [run["conversationId"]]
    title = listed[0]["title"]
    assert title.startswith("Plan the offsite for the finance team") and len(title) <= 60
    assert "\n" not in title and listed[0]["messageCount"] == 2
    shown = (await client.get(f"/api/conversations/{run['conversationId']}", headers=alice)).json()
    assert [(m["role"], m["content"]) for m in shown["messages"]] == [
        ("user", prompt),
        ("assistant", "answer 0"),
    ]
    assert {m["runId"] for m in shown["messages"]} == {run["runId"]}
    assert shown["runs"] == [{"runId": run["runId"], "status": "completed"}]
    trace = (await client.get(f"/api/runs/{run['runId']}", headers=alice)).json()["trace"]
    assert trace["context"]["workflowId"] == run["conversationId"]  # round memory's key


async def test_continuing_gives_the_model_the_history(state, client, token_for, provider, replies):
    replies.extend(["Zurich has 430,000 people.", "Something else.", "About 17% of them."])
    alice = await token_for("alice")
    first = await finished(state, client, alice, "How many people live in Zurich?")
    other = await finished(state, client, alice, "An unrelated question")
    second = await finished(
        state,
        client,
        alice,
        "And how many of them are students?",
        conversationId=first["conversationId"],
    )
    assert second["conversationId"] == first["conversationId"]
    seen = user_texts(provider.requests[-1])
    assert seen == [
        "How many people live in Zurich?",
        "Zurich has 430,000 people.",
        "And how many of them are students?",
    ]
    # the unrelated conversation's prompt reached no other conversation's model call
    assert all("unrelated" not in t for t in seen)
    listed = (await client.get("/api/conversations", headers=alice)).json()["conversations"]
    assert [c["id"] for c in listed] == [first["conversationId"], other["conversationId"]]
    shown = (
        await client.get(f"/api/conversations/{first['conversationId']}", headers=alice)
    ).json()
    assert [m["content"] for m in shown["messages"]][-2:] == [
        "And how many of them are students?",
        "About 17% of them.",
    ]
    assert [r["runId"] for r in shown["runs"]] == [first["runId"], second["runId"]]


async def test_a_failed_run_keeps_the_prompt_and_shows_the_error(state, client, token_for, replies):
    replies.append(ProviderBadRequestError("the provider refused the request"))
    alice = await token_for("alice")
    run = await finished(state, client, alice, "Summarise my week")
    shown = (await client.get(f"/api/conversations/{run['conversationId']}", headers=alice)).json()
    user, answer = shown["messages"]
    assert user["content"] == "Summarise my week" and user["status"] == "prompt"
    assert answer["role"] == "assistant" and answer["status"] == "error"
    assert "the provider refused the request" in answer["content"]
    assert shown["runs"] == [{"runId": run["runId"], "status": "error"}]


async def test_another_users_conversation_is_not_found(state, client, token_for, provider):
    alice, bob = await token_for("alice"), await token_for("bob")
    run = await finished(state, client, alice, "secret plans")
    url = f"/api/conversations/{run['conversationId']}"
    assert (await client.get(url, headers=bob)).status_code == 404
    assert (await client.patch(url, json={"title": "mine"}, headers=bob)).status_code == 404
    assert (await client.delete(url, headers=bob)).status_code == 404
    calls = len(provider.requests)
    body = {"prompt": "continue", "conversationId": run["conversationId"]}
    response = await client.post("/api/runs", json=body, headers=bob)
    assert response.status_code == 404 and "no conversation" in response.json()["detail"]
    assert len(provider.requests) == calls  # no run started
    assert (await client.get("/api/conversations", headers=bob)).json()["conversations"] == []
    shown = (await client.get(url, headers=alice)).json()
    assert shown["title"] == "secret plans" and len(shown["messages"]) == 2


async def test_create_rename_and_delete_keep_the_files(state, client, token_for):
    alice = await token_for("alice")
    created = await client.post("/api/conversations", json={"title": "Budget 2027"}, headers=alice)
    assert created.status_code == 201
    conversation = created.json()
    assert conversation["title"] == "Budget 2027" and conversation["messageCount"] == 0
    upload = await client.post(
        "/api/files", files={"file": ("plan.txt", b"the plan", "text/plain")}, headers=alice
    )
    file_id = upload.json()["id"]
    await finished(
        state, client, alice, "Read the plan", conversationId=conversation["id"], fileIds=[file_id]
    )
    knowledge = state.kernel.knowledge
    memory_context = RunContext(user_id="alice", mandate_id="m1", workflow_id=conversation["id"])
    await knowledge.memory.remember("budget", "CHF 40k", context=memory_context)
    assert await knowledge.memory.workflow_entities(memory_context)
    url = f"/api/conversations/{conversation['id']}"
    blank = await client.patch(url, json={"title": "   "}, headers=alice)
    assert blank.status_code == 400
    renamed = await client.patch(url, json={"title": "Budget  2027 (final)"}, headers=alice)
    assert renamed.json()["title"] == "Budget 2027 (final)"
    assert (await client.get(url, headers=alice)).json()["title"] == "Budget 2027 (final)"
    assert (await client.delete(url, headers=alice)).json() == {"deleted": conversation["id"]}
    assert (await client.get(url, headers=alice)).status_code == 404
    assert (await client.get("/api/conversations", headers=alice)).json()["conversations"] == []
    assert await knowledge.memory.workflow_entities(memory_context) == []  # its memory went with it
    content = await client.get(f"/api/files/{file_id}/content", headers=alice)
    assert content.content == b"the plan"


async def test_attached_files_are_named_to_the_agent_and_stored(
    state, client, token_for, provider, replies
):
    alice, bob = await token_for("alice"), await token_for("bob")
    upload = await client.post(
        "/api/files",
        files={"file": ("minutes.md", b"# Minutes\nWe agreed.", "text/markdown")},
        headers=alice,
    )
    item = upload.json()
    # the agent reads the attached file with its file tool, by the id the prompt names
    replies.extend([[("readFile", {"fileId": item["id"]})], "We agreed."])
    run = await finished(state, client, alice, "What did we agree?", fileIds=[item["id"]])
    task = user_texts(provider.requests[0])[-1]
    assert task.startswith("What did we agree?") and "minutes.md" in task and item["id"] in task
    tool_results = [m.text for m in provider.requests[1].messages if m.role.value == "tool"]
    assert len(tool_results) == 1 and "We agreed." in tool_results[0]
    shown = (await client.get(f"/api/conversations/{run['conversationId']}", headers=alice)).json()
    assert shown["messages"][0]["files"] == [{"id": item["id"], "name": "minutes.md"}]
    assert shown["messages"][0]["content"] == "What did we agree?"  # what the person wrote
    assert shown["files"] == [
        {"id": item["id"], "name": "minutes.md", "size": item["size"], "mimeType": "text/markdown"}
    ]
    # the next run still knows which file was attached, by id
    await finished(state, client, alice, "And who?", conversationId=run["conversationId"])
    assert any(item["id"] in t for t in user_texts(provider.requests[-1])[:-1])
    # bob may not attach alice's file: 404, and nothing is started or stored for him
    calls = len(provider.requests)
    refused = await client.post(
        "/api/runs", json={"prompt": "steal", "fileIds": [item["id"]]}, headers=bob
    )
    assert refused.status_code == 404 and item["id"] in refused.json()["detail"]
    assert len(provider.requests) == calls
    assert (await client.get("/api/conversations", headers=bob)).json()["conversations"] == []


class _NoArgs(WireModel):
    pass


async def _ping(args: _NoArgs, ctx) -> str:
    return "pong"


class MemfsToolboxPlugin:
    """A toolbox that needs a memfs connection (as email needs msft)."""

    @hookimpl
    def nyla_toolboxes(self) -> list[Toolbox]:
        tool = Tool.from_model("memfsPing", "Ping the memory drive.", _NoArgs, _ping)
        return [Toolbox(id="memfsTools", tools=[tool], requires_connection="memfs")]


@pytest.fixture
def toolbox_kernel(db, make_kernel, provider, memory_plugin, tmp_path):
    return make_kernel(
        provider,
        memory_plugin,
        MemfsToolboxPlugin(),
        db=db,
        settings={"data_dir": tmp_path, "secret_key": Fernet.generate_key()},
    )


async def test_host_runs_get_the_toolboxes_of_the_callers_connections(
    toolbox_kernel, host_settings
):
    import httpx

    from nyla_host.app import add_page, bare_app, build_state, mount, shutdown, startup

    state = build_state(toolbox_kernel, settings=host_settings)
    await startup(state)
    app = bare_app()
    mount(app, state)
    add_page(app)
    try:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://host.test"
        ) as client:
            token, _ = await state.tokens.create("alice", mandate_id="m1")
            alice = {"Authorization": f"Bearer {token}"}
            token, _ = await state.tokens.create("bob", mandate_id="m1")
            bob = {"Authorization": f"Bearer {token}"}
            await toolbox_kernel.connections.add("memfs", user_id="alice", label="drive")

            async def started(headers) -> list[str]:
                run = await finished(state, client, headers, "hello")
                body = (await client.get(run["eventsUrl"], headers=headers)).text
                first = json.loads(next(m for m in parse_sse(body) if "id" in m)["data"])
                return list(first["data"]["toolboxes"])

            assert "memfsTools" in await started(alice)
            assert "memfsTools" not in await started(bob)
    finally:
        await shutdown(state)


async def test_a_run_the_server_stopped_or_lost_shows_its_error(state, client, token_for, provider):
    import asyncio
    from datetime import UTC, datetime

    from nyla_host.runs import RunManager
    from nyla_host.tables import HostRunRow

    alice = await token_for("alice")
    gate = asyncio.Event()

    async def blocked(request):
        await gate.wait()

    provider.chat = blocked
    run = await start(client, alice, "a long question")
    await asyncio.sleep(0.05)
    await state.runs.aclose()  # the server stops mid-run
    shown = (await client.get(f"/api/conversations/{run['conversationId']}", headers=alice)).json()
    assert [(m["status"], m["content"]) for m in shown["messages"]] == [
        ("prompt", "a long question"),
        ("error", "the server stopped during the run"),
    ]
    # a server that died without stopping: the next boot writes the error
    workflows = state.kernel.files.workflows
    context = RunContext(user_id="alice", mandate_id="m1")
    conversation = await workflows.create_conversation(context, prompt="crash")
    workflow = await workflows.load(conversation.id, context)
    await workflows.add_turn(workflow, role="user", status="prompt", text="crash", run_id="dead2")
    async with state.kernel.db.session() as s:
        s.add(
            HostRunRow(
                run_id="dead2",
                user_id="alice",
                mandate_id="m1",
                status="running",
                prompt="crash",
                started_at=datetime.now(UTC),
            )
        )
    assert await RunManager(state.kernel).recover_interrupted() == 1
    shown = (await client.get(f"/api/conversations/{conversation.id}", headers=alice)).json()
    assert [m["status"] for m in shown["messages"]] == ["prompt", "error"]
    assert "interrupted" in shown["messages"][1]["content"]
    assert shown["runs"] == [{"runId": "dead2", "status": "interrupted"}]


async def test_a_continued_conversation_brings_back_its_round_memory(
    state, client, token_for, provider, replies
):
    # the first run looks something up with a tool; its round goes to the round memory of
    # the conversation, and the next run's knowledge context quotes it
    replies.extend([[("listFiles", {})], "Nothing stored yet.", "Still nothing."])
    alice = await token_for("alice")
    first = await finished(state, client, alice, "Which files do I have about trains?")
    other = await finished(state, client, alice, "A separate question about trains")
    second = await finished(
        state, client, alice, "And files about trains now?", conversationId=first["conversationId"]
    )
    assert second["conversationId"] == first["conversationId"]
    blocks = [m.text for m in provider.requests[-1].messages if m.role.value == "system"]
    assert any("Earlier in this workflow" in b and "listFiles" in b for b in blocks)
    # the other conversation's run saw none of it
    separate = provider.requests[2]  # (the first run asked twice: tool call, answer)
    assert all("Earlier in this workflow" not in m.text for m in separate.messages)
    assert other["conversationId"] != first["conversationId"]
