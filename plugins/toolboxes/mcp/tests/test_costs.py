"""Cost accounting from a server that reports it: the price in a tool result's ``_meta``
(``dev.nyla/cost``, nyla's convention; MCP defines no cost field) is booked in the billing
ledger of the run and counts against its budget; a price nyla cannot take is not booked."""

from __future__ import annotations

import json
from types import SimpleNamespace

import anyio
import pytest

import nyla_toolbox_mcp
from nyla.sdk import AgentConfig, ChatResponse, Role, RunContext, ToolCall
from nyla.testing import plugin_kernel
from nyla.testing.scripted import ScriptedProvider
from nyla_toolbox_mcp.cli import add_server
from nyla_toolbox_mcp.tools import COST_KEY, reported_cost

CALLS = [
    ("requestToolbox", {"toolboxId": "mcp:demo", "reason": "a quote"}),
    ("mcpDemo_quote", {"amount": 0.25}),
    ("mcpDemo_quote", {"amount": 0.5, "currency": "USD"}),
]


@pytest.mark.parametrize(
    "meta, expected",
    [
        ({COST_KEY: {"amount": 0.02, "currency": "CHF"}}, 0.02),
        ({COST_KEY: {"amount": 3}}, 3.0),  # CHF when no currency is named
        ({COST_KEY: {"amount": 1, "currency": "usd"}}, None),
        ({COST_KEY: {"amount": -1}}, None),
        ({COST_KEY: {"amount": float("nan")}}, None),
        ({COST_KEY: {"amount": True}}, None),
        ({COST_KEY: {"amount": "0.5"}}, None),
        ({COST_KEY: {"amount": 1e9}}, None),
        ({COST_KEY: 0.5}, None),
        ({"other": 1}, None),
        (None, None),
    ],
)
def test_only_a_sane_price_in_chf_is_taken(meta, expected):
    assert reported_cost(SimpleNamespace(meta=meta)) == expected


async def test_a_reported_price_is_booked_in_the_ledger_and_the_runs_cost(run_events, store, demo):
    await add_server(store, "ada", demo)

    def script(request, index):
        results = [m for m in request.messages if m.role is Role.TOOL]
        if len(results) < len(CALLS):
            name, args = CALLS[len(results)]
            call = ToolCall(id=f"c{len(results)}", name=name, arguments=json.dumps(args))
            return ChatResponse(tool_calls=[call])
        return "done"

    provider = ScriptedProvider(script, id="scripted", model="m")
    kernel = plugin_kernel(nyla_toolbox_mcp, provider, db=store.db, builtins=True)
    context = RunContext(user_id="ada", mandate_id="m1")
    config = AgentConfig(model="scripted:m", max_rounds=6, max_cost_chf=5.0)
    with anyio.fail_after(300):
        events = await run_events(kernel.agent.run("What does it cost?", config, context))
    results = [e.data for e in events if e.type == "TOOL_RESULT"]
    assert [r["success"] for r in results] == [True, True, True]
    run_id = next(e.data["runId"] for e in events if e.data.get("status") == "started")
    await kernel.billing.flush(runs=True)
    rows = [r for r in await kernel.billing.run_entries(run_id) if r.operation == "mcpTool"]
    assert [(r.model, r.cost_chf, r.user_id, r.mandate_id) for r in rows] == [
        ("mcp:demo", 0.25, "ada", "m1")
    ]
    summary = next(e for e in events if e.type == "AGENT_SUMMARY").data
    assert summary["costChf"] >= 0.25
