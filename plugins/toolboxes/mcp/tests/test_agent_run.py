"""An agent run with a scripted model over a real MCP server process: it requests the
toolbox, reads personal data (which the model never sees), writes a note (whose address
never reaches the server), sends bad arguments, and meets a hanging tool, a flood and a
crashing server — each a structured tool error or a bounded result, and the run finishes."""

from __future__ import annotations

import json

import anyio

import nyla_toolbox_mcp
from nyla.sdk import AgentConfig, ChatResponse, Role, RunContext, ToolCall
from nyla.testing import plugin_kernel
from nyla.testing.scripted import ScriptedProvider
from nyla_toolbox_mcp.cli import add_server

CALLS = [
    ("requestToolbox", {"toolboxId": "mcp:demo", "reason": "customer data"}),
    ("mcpDemo_lookup", {"customer": "Ada"}),
    ("mcpDemo_note", {"text": "call ada.lovelace@example.com tomorrow"}),
    ("mcpDemo_note", {"text": 5}),
    ("mcpDemo_hang", {}),
    ("mcpDemo_flood", {}),
    ("mcpDemo_crash", {}),
    ("mcpDemo_lookup", {"customer": "Bob"}),
]


async def test_a_scripted_run_uses_the_mcp_servers_tools_behind_the_gate(
    run_events, store, demo, server_log
):
    stored = await add_server(store, "ada", demo)
    assert {t.name: t.read_only for t in stored.tools} == {
        "lookup": True,
        "note": False,  # no annotation: a write, run as a barrier
        "hang": True,
        "crash": False,
        "flood": True,
        "quote": True,
    }
    seen: list[str] = []

    def script(request, index):
        results = [m for m in request.messages if m.role is Role.TOOL]
        seen.extend(m.text for m in results)
        if len(results) < len(CALLS):
            name, args = CALLS[len(results)]
            call = ToolCall(id=f"c{len(results)}", name=name, arguments=json.dumps(args))
            return ChatResponse(tool_calls=[call])
        return "done"

    provider = ScriptedProvider(script, id="scripted", model="m")
    kernel = plugin_kernel(nyla_toolbox_mcp, provider, db=store.db, builtins=True)
    context = RunContext(user_id="ada", workflow_id="wf-mcp", require_neutralization=True)
    config = AgentConfig(model="scripted:m", max_rounds=12, max_cost_chf=1.0)
    with anyio.fail_after(400):
        events = await run_events(kernel.agent.run("Who is Ada?", config, context))
    results = [e.data for e in events if e.type == "TOOL_RESULT"]
    outcome = [(r["toolName"], r["success"]) for r in results]
    assert outcome == [
        ("requestToolbox", True),
        ("mcpDemo_lookup", True),
        ("mcpDemo_note", True),
        ("mcpDemo_note", False),
        ("mcpDemo_hang", False),
        ("mcpDemo_flood", True),
        ("mcpDemo_crash", False),
        ("mcpDemo_lookup", True),  # a new process after the crash
    ]
    assert next(e for e in events if e.type == "FINAL").text == "done"
    text = "\n".join(seen) + json.dumps(results)
    assert "plan gold" in text  # the answer arrived ...
    assert "ada.lovelace@example.com" not in text  # ... without the address
    assert "CH93" not in text and "6238 5295" not in text  # ... or the IBAN
    assert "ada.lovelace@example.com" not in server_log.read_text()
    assert "call" in server_log.read_text()
    assert "INVALID_VALUE" in json.dumps(results[3])
    assert "TIMEOUT" in json.dumps(results[4])
    assert "SERVER_ERROR" in json.dumps(results[6])
    assert len(json.dumps(results[5])) < 60_000
