"""The cross-workflow tools: listWorkflowHistory and readWorkflowMessages show the caller's
own workflows only, and a sub-agent never gets them."""

from __future__ import annotations

from typing import Any

import pytest

from nyla.agent.spec import RunSpec
from nyla.agent.tool_services import tool_services
from nyla.models.agent import AgentConfig, EventType, RunContext
from nyla.models.ai import ChatRequest, Role

pytestmark = pytest.mark.db

ANNA = RunContext(user_id="anna", mandate_id="m1", workflow_id="conv-now")
HISTORY = {"listWorkflowHistory", "readWorkflowMessages"}


async def conversation(kernel: Any, context: RunContext, workflow_id: str, *said: str) -> None:
    store = kernel.files.workflows
    await store.create_conversation(context, said[0], workflow_id=workflow_id)
    workflow = await store.load(workflow_id, context)
    for i, text in enumerate(said):
        role, status = ("user", "prompt") if i % 2 == 0 else ("assistant", "answer")
        await store.add_turn(workflow, role=role, status=status, text=text, run_id=f"r{i}")


@pytest.fixture
async def kernel_with_history(make_kernel, scripted, db):
    def make(script: Any) -> Any:
        return make_kernel(scripted(script), db=db)

    return make


async def seed(kernel: Any) -> None:
    await conversation(kernel, ANNA, "conv-vat", "What is the VAT rate?", "8.1 percent.")
    await conversation(kernel, ANNA, "conv-rent", "Draft the rent letter.", "Here it is.")
    other_mandate = RunContext(user_id="anna", mandate_id="m2")
    await conversation(kernel, other_mandate, "conv-m2", "A question in another mandate.")
    ben = RunContext(user_id="ben", mandate_id="m1")
    await conversation(kernel, ben, "conv-ben", "Ben's secret plan.", "Noted.")


async def test_the_top_level_agent_lists_and_reads_only_its_own_workflows(
    kernel_with_history, run_events, only
):
    def script(request: ChatRequest, i: int) -> Any:
        if i == 0:
            return [("listWorkflowHistory", {}), ("listWorkflowHistory", {"search": "vat"})]
        if i == 1:
            return [
                ("readWorkflowMessages", {"workflowId": "conv-vat"}),
                ("readWorkflowMessages", {"workflowId": "conv-ben"}),
                ("readWorkflowMessages", {"workflowId": "conv-m2"}),
            ]
        return "Done."

    kernel = kernel_with_history(script)
    await seed(kernel)
    events = await run_events(kernel.agent.run("Look back.", AgentConfig(), ANNA))
    assert events[-1].data["status"] == "completed", events[-1].data
    results = only(events, EventType.TOOL_RESULT)
    listed, searched, vat, bens, other_mandate = results
    assert listed.data["success"] and "conv-vat" in listed.text and "conv-rent" in listed.text
    assert "conv-ben" not in listed.text and "conv-m2" not in listed.text
    [now] = [line for line in listed.text.splitlines() if "conv-now" in line]
    assert "(this conversation)" in now  # the run's own conversation
    assert "conv-vat" in searched.text and "conv-rent" not in searched.text
    assert vat.data["success"] and "8.1 percent." in vat.text
    for refused in (bens, other_mandate):
        assert not refused.data["success"]
        assert refused.data["errorDetails"]["code"] == "NOT_FOUND"
    assert "secret" not in bens.text


async def test_a_sub_agent_is_never_offered_the_cross_workflow_tools(
    kernel_with_history, run_events, only
):
    offered: list[set[str]] = []

    def script(request: ChatRequest, i: int) -> Any:
        offered.append({t.name for t in request.tools})
        if request.messages[-1].role is Role.USER:  # each run's first call (i goes on)
            return [
                ("listWorkflowHistory", {}),
                ("readWorkflowMessages", {"workflowId": "conv-vat"}),
            ]
        return "Done."

    kernel = kernel_with_history(script)
    await seed(kernel)
    session = kernel.agent.toolbox_session(AgentConfig(), ANNA)
    assert {t.name for t in session.tools} >= HISTORY  # the core toolbox holds them
    for start in (kernel.agent.execute, kernel.agent.loop):
        offered.clear()
        spec = RunSpec(
            "Look back.",
            AgentConfig(),
            ANNA,
            list(session.tools),
            parent_run_id="the-parent",
            services=tool_services(kernel.agent.services),
        )
        events = await run_events(start(spec))
        results = only(events, EventType.TOOL_RESULT)
        assert [r.data["errorDetails"]["code"] for r in results] == ["UNKNOWN_TOOL"] * 2, [
            (e.type, e.text, e.data) for e in events
        ]
        assert "8.1" not in " ".join(r.text for r in results)
        assert offered and all(not (HISTORY & names) for names in offered)
        assert "readFile" in offered[0]  # the other tools stay


async def test_a_top_level_run_is_offered_them(kernel_with_history, run_events):
    offered: list[set[str]] = []

    def script(request: ChatRequest, i: int) -> Any:
        offered.append({t.name for t in request.tools})
        return "Done."

    kernel = kernel_with_history(script)
    await run_events(kernel.agent.run("Hi.", AgentConfig(), ANNA))
    assert offered[0] >= HISTORY
