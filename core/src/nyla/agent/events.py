"""Constructors of the events a run streams, so every producer shapes them the same way."""

from __future__ import annotations

from typing import Any

from nyla.models.agent import AgentEvent, AgentTrace, EventType
from nyla.models.ai import ToolCall
from nyla.models.tools import ToolResult


def chunk(round_: int, text: str) -> AgentEvent:
    """Streamed text."""
    return AgentEvent(type=EventType.CHUNK, round=round_, text=text)


def status(round_: int, state: str, **data: Any) -> AgentEvent:
    """A state change (``round``, ``summarizing``, ``contextFailed``, ...)."""
    return AgentEvent(
        type=EventType.STATUS, round=round_, text=state, data={"status": state, **data}
    )


def tool_call(round_: int, call: ToolCall, read_only: bool) -> AgentEvent:
    """The model asked for a tool call."""
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


def tool_result(
    round_: int, call: ToolCall, result: ToolResult, duration_ms: float, text: str
) -> AgentEvent:
    """A tool call finished (successfully or with a structured error)."""
    return AgentEvent(
        type=EventType.TOOL_RESULT,
        round=round_,
        text=text,
        data={
            "callId": call.id,
            "toolName": call.name,
            "success": result.success,
            "error": result.error,
            "errorDetails": result.error_details.to_wire() if result.error_details else None,
            "durationMs": round(duration_ms, 3),
        },
    )


def final(round_: int, text: str, status_: str) -> AgentEvent:
    """The answer (or the progress report of a run that stopped early)."""
    return AgentEvent(type=EventType.FINAL, round=round_, text=text, data={"status": status_})


def summary(trace: AgentTrace, tool_calls: int | None = None, **extra: Any) -> AgentEvent:
    """The closing metrics of a run: cost, rounds, tokens, tool calls (``tool_calls``, else
    those in ``trace``), repair counters."""
    return AgentEvent(
        type=EventType.AGENT_SUMMARY,
        round=trace.rounds,
        text=str(trace.status),
        data={
            "runId": trace.run_id,
            "parentRunId": trace.parent_run_id,
            "status": str(trace.status),
            "model": trace.model,
            "costChf": trace.cost_chf,
            "rounds": trace.rounds,
            "inputTokens": trace.input_tokens,
            "outputTokens": trace.output_tokens,
            "toolCalls": len(trace.tool_calls) if tool_calls is None else tool_calls,
            "validationFailures": trace.validation_failures,
            "repairAttempts": trace.repair_attempts,
            "successAfterRepair": trace.success_after_repair,
            "error": trace.error,
            **extra,
        },
    )


def error(round_: int, message: str, **data: Any) -> AgentEvent:
    """Something failed that the user should see (the run may still end normally)."""
    return AgentEvent(type=EventType.ERROR, round=round_, text=message, data=data)
