"""Session 55, dispatch room: a turn hands each call's read-only flag from its batch plan to
the caller (the run no longer looks each call up again for its TOOL_CALL events), and the
TOOL_CALL / TOOL_RESULT events, read from the call's and result's fields at once, are the
events their validated construction gives, on the wire too."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic import BaseModel

from nyla.agent import events
from nyla.agent.batches import plan_batches
from nyla.agent.registry import ToolRegistry
from nyla.models.agent import AgentEvent, EventType
from nyla.models.ai import ToolCall
from nyla.models.tools import Tool, ToolContext, ToolResult


class NoArgs(BaseModel):
    pass


async def _answer(args: NoArgs, ctx: ToolContext) -> str:
    return "ok"


def _tools() -> list[Tool]:
    return [
        Tool.from_model("r1", "read", NoArgs, _answer, read_only=True),
        Tool.from_model("r2", "read", NoArgs, _answer, read_only=True),
        Tool.from_model("w", "write", NoArgs, _answer),
    ]


#: reads, a write, an unknown tool (not read-only), a refused read (bad JSON), a read again
_NAMES = ("r1", "r2", "w", "nope", "r1", "w", "r2", "r1")


def _calls() -> list[ToolCall]:
    return [
        ToolCall(id=f"c{i}", name=n, arguments="{bad" if i == 4 else "{}")
        for i, n in enumerate(_NAMES)
    ]


def test_the_plan_appends_each_calls_flag_in_call_order() -> None:
    calls, flags = _calls(), [True]  # (appended to what the list holds)
    batches = plan_batches(calls, lambda c: c.name.startswith("r"), flags)
    assert flags == [True, True, True, False, False, True, False, True, True]
    assert batches == plan_batches(calls, lambda c: c.name.startswith("r"))
    assert [[c.id for c in b] for b in batches] == [
        ["c0", "c1"],
        ["c2"],
        ["c3"],
        ["c4"],
        ["c5"],
        ["c6", "c7"],
    ]


@pytest.mark.parametrize("cancel", [None, "event"])
async def test_a_turn_hands_over_the_flags_is_read_only_gives(cancel: str | None) -> None:
    registry, calls = ToolRegistry(_tools()), _calls()
    flags: list[bool] = []
    scope = asyncio.Event() if cancel else None
    turn = registry.execute(calls, lambda c: ToolContext(call_id=c.id), scope, True, flags)
    first = await turn.__anext__()
    assert first == []  # the announcement: the flags are there by then
    assert flags == [registry.is_read_only(c) for c in calls]
    assert flags == [True, True, False, False, True, False, True, True]
    done = [d async for batch in turn for d in batch]
    assert [d.call.id for d in done] == [c.id for c in calls]
    assert [d.read_only for d in done] == flags
    assert len(flags) == len(calls)  # filled once


def _validated_call(round_: int, call: ToolCall, read_only: bool) -> AgentEvent:
    return AgentEvent(
        type=EventType.TOOL_CALL,
        round=round_,
        text=call.name,
        data={
            "callId": call.id,
            "toolName": call.name,
            "arguments": call.arguments,
            "readOnly": read_only,
        },
    )


def _validated_result(
    round_: int, call: ToolCall, result: ToolResult, duration_ms: float, text: str
) -> AgentEvent:
    details = result.error_details
    return AgentEvent(
        type=EventType.TOOL_RESULT,
        round=round_,
        text=text,
        data={
            "callId": call.id,
            "toolName": call.name,
            "success": result.success,
            "error": result.error,
            "errorDetails": details.to_wire() if details else None,
            "durationMs": round(duration_ms, 3),
        },
    )


def _same(made: AgentEvent, validated: AgentEvent) -> None:
    assert made == validated
    assert made.to_wire() == validated.to_wire()
    assert list(made.data) == list(validated.data)  # (the wire's key order)
    assert made.model_dump_json() == validated.model_dump_json()
    for name in ("type", "round", "text", "data"):
        assert type(getattr(made, name)) is type(getattr(validated, name))


_RESULTS: list[Any] = [
    ToolResult.ok("read 1 ok"),
    ToolResult.ok("with data", {"fileId": "f1"}),
    ToolResult.fail("boom", "TOOL_ERROR"),
    ToolResult.fail("bad", "INVALID_VALUE", field="a", suggestion="s", hint="h"),
    ToolResult(success=False, error="no details"),
    ToolResult(success=True, content="", error=None),
]


@pytest.mark.parametrize("result", _RESULTS)
@pytest.mark.parametrize("duration_ms", [0.0, 0.1234565, 12.0005, 1e6 / 3])
def test_the_result_event_is_the_validated_one(result: ToolResult, duration_ms: float) -> None:
    call = ToolCall(id="c9", name="r1", arguments='{"a": 1}')
    text = result.content or result.error or ""
    made = events.tool_result(7, call, result, duration_ms, text)
    _same(made, _validated_result(7, call, result, duration_ms, text))


@pytest.mark.parametrize("read_only", [True, False])
@pytest.mark.parametrize("arguments", ["{}", '{"a": [1, "ü"]}', "{bad", ""])
def test_the_call_event_is_the_validated_one(read_only: bool, arguments: str) -> None:
    call = ToolCall(id="c1", name="lookUp", arguments=arguments)
    _same(events.tool_call(3, call, read_only), _validated_call(3, call, read_only))
    built = ToolCall.model_construct(id="c2", name="w")  # (a default argument, constructed)
    _same(events.tool_call(1, built, read_only), _validated_call(1, built, read_only))
