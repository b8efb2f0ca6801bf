"""The ``workflow`` toolbox in an agent run: a scripted model builds a three-node workflow,
has a bad connection refused, validates it; another user's workflow is not found."""

from __future__ import annotations

from typing import Any

import pytest

from nyla.models.agent import AgentConfig, EventType, RunContext
from nyla.models.ai import ChatRequest

pytestmark = pytest.mark.db

ALICE = RunContext(user_id="alice", mandate_id="m1")


async def test_an_agent_builds_and_validates_a_three_node_workflow(
    scripted, make_kernel, db, run_events, only
):
    def script(request: ChatRequest, i: int) -> Any:
        if i == 0:
            return [
                ("addNode", {"workflowId": wf.id, "method": "context", "action": "extractContent",
                             "parameters": {"fileId": source.id}}),
                ("addNode", {"workflowId": wf.id, "method": "context", "action": "neutralizeData"}),
                ("addNode", {"workflowId": wf.id, "method": "ai", "action": "process",
                             "nodeId": "answer"}),
                ("validateWorkflow", {"workflowId": wf.id}),
            ]  # fmt: skip
        if i == 1:
            assert "'prompt' is neither set nor connected" in request.messages[-1].text
            return [
                ("connectNodes", {"workflowId": wf.id, "fromNode": "answer", "toNode": "n1",
                                  "toParameter": "maxObjects"}),
                ("connectNodes", {"workflowId": wf.id, "fromNode": "n1", "toNode": "n2",
                                  "toParameter": "text"}),
                ("connectNodes", {"workflowId": wf.id, "fromNode": "n2", "toNode": "answer",
                                  "toParameter": "prompt"}),
                ("validateWorkflow", {"workflowId": wf.id}),
            ]  # fmt: skip
        return "Built it."

    kernel = make_kernel(scripted(script), db=db)
    source = await kernel.files.save("notes.md", b"# Plan\n\nCall Ana.\n", ALICE)
    wf = await kernel.workflows.create("Digest", ALICE)

    events = await run_events(
        kernel.agent.run(
            "Build the digest workflow.", AgentConfig(initial_toolboxes=["workflow"]), ALICE
        )
    )
    assert events[-1].data["status"] == "completed", events[-1].data
    results = only(events, EventType.TOOL_RESULT)
    assert [r.data["success"] for r in results] == [True] * 4 + [False] + [True] * 3, [
        r.data.get("error") for r in results
    ]
    assert "'maxObjects' takes no node output" in results[4].data["error"]
    assert "is valid" in results[-1].text
    graph = await kernel.workflows.get(wf.id, ALICE)
    assert [(n.id, n.method, n.action) for n in graph.nodes] == [
        ("n1", "context", "extractContent"),
        ("n2", "context", "neutralizeData"),
        ("answer", "ai", "process"),
    ]
    assert [(c.from_node, c.to_node, c.to_parameter) for c in graph.connections] == [
        ("n1", "n2", "text"),
        ("n2", "answer", "prompt"),
    ]


async def test_another_users_workflow_is_refused_before_the_tool_runs(
    scripted, make_kernel, db, run_events, only
):
    def script(request: ChatRequest, i: int) -> Any:
        if i == 0:
            return [("addNode", {"workflowId": wf.id, "method": "ai", "action": "process"})]
        return "Could not."

    kernel = make_kernel(scripted(script), db=db)
    wf = await kernel.workflows.create("Private", RunContext(user_id="bob", mandate_id="m1"))

    events = await run_events(
        kernel.agent.run("Edit it.", AgentConfig(initial_toolboxes=["workflow"]), ALICE)
    )
    (result,) = only(events, EventType.TOOL_RESULT)
    assert result.data["success"] is False
    assert result.data["errorDetails"]["code"] == "NOT_FOUND"
    assert (
        await kernel.workflows.get(wf.id, RunContext(user_id="bob", mandate_id="m1"))
    ).nodes == []
