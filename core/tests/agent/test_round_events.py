"""The events of a round with tool calls, as the caller receives them: the round's STATUS,
every TOOL_CALL (once the first batch runs) before any TOOL_RESULT, the results in the calls'
order, and the model's message and the tool messages in the next request in that order."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from nyla.agent.spec import RunSpec
from nyla.agent.trace import load_trace
from nyla.models.agent import AgentConfig, EventType, RunContext
from nyla.models.ai import ChatRequest, OperationType, Role
from nyla.models.tools import Tool, ToolContext


class NoArgs(BaseModel):
    pass


def tool(name: str, *, read_only: bool) -> Tool:
    async def handler(args: NoArgs, ctx: ToolContext) -> str:
        return f"{name} done"

    return Tool.from_model(name, f"The {name} tool.", NoArgs, handler, read_only=read_only)


async def test_a_round_s_events_come_in_order(scripted, make_kernel, db, run_events):
    def script(request: ChatRequest, i: int) -> Any:
        if i == 0:
            return [("read_a", {}), ("read_b", {}), ("write_c", {})]
        return "All done."

    provider = scripted(script)
    kernel = make_kernel(provider, db=db, builtins=False)
    events = await run_events(
        kernel.agent.loop(
            RunSpec(
                "Do it.",
                config=AgentConfig(),
                context=RunContext(user_id="anna"),
                tools=[
                    tool("read_a", read_only=True),
                    tool("read_b", read_only=True),
                    tool("write_c", read_only=False),
                ],
            ),
        )
    )
    first = [(e.type, e.text) for e in events if e.round == 1 and e.type is not EventType.CHUNK]
    assert first == [
        (EventType.STATUS, "round"),
        (EventType.TOOL_CALL, "read_a"),
        (EventType.TOOL_CALL, "read_b"),
        (EventType.TOOL_CALL, "write_c"),
        (EventType.TOOL_RESULT, "read_a done"),
        (EventType.TOOL_RESULT, "read_b done"),
        (EventType.TOOL_RESULT, "write_c done"),
    ]
    calls = [e.data for e in events if e.type is EventType.TOOL_CALL]
    assert [(c["toolName"], c["readOnly"]) for c in calls] == [
        ("read_a", True),
        ("read_b", True),
        ("write_c", False),
    ]
    results = [e.data for e in events if e.type is EventType.TOOL_RESULT]
    assert [r["callId"] for r in results] == [c["callId"] for c in calls]
    assert all(r["success"] and r["durationMs"] >= 0 for r in results)
    second = [r for r in provider.requests if r.operation is OperationType.AGENT][1]
    tail = second.messages[-4:]
    assert [m.role for m in tail] == [Role.ASSISTANT, Role.TOOL, Role.TOOL, Role.TOOL]
    assert [c.name for c in tail[0].tool_calls] == ["read_a", "read_b", "write_c"]
    assert [m.text for m in tail[1:]] == ["read_a done", "read_b done", "write_c done"]
    summary = events[-1].data
    trace = await load_trace(db, summary["runId"])
    assert trace is not None
    assert [c.tool_name for c in trace.tool_calls] == ["read_a", "read_b", "write_c"]
