"""``runWorkflow`` and ``readWorkflowRun`` in an agent run: a scripted model builds a
three-node workflow (extract -> neutralize -> ai.process), validates it, runs it and reads
the run; the run has the agent run's identity, budget and model; a workflow that cannot run
and another user's run are repairable errors."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from nyla.models.agent import AgentConfig, EventType, RunContext
from nyla.models.ai import ChatRequest, Role

pytestmark = pytest.mark.db

ALICE = RunContext(user_id="alice", mandate_id="m1")
NODE_PROMPT = "Carry out the user's instruction"


def _results(request: ChatRequest) -> list[Any]:
    return [m for m in request.messages if m.role is Role.TOOL]


async def test_an_agent_builds_validates_runs_and_reads_a_workflow(
    scripted, make_kernel, db, run_events, only
):
    def script(request: ChatRequest, i: int) -> Any:
        if NODE_PROMPT in request.messages[0].text:  # the ai.process node's own model call
            return "Digest: " + request.messages[-1].text.splitlines()[0]
        results = _results(request)
        if not results:
            return [
                ("addNode", {"workflowId": wf.id, "method": "context", "action": "extractContent",
                             "parameters": {"fileId": source.id}}),
                ("addNode", {"workflowId": wf.id, "method": "context", "action": "neutralizeData"}),
                ("addNode", {"workflowId": wf.id, "method": "ai", "action": "process",
                             "nodeId": "answer"}),
                ("connectNodes", {"workflowId": wf.id, "fromNode": "n1", "toNode": "n2",
                                  "toParameter": "text"}),
                ("connectNodes", {"workflowId": wf.id, "fromNode": "n2", "toNode": "answer",
                                  "toParameter": "prompt"}),
                ("validateWorkflow", {"workflowId": wf.id}),
            ]  # fmt: skip
        if len(results) == 6:
            return [("runWorkflow", {"workflowId": wf.id, "maxAttempts": 1})]
        if len(results) == 7:
            return [("readWorkflowRun", {"runId": started[0]})]
        return "Ran it."

    started: list[str] = []
    kernel = make_kernel(scripted(script), db=db)
    source = await kernel.files.save("notes.md", b"# Plan\n\nCall the bank.\n", ALICE)
    wf = await kernel.workflows.create("Digest", ALICE)
    original = kernel.workflow_runs.start

    async def start(*args: Any, **kwargs: Any) -> Any:
        run = await original(*args, **kwargs)
        started.append(run.id)
        return run

    kernel.workflow_runs.start = start
    events = await run_events(
        kernel.agent.run(
            "Build and run the digest.",
            AgentConfig(initial_toolboxes=["workflow"], max_cost_chf=2.0, model="scripted:model"),
            ALICE,
        )
    )
    assert events[-1].data["status"] == "completed", events[-1].data
    results = only(events, EventType.TOOL_RESULT)
    assert [r.data["toolName"] for r in results][-2:] == ["runWorkflow", "readWorkflowRun"]
    assert all(r.data["success"] for r in results), [r.data.get("error") for r in results]
    ran, read = results[-2], results[-1]
    assert ran.text.startswith(f"run {started[0]} of workflow {wf.id}: done")
    assert "- answer ai.process: done. Digest: Plan" in ran.text
    assert read.text == ran.text
    run = await kernel.workflow_runs.get(started[0], ALICE)
    assert [(n.node_id, n.status) for n in run.nodes] == [
        ("n1", "done"),
        ("n2", "done"),
        ("answer", "done"),
    ]
    assert run.user_id == "alice" and run.mandate_id == "m1"
    assert run.options.max_attempts == 1 and run.options.model == "scripted:model"
    spent_before = 2.0 - run.options.max_cost_chf  # the agent's rounds before runWorkflow
    assert 0 < spent_before < 2.0 and run.cost_chf > 0  # the node's model call was priced
    summary = only(events, EventType.AGENT_SUMMARY)[0].data
    assert summary["costChf"] >= spent_before + run.cost_chf, "the run's cost was not charged"
    assert run.nodes[2].inputs["prompt"] == run.nodes[1].output.text


async def test_a_workflow_that_cannot_run_and_anothers_run_are_repairable(
    scripted, make_kernel, db, run_events, only
):
    bob = RunContext(user_id="bob", mandate_id="m1")

    def script(request: ChatRequest, i: int) -> Any:
        if not _results(request):
            return [
                ("runWorkflow", {"workflowId": broken.id}),
                ("readWorkflowRun", {"runId": theirs.id}),
                ("runWorkflow", {"workflowId": empty_ok.id, "wait": False}),
            ]
        return "Done."

    kernel = make_kernel(scripted(script), db=db)
    broken = await kernel.workflows.create("Broken", ALICE)
    await kernel.workflows.add_node(broken.id, "ai", "process", {}, ALICE)
    empty_ok = await kernel.workflows.create("Tiny", ALICE)
    await kernel.workflows.add_node(empty_ok.id, "context", "neutralizeData", {"text": "x"}, ALICE)
    other = await kernel.workflows.create("Bob's", bob)
    await kernel.workflows.add_node(other.id, "context", "neutralizeData", {"text": "y"}, bob)
    theirs = await asyncio.wait_for(
        kernel.workflow_runs.wait((await kernel.workflow_runs.start(other.id, bob)).id, bob), 120
    )
    events = await run_events(
        kernel.agent.run("Run them.", AgentConfig(initial_toolboxes=["workflow"]), ALICE)
    )
    refused, hidden, queued = (r.data for r in only(events, EventType.TOOL_RESULT))
    assert refused["errorDetails"]["code"] == "INVALID_VALUE"
    assert "cannot run" in refused["error"] and "'prompt' is neither set" in refused["error"]
    assert hidden["errorDetails"]["code"] == "NOT_FOUND"
    assert queued["success"] is True
    (mine,) = await kernel.workflow_runs.list_for(ALICE)
    assert mine.workflow_id == empty_ok.id
    assert (await asyncio.wait_for(kernel.workflow_runs.wait(mine.id, ALICE), 120)).status == "done"
