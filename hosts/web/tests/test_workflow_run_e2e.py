"""The issue's end-to-end case through the host: ``POST /api/runs`` with the workflow
toolbox, a scripted model builds a three-node workflow, validates and runs it; the run's
documents are bound to the run's conversation numbered with the round and task of the
runWorkflow call and each node's place, and the workflow-run routes show the run."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import Field

from nyla.sdk import ToolContext, hookimpl
from nyla.sdk.actions import Action, ActionParams, ActionResult, Method

from .conftest import wait_run
from .memfs import hash_embed

pytestmark = pytest.mark.db


class WriteParams(ActionParams):
    """Parameters of ``notes.write``."""

    label: str = Field(description="The note's name.")
    text: str | None = Field(None, description="Text from an earlier node.")
    save: bool = Field(False, description="Save the note as a file.")


class Notes:
    """``notes.write``: a note, saved as a file (a result document) when asked."""

    async def write(self, params: WriteParams, ctx: ToolContext) -> ActionResult:
        text = f"{params.label}({(params.text or '').splitlines()[0] if params.text else ''})"
        documents = []
        if params.save:
            saved = await ctx.services.files.save(
                f"{params.label}.txt", text.encode(), ctx.run, mime_type="text/plain"
            )
            documents.append(saved.id)
        return ActionResult(text=text, data={"label": params.label}, documents=documents)

    @hookimpl
    def nyla_methods(self) -> list[Method]:
        write = Action(name="write", description="Write a note.", params=WriteParams,
                       handler=self.write, writes=True)  # fmt: skip
        return [Method(name="notes", description="Notes.", actions=[write])]


@pytest.fixture
def workflow_ids() -> list[str]:
    return []


@pytest.fixture
def provider(scripted, workflow_ids):
    def script(request: Any, index: int) -> Any:
        done = [m for m in request.messages if m.role == "tool"]
        wf = workflow_ids[0] if workflow_ids else ""
        node = {"workflowId": wf, "method": "notes", "action": "write"}
        if not done:
            return [
                ("addNode", {**node, "parameters": {"label": "a", "save": True}}),
                ("addNode", {**node, "parameters": {"label": "b", "save": True}}),
                ("addNode", {**node, "parameters": {"label": "c"}}),
                ("connectNodes", {"workflowId": wf, "fromNode": "n1", "toNode": "n2",
                                  "toParameter": "text"}),
                ("connectNodes", {"workflowId": wf, "fromNode": "n2", "toNode": "n3",
                                  "toParameter": "text"}),
            ]  # fmt: skip
        if len(done) == 5:
            return [("validateWorkflow", {"workflowId": wf})]
        if len(done) == 6:
            return [
                ("readWorkflowGraph", {"workflowId": wf}),
                ("runWorkflow", {"workflowId": wf}),
            ]
        return "The workflow ran."

    return scripted(script, embed_fn=hash_embed)


@pytest.fixture
def kernel(db, make_kernel, provider, memory_plugin, tmp_path):
    settings = {"knowledge": {"embedding_model": "scripted:model"}, "data_dir": tmp_path}
    return make_kernel(provider, memory_plugin, Notes(), db=db, settings=settings)


async def test_a_host_run_builds_runs_and_binds_the_documents(
    state, client, token_for, workflow_ids
):
    alice = await token_for("alice")
    created = await client.post("/api/automation2/workflows", json={"name": "T"}, headers=alice)
    workflow_ids.append(created.json()["id"])
    started = await client.post(
        "/api/runs", json={"prompt": "Build and run it.", "toolboxes": ["workflow"]}, headers=alice
    )
    assert started.status_code == 202, started.text
    run = started.json()
    await wait_run(state, run["runId"])
    shown = (await client.get(f"/api/runs/{run['runId']}", headers=alice)).json()
    assert shown["status"] == "completed", shown
    calls = shown["trace"]["toolCalls"]
    assert [c["toolName"] for c in calls][-2:] == ["readWorkflowGraph", "runWorkflow"]
    assert all(c["success"] for c in calls), calls
    base = f"/api/automation2/workflows/{workflow_ids[0]}/runs"
    (wf_run,) = (await client.get(base, headers=alice)).json()["runs"]
    assert wf_run["status"] == "done" and wf_run["conversationId"] == run["conversationId"]
    assert (wf_run["roundNumber"], wf_run["taskNumber"]) == (3, 2)
    conversation = await client.get(f"/api/conversations/{run['conversationId']}", headers=alice)
    assert conversation.status_code == 200, conversation.text
    documents = conversation.json()["documents"]
    numbered = [
        (d["name"], d["roundNumber"], d["taskNumber"], d["actionNumber"], d["runId"])
        for d in documents
    ]
    assert numbered == [("a.txt", 3, 2, 1, wf_run["id"]), ("b.txt", 3, 2, 2, wf_run["id"])]
    for d in documents:
        assert d["documentRef"] == f"docItem:{d['documentId']}" and d["mimeType"] == "text/plain"
        assert d["label"].startswith("action:notes.write:")
        opened = await client.get(f"/api/files/{d['fileId']}/content", headers=alice)
        assert opened.status_code == 200 and opened.text.startswith(d["name"][0] + "(")
    nodes = (await client.get(f"{base}/{wf_run['id']}", headers=alice)).json()["nodes"]
    refs = [d["documentRef"] for n in nodes for d in n["output"]["data"].get("documents", [])]
    assert refs == [d["documentRef"] for d in documents]
    bob = await token_for("bob")
    hidden = await client.get(f"/api/conversations/{run['conversationId']}", headers=bob)
    assert hidden.status_code == 404


async def test_a_run_started_from_the_editor_binds_to_the_named_conversation(client, token_for):
    alice, bob = await token_for("alice"), await token_for("bob")
    conv = (await client.post("/api/conversations", json={"title": "Notes"}, headers=alice)).json()
    wf = (await client.post("/api/automation2/workflows", json={"name": "E"}, headers=alice)).json()
    node = {"method": "notes", "action": "write"}
    graph = {
        "name": "E",
        "nodes": [
            {**node, "id": "x", "parameters": {"label": "x", "save": True}},
            {**node, "id": "y", "parameters": {"label": "y", "save": True}},
        ],
        "connections": [{"fromNode": "x", "toNode": "y", "toParameter": "text"}],
    }
    base = f"/api/automation2/workflows/{wf['id']}/runs"
    assert (await client.put(f"/api/automation2/workflows/{wf['id']}", json=graph,
                             headers=alice)).status_code == 200  # fmt: skip
    bobs = await client.post(
        f"/api/automation2/workflows/{wf['id']}/runs", json={"conversationId": conv["id"]},
        headers=bob,
    )  # fmt: skip
    assert bobs.status_code == 404  # not his workflow
    bob_wf = (
        await client.post("/api/automation2/workflows", json={"name": "B"}, headers=bob)
    ).json()
    await client.put(f"/api/automation2/workflows/{bob_wf['id']}", json=graph, headers=bob)
    refused = await client.post(
        f"/api/automation2/workflows/{bob_wf['id']}/runs", json={"conversationId": conv["id"]},
        headers=bob,
    )  # fmt: skip
    assert refused.status_code == 403 and "may change" in refused.json()["detail"]
    bob_runs = await client.get(f"/api/automation2/workflows/{bob_wf['id']}/runs", headers=bob)
    assert bob_runs.json()["runs"] == []  # nothing stored for the refused start
    started = await client.post(
        base, json={"conversationId": conv["id"], "maxAttempts": 1}, headers=alice
    )
    assert started.status_code == 202, started.text
    run = started.json()
    assert run["conversationId"] == conv["id"] and run["options"]["maxAttempts"] == 1
    await client.get(run["eventsUrl"], headers=alice)  # streams until the run ended
    shown = (await client.get(f"{base}/{run['id']}", headers=alice)).json()
    assert shown["status"] == "done", shown
    documents = (await client.get(f"/api/conversations/{conv['id']}", headers=alice)).json()[
        "documents"
    ]
    assert [
        (d["name"], d["roundNumber"], d["taskNumber"], d["actionNumber"], d["runId"])
        for d in documents
    ] == [("x.txt", 1, 1, 1, run["id"]), ("y.txt", 1, 1, 2, run["id"])]
    assert shown["nodes"][1]["inputs"]["text"] == "x()"
