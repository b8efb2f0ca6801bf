"""The issue's end-to-end case in the kernel: a scripted agent builds a three-node workflow
through the workflow toolbox, validates it and runs it; the documents its nodes produce
appear in the agent's conversation numbered with the round and task of the runWorkflow call
and the node's place as the action (the action bridge); a run outside an agent run binds
nothing."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from runs_probe import RunsProbe

from nyla.models.agent import AgentConfig, EventType, RunContext
from nyla.models.ai import ChatRequest, Role

pytestmark = pytest.mark.db

ALICE = RunContext(user_id="alice", mandate_id="m1", workflow_id="conv-1")


def build_and_run(ids: list[str]):
    """The agent's script: build (round 1), validate (round 2), read and run (round 3) the
    workflow ``ids[0]``."""

    def script(request: ChatRequest, i: int) -> Any:
        wf_id = ids[0]
        done = [m for m in request.messages if m.role is Role.TOOL]
        step = {"workflowId": wf_id, "method": "runs", "action": "step"}
        if not done:
            return [
                ("addNode", {**step, "parameters": {"label": "a", "save": True}}),
                ("addNode", {**step, "parameters": {"label": "b", "save": True}}),
                ("addNode", {**step, "parameters": {"label": "c"}}),
                ("connectNodes", {"workflowId": wf_id, "fromNode": "n1", "toNode": "n2",
                                  "toParameter": "text"}),
                ("connectNodes", {"workflowId": wf_id, "fromNode": "n2", "toNode": "n3",
                                  "toParameter": "text"}),
            ]  # fmt: skip
        if len(done) == 5:
            return [("validateWorkflow", {"workflowId": wf_id})]
        if len(done) == 6:
            return [
                ("readWorkflowGraph", {"workflowId": wf_id}),
                ("runWorkflow", {"workflowId": wf_id}),
            ]
        return "Ran the workflow."

    return script


async def test_the_runs_documents_appear_in_the_conversation_numbered(
    scripted, make_kernel, db, run_events, only
):
    ids: list[str] = []
    kernel = make_kernel(RunsProbe(), scripted(build_and_run(ids)), db=db)
    wf = await kernel.workflows.create("Three", ALICE)
    ids.append(wf.id)
    events = await run_events(
        kernel.agent.run("Build and run it.", AgentConfig(initial_toolboxes=["workflow"]), ALICE)
    )
    assert events[-1].data["status"] == "completed", events[-1].data
    results = only(events, EventType.TOOL_RESULT)
    assert all(r.data["success"] for r in results), [r.data.get("error") for r in results]
    assert "is valid" in results[5].text
    ran = results[-1]
    assert ran.data["toolName"] == "runWorkflow" and ran.round == 3
    run = (await kernel.workflow_runs.list_for(ALICE))[0]
    assert (run.status, run.conversation_id) == ("done", "conv-1")
    assert (run.round_number, run.task_number) == (3, 2)
    # a node hands on its own text; its documents go separately, in its output's data
    assert run.nodes[0].output.text == "a()" and run.nodes[1].inputs["text"] == "a()"
    assert run.nodes[2].inputs["text"] == "b(a())"
    chat = await kernel.files.workflows.load("conv-1", ALICE)
    documents = [d for m in chat.messages for d in m.documents]
    assert [(d.file_name, d.round_number, d.task_number, d.action_number) for d in documents] == [
        ("a.txt", 3, 2, 1),
        ("b.txt", 3, 2, 2),
    ]
    texts = [await kernel.files.read_text(d.file_id, ALICE) for d in documents]
    assert texts == ["a()", "b(a())"]
    for node, document in zip(run.nodes, documents, strict=False):
        (listed,) = node.output.data["documents"]
        assert (listed["fileId"], listed["documentRef"]) == (
            document.file_id,
            f"docItem:{document.id}",
        )
        assert listed["actionNumber"] == document.action_number


async def test_a_run_outside_a_conversation_binds_nothing(make_kernel, db):
    kernel = make_kernel(RunsProbe(), db=db)
    bare = RunContext(user_id="alice", mandate_id="m1")
    wf = await kernel.workflows.create("One", bare)
    await kernel.workflows.add_node(wf.id, "runs", "step", {"label": "a", "save": True}, bare)
    run = await asyncio.wait_for(
        kernel.workflow_runs.wait((await kernel.workflow_runs.start(wf.id, bare)).id, bare), 120
    )
    assert run.status == "done" and run.conversation_id is None
    listed = run.nodes[0].output.data["documents"]
    assert listed[0]["documentRef"] is None and listed[0]["fileId"]
