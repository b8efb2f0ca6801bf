"""Every action is a tool ``{method}_{action}`` in agent runs: schema from its signature, a
write when it writes, switched off by ``exclude_action_tools``; calls go through the executor
(reference objects become ids; bad arguments come back as repairable results)."""

from __future__ import annotations

from typing import Any

import pytest

from nyla.actions.catalog import parameters_schema
from nyla.models.agent import AgentConfig, EventType, RunContext
from nyla.models.ai import ChatRequest, OperationType, Role

pytestmark = pytest.mark.db


def agent_requests(provider: Any) -> list[ChatRequest]:
    return [r for r in provider.requests if r.operation is OperationType.AGENT]


async def test_an_agent_run_calls_an_action_tool(
    scripted, make_kernel, db, probe, run_events, only
):
    def script(request: ChatRequest, i: int) -> Any:
        if i == 0:
            return [("probe_note", {"count": 2})]  # the required title is missing
        if i == 1:
            assert "MISSING_FIELD" in request.messages[-1].text
            return [
                (
                    "probe_note",
                    {"title": 7, "count": "2", "instance": {"type": "featureInstance", "id": "fi"}},
                )
            ]
        assert request.messages[-1].role is Role.TOOL
        return "Noted."

    provider = scripted(script)
    kernel = make_kernel(provider, probe, db=db)
    events = await run_events(
        kernel.agent.run(
            "Note it.", AgentConfig(), RunContext(user_id="u1", feature_instance_id="fi")
        )
    )
    assert events[-1].data["status"] == "completed", events[-1].data
    results = only(events, EventType.TOOL_RESULT)
    assert [r.data["success"] for r in results] == [False, True]
    assert results[0].data["errorDetails"]["field"] == "title"
    assert [(c.title, c.count, c.instance) for c in probe.calls] == [("7", 2, "fi")]
    offered = {t.name: t for t in agent_requests(provider)[0].tools}
    assert offered["probe_note"].parameters == parameters_schema(probe.params)
    assert {"ai_process", "context_neutralizeData"} <= set(offered)


async def test_action_tools_are_writes_and_can_be_switched_off(make_kernel, db, probe):
    kernel = make_kernel(probe, db=db)
    session = kernel.agent.toolbox_session(AgentConfig(), RunContext())
    tools = {t.name: t for t in session.tools}
    assert tools["probe_note"].read_only is False  # an ordered barrier
    assert tools["context_extractContent"].read_only is True
    off = kernel.agent.toolbox_session(AgentConfig(exclude_action_tools=True), RunContext())
    names = {t.name for t in off.tools}
    assert not names & {"probe_note", "ai_process", "context_extractContent"}
    assert "summarizeContent" in names  # the plugins' own tools stay
