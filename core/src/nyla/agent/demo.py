"""The agent step of ``make demo``: one run with the core tools, its streamed events and the
persisted trace — driven by a scripted model so it runs offline.

The script plays a model: it writes a note, reads it back, and answers; everything else (tool
validation and dispatch, the file store and bridge, events, cost, trace) is the real runtime.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from rich.table import Table

from nyla.ai.scripted import ScriptedPlugin, ScriptedProvider
from nyla.models.agent import AgentConfig, EventType, RunContext
from nyla.models.ai import ChatRequest, ChatResponse, Role, ToolCall

if TYPE_CHECKING:
    from nyla.kernel import Kernel

NOTE = "Kickoff with ACME on Monday 09:00. Contact: anna.muster@acme.ch, +41 44 123 45 67."


def _script(request: ChatRequest, index: int) -> Any:
    results = [m for m in request.messages if m.role is Role.TOOL]
    if not results:
        return ChatResponse(
            tool_calls=[
                ToolCall(
                    id="w1",
                    name="writeFile",
                    arguments=json.dumps({"name": "kickoff.md", "content": NOTE}),
                )
            ]
        )
    if len(results) == 1:
        file_id = results[0].text.split("file id: ")[-1].split()[0]
        return ChatResponse(
            tool_calls=[
                ToolCall(
                    id="r1",
                    name="readFile",
                    arguments=json.dumps({"fileId": file_id}),
                )
            ]
        )
    # the model only ever sees placeholders such as [EMAIL_1]; the user gets the real text back
    return f"Saved and checked the note: {results[-1].text.strip().splitlines()[-1]}"


async def run_demo(kernel: Kernel, console: Any) -> None:
    """Run the agent once and show its events and trace."""
    provider = ScriptedProvider(_script, id="demo", model="scripted")
    if "demo" not in kernel.plugins.providers:
        kernel.plugins.add_plugin(ScriptedPlugin(provider), "nyla.demo-model")
    config = AgentConfig(model="demo:scripted", max_rounds=5, max_cost_chf=0.05)
    context = RunContext(user_id="demo", workflow_id="demo-workflow", timezone="Europe/Zurich")
    run_id, summary = None, {}
    async for event in kernel.agent.run(
        "Save a note about the ACME kickoff and check it.", config, context
    ):
        if event.type is EventType.STATUS and event.text == "started":
            run_id = event.data.get("runId")
        elif event.type is EventType.TOOL_CALL:
            console.print(f"  round {event.round}: → {event.data.get('toolName')}")
        elif event.type is EventType.TOOL_RESULT:
            ok = "ok" if event.data.get("success") else f"error: {event.data.get('error')}"
            ms = event.data.get("durationMs")
            took = f" ({ms:.0f} ms)" if isinstance(ms, int | float) else ""
            console.print(f"  round {event.round}: ← {event.data.get('toolName')} {ok}{took}")
        elif event.type is EventType.FINAL:
            console.print(f"  FINAL: {event.text}")
        elif event.type is EventType.AGENT_SUMMARY:
            summary = event.data
    sent = " ".join(m.text for r in provider.requests for m in r.messages)
    console.print(
        f"  the model saw the e-mail address: {'anna.muster@acme.ch' in sent} "
        f"(placeholders instead: {'[EMAIL_1]' in sent})"
    )
    table = Table(title=f"run {run_id}", header_style="bold")
    for col in ("status", "rounds", "tool calls", "tokens in/out", "cost CHF"):
        table.add_column(col)
    table.add_row(
        str(summary.get("status")),
        str(summary.get("rounds")),
        str(summary.get("toolCalls")),
        f"{summary.get('inputTokens')}/{summary.get('outputTokens')}",
        f"{summary.get('costChf', 0):.6f}",
    )
    console.print(table)
    schema = kernel.db.schema
    prefix = f"NYLA_DATABASE_SCHEMA={schema} " if schema else ""
    console.print(f"  the trace is stored: {prefix}nyla runs show {run_id}")
