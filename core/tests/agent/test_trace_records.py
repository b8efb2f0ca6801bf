"""A run keeps its tool calls as slotted records (``CallRecord``) and writes its trace from
them; the public ``ToolCallLog`` models come from the read API. The records must give the
same trace, the same counters and the same reduced trace as the models did."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

import nyla.agent.trace as trace_module
from nyla.agent.spec import RunSpec
from nyla.agent.trace import load_trace
from nyla.models.agent import AgentConfig, CallRecord, EventType, RunContext, ToolCallLog
from nyla.models.ai import ChatRequest
from nyla.models.tools import Tool, ToolContext


class PartArgs(BaseModel):
    part: int


async def read(args: PartArgs, ctx: ToolContext) -> str:
    return f"part {args.part} read"


def script(request: ChatRequest, i: int) -> Any:
    if i == 0:  # two calls, the second refused at the boundary (a string, not a part number)
        return [("read", {"part": 1}), ("read", {"part": "one"})]
    if i == 1:
        return [("read", {"part": 2})]
    return "Both parts read."


def test_a_record_is_the_public_model_as_a_slotted_record():
    assert CallRecord.__slots__ == tuple(ToolCallLog.model_fields)
    fields = {"round": 2, "call_id": "c1", "tool_name": "read", "arguments": "{}"}
    fields |= {"success": False, "error": "no", "validation_failure_code": "E", "duration_ms": 1.5}
    made = CallRecord.of(*fields.values())
    assert made == CallRecord(**fields)
    assert made.model_dump() == ToolCallLog(**fields).model_dump()
    # the defaults are the model's, and a wrong value from outside is refused
    assert CallRecord(round=1, call_id="c", tool_name="t", arguments="", success=True).error is None
    with pytest.raises(ValidationError):
        CallRecord(round="one", call_id="c", tool_name="t", arguments="", success=True)


async def run(kernel: Any, run_events: Any) -> list[Any]:
    return await run_events(
        kernel.agent.loop(
            RunSpec(
                "Read both parts",
                config=AgentConfig(stream=False),
                context=RunContext(user_id="ada"),
                tools=[Tool.from_model("read", "Read a part.", PartArgs, read, read_only=True)],
            )
        )
    )


async def test_the_trace_is_written_from_the_records(scripted, make_kernel, db, run_events):
    events = await run(make_kernel(scripted(script), db=db, builtins=False), run_events)
    summary = events[-1]
    assert summary.type is EventType.AGENT_SUMMARY and summary.data["toolCalls"] == 3
    # the wrong argument was refused at the boundary and counted, then repaired
    assert summary.data["validationFailures"] == 1 and summary.data["repairAttempts"] == 1
    assert summary.data["successAfterRepair"] == 1
    trace = await load_trace(db, summary.data["runId"])
    assert trace is not None
    assert all(type(c) is ToolCallLog for c in trace.tool_calls)
    assert [(c.round, c.success, c.validation_failure_code) for c in trace.tool_calls] == [
        (1, True, None),
        (1, False, "INVALID_TYPE"),
        (2, True, None),
    ]
    assert trace.tool_calls[0].arguments == '{"part": 1}'
    assert (trace.validation_failures, trace.repair_attempts) == (1, 1)


async def test_a_trace_that_cannot_be_written_is_written_reduced(
    scripted, make_kernel, db, run_events, monkeypatch
):
    """The first write fails (a fault injected in front of the real one): the trace is written
    again with the calls' arguments and errors left out, and the reason in its error."""
    real, attempts = trace_module.save_trace, []

    async def failing_once(db: Any, trace: Any, calls: Any = None) -> None:
        attempts.append([tuple(c.model_dump().values()) for c in calls])
        if len(attempts) == 1:
            raise RuntimeError("disk full")
        await real(db, trace, calls)

    monkeypatch.setattr(trace_module, "save_trace", failing_once)
    events = await run(make_kernel(scripted(script), db=db, builtins=False), run_events)
    assert len(attempts) == 2
    trace = await load_trace(db, events[-1].data["runId"])
    assert trace is not None and trace.error is not None
    assert trace.error.startswith("trace reduced: RuntimeError: disk full")
    assert [(c.tool_name, c.arguments, c.error) for c in trace.tool_calls] == [
        ("read", "", None)
    ] * 3
    assert [c.success for c in trace.tool_calls] == [True, False, True]


def test_the_read_api_model_still_refuses_a_wrong_row():
    with pytest.raises(ValidationError):
        ToolCallLog.model_validate(
            {"round": "first", "callId": "c", "toolName": "t", "arguments": "{}", "success": True}
        )
