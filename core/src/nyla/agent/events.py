"""Constructors of the events a run streams, so every producer shapes them the same way.

Each is made with :meth:`AgentEvent.of <nyla.models.slotted.SlottedWire.of>`, without
validation: the values are the run's own, of the fields' types (an ``EventType``, the round
number, a text, a fresh dict), and the model's tool calls were validated when the AI service
returned them."""

from __future__ import annotations

from typing import Any

from nyla.models.agent import AgentEvent, AgentTrace, EventType
from nyla.models.ai import ToolCall
from nyla.models.tools import ToolResult

#: the constructor and types of the per-call events, looked up once (not twice a call)
_event = AgentEvent.of
_TOOL_CALL, _TOOL_RESULT = EventType.TOOL_CALL, EventType.TOOL_RESULT


def chunk(round_: int, text: str) -> AgentEvent:
    """Streamed text."""
    return _event(EventType.CHUNK, round_, text, {})


def status(round_: int, state: str, **data: Any) -> AgentEvent:
    """A state change (``round``, ``summarizing``, ``contextFailed``, ...)."""
    return _event(EventType.STATUS, round_, state, {"status": state, **data})


def tool_call(round_: int, call: ToolCall, read_only: bool) -> AgentEvent:
    """The model asked for a tool call."""
    fields = call.__dict__  # (the call's fields: each attribute read costs pydantic's hook)
    name = fields["name"]
    return _event(
        _TOOL_CALL,
        round_,
        name,
        {
            "callId": fields["id"],
            "toolName": name,
            "arguments": fields["arguments"],
            "readOnly": read_only,
        },
    )


def tool_result(
    round_: int, call: ToolCall, result: ToolResult, duration_ms: float, text: str
) -> AgentEvent:
    """A tool call finished (successfully or with a structured error)."""
    fields, outcome = call.__dict__, result.__dict__  # (as in tool_call)
    details = outcome["error_details"]
    return _event(
        _TOOL_RESULT,
        round_,
        text,
        {
            "callId": fields["id"],
            "toolName": fields["name"],
            "success": outcome["success"],
            "error": outcome["error"],
            "errorDetails": details.to_wire() if details else None,
            "durationMs": round(duration_ms, 3),
        },
    )


def final(round_: int, text: str, status_: str) -> AgentEvent:
    """The answer (or the progress report of a run that stopped early)."""
    return _event(EventType.FINAL, round_, text, {"status": status_})


def summary(trace: AgentTrace, tool_calls: int | None = None, **extra: Any) -> AgentEvent:
    """The closing metrics of a run: cost, rounds, tokens, tool calls (``tool_calls``, else
    those in ``trace``), repair counters."""
    return _event(
        EventType.AGENT_SUMMARY,
        trace.rounds,
        str(trace.status),
        {
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
    return _event(EventType.ERROR, round_, message, data)
