"""The rounds an interrupted run completed, read back from its events, so that running it
again goes on after them instead of from the beginning (``POST /api/runs/{id}/resume``).

A round is complete when the model's turn asked for tools and every call has its
TOOL_RESULT event: the model's turn (its streamed text and the calls, with their arguments)
and the results (the text the model saw) become the messages the run had. The first round
with a call left without a result, and any after it, are dropped: that round runs again (the
model decides again; a write it had started is one the person confirmed). A run resumed
before carries the rounds it was resumed with (``continued`` in its stored spec); these come
first."""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING, Any

from nyla.models.ai import Message, Role, ToolCall

if TYPE_CHECKING:
    from nyla.db import Database

_ROUNDS = """
SELECT payload FROM host_run_events
WHERE run_id = %s AND type IN ('CHUNK', 'TOOL_CALL', 'TOOL_RESULT') ORDER BY seq
"""


def round_messages(payloads: list[dict[str, Any]]) -> list[Message]:
    """The messages of the completed rounds among a run's events (in order)."""
    rounds: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for p in payloads:
        rounds[int(p.get("round") or 0)].append(p)
    messages: list[Message] = []
    for number in sorted(rounds):
        played = rounds[number]
        calls = [p["data"] for p in played if p.get("type") == "TOOL_CALL"]
        results = {p["data"].get("callId"): p for p in played if p.get("type") == "TOOL_RESULT"}
        if not calls or any(c.get("callId") not in results for c in calls):
            break  # an answer (the run would have ended) or a round cut short
        said = "".join(str(p.get("text") or "") for p in played if p.get("type") == "CHUNK")
        tool_calls = [
            ToolCall(id=c["callId"], name=c["toolName"], arguments=c.get("arguments") or "{}")
            for c in calls
        ]
        messages.append(Message(role=Role.ASSISTANT, content=said, tool_calls=tool_calls))
        for c in calls:
            answer = results[c["callId"]]
            messages.append(
                Message(
                    role=Role.TOOL,
                    content=str(answer.get("text") or ""),
                    tool_call_id=c["callId"],
                    name=c["toolName"],
                )
            )
    return messages


def stored_messages(messages: list[Message]) -> list[dict[str, Any]]:
    """``messages`` as a run's stored spec keeps them (JSON)."""
    return [m.model_dump(mode="json") for m in messages]


def loaded_messages(spec: dict[str, Any]) -> list[Message]:
    """The completed rounds a stored spec carries (none for a run started afresh)."""
    return [Message.model_validate(m) for m in spec.get("continued") or []]


async def completed_rounds(db: Database, run_id: str, spec: dict[str, Any]) -> list[Message]:
    """Every round run ``run_id`` (stored with ``spec``) completed, the ones it was resumed
    with first."""
    rows = await db.read_driver(lambda conn: conn.rows(_ROUNDS, (run_id,)))
    return loaded_messages(spec) + round_messages([payload for (payload,) in rows])
