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
